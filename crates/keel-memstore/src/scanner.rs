//! A scanner merging the active segment and the pending snapshot at one read point.

use std::ops::{Bound, RangeBounds};

use keel_cell::{Cell, CellKey, CellType, Decide, RunRule, Take, compare_bytes, same_bytes};

use std::sync::Arc;

use bytes::Bytes;

use crate::flat::FlatSegment;
use crate::segment::{AnySegment, Entry, MemKey, Segment, prefetch_cell, visible};
use crate::skiplist::Detached;

/// How many cells ahead of a flat segment's reading their bytes are asked for.
const PREFETCH_AHEAD: usize = 4;

/// How many cells ahead of a run taken by its next-column bits ([`Take::KeepRun`]) a flat
/// segment's array is asked for: about three rows of ten columns.
const ARRAY_AHEAD: usize = 32;

/// Cells of a memstore in CellComparator order, hiding every cell whose sequence id is above the
/// read point. Raw cells: delete markers and every version are returned; the region applies
/// delete and version rules when it merges this with store-file scanners
/// ([`MemStoreScanner::seek`], [`MemStoreScanner::seek_before_row`], [`MemStoreScanner::peek`],
/// [`Iterator::next`]).
///
/// The scanner holds its segments, so a snapshot cleared meanwhile stays readable through it.
/// It reads every segment in place (see `Head`): `peek` borrows the stored cell and only a cell
/// taken is cloned. Every cell at or below the read point is in the segment before the read
/// point covers it (the region publishes a read point only after the write is applied), so a
/// reading never misses a visible cell.
#[derive(Debug)]
pub struct MemStoreScanner {
    /// Per segment, newest first (on equal keys the newer segment's cell wins), where its
    /// reading stands.
    heads: Vec<Head>,
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

/// The segments a scanner opens on, newest first, collected inline (up to four before it
/// spills): read once, at the scanner's opening, so no cell pays for the inline check.
pub(crate) type SegmentList = smallvec::SmallVec<[AnySegment; 4]>;

/// One segment and where a scanner's reading of it stands.
#[derive(Debug)]
enum Head {
    /// A skip list, read in place: the node of its next cell visible at the read point (`None`
    /// at the end). Batches of cloned cells, as before, counted a reference on each cell's
    /// chunk (an atomic that every reader of the row shares) for cells a get or a reseek never
    /// took.
    Walk {
        list: Arc<Segment>,
        at: Option<Detached<MemKey>>,
    },
    /// A flat segment: the index of its next cell visible at the read point (its length at
    /// the end). The array never changes, so the cell is read in place and cloned only when
    /// taken.
    At { flat: Arc<FlatSegment>, at: usize },
}

impl Head {
    fn new(segment: AnySegment) -> Head {
        match segment {
            AnySegment::List(list) => Head::Walk { list, at: None },
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
            Head::Walk { list, at, .. } => {
                let at = (*at)?;
                // SAFETY: `at` was detached from an entry of this list, which `list` keeps
                // alive (a list frees its nodes only when it drops).
                Some(unsafe { at.attach(list.cells()) }.key().cell())
            }
            Head::At { flat, at } => flat.cell(*at),
        }
    }

    /// Moves to the first cell from `from`.
    fn position(&mut self, from: Bound<&CellKey>, read_point: u64) {
        match self {
            Head::Walk { list, at } => {
                let first = visible(list.first_entry(from), read_point);
                *at = first.map(Entry::detach);
                prefetch_landing(first);
            }
            Head::At { flat, at } => {
                *at = flat.first_visible(from, read_point);
                prefetch_from(flat, *at);
            }
        }
    }

    /// Moves forward to the first cell at or after `key`, never back: a skip list searches
    /// forward from where the head is (a finger search, `log d` steps for a cell `d` nodes on),
    /// not from the top through other rows' nodes.
    fn reseek(&mut self, key: &CellKey, read_point: u64) {
        match self {
            Head::Walk { list, at } => {
                let cells = list.cells();
                // SAFETY: as in `front`.
                let Some(current) = at.map(|at| unsafe { at.attach(cells) }) else {
                    return;
                };
                if current.key().cell_key() >= key {
                    return;
                }
                let landed = visible(list.first_entry_after(current, key), read_point);
                *at = landed.map(Entry::detach);
                prefetch_landing(landed);
            }
            Head::At { flat, at } => {
                if flat.cell(*at).is_some_and(|cell| cell.key() < key) {
                    *at = flat.visible_from(flat.lower_bound_after(*at, key), read_point);
                    prefetch_from(flat, *at);
                }
            }
        }
    }

    /// Takes the next cell (a clone of the stored one) and moves on to the next visible one.
    fn take(&mut self, read_point: u64) -> Option<Cell> {
        let cell = self.front()?.clone();
        self.pass(read_point);
        Some(cell)
    }

    /// Moves past the next cell without cloning it (a count on its MSLAB chunk that every
    /// reader of the row shares).
    fn pass(&mut self, read_point: u64) {
        match self {
            Head::Walk { list, at } => {
                // SAFETY: as in `front`.
                let Some(current) = at.map(|at| unsafe { at.attach(list.cells()) }) else {
                    return;
                };
                let next = visible(current.next(), read_point);
                *at = next.map(Entry::detach);
                // Two steps ahead: the node after the next one (whose memory the previous step
                // asked for) has its cell's bytes asked for now, and the node after it its memory.
                if let Some(after) = next.and_then(|next| next.next()) {
                    prefetch_cell(after.key().cell());
                    if let Some(further) = after.next() {
                        further.prefetch();
                    }
                }
            }
            Head::At { flat, at } => {
                if *at < flat.len() {
                    *at = flat.visible_from(*at + 1, read_point);
                    prefetch_ahead(flat, *at + PREFETCH_AHEAD - 1);
                }
            }
        }
    }

    /// After the head's cell was kept with `rule` ([`Take::KeepRun`]): moves each following
    /// cell that continues the run into `out` and the head onto the last cell kept, for
    /// [`Head::pass`] to move past. A flat segment tells which cells continue it from its
    /// next-column bits and the cells' key fields, without reading their bytes (each of which
    /// was a cache miss a cell for a ten-column row, compared to the cell before it); it stops
    /// at a cell the reading cannot see, which `pass` then skips, so every cell it takes is
    /// the next column of the one kept before it. A skip list's head stays: telling would
    /// read the bytes, as deciding the cell does.
    fn keep_run(&mut self, rule: &RunRule, read_point: u64, out: &mut Vec<Cell>) {
        let Head::At { flat, at } = self else {
            return;
        };
        // The cells after the run (the next row's first, most often) and after the run
        // following it are the next whose bytes are read, to compare their rows: asked for
        // now, while this run's cells are taken, not one row compare ahead.
        let end = flat.run_end(*at + 1);
        // The array itself: a ten-column row's cells are ten lines of it, which the CPU did
        // not fetch ahead on its own (the row-start look-ups below waited on them).
        for ahead in *at + 1 + ARRAY_AHEAD..end + ARRAY_AHEAD {
            if let Some(cell) = flat.cell(ahead) {
                keel_sync::prefetch_value(cell);
            }
        }
        if let Some(cell) = flat.cell(end) {
            keel_sync::prefetch(cell.row());
            if let Some(after) = flat.cell(flat.run_end(end + 1)) {
                keel_sync::prefetch(after.row());
            }
        }
        // Every cell before `end` has its bit; the run ends at the first of them the reading
        // cannot see or the rule does not keep.
        let run = flat.cells_in(*at + 1..end);
        let taken = run
            .iter()
            .position(|cell| cell.sequence_id() > read_point || !rule.continues_next_column(cell))
            .unwrap_or(run.len());
        out.extend_from_slice(&run[..taken]);
        *at += taken;
    }

    /// Ends the reading: nothing more comes from this segment.
    fn clear(&mut self) {
        match self {
            Head::Walk { at, .. } => *at = None,
            Head::At { flat, at } => *at = flat.len(),
        }
    }

    fn last_row_before(&self, row: Option<&[u8]>, read_point: u64) -> Option<Bytes> {
        match self {
            Head::Walk { list, .. } => list.last_row_before(row, read_point),
            Head::At { flat, .. } => flat.last_row_before(row, read_point),
        }
    }
}

/// Where a skip list's reading lands after a search: asks for the landed cell's bytes (the
/// merge compares them next) and for the next node's memory, without waiting on any of it.
fn prefetch_landing(landed: Option<Entry<'_>>) {
    if let Some(landed) = landed {
        prefetch_cell(landed.key().cell());
        if let Some(next) = landed.next() {
            next.prefetch();
        }
    }
}

/// Asks for the bytes of a flat segment's cells from `index` on, which lie in chunks
/// elsewhere: the merge compares each as it comes, and asked for only then, each was a wait
/// for memory. A walk that moves one cell on asks for the one [`PREFETCH_AHEAD`] ahead
/// ([`prefetch_ahead`]); a jump, for all of them.
#[inline]
fn prefetch_from(flat: &FlatSegment, index: usize) {
    for ahead in index..index + PREFETCH_AHEAD {
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
        segments: impl IntoIterator<Item = AnySegment>,
        range: impl RangeBounds<CellKey>,
        read_point: u64,
    ) -> MemStoreScanner {
        let mut scanner = MemStoreScanner {
            heads: segments.into_iter().map(Head::new).collect(),
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
    /// never back (HBase's `reseek`; to go back, [`MemStoreScanner::seek`]). A skip list steps
    /// along its bottom level first and searches from the top only if `key` is further on: a
    /// get that skips a column's older versions lands a few cells on, where a seek searched
    /// every segment from the top. A flat segment's index moves to `key`'s by a search of its
    /// array.
    pub fn reseek(&mut self, key: &CellKey) {
        self.fresh_at = None;
        for head in &mut self.heads {
            head.reseek(key, self.read_point);
        }
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
        for head in &mut self.heads {
            head.position(from, self.read_point);
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

    /// Takes the front cell of segment `index`.
    fn take_front(&mut self, index: usize) -> Option<Cell> {
        self.heads[index].take(self.read_point)
    }

    /// [`MemStoreScanner::take_front`] for a cell no one keeps ([`Head::pass`]).
    fn pass_front(&mut self, index: usize) {
        self.heads[index].pass(self.read_point);
    }

    /// The segment whose cell is next, with the same key in older segments (re-added after a
    /// snapshot) passed over: the newest wins. `None` at the end.
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

    /// Walks the cells of `row` from the next one, showing each to `decide` (with the results
    /// kept so far) and keeping (cloned into `out`) or passing it as told, until a cell of
    /// another row, the end, or [`Take::Stop`] (that cell stays next): the loop of
    /// [`peek`](MemStoreScanner::peek), [`next_into`](MemStoreScanner::next_into) and
    /// [`pass_next`](MemStoreScanner::pass_next) a row reader would write, in one call. While
    /// another segment also holds cells of `row`, it goes cell by cell through the segments'
    /// merge; once one segment alone does (the common case: a row written in one put), along
    /// that segment only, without comparing the other segments' heads at every cell.
    pub fn take_row(&mut self, row: &[u8], out: &mut Vec<Cell>, decide: &mut Decide<'_>) {
        while let Some(index) = self.front {
            let Some(cell) = self.heads[index].front() else {
                return;
            };
            if !same_bytes(cell.row(), row) {
                return;
            }
            if self.alone_in_row(index, row) {
                self.take_alone(index, row, out, decide);
                return;
            }
            match decide(cell, out) {
                Take::Keep | Take::KeepRun(_) => self.next_into(out),
                Take::Pass => self.pass_next(),
                Take::Stop => return,
            }
        }
    }

    /// Whether no segment but `index` has its head in `row`. The others' heads sort after
    /// `index`'s, so one in a later row holds nothing more of `row` (no duplicate key either).
    fn alone_in_row(&self, index: usize, row: &[u8]) -> bool {
        self.heads.iter().enumerate().all(|(other, head)| {
            other == index || head.front().is_none_or(|cell| !same_bytes(cell.row(), row))
        })
    }

    /// [`MemStoreScanner::take_row`] along segment `index`, which alone holds the rest of `row`.
    fn take_alone(
        &mut self,
        index: usize,
        row: &[u8],
        out: &mut Vec<Cell>,
        decide: &mut Decide<'_>,
    ) {
        self.fresh_at = None;
        // The end is checked per cell only when it can fall inside this row: not when it is
        // the row's own closing bound (a get's scanner ends at `last_on_row`, after every cell
        // of the row: a key comparison per cell of every get, for nothing).
        let end = match &self.end {
            Bound::Included(end) | Bound::Excluded(end)
                if compare_bytes(end.row(), row).is_le() && !closes_row(end, row) =>
            {
                Some(&self.end)
            }
            _ => None,
        };
        let head = &mut self.heads[index];
        while let Some(cell) = head.front() {
            if !same_bytes(cell.row(), row) || end.is_some_and(|end| !within(end, cell.key())) {
                break;
            }
            match decide(cell, out) {
                Take::Keep => {
                    out.push(cell.clone());
                    head.pass(self.read_point);
                }
                Take::KeepRun(rule) => {
                    out.push(cell.clone());
                    // Not where the end may fall inside the run: each cell is checked then.
                    if end.is_none() {
                        head.keep_run(&rule, self.read_point, out);
                    }
                    head.pass(self.read_point);
                }
                Take::Pass => head.pass(self.read_point),
                Take::Stop => break,
            }
        }
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
        within(&self.end, key)
    }
}

/// Whether `end` sorts after every cell of `row`: a key of that row with no family, no
/// qualifier and the `Minimum` type (`CellKey::last_on_row`), which `CellKey`'s order puts last
/// on its row; a stored cell always has a family.
fn closes_row(end: &CellKey, row: &[u8]) -> bool {
    end.family().is_empty()
        && end.qualifier().is_empty()
        && end.cell_type() == CellType::Minimum
        && same_bytes(end.row(), row)
}

/// Whether `key` is within the scan's `end`.
fn within(end: &Bound<CellKey>, key: &CellKey) -> bool {
    match end {
        Bound::Included(end) => key <= end,
        Bound::Excluded(end) => key < end,
        Bound::Unbounded => true,
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
