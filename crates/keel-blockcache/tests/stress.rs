//! Many threads read- and write-lock random ids under every pool; a per-id holder oracle checks
//! that a writer is always alone, and afterwards each pool's invariant holds: weak keeps nothing
//! once released, soft keeps at most its bound, strong keeps every id it saw.

#![cfg(not(shuttle))]

use std::sync::atomic::{AtomicI64, Ordering::SeqCst};
use std::thread;

use keel_blockcache::{IdReadWriteLock, PoolKind};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const IDS: usize = 64;

fn hammer(kind: PoolKind) -> IdReadWriteLock<u64> {
    let locks = IdReadWriteLock::<u64>::new(kind);
    // > 0: readers; -1: one writer.
    let holders: Vec<AtomicI64> = (0..IDS).map(|_| AtomicI64::new(0)).collect();
    let seed = keel_testkit::seed();
    let rounds = if std::env::var_os("KEEL_TEST_FAST").is_some() {
        500
    } else {
        2_000
    };
    thread::scope(|scope| {
        for t in 0..16u64 {
            let (locks, holders) = (&locks, &holders);
            scope.spawn(move || {
                let mut rng = StdRng::seed_from_u64(seed ^ (t << 20));
                for _ in 0..rounds {
                    let id = rng.random_range(0..IDS as u64);
                    let slot = &holders[id as usize];
                    if rng.random_ratio(1, 5) {
                        let _guard = locks.write(&id);
                        assert_eq!(
                            slot.swap(-1, SeqCst),
                            0,
                            "{kind:?}: writer not alone on {id}"
                        );
                        thread::yield_now();
                        slot.store(0, SeqCst);
                    } else {
                        let _guard = locks.read(&id);
                        assert!(
                            slot.fetch_add(1, SeqCst) >= 0,
                            "{kind:?}: reader beside a writer"
                        );
                        slot.fetch_sub(1, SeqCst);
                    }
                }
            });
        }
    });
    locks
}

#[test]
fn writers_are_alone_and_each_pool_keeps_its_promise() {
    let weak = hammer(PoolKind::Weak).stats();
    assert_eq!(weak.pooled, 0, "weak keeps nothing once released: {weak:?}");
    assert_eq!(weak.created, weak.reclaimed);

    let soft = hammer(PoolKind::Soft { max_entries: 32 }).stats();
    // Nothing is in use any more: every shard is back within its bound (32 / 16 shards).
    assert!(
        soft.pooled <= 32,
        "soft: above its bound with nothing in use: {soft:?}"
    );
    assert_eq!(soft.created - soft.reclaimed, soft.pooled as u64);

    let strong = hammer(PoolKind::Strong).stats();
    assert_eq!(
        (strong.pooled, strong.created, strong.reclaimed),
        (IDS, IDS as u64, 0)
    );

    let striped = hammer(PoolKind::Striped { stripes: 8 }).stats();
    assert_eq!((striped.pooled, striped.reclaimed), (8, 0));
}

/// Many threads insert, read and evict blocks of random sizes in an LRU cache with a running
/// evictor: every block read is exactly what was inserted for its key, and the cache never grows
/// past its hard limit.
#[test]
fn lru_reads_return_what_was_inserted_and_memory_stays_bounded() {
    use bytes::Bytes;
    use keel_blockcache::{BlockCache, BlockKey, LruBlockCache, LruOptions};

    let capacity = 200_000u64;
    let cache = LruBlockCache::new(LruOptions {
        capacity_bytes: capacity,
        ..LruOptions::default()
    });
    // The content of a block is a function of its key, so any reader can check what it got.
    let content = |key: &BlockKey| {
        let len = 100 + (key.offset as usize * 37) % 2_000;
        Bytes::from(vec![(key.file_id as u8) ^ (key.offset as u8); len])
    };
    let seed = keel_testkit::seed();
    let rounds = if std::env::var_os("KEEL_TEST_FAST").is_some() {
        1_000
    } else {
        5_000
    };
    thread::scope(|scope| {
        for t in 0..8u64 {
            let cache = &cache;
            scope.spawn(move || {
                let mut rng = StdRng::seed_from_u64(seed ^ (t << 24));
                for _ in 0..rounds {
                    let key = BlockKey {
                        file_id: rng.random_range(0..4),
                        offset: rng.random_range(0..500),
                    };
                    match rng.random_range(0..10) {
                        0..=4 => {
                            if let Some(block) = cache.get(&key, true, false) {
                                assert_eq!(block, content(&key), "wrong block for {key:?}");
                            }
                        }
                        5..=8 => {
                            cache.insert(key, content(&key), rng.random_ratio(1, 10));
                        }
                        _ => {
                            cache.evict(&key);
                        }
                    }
                    // The hard limit is checked without a lock: concurrent inserts may pass it
                    // together, by at most one block (≤ 2 100 bytes) per thread.
                    let size = cache.stats().size_bytes;
                    let bound = capacity as f64 * 1.2 + 8.0 * 2_100.0;
                    assert!(size as f64 <= bound, "cache grew to {size}");
                }
            });
        }
    });
    let stats = cache.stats();
    assert!(stats.hits > 0 && stats.evicted_blocks > 0, "{stats:?}");
}

/// A small bucket cache under 8 threads of reads, inserts and evictions, so slots are freed and
/// reused all the time: every block read is its own key's content (a reader never copies a slot
/// that was freed and refilled under it), and the area never overflows.
#[test]
fn bucket_slots_are_never_reused_under_a_reader() {
    use bytes::Bytes;
    use keel_blockcache::{BlockCache, BlockKey, BucketCache, BucketOptions};

    let cache = BucketCache::new(BucketOptions {
        capacity_bytes: 8 * 16 * 1024,
        size_classes: vec![1024, 4096],
        writer_threads: 2,
        writer_queue_len: 16,
        ..BucketOptions::default()
    })
    .expect("heap area");
    let content = |key: &BlockKey| {
        let len = 200 + (key.offset as usize * 131) % 3_800;
        let stamp = (key.file_id as u8).wrapping_mul(31) ^ (key.offset as u8);
        Bytes::from(
            (0..len)
                .map(|i| stamp.wrapping_add(i as u8))
                .collect::<Vec<u8>>(),
        )
    };
    let seed = keel_testkit::seed();
    let rounds = if std::env::var_os("KEEL_TEST_FAST").is_some() {
        1_000
    } else {
        4_000
    };
    thread::scope(|scope| {
        for t in 0..8u64 {
            let cache = &cache;
            scope.spawn(move || {
                let mut rng = StdRng::seed_from_u64(seed ^ (t << 28));
                for _ in 0..rounds {
                    let key = BlockKey {
                        file_id: rng.random_range(0..3),
                        offset: rng.random_range(0..300),
                    };
                    match rng.random_range(0..10) {
                        0..=5 => {
                            if let Some(block) = cache.get(&key, true, false) {
                                assert_eq!(
                                    block,
                                    content(&key),
                                    "a reader got another block's bytes"
                                );
                            }
                        }
                        6..=8 => {
                            cache.insert(key, content(&key), rng.random_ratio(1, 10));
                        }
                        _ => {
                            cache.evict(&key);
                        }
                    }
                }
            });
        }
    });
    cache.flush_writes();
    let stats = cache.stats();
    assert!(stats.size_bytes <= 8 * 16 * 1024, "{stats:?}");
    assert!(
        stats.hits > 0 && stats.evicted_blocks > 0,
        "the test must hit and evict: {stats:?}"
    );
}
