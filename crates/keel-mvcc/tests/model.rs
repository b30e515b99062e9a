//! Shuttle models of Mvcc and RowLocks. Built only with `RUSTFLAGS="--cfg shuttle"` (run them
//! with `cargo xtask model`), when keel-sync hands out shuttle's primitives, so every atomic and
//! lock operation below is a point where shuttle may switch threads. Each property runs under the
//! random and the PCT scheduler. A lost wake-up shows up as a deadlock, which shuttle reports
//! (its timed waits never time out). A failure prints a schedule that `shuttle::replay` re-runs.

#![cfg(shuttle)]

use std::time::Duration;

use bytes::Bytes;
use keel_mvcc::{LockMode, Mvcc, RowLockOptions, RowLocks};
use keel_sync::Arc;
use keel_sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering::SeqCst};
use shuttle::thread;

fn iterations() -> usize {
    keel_testkit::model_iterations(2_000)
}

fn check(name: &str, model: impl Fn() + Send + Sync + 'static) {
    let model = std::sync::Arc::new(model);
    let random = std::sync::Arc::clone(&model);
    eprintln!("model {name}: random scheduler");
    shuttle::check_random(move || random(), iterations());
    eprintln!("model {name}: PCT scheduler");
    shuttle::check_pct(move || model(), iterations(), 3);
}

/// Three writers complete in every possible order while an observer samples the read point:
/// it never passes a write whose data is not complete, and it ends at 3 whatever the order.
#[test]
fn read_point_never_passes_an_incomplete_write() {
    check("read point", || {
        let mvcc = Arc::new(Mvcc::new());
        let done: Arc<Vec<AtomicBool>> =
            Arc::new((0..=4).map(|_| AtomicBool::new(false)).collect());
        let writers: Vec<_> = (0..3)
            .map(|_| {
                let (mvcc, done) = (mvcc.clone(), done.clone());
                thread::spawn(move || {
                    let entry = mvcc.begin();
                    done[entry.write_number() as usize].store(true, SeqCst);
                    mvcc.complete(entry);
                })
            })
            .collect();
        let observer = {
            let (mvcc, done) = (mvcc.clone(), done.clone());
            thread::spawn(move || {
                for _ in 0..3 {
                    let read_point = mvcc.read_point();
                    for n in 1..=read_point {
                        assert!(done[n as usize].load(SeqCst), "read point passed write {n}");
                    }
                }
            })
        };
        for t in writers {
            t.join().unwrap();
        }
        observer.join().unwrap();
        assert_eq!(mvcc.read_point(), 3);
    });
}

/// A writer makes a two-cell batch visible with complete_and_wait; a reader that sees the read
/// point cover it sees both cells, never one.
#[test]
fn a_reader_never_sees_half_a_batch() {
    check("half batch", || {
        let mvcc = Arc::new(Mvcc::new());
        // [writer's number, first cell, second cell]
        let cells: Arc<[AtomicU64; 3]> =
            Arc::new([AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)]);
        let writer = {
            let (mvcc, cells) = (mvcc.clone(), cells.clone());
            thread::spawn(move || {
                let entry = mvcc.begin();
                cells[0].store(entry.write_number(), SeqCst);
                cells[1].store(entry.write_number(), SeqCst);
                cells[2].store(entry.write_number(), SeqCst);
                mvcc.complete_and_wait(entry);
            })
        };
        let other = {
            let mvcc = mvcc.clone();
            thread::spawn(move || mvcc.await_all())
        };
        let number = cells[0].load(SeqCst);
        if number != 0 && mvcc.read_point() >= number {
            assert_eq!(cells[1].load(SeqCst), number, "first cell missing");
            assert_eq!(cells[2].load(SeqCst), number, "second cell missing");
        }
        writer.join().unwrap();
        other.join().unwrap();
        assert_eq!(mvcc.read_point(), 2);
    });
}

/// Waiters parked in complete_and_wait behind a slow writer are always woken (a lost wake-up
/// would be a deadlock here).
#[test]
fn no_lost_wake_up_for_waiters() {
    check("wake-up", || {
        let mvcc = Arc::new(Mvcc::new());
        let first = mvcc.begin();
        let waiters: Vec<_> = (0..2)
            .map(|_| {
                let mvcc = mvcc.clone();
                thread::spawn(move || {
                    let entry = mvcc.begin();
                    let n = entry.write_number();
                    mvcc.complete_and_wait(entry);
                    assert!(mvcc.read_point() >= n);
                })
            })
            .collect();
        mvcc.complete(first);
        for t in waiters {
            t.join().unwrap();
        }
        assert_eq!(mvcc.read_point(), 3);
    });
}

/// Two exclusive and one shared locker on one row: never an exclusive holder beside anyone,
/// every queued request is eventually granted (no lost wake-up), and the table ends empty.
#[test]
fn row_locks_exclude_wake_and_clean_up() {
    check("row locks", || {
        let locks = Arc::new(RowLocks::new(RowLockOptions {
            wait: Duration::from_secs(3600),
            shards: 1,
        }));
        let holders = Arc::new(AtomicI64::new(0));
        let counter = Arc::new(AtomicU64::new(0));
        let threads: Vec<_> = [LockMode::Exclusive, LockMode::Exclusive, LockMode::Shared]
            .into_iter()
            .map(|mode| {
                let (locks, holders, counter) = (locks.clone(), holders.clone(), counter.clone());
                thread::spawn(move || {
                    let guard = locks
                        .lock_row(Bytes::from_static(b"r"), mode, None)
                        .unwrap();
                    match mode {
                        LockMode::Exclusive => {
                            assert_eq!(holders.swap(-1, SeqCst), 0, "exclusive beside a holder");
                            let value = counter.load(SeqCst);
                            thread::yield_now();
                            counter.store(value + 1, SeqCst);
                            holders.store(0, SeqCst);
                        }
                        LockMode::Shared => {
                            assert!(holders.fetch_add(1, SeqCst) >= 0, "shared beside exclusive");
                            thread::yield_now();
                            holders.fetch_sub(1, SeqCst);
                        }
                    }
                    drop(guard);
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(counter.load(SeqCst), 2);
        assert_eq!(locks.stats().rows, 0);
    });
}

/// Two batches lock overlapping rows in opposite orders; sorted acquisition means they never
/// deadlock, and the table ends empty.
#[test]
fn overlapping_batches_never_deadlock() {
    check("batches", || {
        let locks = Arc::new(RowLocks::new(RowLockOptions {
            wait: Duration::from_secs(3600),
            shards: 2,
        }));
        let batches = [["a", "b", "c"], ["c", "b", "a"]];
        let threads: Vec<_> = batches
            .into_iter()
            .map(|rows| {
                let locks = locks.clone();
                thread::spawn(move || {
                    let rows = rows.map(|r| Bytes::from_static(r.as_bytes()));
                    let guard = locks.lock_rows(rows, LockMode::Exclusive, None).unwrap();
                    assert_eq!(guard.len(), 3);
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(locks.stats().rows, 0);
    });
}
