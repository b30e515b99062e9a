//! `cargo xtask bench mvcc`: Keel's MVCC against an HBase-style baseline (one mutex over a queue
//! of entries, as `MultiVersionConcurrencyControl` does) at 1, 8 and 64 threads in the same run,
//! and the row-lock table's uncontended cost, contended hand-off latency and 100-row batches.

#![expect(clippy::print_stdout, reason = "a benchmark reports on the terminal")]

use std::collections::VecDeque;
use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::thread;
use std::time::{Duration, Instant};

use bytes::Bytes;
use hdrhistogram::Histogram;
use keel_mvcc::{LockMode, Mvcc, RowLockOptions, RowLocks};
use keel_testkit::figure;
use parking_lot::{Condvar, Mutex};

/// HBase's design: `begin` and `complete` under one lock over a queue in begin order; the read
/// point moves when the head completes; waiters use a monitor.
#[derive(Default)]
struct HBaseStyleMvcc {
    write_point: AtomicU64,
    read_point: AtomicU64,
    queue: Mutex<VecDeque<(u64, bool)>>,
    read_waiters: Condvar,
}

impl HBaseStyleMvcc {
    fn begin(&self) -> u64 {
        let mut queue = self.queue.lock();
        let number = self.write_point.fetch_add(1, SeqCst) + 1;
        queue.push_back((number, false));
        number
    }

    fn complete(&self, number: u64) -> bool {
        let mut queue = self.queue.lock();
        let head = queue.front().map_or(number, |e| e.0);
        if let Some(entry) = queue.get_mut((number - head) as usize) {
            entry.1 = true;
        }
        let mut advanced = None;
        while queue.front().is_some_and(|e| e.1) {
            advanced = queue.pop_front().map(|e| e.0);
        }
        if let Some(read_point) = advanced {
            self.read_point.store(read_point, SeqCst);
            self.read_waiters.notify_all();
        }
        self.read_point.load(SeqCst) >= number
    }
}

trait BeginComplete: Send + Sync + 'static {
    fn pair(&self);
    fn read_point(&self) -> u64;
}

impl BeginComplete for Mvcc {
    fn pair(&self) {
        let entry = self.begin();
        self.complete(entry);
    }
    fn read_point(&self) -> u64 {
        Mvcc::read_point(self)
    }
}

impl BeginComplete for HBaseStyleMvcc {
    fn pair(&self) {
        let n = self.begin();
        self.complete(n);
    }
    fn read_point(&self) -> u64 {
        self.read_point.load(SeqCst)
    }
}

/// begin+complete pairs per second with `threads` threads hammering one instance for `run`.
fn pairs_per_second<M: BeginComplete>(mvcc: M, threads: usize, run: Duration) -> f64 {
    let mvcc = Arc::new(mvcc);
    let stop = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = (0..threads)
        .map(|_| {
            let (mvcc, stop) = (Arc::clone(&mvcc), Arc::clone(&stop));
            thread::spawn(move || {
                let mut pairs = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    for _ in 0..64 {
                        mvcc.pair();
                    }
                    pairs += 64;
                }
                pairs
            })
        })
        .collect();
    let start = Instant::now();
    thread::sleep(run);
    stop.store(true, SeqCst);
    let total: u64 = workers.into_iter().map(|w| w.join().unwrap_or(0)).sum();
    let elapsed = start.elapsed().as_secs_f64();
    assert_eq!(
        mvcc.read_point(),
        total,
        "every pair completed and became visible"
    );
    total as f64 / elapsed
}

/// Best of `rounds` for each side, the rounds interleaved (A B A B …) so that a noisy moment on
/// a shared machine hits both sides alike.
fn interleaved_best(rounds: usize, threads: usize, run: Duration) -> (f64, f64) {
    let (mut keel, mut base) = (0.0f64, 0.0f64);
    for _ in 0..rounds {
        keel = keel.max(pairs_per_second(Mvcc::new(), threads, run));
        base = base.max(pairs_per_second(HBaseStyleMvcc::default(), threads, run));
    }
    (keel, base)
}

fn uncontended_lock_ns(iterations: u32) -> f64 {
    let locks = RowLocks::default();
    let row = Bytes::from_static(b"user0000000042");
    let best = (0..5)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..iterations {
                let guard = locks.lock_row(row.clone(), LockMode::Exclusive, None);
                drop(black_box(guard));
            }
            start.elapsed()
        })
        .min()
        .unwrap_or_default();
    best.as_nanos() as f64 / f64::from(iterations)
}

/// Two threads pass one exclusive row lock back and forth. The holder waits until the lock
/// table shows the other thread queued (it checks under the shard mutex, so the waiter is inside
/// its condition-variable wait), stamps the clock and releases; the waiter records how long after
/// the stamp it held the lock: the hand-off latency to a parked waiter.
fn handoff_histogram(handoffs: u64) -> Histogram<u64> {
    let options = RowLockOptions {
        shards: 1,
        ..RowLockOptions::default()
    };
    let locks = Arc::new(RowLocks::new(options));
    let origin = Instant::now();
    let stamp = Arc::new(AtomicU64::new(0));
    let row = Bytes::from_static(b"hot-row");
    let players: Vec<_> = (0..2u64)
        .map(|me| {
            let (locks, stamp, row) = (locks.clone(), stamp.clone(), row.clone());
            thread::spawn(move || {
                let mut hist = Histogram::<u64>::new(3).unwrap_or_else(|e| panic!("{e}"));
                for turn in (me..handoffs).step_by(2) {
                    let guard = locks.lock_row(row.clone(), LockMode::Exclusive, None);
                    let now = origin.elapsed().as_nanos() as u64;
                    let released = stamp.swap(0, SeqCst);
                    if released != 0 {
                        let _ = hist.record(now.saturating_sub(released));
                    }
                    // The other player queues once per turn: wait for its next request.
                    if turn + 1 < handoffs {
                        while locks.stats().waits < turn + 1 {
                            std::hint::spin_loop();
                        }
                    }
                    stamp.store(origin.elapsed().as_nanos() as u64, SeqCst);
                    drop(guard);
                }
                hist
            })
        })
        .collect();
    let mut all = Histogram::<u64>::new(3).unwrap_or_else(|e| panic!("{e}"));
    for p in players {
        if let Ok(h) = p.join() {
            let _ = all.add(h);
        }
    }
    all
}

fn lock_rows_100_us(iterations: u32) -> f64 {
    let locks = RowLocks::default();
    let rows: Vec<Bytes> = (0..100)
        .map(|i| Bytes::from(format!("user{i:010}")))
        .collect();
    let start = Instant::now();
    for _ in 0..iterations {
        let guard = locks.lock_rows(rows.iter().cloned(), LockMode::Exclusive, None);
        drop(black_box(guard));
    }
    start.elapsed().as_secs_f64() * 1e6 / f64::from(iterations)
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let (run, rounds) = if quick {
        (Duration::from_millis(200), 3)
    } else {
        (Duration::from_millis(500), 5)
    };

    println!("MVCC begin+complete pairs/s (best of {rounds} runs of {run:?}):");
    println!(
        "{:>8} {:>14} {:>14} {:>7}",
        "threads", "keel", "hbase-style", "ratio"
    );
    let mut ratio_64 = 0.0;
    for threads in [1, 8, 64] {
        let (keel, base) = interleaved_best(rounds, threads, run);
        let ratio = keel / base;
        println!("{threads:>8} {keel:>14.0} {base:>14.0} {ratio:>7.2}");
        if threads == 64 {
            ratio_64 = ratio;
        }
    }

    let uncontended = uncontended_lock_ns(if quick { 200_000 } else { 1_000_000 });
    let hist = handoff_histogram(if quick { 2_000 } else { 10_000 });
    let p50_us = hist.value_at_quantile(0.5) as f64 / 1e3;
    let p99_us = hist.value_at_quantile(0.99) as f64 / 1e3;
    let batch = lock_rows_100_us(if quick { 2_000 } else { 10_000 });
    println!("row lock, uncontended lock+unlock: {uncontended:.1} ns");
    println!(
        "row lock, contended hand-off to a parked waiter: p50 {p50_us:.1} µs, p99 {p99_us:.1} µs \
         ({} hand-offs)",
        hist.len()
    );
    println!("lock_rows of 100 rows + release: {batch:.1} µs");
    println!("{}", figure("mvcc_vs_baseline_64t", ratio_64));
    println!("{}", figure("rowlock_uncontended_ns", uncontended));
    println!("{}", figure("rowlock_handoff_p50_us", p50_us));
}
