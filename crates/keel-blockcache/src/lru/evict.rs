//! The eviction pass, as HBase's `LruBlockCache.evict()` does it: free down to the minimum size,
//! taking from each priority bucket up to how far it is over its share, the bucket with the
//! smallest overflow first (it frees what it can; the rest is spread over the buckets left),
//! least recently used blocks first within a bucket.

use keel_sync::atomic::Ordering::Relaxed;

use super::{Entry, Inner};
use crate::cache::{BlockKey, BlockPriority};

/// (last access, key, bytes) of one cached block, copied out of its shard.
type Candidate = (u64, BlockKey, u64);

impl Inner {
    /// Removes one block and updates the size; `None` if it was not cached.
    pub(crate) fn remove(&self, key: &BlockKey) -> Option<Entry> {
        let removed = self.shard(key).lock().remove(key);
        if let Some(entry) = &removed {
            self.size.fetch_sub(entry.block.len() as u64, Relaxed);
            self.blocks.fetch_sub(1, Relaxed);
        }
        removed
    }

    /// One eviction pass; returns the bytes freed. Shard locks are held only to copy a shard's
    /// candidates and for each single removal, so readers never wait on a whole pass.
    pub(crate) fn evict(&self) -> u64 {
        let size = self.size.load(Relaxed);
        let min_size = self.limit(self.options.min_factor);
        if size <= min_size {
            return 0;
        }
        self.counters.evictions.fetch_add(1, Relaxed);
        let bytes_to_free = size - min_size;
        let mut buckets: [Vec<Candidate>; 3] = [Vec::new(), Vec::new(), Vec::new()];
        for shard in self.shards.iter() {
            let shard = shard.lock();
            for (key, entry) in shard.iter() {
                let bucket = match entry.priority {
                    BlockPriority::Single => 0,
                    BlockPriority::Multi => 1,
                    BlockPriority::Memory => 2,
                };
                buckets[bucket].push((entry.last_access, *key, entry.block.len() as u64));
            }
        }
        let shares = [
            self.options.single_share,
            self.options.multi_share,
            self.options.memory_share,
        ];
        let mut order: Vec<(u64, usize)> = (0..3)
            .map(|i| {
                let total: u64 = buckets[i].iter().map(|c| c.2).sum();
                let target = self.limit(shares[i] * self.options.min_factor);
                (total.saturating_sub(target), i)
            })
            .collect();
        order.sort_unstable();
        for bucket in &mut buckets {
            bucket.sort_unstable();
        }
        let mut freed = 0u64;
        let mut cursors = [0usize; 3];
        for (left, (overflow, i)) in order.into_iter().enumerate() {
            let remaining_buckets = 3 - left as u64;
            let fair = (bytes_to_free.saturating_sub(freed)).div_ceil(remaining_buckets);
            let want = overflow.min(fair);
            freed += self.free_from(&buckets[i], &mut cursors[i], want);
        }
        // Still short (everything under its share, e.g. after in-memory growth): plain LRU.
        if freed < bytes_to_free {
            let mut rest: Vec<Candidate> = (0..3)
                .flat_map(|i| buckets[i][cursors[i]..].iter().copied())
                .collect();
            rest.sort_unstable();
            let mut cursor = 0;
            freed += self.free_from(&rest, &mut cursor, bytes_to_free - freed);
        }
        freed
    }

    /// Evicts candidates in order from `cursor` until `want` bytes are freed.
    fn free_from(&self, candidates: &[Candidate], cursor: &mut usize, want: u64) -> u64 {
        let mut freed = 0;
        while freed < want && *cursor < candidates.len() {
            let (_, key, _) = candidates[*cursor];
            *cursor += 1;
            if let Some(entry) = self.remove(&key) {
                freed += entry.block.len() as u64;
                self.counters.evicted_blocks.fetch_add(1, Relaxed);
            }
        }
        freed
    }
}
