//! Bucket cache semantics: staging, placement, eviction, refusals, accounting, single flight.

use std::time::Duration;

use super::*;
use crate::cache::BlockCacheExt;

fn key(file_id: u64, offset: u64) -> BlockKey {
    BlockKey { file_id, offset }
}

/// Content that identifies its key, so a reader can tell a block from any other.
fn content(k: &BlockKey, len: usize) -> Bytes {
    let stamp = (k.file_id as u8).wrapping_mul(31) ^ (k.offset as u8);
    Bytes::from(
        (0..len)
            .map(|i| stamp.wrapping_add(i as u8))
            .collect::<Vec<u8>>(),
    )
}

/// Two size classes (1 KiB and 4 KiB) and `buckets` buckets of 16 KiB.
fn small(buckets: usize) -> BucketCache {
    BucketCache::new(BucketOptions {
        capacity_bytes: buckets * 16 * 1024,
        size_classes: vec![1024, 4096],
        writer_threads: 2,
        writer_queue_len: 64,
        ..BucketOptions::default()
    })
    .expect("a heap area cannot fail")
}

#[test]
fn a_block_is_readable_at_once_and_after_it_reaches_its_slot() {
    let cache = small(4);
    let k = key(1, 0);
    assert!(cache.insert(k, content(&k, 1000), false));
    assert_eq!(cache.get(&k, true, false), Some(content(&k, 1000)));
    cache.flush_writes();
    assert_eq!(cache.get(&k, true, false), Some(content(&k, 1000)));
    let stats = cache.stats();
    assert_eq!((stats.blocks, stats.size_bytes, stats.hits), (1, 1000, 2));
    assert!(
        cache.insert(k, content(&k, 10), false),
        "already cached: kept"
    );
    cache.flush_writes();
    assert_eq!(cache.get(&k, false, false), Some(content(&k, 1000)));
}

#[test]
fn blocks_too_large_for_every_class_are_refused() {
    let cache = small(4);
    assert!(!cache.insert(key(1, 0), content(&key(1, 0), 5000), false));
    assert_eq!(cache.stats().failed_inserts, 1);
    assert_eq!(
        BucketOptions::default().size_classes.last(),
        Some(&(513 * 1024))
    );
}

#[test]
fn evicting_blocks_and_files_frees_their_slots() {
    let cache = small(4);
    for offset in 0..10 {
        let k = key(2, offset);
        cache.insert(k, content(&k, 900), false);
        let k = key(3, offset);
        cache.insert(k, content(&k, 900), false);
    }
    cache.flush_writes();
    assert!(cache.evict(&key(2, 0)));
    assert!(!cache.evict(&key(2, 0)));
    assert_eq!(cache.evict_file(2), 9);
    let stats = cache.stats();
    assert_eq!((stats.blocks, stats.size_bytes), (10, 9000));
    for offset in 0..10 {
        let k = key(3, offset);
        assert_eq!(cache.get(&k, false, false), Some(content(&k, 900)));
    }
}

#[test]
fn a_full_area_evicts_least_recently_used_single_blocks_first() {
    // 4 buckets of 16 KiB: 64 slots of 1 KiB at most.
    let cache = small(4);
    for offset in 0..20 {
        let k = key(4, offset);
        cache.insert(k, content(&k, 1000), false);
    }
    cache.flush_writes();
    for offset in 0..20 {
        cache.get(&key(4, offset), false, false); // now multi-access
    }
    for offset in 0..200 {
        let k = key(5, offset);
        cache.insert(k, content(&k, 1000), false);
        cache.flush_writes();
    }
    let stats = cache.stats();
    assert!(stats.evictions > 0 && stats.evicted_blocks > 0, "{stats:?}");
    assert!(stats.size_bytes <= 64 * 1000);
    let multi_left = (0..20)
        .filter(|o| cache.get(&key(4, *o), false, false).is_some())
        .count();
    assert_eq!(multi_left, 20, "multi-access blocks under their share stay");
    for offset in 0..200 {
        let k = key(5, offset);
        if let Some(block) = cache.get(&k, false, false) {
            assert_eq!(
                block,
                content(&k, 1000),
                "a slot returned another block's bytes"
            );
        }
    }
    assert!(
        cache.get(&key(5, 199), false, false).is_some(),
        "the newest block is cached"
    );
}

#[test]
fn a_read_makes_a_block_recent_again() {
    let cache = small(4);
    for offset in 0..30 {
        let k = key(6, offset);
        cache.insert(k, content(&k, 1000), true);
        cache.flush_writes();
    }
    // The oldest block, read after later inserts: it is younger than the 29 inserted after it.
    assert!(cache.get(&key(6, 0), true, false).is_some());
    // 64 slots: the later inserts evict some 20 blocks, all older than block 0 by then.
    for offset in 30..75 {
        let k = key(6, offset);
        cache.insert(k, content(&k, 1000), true);
        cache.flush_writes();
    }
    assert!(cache.stats().evicted_blocks > 0);
    assert!(
        cache.get(&key(6, 1), false, false).is_none(),
        "the least recently used block went first"
    );
    assert!(
        cache.get(&key(6, 0), false, false).is_some(),
        "the block read after 29 later inserts outlived them"
    );
}

#[test]
fn every_insert_is_placed_or_counted_as_failed() {
    let cache = BucketCache::new(BucketOptions {
        capacity_bytes: 64 * 1024,
        size_classes: vec![1024, 4096],
        writer_threads: 1,
        writer_queue_len: 1,
        ..BucketOptions::default()
    })
    .unwrap();
    let mut accepted = 0;
    for offset in 0..500 {
        let k = key(6, offset);
        accepted += usize::from(cache.insert(k, content(&k, 1000), false));
    }
    cache.flush_writes();
    let stats = cache.stats();
    assert_eq!(accepted as u64 + stats.failed_inserts, 500, "{stats:?}");
    assert!(stats.size_bytes <= 64 * 1024);
}

#[test]
fn get_or_load_is_single_flight() {
    let cache = std::sync::Arc::new(small(4));
    let loads = std::sync::Arc::new(AtomicU64::new(0));
    let threads: Vec<_> = (0..6)
        .map(|_| {
            let (cache, loads) = (std::sync::Arc::clone(&cache), std::sync::Arc::clone(&loads));
            std::thread::spawn(move || {
                cache
                    .get_or_load(key(7, 0), false, || {
                        loads.fetch_add(1, Relaxed);
                        std::thread::sleep(Duration::from_millis(20));
                        Ok::<_, ()>(content(&key(7, 0), 500))
                    })
                    .unwrap()
            })
        })
        .collect();
    for t in threads {
        assert_eq!(t.join().unwrap(), content(&key(7, 0), 500));
    }
    assert_eq!(loads.load(Relaxed), 1);
    assert!(cache.slot_locks().stats().created <= 1);
}

#[cfg(not(miri))] // Miri cannot run mmap.
#[test]
fn a_mapped_file_area_works_like_the_heap_area() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bucket.cache");
    let cache = BucketCache::new(BucketOptions {
        capacity_bytes: 4 * 16 * 1024,
        size_classes: vec![1024, 4096],
        area: AreaKind::Mapped(path.clone()),
        ..BucketOptions::default()
    })
    .unwrap();
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 65_536);
    for offset in 0..30 {
        let k = key(8, offset);
        cache.insert(k, content(&k, 700), false);
    }
    cache.flush_writes();
    for offset in 0..30 {
        let k = key(8, offset);
        assert_eq!(cache.get(&k, false, false), Some(content(&k, 700)));
    }
    let missing_dir = BucketOptions {
        area: AreaKind::Mapped(dir.path().join("no/such/dir")),
        ..BucketOptions::default()
    };
    assert!(BucketCache::new(missing_dir).is_err());
}
