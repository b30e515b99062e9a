//! The [`BlockCache`] interface every cache implements, block keys and priorities, statistics,
//! and single-flight loading.

use std::fmt;

use bytes::Bytes;
use keel_sync::StripedCounter;
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
    /// Counted by every lookup of every reader: striped, or they would be one cache line that
    /// every hit pulls between cores.
    hits: StripedCounter,
    misses: StripedCounter,
    caching_hits: StripedCounter,
    caching_misses: StripedCounter,
    pub(crate) evictions: AtomicU64,
    pub(crate) evicted_blocks: AtomicU64,
    pub(crate) failed_inserts: AtomicU64,
}

impl CacheCounters {
    pub(crate) fn new() -> CacheCounters {
        CacheCounters {
            hits: StripedCounter::new(),
            misses: StripedCounter::new(),
            caching_hits: StripedCounter::new(),
            caching_misses: StripedCounter::new(),
            evictions: AtomicU64::new(0),
            evicted_blocks: AtomicU64::new(0),
            failed_inserts: AtomicU64::new(0),
        }
    }

    /// Counts one lookup; a repeat lookup's miss is not counted again.
    pub(crate) fn count_lookup(&self, found: bool, caching: bool, repeat: bool) {
        match (found, caching) {
            (true, true) => self.caching_hits.add(1),
            (false, true) if !repeat => self.caching_misses.add(1),
            _ => {}
        }
        match found {
            true => self.hits.add(1),
            false if !repeat => self.misses.add(1),
            false => {}
        }
    }

    /// The counters with the cache's current size, free bytes and block count.
    pub(crate) fn stats(&self, size_bytes: u64, free_bytes: u64, blocks: u64) -> CacheStats {
        CacheStats {
            hits: self.hits.sum(),
            misses: self.misses.sum(),
            caching_hits: self.caching_hits.sum(),
            caching_misses: self.caching_misses.sum(),
            evictions: self.evictions.load(Relaxed),
            evicted_blocks: self.evicted_blocks.load(Relaxed),
            failed_inserts: self.failed_inserts.load(Relaxed),
            size_bytes,
            free_bytes,
            blocks,
        }
    }
}

/// Hashes [`BlockKey`]s for the caches' shards and maps: two multiplies and a final mix, seeded
/// per cache. SipHash (std's default) was a sixth of a cache hit, taken twice (shard, then map).
/// A block key names a file and an offset that Keel chose, never a client, so hash flooding is
/// not a risk here; the seed still keeps two caches from sharing a layout.
#[derive(Debug, Clone, Copy)]
pub(crate) struct KeyHasher {
    seed: u64,
}

impl KeyHasher {
    pub(crate) fn new() -> KeyHasher {
        use std::hash::BuildHasher;
        KeyHasher {
            seed: std::collections::hash_map::RandomState::new().hash_one(0u64),
        }
    }
}

impl std::hash::BuildHasher for KeyHasher {
    type Hasher = KeyHash;

    fn build_hasher(&self) -> KeyHash {
        KeyHash(self.seed)
    }
}

/// The state of one [`KeyHasher`] hash.
#[derive(Debug)]
pub(crate) struct KeyHash(u64);

impl std::hash::Hasher for KeyHash {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }

    #[inline]
    fn write_u64(&mut self, word: u64) {
        self.0 = (self.0 ^ word)
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
            .rotate_left(31);
    }

    /// MurmurHash3's finalizer: every input bit reaches every output bit, so keys that differ
    /// only in high bits (block offsets are multiples of the block size) spread over the low
    /// bits the maps index by, and over the high bits shards are chosen by.
    #[inline]
    fn finish(&self) -> u64 {
        let mut h = self.0;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        h ^ (h >> 33)
    }
}

#[cfg(all(test, not(shuttle)))]
mod key_hasher_tests {
    use std::hash::BuildHasher;

    use super::*;

    #[test]
    fn block_aligned_offsets_spread_over_low_and_high_bits() {
        let hasher = KeyHasher::new();
        let (mut low, mut high) = ([0u32; 16], [0u32; 16]);
        for file_id in 0..4u64 {
            for block in 0..1024u64 {
                let h = hasher.hash_one(BlockKey {
                    file_id,
                    offset: block * 65_536,
                });
                low[(h & 15) as usize] += 1;
                high[((h >> 48) & 15) as usize] += 1;
            }
        }
        // 4096 keys over 16 buckets: 256 each on average.
        for counts in [low, high] {
            assert!(
                counts.iter().all(|&c| (160..=352).contains(&c)),
                "{counts:?}"
            );
        }
    }
}
