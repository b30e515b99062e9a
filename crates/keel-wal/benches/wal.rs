//! `cargo xtask bench wal`: the machine's raw one-thread append + fdatasync rate, then the WAL's
//! appends/s and acknowledgement latency at 1, 8 and 64 threads, `SyncWal` and `FsyncWal`,
//! 100-byte and 1 KiB entries, all in one run on the project's own file system.

#![expect(clippy::print_stdout, reason = "a benchmark reports on the terminal")]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use keel_cell::Cell;
use keel_fs::{FileSystem, StdFs};
use keel_testkit::figure;
use keel_wal::{Durability, Wal, WalEntry, WalOptions};

fn bench_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/wal-bench")
}

/// One thread doing 4 KiB append + fdatasync for `run`; syncs per second. With `preallocate`
/// the file is sized up front, so a sync never has to journal a size change.
fn raw_sync_rate(fs: &Arc<dyn FileSystem>, run: Duration, preallocate: bool) -> f64 {
    let path = bench_dir().join(if preallocate { "raw-prealloc" } else { "raw" });
    let file = fs.create(&path).unwrap_or_else(|e| panic!("{e}"));
    let block = vec![0x5Au8; 4096];
    if preallocate {
        let size = 256 * 1024 * 1024;
        file.write_at(&[0], size - 1)
            .unwrap_or_else(|e| panic!("{e}"));
        file.sync_all().unwrap_or_else(|e| panic!("{e}"));
    }
    let start = Instant::now();
    let mut syncs = 0u64;
    while start.elapsed() < run {
        if preallocate {
            file.write_at(&block, syncs * 4096)
                .unwrap_or_else(|e| panic!("{e}"));
        } else {
            file.append(&block).unwrap_or_else(|e| panic!("{e}"));
        }
        file.sync_data().unwrap_or_else(|e| panic!("{e}"));
        syncs += 1;
    }
    let rate = syncs as f64 / start.elapsed().as_secs_f64();
    drop(file);
    let _ = fs.remove(&path);
    rate
}

struct Run {
    appends_per_s: f64,
    mb_per_s: f64,
    p50: Duration,
    p99: Duration,
    entries_per_sync: f64,
}

fn run_wal(
    fs: &Arc<dyn FileSystem>,
    threads: u64,
    durability: Durability,
    value: usize,
    run: Duration,
) -> Run {
    let dir = bench_dir().join(format!("wal-{threads}-{durability:?}-{value}"));
    let _ = std::fs::remove_dir_all(&dir);
    let wal =
        Wal::open(Arc::clone(fs), &dir, WalOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    let stop = AtomicBool::new(false);
    let entry_bytes = WalEntryTemplate::new(value).bytes;
    let (count, hist) = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|region| {
                let (wal, stop) = (&wal, &stop);
                scope.spawn(move || {
                    let template = WalEntryTemplate::new(value);
                    let mut hist = Histogram::<u64>::new(3).unwrap_or_else(|e| panic!("{e}"));
                    let mut seq = 0;
                    while !stop.load(Ordering::Relaxed) {
                        seq += 1;
                        let receipt = wal
                            .append(&template.at(region, seq), durability)
                            .unwrap_or_else(|e| panic!("{e}"));
                        let _ = hist.record(receipt.timings.total.as_nanos() as u64);
                    }
                    (seq, hist)
                })
            })
            .collect();
        std::thread::sleep(run);
        stop.store(true, Ordering::Relaxed);
        let mut total = 0;
        let mut all = Histogram::<u64>::new(3).unwrap_or_else(|e| panic!("{e}"));
        for worker in workers {
            let (n, h) = worker.join().unwrap_or_else(|_| panic!("worker panicked"));
            total += n;
            let _ = all.add(h);
        }
        (total, all)
    });
    let stats = wal.stats();
    drop(wal);
    let _ = std::fs::remove_dir_all(&dir);
    let secs = run.as_secs_f64();
    Run {
        appends_per_s: count as f64 / secs,
        mb_per_s: (count as usize * entry_bytes) as f64 / secs / 1e6,
        p50: Duration::from_nanos(hist.value_at_quantile(0.5)),
        p99: Duration::from_nanos(hist.value_at_quantile(0.99)),
        entries_per_sync: stats.entries_per_sync_mean,
    }
}

/// A one-cell entry with a `value`-byte value, re-stamped per append without re-allocating it.
struct WalEntryTemplate {
    value: bytes::Bytes,
    bytes: usize,
}

impl WalEntryTemplate {
    fn new(value: usize) -> WalEntryTemplate {
        let value = bytes::Bytes::from(vec![b'x'; value]);
        let bytes = Self::build(&value, 0, 1).encoded_len();
        WalEntryTemplate { value, bytes }
    }

    fn build(value: &bytes::Bytes, region: u64, seq: u64) -> WalEntry {
        let cell = Cell::builder(format!("user{seq:012}"), "f")
            .qualifier("field0")
            .sequence_id(seq)
            .value(value.clone())
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        WalEntry {
            region,
            sequence_id: seq,
            write_time_ms: 0,
            cells: vec![cell],
        }
    }

    fn at(&self, region: u64, seq: u64) -> WalEntry {
        Self::build(&self.value, region, seq)
    }
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let run = if quick {
        Duration::from_millis(400)
    } else {
        Duration::from_secs(2)
    };
    let fs: Arc<dyn FileSystem> = Arc::new(StdFs);
    std::fs::create_dir_all(bench_dir()).unwrap_or_else(|e| panic!("{e}"));
    println!(
        "directory: {} (the project's file system)",
        bench_dir().display()
    );
    let raw = raw_sync_rate(&fs, run, false);
    let raw_prealloc = raw_sync_rate(&fs, run, true);
    println!(
        "raw 4 KiB append + fdatasync, one thread: {raw:.0}/s (file preallocated: {raw_prealloc:.0}/s, {:.2}×)",
        raw_prealloc / raw
    );
    println!();
    println!(
        "{:>7} {:>9} {:>6} {:>12} {:>9} {:>10} {:>10} {:>11}",
        "threads", "level", "value", "appends/s", "MB/s", "p50", "p99", "entries/sync"
    );
    let mut figures = (0.0, 0.0, 0.0, 0.0);
    for threads in [1u64, 8, 64] {
        for durability in [Durability::SyncWal, Durability::FsyncWal] {
            for value in [100usize, 1024] {
                let r = run_wal(&fs, threads, durability, value, run);
                let per_sync = if durability == Durability::FsyncWal {
                    format!("{:.1}", r.entries_per_sync)
                } else {
                    "-".to_string()
                };
                println!(
                    "{threads:>7} {:>9} {value:>6} {:>12.0} {:>9.1} {:>10.1?} {:>10.1?} {:>11}",
                    format!("{durability:?}"),
                    r.appends_per_s,
                    r.mb_per_s,
                    r.p50,
                    r.p99,
                    per_sync
                );
                match (threads, durability, value) {
                    (64, Durability::FsyncWal, 100) => figures.0 = r.appends_per_s / raw,
                    (1, Durability::FsyncWal, 100) => figures.1 = r.appends_per_s / raw,
                    (8, Durability::SyncWal, 1024) => {
                        figures.2 = r.appends_per_s;
                        figures.3 = r.mb_per_s;
                    }
                    _ => {}
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(bench_dir());
    println!();
    println!(
        "The WAL does not preallocate segments yet; the raw preallocated rate shows what it would gain."
    );
    println!("{}", figure("wal_group_commit_factor_64t", figures.0));
    println!("{}", figure("wal_fsync_1t_vs_raw", figures.1));
    println!("{}", figure("wal_syncwal_8t_appends_per_s", figures.2));
    println!("{}", figure("wal_syncwal_8t_mb_per_s", figures.3));
}
