//! A flat segment: cells frozen in memory as one sorted array (HBase's `CellArrayMap`), what an
//! in-memory flush ([`crate::MemStore::flatten`]) turns the skip lists it takes into.
//!
//! Why: a skip list's nodes lie wherever the allocator put them, in insertion order, which for
//! hashed row keys is random; a search is a chain of cache misses (two nodes a level) and a
//! walk one miss per cell. An array is searched by halving a dense column of row prefixes and
//! walked in address order, which the CPU's prefetcher follows on its own.

use std::ops::{Bound, ControlFlow};

use bytes::{Bytes, BytesMut};
use keel_cell::{Cell, CellKey, same_bytes};
use keel_sync::Mutex;

use crate::chunk::{ChunkPool, Mslab};
use crate::row_filter::{RowFilter, row_hash};
use crate::segment::{AnySegment, SegmentSize, row_prefix};

/// One prefix in this many is copied into [`FlatSegment`]'s top index.
const TOP_EVERY: usize = 64;

/// Where [`FlatSegment::build`] copies the cells it flattens.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Relocation<'a> {
    /// The pool new chunks come from.
    pub(crate) pool: &'a ChunkPool,
    /// Cells larger than this keep their own allocation, as on insert.
    pub(crate) max_copied_cell: usize,
}

/// Cells in CellComparator order, never changed once built.
#[derive(Debug)]
pub(crate) struct FlatSegment {
    pub(crate) id: u64,
    /// Each key's row prefix ([`row_prefix`]), searched first: 16 bytes a cell, so the first
    /// steps of a search stay in a few cache lines.
    prefixes: Vec<u128>,
    /// Every [`TOP_EVERY`]th prefix: a search halves this small array (it stays in cache),
    /// then one block of 64 prefixes (1 KiB), instead of a column the size of the segment,
    /// each of whose first halvings was a cache miss.
    tops: Vec<u128>,
    /// For each cell, the index of the last cell of its column (its row, family and qualifier;
    /// empty for a segment of over `u32::MAX` cells, never built): a reseek past a column's
    /// versions jumps there instead of galloping over them, a cache miss per key compared.
    column_ends: Vec<u32>,
    /// One bit a cell: set when the cell is of the row and family of the cell before it and
    /// another column, its row's next column ([`FlatSegment::run_end`]). A scan keeping a
    /// row's plain run of columns takes such cells by this bit and their key fields, without
    /// reading their bytes to compare them with the cell before.
    next_columns: Vec<u64>,
    /// The cells, in order: a scanner reads them in place and clones only those it returns
    /// (copying every cell of a batch into a queue counted a reference on its chunk per cell,
    /// a cache miss apiece, for cells a short scan mostly never took).
    cells: Vec<Cell>,
    rows: RowFilter,
    /// The MSLAB chunks the cells lie in, for the pool once the segment is flushed and cleared.
    chunks: Mutex<Vec<BytesMut>>,
}

impl FlatSegment {
    /// Every cell of `inputs` (newest first; on an identical key the newest's), in order, and
    /// their sizes. The inputs are read, not changed: readers keep using them until the caller
    /// swaps this in.
    ///
    /// With `relocate`, each cell that fits is copied into chunks taken from its pool, in key
    /// order, and the segment keeps those chunks; the inputs' chunks are then the caller's to
    /// give back. Without, the cells keep their bytes where they are.
    pub(crate) fn build(
        id: u64,
        inputs: &[AnySegment],
        relocate: Option<Relocation<'_>>,
    ) -> (FlatSegment, SegmentSize) {
        let capacity = inputs.iter().map(AnySegment::len).sum();
        let mut cells = Vec::with_capacity(capacity);
        let mslab = Mslab::new();
        crate::visit::visit(inputs, &.., u64::MAX, |key, _| {
            // Every key a segment stores is a cell's (`add`): `from_key` gives it back.
            let Some(cell) = Cell::from_key(key.clone()) else {
                return ControlFlow::Continue(());
            };
            let parts = cell.coordinates_and_value();
            let len = parts[0].len() + parts[1].len();
            cells.push(match relocate {
                Some(to) if len <= to.max_copied_cell => {
                    let copy = mslab.copy(to.pool, parts, len);
                    // The copy holds the cell's very bytes, so `with_storage` accepts it.
                    cell.with_storage(copy).unwrap_or(cell)
                }
                _ => cell,
            });
            ControlFlow::Continue(())
        });
        let (segment, size) = FlatSegment::from_cells(id, cells);
        segment.give_chunks(mslab.take_chunks());
        (segment, size)
    }

    fn from_cells(id: u64, cells: Vec<Cell>) -> (FlatSegment, SegmentSize) {
        let rows = RowFilter::default();
        let mut size = SegmentSize::EMPTY;
        let mut last_row: Option<&[u8]> = None;
        let mut prefixes = Vec::with_capacity(cells.len());
        // Filled in the same pass, which reads each cell's bytes (a cache miss apiece) once.
        let mut column_ends = ColumnEnds::new(cells.len());
        let mut next_columns = vec![0u64; cells.len().div_ceil(64)];
        let mut previous: Option<&CellKey> = None;
        for (index, key) in cells.iter().map(Cell::key).enumerate() {
            let same_row = last_row == Some(key.row());
            if !same_row {
                rows.insert(row_hash(key.row()));
                last_row = Some(key.row());
            }
            let prefix = row_prefix(key.row());
            let same_column = previous.is_some_and(|previous| {
                prefixes.last() == Some(&prefix) && previous.same_column(key)
            });
            let next_column = same_row
                && !same_column
                && previous.is_some_and(|previous| same_bytes(previous.family(), key.family()));
            if next_column {
                next_columns[index / 64] |= 1 << (index % 64);
            }
            column_ends.next(same_column);
            prefixes.push(prefix);
            previous = Some(key);
            size = size.plus(SegmentSize::of_key(key));
        }
        let segment = FlatSegment {
            id,
            tops: prefixes.iter().step_by(TOP_EVERY).copied().collect(),
            column_ends: column_ends.finish(),
            next_columns,
            prefixes,
            cells,
            rows,
            chunks: Mutex::new(Vec::new()),
        };
        (segment, size)
    }

    /// This segment without the cell stored under exactly `key` (sequence id included), if it
    /// holds one, and that cell's data bytes. A rollback's path, rare: it copies the rest.
    pub(crate) fn without(&self, key: &CellKey) -> Option<(FlatSegment, u64)> {
        let index = self.lower_bound(key);
        let found = self.key(index).filter(|stored| *stored == key)?;
        let removed = SegmentSize::of_key(found).data_bytes;
        let mut cells = self.cells.clone();
        cells.remove(index);
        let (segment, _) = FlatSegment::from_cells(self.id, cells);
        segment.give_chunks(self.take_chunks());
        Some((segment, removed))
    }

    pub(crate) fn len(&self) -> usize {
        self.cells.len()
    }

    /// The cell at `index`, if any.
    #[inline]
    pub(crate) fn cell(&self, index: usize) -> Option<&Cell> {
        self.cells.get(index)
    }

    /// The cells at `range`, which must lie within the segment.
    #[inline]
    pub(crate) fn cells_in(&self, range: std::ops::Range<usize>) -> &[Cell] {
        &self.cells[range]
    }

    /// The first index at or after `from` whose cell is not the next column of the cell before
    /// it (the length at the end): where a run of columns from before `from` ends, typically
    /// at the next row's first cell.
    pub(crate) fn run_end(&self, from: usize) -> usize {
        let mut word = from / 64;
        let mut from_bit = from % 64;
        while let Some(bits) = self.next_columns.get(word) {
            let ends = !bits & (u64::MAX << from_bit);
            if ends != 0 {
                return (word * 64 + ends.trailing_zeros() as usize).min(self.cells.len());
            }
            word += 1;
            from_bit = 0;
        }
        self.cells.len()
    }

    /// The key at `index`, if any.
    #[inline]
    fn key(&self, index: usize) -> Option<&CellKey> {
        self.cells.get(index).map(Cell::key)
    }

    pub(crate) fn may_contain_row(&self, hash: u64) -> bool {
        self.rows.may_contain(hash)
    }

    /// Adds chunks to those this segment hands back when cleared.
    pub(crate) fn give_chunks(&self, chunks: Vec<BytesMut>) {
        self.chunks.lock().extend(chunks);
    }

    pub(crate) fn take_chunks(&self) -> Vec<BytesMut> {
        std::mem::take(&mut *self.chunks.lock())
    }

    /// The index of the first key at or after `key`: halving the prefixes, then the keys that
    /// tie with `key`'s row prefix (a row's versions and columns).
    pub(crate) fn lower_bound(&self, key: &CellKey) -> usize {
        let prefix = row_prefix(key.row());
        let low = self.first_prefix_from(prefix);
        let high = self.end_of_ties(low, prefix);
        // Each key compared is a cache miss on its bytes. A seek to a row's start (a get, a
        // scan's next row) lands on the first tie: one comparison, where halving a hot row's
        // hundreds of versions took ten.
        match self.cells.get(low..high) {
            Some([first, rest @ ..]) if first.key() < key => {
                low + 1 + rest.partition_point(|c| c.key() < key)
            }
            _ => low,
        }
    }

    /// [`FlatSegment::lower_bound`] from `from`, whose key sorts before `key`. When `key`
    /// shares the row prefix of the key at `from` (a reseek past a column's versions, or to
    /// the next column), the search gallops forward from `from`: the target usually lies a few
    /// cells on, where the search from the top halved the segment's prefixes and then every
    /// version of the row. Otherwise it is that search.
    ///
    /// When `key` lies past the end of `from`'s column (a reseek once a read is done with the
    /// column), the search starts at that end: the cells between sort before it, so before
    /// `key` too.
    pub(crate) fn lower_bound_after(&self, from: usize, key: &CellKey) -> usize {
        let prefix = row_prefix(key.row());
        if self.prefixes.get(from) != Some(&prefix) {
            return self.lower_bound(key);
        }
        debug_assert!(self.cells[from].key() < key, "a reseek goes forward");
        // Not to the next cell: the gallop's first step compares that one anyway.
        let from = match self.column_ends.get(from).map(|&end| end as usize) {
            Some(end) if end > from + 1 && self.cells[end].key() < key => end,
            _ => from,
        };
        self.gallop(from, |i| {
            self.prefixes[i] == prefix && self.cells[i].key() < key
        })
    }

    /// The index of the first prefix at or after `prefix`: through the top index, then one
    /// block.
    fn first_prefix_from(&self, prefix: u128) -> usize {
        let blocks_before = self.tops.partition_point(|top| *top < prefix);
        if blocks_before == 0 {
            return 0;
        }
        // Block `blocks_before - 1` starts below `prefix`, and the next starts at or above it.
        let start = (blocks_before - 1) * TOP_EVERY + 1;
        let end = (blocks_before * TOP_EVERY).min(self.prefixes.len());
        start + self.prefixes[start..end].partition_point(|p| *p < prefix)
    }

    /// The first index at or after `low` whose prefix is not `prefix`.
    fn end_of_ties(&self, low: usize, prefix: u128) -> usize {
        if self.prefixes.get(low) != Some(&prefix) {
            return low;
        }
        self.gallop(low, |i| self.prefixes[i] == prefix)
    }

    /// The first index after `from` where `holds` is false, `holds` being true at `from` and
    /// on every index up to some point, false from it on: galloping (steps of 1, 2, 4, … from
    /// `from`, then halving the last), since the point is usually a few cells on (a row's
    /// versions, a column's) but a hot row may have thousands of versions.
    fn gallop(&self, from: usize, holds: impl Fn(usize) -> bool) -> usize {
        #[cfg(test)]
        let holds = |i| {
            tests::PROBES.with(|probes| probes.set(probes.get() + 1));
            holds(i)
        };
        let len = self.cells.len();
        // `holds` is true at `low` and false at `high` (or `high` is `len`); the answer lies
        // in `low + 1..=high`.
        let (mut low, mut step) = (from, 1);
        while low + step < len && holds(low + step) {
            low += step;
            step *= 2;
        }
        let mut high = (low + step).min(len);
        low += 1;
        while low < high {
            let mid = low + (high - low) / 2;
            if holds(mid) {
                low = mid + 1;
            } else {
                high = mid;
            }
        }
        low
    }

    /// The index of the first key after `from`.
    fn start(&self, from: Bound<&CellKey>) -> usize {
        match from {
            Bound::Unbounded => 0,
            Bound::Included(key) => self.lower_bound(key),
            Bound::Excluded(key) => {
                let at = self.lower_bound(key);
                at + usize::from(self.key(at).is_some_and(|k| k == key))
            }
        }
    }

    /// The key at `index`, if any, with its prefix.
    pub(crate) fn entry(&self, index: usize) -> Option<(u128, &CellKey)> {
        Some((*self.prefixes.get(index)?, self.key(index)?))
    }

    /// The first index at or after `index` whose key is visible at `read_point`.
    pub(crate) fn visible_from(&self, mut index: usize, read_point: u64) -> usize {
        while self
            .key(index)
            .is_some_and(|k| k.sequence_id() > read_point)
        {
            index += 1;
        }
        index
    }

    /// The index of the first key after `from` visible at `read_point`.
    pub(crate) fn first_visible(&self, from: Bound<&CellKey>, read_point: u64) -> usize {
        self.visible_from(self.start(from), read_point)
    }

    /// As the skip list's: the row of the last cell visible at `read_point` before `row`.
    pub(crate) fn last_row_before(&self, row: Option<&[u8]>, read_point: u64) -> Option<Bytes> {
        let mut end = match row {
            None => self.cells.len(),
            Some(row) => self.lower_bound(&CellKey::first_on_row(Bytes::copy_from_slice(row))),
        };
        while end > 0 {
            end -= 1;
            let key = self.cells[end].key();
            if key.sequence_id() <= read_point {
                return Some(key.row_bytes());
            }
        }
        None
    }
}

/// [`FlatSegment::column_ends`], built one cell at a time in order: each column's cells get
/// its last index once the next column starts (or the cells end).
struct ColumnEnds {
    /// Empty, and left so, for over `u32::MAX` cells.
    ends: Vec<u32>,
    /// The current column's first index.
    start: usize,
    building: bool,
}

impl ColumnEnds {
    fn new(cells: usize) -> ColumnEnds {
        let building = u32::try_from(cells).is_ok();
        ColumnEnds {
            ends: Vec::with_capacity(if building { cells } else { 0 }),
            start: 0,
            building,
        }
    }

    /// The next cell, of the column before it or not.
    fn next(&mut self, same_column: bool) {
        if !self.building {
            return;
        }
        let index = self.ends.len();
        if !same_column {
            self.close(index);
        }
        // A placeholder until the column closes.
        self.ends.push(0);
    }

    /// Gives the current column's cells (`start..end`) their last index.
    fn close(&mut self, end: usize) {
        if end > self.start {
            // `end - 1 < cells <= u32::MAX` (checked at `new`).
            let last = (end - 1) as u32;
            self.ends[self.start..end].fill(last);
        }
        self.start = end;
    }

    fn finish(mut self) -> Vec<u32> {
        if self.building {
            self.close(self.ends.len());
        }
        self.ends
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use keel_cell::{CellKey, CellType};
    use proptest::prelude::*;

    use super::FlatSegment;

    thread_local! {
        /// Indexes a gallop has tested, on this thread.
        pub(super) static PROBES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    /// A reseek past a hot column from one of its first versions jumps to the column's end:
    /// the gallop then tests one index, where galloping over 1 000 versions tested eighteen.
    #[test]
    fn a_reseek_past_a_hot_column_starts_at_its_end() {
        let row = Bytes::from_static(b"user0123456789abcdef");
        let cell = |qualifier: &'static str, version: i64| {
            let key = CellKey::new(row.clone(), "f", qualifier, version, CellType::Put);
            keel_cell::Cell::from_key(key.expect("key")).expect("cell")
        };
        let mut cells: Vec<_> = (0..1_000).map(|v| cell("q", v)).collect();
        cells.extend((0..3).map(|v| cell("r", v)));
        cells.sort_by(|a, b| a.key().cmp(b.key()));
        let (flat, _) = FlatSegment::from_cells(1, cells);
        let past = CellKey::last_on_column(row.clone(), b"f", b"q");
        for from in [0, 2] {
            PROBES.with(|probes| probes.set(0));
            assert_eq!(flat.lower_bound_after(from, &past), 1_000);
            let probes = PROBES.with(std::cell::Cell::get);
            assert!(probes <= 2, "{probes} indexes tested from {from}");
        }
    }

    /// Rows that tie on their first 16 bytes or not, and hot rows with many versions, of two
    /// columns (a third of the versions in the second).
    fn key(row: u16, shared: bool, version: i64) -> CellKey {
        let row = if shared {
            format!("user0123456789ab{row:05}")
        } else {
            format!("u{row:05}")
        };
        let qualifier = if version % 3 == 0 { "r" } else { "q" };
        CellKey::new(Bytes::from(row), "f", qualifier, version, CellType::Put).expect("key")
    }

    fn keys() -> impl Strategy<Value = Vec<CellKey>> {
        prop::collection::vec((0u16..400, any::<bool>(), 0i64..40), 0..3000).prop_map(|raw| {
            let mut keys: Vec<CellKey> = raw.into_iter().map(|(r, s, v)| key(r, s, v)).collect();
            keys.sort();
            keys.dedup();
            keys
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// A run ends at the first cell, from where it is asked, that is not of the row and
        /// family of the cell before it and another column, as comparing the keys says.
        #[test]
        fn runs_end_where_the_keys_say(keys in keys()) {
            let cells: Vec<_> = keys
                .into_iter()
                .map(|key| keel_cell::Cell::from_key(key).expect("cell"))
                .collect();
            let next_column = |i: usize| {
                i > 0 && {
                    let (before, cell) = (cells[i - 1].key(), cells[i].key());
                    before.row() == cell.row()
                        && before.family() == cell.family()
                        && before.qualifier() != cell.qualifier()
                }
            };
            let (flat, _) = FlatSegment::from_cells(1, cells.clone());
            for from in 0..=cells.len() + 1 {
                let wanted = (from..cells.len()).find(|&i| !next_column(i)).unwrap_or(cells.len());
                prop_assert_eq!(flat.run_end(from), wanted, "from {}", from);
            }
        }

        /// Through the top index, the galloping tie search and the first-tie shortcut, the
        /// same answer as halving the whole array of keys.
        #[test]
        fn lower_bound_is_the_sorted_arrays(
            keys in keys(),
            probes in prop::collection::vec((0u16..410, any::<bool>(), -1i64..42, 0u8..4), 1..200),
        ) {
            let cells = keys.iter().filter_map(|k| keel_cell::Cell::from_key(k.clone())).collect();
            let (flat, size) = FlatSegment::from_cells(1, cells);
            prop_assert_eq!(size.cell_count, keys.len() as u64);
            for (row, shared, version, kind) in probes {
                let probe = match kind {
                    0 => key(row, shared, version),
                    1 => CellKey::first_on_row(key(row, shared, 0).row_bytes()),
                    2 => CellKey::last_on_row(key(row, shared, 0).row_bytes()),
                    // Past the column's versions: a reseek's target, where a search from
                    // inside the column jumps to its end.
                    _ => CellKey::last_on_column(key(row, shared, 0).row_bytes(), b"f", b"q"),
                };
                let expected = keys.partition_point(|k| *k < probe);
                prop_assert_eq!(flat.lower_bound(&probe), expected, "{:?}", probe);
                // From every earlier index in reach: the same answer, galloping or not.
                for from in expected.saturating_sub(70)..expected {
                    prop_assert_eq!(flat.lower_bound_after(from, &probe), expected, "from {}", from);
                }
            }
        }
    }
}
