//! [`Engine`]: the embedded store's front door — one WAL shared by every region, a
//! persisted table catalog, and [`Table`] handles. One region per table for now; the catalog
//! records each table's region id so that splitting can come without a format change.
//!
//! Layout of a store's directory: `CATALOG` (the tables), `wal/` (the shared log) and
//! `data/<region id>/` per region (its `MANIFEST` and a directory per family, named by the hex
//! of the family's name). Nothing a client names becomes a path.
//!
//! Opening: the catalog, the WAL, every enabled table's region (manifest and store files),
//! then one pass over the WAL replays the unflushed edits of every region that has any. A
//! region that cannot open is marked failed ([`TableState::FailedOpen`], HBase's
//! `FAILED_OPEN`) and the others serve. Directories in `data/` that the catalog does not name
//! are what a table operation interrupted by a crash left, and are removed. Every region the
//! WAL holds edits of that is not served and has nothing left to replay (a deleted table's, a
//! disabled one's) is closed to the WAL, so its edits keep no segment alive.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use keel_fs::{FileSystem, StdFs};
use keel_sync::{Mutex, RwLock};
use keel_wal::{ReplayOptions, Wal};

use crate::catalog::{Catalog, RegionEntry, TableEntry};
use crate::error::{RegionError, io};
use crate::limits::MemoryAccount;
use crate::manifest::Manifest;
use crate::region::{BlockReads, Durability, FamilyOptions, Region};
use crate::trace::event;

mod admin;
mod housekeeping;
mod options;
mod split;
mod table;

pub use admin::TableOptions;
use housekeeping::Housekeeping;
use keel_blockcache::{BucketCache, CacheStats};
pub use options::{BlockCacheKind, EngineOptions, EngineStats};
pub(crate) use table::{LiveRegions, TableRegions};
pub use table::{RegionInfo, Table, TableScanner};

/// What a table is doing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TableState {
    /// Its region is open: it serves reads and writes.
    Enabled,
    /// Disabled: it serves nothing until enabled.
    Disabled,
    /// Enabled in the catalog, but its region could not be opened at start (HBase's
    /// `FAILED_OPEN`). Calls to it fail with [`RegionError::FailedOpen`]; enabling it again
    /// retries the open, disabling it stops the attempts.
    FailedOpen {
        /// Why it failed.
        reason: String,
    },
}

/// A table's region, as served now.
pub(crate) enum Serving {
    Open(Arc<LiveRegions>),
    Disabled,
    FailedOpen(String),
}

pub(crate) struct Hosted {
    pub(crate) entry: TableEntry,
    pub(crate) serving: Serving,
}

impl Hosted {
    /// The table's regions, when it is open.
    pub(crate) fn regions(&self) -> Vec<Arc<Region>> {
        match &self.serving {
            Serving::Open(live) => live.get().all().cloned().collect(),
            _ => Vec::new(),
        }
    }
}

/// The tables a server hosts, by name.
pub(crate) type Tables = Arc<RwLock<BTreeMap<String, Hosted>>>;

/// An embedded store serving tables from one directory.
pub struct Engine {
    state: Arc<State>,
    /// The block cache as a bucket cache, when it is one.
    bucket: Option<Arc<BucketCache>>,
    housekeeping: Mutex<Option<Housekeeping>>,
    /// This store's identity (HBase's cluster id), made once when the store is created.
    cluster_id: String,
}

/// What the server's table operations work on, shared with its background threads (which
/// split regions too).
pub(crate) struct State {
    fs: Arc<dyn FileSystem>,
    dir: PathBuf,
    options: EngineOptions,
    wal: Arc<Wal>,
    reads: BlockReads,
    /// Held only to look a table up or to swap its entry: never across I/O.
    tables: Tables,
    /// The catalog as committed. Every table operation holds it from start to end, which makes
    /// them one at a time; reads and writes never take it.
    catalog: Mutex<Catalog>,
    account: Arc<MemoryAccount>,
    /// The MSLAB chunks every region's memstores share.
    chunks: Arc<keel_memstore::ChunkPool>,
}

/// The store's id in `dir/cluster.id`, created (random, 128 bits) the first time.
fn load_or_create_cluster_id(fs: &dyn FileSystem, dir: &Path) -> Result<String, RegionError> {
    const NAME: &str = "cluster.id";
    const HEADER: &str = "keel-cluster-id 1";
    if let Some(lines) = crate::checked_file::load(fs, dir, NAME, HEADER, &[])? {
        return lines
            .into_iter()
            .next()
            .filter(|id| !id.is_empty())
            .ok_or_else(|| crate::checked_file::corrupt(&dir.join(NAME), "no id"));
    }
    // Two independently seeded SipHash outputs: random without a dependency for it.
    use std::hash::{BuildHasher, Hasher};
    let word = || {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos()),
        );
        h.finish()
    };
    let (a, b) = (word(), word());
    let id = format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xffff,
        b >> 48,
        b & 0xffff_ffff_ffff
    );
    crate::checked_file::store(fs, dir, NAME, HEADER, &format!("{id}\n"))?;
    Ok(id)
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("dir", &self.state.dir)
            .field("tables", &self.list_tables())
            .finish_non_exhaustive()
    }
}

impl Engine {
    /// The store's id (HBase's cluster id): made when the store is created, the same on every
    /// open.
    pub fn cluster_id(&self) -> &str {
        &self.cluster_id
    }

    /// Opens (creating if needed) the store in `dir` on the local file system.
    pub fn open(dir: impl AsRef<Path>, options: EngineOptions) -> Result<Engine, RegionError> {
        Engine::open_on(Arc::new(StdFs), dir.as_ref(), options)
    }

    /// Opens the store in `dir` on `fs` (see the module's documentation for what that does).
    /// Fails only if the store as a whole cannot open (its catalog or WAL); a table whose
    /// region cannot open is marked [`TableState::FailedOpen`] instead.
    pub fn open_on(
        fs: Arc<dyn FileSystem>,
        dir: &Path,
        options: EngineOptions,
    ) -> Result<Engine, RegionError> {
        options.check_memory()?;
        fs.create_dir_durable(dir)
            .map_err(|e| io("create directory", dir, e))?;
        let catalog = Catalog::load(&*fs, dir)?;
        let cluster_id = load_or_create_cluster_id(&*fs, dir)?;
        let wal = Arc::new(Wal::open(
            Arc::clone(&fs),
            &dir.join("wal"),
            options.wal.clone(),
        )?);
        let data = dir.join("data");
        fs.create_dir_durable(&data)
            .map_err(|e| io("create directory", &data, e))?;
        let (reads, bucket) = if options.block_cache_bytes == 0 {
            (BlockReads::Direct, None)
        } else {
            let (cache, bucket) = options::block_cache(&options)?;
            (BlockReads::Cached(cache), bucket)
        };
        let high = options.global_memstore_bytes;
        let low = (high as f64 * options.global_memstore_low_fraction) as u64;
        let account = MemoryAccount::new(high, low, options.memory_wait_timeout);
        let chunk_size = keel_memstore::DEFAULT_CHUNK_SIZE;
        let chunks = Arc::new(keel_memstore::ChunkPool::new(
            chunk_size,
            usize::try_from(options.chunk_pool_bytes() / chunk_size as u64).unwrap_or(usize::MAX),
        ));
        let state = Arc::new(State {
            fs,
            dir: dir.to_path_buf(),
            options,
            wal,
            reads,
            tables: Arc::new(RwLock::new(BTreeMap::new())),
            catalog: Mutex::new(catalog.clone()),
            account,
            chunks,
        });
        state.remove_orphans(&catalog);
        state.open_regions(&catalog);
        state.close_unhosted_regions(&catalog);
        let server = Engine {
            state: Arc::clone(&state),
            bucket,
            housekeeping: Mutex::new(None),
            cluster_id,
        };
        let housekeeping = Housekeeping::start(
            Arc::downgrade(&state),
            Arc::downgrade(&state.tables),
            Arc::downgrade(&state.wal),
            state.options.clone(),
            Arc::clone(&state.account),
        )
        .map_err(|e| io("start flusher and compaction threads", dir, e))?;
        *server.housekeeping.lock() = Some(housekeeping);
        Ok(server)
    }

    /// Column families a table may have (`EngineOptions::max_families_per_table`).
    pub fn max_families_per_table(&self) -> usize {
        self.state.options.max_families_per_table
    }

    /// Background flushes that failed (the region stays as it was and is tried again).
    pub fn flush_failures(&self) -> u64 {
        self.stats().flush_failures
    }

    /// Starts a new WAL segment before the next write (HBase's `Admin.rollWALWriter`), so the
    /// current one can be truncated once its regions flush.
    pub fn roll_wal(&self) {
        self.state.wal.roll();
    }

    /// Why the WAL refuses every write (a write or sync of it failed), if it does. The server
    /// keeps serving reads; writes fail until it restarts.
    pub fn wal_poisoned(&self) -> Option<String> {
        self.state.wal.poisoned()
    }

    /// Tables whose region failed to open, with why.
    pub fn failed_tables(&self) -> Vec<(String, String)> {
        self.state
            .tables
            .read()
            .iter()
            .filter_map(|(name, h)| match &h.serving {
                Serving::FailedOpen(reason) => Some((name.clone(), reason.clone())),
                _ => None,
            })
            .collect()
    }

    /// What a table is doing.
    pub fn table_state(&self, name: &str) -> Result<TableState, RegionError> {
        let tables = self.state.tables.read();
        let hosted = tables
            .get(name)
            .ok_or_else(|| RegionError::NoSuchTable(name.to_string()))?;
        Ok(match &hosted.serving {
            Serving::Open(_) => TableState::Enabled,
            Serving::Disabled => TableState::Disabled,
            Serving::FailedOpen(reason) => TableState::FailedOpen {
                reason: reason.clone(),
            },
        })
    }

    /// What `UseDefault` writes to a table get now (its own durability, an override from
    /// [`EngineOptions::table_durability`], or the server's default).
    pub fn table_durability(&self, name: &str) -> Result<Durability, RegionError> {
        self.state
            .tables
            .read()
            .get(name)
            .map(|h| self.state.effective_durability(&h.entry))
            .ok_or_else(|| RegionError::NoSuchTable(name.to_string()))
    }

    /// The server's counters: global memory, pressure flushes, background failures.
    pub fn stats(&self) -> EngineStats {
        use std::sync::atomic::Ordering::Relaxed;
        let (blocked_writes, blocked_time) = self.state.account.blocked();
        let mut stats = EngineStats {
            memstore_bytes: self.state.account.used(),
            memstore_high: self.state.account.high(),
            blocked_writes,
            blocked_time,
            ..EngineStats::default()
        };
        if let Some(h) = &*self.housekeeping.lock() {
            let c = &h.shared.counters;
            stats.pressure_flushes = c.pressure_flushes.load(Relaxed);
            stats.flush_failures = c.flush_failures.load(Relaxed);
            stats.small_compactions = c.small_compactions.load(Relaxed);
            stats.large_compactions = c.large_compactions.load(Relaxed);
            stats.compaction_failures = c.compaction_failures.load(Relaxed);
            stats.splits = c.splits.load(Relaxed);
            stats.split_failures = c.split_failures.load(Relaxed);
            stats.compaction_throttled = h.shared.throttle.slept();
        }
        stats.chunk_pool_bytes =
            self.state.chunks.stats().pooled * self.state.chunks.chunk_size() as u64;
        stats
    }

    /// The shared block cache's counters (`None` when reads go straight to files).
    pub fn block_cache_stats(&self) -> Option<CacheStats> {
        match &self.state.reads {
            BlockReads::Direct => None,
            BlockReads::Cached(cache) => Some(cache.stats()),
        }
    }

    /// The shared block cache's id-lock pool counters (HBASE-17747; `None` without a cache): a
    /// bucket cache's slot locks, taken by every read; an LRU cache's load locks, taken on
    /// misses.
    pub fn block_cache_lock_stats(&self) -> Option<keel_blockcache::IdLockStats> {
        if let Some(bucket) = &self.bucket {
            return Some(bucket.slot_locks().stats());
        }
        match &self.state.reads {
            BlockReads::Direct => None,
            BlockReads::Cached(cache) => Some(cache.id_locks().stats()),
        }
    }

    /// The block cache's capacity in bytes (0: reads go straight to files).
    pub fn block_cache_capacity(&self) -> u64 {
        match &self.state.reads {
            BlockReads::Direct => 0,
            BlockReads::Cached(_) => self.state.options.block_cache_bytes,
        }
    }

    /// The shared WAL's counters and histograms.
    pub fn wal_stats(&self) -> keel_wal::WalStats {
        self.state.wal.stats()
    }

    /// WAL segments closed and not yet removed (the open one is not counted).
    pub fn wal_closed_segments(&self) -> usize {
        self.state.wal.closed_segments()
    }

    /// Queues a compaction of `table` on the background pools, as HBase's `Admin.compact` and
    /// `majorCompact` do: it runs throttled, off the caller's thread. (`Table::compact` and
    /// `Table::major_compact` run one at once instead.)
    pub fn request_compaction(&self, table: &str, major: bool) -> Result<(), RegionError> {
        let table = self.table(table)?;
        if let Some(housekeeping) = &*self.housekeeping.lock() {
            for region in table.regions().iter() {
                housekeeping.shared.request_compaction(region, major);
            }
        }
        Ok(())
    }

    /// Splits region `region_id` of `table` at `at`, or at its split point (HBase's
    /// `Admin.splitRegion`): crash-safe, with the catalog as the commit point (see
    /// [`crate::Engine`]'s module docs on regions). The daughters refer to the parent's
    /// files and are compacted in the background to rewrite them; a region that still reads
    /// its parent's files is compacted first, on the caller's thread, so a split may follow a
    /// split at once. Returns the daughters.
    pub fn split_region(
        &self,
        table: &str,
        region_id: u64,
        at: Option<bytes::Bytes>,
    ) -> Result<[RegionInfo; 2], RegionError> {
        self.rewrite_references(table, &[region_id])?;
        let daughters = self.state.split_region(table, region_id, at)?;
        self.compact_new_regions(table, &daughters.iter().map(|d| d.id).collect::<Vec<_>>());
        Ok(daughters)
    }

    /// Merges two adjacent regions of `table` into one (HBase's `Admin.mergeRegions`), as
    /// crash-safe as a split. Like a split, it first compacts a region that still reads its
    /// parent's files. Returns the merged region.
    pub fn merge_regions(&self, table: &str, a: u64, b: u64) -> Result<RegionInfo, RegionError> {
        self.rewrite_references(table, &[a, b])?;
        let merged = self.state.merge_regions(table, a, b)?;
        self.compact_new_regions(table, &[merged.id]);
        Ok(merged)
    }

    /// Major-compacts those of regions `ids` that still read a parent's files, so that a split
    /// or merge need not wait for the background compaction a previous one queued (HBase
    /// refuses such a region and leaves the operator to retry). A split or merge that runs
    /// between this and its own check still finds the references and is refused.
    fn rewrite_references(&self, table: &str, ids: &[u64]) -> Result<(), RegionError> {
        let policy = crate::compaction_policy::CompactionPolicy::default();
        for region in self.table(table)?.regions() {
            if ids.contains(&region.id()) && region.has_references() {
                region.compact(&policy, true)?;
            }
        }
        Ok(())
    }

    /// Queues major compactions of new regions: they rewrite the references to their parents'
    /// files, after which the parents' directories can go.
    fn compact_new_regions(&self, table: &str, ids: &[u64]) {
        if !self.state.options.compact_split_regions {
            return;
        }
        let Ok(t) = self.table(table) else { return };
        if let Some(housekeeping) = &*self.housekeeping.lock() {
            for region in t.regions().iter().filter(|r| ids.contains(&r.id())) {
                housekeeping.shared.request_compaction(region, true);
            }
        }
    }

    /// Removes the directories of closed regions nothing refers to any more (the janitor;
    /// the housekeeping thread runs it too, after compactions that drop references).
    pub fn remove_unreferenced_regions(&self) {
        self.state.run_janitor();
    }

    /// Queues a compaction of one region of `table` (HBase's `Admin.compactRegion`).
    pub fn request_region_compaction(
        &self,
        table: &str,
        region_id: u64,
        major: bool,
    ) -> Result<(), RegionError> {
        let table = self.table(table)?;
        let region = table
            .regions()
            .into_iter()
            .find(|r| r.id() == region_id)
            .ok_or(RegionError::RegionClosed { region: region_id })?;
        if let Some(housekeeping) = &*self.housekeeping.lock() {
            housekeeping.shared.request_compaction(&region, major);
        }
        Ok(())
    }

    /// A table's column families, as created (enabled or not).
    pub fn table_families(&self, name: &str) -> Result<Vec<FamilyOptions>, RegionError> {
        self.state
            .tables
            .read()
            .get(name)
            .map(|h| h.entry.families.clone())
            .ok_or_else(|| RegionError::NoSuchTable(name.to_string()))
    }

    /// Whether a table is enabled (in the catalog: a table whose region failed to open is).
    pub fn is_table_enabled(&self, name: &str) -> Result<bool, RegionError> {
        self.state
            .tables
            .read()
            .get(name)
            .map(|h| h.entry.enabled)
            .ok_or_else(|| RegionError::NoSuchTable(name.to_string()))
    }

    /// Every table, sorted by name.
    pub fn list_tables(&self) -> Vec<String> {
        self.state.tables.read().keys().cloned().collect()
    }

    /// A handle on an enabled table.
    pub fn table(&self, name: &str) -> Result<Table, RegionError> {
        let tables = self.state.tables.read();
        let hosted = tables
            .get(name)
            .ok_or_else(|| RegionError::NoSuchTable(name.to_string()))?;
        match &hosted.serving {
            Serving::Open(live) => Ok(Table {
                name: name.to_string(),
                live: Arc::clone(live),
            }),
            Serving::Disabled => Err(RegionError::TableDisabled(name.to_string())),
            Serving::FailedOpen(reason) => Err(RegionError::FailedOpen {
                table: name.to_string(),
                reason: reason.clone(),
            }),
        }
    }

    /// Flushes every table and closes the WAL. Handles still held keep their regions alive
    /// but can no longer write.
    pub fn close(self) -> Result<(), RegionError> {
        if let Some(mut housekeeping) = self.housekeeping.lock().take() {
            housekeeping.stop();
        }
        let regions: Vec<Arc<Region>> = self
            .state
            .tables
            .read()
            .values()
            .flat_map(Hosted::regions)
            .collect();
        for region in &regions {
            region.flush()?;
        }
        drop(regions);
        self.state.tables.write().clear();
        // If a Table handle still holds the WAL through its region, it closes when that goes.
        if let Ok(state) = Arc::try_unwrap(self.state)
            && let Ok(wal) = Arc::try_unwrap(state.wal)
        {
            wal.close()?;
        }
        Ok(())
    }
}

use crate::manifest::region_dir_name;

/// The region id a directory name in `data/` stands for, if it is one.
fn region_id_of(name: &str) -> Option<u64> {
    (name.len() == 20 && name.bytes().all(|b| b.is_ascii_digit()))
        .then(|| name.parse().ok())
        .flatten()
}

impl State {
    /// The janitor: removes the directories of regions nothing names or refers to (under the
    /// catalog's lock, so never a split's daughters before their commit).
    pub(crate) fn run_janitor(&self) {
        let catalog = self.catalog.lock();
        self.remove_orphans(&catalog);
    }

    /// Opens every enabled table's regions: each loads its files, then one pass over the WAL
    /// replays the edits of all that need it. A failure marks the table failed, nothing more.
    pub(crate) fn open_regions(&self, catalog: &Catalog) {
        let mut loaded: Vec<(TableEntry, Vec<(RegionEntry, Region)>)> = Vec::new();
        let mut tables = self.tables.write();
        for entry in &catalog.tables {
            let serving = if !entry.enabled {
                Serving::Disabled
            } else {
                let mut regions = Vec::with_capacity(entry.regions.len());
                let mut failure = None;
                for r in &entry.regions {
                    match self.load_region(entry, r.id) {
                        Ok(region) => regions.push((r.clone(), region)),
                        Err(e) => {
                            failure = Some(format!("region {}: {e}", r.id));
                            break;
                        }
                    }
                }
                match failure {
                    None => {
                        loaded.push((entry.clone(), regions));
                        continue;
                    }
                    Some(reason) => self.failed(entry, reason),
                }
            };
            tables.insert(
                entry.name.clone(),
                Hosted {
                    entry: entry.clone(),
                    serving,
                },
            );
        }
        let replay_failure = self
            .replay(loaded.iter().flat_map(|(_, rs)| rs.iter().map(|(_, r)| r)))
            .err()
            .map(|e| format!("WAL replay failed: {e}"));
        for (entry, regions) in loaded {
            let serving = match self.finish_table(regions, replay_failure.as_deref()) {
                Ok(open) => Serving::Open(LiveRegions::new(open)),
                Err(reason) => self.failed(&entry, reason),
            };
            tables.insert(
                entry.name.clone(),
                Hosted {
                    entry: entry.clone(),
                    serving,
                },
            );
        }
    }

    /// The last step of opening a table's loaded regions: each finishes opening (declares
    /// itself to the WAL), or the table fails as a whole.
    pub(crate) fn finish_table(
        &self,
        regions: Vec<(RegionEntry, Region)>,
        replay_failure: Option<&str>,
    ) -> Result<Arc<TableRegions>, String> {
        let mut open = Vec::with_capacity(regions.len());
        for (r, region) in regions {
            if let (Some(reason), true) = (replay_failure, region.needs_replay()) {
                return Err(reason.to_string());
            }
            region
                .finish_open()
                .map_err(|e| format!("region {}: {e}", r.id))?;
            open.push((r, Arc::new(region)));
        }
        Ok(Arc::new(TableRegions { regions: open }))
    }

    pub(crate) fn failed(&self, entry: &TableEntry, reason: String) -> Serving {
        event!(
            ERROR,
            table = %entry.name,
            reason = %reason,
            "a region failed to open; the table is FAILED_OPEN and the others serve"
        );
        let _ = entry;
        Serving::FailedOpen(reason)
    }

    /// One pass over the WAL for every region in `regions` that has edits above its flushed
    /// point.
    pub(crate) fn replay<'a>(
        &self,
        regions: impl Iterator<Item = &'a Region>,
    ) -> Result<(), keel_wal::WalError> {
        let needing: HashMap<u64, &Region> = regions
            .filter(|r| r.needs_replay())
            .map(|r| (r.id(), r))
            .collect();
        if needing.is_empty() {
            return Ok(());
        }
        let flushed = needing
            .iter()
            .map(|(id, r)| (*id, r.flushed_sequence()))
            .collect();
        for entry in self.wal.replay(ReplayOptions {
            flushed,
            ..ReplayOptions::default()
        })? {
            let entry = entry?;
            if let Some(region) = needing.get(&entry.region) {
                region.replay_entry(entry);
            }
        }
        Ok(())
    }

    /// Closes to the WAL every region it holds edits of that this server does not serve and
    /// that has nothing to replay: a deleted table's, or a disabled table's whose manifest is
    /// flushed past its last logged edit. A failed region's edits stay: they are its data.
    pub(crate) fn close_unhosted_regions(&self, catalog: &Catalog) {
        let served: HashSet<u64> = self
            .tables
            .read()
            .values()
            .flat_map(|h| h.regions().into_iter().map(|r| r.id()))
            .collect();
        for id in self.wal.logged_regions() {
            if served.contains(&id) {
                continue;
            }
            let release = match catalog
                .tables
                .iter()
                .find(|t| t.region_ids().any(|r| r == id))
            {
                None => true,
                Some(entry) if !entry.enabled => {
                    let flushed = Manifest::load(&*self.fs, &self.region_dir(id))
                        .map(|m| m.flushed)
                        .unwrap_or(0);
                    self.wal
                        .last_sequence_id(id)
                        .is_none_or(|last| last <= flushed)
                }
                Some(_) => false,
            };
            if release && let Err(e) = self.wal.close_region(id) {
                event!(WARN, region = id, error = %e, "closing a region to the WAL failed");
                let _ = e;
            }
        }
    }

    /// A region's directory: named by its id, never by anything a client chose.
    pub(crate) fn region_dir(&self, id: u64) -> PathBuf {
        self.dir.join("data").join(region_dir_name(id))
    }

    /// The first step of opening one of a table's regions (its files), configured as this
    /// server runs it.
    pub(crate) fn load_region(&self, entry: &TableEntry, id: u64) -> Result<Region, RegionError> {
        let region = Region::load(
            Arc::clone(&self.fs),
            &self.region_dir(id),
            Arc::clone(&self.wal),
            id,
            entry.families.clone(),
            self.reads.clone(),
            Arc::clone(&self.chunks),
        )?;
        Ok(region
            .with_write_order(self.options.write_order)
            .with_read_modify_writes(self.options.read_modify_writes)
            .with_default_durability(self.effective_durability(entry))
            .with_limits(self.options.limits)
            .with_account(Arc::clone(&self.account)))
    }

    /// Opens a table's regions on their own: files, replay (when the WAL has edits for them)
    /// and the WAL's claim.
    pub(crate) fn open_table(&self, entry: &TableEntry) -> Result<Arc<TableRegions>, RegionError> {
        let mut loaded = Vec::with_capacity(entry.regions.len());
        for r in &entry.regions {
            loaded.push((r.clone(), self.load_region(entry, r.id)?));
        }
        self.replay(loaded.iter().map(|(_, r)| r))?;
        let mut open = Vec::with_capacity(loaded.len());
        for (r, region) in loaded {
            region.finish_open()?;
            open.push((r, Arc::new(region)));
        }
        Ok(Arc::new(TableRegions { regions: open }))
    }

    /// What `UseDefault` writes to a table get: `table_durability`'s override, else the table's
    /// own, else the server's default.
    pub(crate) fn effective_durability(&self, entry: &TableEntry) -> Durability {
        let chosen = self
            .options
            .table_durability
            .get(&entry.name)
            .copied()
            .unwrap_or(entry.durability);
        if chosen == Durability::UseDefault {
            self.options.default_durability
        } else {
            chosen
        }
    }
}
