//! [`Region`]: one region's stores (a memstore and committed store files per family), its MVCC
//! and row locks, the HBASE-15158 write path, gets, flush and WAL replay.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use keel_cell::{Cell, CellKey, LATEST_TIMESTAMP, escape_bytes};
use keel_fs::FileSystem;
use keel_memstore::{MemStore, MemStoreOptions, MemStoreScanner};
use keel_mvcc::{LockMode, Mvcc, RowLockGuard, RowLockOptions, RowLocks};
use keel_storefile::{
    KeyValueScanner, MergeScanner, StoreFileReader, StoreFileWriter, WriterOptions,
};
use keel_wal::{ReplayOptions, Wal, WalEntry};
use parking_lot::{Mutex, RwLock};

use crate::error::{RegionError, io};
use crate::limits::{MemoryAccount, RegionLimits};
use crate::manifest::{Manifest, hex};
use crate::matcher::{FamilyRules, Matcher, ReadQuery};
use crate::scan::{RegionScanner, Scan};
#[cfg(feature = "tracing")]
use crate::trace::Printable;
use crate::trace::{event, span};

mod compaction;
mod counters;

pub use compaction::CompactionOutcome;
use counters::Counters;
pub use counters::RegionStats;

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

/// keel-storefile's block source over a keel-blockcache cache.
#[derive(Debug)]
struct CachedSource {
    cache: Arc<dyn keel_blockcache::BlockCache>,
    in_memory: bool,
}

impl keel_storefile::BlockSource for CachedSource {
    fn get_or_load(
        &self,
        key: keel_storefile::BlockKey,
        load: &mut dyn FnMut() -> keel_storefile::Result<Bytes>,
    ) -> keel_storefile::Result<Bytes> {
        let key = keel_blockcache::BlockKey {
            file_id: key.file_id,
            offset: key.offset,
        };
        // `BlockCache::get_or_load`'s single-flight load, through the trait object: look, take
        // the block's id lock, look again (not a second miss), load and cache.
        let mut missed = false;
        let block = match self.cache.get(&key, true, false) {
            Some(block) => Ok(block),
            None => {
                let _loading = self.cache.id_locks().write(&key);
                match self.cache.get(&key, true, true) {
                    Some(block) => Ok(block),
                    None => {
                        missed = true;
                        event!(TRACE, file = key.file_id, offset = key.offset, "block read");
                        load().inspect(|block| {
                            self.cache.insert(key, block.clone(), self.in_memory);
                        })
                    }
                }
            }
        };
        let outcome = if missed {
            "block cache miss"
        } else {
            "block cache hit"
        };
        event!(TRACE, file = key.file_id, offset = key.offset, "{outcome}");
        let _ = outcome;
        block
    }
}

/// keel-storefile's direct reads, with a trace event per block read.
#[derive(Debug)]
struct TracedDirect;

impl keel_storefile::BlockSource for TracedDirect {
    fn get_or_load(
        &self,
        key: keel_storefile::BlockKey,
        load: &mut dyn FnMut() -> keel_storefile::Result<Bytes>,
    ) -> keel_storefile::Result<Bytes> {
        event!(TRACE, file = key.file_id, offset = key.offset, "block read");
        let _ = &key;
        load()
    }
}

/// How durable a write is before it is acknowledged, per call (HBase's `Durability`; weakest
/// first after `UseDefault`, so a batch takes the greatest of its operations').
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Durability {
    /// The region's default (the server's `default_durability`, `SyncWal` as in HBase).
    #[default]
    UseDefault,
    /// Not logged: lost on a crash unless flushed first.
    SkipWal,
    /// Logged and acknowledged once buffered; synced within the WAL's interval.
    AsyncWal,
    /// Acknowledged once written to the OS: survives a process crash.
    SyncWal,
    /// Acknowledged once fsynced: survives a power cut.
    FsyncWal,
}

impl Durability {
    fn resolve(self, default: keel_wal::Durability) -> keel_wal::Durability {
        match self {
            Durability::UseDefault => default,
            Durability::SkipWal => keel_wal::Durability::SkipWal,
            Durability::AsyncWal => keel_wal::Durability::AsyncWal,
            Durability::SyncWal => keel_wal::Durability::SyncWal,
            Durability::FsyncWal => keel_wal::Durability::FsyncWal,
        }
    }
}

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
    locks: RowLocks,
    /// Writers hold it shared from MVCC begin to memstore insert; a flush takes it exclusively
    /// to snapshot, so every edit up to the flush's sequence id is in the snapshot.
    updates: RwLock<()>,
    stores: BTreeMap<Bytes, Store>,
    manifest: Mutex<Manifest>,
    flushing: Mutex<()>,
    compacting: Mutex<()>,
    next_file_id: AtomicU64,
    order: WriteOrder,
    default_durability: keel_wal::Durability,
    limits: RegionLimits,
    account: Arc<MemoryAccount>,
    /// Bytes charged to the account for the active memstore segments, and for the pending
    /// snapshot (`Some` from the snapshot until its flush commits).
    active_bytes: AtomicU64,
    snapshot_bytes: Mutex<Option<u64>>,
    flush_requested: AtomicBool,
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
    /// Opens region `id` in `dir` with `families`: loads the manifest and its store files, then
    /// replays the WAL's entries for this region above the manifest's flushed sequence id into
    /// the memstores, and moves MVCC past everything found.
    pub fn open(
        fs: Arc<dyn FileSystem>,
        dir: &Path,
        wal: Arc<Wal>,
        id: u64,
        families: Vec<FamilyOptions>,
    ) -> Result<Region, RegionError> {
        Region::open_with(fs, dir, wal, id, families, BlockReads::Direct)
    }

    /// [`Region::open`], with store-file blocks read as `reads` says.
    pub fn open_with(
        fs: Arc<dyn FileSystem>,
        dir: &Path,
        wal: Arc<Wal>,
        id: u64,
        families: Vec<FamilyOptions>,
        reads: BlockReads,
    ) -> Result<Region, RegionError> {
        fs.create_dir_all(dir)
            .map_err(|e| io("create directory", dir, e))?;
        let manifest = Manifest::load(&*fs, dir)?;
        let mut stores = BTreeMap::new();
        for family in families {
            let family_dir = dir.join(hex(&family.name));
            fs.create_dir_all(&family_dir)
                .map_err(|e| io("create directory", &family_dir, e))?;
            let source: Arc<dyn keel_storefile::BlockSource> = match &reads {
                BlockReads::Direct => Arc::new(TracedDirect),
                BlockReads::Cached(cache) => Arc::new(CachedSource {
                    cache: Arc::clone(cache),
                    in_memory: family.in_memory,
                }),
            };
            stores.insert(
                family.name.clone(),
                Store {
                    source,
                    rules: family.rules,
                    files_options: family.files,
                    dir: family_dir,
                    memstore: MemStore::new(MemStoreOptions::default()),
                    files: RwLock::new(Vec::new()),
                },
            );
        }
        remove_unlisted_files(&*fs, &manifest, &stores);
        let mut max_seq = manifest.flushed;
        for (family, name) in &manifest.files {
            let store = stores
                .get(family)
                .ok_or_else(|| RegionError::NoSuchFamily {
                    family: escape_bytes(family),
                    region: id,
                })?;
            let reader = StoreFileReader::open(
                &*fs,
                &store.dir.join(name),
                FILE_IDS.fetch_add(1, Ordering::Relaxed),
                Arc::clone(&store.source),
            )?;
            max_seq = max_seq.max(reader.info().max_sequence_id);
            store.files.write().push(Arc::new(reader));
        }
        let mut flushed = HashMap::new();
        flushed.insert(id, manifest.flushed);
        let mut replayed_bytes = 0;
        for entry in wal.replay(ReplayOptions {
            flushed,
            ..ReplayOptions::default()
        })? {
            let entry = entry?;
            if entry.region != id {
                continue;
            }
            max_seq = max_seq.max(entry.sequence_id);
            replayed_bytes += crate::limits::charge(&entry.cells);
            for cell in entry.cells {
                let store = stores
                    .get(cell.family())
                    .ok_or_else(|| RegionError::NoSuchFamily {
                        family: escape_bytes(cell.family()),
                        region: id,
                    })?;
                store.memstore.add([cell]);
            }
        }
        let mvcc = Mvcc::new();
        mvcc.advance_to(max_seq)?;
        Ok(Region {
            id,
            fs,
            dir: dir.to_path_buf(),
            wal,
            mvcc,
            locks: RowLocks::new(RowLockOptions::default()),
            updates: RwLock::new(()),
            stores,
            next_file_id: AtomicU64::new(manifest.next_file.max(1)),
            manifest: Mutex::new(manifest),
            flushing: Mutex::new(()),
            compacting: Mutex::new(()),
            order: WriteOrder::default(),
            default_durability: keel_wal::Durability::SyncWal,
            limits: RegionLimits::default(),
            account: {
                let account = MemoryAccount::unlimited();
                account.charge(replayed_bytes);
                account
            },
            active_bytes: AtomicU64::new(replayed_bytes),
            snapshot_bytes: Mutex::new(None),
            flush_requested: AtomicBool::new(false),
            last_server_ts: std::sync::atomic::AtomicI64::new(0),
            flush_cause: crate::trace::Cause::default(),
            compaction_queued: std::sync::atomic::AtomicU8::new(0),
            flush_delayed_since: Mutex::new(None),
            opened_ms: now_ms(),
            counters: Counters::default(),
        })
    }

    /// The same region with `limits` (HBase's defaults otherwise).
    pub fn with_limits(mut self, limits: RegionLimits) -> Region {
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

    /// The time for a server-assigned timestamp: the clock, or the latest timestamp already
    /// handed out if that is ahead.
    fn server_time(&self) -> i64 {
        let now = now_ms();
        self.last_server_ts
            .fetch_max(now, Ordering::Relaxed)
            .max(now)
    }

    /// Asks whoever flushes this region (the server's flusher) to do it soon.
    pub fn request_flush(&self) {
        self.flush_requested.store(true, Ordering::Release);
        self.flush_cause.note();
        self.account.wake();
    }

    /// Whether a flush was asked for and has not happened yet.
    pub fn flush_requested(&self) -> bool {
        self.flush_requested.load(Ordering::Acquire)
    }

    /// HBase's `checkResources`, before a write takes its locks: above the blocking memstore
    /// size the write is refused with `RegionTooBusy` and a flush requested; above the global
    /// high watermark it waits for flushes to free memory.
    fn check_resources(&self) -> Result<(), RegionError> {
        let size = self.memstore_size();
        let limit = self.limits.blocking_memstore_size();
        if size > limit {
            self.counters.busy_refusals.fetch_add(1, Ordering::Relaxed);
            self.request_flush();
            return Err(RegionError::RegionTooBusy {
                region: self.id,
                memstore: size,
                limit,
            });
        }
        match self.account.wait_below_high() {
            Ok(None) => Ok(()),
            Ok(Some(waited)) => {
                self.counters.blocked(waited);
                Ok(())
            }
            Err(waited) => {
                self.counters.blocked(waited);
                Err(RegionError::MemoryFull {
                    used: self.account.used(),
                    limit: self.account.high(),
                    waited,
                })
            }
        }
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

    /// Whether a due flush should wait because a family has `blocking_store_files` files or
    /// more (HBase delays it up to `blocking_wait` while compaction catches up). Starts the
    /// wait's clock on the first call; a flush ends it.
    pub(crate) fn flush_should_wait(&self) -> bool {
        if !self.too_many_store_files() {
            return false;
        }
        let mut since = self.flush_delayed_since.lock();
        let started = *since.get_or_insert_with(Instant::now);
        let wait = started.elapsed() < self.limits.blocking_wait;
        if wait {
            self.counters.flush_delays.fetch_add(1, Ordering::Relaxed);
        }
        wait
    }

    /// The same region with `UseDefault` writes at `durability` (`UseDefault` itself keeps
    /// `SyncWal`, HBase's default).
    pub fn with_default_durability(mut self, durability: Durability) -> Region {
        self.default_durability = durability.resolve(keel_wal::Durability::SyncWal);
        self
    }

    /// The same region with its writes in `order`.
    pub fn with_write_order(mut self, order: WriteOrder) -> Region {
        self.order = order;
        self
    }

    /// The order this region's writes follow.
    pub fn write_order(&self) -> WriteOrder {
        self.order
    }

    /// The region's id (its key in the WAL).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Applies `cells` (puts and delete markers, any rows) atomically at `durability`, on the
    /// HBASE-15158 path: row locks (shared, sorted) → server timestamps for cells that carry
    /// `LATEST_TIMESTAMP` → MVCC begin and WAL enqueue with the write number as sequence id →
    /// WAL durability wait → memstore insert → MVCC complete and wait → unlock. A WAL failure
    /// returns before the memstore is touched, so there is nothing to roll back.
    pub fn mutate(
        &self,
        cells: Vec<Cell>,
        durability: Durability,
    ) -> Result<WriteTimings, RegionError> {
        self.count_writes(1);
        self.apply(cells, durability)
    }

    /// [`Region::mutate`] without counting a request (a batch counts its operations).
    fn apply(&self, cells: Vec<Cell>, durability: Durability) -> Result<WriteTimings, RegionError> {
        let _span = span!(INFO, "region.mutate", region = self.id, cells = cells.len());
        self.check_families(&cells)?;
        self.check_resources()?;
        let mut timings = WriteTimings::default();
        let started = Instant::now();
        let rows: BTreeSet<Bytes> = cells.iter().map(|c| c.row().clone()).collect();
        let rows = {
            let _span = span!(DEBUG, "region.row_lock", rows = rows.len());
            self.locks.lock_rows(rows, LockMode::Shared, None)?
        };
        timings.lock_wait = started.elapsed();
        self.write_locked(cells, durability, timings, rows)
    }

    /// Applies several mutations of one row atomically under the row's exclusive lock (HBase
    /// `mutateRow`), so no read-modify-write of the row interleaves.
    pub fn mutate_row(
        &self,
        row: &[u8],
        cells: Vec<Cell>,
        durability: Durability,
    ) -> Result<WriteTimings, RegionError> {
        let _span = span!(INFO, "region.mutate_row", region = self.id, row = %Printable(row));
        self.count_writes(1);
        let row_bytes = Bytes::copy_from_slice(row);
        if let Some(other) = cells.iter().find(|c| c.row() != &row_bytes) {
            return Err(RegionError::NotOneRow {
                row: escape_bytes(row),
                other: escape_bytes(other.row()),
            });
        }
        self.check_families(&cells)?;
        self.check_resources()?;
        let (guard, timings) = self.lock_exclusive(row_bytes)?;
        self.write_locked(cells, durability, timings, guard)
    }

    /// Applies many operations (each a set of cells of one row, with its durability), as
    /// HBase's `batch`: the mini-batch takes the strongest durability of its operations; an
    /// operation that is invalid (an unknown family, cells of several rows, no cells) gets its
    /// error and the others still go, together, as one mini-batch (one WAL entry, one MVCC write,
    /// shared locks on their rows). Returns one status per operation, in order; a failure of the
    /// mini-batch itself (the WAL) is every valid operation's status.
    pub fn batch(&self, operations: Vec<(Vec<Cell>, Durability)>) -> Vec<Result<(), RegionError>> {
        let _span = span!(
            INFO,
            "region.batch",
            region = self.id,
            operations = operations.len()
        );
        self.count_writes(operations.len());
        let mut statuses: Vec<Option<Result<(), RegionError>>> =
            Vec::with_capacity(operations.len());
        let mut cells = Vec::new();
        let mut valid = Vec::new();
        let mut durability = Durability::UseDefault;
        for (i, (op, op_durability)) in operations.into_iter().enumerate() {
            let status = match op.first() {
                None => Some(Err(RegionError::BadCell(
                    "an operation with no cells".to_string(),
                ))),
                Some(first) => {
                    let row = first.row().clone();
                    if let Some(other) = op.iter().find(|c| c.row() != &row) {
                        Some(Err(RegionError::NotOneRow {
                            row: escape_bytes(&row),
                            other: escape_bytes(other.row()),
                        }))
                    } else {
                        self.check_families(&op).err().map(Err)
                    }
                }
            };
            if status.is_none() {
                valid.push(i);
                cells.extend(op);
                // The mini-batch is as durable as its most demanding operation.
                durability = durability.max(op_durability);
            }
            statuses.push(status);
        }
        if !cells.is_empty() {
            let outcome = self.apply(cells, durability);
            for i in valid {
                statuses[i] = Some(match &outcome {
                    Ok(_) => Ok(()),
                    Err(e) => Err(RegionError::BatchFailed(e.to_string())),
                });
            }
        }
        statuses.into_iter().map(|s| s.unwrap_or(Ok(()))).collect()
    }

    /// Takes one row's exclusive lock (read-modify-write, atomic row mutations) and starts the
    /// write's timings with the wait.
    fn lock_exclusive(&self, row: Bytes) -> Result<(RowLockGuard<'_>, WriteTimings), RegionError> {
        let started = Instant::now();
        let _span = span!(DEBUG, "region.row_lock", rows = 1);
        let guard = self.locks.lock_row(row, LockMode::Exclusive, None)?;
        let timings = WriteTimings {
            lock_wait: started.elapsed(),
            ..WriteTimings::default()
        };
        Ok((guard, timings))
    }

    fn check_families(&self, cells: &[Cell]) -> Result<(), RegionError> {
        match cells.iter().find(|c| !self.stores.contains_key(c.family())) {
            Some(cell) => Err(RegionError::NoSuchFamily {
                family: escape_bytes(cell.family()),
                region: self.id,
            }),
            None => Ok(()),
        }
    }

    /// The write path after the row locks: timestamps, MVCC + WAL, sync, memstore, visible.
    fn write_locked(
        &self,
        mut cells: Vec<Cell>,
        durability: Durability,
        mut timings: WriteTimings,
        rows: RowLockGuard<'_>,
    ) -> Result<WriteTimings, RegionError> {
        // Timestamps only once the locks are held: a later write to a row never gets an
        // earlier server timestamp.
        let now = self.server_time();
        for cell in &mut cells {
            if cell.timestamp() == LATEST_TIMESTAMP {
                cell.set_timestamp(now);
            }
        }
        let _updates = self.updates.read();
        let step = Instant::now();
        let (entry, pending) = {
            let _span = span!(DEBUG, "wal.append", cells = cells.len());
            self.mvcc.begin_with(|write_number| {
                for cell in &mut cells {
                    cell.set_sequence_id(write_number);
                }
                let wal_entry = WalEntry {
                    region: self.id,
                    sequence_id: write_number,
                    write_time_ms: now,
                    cells: cells.clone(),
                };
                self.wal
                    .enqueue(&wal_entry, durability.resolve(self.default_durability))
            })
        };
        timings.wal_append = step.elapsed();
        // On error the MVCC entry completes itself when dropped; nothing reached the memstore.
        let pending = pending?;
        match self.order {
            WriteOrder::Reordered => {
                let step = Instant::now();
                {
                    let _span = span!(DEBUG, "wal.sync_wait");
                    pending.wait()?;
                }
                timings.sync_wait = step.elapsed();
                let step = Instant::now();
                self.add_to_memstores(&cells);
                timings.memstore = step.elapsed();
                let step = Instant::now();
                {
                    let _span = span!(DEBUG, "mvcc.wait");
                    self.mvcc.complete_and_wait(entry);
                }
                timings.mvcc_wait = step.elapsed();
                drop(rows);
            }
            WriteOrder::Legacy => {
                let step = Instant::now();
                self.add_to_memstores(&cells);
                timings.memstore = step.elapsed();
                drop(rows);
                let step = Instant::now();
                let synced = {
                    let _span = span!(DEBUG, "wal.sync_wait");
                    pending.wait()
                };
                timings.sync_wait = step.elapsed();
                if let Err(e) = synced {
                    // Not yet visible (the MVCC entry is open), so no reader saw these cells.
                    for store in self.stores.values() {
                        store.memstore.rollback(&cells);
                    }
                    let charged = crate::limits::charge(&cells);
                    self.active_bytes.fetch_sub(charged, Ordering::Relaxed);
                    self.account.release(charged);
                    return Err(e.into());
                }
                let step = Instant::now();
                self.mvcc.complete_and_wait(entry);
                timings.mvcc_wait = step.elapsed();
            }
        }
        Ok(timings)
    }

    /// Inserts and charges the cells (under the updates lock, so a flush's snapshot takes
    /// exactly the charges of the cells it holds).
    fn add_to_memstores(&self, cells: &[Cell]) {
        for cell in cells {
            if let Some(store) = self.stores.get(cell.family()) {
                store.memstore.add([cell.clone()]);
            }
        }
        let charged = crate::limits::charge(cells);
        self.active_bytes.fetch_add(charged, Ordering::Relaxed);
        self.account.charge(charged);
    }

    /// The cells of `row` that `query` selects (its read point is replaced by the region's
    /// current one), merged from every store's memstore and the store files that may hold the
    /// row, in `CellComparator` order.
    pub fn get(&self, row: &[u8], query: &ReadQuery) -> Result<Vec<Cell>, RegionError> {
        let _span = span!(INFO, "region.get", region = self.id, row = %Printable(row));
        self.counters.read_requests.fetch_add(1, Ordering::Relaxed);
        let read_point = self.mvcc.read_point();
        let query = ReadQuery {
            read_point,
            ..query.clone()
        };
        let row = Bytes::copy_from_slice(row);
        let first = CellKey::first_on_row(row.clone());
        let last = CellKey::last_on_row(row.clone());
        let families: HashMap<Bytes, FamilyRules> = self
            .stores
            .iter()
            .map(|(name, store)| (name.clone(), store.rules))
            .collect();
        let mut matcher = Matcher::new(query.clone(), families);
        let mut out = Vec::new();
        for (name, store) in &self.stores {
            let wanted = query
                .columns
                .as_ref()
                .is_none_or(|columns| columns.iter().any(|(f, _)| f == name));
            if !wanted {
                continue;
            }
            // Files and memstore taken under the file-list lock, so a flush finishing meanwhile
            // cannot move cells from one to the other unseen.
            let listed = store.files.read();
            let files: Vec<Arc<StoreFileReader>> = listed
                .iter()
                .filter(|f| f.may_contain_row(&row) && may_hold_range(f, &query))
                .cloned()
                .collect();
            let memstore = store
                .memstore
                .scanner(first.clone()..=last.clone(), read_point);
            drop(listed);
            let mut sources: Vec<Box<dyn KeyValueScanner + '_>> = files
                .iter()
                .map(|f| Box::new(f.scanner()) as Box<dyn KeyValueScanner>)
                .collect();
            sources.push(Box::new(MemSource(memstore)));
            let mut merge = MergeScanner::new(sources, &first)?;
            let mut skip = crate::scan::ColumnSkip::default();
            while let Some(cell) = merge.next()? {
                if cell.row() != &row {
                    break;
                }
                if skip.still_in_column(&cell, out.last(), &mut merge)? {
                    continue;
                }
                let admitted = matcher.admit(&cell);
                if matcher.column_done() {
                    skip.column_done(&cell, admitted);
                }
                if admitted {
                    out.push(cell);
                }
            }
        }
        Ok(out)
    }

    /// The rows `scan` selects, each a `Vec` of its cells (or several, with a batch size): a
    /// [`Region::scanner`] collected.
    pub fn scan(&self, scan: &Scan) -> Result<Vec<Vec<Cell>>, RegionError> {
        self.scanner(scan)?.collect()
    }

    /// A streaming scan: results come out one at a time, read at one read point through the
    /// memstore segments and store files present when it opens — a flush or a new store file
    /// afterwards changes nothing it returns. A reversed scan gathers its range before its
    /// first result (rows are stored ascending).
    pub fn scanner(&self, scan: &Scan) -> Result<RegionScanner, RegionError> {
        let _span = span!(
            INFO,
            "region.scan_open",
            region = self.id,
            reversed = scan.reversed
        );
        self.counters.read_requests.fetch_add(1, Ordering::Relaxed);
        let read_point = self.mvcc.read_point();
        let query = ReadQuery {
            read_point,
            ..scan.query.clone()
        };
        let families: HashMap<Bytes, FamilyRules> = self
            .stores
            .iter()
            .map(|(name, store)| (name.clone(), store.rules))
            .collect();
        let matcher = Matcher::new(query.clone(), families);
        let start = scan.first_key();
        let wanted = |name: &Bytes| {
            query
                .columns
                .as_ref()
                .is_none_or(|columns| columns.iter().any(|(f, _)| f == name))
        };
        let mut sources: Vec<Box<dyn KeyValueScanner>> = Vec::new();
        for (_, store) in self.stores.iter().filter(|(name, _)| wanted(name)) {
            // Under the file-list lock, as in `get`.
            let listed = store.files.read();
            for file in listed.iter().filter(|f| may_hold_range(f, &query)) {
                sources.push(Box::new(file.shared_scanner()));
            }
            sources.push(Box::new(MemSource(
                store.memstore.scanner(start.clone().., read_point),
            )));
        }
        let merge = MergeScanner::new(sources, &start)?;
        Ok(RegionScanner::new(merge, matcher, scan.clone()))
    }

    /// Adds `delta` to the 8-byte big-endian counter at (row, family, qualifier) (absent counts
    /// as 0) and returns the new value. Read-modify-write under the row's exclusive lock: the
    /// previous write to the row is visible before its lock was released, so the read needs no
    /// wait (the HBASE-8763 regression does not exist on this path). The new cell's timestamp is
    /// max(old timestamp + 1, now).
    pub fn increment(
        &self,
        row: &[u8],
        family: &[u8],
        qualifier: &[u8],
        delta: i64,
        durability: Durability,
    ) -> Result<(i64, WriteTimings), RegionError> {
        let _span = span!(INFO, "region.increment", region = self.id, row = %Printable(row));
        self.read_modify_write(row, family, qualifier, durability, |current| {
            let old = match current {
                None => 0,
                Some(value) => {
                    let bytes: [u8; 8] =
                        value[..].try_into().map_err(|_| RegionError::NotACounter {
                            row: escape_bytes(row),
                            len: value.len(),
                        })?;
                    i64::from_be_bytes(bytes)
                }
            };
            let new = old.wrapping_add(delta);
            Ok((Bytes::copy_from_slice(&new.to_be_bytes()), new))
        })
    }

    /// Appends `suffix` to the value at (row, family, qualifier) (absent is empty) and returns the
    /// new value, atomically like [`Region::increment`].
    pub fn append(
        &self,
        row: &[u8],
        family: &[u8],
        qualifier: &[u8],
        suffix: &[u8],
        durability: Durability,
    ) -> Result<(Bytes, WriteTimings), RegionError> {
        let _span = span!(INFO, "region.append", region = self.id, row = %Printable(row));
        self.read_modify_write(row, family, qualifier, durability, |current| {
            let mut value = current.map(|v| v.to_vec()).unwrap_or_default();
            value.extend_from_slice(suffix);
            let value = Bytes::from(value);
            Ok((value.clone(), value))
        })
    }

    /// Applies `cells` (all on `row`) only if the latest visible value of (row, family,
    /// qualifier) satisfies `check`; returns whether it did. Atomic under the row's exclusive
    /// lock: no write to the row can fall between the check and the mutation.
    pub fn check_and_mutate(
        &self,
        row: &[u8],
        family: &[u8],
        qualifier: &[u8],
        check: impl FnOnce(Option<&Bytes>) -> bool,
        cells: Vec<Cell>,
        durability: Durability,
    ) -> Result<bool, RegionError> {
        let _span = span!(INFO, "region.check_and_mutate", region = self.id, row = %Printable(row));
        self.count_writes(1);
        let row_bytes = Bytes::copy_from_slice(row);
        if let Some(other) = cells.iter().find(|c| c.row() != &row_bytes) {
            return Err(RegionError::NotOneRow {
                row: escape_bytes(row),
                other: escape_bytes(other.row()),
            });
        }
        self.check_resources()?;
        let (guard, timings) = self.lock_exclusive(row_bytes)?;
        let current = self.latest_for_update(row, family, qualifier)?;
        if !check(current.as_ref().map(|c| c.value())) {
            return Ok(false);
        }
        self.write_locked(cells, durability, timings, guard)?;
        Ok(true)
    }

    fn read_modify_write<T>(
        &self,
        row: &[u8],
        family: &[u8],
        qualifier: &[u8],
        durability: Durability,
        update: impl FnOnce(Option<&Bytes>) -> Result<(Bytes, T), RegionError>,
    ) -> Result<(T, WriteTimings), RegionError> {
        self.count_writes(1);
        if !self.stores.contains_key(family) {
            return Err(RegionError::NoSuchFamily {
                family: escape_bytes(family),
                region: self.id,
            });
        }
        self.check_resources()?;
        let (guard, timings) = self.lock_exclusive(Bytes::copy_from_slice(row))?;
        let current = self.latest_for_update(row, family, qualifier)?;
        let (value, result) = update(current.as_ref().map(|c| c.value()))?;
        let timestamp = current
            .as_ref()
            .map_or(i64::MIN, |c| c.timestamp().saturating_add(1))
            .max(self.server_time());
        // A put after this increment must not get an older server timestamp (several
        // increments in one millisecond run the counter's timestamps ahead of the clock).
        self.last_server_ts.fetch_max(timestamp, Ordering::Relaxed);
        let cell = Cell::builder(Bytes::copy_from_slice(row), Bytes::copy_from_slice(family))
            .qualifier(Bytes::copy_from_slice(qualifier))
            .timestamp(timestamp)
            .value(value)
            .build()
            .map_err(|e| RegionError::BadCell(e.to_string()))?;
        let timings = self.write_locked(vec![cell], durability, timings, guard)?;
        Ok((result, timings))
    }

    /// The latest value a read-modify-write builds on, under the row's exclusive lock. In the
    /// legacy order the row's previous writer may have unlocked before becoming visible, so
    /// this first waits for every write in flight in the region.
    fn latest_for_update(
        &self,
        row: &[u8],
        family: &[u8],
        qualifier: &[u8],
    ) -> Result<Option<Cell>, RegionError> {
        if self.order == WriteOrder::Legacy {
            self.mvcc.await_all();
        }
        self.latest(row, family, qualifier)
    }

    /// The latest visible put of one column, if any.
    pub fn latest(
        &self,
        row: &[u8],
        family: &[u8],
        qualifier: &[u8],
    ) -> Result<Option<Cell>, RegionError> {
        let query = ReadQuery {
            columns: Some(vec![(
                Bytes::copy_from_slice(family),
                Some(Bytes::copy_from_slice(qualifier)),
            )]),
            ..ReadQuery::latest(0, now_ms())
        };
        Ok(self.get(row, &query)?.into_iter().next())
    }

    /// Writes every memstore to a new store file per family and commits them in one manifest
    /// update, then lets the WAL drop what they hold. Returns the flushed sequence id.
    pub fn flush(&self) -> Result<u64, RegionError> {
        let _span = span!(INFO, "region.flush", region = self.id);
        self.flush_cause.follow();
        let _one_at_a_time = self.flushing.lock();
        let (snapshots, flush_seq) = {
            let _exclusive = self.updates.write();
            let snapshots: Vec<_> = self
                .stores
                .iter()
                .map(|(name, store)| (name.clone(), store.memstore.snapshot()))
                .collect();
            let mut pending = self.snapshot_bytes.lock();
            if pending.is_none() {
                // A failed flush leaves its snapshot pending and the memstore hands the same one
                // back; only a fresh snapshot takes the active segment's charges.
                *pending = Some(self.active_bytes.swap(0, Ordering::Relaxed));
            }
            (snapshots, self.mvcc.write_point())
        };
        let mut written = Vec::new();
        for (name, snapshot) in &snapshots {
            let store = &self.stores[name];
            if snapshot.size().cell_count == 0 {
                continue;
            }
            let number = self.next_file_id.fetch_add(1, Ordering::Relaxed);
            let file_name = format!("{number:020}.ksf");
            let path = store.dir.join(&file_name);
            let mut writer =
                StoreFileWriter::create(Arc::clone(&self.fs), &path, store.files_options.clone())?;
            for cell in snapshot.scanner() {
                writer.append(&cell)?;
            }
            writer.finish()?;
            written.push((name.clone(), file_name, path));
        }
        let mut flushed_bytes = 0;
        let mut manifest = self.manifest.lock();
        let mut next = manifest.clone();
        next.flushed = next.flushed.max(flush_seq);
        next.next_file = self.next_file_id.load(Ordering::Relaxed);
        for (name, file_name, _) in &written {
            next.files.push((name.clone(), file_name.clone()));
        }
        next.store(&*self.fs, &self.dir)?;
        *manifest = next;
        drop(manifest);
        let mut readers = HashMap::new();
        for (name, _, path) in written {
            let reader = StoreFileReader::open(
                &*self.fs,
                &path,
                FILE_IDS.fetch_add(1, Ordering::Relaxed),
                Arc::clone(&self.stores[&name].source),
            )?;
            flushed_bytes += reader.info().file_len;
            readers.insert(name, Arc::new(reader));
        }
        for (name, snapshot) in snapshots {
            // One step under the store's file-list lock, which reads hold while they take their
            // sources: a read sees the snapshot's cells in the memstore or in the new file,
            // never in neither (nor in both).
            let store = &self.stores[&name];
            let mut files = store.files.write();
            if let Some(reader) = readers.remove(&name) {
                files.push(reader);
            }
            let _ = store.memstore.clear_snapshot(snapshot.id());
        }
        if let Some(charged) = self.snapshot_bytes.lock().take() {
            self.account.release(charged);
        }
        self.flush_requested.store(false, Ordering::Release);
        *self.flush_delayed_since.lock() = None;
        self.counters.flushes.fetch_add(1, Ordering::Relaxed);
        self.counters
            .flushed_bytes
            .fetch_add(flushed_bytes, Ordering::Relaxed);
        self.wal.mark_flushed(self.id, flush_seq)?;
        Ok(flush_seq)
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

    fn count_writes(&self, operations: usize) {
        self.counters
            .write_requests
            .fetch_add(operations as u64, Ordering::Relaxed);
    }

    /// Committed store files, every family together.
    pub fn store_file_count(&self) -> usize {
        self.stores.values().map(|s| s.files.read().len()).sum()
    }
}

/// Whether a store file can matter to a read of `query`'s time range (HBase's time-range
/// check in `shouldUseScanner`, made safe): a file whose every cell is older than the range holds
/// no put in it, and its delete markers can only mask older puts, so it is skipped. A file whose
/// cells are all newer is still read: its delete markers can mask puts inside the range.
fn may_hold_range(file: &StoreFileReader, query: &ReadQuery) -> bool {
    file.info().timestamp_range.1 >= query.time_range.min
}

/// Store files in a family's directory that the manifest does not list are what a flush or
/// compaction that never committed left (or an old file whose removal failed): removed on open.
fn remove_unlisted_files(
    fs: &dyn FileSystem,
    manifest: &Manifest,
    stores: &BTreeMap<Bytes, Store>,
) {
    for (family, store) in stores {
        let Ok(entries) = fs.list(&store.dir) else {
            continue;
        };
        for path in entries {
            let name = file_name_of(&path);
            let listed = manifest
                .files
                .iter()
                .any(|(f, n)| f == family && *n == name);
            if !listed && (name.ends_with(".ksf") || name.ends_with(".ksf.tmp")) {
                let _ = fs.remove(&path);
            }
        }
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

/// A memstore scanner as a merge source.
struct MemSource(MemStoreScanner);

impl KeyValueScanner for MemSource {
    fn peek(&self) -> Option<&Cell> {
        self.0.peek()
    }
    fn next(&mut self) -> keel_storefile::Result<Option<Cell>> {
        Ok(Iterator::next(&mut self.0))
    }
    fn seek(&mut self, key: &CellKey) -> keel_storefile::Result<()> {
        self.0.seek(key);
        Ok(())
    }
}
