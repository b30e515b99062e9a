//! LRU semantics: counting, promotion, eviction by share and recency, refusals, single flight.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use super::*;
use crate::cache::BlockCacheExt;

fn key(file_id: u64, offset: u64) -> BlockKey {
    BlockKey { file_id, offset }
}

fn block(len: usize, fill: u8) -> Bytes {
    Bytes::from(vec![fill; len])
}

/// Deterministic: eviction runs inline in `insert`.
fn cache(capacity_bytes: u64) -> LruBlockCache {
    LruBlockCache::new(LruOptions {
        capacity_bytes,
        eviction_thread: false,
        ..LruOptions::default()
    })
}

#[test]
fn hits_misses_and_repeat_lookups_are_counted_like_hbase() {
    let cache = cache(1 << 20);
    assert!(cache.get(&key(1, 0), true, false).is_none());
    assert!(cache.get(&key(1, 0), true, true).is_none(), "repeat");
    assert!(cache.insert(key(1, 0), block(100, 1), false));
    assert_eq!(cache.get(&key(1, 0), true, false).unwrap(), block(100, 1));
    assert!(cache.get(&key(1, 0), false, false).is_some());
    let stats = cache.stats();
    assert_eq!(
        (
            stats.hits,
            stats.misses,
            stats.caching_hits,
            stats.caching_misses
        ),
        (2, 1, 1, 1)
    );
    assert_eq!(
        (stats.blocks, stats.size_bytes, stats.free_bytes),
        (1, 100, (1 << 20) - 100)
    );
    assert!((stats.hit_ratio() - 2.0 / 3.0).abs() < 1e-9);
    assert!((stats.caching_hit_ratio() - 0.5).abs() < 1e-9);
    assert_eq!(CacheStats::default().hit_ratio(), 0.0);
}

#[test]
fn a_second_read_promotes_and_eviction_takes_single_access_blocks_first() {
    let cache = cache(100_000);
    // 40 blocks of 1 KB read twice (multi: 40 KB, under its 47.5 KB target = 50 % × 0.95), then
    // single-access blocks until eviction.
    for offset in 0..40 {
        cache.insert(key(1, offset), block(1_000, 1), false);
        cache.get(&key(1, offset), true, false);
    }
    for offset in 0..70 {
        cache.insert(key(2, offset), block(1_000, 2), false);
    }
    let stats = cache.stats();
    assert!(
        stats.evictions > 0 && stats.size_bytes <= 99_000,
        "{stats:?}"
    );
    // Multi blocks (50 KB) are within their 50 % share; single ones were over 25 % and went.
    let multi_left = (0..40)
        .filter(|o| cache.get(&key(1, *o), false, false).is_some())
        .count();
    assert_eq!(
        multi_left, 40,
        "multi-access blocks under their share are kept"
    );
    // And the oldest single-access blocks went first.
    assert!(cache.get(&key(2, 0), false, false).is_none());
    assert!(cache.get(&key(2, 69), false, false).is_some());
}

#[test]
fn a_read_makes_a_block_recent_again() {
    let cache = cache(100_000);
    for offset in 0..30 {
        cache.insert(key(7, offset), block(1_000, 7), true);
    }
    // The oldest block, read after later inserts: it is younger than the 29 inserted after it.
    assert!(cache.get(&key(7, 0), true, false).is_some());
    for offset in 30..110 {
        cache.insert(key(7, offset), block(1_000, 7), true);
    }
    assert!(cache.stats().evictions > 0);
    assert!(
        cache.get(&key(7, 1), false, false).is_none(),
        "the least recently used block went first"
    );
    assert!(
        cache.get(&key(7, 0), false, false).is_some(),
        "the block read after 29 later inserts outlived them"
    );
}

#[test]
fn in_memory_blocks_have_their_own_share() {
    let cache = cache(100_000);
    for offset in 0..40 {
        cache.insert(key(3, offset), block(1_000, 3), true);
    }
    for offset in 0..80 {
        cache.insert(key(4, offset), block(1_000, 4), false);
    }
    let memory_left = (0..40)
        .filter(|o| cache.get(&key(3, *o), false, false).is_some())
        .count();
    assert!(
        memory_left >= 23,
        "in-memory blocks keep about their 25 % share: {memory_left}"
    );
    assert!(cache.stats().size_bytes <= 99_000);
}

#[test]
fn evicting_one_block_or_a_whole_file() {
    let cache = cache(1 << 20);
    for offset in 0..10 {
        cache.insert(key(5, offset), block(10, 5), false);
        cache.insert(key(6, offset), block(10, 6), false);
    }
    assert!(cache.evict(&key(5, 0)));
    assert!(!cache.evict(&key(5, 0)));
    assert_eq!(cache.evict_file(5), 9);
    assert_eq!(cache.stats().blocks, 10);
    assert_eq!(cache.stats().size_bytes, 100);
}

#[test]
fn oversized_blocks_are_refused_and_existing_blocks_kept() {
    let cache = LruBlockCache::new(LruOptions {
        max_block_size: 100,
        eviction_thread: false,
        ..LruOptions::default()
    });
    assert!(!cache.insert(key(1, 0), block(101, 0), false));
    assert_eq!(cache.stats().failed_inserts, 1);
    assert!(cache.insert(key(1, 1), block(10, 1), false));
    assert!(
        cache.insert(key(1, 1), block(10, 9), false),
        "already cached: kept"
    );
    assert_eq!(cache.get(&key(1, 1), false, false).unwrap(), block(10, 1));
}

#[test]
fn inserts_above_the_hard_limit_are_refused() {
    // With the evictor thread on but slower than the inserts, the hard limit is what bounds
    // memory: above 1.2 × capacity inserts fail instead of growing the cache.
    let cache = LruBlockCache::new(LruOptions {
        capacity_bytes: 10_000,
        ..LruOptions::default()
    });
    let mut refused = 0;
    for offset in 0..100 {
        refused += usize::from(!cache.insert(key(1, offset), block(1_000, 1), false));
        assert!(cache.stats().size_bytes <= 12_000, "above the hard limit");
    }
    std::thread::sleep(Duration::from_millis(100));
    let stats = cache.stats();
    assert!(stats.size_bytes <= 12_000);
    assert_eq!(stats.failed_inserts as usize, refused);
    assert_eq!(
        cache.evict_now(),
        0,
        "the evictor already brought it under the minimum"
    );
}

/// Through `Arc<dyn BlockCache>`, as a user of the trait object (keel-region) calls it: the
/// same single flight, typed errors, and the object-safe call underneath.
#[test]
fn get_or_load_runs_the_loader_once_per_key() {
    let cache: std::sync::Arc<dyn BlockCache> = std::sync::Arc::new(cache(1 << 20));
    let loads = std::sync::Arc::new(AtomicUsize::new(0));
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let (cache, loads) = (std::sync::Arc::clone(&cache), std::sync::Arc::clone(&loads));
            std::thread::spawn(move || {
                cache
                    .get_or_load(key(9, 0), false, || {
                        loads.fetch_add(1, Ordering::SeqCst);
                        std::thread::sleep(Duration::from_millis(30));
                        Ok::<_, String>(block(64, 9))
                    })
                    .unwrap()
            })
        })
        .collect();
    for t in threads {
        assert_eq!(t.join().unwrap(), block(64, 9));
    }
    assert_eq!(loads.load(Ordering::SeqCst), 1, "single flight");
    let err = cache.get_or_load(key(9, 1), false, || Err::<Bytes, _>("disk error"));
    assert_eq!(err, Err("disk error"));
    assert!(
        cache.get(&key(9, 1), false, false).is_none(),
        "a failed load caches nothing"
    );
    let failed = cache.get_or_load_with(key(9, 2), false, &mut || Err(crate::LoadFailed));
    assert_eq!(failed, Err(crate::LoadFailed));
    let loaded = cache.get_or_load_with(key(9, 2), false, &mut || Ok(block(8, 2)));
    assert_eq!(loaded, Ok(block(8, 2)));
    assert_eq!(cache.get(&key(9, 2), false, false), Some(block(8, 2)));
}

#[test]
fn a_block_stays_valid_for_its_reader_after_eviction() {
    let cache = cache(1 << 20);
    cache.insert(key(1, 0), block(1_000, 7), false);
    let held = cache.get(&key(1, 0), false, false).unwrap();
    cache.evict_file(1);
    assert_eq!(held, block(1_000, 7));
}
