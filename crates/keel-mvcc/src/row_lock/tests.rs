//! Row-lock semantics: modes, FIFO fairness, timeouts and deadlines, multi-row requests, and
//! the table returning to empty.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use super::*;

fn row(name: &str) -> Bytes {
    Bytes::copy_from_slice(name.as_bytes())
}

fn locks_with_wait(wait: Duration) -> Arc<RowLocks> {
    Arc::new(RowLocks::new(RowLockOptions { wait, shards: 4 }))
}

/// Spawns a thread that locks `name` and reports once it holds the lock; returns its handle.
fn locker(
    locks: &Arc<RowLocks>,
    name: &'static str,
    mode: LockMode,
    hold: Duration,
) -> (
    thread::JoinHandle<Result<Instant, RowLockError>>,
    Arc<AtomicBool>,
) {
    let locks = Arc::clone(locks);
    let got = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&got);
    let handle = thread::spawn(move || {
        let guard = locks.lock_row(row(name), mode, None)?;
        let at = Instant::now();
        flag.store(true, Ordering::SeqCst);
        thread::sleep(hold);
        drop(guard);
        Ok(at)
    });
    (handle, got)
}

fn wait_for_queue(locks: &RowLocks, waits: u64) {
    let start = Instant::now();
    while locks.stats().waits < waits {
        assert!(start.elapsed() < Duration::from_secs(10), "nobody queued");
        thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn uncontended_lock_leaves_nothing_behind() {
    let locks = RowLocks::default();
    for mode in [LockMode::Shared, LockMode::Exclusive] {
        let guard = locks.lock_row(row("r"), mode, None).unwrap();
        assert_eq!(guard.mode(), mode);
        assert_eq!(guard.rows().collect::<Vec<_>>(), [&row("r")]);
        assert_eq!((guard.len(), guard.is_empty()), (1, false));
        assert_eq!(locks.stats().rows, 1);
        drop(guard);
        assert_eq!(
            locks.stats(),
            RowLockStats {
                rows: 0,
                waits: 0,
                timeouts: 0
            }
        );
    }
}

#[test]
fn shared_holders_coexist_and_exclude_an_exclusive_request() {
    let locks = locks_with_wait(Duration::ZERO);
    let a = locks.lock_row(row("r"), LockMode::Shared, None).unwrap();
    let b = locks.lock_row(row("r"), LockMode::Shared, None).unwrap();
    let err = locks
        .lock_row(row("r"), LockMode::Exclusive, None)
        .unwrap_err();
    assert!(matches!(
        err,
        RowLockError::Timeout {
            limit: WaitLimit::RowLockWait,
            ..
        }
    ));
    drop((a, b));
    let x = locks.lock_row(row("r"), LockMode::Exclusive, None).unwrap();
    assert!(locks.lock_row(row("r"), LockMode::Shared, None).is_err());
    assert!(
        locks
            .lock_row(row("other"), LockMode::Exclusive, None)
            .is_ok()
    );
    drop(x);
    assert_eq!(locks.stats().rows, 0);
    assert_eq!(locks.stats().timeouts, 2);
}

#[test]
fn a_queued_exclusive_request_is_not_starved_by_later_shared_ones() {
    let locks = locks_with_wait(Duration::from_secs(10));
    let reader = locks.lock_row(row("r"), LockMode::Shared, None).unwrap();
    let (writer, writer_got) = locker(&locks, "r", LockMode::Exclusive, Duration::from_millis(50));
    wait_for_queue(&locks, 1);
    // A shared request now must queue behind the exclusive one, although only readers hold.
    let (late_reader, late_got) = locker(&locks, "r", LockMode::Shared, Duration::ZERO);
    wait_for_queue(&locks, 2);
    assert!(!writer_got.load(Ordering::SeqCst));
    assert!(!late_got.load(Ordering::SeqCst));
    drop(reader);
    let writer_at = writer.join().unwrap().unwrap();
    let late_at = late_reader.join().unwrap().unwrap();
    assert!(writer_at < late_at, "granted in arrival order");
    assert_eq!(locks.stats().rows, 0);
}

#[test]
fn queued_shared_requests_are_admitted_together() {
    let locks = locks_with_wait(Duration::from_secs(30));
    let writer = locks.lock_row(row("r"), LockMode::Exclusive, None).unwrap();
    // Each reader reports when it got the lock and when it let go; it holds for a second.
    let readers: Vec<_> = (0..3)
        .map(|_| {
            let locks = Arc::clone(&locks);
            thread::spawn(move || {
                let guard = locks.lock_row(row("r"), LockMode::Shared, None).unwrap();
                let got = Instant::now();
                thread::sleep(Duration::from_secs(1));
                let released = Instant::now();
                drop(guard);
                (got, released)
            })
        })
        .collect();
    wait_for_queue(&locks, 3);
    drop(writer);
    let times: Vec<(Instant, Instant)> = readers.into_iter().map(|r| r.join().unwrap()).collect();
    let last_got = times.iter().map(|t| t.0).max().unwrap();
    let first_released = times.iter().map(|t| t.1).min().unwrap();
    assert!(
        last_got < first_released,
        "the readers were serialised, not admitted together"
    );
    assert_eq!(locks.stats().rows, 0);
}

#[test]
fn timeout_fires_within_tolerance_names_the_row_and_leaves_no_entry() {
    let locks = locks_with_wait(Duration::from_millis(100));
    let holder = locks
        .lock_row(row("hot\x01"), LockMode::Exclusive, None)
        .unwrap();
    let start = Instant::now();
    let err = locks
        .lock_row(row("hot\x01"), LockMode::Shared, None)
        .unwrap_err();
    let waited = start.elapsed();
    assert!(waited >= Duration::from_millis(100), "{waited:?}");
    assert!(waited < Duration::from_millis(1_000), "{waited:?}");
    let RowLockError::Timeout {
        row: shown,
        limit,
        waited: reported,
    } = &err;
    assert_eq!(
        (shown.as_str(), *limit),
        ("\"hot\\x01\"", WaitLimit::RowLockWait)
    );
    assert!(*reported >= Duration::from_millis(100));
    assert!(
        err.to_string()
            .contains("waiting for lock on row \"hot\\x01\""),
        "{err}"
    );
    drop(holder);
    assert_eq!(locks.stats().rows, 0);
}

#[test]
fn an_earlier_caller_deadline_wins() {
    let locks = locks_with_wait(Duration::from_secs(30));
    let _holder = locks.lock_row(row("r"), LockMode::Exclusive, None).unwrap();
    let start = Instant::now();
    let deadline = start + Duration::from_millis(50);
    let err = locks
        .lock_row(row("r"), LockMode::Exclusive, Some(deadline))
        .unwrap_err();
    assert!(matches!(
        err,
        RowLockError::Timeout {
            limit: WaitLimit::Deadline,
            ..
        }
    ));
    assert!(start.elapsed() < Duration::from_secs(2));
    // A deadline already past fails at once.
    let past = Instant::now()
        .checked_sub(Duration::from_millis(1))
        .unwrap();
    let err = locks
        .lock_row(row("r"), LockMode::Shared, Some(past))
        .unwrap_err();
    assert!(matches!(
        err,
        RowLockError::Timeout {
            limit: WaitLimit::Deadline,
            ..
        }
    ));
}

#[test]
fn a_timed_out_exclusive_request_lets_the_shared_ones_behind_it_in() {
    let locks = locks_with_wait(Duration::from_secs(10));
    let reader = locks.lock_row(row("r"), LockMode::Shared, None).unwrap();
    let impatient = {
        let locks = Arc::clone(&locks);
        thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_millis(1_000);
            locks
                .lock_row(row("r"), LockMode::Exclusive, Some(deadline))
                .map(|_| ())
        })
    };
    wait_for_queue(&locks, 1);
    let (late_reader, late_got) = locker(&locks, "r", LockMode::Shared, Duration::ZERO);
    wait_for_queue(&locks, 2);
    assert!(impatient.join().unwrap().is_err());
    // The reader behind the cancelled exclusive request is admitted while `reader` still holds.
    late_reader.join().unwrap().unwrap();
    assert!(late_got.load(Ordering::SeqCst));
    drop(reader);
    assert_eq!(locks.stats().rows, 0);
}

#[test]
fn lock_rows_sorts_dedups_and_releases_everything_on_failure() {
    let locks = locks_with_wait(Duration::from_millis(20));
    let rows = ["c", "a", "b", "a"].map(row);
    let guard = locks.lock_rows(rows, LockMode::Exclusive, None).unwrap();
    assert_eq!(
        guard.rows().cloned().collect::<Vec<_>>(),
        ["a", "b", "c"].map(row)
    );
    assert_eq!(locks.stats().rows, 3);
    drop(guard);
    assert_eq!(locks.stats().rows, 0);

    let blocker = locks.lock_row(row("m"), LockMode::Exclusive, None).unwrap();
    let err = locks
        .lock_rows(["a", "m", "z"].map(row), LockMode::Shared, None)
        .unwrap_err();
    assert!(matches!(&err, RowLockError::Timeout { row, .. } if row == "\"m\""));
    assert_eq!(
        locks.stats().rows,
        1,
        "\"a\" was released, \"z\" never taken"
    );
    drop(blocker);
    let empty = locks
        .lock_rows(Vec::new(), LockMode::Exclusive, None)
        .unwrap();
    assert!(empty.is_empty());
}

#[test]
fn the_wait_bounds_a_lock_rows_call_as_a_whole() {
    // "a" is released 600 ms in, "b" never: the call waits 600 ms for "a", then for "b" only
    // what is left of its 700 ms. A bound per row would wait 700 ms more for "b".
    let locks = locks_with_wait(Duration::from_millis(700));
    let a = locks.lock_row(row("a"), LockMode::Exclusive, None).unwrap();
    let b = locks.lock_row(row("b"), LockMode::Exclusive, None).unwrap();
    let start = Instant::now();
    thread::scope(|scope| {
        scope.spawn(|| {
            wait_for_queue(&locks, 1);
            thread::sleep(Duration::from_millis(600));
            drop(a);
        });
        let err = locks
            .lock_rows(["a", "b"].map(row), LockMode::Exclusive, None)
            .unwrap_err();
        assert!(matches!(&err, RowLockError::Timeout { row, .. } if row == "\"b\""));
    });
    let waited = start.elapsed();
    assert!(waited >= Duration::from_millis(700), "{waited:?}");
    assert!(waited < Duration::from_millis(1_250), "{waited:?}");
    drop(b);
    assert_eq!(locks.stats().rows, 0);
}

#[test]
fn huge_wait_is_treated_as_forever() {
    let locks = RowLocks::new(RowLockOptions {
        wait: Duration::MAX,
        shards: 1,
    });
    let guard = locks.lock_row(row("r"), LockMode::Shared, None).unwrap();
    drop(guard);
    assert_eq!(locks.stats().rows, 0);
}
