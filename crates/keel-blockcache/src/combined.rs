//! [`CombinedBlockCache`]: HBase's two-tier arrangement. Index and bloom blocks (small, hot,
//! needed for every read) live in the LRU cache; data blocks in the bucket cache. One place counts
//! hits and misses per tier and per block type.

use bytes::Bytes;
use keel_sync::atomic::{AtomicU64, Ordering::Relaxed};

use crate::bucket::BucketCache;
use crate::cache::{BlockCache, BlockKey, CacheStats};
use crate::id_lock::{IdReadWriteLock, PoolKind};
use crate::lru::LruBlockCache;

/// What a block holds, which decides its tier.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BlockKind {
    /// Cells: the bucket cache (L2).
    Data,
    /// Block index: the LRU cache (L1).
    Index,
    /// Bloom filter: the LRU cache (L1).
    Bloom,
}

impl BlockKind {
    fn index(self) -> usize {
        match self {
            BlockKind::Data => 0,
            BlockKind::Index => 1,
            BlockKind::Bloom => 2,
        }
    }
}

/// Hits and misses of one block kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KindStats {
    /// Lookups that found the block.
    pub hits: u64,
    /// Lookups that did not.
    pub misses: u64,
}

/// An LRU cache for index and bloom blocks in front of a bucket cache for data blocks.
#[derive(Debug)]
pub struct CombinedBlockCache {
    l1: LruBlockCache,
    l2: BucketCache,
    kind_hits: [AtomicU64; 3],
    kind_misses: [AtomicU64; 3],
    load_locks: IdReadWriteLock<BlockKey>,
}

impl CombinedBlockCache {
    /// Combines an LRU cache (L1) and a bucket cache (L2).
    pub fn new(l1: LruBlockCache, l2: BucketCache) -> CombinedBlockCache {
        CombinedBlockCache {
            l1,
            l2,
            kind_hits: Default::default(),
            kind_misses: Default::default(),
            load_locks: IdReadWriteLock::new(PoolKind::Soft {
                max_entries: 10_000,
            }),
        }
    }

    /// The L1 (index and bloom blocks) and L2 (data blocks) caches, for their own statistics.
    pub fn tiers(&self) -> (&LruBlockCache, &BucketCache) {
        (&self.l1, &self.l2)
    }

    /// Looks a block of a known kind up in its tier, counting the result for that kind.
    pub fn get_kind(
        &self,
        key: &BlockKey,
        kind: BlockKind,
        caching: bool,
        repeat: bool,
    ) -> Option<Bytes> {
        let found = match kind {
            BlockKind::Data => self.l2.get(key, caching, repeat),
            BlockKind::Index | BlockKind::Bloom => self.l1.get(key, caching, repeat),
        };
        if found.is_some() {
            self.kind_hits[kind.index()].fetch_add(1, Relaxed);
        } else if !repeat {
            self.kind_misses[kind.index()].fetch_add(1, Relaxed);
        }
        found
    }

    /// Caches a block in its kind's tier.
    pub fn insert_kind(
        &self,
        key: BlockKey,
        block: Bytes,
        kind: BlockKind,
        in_memory: bool,
    ) -> bool {
        match kind {
            BlockKind::Data => self.l2.insert(key, block, in_memory),
            BlockKind::Index | BlockKind::Bloom => self.l1.insert(key, block, in_memory),
        }
    }

    /// Hits and misses of one kind of block.
    pub fn kind_stats(&self, kind: BlockKind) -> KindStats {
        KindStats {
            hits: self.kind_hits[kind.index()].load(Relaxed),
            misses: self.kind_misses[kind.index()].load(Relaxed),
        }
    }
}

impl BlockCache for CombinedBlockCache {
    /// Without a kind: L1 first, then L2 (a miss counts once).
    fn get(&self, key: &BlockKey, caching: bool, repeat: bool) -> Option<Bytes> {
        self.l1
            .get(key, caching, true)
            .or_else(|| self.l2.get(key, caching, repeat))
    }

    /// Without a kind the block is taken for a data block (the common case).
    fn insert(&self, key: BlockKey, block: Bytes, in_memory: bool) -> bool {
        self.l2.insert(key, block, in_memory)
    }

    fn evict(&self, key: &BlockKey) -> bool {
        let l1 = self.l1.evict(key);
        self.l2.evict(key) || l1
    }

    fn evict_file(&self, file_id: u64) -> usize {
        self.l1.evict_file(file_id) + self.l2.evict_file(file_id)
    }

    /// Both tiers added up.
    fn stats(&self) -> CacheStats {
        let (a, b) = (self.l1.stats(), self.l2.stats());
        CacheStats {
            hits: a.hits + b.hits,
            misses: b.misses,
            caching_hits: a.caching_hits + b.caching_hits,
            caching_misses: b.caching_misses,
            evictions: a.evictions + b.evictions,
            evicted_blocks: a.evicted_blocks + b.evicted_blocks,
            failed_inserts: a.failed_inserts + b.failed_inserts,
            size_bytes: a.size_bytes + b.size_bytes,
            free_bytes: a.free_bytes + b.free_bytes,
            blocks: a.blocks + b.blocks,
        }
    }

    fn id_locks(&self) -> &IdReadWriteLock<BlockKey> {
        &self.load_locks
    }
}

#[cfg(all(test, not(shuttle)))]
mod tests {
    use super::*;
    use crate::bucket::BucketOptions;
    use crate::cache::BlockCacheExt;
    use crate::lru::LruOptions;

    fn combined() -> CombinedBlockCache {
        let l1 = LruBlockCache::new(LruOptions {
            capacity_bytes: 1 << 20,
            eviction_thread: false,
            ..LruOptions::default()
        });
        let l2 = BucketCache::new(BucketOptions {
            capacity_bytes: 8 << 20,
            ..BucketOptions::default()
        })
        .expect("a heap area cannot fail");
        CombinedBlockCache::new(l1, l2)
    }

    #[test]
    fn kinds_go_to_their_tier_and_are_counted_apart() {
        let cache = combined();
        let data = BlockKey {
            file_id: 1,
            offset: 0,
        };
        let index = BlockKey {
            file_id: 1,
            offset: 65_536,
        };
        assert!(cache.insert_kind(data, Bytes::from_static(b"cells"), BlockKind::Data, false));
        assert!(cache.insert_kind(index, Bytes::from_static(b"index"), BlockKind::Index, false));
        cache.tiers().1.flush_writes();
        assert_eq!(cache.tiers().0.stats().blocks, 1, "index block in L1");
        assert_eq!(cache.tiers().1.stats().blocks, 1, "data block in L2");
        assert_eq!(
            cache.get_kind(&data, BlockKind::Data, true, false).unwrap(),
            Bytes::from_static(b"cells")
        );
        assert!(
            cache
                .get_kind(&index, BlockKind::Data, true, false)
                .is_none(),
            "looked up in the wrong tier"
        );
        assert!(
            cache
                .get_kind(
                    &BlockKey {
                        file_id: 9,
                        offset: 0
                    },
                    BlockKind::Bloom,
                    true,
                    false
                )
                .is_none()
        );
        assert_eq!(
            cache.kind_stats(BlockKind::Data),
            KindStats { hits: 1, misses: 1 }
        );
        assert_eq!(
            cache.kind_stats(BlockKind::Bloom),
            KindStats { hits: 0, misses: 1 }
        );
        // Without a kind, both tiers are searched.
        assert!(cache.get(&index, false, false).is_some());
        assert!(cache.get(&data, false, false).is_some());
        assert_eq!(cache.stats().blocks, 2);
        assert_eq!(cache.evict_file(1), 2);
        assert_eq!(cache.stats().blocks, 0);
    }

    #[test]
    fn get_or_load_goes_to_l2_once() {
        let cache = combined();
        let key = BlockKey {
            file_id: 2,
            offset: 0,
        };
        let mut loads = 0;
        for _ in 0..3 {
            let block = cache.get_or_load(key, false, || {
                loads += 1;
                Ok::<_, ()>(Bytes::from_static(b"loaded"))
            });
            assert_eq!(block.unwrap(), Bytes::from_static(b"loaded"));
        }
        assert_eq!(loads, 1);
        assert!(cache.evict(&key));
    }
}
