//! Heavy randomized stress with oracles, on real threads (the shuttle models in `model.rs`
//! explore interleavings; these push volume). Iteration counts shrink under `KEEL_TEST_FAST`.

#![cfg(not(shuttle))]

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::SeqCst};
use std::thread;
use std::time::Duration;

use bytes::Bytes;
use keel_mvcc::{LockMode, Mvcc, RowLockOptions, RowLocks};
use parking_lot::Mutex;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn scale(full: u64) -> u64 {
    if std::env::var_os("KEEL_TEST_FAST").is_some() {
        full / 4
    } else {
        full
    }
}

fn counter_row(i: usize) -> Bytes {
    Bytes::from(format!("counter-{i:02}"))
}

/// 64 threads increment 16 shared counters under exclusive row locks (sometimes two counters
/// at once through `lock_rows`), while others take shared locks; a per-row holder oracle checks
/// mutual exclusion, the counters must reach exact totals, and the table must end empty.
#[test]
fn sixty_four_threads_reach_exact_totals_under_row_locks() {
    const THREADS: usize = 64;
    const COUNTERS: usize = 16;
    let iterations = scale(400);
    let locks = Arc::new(RowLocks::new(RowLockOptions {
        wait: Duration::from_secs(60),
        ..RowLockOptions::default()
    }));
    let counters: Arc<Vec<AtomicU64>> =
        Arc::new((0..COUNTERS).map(|_| AtomicU64::new(0)).collect());
    // > 0: that many shared holders; -1: one exclusive holder.
    let holders: Arc<Vec<AtomicI64>> = Arc::new((0..COUNTERS).map(|_| AtomicI64::new(0)).collect());
    let expected: Arc<Vec<AtomicU64>> =
        Arc::new((0..COUNTERS).map(|_| AtomicU64::new(0)).collect());
    let base_seed = keel_testkit::seed();

    let threads: Vec<_> = (0..THREADS)
        .map(|t| {
            let (locks, counters, holders, expected) = (
                locks.clone(),
                counters.clone(),
                holders.clone(),
                expected.clone(),
            );
            thread::spawn(move || {
                let mut rng = StdRng::seed_from_u64(base_seed ^ t as u64);
                for _ in 0..iterations {
                    let a = rng.random_range(0..COUNTERS);
                    let b = rng.random_range(0..COUNTERS);
                    match rng.random_range(0..10) {
                        0..=1 => {
                            let guard = locks
                                .lock_row(counter_row(a), LockMode::Shared, None)
                                .unwrap();
                            assert!(
                                holders[a].fetch_add(1, SeqCst) >= 0,
                                "shared beside exclusive"
                            );
                            thread::yield_now();
                            holders[a].fetch_sub(1, SeqCst);
                            drop(guard);
                        }
                        2..=3 => {
                            let rows = [counter_row(a), counter_row(b)];
                            let guard = locks.lock_rows(rows, LockMode::Exclusive, None).unwrap();
                            let mut touched = vec![a, b];
                            touched.dedup();
                            for &i in &touched {
                                increment(&holders[i], &counters[i]);
                                expected[i].fetch_add(1, SeqCst);
                            }
                            drop(guard);
                        }
                        _ => {
                            let guard = locks
                                .lock_row(counter_row(a), LockMode::Exclusive, None)
                                .unwrap();
                            increment(&holders[a], &counters[a]);
                            expected[a].fetch_add(1, SeqCst);
                            drop(guard);
                        }
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    for i in 0..COUNTERS {
        assert_eq!(
            counters[i].load(SeqCst),
            expected[i].load(SeqCst),
            "counter {i}"
        );
    }
    let stats = locks.stats();
    assert_eq!(stats.rows, 0, "the lock table returns to empty");
    assert_eq!(stats.timeouts, 0);
}

/// A read-modify-write that loses updates unless it runs alone: load, yield, store.
fn increment(holder: &AtomicI64, counter: &AtomicU64) {
    assert_eq!(
        holder.compare_exchange(0, -1, SeqCst, SeqCst),
        Ok(0),
        "exclusive not alone"
    );
    let value = counter.load(SeqCst);
    thread::yield_now();
    counter.store(value + 1, SeqCst);
    holder.store(0, SeqCst);
}

/// Writers write a two-cell batch, then complete in random ways (complete, complete-and-wait,
/// drop) after random delays; readers check that everything at or below each read point they
/// observe is fully written (a consistent prefix, never half a batch).
#[test]
fn readers_always_see_a_consistent_prefix() {
    const WRITERS: usize = 16;
    const READERS: usize = 4;
    let per_writer = scale(4_000);
    let total = WRITERS as u64 * per_writer;
    let mvcc = Arc::new(Mvcc::new());
    let first: Arc<Vec<AtomicU64>> = Arc::new((0..=total).map(|_| AtomicU64::new(0)).collect());
    let second: Arc<Vec<AtomicU64>> = Arc::new((0..=total).map(|_| AtomicU64::new(0)).collect());
    let base_seed = keel_testkit::seed();

    let readers: Vec<_> = (0..READERS)
        .map(|_| {
            let (mvcc, first, second) = (mvcc.clone(), first.clone(), second.clone());
            thread::spawn(move || {
                let mut checked = 0u64;
                while checked < total {
                    let read_point = mvcc.read_point();
                    assert!(read_point >= checked, "the read point went backwards");
                    assert!(read_point <= mvcc.write_point());
                    for n in checked + 1..=read_point {
                        assert_eq!(first[n as usize].load(SeqCst), n, "write {n} not visible");
                        assert_eq!(second[n as usize].load(SeqCst), n, "half of batch {n}");
                    }
                    checked = read_point;
                    thread::yield_now();
                }
            })
        })
        .collect();
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let (mvcc, first, second) = (mvcc.clone(), first.clone(), second.clone());
            thread::spawn(move || {
                let mut rng = StdRng::seed_from_u64(base_seed ^ (w as u64) << 8);
                for _ in 0..per_writer {
                    let entry = mvcc.begin();
                    let n = entry.write_number();
                    first[n as usize].store(n, SeqCst);
                    if rng.random_ratio(1, 8) {
                        thread::yield_now();
                    }
                    second[n as usize].store(n, SeqCst);
                    match rng.random_range(0..10) {
                        0 => drop(entry),
                        1..=3 => {
                            mvcc.complete_and_wait(entry);
                            assert!(mvcc.read_point() >= n);
                        }
                        _ => {
                            mvcc.complete(entry);
                        }
                    }
                }
            })
        })
        .collect();
    for t in writers.into_iter().chain(readers) {
        t.join().unwrap();
    }
    assert_eq!(mvcc.read_point(), total);
    assert_eq!(mvcc.write_point(), total);
}

/// `begin_with` closures run in write-number order, whatever the thread interleaving.
#[test]
fn begin_with_closures_run_in_write_number_order() {
    let mvcc = Arc::new(Mvcc::new());
    let log = Arc::new(Mutex::new(Vec::new()));
    let per_thread = scale(2_000);
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let (mvcc, log) = (mvcc.clone(), log.clone());
            thread::spawn(move || {
                for _ in 0..per_thread {
                    let (entry, ()) = mvcc.begin_with(|n| log.lock().push(n));
                    mvcc.complete(entry);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let log = log.lock();
    assert_eq!(log.len() as u64, 8 * per_thread);
    assert!(
        log.windows(2).all(|w| w[0] + 1 == w[1]),
        "closures ran out of order"
    );
}

/// 64 threads block in `complete_and_wait` and `await_all` behind each other; none is lost.
#[test]
fn waiters_are_always_woken() {
    let mvcc = Arc::new(Mvcc::new());
    let per_thread = scale(1_000);
    let threads: Vec<_> = (0..64)
        .map(|t| {
            let mvcc = mvcc.clone();
            thread::spawn(move || {
                for i in 0..per_thread {
                    if (t + i as usize).is_multiple_of(50) {
                        mvcc.await_all();
                    } else {
                        let entry = mvcc.begin();
                        let n = entry.write_number();
                        mvcc.complete_and_wait(entry);
                        assert!(mvcc.read_point() >= n);
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(mvcc.read_point(), mvcc.write_point());
}
