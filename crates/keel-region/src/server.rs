//! [`RegionServer`]: the embedded store's front door — one WAL shared by every region, a
//! persisted table catalog, and [`Table`] handles. One region per table for now; the catalog
//! records each table's region id so that splitting can come without a format change.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use keel_cell::Cell;
use keel_fs::{FileSystem, StdFs};
use keel_wal::{Wal, WalOptions};
use parking_lot::{Mutex, RwLock};

use crate::catalog::{Catalog, TableEntry};
use crate::compaction_policy::CompactionPolicy;
use crate::error::{RegionError, io};
use crate::limits::{CompactionThroughput, MemoryAccount, RegionLimits};
use crate::matcher::ReadQuery;
use crate::region::{BlockReads, Durability, FamilyOptions, Region, WriteOrder, WriteTimings};

mod housekeeping;
use housekeeping::Housekeeping;
use keel_blockcache::{
    AreaKind, BlockCache, BucketCache, BucketOptions, CacheStats, LruBlockCache, LruOptions,
};

/// How a [`RegionServer`] runs. Keys are HBase's where HBase has one.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerOptions {
    /// What `Durability::UseDefault` means on this server (HBase's default: `SYNC_WAL`).
    pub default_durability: Durability,
    /// The write path's order (HBASE-15158's by default).
    pub write_order: WriteOrder,
    /// The shared WAL's settings.
    pub wal: WalOptions,
    /// Every region's limits: flush size (128 MiB), block multiplier (4), blocking store files
    /// (16) and how long a flush waits for compaction (90 s).
    pub limits: RegionLimits,
    /// `hbase.hstore.flusher.count`: flusher threads (2); thread k looks after every k-th table.
    pub flusher_threads: usize,
    /// How often the flusher looks at every region (it also flushes the regions the WAL names
    /// when it holds too many segments, HBase's `hbase.regionserver.maxlogs`, and is woken at
    /// once by memory pressure or a refused write).
    pub flush_check_interval: std::time::Duration,
    /// Bytes of the LRU block cache every region reads store files through; 0 reads files
    /// directly. HBase sizes it as `hfile.block.cache.size` (0.4) of the heap; Keel has no heap
    /// to take a share of, so 256 MiB.
    pub block_cache_bytes: u64,
    /// Which cache that is: HBase's on-heap LRU cache (the default) or its bucket cache, whose
    /// every read takes its slot's id read lock (where HBASE-17747's pool choice matters).
    pub block_cache_kind: BlockCacheKind,
    /// The pool of the cache's id locks (`None`: the cache's default, soft as HBase's since
    /// HBASE-17747; `PoolKind::Weak` is HBase's earlier choice).
    pub block_cache_lock_pool: Option<keel_blockcache::PoolKind>,
    /// The memory Keel may use for memstores and block cache (Keel's stand-in for HBase's heap,
    /// 1 GiB). Checked at start as HBase checks its heap: the global memstore limit and the
    /// block cache together may take at most 80% of it.
    pub memory_bytes: u64,
    /// `hbase.regionserver.global.memstore.size`, as bytes: above this, memstore memory across
    /// all regions blocks writers until flushes free it (0.4 × `memory_bytes`).
    pub global_memstore_bytes: u64,
    /// `hbase.regionserver.global.memstore.size.lower.limit`: above this fraction of the global
    /// limit (0.95) the flusher flushes the largest regions first.
    pub global_memstore_low_fraction: f64,
    /// How long a writer blocked by the global limit waits before failing with `MemoryFull`
    /// (Keel's own bound; HBase waits without one). 60 s.
    pub memory_wait_timeout: std::time::Duration,
    /// The minor-compaction selection (HBase's exploring policy and its defaults).
    pub compaction: CompactionPolicy,
    /// Compaction write throughput bounds (50–100 MiB/s, scaled to pressure).
    pub compaction_throughput: CompactionThroughput,
    /// `hbase.regionserver.thread.compaction.small`: threads of the small pool (1).
    pub compaction_threads_small: usize,
    /// `hbase.regionserver.thread.compaction.large`: threads of the large pool (1).
    pub compaction_threads_large: usize,
    /// `hbase.regionserver.thread.compaction.throttle`: compactions reading more than this go to
    /// the large pool (2 × max files × flush size = 2.5 GiB).
    pub compaction_throttle_point: u64,
    /// `hbase.hregion.majorcompaction`: the period of automatic major compactions (7 days; zero
    /// turns them off).
    pub major_compaction_period: std::time::Duration,
    /// `hbase.hregion.majorcompaction.jitter`: ± this share of the period, fixed per region
    /// (0.5).
    pub major_compaction_jitter: f64,
}

impl Default for ServerOptions {
    fn default() -> ServerOptions {
        let memory_bytes: u64 = 1 << 30;
        let limits = RegionLimits::default();
        let compaction = CompactionPolicy::default();
        ServerOptions {
            default_durability: Durability::SyncWal,
            write_order: WriteOrder::Reordered,
            wal: WalOptions::default(),
            block_cache_bytes: 256 << 20,
            block_cache_kind: BlockCacheKind::Lru,
            block_cache_lock_pool: None,
            flusher_threads: 2,
            flush_check_interval: std::time::Duration::from_millis(100),
            memory_bytes,
            global_memstore_bytes: memory_bytes / 5 * 2,
            global_memstore_low_fraction: 0.95,
            memory_wait_timeout: std::time::Duration::from_secs(60),
            compaction_throughput: CompactionThroughput::default(),
            compaction_threads_small: 1,
            compaction_threads_large: 1,
            compaction_throttle_point: 2 * compaction.max_files as u64 * limits.flush_size,
            compaction,
            limits,
            major_compaction_period: std::time::Duration::from_secs(7 * 24 * 3600),
            major_compaction_jitter: 0.5,
        }
    }
}

impl ServerOptions {
    /// HBase's start-up check: the memory settings must fit together.
    fn check_memory(&self) -> Result<(), RegionError> {
        let budget = self.memory_bytes as f64 * 0.8;
        let wanted = self.global_memstore_bytes as f64 + self.block_cache_bytes as f64;
        if wanted > budget {
            return Err(RegionError::MemoryConfig(format!(
                "global memstore limit {} + block cache {} bytes exceed 80% of memory_bytes {}",
                self.global_memstore_bytes, self.block_cache_bytes, self.memory_bytes
            )));
        }
        if !(self.global_memstore_low_fraction > 0.0 && self.global_memstore_low_fraction <= 1.0) {
            return Err(RegionError::MemoryConfig(format!(
                "global_memstore_low_fraction {} is not in (0, 1]",
                self.global_memstore_low_fraction
            )));
        }
        Ok(())
    }
}

/// The server's own counters (each region's are in [`Region::stats`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ServerStats {
    /// Bytes held in memstores across every region.
    pub memstore_bytes: u64,
    /// The global high watermark.
    pub memstore_high: u64,
    /// Writes that waited for global memstore memory, and for how long in total.
    pub blocked_writes: u64,
    /// The time they waited.
    pub blocked_time: std::time::Duration,
    /// Flushes made because memory passed the low watermark.
    pub pressure_flushes: u64,
    /// Background flushes that failed (the region is tried again).
    pub flush_failures: u64,
    /// Compactions queued on the small and large pools.
    pub small_compactions: u64,
    /// Compactions queued on the large pool.
    pub large_compactions: u64,
    /// Background compactions that failed.
    pub compaction_failures: u64,
    /// Time background compactions slept in the throttle.
    pub compaction_throttled: std::time::Duration,
}

/// Which block cache a server's store files read through.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum BlockCacheKind {
    /// HBase's on-heap LRU cache (`LruBlockCache`): ids are locked only to load a missing block.
    #[default]
    Lru,
    /// HBase's bucket cache (`BucketCache`) in this area (heap: HBase's "offheap"; a mapped
    /// file: its "file" engine).
    Bucket(keel_blockcache::AreaKind),
}

/// The cache, and the same cache as a bucket cache when it is one (for its slot locks).
type Caches = (Arc<dyn BlockCache>, Option<Arc<BucketCache>>);

fn block_cache(options: &ServerOptions) -> Result<Caches, RegionError> {
    Ok(match &options.block_cache_kind {
        BlockCacheKind::Lru => {
            let defaults = LruOptions::default();
            let lru = Arc::new(LruBlockCache::new(LruOptions {
                capacity_bytes: options.block_cache_bytes,
                id_lock_pool: options
                    .block_cache_lock_pool
                    .unwrap_or(defaults.id_lock_pool),
                ..defaults
            }));
            (lru, None)
        }
        BlockCacheKind::Bucket(area) => {
            let defaults = BucketOptions::default();
            let path = match area {
                AreaKind::Mapped(path) => path.clone(),
                AreaKind::Heap => std::path::PathBuf::from("(heap)"),
            };
            let bucket = Arc::new(
                BucketCache::new(BucketOptions {
                    capacity_bytes: usize::try_from(options.block_cache_bytes)
                        .unwrap_or(usize::MAX),
                    area: area.clone(),
                    id_lock_pool: options
                        .block_cache_lock_pool
                        .unwrap_or(defaults.id_lock_pool),
                    ..defaults
                })
                .map_err(|e| crate::error::io("creating the bucket cache", &path, e))?,
            );
            (Arc::clone(&bucket) as Arc<dyn BlockCache>, Some(bucket))
        }
    })
}

struct Hosted {
    entry: TableEntry,
    region: Option<Arc<Region>>,
}

/// An embedded store serving tables from one directory.
pub struct RegionServer {
    fs: Arc<dyn FileSystem>,
    dir: PathBuf,
    options: ServerOptions,
    wal: Arc<Wal>,
    reads: BlockReads,
    /// The block cache as a bucket cache, when it is one.
    bucket: Option<Arc<BucketCache>>,
    tables: Arc<RwLock<BTreeMap<String, Hosted>>>,
    catalog: Mutex<Catalog>,
    account: Arc<MemoryAccount>,
    housekeeping: Mutex<Option<Housekeeping>>,
}

impl std::fmt::Debug for RegionServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegionServer")
            .field("dir", &self.dir)
            .field("tables", &self.list_tables())
            .finish_non_exhaustive()
    }
}

/// A table's handle: reads and writes go to its region.
#[derive(Debug, Clone)]
pub struct Table {
    name: String,
    region: Arc<Region>,
}

fn valid_table_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 255
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.')
}

impl RegionServer {
    /// Opens (creating if needed) the store in `dir` on the local file system.
    pub fn open(
        dir: impl AsRef<Path>,
        options: ServerOptions,
    ) -> Result<RegionServer, RegionError> {
        RegionServer::open_on(Arc::new(StdFs), dir.as_ref(), options)
    }

    /// Opens the store in `dir` on `fs`: reads the catalog, opens the WAL, and opens every
    /// enabled table's region (replaying its unflushed edits).
    pub fn open_on(
        fs: Arc<dyn FileSystem>,
        dir: &Path,
        options: ServerOptions,
    ) -> Result<RegionServer, RegionError> {
        options.check_memory()?;
        fs.create_dir_all(dir)
            .map_err(|e| io("create directory", dir, e))?;
        let catalog = Catalog::load(&*fs, dir)?;
        let wal = Arc::new(Wal::open(
            Arc::clone(&fs),
            &dir.join("wal"),
            options.wal.clone(),
        )?);
        let (reads, bucket) = if options.block_cache_bytes == 0 {
            (BlockReads::Direct, None)
        } else {
            let (cache, bucket) = block_cache(&options)?;
            (BlockReads::Cached(cache), bucket)
        };
        let high = options.global_memstore_bytes;
        let low = (high as f64 * options.global_memstore_low_fraction) as u64;
        let account = MemoryAccount::new(high, low, options.memory_wait_timeout);
        let server = RegionServer {
            fs,
            dir: dir.to_path_buf(),
            options,
            wal,
            reads,
            bucket,
            tables: Arc::new(RwLock::new(BTreeMap::new())),
            catalog: Mutex::new(catalog.clone()),
            account,
            housekeeping: Mutex::new(None),
        };
        for entry in catalog.tables {
            let region = if entry.enabled {
                Some(server.open_region(&entry)?)
            } else {
                None
            };
            server
                .tables
                .write()
                .insert(entry.name.clone(), Hosted { entry, region });
        }
        let housekeeping = Housekeeping::start(
            Arc::downgrade(&server.tables),
            Arc::downgrade(&server.wal),
            server.options.clone(),
            Arc::clone(&server.account),
        )
        .map_err(|e| io("start flusher and compaction threads", dir, e))?;
        *server.housekeeping.lock() = Some(housekeeping);
        Ok(server)
    }

    /// Background flushes that failed (the region stays as it was and is tried again).
    pub fn flush_failures(&self) -> u64 {
        self.stats().flush_failures
    }

    /// The server's counters: global memory, pressure flushes, background failures.
    pub fn stats(&self) -> ServerStats {
        use std::sync::atomic::Ordering::Relaxed;
        let (blocked_writes, blocked_time) = self.account.blocked();
        let mut stats = ServerStats {
            memstore_bytes: self.account.used(),
            memstore_high: self.account.high(),
            blocked_writes,
            blocked_time,
            ..ServerStats::default()
        };
        if let Some(h) = &*self.housekeeping.lock() {
            let c = &h.shared.counters;
            stats.pressure_flushes = c.pressure_flushes.load(Relaxed);
            stats.flush_failures = c.flush_failures.load(Relaxed);
            stats.small_compactions = c.small_compactions.load(Relaxed);
            stats.large_compactions = c.large_compactions.load(Relaxed);
            stats.compaction_failures = c.compaction_failures.load(Relaxed);
            stats.compaction_throttled = h.shared.throttle.slept();
        }
        stats
    }

    fn open_region(&self, entry: &TableEntry) -> Result<Arc<Region>, RegionError> {
        let dir = self.dir.join("data").join(&entry.name);
        let region = Region::open_with(
            Arc::clone(&self.fs),
            &dir,
            Arc::clone(&self.wal),
            entry.region_id,
            entry.families.clone(),
            self.reads.clone(),
        )?;
        Ok(Arc::new(
            region
                .with_write_order(self.options.write_order)
                .with_default_durability(self.options.default_durability)
                .with_limits(self.options.limits)
                .with_account(Arc::clone(&self.account)),
        ))
    }

    /// Creates an enabled table with `families`; its description is persisted before it is
    /// served.
    pub fn create_table(
        &self,
        name: &str,
        families: Vec<FamilyOptions>,
    ) -> Result<Table, RegionError> {
        if !valid_table_name(name) {
            return Err(RegionError::BadTableName(name.to_string()));
        }
        if families.is_empty() {
            return Err(RegionError::NoFamilies(name.to_string()));
        }
        let mut tables = self.tables.write();
        if tables.contains_key(name) {
            return Err(RegionError::TableExists(name.to_string()));
        }
        let mut catalog = self.catalog.lock();
        let entry = TableEntry {
            name: name.to_string(),
            region_id: catalog.next_region,
            enabled: true,
            start_key: Bytes::new(),
            end_key: Bytes::new(),
            families,
        };
        let mut next = catalog.clone();
        next.next_region += 1;
        next.tables.push(entry.clone());
        next.store(&*self.fs, &self.dir)?;
        *catalog = next;
        let region = self.open_region(&entry)?;
        tables.insert(
            name.to_string(),
            Hosted {
                entry,
                region: Some(Arc::clone(&region)),
            },
        );
        Ok(self.handle(name, region))
    }

    /// Stops serving a table (HBase requires this before deleting it); persisted.
    pub fn disable_table(&self, name: &str) -> Result<(), RegionError> {
        self.set_enabled(name, false)
    }

    /// Serves a disabled table again; persisted.
    pub fn enable_table(&self, name: &str) -> Result<(), RegionError> {
        self.set_enabled(name, true)
    }

    fn set_enabled(&self, name: &str, enabled: bool) -> Result<(), RegionError> {
        let mut tables = self.tables.write();
        let hosted = tables
            .get_mut(name)
            .ok_or_else(|| RegionError::NoSuchTable(name.to_string()))?;
        if hosted.entry.enabled == enabled {
            return Ok(());
        }
        if !enabled && let Some(region) = &hosted.region {
            // Everything in memory goes to store files, so the WAL can let go of it.
            region.flush()?;
        }
        let mut catalog = self.catalog.lock();
        let mut next = catalog.clone();
        if let Some(t) = next.tables.iter_mut().find(|t| t.name == name) {
            t.enabled = enabled;
        }
        next.store(&*self.fs, &self.dir)?;
        *catalog = next;
        hosted.entry.enabled = enabled;
        hosted.region = if enabled {
            Some(self.open_region(&hosted.entry)?)
        } else {
            None
        };
        Ok(())
    }

    /// Deletes a disabled table and its files.
    pub fn delete_table(&self, name: &str) -> Result<(), RegionError> {
        let mut tables = self.tables.write();
        let hosted = tables
            .get(name)
            .ok_or_else(|| RegionError::NoSuchTable(name.to_string()))?;
        if hosted.entry.enabled {
            return Err(RegionError::TableEnabled(name.to_string()));
        }
        let mut catalog = self.catalog.lock();
        let mut next = catalog.clone();
        next.tables.retain(|t| t.name != name);
        next.store(&*self.fs, &self.dir)?;
        *catalog = next;
        tables.remove(name);
        // The catalog no longer names it; its files are garbage now, removed best effort.
        remove_tree(&*self.fs, &self.dir.join("data").join(name));
        Ok(())
    }

    /// The shared block cache's counters (`None` when reads go straight to files).
    pub fn block_cache_stats(&self) -> Option<CacheStats> {
        match &self.reads {
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
        match &self.reads {
            BlockReads::Direct => None,
            BlockReads::Cached(cache) => Some(cache.id_locks().stats()),
        }
    }

    /// The block cache's capacity in bytes (0: reads go straight to files).
    pub fn block_cache_capacity(&self) -> u64 {
        match &self.reads {
            BlockReads::Direct => 0,
            BlockReads::Cached(_) => self.options.block_cache_bytes,
        }
    }

    /// The shared WAL's counters and histograms.
    pub fn wal_stats(&self) -> keel_wal::WalStats {
        self.wal.stats()
    }

    /// WAL segments closed and not yet removed (the open one is not counted).
    pub fn wal_closed_segments(&self) -> usize {
        self.wal.closed_segments()
    }

    /// Queues a compaction of `table` on the background pools, as HBase's `Admin.compact` and
    /// `majorCompact` do: it runs throttled, off the caller's thread. (`Table::compact` and
    /// `Table::major_compact` run one at once instead.)
    pub fn request_compaction(&self, table: &str, major: bool) -> Result<(), RegionError> {
        let region = self.table(table)?.region;
        if let Some(housekeeping) = &*self.housekeeping.lock() {
            housekeeping.shared.request_compaction(&region, major);
        }
        Ok(())
    }

    /// A table's column families, as created (enabled or not).
    pub fn table_families(&self, name: &str) -> Result<Vec<FamilyOptions>, RegionError> {
        self.tables
            .read()
            .get(name)
            .map(|h| h.entry.families.clone())
            .ok_or_else(|| RegionError::NoSuchTable(name.to_string()))
    }

    /// Whether a table is enabled.
    pub fn is_table_enabled(&self, name: &str) -> Result<bool, RegionError> {
        self.tables
            .read()
            .get(name)
            .map(|h| h.entry.enabled)
            .ok_or_else(|| RegionError::NoSuchTable(name.to_string()))
    }

    /// Every table, sorted by name.
    pub fn list_tables(&self) -> Vec<String> {
        self.tables.read().keys().cloned().collect()
    }

    /// A handle on an enabled table.
    pub fn table(&self, name: &str) -> Result<Table, RegionError> {
        let tables = self.tables.read();
        let hosted = tables
            .get(name)
            .ok_or_else(|| RegionError::NoSuchTable(name.to_string()))?;
        let region = hosted
            .region
            .clone()
            .ok_or_else(|| RegionError::TableDisabled(name.to_string()))?;
        Ok(self.handle(name, region))
    }

    fn handle(&self, name: &str, region: Arc<Region>) -> Table {
        Table {
            name: name.to_string(),
            region,
        }
    }

    /// Flushes every table and closes the WAL. Handles still held keep their regions alive
    /// but can no longer write.
    pub fn close(self) -> Result<(), RegionError> {
        if let Some(mut housekeeping) = self.housekeeping.lock().take() {
            housekeeping.stop();
        }
        let regions: Vec<Arc<Region>> = self
            .tables
            .read()
            .values()
            .filter_map(|h| h.region.clone())
            .collect();
        for region in &regions {
            region.flush()?;
        }
        drop(regions);
        self.tables.write().clear();
        // If a Table handle still holds the WAL through its region, it closes when that goes.
        if let Ok(wal) = Arc::try_unwrap(self.wal) {
            wal.close()?;
        }
        Ok(())
    }
}

fn remove_tree(fs: &dyn FileSystem, dir: &Path) {
    if let Ok(entries) = fs.list(dir) {
        for entry in entries {
            if fs.remove(&entry).is_err() {
                remove_tree(fs, &entry);
            }
        }
    }
    let _ = fs.remove(dir);
}

impl Table {
    /// The table's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The table's region (all of it, for now).
    pub fn region(&self) -> &Region {
        &self.region
    }

    /// Puts one value at the server's time, at the default durability.
    pub fn put(
        &self,
        row: &[u8],
        family: &[u8],
        qualifier: &[u8],
        value: &[u8],
    ) -> Result<WriteTimings, RegionError> {
        let cell = Cell::put(
            Bytes::copy_from_slice(row),
            Bytes::copy_from_slice(family),
            Bytes::copy_from_slice(qualifier),
            keel_cell::LATEST_TIMESTAMP,
            Bytes::copy_from_slice(value),
        )
        .map_err(|e| RegionError::BadCell(e.to_string()))?;
        self.mutate(vec![cell], Durability::UseDefault)
    }

    /// Applies puts and deletes atomically at `durability` (`UseDefault`: the server's).
    pub fn mutate(
        &self,
        cells: Vec<Cell>,
        durability: Durability,
    ) -> Result<WriteTimings, RegionError> {
        self.region.mutate(cells, durability)
    }

    /// The row's cells that `query` selects.
    pub fn get(&self, row: &[u8], query: &ReadQuery) -> Result<Vec<Cell>, RegionError> {
        self.region.get(row, query)
    }

    /// The rows `scan` selects.
    pub fn scan(&self, scan: &crate::scan::Scan) -> Result<Vec<Vec<Cell>>, RegionError> {
        self.region.scan(scan)
    }

    /// The latest value of one column, if any.
    pub fn get_value(
        &self,
        row: &[u8],
        family: &[u8],
        qualifier: &[u8],
    ) -> Result<Option<Bytes>, RegionError> {
        Ok(self
            .region
            .latest(row, family, qualifier)?
            .map(|c| c.value().clone()))
    }

    /// Adds `delta` to a counter and returns the new value, at the default durability.
    pub fn increment(
        &self,
        row: &[u8],
        family: &[u8],
        qualifier: &[u8],
        delta: i64,
    ) -> Result<i64, RegionError> {
        Ok(self
            .region
            .increment(row, family, qualifier, delta, Durability::UseDefault)?
            .0)
    }

    /// Merges the store files HBase's exploring policy selects (losslessly); returns how many
    /// files went away.
    pub fn compact(&self) -> Result<usize, RegionError> {
        self.region.compact(
            &crate::compaction_policy::CompactionPolicy::default(),
            false,
        )
    }

    /// Rewrites all of the table's store files as one per family, dropping deleted, expired and
    /// excess versions and delete markers; returns how many files went away.
    pub fn major_compact(&self) -> Result<usize, RegionError> {
        self.region
            .compact(&crate::compaction_policy::CompactionPolicy::default(), true)
    }

    /// Writes the table's memstores to store files.
    pub fn flush(&self) -> Result<u64, RegionError> {
        self.region.flush()
    }
}
