//! `cargo xtask bench increment`: HBase's IncrementPerformanceTest (HBASE-15158's seed) in one
//! run. 80 threads each increment the same sequence of rows (a hot-row contention test, as the
//! original), embedded, at `SyncWal` and `FsyncWal`, once per write order, interleaved. Prints
//! total time and the 75th/95th/99th latency percentiles as the seed does, the per-stage
//! breakdown, and new/legacy ratios. The seed's comparison runs each increment under the row
//! lock in turn, as HBase does (`ReadModifyWrites::PerCall`); two more rows ("Combined") run the
//! reordered path with Keel's default, concurrent increments of a row combined, and print
//! combined ÷ per-call throughput. `--increments N` sets increments per thread (the seed used
//! 10 000).

#![expect(clippy::print_stdout, reason = "a benchmark reports on the terminal")]

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use keel_fs::{FileSystem, StdFs};
use keel_region::{Durability, FamilyOptions, ReadModifyWrites, Region, WriteOrder, WriteTimings};
use keel_testkit::figure;
use keel_wal::{Wal, WalOptions};

const THREADS: usize = 80;
const ROWS: usize = 100;

struct Outcome {
    total: Duration,
    latency_us: Histogram<u64>,
    stages: [Duration; 5],
    count: u64,
    /// Increments per WAL entry (combined batches; 1 per call).
    batch: f64,
}

fn run(
    dir: &Path,
    (durability, order, rmw): (Durability, WriteOrder, ReadModifyWrites),
    per_thread: usize,
) -> Outcome {
    let fs: Arc<dyn FileSystem> = Arc::new(StdFs);
    let wal =
        Arc::new(Wal::open(Arc::clone(&fs), &dir.join("wal"), WalOptions::default()).expect("wal"));
    let region = Region::open(
        fs,
        &dir.join("region"),
        Arc::clone(&wal),
        1,
        vec![FamilyOptions::new("f")],
    )
    .expect("region")
    .with_write_order(order)
    .with_read_modify_writes(rmw);
    let start = Instant::now();
    let results: Vec<(Histogram<u64>, WriteTimings)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..THREADS)
            .map(|_| {
                let region = &region;
                scope.spawn(move || {
                    let mut hist =
                        Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).expect("bounds");
                    let mut sum = WriteTimings::default();
                    for i in 0..per_thread {
                        let row = format!("row-{:04}", i % ROWS);
                        let began = Instant::now();
                        let (_, t) = region
                            .increment(row.as_bytes(), b"f", b"count", 1, durability)
                            .expect("increment");
                        hist.saturating_record(began.elapsed().as_micros().max(1) as u64);
                        sum.lock_wait += t.lock_wait;
                        sum.wal_append += t.wal_append;
                        sum.sync_wait += t.sync_wait;
                        sum.memstore += t.memstore;
                        sum.mvcc_wait += t.mvcc_wait;
                    }
                    (hist, sum)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("thread"))
            .collect()
    });
    let total = start.elapsed();
    // Every increment landed: each row holds its exact count.
    let expected = (THREADS * per_thread / ROWS) as i64;
    let (value, _) = region
        .increment(b"row-0000", b"f", b"count", 0, durability)
        .expect("read");
    assert!(
        value >= expected,
        "row-0000 holds {value}, expected at least {expected}"
    );
    let stats = region.stats();
    let batch = if stats.rmw_batches == 0 {
        1.0
    } else {
        stats.rmw_batched_operations as f64 / stats.rmw_batches as f64
    };
    drop(region);
    Arc::try_unwrap(wal)
        .expect("sole owner")
        .close()
        .expect("close");
    let mut latency_us = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).expect("bounds");
    let mut stages = [Duration::ZERO; 5];
    for (hist, t) in results {
        latency_us.add(&hist).expect("same bounds");
        for (slot, d) in stages.iter_mut().zip([
            t.lock_wait,
            t.wal_append,
            t.sync_wait,
            t.memstore,
            t.mvcc_wait,
        ]) {
            *slot += d;
        }
    }
    Outcome {
        total,
        latency_us,
        stages,
        count: (THREADS * per_thread) as u64,
        batch,
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    let per_thread = args
        .iter()
        .position(|a| a == "--increments")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(if quick { 100 } else { 500 });
    // Five rounds, each configuration once per round, and the median round reported: one round
    // lasts about a second, and single rounds of the same build swung 0.71–1.20 (SyncWal
    // new ÷ legacy) on this shared machine.
    let rounds = args
        .iter()
        .position(|a| a == "--rounds")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(if quick { 1 } else { 5 })
        .max(1);
    println!(
        "increment: {THREADS} threads × {per_thread} increments over the same {ROWS} rows, embedded, one region; {rounds} interleaved round(s)"
    );
    use ReadModifyWrites::{Combined, PerCall};
    let configs = [
        (Durability::SyncWal, WriteOrder::Reordered, PerCall),
        (Durability::SyncWal, WriteOrder::Legacy, PerCall),
        (Durability::FsyncWal, WriteOrder::Reordered, PerCall),
        (Durability::FsyncWal, WriteOrder::Legacy, PerCall),
        (Durability::SyncWal, WriteOrder::Reordered, Combined),
        (Durability::FsyncWal, WriteOrder::Reordered, Combined),
    ];
    let mut outcomes: Vec<Vec<Outcome>> = configs.iter().map(|_| Vec::new()).collect();
    for round in 0..rounds {
        // Each configuration once per round, the order reversed every other round.
        let mut order: Vec<usize> = (0..configs.len()).collect();
        if round % 2 == 1 {
            order.reverse();
        }
        for i in order {
            if std::env::var("KEEL_ONLY").is_ok_and(|o| o != i.to_string()) {
                continue;
            }
            let dir = tempfile::tempdir().expect("tempdir");
            outcomes[i].push(run(dir.path(), configs[i], per_thread));
        }
    }
    println!(
        "{:<9} {:<10} {:>10} {:>10} {:>8} {:>8} {:>8} | per increment, µs: {:>6} {:>6} {:>6} {:>6} {:>6} {:>6}",
        "durability",
        "order",
        "total ms",
        "incr/s",
        "p75 µs",
        "p95 µs",
        "p99 µs",
        "lock",
        "append",
        "sync",
        "memst",
        "mvcc",
        "batch"
    );
    let mut summary = Vec::new();
    for (i, (durability, order, rmw)) in configs.iter().enumerate() {
        let order = match rmw {
            PerCall => format!("{order:?}"),
            Combined => "Combined".to_string(),
        };
        // The round with the median total time, so one noisy round does not decide.
        let runs = &mut outcomes[i];
        runs.sort_by_key(|o| o.total);
        let o = &runs[runs.len() / 2];
        let per = |d: Duration| d.as_secs_f64() * 1e6 / o.count as f64;
        println!(
            "{:<9} {:<10} {:>10.0} {:>10.0} {:>8} {:>8} {:>8} | {:>26.1} {:>6.1} {:>6.1} {:>6.1} {:>6.1} {:>6.1}",
            format!("{durability:?}"),
            order,
            o.total.as_secs_f64() * 1e3,
            o.count as f64 / o.total.as_secs_f64(),
            o.latency_us.value_at_quantile(0.75),
            o.latency_us.value_at_quantile(0.95),
            o.latency_us.value_at_quantile(0.99),
            per(o.stages[0]),
            per(o.stages[1]),
            per(o.stages[2]),
            per(o.stages[3]),
            per(o.stages[4]),
            o.batch,
        );
        summary.push((
            o.total.as_secs_f64(),
            o.latency_us.value_at_quantile(0.99) as f64,
            o.count as f64 / o.total.as_secs_f64(),
        ));
    }
    println!(
        "(stage times are summed over threads and divided by increments: time each increment spent there; batch: increments per WAL entry)"
    );
    println!("(the seed, HBase 1.x → 2.0: total 74.5 s → 56.6 s (0.76), p99 0.71)");
    for (name, new, legacy) in [("SyncWal", 0, 1), ("FsyncWal", 2, 3)] {
        println!(
            "{name}: new/legacy total time {:.3}, p99 {:.3}",
            summary[new].0 / summary[legacy].0,
            summary[new].1 / summary[legacy].1
        );
    }
    println!(
        "{}",
        figure("increment_new_vs_legacy_time", summary[0].0 / summary[1].0)
    );
    println!(
        "{}",
        figure("increment_new_vs_legacy_p99", summary[0].1 / summary[1].1)
    );
    println!("{}", figure("increment_per_s_syncwal", summary[0].2));
    println!(
        "{}",
        figure(
            "increment_combined_vs_per_call_syncwal",
            summary[4].2 / summary[0].2
        )
    );
    println!(
        "{}",
        figure(
            "increment_combined_vs_per_call_fsyncwal",
            summary[5].2 / summary[2].2
        )
    );
}
