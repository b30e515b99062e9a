//! The LRU cache's hit ratio on zipfian traces matches an independent, single-threaded
//! simulation of HBase's policy (priorities and shares, evict above 0.99 × capacity down to
//! 0.95 ×, buckets furthest over their share first, least recently used first) within 1 %.

#![cfg(not(shuttle))]

use std::collections::HashMap;

use bytes::Bytes;
use keel_blockcache::{BlockCache, BlockCacheExt, BlockKey, LruBlockCache, LruOptions};
use keel_testkit::Zipfian;
use rand::SeedableRng;
use rand::rngs::StdRng;

/// The simulation: one plain map, a counter for recency, eviction as HBase describes it.
struct Simulation {
    capacity: u64,
    blocks: HashMap<u64, (u8, u64, u64)>, // offset → (priority 0/1/2, last access, bytes)
    size: u64,
    clock: u64,
    hits: u64,
}

impl Simulation {
    fn access(&mut self, offset: u64, len: u64) {
        self.clock += 1;
        if let Some(block) = self.blocks.get_mut(&offset) {
            block.0 = block.0.max(1);
            block.1 = self.clock;
            self.hits += 1;
            return;
        }
        if self.size + len > self.capacity * 12 / 10 {
            return;
        }
        self.blocks.insert(offset, (0, self.clock, len));
        self.size += len;
        if self.size as f64 > self.capacity as f64 * 0.99 {
            self.evict();
        }
    }

    fn evict(&mut self) {
        let min = (self.capacity as f64 * 0.95) as u64;
        let to_free = self.size - min;
        let shares = [0.25, 0.50, 0.25];
        let mut buckets: Vec<Vec<(u64, u64, u64)>> = vec![Vec::new(); 3];
        for (&offset, &(priority, access, len)) in &self.blocks {
            buckets[priority as usize].push((access, offset, len));
        }
        let mut order: Vec<(u64, usize)> = (0..3)
            .map(|i| {
                let total: u64 = buckets[i].iter().map(|b| b.2).sum();
                (
                    total.saturating_sub((self.capacity as f64 * shares[i] * 0.95) as u64),
                    i,
                )
            })
            .collect();
        order.sort_unstable();
        let mut freed = 0;
        for (n, (overflow, i)) in order.into_iter().enumerate() {
            buckets[i].sort_unstable();
            let want = overflow.min((to_free.saturating_sub(freed)).div_ceil(3 - n as u64));
            let mut bucket_freed = 0;
            for &(_, offset, len) in &buckets[i] {
                if bucket_freed >= want {
                    break;
                }
                self.blocks.remove(&offset);
                bucket_freed += len;
            }
            freed += bucket_freed;
        }
        self.size -= freed;
        if freed < to_free {
            let mut rest: Vec<(u64, u64, u64)> = self
                .blocks
                .iter()
                .map(|(&o, &(_, a, l))| (a, o, l))
                .collect();
            rest.sort_unstable();
            for (_, offset, len) in rest {
                if freed >= to_free {
                    break;
                }
                self.blocks.remove(&offset);
                self.size -= len;
                freed += len;
            }
        }
    }
}

fn compare(items: u64, capacity_blocks: u64, reads: usize, seed: u64) {
    let zipf = Zipfian::new(0, items - 1);
    let mut rng = StdRng::seed_from_u64(seed);
    let trace: Vec<u64> = (0..reads).map(|_| zipf.next(&mut rng)).collect();
    let len = 1024u64;
    let options = LruOptions {
        capacity_bytes: capacity_blocks * len,
        eviction_thread: false,
        ..LruOptions::default()
    };
    let cache = LruBlockCache::new(options);
    let block = Bytes::from(vec![0u8; len as usize]);
    for &offset in &trace {
        let key = BlockKey { file_id: 1, offset };
        let _ = cache.get_or_load(key, false, || Ok::<_, ()>(block.clone()));
    }
    let mut sim = Simulation {
        capacity: capacity_blocks * len,
        blocks: HashMap::new(),
        size: 0,
        clock: 0,
        hits: 0,
    };
    for &offset in &trace {
        sim.access(offset, len);
    }
    let real = cache.stats().hits as f64 / reads as f64;
    let simulated = sim.hits as f64 / reads as f64;
    assert!(
        (real - simulated).abs() <= 0.01,
        "items {items}, cache {capacity_blocks}: cache {real:.4} vs simulation {simulated:.4}"
    );
}

#[test]
fn lru_hit_ratio_matches_the_simulation_within_one_percent() {
    let reads = if std::env::var_os("KEEL_TEST_FAST").is_some() {
        50_000
    } else {
        200_000
    };
    compare(100_000, 10_000, reads, 1);
    compare(10_000, 2_000, reads, 2);
    compare(50_000, 40_000, reads, 3);
}
