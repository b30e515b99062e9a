//! The memstore: an active segment, at most one pending snapshot, and their sizes.

use std::ops::{ControlFlow, RangeBounds};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use keel_cell::{Cell, CellKey};
use keel_sync::{Mutex, RwLock};

use crate::chunk::ChunkPool;
use crate::flat::{FlatSegment, Relocation};
use crate::options::MemStoreOptions;
use crate::scanner::{MemStoreScanner, SegmentList};
use crate::segment::{AnySegment, Segment, SegmentSize, SizeCounters};

/// Chunks a memstore's own pool keeps when none is shared in ([`MemStore::new`]): 64 × 2 MiB.
pub const DEFAULT_POOLED_CHUNKS: usize = 64;

/// What can go wrong with a memstore call.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum MemStoreError {
    /// `clear_snapshot` named a snapshot that is not the pending one.
    #[error("no pending snapshot {id} to clear (pending: {pending:?})")]
    NoSuchSnapshot {
        /// The id asked for.
        id: u64,
        /// The id of the pending snapshot, if any.
        pending: Option<u64>,
    },
}

#[derive(Debug)]
struct Segments {
    active: Arc<Segment>,
    /// Frozen by in-memory flushes and not yet flushed to disk, newest first: skip lists
    /// waiting to be flattened and flat arrays, at most `pipeline_segments_limit` of them
    /// after a flattening (a key may be in more than one: the newest's cell is read).
    pipeline: Vec<AnySegment>,
    snapshot: Option<Snapshot>,
    /// Moves on whenever cells leave the pipeline other than by flattening (a snapshot, a
    /// rollback), so a flattening that read the old pipeline does not install its copy.
    generation: u64,
}

impl Segments {
    /// Every segment a reader reads, newest first.
    fn all(&self) -> impl Iterator<Item = AnySegment> + '_ {
        std::iter::once(AnySegment::List(Arc::clone(&self.active)))
            .chain(self.pipeline.iter().cloned())
            .chain(
                self.snapshot
                    .iter()
                    .flat_map(|s| s.segments.iter().cloned()),
            )
    }
}

/// The frozen segments waiting to be flushed ([`MemStore::snapshot`]): the active segment of
/// the moment and the in-memory flushes' pipeline.
#[derive(Clone, Debug)]
pub struct Snapshot {
    id: u64,
    /// Newest first.
    segments: Vec<AnySegment>,
    size: SegmentSize,
}

impl Snapshot {
    /// Names this snapshot for [`MemStore::clear_snapshot`].
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Its sizes, fixed since it was taken.
    pub fn size(&self) -> SegmentSize {
        self.size
    }

    /// Calls `f` on every cell of the snapshot in order, borrowed, until it breaks: a flush's
    /// cheapest read (no cell is cloned).
    pub fn visit(&self, f: impl FnMut(&CellKey, &[u8]) -> ControlFlow<()>) {
        crate::visit::visit(&self.segments, &.., u64::MAX, f);
    }

    /// Every cell of the snapshot in order, whatever its sequence id: what a flush writes.
    pub fn scanner(&self) -> MemStoreScanner {
        MemStoreScanner::new(self.segments.clone(), .., u64::MAX)
    }
}

/// HBase's `DefaultMemStore` (or, with [`MemStore::flatten`], its `CompactingMemStore`): a
/// concurrent sorted set of cells with snapshots for flush.
///
/// Writers and readers run at once. Readers take no exclusive lock: a scanner takes a shared
/// lock for the moment it copies the segment handles; writers hold the shared lock while they
/// insert, so [`MemStore::snapshot`] and [`MemStore::flatten`] (the exclusive users) wait for
/// in-flight adds and no add can land in a segment after it was frozen.
#[derive(Debug)]
pub struct MemStore {
    options: MemStoreOptions,
    pool: Arc<ChunkPool>,
    segments: RwLock<Segments>,
    active_size: SizeCounters,
    pipeline_size: SizeCounters,
    snapshot_size: SizeCounters,
    next_segment_id: AtomicU64,
    /// Held by the one flattening at a time.
    flattening: Mutex<()>,
}

impl MemStore {
    /// A memstore with its own chunk pool of [`DEFAULT_POOLED_CHUNKS`].
    pub fn new(options: MemStoreOptions) -> MemStore {
        let pool = Arc::new(ChunkPool::new(options.chunk_size, DEFAULT_POOLED_CHUNKS));
        MemStore::with_pool(options, pool)
    }

    /// A memstore taking chunks from a pool shared with others (HBase shares one per server).
    /// `options.chunk_size` is replaced by the pool's.
    pub fn with_pool(mut options: MemStoreOptions, pool: Arc<ChunkPool>) -> MemStore {
        options.chunk_size = pool.chunk_size();
        options.max_copied_cell = options.max_copied_cell.min(options.chunk_size);
        let active = Arc::new(Segment::new(1, options.mslab, options.max_copied_cell));
        MemStore {
            options,
            pool,
            segments: RwLock::new(Segments {
                active,
                pipeline: Vec::new(),
                snapshot: None,
                generation: 0,
            }),
            active_size: SizeCounters::new(),
            pipeline_size: SizeCounters::new(),
            snapshot_size: SizeCounters::new(),
            next_segment_id: AtomicU64::new(2),
            flattening: Mutex::new(()),
        }
    }

    /// The options in force.
    pub fn options(&self) -> &MemStoreOptions {
        &self.options
    }

    /// Changes [`MemStoreOptions::pipeline_segments_limit`] (values below 1 count as 1): the
    /// next in-memory flush follows the new limit, whatever the pipeline holds. One of the two
    /// options an owner may set after construction, as a region learns its server's settings
    /// after it has built its stores.
    pub fn set_pipeline_segments_limit(&mut self, limit: usize) {
        self.options.pipeline_segments_limit = limit;
    }

    /// Changes [`MemStoreOptions::copy_on_flatten`], for an owner that learns it with the
    /// pipeline's limit: the next in-memory flush follows it.
    pub fn set_copy_on_flatten(&mut self, copy: bool) {
        self.options.copy_on_flatten = copy;
    }

    /// The chunk pool this memstore draws from.
    pub fn chunk_pool(&self) -> &Arc<ChunkPool> {
        &self.pool
    }

    /// Adds cells, each with the sequence id it carries. A cell with exactly the key of one
    /// already held (sequence id included) replaces its value.
    pub fn add(&self, cells: impl IntoIterator<Item = Cell>) {
        let segments = self.segments.read();
        for cell in cells {
            segments.active.add(cell, &self.pool, &self.active_size);
        }
    }

    /// Takes back cells added by a write whose log sync then failed (the pre-HBASE-15158 write
    /// order rolls back this way): each cell stored under exactly its key, sequence id included,
    /// is removed from the active segment. Returns how many were found. The write's MVCC entry
    /// must not have completed, so no reader could have seen them.
    ///
    /// A cell an in-memory flush has moved on is taken out of the pipeline (rebuilding a flat
    /// segment without it: rare, and only on this path).
    pub fn rollback(&self, cells: &[Cell]) -> usize {
        let moved: Vec<&Cell> = {
            let segments = self.segments.read();
            cells
                .iter()
                .filter(|cell| !segments.active.remove(cell.key(), &self.active_size))
                .collect()
        };
        let mut found = cells.len() - moved.len();
        if moved.is_empty() {
            return found;
        }
        let mut segments = self.segments.write();
        segments.generation += 1;
        for cell in moved {
            for segment in &mut segments.pipeline {
                let removed = match segment {
                    AnySegment::List(list) => list.remove(cell.key(), &self.pipeline_size),
                    AnySegment::Flat(flat) => match flat.without(cell.key()) {
                        Some((rest, data_bytes)) => {
                            self.pipeline_size.unrecord(data_bytes);
                            *flat = Arc::new(rest);
                            true
                        }
                        None => false,
                    },
                };
                if removed {
                    found += 1;
                    break;
                }
            }
        }
        found
    }

    /// Cells in `range` visible at `read_point`, from the active segment and the pending
    /// snapshot merged.
    pub fn scanner(&self, range: impl RangeBounds<CellKey>, read_point: u64) -> MemStoreScanner {
        // Collected (inline, no allocation) so that the list's lock is not held while the
        // scanner positions itself.
        let segments: SegmentList = self.segments.read().all().collect();
        MemStoreScanner::new(segments, range, read_point)
    }

    /// The cells of `row` visible at `read_point` (a get): [`MemStore::scanner`] over the row's
    /// keys, reading only the segments whose row filter does not rule the row out, so a row
    /// that lives only in store files costs a hash and a few loads instead of a skip-list search
    /// per segment. Its seeks must stay within the row.
    pub fn row_scanner(&self, row: &Bytes, read_point: u64) -> MemStoreScanner {
        let hash = crate::row_filter::row_hash(row);
        let segments: SegmentList = self
            .segments
            .read()
            .all()
            .filter(|segment| segment.may_contain_row(hash))
            .collect();
        MemStoreScanner::new(
            segments,
            CellKey::first_on_row(row.clone())..=CellKey::last_on_row(row.clone()),
            read_point,
        )
    }

    /// Calls `f` on the cells a [`MemStore::scanner`] with these arguments would return, in the
    /// same order, borrowed instead of cloned, until `f` breaks. Cheaper for a caller that copies
    /// what it reads anyway (a response encoder, a flush).
    pub fn visit(
        &self,
        range: impl RangeBounds<CellKey>,
        read_point: u64,
        f: impl FnMut(&CellKey, &[u8]) -> ControlFlow<()>,
    ) {
        let segments: Vec<AnySegment> = self.segments.read().all().collect();
        crate::visit::visit(&segments, &range, read_point, f);
    }

    /// Every version (and delete marker) of one column visible at `read_point`, newest first.
    pub fn get(&self, row: &Bytes, family: &[u8], qualifier: &[u8], read_point: u64) -> Vec<Cell> {
        let first = CellKey::first_on_column(row.clone(), family, qualifier);
        let last = CellKey::last_on_column(row.clone(), family, qualifier);
        self.scanner(first..=last, read_point).collect()
    }

    /// Freezes the active segment and the in-memory flushes' pipeline into the snapshot and
    /// installs an empty active segment, atomically with respect to writers. While a snapshot
    /// is pending (its flush not yet cleared, or failed) the pending one is returned again,
    /// unchanged.
    pub fn snapshot(&self) -> Snapshot {
        let mut segments = self.segments.write();
        if let Some(pending) = &segments.snapshot {
            return pending.clone();
        }
        let frozen = self.freeze_active(&mut segments);
        let id = frozen.id;
        let mut parts = vec![AnySegment::List(frozen)];
        parts.append(&mut segments.pipeline);
        segments.generation += 1;
        let size = self.active_size.read().plus(self.pipeline_size.read());
        self.snapshot_size.store(size);
        self.active_size.store(SegmentSize::EMPTY);
        self.pipeline_size.store(SegmentSize::EMPTY);
        let snapshot = Snapshot {
            id,
            segments: parts,
            size,
        };
        segments.snapshot = Some(snapshot.clone());
        snapshot
    }

    /// Installs a fresh active segment and returns the one it replaces. The caller moves the
    /// old one's sizes along.
    fn freeze_active(&self, segments: &mut Segments) -> Arc<Segment> {
        let id = self.next_segment_id.fetch_add(1, Ordering::Relaxed);
        let fresh = Arc::new(Segment::new(
            id,
            self.options.mslab,
            self.options.max_copied_cell,
        ));
        std::mem::replace(&mut segments.active, fresh)
    }

    /// An in-memory flush (HBase's `CompactingMemStore`, policy BASIC): freezes the active
    /// segment onto the pipeline, then, if the pipeline now holds more than
    /// [`MemStoreOptions::pipeline_segments_limit`] segments, merges them all into one flat,
    /// sorted array of the same cells (HBase's MERGE into a `CellArrayMap`); otherwise it
    /// flattens only the segment it froze (FLATTEN), leaving the older flat segments as they
    /// are. Merging every time rebuilt the whole pipeline at each in-memory flush, a cost that
    /// grows with the memstore; with the limit at 2, every other flush merges. Readers go on
    /// reading the segments it replaces until the swap; writers wait only while the active
    /// segment is replaced. A snapshot or rollback meanwhile wins: the copy is dropped and the
    /// frozen segments stay as they are (the next flattening or the flush takes them). Returns
    /// whether a flat segment was installed. One runs at a time; a second call returns at once.
    ///
    /// When is the owner's call, as with [`MemStore::snapshot`]: HBase flushes in memory once
    /// the active segment passes a share of the region's flush size
    /// ([`MemStore::active_size`]).
    pub fn flatten(&self) -> bool {
        let Some(_one_at_a_time) = self.flattening.try_lock() else {
            return false;
        };
        let (inputs, merge, generation, id) = {
            let mut segments = self.segments.write();
            if self.active_size.read().cell_count > 0 {
                let frozen = self.freeze_active(&mut segments);
                segments.pipeline.insert(0, AnySegment::List(frozen));
                self.pipeline_size
                    .store(self.pipeline_size.read().plus(self.active_size.read()));
                self.active_size.store(SegmentSize::EMPTY);
            }
            let merge = segments.pipeline.len() > self.options.pipeline_segments_limit.max(1);
            let inputs = match segments.pipeline.first() {
                _ if merge => segments.pipeline.clone(),
                Some(newest @ AnySegment::List(_)) => vec![newest.clone()],
                // Nothing frozen, or the newest is flat already.
                _ => return false,
            };
            let id = self.next_segment_id.fetch_add(1, Ordering::Relaxed);
            (inputs, merge, segments.generation, id)
        };
        let relocate = (self.options.mslab && self.options.copy_on_flatten).then(|| Relocation {
            pool: &self.pool,
            max_copied_cell: self.options.max_copied_cell,
        });
        let (flat, size) = FlatSegment::build(id, &inputs, relocate);
        let mut segments = self.segments.write();
        if segments.generation != generation {
            drop(segments);
            // The copy's chunks are free again once `flat`'s cells are dropped.
            self.pool.give_back(flat.take_chunks());
            return false;
        }
        // Copied: the inputs' chunks hold no cell the memstore still reads, and go back to
        // the pool (reused once no reader holds a cell from them). Not copied: they hold the
        // flat segment's cells and go with it.
        let mut freed = Vec::new();
        for input in &inputs {
            if relocate.is_some() {
                freed.extend(input.take_chunks());
            } else {
                flat.give_chunks(input.take_chunks());
            }
        }
        let flat = AnySegment::Flat(Arc::new(flat));
        if merge {
            segments.pipeline = vec![flat];
            // Exact: an identical key in two segments counts once from now on.
            self.pipeline_size.store(size);
        } else {
            // Only a flattening adds to the pipeline, and anything else that changes it moves
            // the generation on: the newest is still the segment read.
            debug_assert!(
                matches!((&segments.pipeline[0], &inputs[0]),
                    (AnySegment::List(now), AnySegment::List(read)) if Arc::ptr_eq(now, read)),
                "the pipeline's newest segment changed under a flattening"
            );
            // The same cells as one list held (it keeps one live cell per key): the
            // pipeline's sizes stay as they are, less the list's row hints, which go with it.
            if let AnySegment::List(list) = &inputs[0] {
                self.pipeline_size.remove_overhead(list.hint_bytes());
            }
            segments.pipeline[0] = flat;
        }
        drop(segments);
        self.pool.give_back(freed);
        true
    }

    /// Drops the snapshot `id` after its flush: its cells leave the memstore (scanners already
    /// open keep reading them) and its chunks go back to the pool, reusable once no reader holds
    /// a cell from them. Returns the sizes released.
    pub fn clear_snapshot(&self, id: u64) -> Result<SegmentSize, MemStoreError> {
        let mut segments = self.segments.write();
        let pending = segments.snapshot.as_ref().map(Snapshot::id);
        if pending != Some(id) {
            return Err(MemStoreError::NoSuchSnapshot { id, pending });
        }
        let Some(snapshot) = segments.snapshot.take() else {
            return Err(MemStoreError::NoSuchSnapshot { id, pending });
        };
        let size = self.snapshot_size.read();
        self.snapshot_size.store(SegmentSize::EMPTY);
        drop(segments);
        for segment in &snapshot.segments {
            self.pool.give_back(segment.take_chunks());
        }
        Ok(size)
    }

    /// Sizes of the active segment, read without a lock.
    pub fn active_size(&self) -> SegmentSize {
        self.active_size.read()
    }

    /// Sizes of the cells in-memory flushes froze that no snapshot has taken yet, read without a
    /// lock.
    pub fn pipeline_size(&self) -> SegmentSize {
        self.pipeline_size.read()
    }

    /// Sizes of the pending snapshot ([`SegmentSize::EMPTY`] if none), read without a lock.
    pub fn snapshot_size(&self) -> SegmentSize {
        self.snapshot_size.read()
    }

    /// Active, pipeline and snapshot sizes together.
    pub fn size(&self) -> SegmentSize {
        self.active_size()
            .plus(self.pipeline_size())
            .plus(self.snapshot_size())
    }
}
