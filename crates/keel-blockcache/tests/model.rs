//! Shuttle models of the id-lock pools (`cargo xtask model blockcache`): two acquirers of one id
//! share one lock object; a weak entry disappears when its last guard drops; the soft pool never
//! holds more than its bound plus the objects in use; a writer never runs beside a reader.

#![cfg(shuttle)]

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering::SeqCst};

use keel_blockcache::{IdReadWriteLock, PoolKind};
use shuttle::thread;

fn iterations() -> usize {
    keel_testkit::model_iterations(1_000)
}

fn check(model: fn()) {
    shuttle::check_random(model, iterations());
    shuttle::check_pct(model, iterations(), 3);
}

#[test]
fn two_readers_share_one_weak_object_which_then_disappears() {
    check(|| {
        let locks = Arc::new(IdReadWriteLock::<u64>::new(PoolKind::Weak));
        let readers: Vec<_> = (0..2)
            .map(|_| {
                let locks = Arc::clone(&locks);
                thread::spawn(move || {
                    let _guard = locks.read(&7);
                    thread::yield_now();
                })
            })
            .collect();
        for r in readers {
            r.join().unwrap();
        }
        let stats = locks.stats();
        assert_eq!(stats.pooled, 0, "the last guard removed the weak entry");
        assert_eq!(stats.created, stats.reclaimed);
        assert!(stats.created <= 2);
    });
}

#[test]
fn a_writer_is_never_beside_a_reader_in_any_pool() {
    check(|| {
        for kind in [
            PoolKind::Weak,
            PoolKind::Soft { max_entries: 1 },
            PoolKind::Striped { stripes: 1 },
        ] {
            let locks = Arc::new(IdReadWriteLock::<u64>::new(kind));
            let holders = Arc::new(AtomicI64::new(0));
            let threads: Vec<_> = [true, false, false]
                .into_iter()
                .map(|writer| {
                    let (locks, holders) = (Arc::clone(&locks), Arc::clone(&holders));
                    thread::spawn(move || {
                        if writer {
                            let _g = locks.write(&1);
                            assert_eq!(holders.swap(-1, SeqCst), 0, "writer beside a reader");
                            thread::yield_now();
                            holders.store(0, SeqCst);
                        } else {
                            let _g = locks.read(&1);
                            assert!(holders.fetch_add(1, SeqCst) >= 0, "reader beside a writer");
                            thread::yield_now();
                            holders.fetch_sub(1, SeqCst);
                        }
                    })
                })
                .collect();
            for t in threads {
                t.join().unwrap();
            }
        }
    });
}

#[test]
fn the_soft_pool_stays_within_its_bound_plus_objects_in_use() {
    check(|| {
        // A bound of 16 is one object per shard.
        let locks = Arc::new(IdReadWriteLock::<u64>::new(PoolKind::Soft {
            max_entries: 16,
        }));
        let threads: Vec<_> = (0..3u64)
            .map(|t| {
                let locks = Arc::clone(&locks);
                thread::spawn(move || {
                    for id in 0..12 {
                        let _g = locks.read(&(t * 100 + id));
                        thread::yield_now();
                        assert!(locks.stats().pooled <= 16 + 3, "above bound plus in use");
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let stats = locks.stats();
        assert_eq!(stats.created - stats.reclaimed, stats.pooled as u64);
        assert!(
            stats.pooled <= 16,
            "above its bound with nothing in use: {stats:?}"
        );
    });
}

/// A reader copies block A while another thread evicts A and inserts B, which the allocator puts
/// in A's freed slot (its free list is LIFO): the reader gets A's bytes or a miss, never B's.
#[test]
fn a_bucket_slot_is_never_freed_or_refilled_under_a_reader() {
    use bytes::Bytes;
    use keel_blockcache::{BlockCache, BlockKey, BucketCache, BucketOptions};

    check(|| {
        let cache = Arc::new(
            BucketCache::new(BucketOptions {
                capacity_bytes: 2 * 4 * 64,
                size_classes: vec![64],
                writer_threads: 1,
                writer_queue_len: 4,
                id_lock_pool: PoolKind::Weak,
                ..BucketOptions::default()
            })
            .expect("a heap area"),
        );
        let (a, b) = (
            BlockKey {
                file_id: 1,
                offset: 0,
            },
            BlockKey {
                file_id: 2,
                offset: 0,
            },
        );
        let block_a = Bytes::from(vec![0xAA; 24]);
        let block_b = Bytes::from(vec![0xBB; 24]);
        assert!(cache.insert(a, block_a.clone(), false));
        cache.flush_writes();
        let reader = {
            let (cache, block_a) = (Arc::clone(&cache), block_a.clone());
            thread::spawn(move || {
                for _ in 0..2 {
                    if let Some(block) = cache.get(&a, false, false) {
                        assert_eq!(block, block_a, "a reader got another block's bytes");
                    }
                }
            })
        };
        let replacer = {
            let cache = Arc::clone(&cache);
            thread::spawn(move || {
                cache.evict(&a);
                cache.insert(b, block_b, false);
                cache.flush_writes();
            })
        };
        reader.join().unwrap();
        replacer.join().unwrap();
    });
}
