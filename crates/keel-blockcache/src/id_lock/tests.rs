//! Each pool's lifecycle and the lock semantics.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::*;

#[test]
fn readers_share_and_a_writer_excludes() {
    for kind in [
        PoolKind::Weak,
        PoolKind::Soft { max_entries: 8 },
        PoolKind::Strong,
        PoolKind::Striped { stripes: 4 },
    ] {
        let locks = Arc::new(IdReadWriteLock::<u64>::new(kind));
        let first = locks.read(&1);
        let second = locks.read(&1);
        let writer_in = Arc::new(AtomicBool::new(false));
        let writer = {
            let (locks, writer_in) = (Arc::clone(&locks), Arc::clone(&writer_in));
            std::thread::spawn(move || {
                let _guard = locks.write(&1);
                writer_in.store(true, Ordering::SeqCst);
            })
        };
        std::thread::sleep(Duration::from_millis(30));
        assert!(
            !writer_in.load(Ordering::SeqCst),
            "{kind:?}: writer ran beside readers"
        );
        drop((first, second));
        writer.join().unwrap();
        assert!(writer_in.load(Ordering::SeqCst));
    }
}

#[test]
fn weak_objects_live_only_while_held() {
    let locks = IdReadWriteLock::<u64>::new(PoolKind::Weak);
    {
        let a = locks.read(&1);
        let b = locks.read(&1);
        assert_eq!(
            locks.stats(),
            IdLockStats {
                created: 1,
                reclaimed: 0,
                pooled: 1
            },
            "shared"
        );
        drop((a, b));
    }
    assert_eq!(
        locks.stats(),
        IdLockStats {
            created: 1,
            reclaimed: 1,
            pooled: 0
        }
    );
    for _ in 0..10 {
        let _g = locks.read(&1);
    }
    assert_eq!(
        locks.stats().created,
        11,
        "the weak pool re-creates the object every time"
    );
}

#[test]
fn soft_objects_stay_until_the_bound_then_go_oldest_first_unless_in_use() {
    // 16 shards: a bound of 16 is one per shard, so any second id in a shard reclaims.
    let locks = IdReadWriteLock::<u64>::new(PoolKind::Soft { max_entries: 16 });
    for _ in 0..10 {
        let _g = locks.read(&1);
    }
    assert_eq!(locks.stats().created, 1, "kept between uses");
    let held: Vec<_> = (0..64).map(|id| locks.read(&id)).collect();
    let stats = locks.stats();
    assert_eq!(stats.pooled, 64, "objects in use are never reclaimed");
    drop(held);
    for id in 100..400 {
        let _g = locks.read(&id);
    }
    let stats = locks.stats();
    assert!(
        stats.pooled <= 16 + 16,
        "bound (one per shard) plus at most one newcomer per shard: {stats:?}"
    );
    assert_eq!(stats.created - stats.reclaimed, stats.pooled as u64);
}

#[test]
fn strong_objects_are_never_removed() {
    let locks = IdReadWriteLock::<u64>::new(PoolKind::Strong);
    for id in 0..100 {
        let _g = locks.write(&id);
    }
    for id in 0..100 {
        let _g = locks.read(&id);
    }
    assert_eq!(
        locks.stats(),
        IdLockStats {
            created: 100,
            reclaimed: 0,
            pooled: 100
        }
    );
}

#[test]
fn striped_locks_allocate_nothing_after_construction() {
    let locks = IdReadWriteLock::<u64>::new(PoolKind::Striped { stripes: 100 });
    assert_eq!(locks.stats().pooled, 128, "rounded up to a power of two");
    for id in 0..10_000 {
        let _g = locks.read(&id);
    }
    assert_eq!(locks.stats().created, 128);
    assert_eq!(locks.kind(), PoolKind::Striped { stripes: 100 });
    assert_eq!(format!("{:?}", locks.read(&1)), "IdReadGuard");
}

#[test]
fn default_pool_is_hbase_weak() {
    assert_eq!(PoolKind::default(), PoolKind::Weak);
}
