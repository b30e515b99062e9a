//! A scanner merging the active segment and the pending snapshot at one read point.

use std::collections::VecDeque;
use std::ops::{Bound, RangeBounds};

use keel_cell::{Cell, CellKey};

use std::sync::Arc;

use bytes::Bytes;

use crate::flat::FlatSegment;
use crate::segment::{AnySegment, Segment, prefetch_cell};

/// Cells fetched from a segment by the first search after a seek: small, so a get or a short
/// scan copies out little more than it returns.
pub(crate) const FIRST_BATCH: usize = 16;

/// The batch doubles with each refill up to this, so a long scan pays few searches.
const MAX_BATCH: usize = 256;

/// The least a search after a reseek fetches.
const MIN_RESEEK_BATCH: usize = 2;

/// Cells of a memstore in CellComparator order, hiding every cell whose sequence id is above the
/// read point. Raw cells: delete markers and every version are returned; the region applies
/// delete and version rules when it merges this with store-file scanners
/// ([`MemStoreScanner::seek`], [`MemStoreScanner::seek_before_row`], [`MemStoreScanner::peek`],
/// [`Iterator::next`]).
///
/// The scanner holds its segments, so a snapshot cleared meanwhile stays readable through it.
/// It reads each skip list in batches (16 cells after a seek, or fewer for a get that wants
/// fewer, doubling to 256; one skiplist search per batch), and each flat segment in place,
/// through an index into its array (see `Head`). Every
/// cell at or below the read point is in the segment before the read point covers it (the
/// region publishes a read point only after the write is applied), so batching never hides a
/// visible cell.
#[derive(Debug)]
pub struct MemStoreScanner {
    /// Per segment, newest first (on equal keys the newer segment's cell wins), where its
    /// reading stands.
    heads: Vec<Head>,
    /// Cells the next refill of a skip list's batch fetches.
    batch: usize,
    /// Cells the first search after a seek fetches.
    first_batch: usize,
    /// Cells a skip list's search after a reseek fetches: from `first_batch`, halved while
    /// reseeks drop most of what was fetched (see [`MemStoreScanner::reseek`]).
    reseek_batch: usize,
    end: Bound<CellKey>,
    read_point: u64,
    /// The key `new` positioned at, until anything moves the scanner: a seek to it (the
    /// region's merge seeks every source to where it opened them) is then already done.
    fresh_at: Option<CellKey>,
    /// The segment whose head comes next, if that head is within the end: worked out when the
    /// heads change, not at every `peek` (a merge peeks each source several times per cell, and
    /// comparing the segments' heads there was 7% of a scan).
    front: Option<usize>,
}

/// One segment and where a scanner's reading of it stands.
#[derive(Debug)]
enum Head {
    /// A skip list: cells fetched in a batch and not yet returned, and whether the list may
    /// hold more.
    Batch {
        list: Arc<Segment>,
        cells: VecDeque<Cell>,
        more: bool,
    },
    /// A flat segment: the index of its next cell visible at the read point (its length at
    /// the end). The array never changes, so the cell is read in place and cloned only when
    /// taken: copying a batch of cells out counted a reference on each one's chunk (a cache
    /// miss apiece), for cells a short scan mostly never took.
    At { flat: Arc<FlatSegment>, at: usize },
}

impl Head {
    fn new(segment: AnySegment) -> Head {
        match segment {
            AnySegment::List(list) => Head::Batch {
                list,
                cells: VecDeque::new(),
                more: true,
            },
            AnySegment::Flat(flat) => Head::At {
                at: flat.len(),
                flat,
            },
        }
    }

    /// The segment's next cell, if it has one.
    #[inline]
    fn front(&self) -> Option<&Cell> {
        match self {
            Head::Batch { cells, .. } => cells.front(),
            Head::At { flat, at } => flat.cell(*at),
        }
    }

    /// Moves to the first cell from `from` (`batch` of a skip list's fetched).
    fn position(
        &mut self,
        from: Bound<&CellKey>,
        end: Bound<&CellKey>,
        read_point: u64,
        batch: usize,
    ) {
        match self {
            Head::Batch { list, cells, more } => {
                cells.clear();
                list.fill(from, end, read_point, batch, cells);
                *more = cells.len() == batch;
            }
            Head::At { flat, at } => {
                *at = flat.first_visible(from, read_point);
                prefetch_from(flat, *at);
            }
        }
    }

    /// Moves forward to the first cell at or after `key`, never back; a skip list searches
    /// again (fetching `batch` cells) only if what it fetched runs out before `key`.
    /// Returns how many fetched cells it dropped unread.
    fn reseek(
        &mut self,
        key: &CellKey,
        end: Bound<&CellKey>,
        read_point: u64,
        batch: usize,
    ) -> usize {
        match self {
            Head::Batch { list, cells, more } => {
                let mut dropped = 0;
                while cells.front().is_some_and(|cell| cell.key() < key) {
                    cells.pop_front();
                    dropped += 1;
                }
                if cells.is_empty() && *more {
                    list.fill(Bound::Included(key), end, read_point, batch, cells);
                    *more = cells.len() == batch;
                }
                dropped
            }
            Head::At { flat, at } => {
                if flat.cell(*at).is_some_and(|cell| cell.key() < key) {
                    let from = flat.first_visible(Bound::Included(key), read_point);
                    *at = from.max(*at);
                    prefetch_from(flat, *at);
                }
                0
            }
        }
    }

    /// Takes the next cell: from the batch, fetching the next one (of `batch` cells) when it
    /// runs dry; or a clone of the flat segment's, moving on to its next visible cell.
    fn take(&mut self, end: Bound<&CellKey>, read_point: u64, batch: usize) -> Option<Cell> {
        match self {
            Head::Batch { list, cells, more } => {
                let cell = cells.pop_front()?;
                if cells.is_empty() && *more {
                    list.fill(Bound::Excluded(cell.key()), end, read_point, batch, cells);
                    *more = cells.len() == batch;
                }
                Some(cell)
            }
            Head::At { flat, at } => {
                let cell = flat.cell(*at)?.clone();
                *at = flat.visible_from(*at + 1, read_point);
                prefetch_ahead(flat, *at + FLAT_PREFETCH - 1);
                Some(cell)
            }
        }
    }

    /// [`Head::take`] for a cell no one keeps: a flat segment's is passed over, not cloned
    /// (a count on its MSLAB chunk that every reader of the row shares).
    fn pass(&mut self, end: Bound<&CellKey>, read_point: u64, batch: usize) {
        match self {
            Head::Batch { .. } => drop(self.take(end, read_point, batch)),
            Head::At { flat, at } => {
                if *at < flat.len() {
                    *at = flat.visible_from(*at + 1, read_point);
                    prefetch_ahead(flat, *at + FLAT_PREFETCH - 1);
                }
            }
        }
    }

    /// Ends the reading: nothing more comes from this segment.
    fn clear(&mut self) {
        match self {
            Head::Batch { cells, more, .. } => {
                cells.clear();
                *more = false;
            }
            Head::At { flat, at } => *at = flat.len(),
        }
    }

    fn last_row_before(&self, row: Option<&[u8]>, read_point: u64) -> Option<Bytes> {
        match self {
            Head::Batch { list, .. } => list.last_row_before(row, read_point),
            Head::At { flat, .. } => flat.last_row_before(row, read_point),
        }
    }
}

/// How many cells ahead of a flat segment's reading its cells' bytes are asked for.
const FLAT_PREFETCH: usize = 4;

/// Asks for the bytes of a flat segment's cells from `index` on, which lie in chunks
/// elsewhere: the merge compares each as it comes, and asked for only then, each was a wait for
/// memory. A walk that moves one cell on asks for the one [`FLAT_PREFETCH`] ahead
/// ([`prefetch_ahead`]); a jump, for all of them.
#[inline]
fn prefetch_from(flat: &FlatSegment, index: usize) {
    for ahead in index..index + FLAT_PREFETCH {
        prefetch_ahead(flat, ahead);
    }
}

#[inline]
fn prefetch_ahead(flat: &FlatSegment, index: usize) {
    if let Some(cell) = flat.cell(index) {
        prefetch_cell(cell);
    }
}

impl MemStoreScanner {
    pub(crate) fn new(
        segments: Vec<AnySegment>,
        range: impl RangeBounds<CellKey>,
        read_point: u64,
        first_batch: usize,
    ) -> MemStoreScanner {
        let first_batch = first_batch.clamp(1, FIRST_BATCH);
        let mut scanner = MemStoreScanner {
            heads: segments.into_iter().map(Head::new).collect(),
            batch: first_batch,
            first_batch,
            reseek_batch: first_batch,
            end: range.end_bound().cloned(),
            read_point,
            fresh_at: None,
            front: None,
        };
        scanner.position(range.start_bound());
        if let Bound::Included(start) = range.start_bound() {
            scanner.fresh_at = Some(start.clone());
        }
        scanner
    }

    /// The read point this scanner hides newer cells above.
    pub fn read_point(&self) -> u64 {
        self.read_point
    }

    /// Moves to the first cell at or after `key` (forward or backward).
    pub fn seek(&mut self, key: &CellKey) {
        if self
            .fresh_at
            .take()
            .is_some_and(|fresh| same_key(&fresh, key))
        {
            return;
        }
        self.position(Bound::Included(key));
    }

    /// Moves forward to the first cell at or after `key` that this scanner has not returned,
    /// never back (HBase's `reseek`; to go back, [`MemStoreScanner::seek`]). The cells before
    /// `key` in what a skip list has fetched are dropped, and it searches again only if they
    /// run out before `key`: a get that skips a column's older versions lands in the batch it
    /// holds, where a seek searched every segment from the top. A flat segment's index moves
    /// to `key`'s by a search of its array.
    pub fn reseek(&mut self, key: &CellKey) {
        self.fresh_at = None;
        let end = self.end.as_ref();
        let (mut refilled, mut dropped) = (false, 0);
        for head in &mut self.heads {
            let before = matches!(head, Head::Batch { cells, more: true, .. } if cells.back().is_none_or(|c| c.key() < key));
            refilled |= before;
            dropped += head.reseek(key, end, self.read_point, self.reseek_batch);
        }
        if refilled {
            self.batch = self.reseek_batch;
        }
        // A reseek that drops most of a batch unread (a hot column's older versions, which a
        // get skips column after column) halves the next refill; one that drops nothing lets it
        // grow back. Each cell fetched is a clone, an atomic count on its chunk that every
        // reader of a hot row shares.
        self.reseek_batch = if dropped * 2 >= self.reseek_batch {
            (self.reseek_batch / 2).max(MIN_RESEEK_BATCH)
        } else if dropped == 0 {
            (self.reseek_batch * 2).min(self.first_batch)
        } else {
            self.reseek_batch
        };
        self.find_front();
    }

    /// Moves to the first cell of the last row before `row` that has a cell visible at the
    /// read point (strictly before; the last such row with `None`), or to the end if there is
    /// none: a reversed scan reads that row forward, then asks for the one before it.
    pub fn seek_before_row(&mut self, row: Option<&[u8]>) {
        self.fresh_at = None;
        let best = self
            .heads
            .iter()
            .filter_map(|head| head.last_row_before(row, self.read_point))
            .max();
        match best {
            Some(best) => self.position(Bound::Included(&CellKey::first_on_row(best))),
            None => self.clear(),
        }
    }

    /// The next cell without consuming it.
    pub fn peek(&self) -> Option<&Cell> {
        self.heads[self.front?].front()
    }

    fn position(&mut self, from: Bound<&CellKey>) {
        self.batch = self.first_batch;
        let end = self.end.as_ref();
        for head in &mut self.heads {
            head.position(from, end, self.read_point, self.batch);
        }
        self.find_front();
    }

    /// Ends the scan: no segment holds anything more for it.
    fn clear(&mut self) {
        self.heads.iter_mut().for_each(Head::clear);
        self.front = None;
    }

    /// Sets `front` from the heads.
    fn find_front(&mut self) {
        self.front = self.smallest().filter(|&index| {
            self.heads[index]
                .front()
                .is_some_and(|cell| self.within_end(cell.key()))
        });
    }

    /// Takes the front cell of segment `index`; a skip list's batches double as they refill.
    fn take_front(&mut self, index: usize) -> Option<Cell> {
        self.grow_batch_for(index);
        self.heads[index].take(self.end.as_ref(), self.read_point, self.batch)
    }

    /// [`MemStoreScanner::take_front`] for a cell no one keeps ([`Head::pass`]).
    fn pass_front(&mut self, index: usize) {
        self.grow_batch_for(index);
        self.heads[index].pass(self.end.as_ref(), self.read_point, self.batch);
    }

    /// Doubles the batch when segment `index`'s next take refills it.
    fn grow_batch_for(&mut self, index: usize) {
        let head = &self.heads[index];
        let refills = matches!(head, Head::Batch { cells, more: true, .. } if cells.len() == 1);
        if refills {
            self.batch = (self.batch * 2).min(MAX_BATCH);
        }
    }

    /// The segment whose cell is next, with the same key in older segments (re-added after a
    /// snapshot) passed over: the newest wins. `None` at the end (what the batches fetched
    /// beyond it is dropped).
    fn front_without_duplicates(&mut self) -> Option<usize> {
        self.fresh_at = None;
        let Some(index) = self.front else {
            self.clear();
            return None;
        };
        for other in index + 1..self.heads.len() {
            let duplicate = match (self.heads[index].front(), self.heads[other].front()) {
                (Some(front), Some(older)) => older.key() == front.key(),
                _ => false,
            };
            if duplicate {
                self.pass_front(other);
            }
        }
        Some(index)
    }

    /// Appends the next cell (if any) to `out` and moves past it: [`Iterator::next`] for a
    /// reader that decided on the [`MemStoreScanner::peek`]ed cell to keep it.
    pub fn next_into(&mut self, out: &mut Vec<Cell>) {
        let Some(index) = self.front_without_duplicates() else {
            return;
        };
        out.extend(self.take_front(index));
        self.find_front();
    }

    /// Moves past the next cell without returning it: a flat segment's is not cloned.
    pub fn pass_next(&mut self) {
        let Some(index) = self.front_without_duplicates() else {
            return;
        };
        self.pass_front(index);
        self.find_front();
    }

    /// The segment whose head sorts first; the newest segment on ties.
    fn smallest(&self) -> Option<usize> {
        let mut best: Option<(usize, &CellKey)> = None;
        for (index, head) in self.heads.iter().enumerate() {
            if let Some(cell) = head.front()
                && best.is_none_or(|(_, key)| cell.key() < key)
            {
                best = Some((index, cell.key()));
            }
        }
        best.map(|(index, _)| index)
    }

    fn within_end(&self, key: &CellKey) -> bool {
        match &self.end {
            Bound::Included(end) => key <= end,
            Bound::Excluded(end) => key < end,
            Bound::Unbounded => true,
        }
    }
}

/// `a == b`, first by where their fields lie: the merge seeks to a clone of the key the
/// scanner was opened at, whose fields share the original's bytes, so the common case compares
/// three pointers instead of three byte strings (a get's row was compared in full, 2.5% of it).
fn same_key(a: &CellKey, b: &CellKey) -> bool {
    let same_bytes = |x: &[u8], y: &[u8]| x.as_ptr() == y.as_ptr() && x.len() == y.len();
    let shared = same_bytes(a.row(), b.row())
        && same_bytes(a.family(), b.family())
        && same_bytes(a.qualifier(), b.qualifier());
    if shared {
        a.timestamp() == b.timestamp()
            && a.cell_type() == b.cell_type()
            && a.sequence_id() == b.sequence_id()
    } else {
        a == b
    }
}

impl Iterator for MemStoreScanner {
    type Item = Cell;

    fn next(&mut self) -> Option<Cell> {
        let index = self.front_without_duplicates()?;
        let cell = self.take_front(index);
        self.find_front();
        cell
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use keel_cell::{CellKey, CellType};

    use super::same_key;

    #[test]
    fn same_key_is_equality_whether_or_not_the_bytes_are_shared() {
        let key = |row: &str, ts| {
            CellKey::new(
                Bytes::copy_from_slice(row.as_bytes()),
                "f",
                "q",
                ts,
                CellType::Put,
            )
            .unwrap()
        };
        let a = key("row", 5);
        assert!(same_key(&a, &a.clone()), "a clone shares the bytes");
        assert!(same_key(&a, &key("row", 5)), "equal bytes elsewhere");
        assert!(
            !same_key(&a, &key("row", 6)),
            "shared bytes, another timestamp"
        );
        assert!(!same_key(&a, &key("rox", 5)), "another row");
        let mut later = a.clone();
        later.set_sequence_id(9);
        assert!(!same_key(&a, &later), "shared bytes, another sequence id");
        let first = CellKey::first_on_row(a.row_bytes());
        assert!(!same_key(&CellKey::last_on_row(a.row_bytes()), &first));
    }
}
