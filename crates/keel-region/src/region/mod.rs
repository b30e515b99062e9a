//! [`Region`]: one region's stores (a memstore and committed store files per family), its MVCC
//! and row locks, the HBASE-15158 write path, gets, flush and WAL replay.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use keel_cell::escape_bytes;
use keel_fs::FileSystem;
use keel_memstore::MemStore;
use keel_mvcc::{Mvcc, RowLocks};
use keel_storefile::{StoreFileReader, WriterOptions};
use keel_sync::{Mutex, RwLock};
use keel_wal::Wal;

use crate::limits::{MemoryAccount, RegionLimits};
use crate::manifest::Manifest;
use crate::matcher::FamilyRules;

mod apply;
mod checked;
mod close;
mod combine;
mod compaction;
mod counters;
mod flush;
mod open;
mod read;
mod rmw;
mod sources;
mod split;
mod write;

use sources::{CachedSource, MemSource, TracedDirect};

pub use compaction::CompactionOutcome;
use counters::Counters;
pub use counters::RegionStats;
pub(crate) use split::merged_manifest;

/// One column family's settings.
#[derive(Debug, Clone, PartialEq)]
pub struct FamilyOptions {
    /// The family name.
    pub name: Bytes,
    /// Versions, min versions and TTL.
    pub rules: FamilyRules,
    /// Block size, encoding, compression and bloom filter of its store files.
    pub files: WriterOptions,
    /// `IN_MEMORY`: its blocks get the block cache's in-memory share (HBase default false).
    pub in_memory: bool,
}

impl FamilyOptions {
    /// A family with HBase's defaults (1 version, no TTL, 64 KiB blocks, ROW bloom).
    pub fn new(name: impl Into<Bytes>) -> FamilyOptions {
        FamilyOptions {
            name: name.into(),
            rules: FamilyRules::default(),
            files: WriterOptions::default(),
            in_memory: false,
        }
    }
}

/// Where a region's store files get their blocks: straight from the file, or through a shared
/// keel-blockcache cache (one loader per block on a miss, through the cache's id locks).
#[derive(Debug, Clone, Default)]
pub enum BlockReads {
    /// Every read goes to the file.
    #[default]
    Direct,
    /// Reads go through this cache (an LRU cache, or a bucket cache).
    Cached(Arc<dyn keel_blockcache::BlockCache>),
}

/// How durable a write is before it is acknowledged, per call: keel-wal's type, HBase's
/// `Durability`, one type from the log up. `UseDefault` is the region's default (its table's,
/// else the server's).
pub use keel_wal::Durability;

fn durability_code(durability: Durability) -> u8 {
    Durability::ALL
        .iter()
        .position(|d| *d == durability)
        .map_or(0, |i| i as u8)
}

fn durability_of(code: u8) -> Durability {
    Durability::ALL
        .get(usize::from(code))
        .copied()
        .unwrap_or(Durability::SyncWal)
}

/// A region's lifecycle: open, closing (refuses new writes while in-flight ones finish and the
/// final flush runs), closed (refuses everything new; open scanners keep what they hold).
pub(crate) const OPEN: u8 = 0;
pub(crate) const CLOSING: u8 = 1;
pub(crate) const CLOSED: u8 = 2;

/// The order of the write path's steps (the comparison HBASE-15158 measured).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WriteOrder {
    /// HBASE-15158: locks → MVCC begin + WAL append → sync → memstore → visible → unlock.
    /// Nothing to roll back; read-modify-write reads without waiting.
    #[default]
    Reordered,
    /// The pre-15158 order (HBase 1.x): locks → MVCC begin + WAL append → memstore → unlock →
    /// sync (rolling the memstore back if it fails) → visible. Because a row's lock is released
    /// before its write is visible, increments and other read-modify-writes first wait for every
    /// write in flight in the region (`waitForPreviousTransactionsComplete`, the HBASE-8763
    /// regression).
    Legacy,
}

/// How a region runs concurrent increments and appends of one row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReadModifyWrites {
    /// Combined: while one writer holds the row, the others of the row queue their operations,
    /// and it applies them in order and writes them in one WAL entry, each keeping its own cell
    /// and result (Keel's; see `combine.rs`). Saves a row-lock hand-off per operation.
    #[default]
    Combined,
    /// Each operation takes the row's lock in turn and writes its own WAL entry (HBase's way,
    /// kept for the HBASE-15158 comparison, which measured it).
    PerCall,
}

/// Where one write's time went (the HBASE-15158 stages).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriteTimings {
    /// Waiting for the row locks.
    pub lock_wait: Duration,
    /// MVCC begin and WAL enqueue (in sequence order).
    pub wal_append: Duration,
    /// Waiting for the WAL to reach the asked durability.
    pub sync_wait: Duration,
    /// Inserting into the memstores.
    pub memstore: Duration,
    /// Completing the MVCC entry and waiting for it to become visible.
    pub mvcc_wait: Duration,
}

struct Store {
    source: Arc<dyn keel_storefile::BlockSource>,
    rules: FamilyRules,
    files_options: WriterOptions,
    dir: PathBuf,
    memstore: MemStore,
    files: RwLock<Vec<Arc<StoreFileReader>>>,
}

/// One family's committed store files, for status reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FamilyFiles {
    /// The family.
    pub family: Bytes,
    /// Its store files.
    pub files: usize,
    /// Their bytes on disk.
    pub bytes: u64,
}

/// One region of one table.
pub struct Region {
    id: u64,
    fs: Arc<dyn FileSystem>,
    dir: PathBuf,
    wal: Arc<Wal>,
    mvcc: Mvcc,
    /// Writes whose WAL entries are enqueued, for whichever of their writers the log wakes first
    /// to apply ([`apply`]).
    applying: apply::ApplyQueue,
    locks: RowLocks,
    /// The rows whose increments and appends are being combined, with their queues.
    rmw_queues: combine::RmwQueues,
    read_modify_writes: ReadModifyWrites,
    /// Writers hold it shared from MVCC begin to memstore insert; a flush takes it exclusively
    /// to snapshot, so every edit up to the flush's sequence id is in the snapshot.
    updates: RwLock<()>,
    stores: BTreeMap<Bytes, Store>,
    /// Each family's read rules, built once at open and shared by every read's matcher.
    family_rules: Arc<HashMap<Bytes, FamilyRules>>,
    manifest: Mutex<Manifest>,
    flushing: Mutex<()>,
    compacting: Mutex<()>,
    next_file_id: AtomicU64,
    order: WriteOrder,
    /// What `UseDefault` writes get (a durability's code; changeable while open).
    default_durability: AtomicU8,
    /// `OPEN`, `CLOSING` or `CLOSED`.
    state: AtomicU8,
    limits: RegionLimits,
    account: Arc<MemoryAccount>,
    /// Bytes charged to the account for the active memstore segments, and for the pending
    /// snapshot (`Some` from the snapshot until its flush commits).
    active_bytes: AtomicU64,
    snapshot_bytes: Mutex<Option<u64>>,
    flush_requested: AtomicBool,
    /// A store's active segment passed the in-memory flush size (`RegionLimits::
    /// in_memory_compaction`) and the flusher has not flattened it yet.
    flatten_requested: AtomicBool,
    /// The latest server timestamp handed out: server timestamps never go back, even when
    /// read-modify-writes have run ahead of the clock.
    last_server_ts: std::sync::atomic::AtomicI64,
    /// The span that asked for the pending flush, for the flush's span to follow.
    flush_cause: crate::trace::Cause,
    /// Which background compactions of this region are queued (bit 1 minor, bit 2 major; one
    /// of each at a time).
    pub(crate) compaction_queued: std::sync::atomic::AtomicU8,
    /// Since when a due flush has been held back by too many store files.
    flush_delayed_since: Mutex<Option<Instant>>,
    opened_ms: i64,
    /// The highest sequence id found in store files and replayed edits while opening.
    loaded_sequence: AtomicU64,
    /// Cells the last get returned, up to 1 024, plus the slot a source's look past the row
    /// takes: the next get's result starts with room for that many (growing a vector of cells one doubling at a time reallocated twice per
    /// ten-column get, and glibc's realloc takes its arena's lock, which readers contended).
    /// Written only when it changes, so that a steady read load leaves its line shared.
    get_cells_hint: std::sync::atomic::AtomicUsize,
    counters: Counters,
}

impl std::fmt::Debug for Region {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Region")
            .field("id", &self.id)
            .field("dir", &self.dir)
            .field(
                "families",
                &self
                    .stores
                    .keys()
                    .map(|k| escape_bytes(k))
                    .collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Ids for the block source keys of store files opened in this process.
static FILE_IDS: AtomicU64 = AtomicU64::new(1);

impl Region {
    /// The same region with `limits` (HBase's defaults otherwise).
    pub fn with_limits(mut self, limits: RegionLimits) -> Region {
        for store in self.stores.values_mut() {
            store
                .memstore
                .set_pipeline_segments_limit(limits.pipeline_segments_limit);
            store.memstore.set_copy_on_flatten(limits.flatten_copies);
        }
        self.limits = limits;
        self
    }

    /// The region's limits.
    pub fn limits(&self) -> &RegionLimits {
        &self.limits
    }

    /// The same region charging its memstore memory to `account` (a server's global limits).
    pub(crate) fn with_account(mut self, account: Arc<MemoryAccount>) -> Region {
        let held = self.active_bytes.load(Ordering::Relaxed);
        self.account.release(held);
        account.charge(held);
        self.account = account;
        self
    }

    /// The region's counters.
    pub fn stats(&self) -> RegionStats {
        self.counters.read()
    }

    /// Whether some family has `blocking_store_files` store files or more.
    pub fn too_many_store_files(&self) -> bool {
        self.stores
            .values()
            .any(|s| s.files.read().len() >= self.limits.blocking_store_files)
    }

    /// The same region with `UseDefault` writes at `durability` (`UseDefault` itself keeps
    /// `SyncWal`, HBase's default).
    pub fn with_default_durability(self, durability: Durability) -> Region {
        self.set_default_durability(durability);
        self
    }

    /// Changes what `UseDefault` writes get from now on (`UseDefault` itself means `SyncWal`).
    pub fn set_default_durability(&self, durability: Durability) {
        let resolved = durability.resolve(Durability::SyncWal);
        self.default_durability
            .store(durability_code(resolved), Ordering::Relaxed);
    }

    /// What `UseDefault` writes get.
    pub fn default_durability(&self) -> Durability {
        durability_of(self.default_durability.load(Ordering::Relaxed))
    }

    /// `durability` with `UseDefault` replaced by the region's default.
    fn resolve_durability(&self, durability: Durability) -> Durability {
        durability.resolve(self.default_durability())
    }

    /// Refuses new work once the region is closing (writes) or closed (everything).
    fn check_open(&self, for_writes: bool) -> Result<(), crate::error::RegionError> {
        let state = self.state.load(Ordering::Acquire);
        if state == CLOSED || (for_writes && state != OPEN) {
            return Err(crate::error::RegionError::RegionClosed { region: self.id });
        }
        Ok(())
    }

    /// Whether the region still takes writes.
    pub fn is_open(&self) -> bool {
        self.state.load(Ordering::Acquire) == OPEN
    }

    /// The same region with its writes in `order`.
    pub fn with_write_order(mut self, order: WriteOrder) -> Region {
        self.order = order;
        self
    }

    /// The same region running increments and appends `mode`.
    pub fn with_read_modify_writes(mut self, mode: ReadModifyWrites) -> Region {
        self.read_modify_writes = mode;
        self
    }

    /// How this region runs increments and appends.
    pub fn read_modify_writes(&self) -> ReadModifyWrites {
        self.read_modify_writes
    }

    /// The order this region's writes follow.
    pub fn write_order(&self) -> WriteOrder {
        self.order
    }

    /// The region's id (its key in the WAL).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Bytes held in memstores (what a flush would write).
    pub fn memstore_size(&self) -> u64 {
        self.stores
            .values()
            .map(|s| {
                let size = s.memstore.size();
                size.data_bytes + size.overhead_bytes
            })
            .sum()
    }

    /// Cells held in committed store files (markers and every version included).
    pub fn store_file_cells(&self) -> u64 {
        self.stores
            .values()
            .flat_map(|s| {
                s.files
                    .read()
                    .iter()
                    .map(|f| f.info().entry_count)
                    .collect::<Vec<_>>()
            })
            .sum()
    }

    /// Committed store files of each family, in family order.
    pub fn store_file_counts(&self) -> Vec<(Bytes, usize)> {
        self.stores
            .iter()
            .map(|(name, s)| (name.clone(), s.files.read().len()))
            .collect()
    }

    /// Per family: its committed store files and their bytes on disk.
    pub fn store_file_sizes(&self) -> Vec<FamilyFiles> {
        self.stores
            .iter()
            .map(|(name, s)| {
                let files = s.files.read();
                FamilyFiles {
                    family: name.clone(),
                    files: files.len(),
                    bytes: files.iter().map(|f| f.info().file_len).sum(),
                }
            })
            .collect()
    }

    /// Committed store files, every family together.
    pub fn store_file_count(&self) -> usize {
        self.stores.values().map(|s| s.files.read().len()).sum()
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // Its memstores go with it: give their memory back to the server's account.
        let held =
            self.active_bytes.load(Ordering::Relaxed) + self.snapshot_bytes.lock().unwrap_or(0);
        self.account.release(held);
    }
}

fn file_name_of(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}
