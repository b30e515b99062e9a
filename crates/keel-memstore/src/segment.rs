//! A segment: one concurrent skiplist of cells plus its size accounting and MSLAB.

use std::cmp::Ordering as CmpOrdering;
use std::ops::Bound;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use bytes::Bytes;
use keel_cell::{Cell, CellKey, same_bytes};

use crate::chunk::{ChunkPool, Mslab};
use crate::flat::FlatSegment;
use crate::row_filter::{RowFilter, row_hash};
use crate::skiplist::{self, SkipList};

/// A cell's node in a segment's skip list, borrowed for as long as the segment.
pub(crate) type Entry<'a> = skiplist::Entry<'a, MemKey>;

/// Estimated heap bytes per stored cell beyond its data: the skip list's node in its arena (the
/// key, whose handle holds the value too, the value's length, its run's end and two marks) and
/// its average tower of 4/3 pointers (HBase counts a fixed per-cell overhead likewise). A flat
/// segment's cell takes less (its handle, a 16-byte prefix, a 4-byte column end and a bit) and is
/// counted the same.
pub const CELL_OVERHEAD_BYTES: u64 = (skiplist::node_header_bytes::<MemKey>() + 11) as u64;

/// Cells a skip-list segment holds before it records row hints (`row_hints`): a smaller list
/// is searched from the top in a few cached steps, and the hints' first level (16 KiB,
/// counted in the segment's size) would outweigh a small memstore's cells.
const HINTS_FROM_CELLS: usize = 1024;

/// Sizes of a segment (or of the whole memstore): what the region's flush decisions read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SegmentSize {
    /// Row, family, qualifier and value bytes of the cells held.
    pub data_bytes: u64,
    /// Estimated bookkeeping bytes ([`CELL_OVERHEAD_BYTES`] per cell).
    pub overhead_bytes: u64,
    /// Cells held.
    pub cell_count: u64,
    /// Smallest cell timestamp (`i64::MAX` when empty).
    pub min_timestamp: i64,
    /// Largest cell timestamp (`i64::MIN` when empty).
    pub max_timestamp: i64,
    /// Smallest sequence id (`u64::MAX` when empty): the WAL may not drop entries at or above it
    /// until this segment is flushed.
    pub min_sequence_id: u64,
}

impl SegmentSize {
    /// The size of nothing.
    pub const EMPTY: SegmentSize = SegmentSize {
        data_bytes: 0,
        overhead_bytes: 0,
        cell_count: 0,
        min_timestamp: i64::MAX,
        max_timestamp: i64::MIN,
        min_sequence_id: u64::MAX,
    };

    /// The size of one stored cell, given as its key (whose bytes hold the value too).
    pub(crate) fn of_key(key: &CellKey) -> SegmentSize {
        SegmentSize {
            data_bytes: (key.coordinates().len() + key.cell_value().len()) as u64,
            overhead_bytes: CELL_OVERHEAD_BYTES,
            cell_count: 1,
            min_timestamp: key.timestamp(),
            max_timestamp: key.timestamp(),
            min_sequence_id: key.sequence_id(),
        }
    }

    /// Both sizes together.
    pub fn plus(self, other: SegmentSize) -> SegmentSize {
        SegmentSize {
            data_bytes: self.data_bytes + other.data_bytes,
            overhead_bytes: self.overhead_bytes + other.overhead_bytes,
            cell_count: self.cell_count + other.cell_count,
            min_timestamp: self.min_timestamp.min(other.min_timestamp),
            max_timestamp: self.max_timestamp.max(other.max_timestamp),
            min_sequence_id: self.min_sequence_id.min(other.min_sequence_id),
        }
    }
}

/// Lock-free counters behind a [`SegmentSize`]. Each field is individually atomic.
#[derive(Debug)]
pub(crate) struct SizeCounters {
    data_bytes: AtomicU64,
    /// Bookkeeping beyond [`CELL_OVERHEAD_BYTES`] a cell: a skip list's row hints.
    extra_overhead: AtomicU64,
    cell_count: AtomicU64,
    min_timestamp: AtomicI64,
    max_timestamp: AtomicI64,
    min_sequence_id: AtomicU64,
}

impl SizeCounters {
    pub(crate) fn new() -> SizeCounters {
        SizeCounters {
            data_bytes: AtomicU64::new(0),
            extra_overhead: AtomicU64::new(0),
            cell_count: AtomicU64::new(0),
            min_timestamp: AtomicI64::new(i64::MAX),
            max_timestamp: AtomicI64::new(i64::MIN),
            min_sequence_id: AtomicU64::new(u64::MAX),
        }
    }

    fn record(&self, key: &SegmentSize) {
        let data_bytes = key.data_bytes;
        self.data_bytes.fetch_add(data_bytes, Ordering::Relaxed);
        self.cell_count.fetch_add(1, Ordering::Relaxed);
        // Look before writing: the bounds rarely move, and a load leaves the line shared.
        let timestamp = key.min_timestamp;
        if timestamp < self.min_timestamp.load(Ordering::Relaxed) {
            self.min_timestamp.fetch_min(timestamp, Ordering::Relaxed);
        }
        if timestamp > self.max_timestamp.load(Ordering::Relaxed) {
            self.max_timestamp.fetch_max(timestamp, Ordering::Relaxed);
        }
        if key.min_sequence_id < self.min_sequence_id.load(Ordering::Relaxed) {
            self.min_sequence_id
                .fetch_min(key.min_sequence_id, Ordering::Relaxed);
        }
    }

    fn replace_value(&self, old_len: u64, new_len: u64) {
        if new_len >= old_len {
            self.data_bytes
                .fetch_add(new_len - old_len, Ordering::Relaxed);
        } else {
            self.data_bytes
                .fetch_sub(old_len - new_len, Ordering::Relaxed);
        }
    }

    /// Takes a removed cell back out of the sizes. The timestamp and sequence bounds stay as
    /// they were: wider bounds are safe (a reader may look at a segment it could skip; the WAL
    /// keeps an entry a little longer), narrower ones would not be.
    pub(crate) fn unrecord(&self, data_bytes: u64) {
        self.data_bytes.fetch_sub(data_bytes, Ordering::Relaxed);
        self.cell_count.fetch_sub(1, Ordering::Relaxed);
    }

    /// Adds bookkeeping bytes that are not a cell's (a skip list's row hints).
    pub(crate) fn add_overhead(&self, bytes: u64) {
        self.extra_overhead.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Takes back bookkeeping bytes [`SizeCounters::add_overhead`] added (a list whose hints
    /// went when it was flattened).
    pub(crate) fn remove_overhead(&self, bytes: u64) {
        let _ = self
            .extra_overhead
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |now| {
                Some(now.saturating_sub(bytes))
            });
    }

    pub(crate) fn read(&self) -> SegmentSize {
        let cell_count = self.cell_count.load(Ordering::Relaxed);
        SegmentSize {
            data_bytes: self.data_bytes.load(Ordering::Relaxed),
            overhead_bytes: cell_count * CELL_OVERHEAD_BYTES
                + self.extra_overhead.load(Ordering::Relaxed),
            cell_count,
            min_timestamp: self.min_timestamp.load(Ordering::Relaxed),
            max_timestamp: self.max_timestamp.load(Ordering::Relaxed),
            min_sequence_id: self.min_sequence_id.load(Ordering::Relaxed),
        }
    }

    pub(crate) fn store(&self, size: SegmentSize) {
        self.data_bytes.store(size.data_bytes, Ordering::Relaxed);
        let per_cell = size.cell_count * CELL_OVERHEAD_BYTES;
        self.extra_overhead.store(
            size.overhead_bytes.saturating_sub(per_cell),
            Ordering::Relaxed,
        );
        self.cell_count.store(size.cell_count, Ordering::Relaxed);
        self.min_timestamp
            .store(size.min_timestamp, Ordering::Relaxed);
        self.max_timestamp
            .store(size.max_timestamp, Ordering::Relaxed);
        self.min_sequence_id
            .store(size.min_sequence_id, Ordering::Relaxed);
    }
}

/// Cells in CellComparator order. Keys include the sequence id, so every version of a column is
/// its own entry; adding an identical key again replaces the value (HBase's upsert case).
///
/// The skip list is the crate's own arena list (`skiplist`): inserts allocate no node of their
/// own, and readers walk entries borrowed from the segment with no guard or reference count.
#[derive(Debug)]
pub(crate) struct Segment {
    pub(crate) id: u64,
    /// Each cell as its key ([`Cell::into_key`]: the value lies after the coordinates in the
    /// key's buffer), with its value's length for the size accounting.
    cells: SkipList<MemKey>,
    /// The rows this segment has held a cell of, so a get of another row skips it.
    rows: RowFilter,
    mslab: Option<Mslab>,
    max_copied_cell: usize,
}

fn data_len(cell: &Cell) -> usize {
    cell.coordinates_and_value()
        .iter()
        .map(|part| part.len())
        .sum()
}

impl Segment {
    pub(crate) fn new(id: u64, mslab: bool, max_copied_cell: usize) -> Segment {
        Segment {
            id,
            cells: SkipList::new(),
            rows: RowFilter::default(),
            mslab: mslab.then(Mslab::new),
            max_copied_cell,
        }
    }

    /// Adds a cell, copying its bytes into memory this segment owns so that the memstore never
    /// pins the caller's (request) buffers.
    pub(crate) fn add(&self, cell: Cell, pool: &ChunkPool, counters: &SizeCounters) {
        // Before the insert: a reader that can see the cell must find its row in the filter.
        let hash = row_hash(cell.row());
        // A row the filter already held may have a hint to insert from; a new one has none,
        // and looking for it would cost a cache miss per level of the hints.
        let seen = self.rows.insert(hash);
        let len = data_len(&cell);
        let parts = cell.coordinates_and_value();
        let copy = match &self.mslab {
            Some(mslab) if len <= self.max_copied_cell => mslab.copy(pool, parts, len),
            _ => Bytes::from(parts.concat()),
        };
        let value_len = cell.value().len() as u64;
        // The copy holds the very bytes of the cell, so `with_storage` accepts it; keeping the
        // original cell is only a fallback that cannot lose data.
        let stored = cell.with_storage(copy).unwrap_or(cell);
        // One search: insert, replacing an identical key (the list orders two adds of one key
        // that race: one inserts, the other replaces, and the sizes stay exact).
        let size = SegmentSize::of_key(stored.key());
        // A row's first cell records the node before it, where a get of the row starts, once
        // the list is large enough for that to matter. The prefixes first: they lie in the
        // nodes, the rows' bytes in chunks elsewhere (the search that placed the cell read the
        // neighbour's only on a prefix tie).
        let hinting = self.cells.len() >= HINTS_FROM_CELLS;
        let before_row = |before: &MemKey, new: &MemKey| {
            hinting
                && (before.prefix() != new.prefix()
                    || !same_bytes(before.cell_key().row(), new.cell_key().row()))
        };
        // A column's versions are a run: a read done with the column jumps to the run's end.
        // Only a row seen before can have the new cell's column after it.
        let same_column = |new: &MemKey, later: &MemKey| {
            seen && new.prefix() == later.prefix() && new.cell_key().same_column(later.cell_key())
        };
        let (replaced, hint_bytes) = self.cells.insert_hinted(
            MemKey::new(stored),
            value_len,
            hash,
            seen,
            before_row,
            same_column,
        );
        match replaced {
            None => counters.record(&size),
            Some(old_len) => counters.replace_value(old_len, value_len),
        }
        if hint_bytes > 0 {
            counters.add_overhead(hint_bytes as u64);
        }
    }

    /// Cells held.
    pub(crate) fn len(&self) -> usize {
        self.cells.len()
    }

    /// Bytes the skip list's row hints hold (counted in the segment's overhead).
    pub(crate) fn hint_bytes(&self) -> u64 {
        self.cells.hint_bytes() as u64
    }

    /// False only if the segment never held a cell of the row whose [`row_hash`] is `hash`.
    pub(crate) fn may_contain_row(&self, hash: u64) -> bool {
        self.rows.may_contain(hash)
    }

    /// Removes the cell stored under exactly `key` (sequence id included); true if there was
    /// one. Its MSLAB bytes stay in their chunk until the segment is dropped.
    pub(crate) fn remove(&self, key: &CellKey, counters: &SizeCounters) -> bool {
        match self.cells.remove_by(probe(key)) {
            Some(value_len) => {
                counters.unrecord((key.coordinates().len() as u64) + value_len);
                true
            }
            None => false,
        }
    }

    /// The skip list, for a reader that walks it in place.
    #[inline]
    pub(crate) fn cells(&self) -> &SkipList<MemKey> {
        &self.cells
    }

    /// The first entry at `from` (or the segment's first when unbounded), visible or not. The
    /// search starts at the row's hint when the segment has one (see `row_hints`).
    pub(crate) fn first_entry(&self, from: Bound<&CellKey>) -> Option<Entry<'_>> {
        match from {
            Bound::Unbounded => self.cells.front(),
            Bound::Included(key) => self
                .cells
                .lower_bound_hinted(row_hash(key.row()), probe(key)),
            Bound::Excluded(key) => {
                let target = probe(key);
                let mut entry = self.cells.lower_bound_hinted(row_hash(key.row()), &target);
                while let Some(current) = entry
                    && target(current.key()) == CmpOrdering::Equal
                {
                    entry = current.next();
                }
                entry
            }
        }
    }

    /// The first entry at `key` or after it, visible or not, searched forward from `before`,
    /// an entry that sorts before `key` (a finger search: a reseek a few versions on).
    pub(crate) fn first_entry_after<'a>(
        &'a self,
        before: Entry<'a>,
        key: &CellKey,
    ) -> Option<Entry<'a>> {
        self.cells.lower_bound_after(before, probe(key))
    }

    /// The row of the last cell visible at `read_point` before `row` (strictly; anywhere with
    /// `None`): one skiplist search, then back over entries newer than the read point.
    pub(crate) fn last_row_before(&self, row: Option<&[u8]>, read_point: u64) -> Option<Bytes> {
        let mut entry = match row {
            None => self.cells.last_below_by(None::<fn(&MemKey) -> CmpOrdering>),
            Some(row) => {
                let first = CellKey::first_on_row(Bytes::copy_from_slice(row));
                self.cells.last_below_by(Some(probe(&first)))
            }
        };
        // Back one search at a time: the list links forward only (a reverse scan's step to
        // the previous row is a search in HBase's skip list too).
        while let Some(current) = entry {
            let key = current.key().cell_key();
            if key.sequence_id() <= read_point && !current.is_removed() {
                return Some(key.row_bytes());
            }
            entry = self
                .cells
                .last_below_by(Some(|k: &MemKey| k.cmp(current.key())));
        }
        None
    }

    /// The MSLAB chunks, for the pool; a segment is cleared after its flush and takes no more
    /// cells.
    pub(crate) fn take_chunks(&self) -> Vec<bytes::BytesMut> {
        self.mslab
            .as_ref()
            .map(Mslab::take_chunks)
            .unwrap_or_default()
    }
}

/// A segment as readers see it: the active skip list or a frozen one, or a flat array.
#[derive(Clone, Debug)]
pub(crate) enum AnySegment {
    List(Arc<Segment>),
    Flat(Arc<FlatSegment>),
}

impl AnySegment {
    pub(crate) fn len(&self) -> usize {
        match self {
            AnySegment::List(list) => list.len(),
            AnySegment::Flat(flat) => flat.len(),
        }
    }

    pub(crate) fn may_contain_row(&self, hash: u64) -> bool {
        match self {
            AnySegment::List(list) => list.may_contain_row(hash),
            AnySegment::Flat(flat) => flat.may_contain_row(hash),
        }
    }

    pub(crate) fn take_chunks(&self) -> Vec<bytes::BytesMut> {
        match self {
            AnySegment::List(list) => list.take_chunks(),
            AnySegment::Flat(flat) => flat.take_chunks(),
        }
    }
}

/// Asks for the first line of `cell`'s coordinates and of its value.
#[inline]
pub(crate) fn prefetch_cell(cell: &Cell) {
    for part in cell.coordinates_and_value() {
        keel_sync::prefetch(part);
    }
}

/// `entry` or the first entry after it whose sequence id is at most `read_point` and that was
/// not removed (a rollback) or replaced.
pub(crate) fn visible(mut entry: Option<Entry<'_>>, read_point: u64) -> Option<Entry<'_>> {
    while let Some(current) = entry {
        if current.key().cell_key().sequence_id() <= read_point && !current.is_removed() {
            return Some(current);
        }
        entry = current.next();
    }
    None
}

/// A skiplist key: the cell's key with its row's first 16 bytes beside it, as one big-endian
/// number (zero-padded). A search compares the numbers first and reads the key's bytes, which
/// lie in an MSLAB chunk elsewhere in memory, only on a tie: most of a search's comparisons
/// were a cache miss each on those bytes (a third of a YCSB C get that finds its row in the
/// memstore). The order is the key's: zero is the smallest byte, so two rows whose padded
/// prefixes differ compare as their prefixes do, and a tie falls back to the full comparison.
/// The key is kept as its cell (whose bytes hold the value after the key), so a reader borrows
/// the stored cell itself; searches name their target by [`probe`], never by a `MemKey`. Two
/// are equal when their keys are, whatever their values: an add of an identical key replaces
/// the cell.
#[derive(Debug, Clone)]
pub(crate) struct MemKey {
    prefix: u128,
    cell: Cell,
}

impl MemKey {
    pub(crate) fn new(cell: Cell) -> MemKey {
        MemKey {
            prefix: row_prefix(cell.row()),
            cell,
        }
    }

    /// The stored cell.
    #[inline]
    pub(crate) fn cell(&self) -> &Cell {
        &self.cell
    }

    #[inline]
    pub(crate) fn cell_key(&self) -> &CellKey {
        self.cell.key()
    }

    pub(crate) fn prefix(&self) -> u128 {
        self.prefix
    }
}

/// The first 16 bytes of `row`, zero-padded, as a big-endian number.
pub(crate) fn row_prefix(row: &[u8]) -> u128 {
    let mut bytes = [0u8; 16];
    let len = row.len().min(16);
    bytes[..len].copy_from_slice(&row[..len]);
    u128::from_be_bytes(bytes)
}

impl PartialEq for MemKey {
    fn eq(&self, other: &MemKey) -> bool {
        self.prefix == other.prefix && self.cell.key() == other.cell.key()
    }
}

impl Eq for MemKey {}

impl Ord for MemKey {
    fn cmp(&self, other: &MemKey) -> CmpOrdering {
        self.prefix
            .cmp(&other.prefix)
            .then_with(|| self.cell.key().cmp(other.cell.key()))
    }
}

/// Orders a stored key against `key` (`stored.cmp(key)`) for the skip list's searches, by the
/// same rule as `MemKey`'s order: a probe is any key (a seek's bound included), not a cell, and
/// costs no count on `key`'s bytes.
#[inline]
pub(crate) fn probe(key: &CellKey) -> impl Fn(&MemKey) -> CmpOrdering + '_ {
    let prefix = row_prefix(key.row());
    move |stored| {
        stored
            .prefix
            .cmp(&prefix)
            .then_with(|| stored.cell.key().cmp(key))
    }
}

impl PartialOrd for MemKey {
    fn partial_cmp(&self, other: &MemKey) -> Option<CmpOrdering> {
        Some(self.cmp(other))
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use keel_cell::{CellKey, CellType};
    use proptest::prelude::*;

    use std::cmp::Ordering;

    use keel_cell::Cell;

    use super::{MemKey, probe};

    /// Rows that tie on 16 bytes, end inside them, or hold zero bytes (the padding's value).
    fn row() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            prop::collection::vec(prop_oneof![Just(0u8), Just(1u8), Just(255u8)], 1..20),
            prop::collection::vec(any::<u8>(), 1..40),
            (prop::collection::vec(any::<u8>(), 0..6)).prop_map(|tail| [
                b"user0123456789ab".as_slice(),
                &tail
            ]
            .concat()),
        ]
    }

    fn stored(key: CellKey) -> MemKey {
        MemKey::new(Cell::from_key(key).expect("a put's key is a cell's"))
    }

    fn key(row: Vec<u8>, qualifier: u8, ts: i64) -> CellKey {
        CellKey::new(Bytes::from(row), "f", vec![qualifier], ts, CellType::Put).unwrap()
    }

    proptest! {
        #[test]
        fn mem_keys_sort_as_their_cell_keys(
            a in (row(), 0u8..3, 0i64..3),
            b in (row(), 0u8..3, 0i64..3),
        ) {
            let (a, b) = (key(a.0, a.1, a.2), key(b.0, b.1, b.2));
            let (stored_a, stored_b) = (stored(a.clone()), stored(b.clone()));
            prop_assert_eq!(stored_a.cmp(&stored_b), a.cmp(&b));
            prop_assert_eq!(stored_a == stored_b, a == b);
            prop_assert_eq!(probe(&b)(&stored_a), a.cmp(&b));
        }
    }

    #[test]
    fn bounds_sort_around_their_row() {
        let row = Bytes::from_static(b"user0123456789abc");
        let cell = stored(key(row.to_vec(), 1, 5));
        let first = CellKey::first_on_row(row.clone());
        assert_eq!(probe(&first)(&cell), Ordering::Greater);
        let last = CellKey::last_on_row(row.clone());
        assert_eq!(probe(&last)(&cell), Ordering::Less);
        let shorter = CellKey::last_on_row(Bytes::from_static(b"user0123456789ab"));
        assert_eq!(
            probe(&shorter)(&cell),
            Ordering::Greater,
            "a row sorts before the rows it prefixes"
        );
    }
}
