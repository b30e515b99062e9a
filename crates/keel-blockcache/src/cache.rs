//! The [`BlockCache`] interface every cache implements, block keys and priorities, statistics,
//! and single-flight loading.

use std::fmt;

use bytes::Bytes;
use keel_sync::atomic::{AtomicU64, Ordering::Relaxed};

use crate::id_lock::IdReadWriteLock;

/// A block's identity: the store file it belongs to and its byte offset there (keel-cell's
/// type, the one keel-storefile reads blocks by).
pub use keel_cell::BlockKey;

/// What a loader of [`BlockCache::get_or_load_with`] returns when it could not load the block:
/// the caller keeps its own error (typically in a variable the loader captured) and nothing is
/// cached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoadFailed;

/// HBase's block priorities: a block starts as `Single`, becomes `Multi` when read again, and
/// blocks of in-memory families are `Memory`. Each has its share of the cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BlockPriority {
    /// Read once so far.
    Single,
    /// Read more than once.
    Multi,
    /// From a family marked in-memory.
    Memory,
}

/// Cache counters, readable at any time without stopping the cache.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Lookups that found the block.
    pub hits: u64,
    /// Lookups that did not (a repeat lookup is not counted twice).
    pub misses: u64,
    /// Hits among lookups that would cache what they load.
    pub caching_hits: u64,
    /// Misses among lookups that would cache what they load.
    pub caching_misses: u64,
    /// Eviction runs.
    pub evictions: u64,
    /// Blocks evicted.
    pub evicted_blocks: u64,
    /// Inserts refused (block too large, or the cache above its hard limit).
    pub failed_inserts: u64,
    /// Bytes cached.
    pub size_bytes: u64,
    /// Capacity minus size (zero when above capacity).
    pub free_bytes: u64,
    /// Blocks cached.
    pub blocks: u64,
}

impl CacheStats {
    /// Hits ÷ lookups (0 when there were none).
    pub fn hit_ratio(&self) -> f64 {
        let lookups = self.hits + self.misses;
        if lookups == 0 {
            0.0
        } else {
            self.hits as f64 / lookups as f64
        }
    }

    /// Caching hits ÷ caching lookups (0 when there were none).
    pub fn caching_hit_ratio(&self) -> f64 {
        let lookups = self.caching_hits + self.caching_misses;
        if lookups == 0 {
            0.0
        } else {
            self.caching_hits as f64 / lookups as f64
        }
    }
}

/// A block cache. Values are immutable `Bytes`: a reader keeps its block valid even if the cache
/// evicts it meanwhile.
pub trait BlockCache: Send + Sync + fmt::Debug {
    /// The block, if cached. `caching` says whether the caller would cache what it loads (for
    /// the caching hit ratio); `repeat` marks a second lookup by the same request (after taking
    /// the block's id lock), so that its miss is not counted twice.
    fn get(&self, key: &BlockKey, caching: bool, repeat: bool) -> Option<Bytes>;

    /// Caches a block; returns false if it was refused. A block already cached stays as it is.
    fn insert(&self, key: BlockKey, block: Bytes, in_memory: bool) -> bool;

    /// Evicts one block; returns true if it was cached.
    fn evict(&self, key: &BlockKey) -> bool;

    /// Evicts every block of a file (it was compacted away); returns how many.
    fn evict_file(&self, file_id: u64) -> usize;

    /// Counters.
    fn stats(&self) -> CacheStats;

    /// The per-block id locks that make loading single-flight.
    fn id_locks(&self) -> &IdReadWriteLock<BlockKey>;

    /// The block, loading it on a miss with only one thread running `load` for a key while
    /// the others wait for its result (HBase's offset `IdLock` on the read path): look, take
    /// the block's id lock, look again (a second lookup that is not a second miss), load and
    /// cache. Callable through `dyn BlockCache`; [`BlockCacheExt::get_or_load`] is the same with
    /// a typed error.
    fn get_or_load_with(
        &self,
        key: BlockKey,
        in_memory: bool,
        load: &mut dyn FnMut() -> Result<Bytes, LoadFailed>,
    ) -> Result<Bytes, LoadFailed> {
        if let Some(block) = self.get(&key, true, false) {
            return Ok(block);
        }
        let _loading = self.id_locks().write(&key);
        if let Some(block) = self.get(&key, true, true) {
            return Ok(block);
        }
        let block = load()?;
        self.insert(key, block.clone(), in_memory);
        Ok(block)
    }
}

/// [`BlockCache::get_or_load_with`] with the loader's own error type, for every cache, a
/// `dyn BlockCache` included.
pub trait BlockCacheExt: BlockCache {
    /// The block, loading it with `loader` on a miss, single-flight (see
    /// [`BlockCache::get_or_load_with`]); a failed load caches nothing and returns its error.
    fn get_or_load<E>(
        &self,
        key: BlockKey,
        in_memory: bool,
        loader: impl FnOnce() -> Result<Bytes, E>,
    ) -> Result<Bytes, E> {
        typed_load(self, key, in_memory, loader)
    }
}

impl<C: BlockCache + ?Sized> BlockCacheExt for C {}

/// The typed loading call on top of the object-safe one: the loader's error is kept aside and
/// handed back when the load reports [`LoadFailed`].
fn typed_load<C: BlockCache + ?Sized, E>(
    cache: &C,
    key: BlockKey,
    in_memory: bool,
    loader: impl FnOnce() -> Result<Bytes, E>,
) -> Result<Bytes, E> {
    let mut loader = Some(loader);
    let mut error = None;
    let loaded = cache.get_or_load_with(key, in_memory, &mut || {
        let loader = loader.take().ok_or(LoadFailed)?;
        loader().map_err(|e| {
            error = Some(e);
            LoadFailed
        })
    });
    match (loaded, error) {
        (Ok(block), _) => Ok(block),
        (Err(LoadFailed), Some(e)) => Err(e),
        // Only the closure above reports a failure, and it keeps its error first.
        (Err(LoadFailed), None) => unreachable!("a failed load always keeps its error"),
    }
}

/// The counters behind every cache's [`CacheStats`], kept one way for all of them.
#[derive(Debug)]
pub(crate) struct CacheCounters {
    hits: AtomicU64,
    misses: AtomicU64,
    caching_hits: AtomicU64,
    caching_misses: AtomicU64,
    pub(crate) evictions: AtomicU64,
    pub(crate) evicted_blocks: AtomicU64,
    pub(crate) failed_inserts: AtomicU64,
}

impl CacheCounters {
    pub(crate) fn new() -> CacheCounters {
        CacheCounters {
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            caching_hits: AtomicU64::new(0),
            caching_misses: AtomicU64::new(0),
            evictions: AtomicU64::new(0),
            evicted_blocks: AtomicU64::new(0),
            failed_inserts: AtomicU64::new(0),
        }
    }

    /// Counts one lookup; a repeat lookup's miss is not counted again.
    pub(crate) fn count_lookup(&self, found: bool, caching: bool, repeat: bool) {
        match (found, caching) {
            (true, true) => self.caching_hits.fetch_add(1, Relaxed),
            (false, true) if !repeat => self.caching_misses.fetch_add(1, Relaxed),
            _ => 0,
        };
        match found {
            true => self.hits.fetch_add(1, Relaxed),
            false if !repeat => self.misses.fetch_add(1, Relaxed),
            false => 0,
        };
    }

    /// The counters with the cache's current size, free bytes and block count.
    pub(crate) fn stats(&self, size_bytes: u64, free_bytes: u64, blocks: u64) -> CacheStats {
        CacheStats {
            hits: self.hits.load(Relaxed),
            misses: self.misses.load(Relaxed),
            caching_hits: self.caching_hits.load(Relaxed),
            caching_misses: self.caching_misses.load(Relaxed),
            evictions: self.evictions.load(Relaxed),
            evicted_blocks: self.evicted_blocks.load(Relaxed),
            failed_inserts: self.failed_inserts.load(Relaxed),
            size_bytes,
            free_bytes,
            blocks,
        }
    }
}
