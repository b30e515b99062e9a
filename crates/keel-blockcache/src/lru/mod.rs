//! [`LruBlockCache`]: HBase's on-heap LRU block cache. Sharded maps of blocks stamped with a
//! logical access clock; three priorities with their shares; a background evictor that frees
//! from the buckets furthest over their share, least recently used first, and never holds a
//! shard lock for longer than one removal, so readers are never blocked by an eviction run.

mod evict;

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::Arc;

use bytes::Bytes;
use keel_sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use keel_sync::thread::{JoinHandle, spawn_named};
use keel_sync::{CachePadded, Condvar, Mutex};

use crate::cache::{BlockCache, BlockKey, BlockPriority, CacheCounters, CacheStats, KeyHasher};
use crate::id_lock::{IdReadWriteLock, PoolKind};

/// Sizes and policy of an [`LruBlockCache`], with HBase's defaults.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LruOptions {
    /// Bytes the cache aims to hold (HBase derives it from `hfile.block.cache.size` × heap).
    pub capacity_bytes: u64,
    /// Larger blocks are refused. HBase `hbase.lru.max.block.size`, 16 MiB.
    pub max_block_size: usize,
    /// Share of single-access blocks. HBase `hbase.lru.blockcache.single.percentage`, 0.25.
    pub single_share: f64,
    /// Share of multi-access blocks. HBase `hbase.lru.blockcache.multi.percentage`, 0.50.
    pub multi_share: f64,
    /// Share of in-memory blocks. HBase `hbase.lru.blockcache.memory.percentage`, 0.25.
    pub memory_share: f64,
    /// Eviction starts above this fraction of capacity. HBase
    /// `hbase.lru.blockcache.acceptable.factor`, 0.99.
    pub acceptable_factor: f64,
    /// Eviction frees down to this fraction. HBase `hbase.lru.blockcache.min.factor`, 0.95.
    pub min_factor: f64,
    /// Inserts are refused above this fraction (the evictor is behind). HBase
    /// `hbase.lru.blockcache.hard.capacity.limit.factor`, 1.2.
    pub hard_limit_factor: f64,
    /// Evict on a background thread (HBase's default) or inline in `insert` (deterministic).
    pub eviction_thread: bool,
    /// Pool for the single-flight id locks.
    pub id_lock_pool: PoolKind,
}

impl Default for LruOptions {
    fn default() -> Self {
        LruOptions {
            capacity_bytes: 256 * 1024 * 1024,
            max_block_size: 16 * 1024 * 1024,
            single_share: 0.25,
            multi_share: 0.50,
            memory_share: 0.25,
            acceptable_factor: 0.99,
            min_factor: 0.95,
            hard_limit_factor: 1.2,
            eviction_thread: true,
            id_lock_pool: PoolKind::Soft {
                max_entries: 10_000,
            },
        }
    }
}

const SHARDS: usize = 16;

/// One shard of the cache: its blocks under one mutex.
type Shard = Mutex<HashMap<BlockKey, Entry, KeyHasher>>;

/// A cached block.
#[derive(Debug)]
pub(crate) struct Entry {
    pub(crate) block: Bytes,
    pub(crate) priority: BlockPriority,
    pub(crate) last_access: u64,
}

#[derive(Debug)]
pub(crate) struct Inner {
    pub(crate) options: LruOptions,
    pub(crate) shards: Box<[CachePadded<Shard>]>,
    hasher: KeyHasher,
    pub(crate) size: CachePadded<AtomicU64>,
    pub(crate) blocks: AtomicU64,
    clock: CachePadded<AtomicU64>,
    pub(crate) counters: CacheCounters,
    wake: Mutex<bool>,
    wake_cond: Condvar,
    shutdown: AtomicBool,
}

/// HBase's LRU block cache. See the module docs.
#[derive(Debug)]
pub struct LruBlockCache {
    inner: Arc<Inner>,
    id_locks: IdReadWriteLock<BlockKey>,
    evictor: Option<JoinHandle<()>>,
}

impl LruBlockCache {
    /// An empty cache; starts the evictor thread unless `options.eviction_thread` is off.
    pub fn new(options: LruOptions) -> LruBlockCache {
        let hasher = KeyHasher::new();
        let inner = Arc::new(Inner {
            options,
            shards: (0..SHARDS)
                .map(|_| CachePadded(Mutex::new(HashMap::with_hasher(hasher))))
                .collect(),
            hasher,
            size: CachePadded(AtomicU64::new(0)),
            blocks: AtomicU64::new(0),
            clock: CachePadded(AtomicU64::new(0)),
            counters: CacheCounters::new(),
            wake: Mutex::new(false),
            wake_cond: Condvar::new(),
            shutdown: AtomicBool::new(false),
        });
        let evictor = options.eviction_thread.then(|| {
            let inner = Arc::clone(&inner);
            spawn_named("keel-lru-evictor", move || inner.run_evictor())
                .unwrap_or_else(|e| panic!("cannot start the LRU evictor thread: {e}"))
        });
        LruBlockCache {
            inner,
            id_locks: IdReadWriteLock::new(options.id_lock_pool),
            evictor,
        }
    }

    /// Runs one eviction pass now (what the evictor thread does when the cache passes its
    /// acceptable size); returns the bytes freed.
    pub fn evict_now(&self) -> u64 {
        self.inner.evict()
    }
}

impl Drop for LruBlockCache {
    fn drop(&mut self) {
        self.inner.shutdown.store(true, Relaxed);
        self.inner.signal();
        if let Some(evictor) = self.evictor.take() {
            let _ = evictor.join();
        }
    }
}

impl Inner {
    fn shard(&self, key: &BlockKey) -> &Shard {
        &self.shards[(self.hasher.hash_one(key) >> 48) as usize % SHARDS]
    }

    fn limit(&self, factor: f64) -> u64 {
        (self.options.capacity_bytes as f64 * factor) as u64
    }

    fn signal(&self) {
        *self.wake.lock() = true;
        self.wake_cond.notify_one();
    }

    fn run_evictor(self: Arc<Self>) {
        loop {
            {
                let mut wake = self.wake.lock();
                while !*wake && !self.shutdown.load(Relaxed) {
                    self.wake_cond.wait(&mut wake);
                }
                *wake = false;
            }
            if self.shutdown.load(Relaxed) {
                return;
            }
            self.evict();
        }
    }
}

impl BlockCache for LruBlockCache {
    fn get(&self, key: &BlockKey, caching: bool, repeat: bool) -> Option<Bytes> {
        let inner = &self.inner;
        let found = {
            let mut shard = inner.shard(key).lock();
            shard.get_mut(key).map(|entry| {
                // A hit reads the clock and writes the stamp only if it moved: readers on
                // different cores then share the clock's line and a hot block's entry instead
                // of taking them from each other at every hit. The clock moves at inserts, so
                // two blocks differ in recency only if an insert came between their last reads;
                // eviction runs only when inserts fill the cache, so it has those to go by.
                let now = inner.clock.load(Relaxed);
                if entry.last_access != now {
                    entry.last_access = now;
                }
                if entry.priority == BlockPriority::Single {
                    entry.priority = BlockPriority::Multi;
                }
                entry.block.clone()
            })
        };
        inner
            .counters
            .count_lookup(found.is_some(), caching, repeat);
        found
    }

    fn insert(&self, key: BlockKey, block: Bytes, in_memory: bool) -> bool {
        let inner = &self.inner;
        let len = block.len() as u64;
        let over_hard_limit =
            inner.size.load(Relaxed) + len > inner.limit(inner.options.hard_limit_factor);
        if block.len() > inner.options.max_block_size || over_hard_limit {
            inner.counters.failed_inserts.fetch_add(1, Relaxed);
            if over_hard_limit {
                inner.signal();
            }
            return false;
        }
        {
            let mut shard = inner.shard(&key).lock();
            if shard.contains_key(&key) {
                return true;
            }
            let priority = if in_memory {
                BlockPriority::Memory
            } else {
                BlockPriority::Single
            };
            let last_access = inner.clock.fetch_add(1, Relaxed);
            shard.insert(
                key,
                Entry {
                    block,
                    priority,
                    last_access,
                },
            );
        }
        inner.blocks.fetch_add(1, Relaxed);
        let size = inner.size.fetch_add(len, Relaxed) + len;
        if size > inner.limit(inner.options.acceptable_factor) {
            if inner.options.eviction_thread {
                inner.signal();
            } else {
                inner.evict();
            }
        }
        true
    }

    fn evict(&self, key: &BlockKey) -> bool {
        self.inner.remove(key).is_some()
    }

    fn evict_file(&self, file_id: u64) -> usize {
        let mut evicted = 0;
        for shard in self.inner.shards.iter() {
            let keys: Vec<BlockKey> = shard
                .lock()
                .keys()
                .filter(|k| k.file_id == file_id)
                .copied()
                .collect();
            for key in keys {
                evicted += usize::from(self.inner.remove(&key).is_some());
            }
        }
        evicted
    }

    fn stats(&self) -> CacheStats {
        let inner = &self.inner;
        let size_bytes = inner.size.load(Relaxed);
        inner.counters.stats(
            size_bytes,
            inner.options.capacity_bytes.saturating_sub(size_bytes),
            inner.blocks.load(Relaxed),
        )
    }

    fn id_locks(&self) -> &IdReadWriteLock<BlockKey> {
        &self.id_locks
    }
}

#[cfg(all(test, not(shuttle)))]
mod tests;
