//! [`EngineOptions`], [`EngineStats`] and the block cache a server reads through.

use std::sync::Arc;

use keel_blockcache::{
    AreaKind, BlockCache, BucketCache, BucketOptions, LruBlockCache, LruOptions,
};
use keel_wal::WalOptions;

use crate::compaction_policy::CompactionPolicy;
use crate::error::RegionError;
use crate::limits::{CompactionThroughput, RegionLimits};
use crate::region::{Durability, ReadModifyWrites, WriteOrder};

/// How a [`super::Engine`] runs. Keys are HBase's where HBase has one.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineOptions {
    /// What `Durability::UseDefault` means on this server for a table that does not choose:
    /// `SyncWal` (acknowledged once written to the OS: survives a process crash), HBase's
    /// default; `FsyncWal` (acknowledged after fdatasync: survives a power cut) is what HBase's
    /// `hbase.wal.hsync` = true selects.
    pub default_durability: Durability,
    /// The write path's order (HBASE-15158's by default).
    pub write_order: WriteOrder,
    /// How concurrent increments and appends of one row run: combined (Keel's default) or each
    /// under the row lock in turn (HBase's).
    pub read_modify_writes: ReadModifyWrites,
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
    /// Durability per table, by name, overriding the table's own (HBase's table `DURABILITY`)
    /// for as long as the server runs with these options: how an operator chooses
    /// fsync-before-ack for a table that clients create over Thrift1, whose `ColumnDescriptor`
    /// has no field for it. Applied when the table opens or is created.
    pub table_durability: std::collections::BTreeMap<String, Durability>,
    /// Split regions by size in the background, by HBase's `SteppingSplitPolicy`: a region
    /// splits once its largest store holds more than 2 × the flush size while its table has
    /// one region, more than [`EngineOptions::max_region_size`] once it has several. True.
    pub auto_split: bool,
    /// `hbase.hregion.max.filesize`: the store size past which a region of a table that already
    /// has several regions splits (10 GiB).
    pub max_region_size: u64,
    /// Compact the regions a split or merge makes at once (major compactions in the
    /// background), so that they stop referring to their parents' files and can split again
    /// (HBase compacts daughters the same way). True; tests turn it off to hold references.
    pub compact_split_regions: bool,
    /// Split keys for tables created without their own (by name): how an operator pre-splits a
    /// table that clients create over Thrift1, which has no way to pass split keys.
    pub table_split_keys: std::collections::BTreeMap<String, Vec<bytes::Bytes>>,
    /// Column families a table may have (Keel's bound; a table with more is refused when it is
    /// created): 256.
    pub max_families_per_table: usize,
    /// Bytes of free MSLAB chunks the server keeps for reuse, in one pool shared by every
    /// region's memstores (HBase's `ChunkCreator` pool, `hbase.hregion.memstore.chunkpool.maxsize`
    /// as a share of the global memstore). Counted in the start-up memory check. `None`: 0.1 ×
    /// `memory_bytes`. (A pool per memstore, as before, kept up to 128 MiB for every family.)
    pub chunk_pool_bytes: Option<u64>,
}

impl Default for EngineOptions {
    fn default() -> EngineOptions {
        let memory_bytes: u64 = 1 << 30;
        let limits = RegionLimits::default();
        let compaction = CompactionPolicy::default();
        EngineOptions {
            default_durability: Durability::SyncWal,
            write_order: WriteOrder::Reordered,
            read_modify_writes: ReadModifyWrites::Combined,
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
            table_durability: std::collections::BTreeMap::new(),
            table_split_keys: std::collections::BTreeMap::new(),
            compact_split_regions: true,
            auto_split: true,
            max_region_size: 10 << 30,
            max_families_per_table: 256,
            chunk_pool_bytes: None,
        }
    }
}

impl EngineOptions {
    /// The chunk pool's bound in bytes.
    pub fn chunk_pool_bytes(&self) -> u64 {
        self.chunk_pool_bytes.unwrap_or(self.memory_bytes / 10)
    }

    /// HBase's start-up check: the memory settings must fit together.
    pub(super) fn check_memory(&self) -> Result<(), RegionError> {
        let budget = self.memory_bytes as f64 * 0.8;
        let wanted = self.global_memstore_bytes as f64
            + self.block_cache_bytes as f64
            + self.chunk_pool_bytes() as f64;
        if wanted > budget {
            return Err(RegionError::MemoryConfig(format!(
                "global memstore limit {} + block cache {} + chunk pool {} bytes exceed 80% of memory_bytes {}",
                self.global_memstore_bytes,
                self.block_cache_bytes,
                self.chunk_pool_bytes(),
                self.memory_bytes
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

/// The server's own counters (each region's are in [`crate::Region::stats`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EngineStats {
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
    /// Bytes of MSLAB chunks kept in the server's pool (free, or returned and still read).
    pub chunk_pool_bytes: u64,
    /// Regions split by size in the background.
    pub splits: u64,
    /// Background splits that failed (the region stays as it was).
    pub split_failures: u64,
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
pub(super) type Caches = (Arc<dyn BlockCache>, Option<Arc<BucketCache>>);

pub(super) fn block_cache(options: &EngineOptions) -> Result<Caches, RegionError> {
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
