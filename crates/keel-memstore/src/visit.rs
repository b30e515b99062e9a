//! Borrowed reads: walking segments in order without cloning cells.
//!
//! A [`crate::MemStoreScanner`] returns owned cells; each is four reference-counted handles, and
//! with MSLAB every cell of a chunk shares one count, so cloning and dropping them is most of a
//! scan's cost. A visit hands the caller borrowed keys and values instead: what a flush (which
//! copies them into blocks anyway), an in-memory flush or a response encoder needs.

use std::ops::{Bound, ControlFlow, RangeBounds};

use keel_cell::CellKey;

use crate::flat::FlatSegment;
use crate::segment::{AnySegment, Entry, visible};

/// Where a visit stands in one segment: a skip-list entry, or an index into a flat array.
enum Head<'a> {
    List(Entry<'a>),
    /// The segment, the index, and the key there with its row prefix.
    Flat(&'a FlatSegment, usize, (u128, &'a CellKey)),
}

impl<'a> Head<'a> {
    /// The first cell of `segment` in `from`, visible at `read_point`.
    fn first(segment: &'a AnySegment, from: Bound<&CellKey>, read_point: u64) -> Option<Head<'a>> {
        match segment {
            AnySegment::List(list) => visible(list.first_entry(from), read_point).map(Head::List),
            AnySegment::Flat(flat) => Head::flat(flat, flat.first_visible(from, read_point)),
        }
    }

    fn flat(flat: &'a FlatSegment, index: usize) -> Option<Head<'a>> {
        flat.entry(index)
            .map(|entry| Head::Flat(flat, index, entry))
    }

    /// The row prefix and the key: heads compare as the skip list's keys do.
    fn key(&self) -> (u128, &CellKey) {
        match self {
            Head::List(entry) => (entry.key().prefix(), entry.key().cell_key()),
            Head::Flat(_, _, entry) => *entry,
        }
    }

    /// The next cell visible at `read_point`.
    fn next(&self, read_point: u64) -> Option<Head<'a>> {
        match self {
            Head::List(entry) => visible(entry.next(), read_point).map(Head::List),
            Head::Flat(flat, index, _) => {
                Head::flat(flat, flat.visible_from(index + 1, read_point))
            }
        }
    }
}

/// Calls `f` on every cell of `segments` (newest first) in `range` visible at `read_point`, in
/// order, the newest segment's cell only on an identical key, until `f` breaks.
pub(crate) fn visit(
    segments: &[AnySegment],
    range: &impl RangeBounds<CellKey>,
    read_point: u64,
    mut f: impl FnMut(&CellKey, &[u8]) -> ControlFlow<()>,
) {
    let mut heads: Vec<Option<Head<'_>>> = segments
        .iter()
        .map(|segment| Head::first(segment, range.start_bound(), read_point))
        .collect();
    loop {
        let mut best: Option<usize> = None;
        for (index, head) in heads.iter().enumerate() {
            if let Some(head) = head
                && best.is_none_or(|b| heads[b].as_ref().is_none_or(|e| head.key() < e.key()))
            {
                best = Some(index);
            }
        }
        let Some(index) = best else { return };
        let Some(head) = heads[index].take() else {
            return;
        };
        let (_, key) = head.key();
        if !range.contains(key) {
            return;
        }
        // The next entry's bytes start loading while `f` reads this one's (a flush's walk
        // waited for memory at every cell).
        let next = head.next(read_point);
        if let Some(next) = &next {
            let (_, next) = next.key();
            keel_sync::prefetch(next.coordinates());
            keel_sync::prefetch(next.cell_value());
        }
        if f(key, key.cell_value()).is_break() {
            return;
        }
        for older in &mut heads[index + 1..] {
            if older.as_ref().is_some_and(|o| o.key() == head.key()) {
                *older = older.take().and_then(|o| o.next(read_point));
            }
        }
        heads[index] = next;
    }
}
