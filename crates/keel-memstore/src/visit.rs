//! Borrowed reads: walking segments in order without cloning cells.
//!
//! A [`crate::MemStoreScanner`] returns owned cells; each is four reference-counted handles, and
//! with MSLAB every cell of a chunk shares one count, so cloning and dropping them is most of a
//! scan's cost. A visit hands the caller borrowed keys and values instead: what a flush (which
//! copies them into blocks anyway) or a response encoder needs.

use std::ops::{ControlFlow, RangeBounds};

use crossbeam_epoch as epoch;
use crossbeam_skiplist::base::Entry;
use keel_cell::CellKey;

use crate::segment::{MemKey, Segment, visible};

/// Calls `f` on every cell of `segments` (newest first) in `range` visible at `read_point`, in
/// order, the newest segment's cell only on an identical key, until `f` breaks.
pub(crate) fn visit(
    segments: &[&Segment],
    range: &impl RangeBounds<CellKey>,
    read_point: u64,
    mut f: impl FnMut(&CellKey, &[u8]) -> ControlFlow<()>,
) {
    // One pin for the whole walk: the entries are borrowed under it. (A flush's walk holds it
    // for the segment's length, which only delays freeing what is removed meanwhile.)
    let guard = &epoch::pin();
    let mut heads: Vec<Option<Entry<'_, '_, MemKey, u64>>> = segments
        .iter()
        .map(|segment| visible(segment.first_entry(range.start_bound(), guard), read_point))
        .collect();
    loop {
        let mut best: Option<usize> = None;
        for (index, head) in heads.iter().enumerate() {
            if let Some(entry) = head
                && best.is_none_or(|b| heads[b].as_ref().is_none_or(|e| entry.key() < e.key()))
            {
                best = Some(index);
            }
        }
        let Some(index) = best else { return };
        let Some(entry) = heads[index].take() else {
            return;
        };
        let key = entry.key().cell_key();
        if !range.contains(key) {
            return;
        }
        // The next entry's bytes start loading while `f` reads this one's (a flush's walk
        // waited for memory at every cell).
        let next = visible(entry.next(), read_point);
        if let Some(next) = &next {
            let next = next.key().cell_key();
            keel_sync::prefetch(next.coordinates());
            keel_sync::prefetch(next.cell_value());
        }
        if f(key, key.cell_value()).is_break() {
            return;
        }
        for older in &mut heads[index + 1..] {
            if older.as_ref().is_some_and(|head| head.key() == entry.key()) {
                let skipped = older.take();
                *older = visible(skipped.and_then(|e| e.next()), read_point);
            }
        }
        heads[index] = next;
    }
}
