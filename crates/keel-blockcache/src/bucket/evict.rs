//! `free_space`: when a writer finds no free slot, evict down to `min_factor` of the area by
//! priority groups, as the LRU cache does: buckets furthest over their share first, least
//! recently used first. Each eviction takes the slot's write lock, so it waits for readers.

use keel_sync::atomic::Ordering::Relaxed;

use super::Inner;
use crate::cache::{BlockKey, BlockPriority};

impl Inner {
    pub(crate) fn free_space(&self) {
        self.counters.evictions.fetch_add(1, Relaxed);
        let (used, area) = {
            let allocator = self.allocator.lock();
            (allocator.used_bytes() as u64, allocator.area_len() as u64)
        };
        let target = (area as f64 * self.options.min_factor) as u64;
        let to_free = used.saturating_sub(target).max(1);
        // (last access, key, generation, slot bytes) per priority bucket.
        let mut buckets: [Vec<(u64, BlockKey, u64, u64)>; 3] = [Vec::new(), Vec::new(), Vec::new()];
        for shard in self.backing.iter() {
            for (key, entry) in shard.lock().iter() {
                let bucket = match entry.priority {
                    BlockPriority::Single => 0,
                    BlockPriority::Multi => 1,
                    BlockPriority::Memory => 2,
                };
                let slot = self
                    .allocator
                    .lock()
                    .slot_size(entry.len)
                    .unwrap_or(entry.len) as u64;
                buckets[bucket].push((entry.last_access, *key, entry.generation, slot));
            }
        }
        let mut order: Vec<(u64, usize)> = (0..3)
            .map(|i| {
                let total: u64 = buckets[i].iter().map(|b| b.3).sum();
                let share = (target as f64 * self.options.shares[i]) as u64;
                (total.saturating_sub(share), i)
            })
            .collect();
        order.sort_unstable();
        let mut freed = 0;
        for (n, (overflow, i)) in order.into_iter().enumerate() {
            buckets[i].sort_unstable();
            let want = overflow.min(to_free.saturating_sub(freed).div_ceil(3 - n as u64));
            let mut bucket_freed = 0;
            for &(_, key, generation, slot) in &buckets[i] {
                if bucket_freed >= want {
                    break;
                }
                if self.remove_entry(&key, Some(generation)).is_some() {
                    bucket_freed += slot;
                    self.counters.evicted_blocks.fetch_add(1, Relaxed);
                }
            }
            freed += bucket_freed;
        }
        if freed < to_free {
            let mut rest: Vec<(u64, BlockKey, u64, u64)> = buckets.into_iter().flatten().collect();
            rest.sort_unstable();
            for (_, key, generation, slot) in rest {
                if freed >= to_free {
                    break;
                }
                if self.remove_entry(&key, Some(generation)).is_some() {
                    freed += slot;
                    self.counters.evicted_blocks.fetch_add(1, Relaxed);
                }
            }
        }
    }
}
