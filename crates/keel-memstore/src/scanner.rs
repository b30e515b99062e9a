//! A scanner merging the active segment and the pending snapshot at one read point.

use std::collections::VecDeque;
use std::ops::{Bound, RangeBounds};

use keel_cell::{Cell, CellKey};

use crate::segment::AnySegment;

/// Cells fetched from a segment by the first search after a seek: small, so a get or a short
/// scan copies out little more than it returns.
pub(crate) const FIRST_BATCH: usize = 16;

/// The batch doubles with each refill up to this, so a long scan pays few searches.
const MAX_BATCH: usize = 256;

/// Cells of a memstore in CellComparator order, hiding every cell whose sequence id is above the
/// read point. Raw cells: delete markers and every version are returned; the region applies
/// delete and version rules when it merges this with store-file scanners
/// ([`MemStoreScanner::seek`], [`MemStoreScanner::seek_before_row`], [`MemStoreScanner::peek`],
/// [`Iterator::next`]).
///
/// The scanner holds its segments, so a snapshot cleared meanwhile stays readable through it.
/// It reads each segment in batches (16 cells after a seek, or fewer for a get that wants fewer,
/// doubling to 256; one skiplist search per batch). Every
/// cell at or below the read point is in the segment before the read point covers it (the
/// region publishes a read point only after the write is applied), so batching never hides a
/// visible cell.
#[derive(Debug)]
pub struct MemStoreScanner {
    /// Newest first: on equal keys the newer segment's cell wins.
    segments: Vec<AnySegment>,
    /// Per segment: fetched cells not yet returned, and whether the segment may hold more.
    heads: Vec<(VecDeque<Cell>, bool)>,
    /// Cells the next refill fetches.
    batch: usize,
    /// Cells the first search after a seek fetches.
    first_batch: usize,
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

impl MemStoreScanner {
    pub(crate) fn new(
        segments: Vec<AnySegment>,
        range: impl RangeBounds<CellKey>,
        read_point: u64,
        first_batch: usize,
    ) -> MemStoreScanner {
        let heads = segments.iter().map(|_| (VecDeque::new(), true)).collect();
        let first_batch = first_batch.clamp(1, FIRST_BATCH);
        let mut scanner = MemStoreScanner {
            segments,
            heads,
            batch: first_batch,
            first_batch,
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
    /// `key` in what a segment has fetched are dropped, and the segment searches its skip
    /// list again only if they run out before `key`: a get that skips a column's older
    /// versions lands in the batch it holds, where a seek searched every segment from the top.
    pub fn reseek(&mut self, key: &CellKey) {
        self.fresh_at = None;
        for (index, segment) in self.segments.iter().enumerate() {
            let (cells, more) = &mut self.heads[index];
            while cells.front().is_some_and(|cell| cell.key() < key) {
                cells.pop_front();
            }
            if cells.is_empty() && *more {
                self.batch = self.first_batch;
                segment.fill(
                    Bound::Included(key),
                    self.end.as_ref(),
                    self.read_point,
                    self.batch,
                    cells,
                );
                *more = cells.len() == self.batch;
            }
        }
        self.find_front();
    }

    /// Moves to the first cell of the last row before `row` that has a cell visible at the
    /// read point (strictly before; the last such row with `None`), or to the end if there is
    /// none: a reversed scan reads that row forward, then asks for the one before it.
    pub fn seek_before_row(&mut self, row: Option<&[u8]>) {
        self.fresh_at = None;
        let best = self
            .segments
            .iter()
            .filter_map(|segment| segment.last_row_before(row, self.read_point))
            .max();
        match best {
            Some(best) => self.position(Bound::Included(&CellKey::first_on_row(best))),
            None => self.clear(),
        }
    }

    /// The next cell without consuming it.
    pub fn peek(&self) -> Option<&Cell> {
        self.heads[self.front?].0.front()
    }

    fn position(&mut self, from: Bound<&CellKey>) {
        self.batch = self.first_batch;
        for (index, segment) in self.segments.iter().enumerate() {
            let (cells, more) = &mut self.heads[index];
            cells.clear();
            segment.fill(from, self.end.as_ref(), self.read_point, self.batch, cells);
            *more = cells.len() == self.batch;
        }
        self.find_front();
    }

    /// Ends the scan: no segment holds anything more for it.
    fn clear(&mut self) {
        self.heads.iter_mut().for_each(|(cells, more)| {
            cells.clear();
            *more = false;
        });
        self.front = None;
    }

    /// Sets `front` from the heads.
    fn find_front(&mut self) {
        self.front = self.smallest().filter(|&index| {
            self.heads[index]
                .0
                .front()
                .is_some_and(|cell| self.within_end(cell.key()))
        });
    }

    /// Takes the front cell of segment `index`, fetching the next batch when it runs dry.
    fn take_front(&mut self, index: usize) -> Option<Cell> {
        let (cells, more) = &mut self.heads[index];
        let cell = cells.pop_front()?;
        if cells.is_empty() && *more {
            self.batch = (self.batch * 2).min(MAX_BATCH);
            self.segments[index].fill(
                Bound::Excluded(cell.key()),
                self.end.as_ref(),
                self.read_point,
                self.batch,
                cells,
            );
            *more = cells.len() == self.batch;
        }
        Some(cell)
    }

    /// The segment whose head sorts first; the newest segment on ties.
    fn smallest(&self) -> Option<usize> {
        let mut best: Option<(usize, &CellKey)> = None;
        for (index, (cells, _)) in self.heads.iter().enumerate() {
            if let Some(cell) = cells.front()
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
        self.fresh_at = None;
        let Some(index) = self.front else {
            // Exhausted or past the end: drop what the batches fetched beyond it.
            self.clear();
            return None;
        };
        let cell = self.take_front(index)?;
        // Skip the same key in older segments (re-added after a snapshot): the newest wins.
        for other in index + 1..self.heads.len() {
            if self.heads[other]
                .0
                .front()
                .is_some_and(|head| head.key() == cell.key())
            {
                self.take_front(other);
            }
        }
        self.find_front();
        Some(cell)
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
