//! `cargo xtask bench compaction`: what compaction costs.
//!
//! 1. **Write amplification**: 4 threads write 1 KiB rows through a server with a small flush
//!    size, so background flushes and compactions (the exploring policy, throttled) run as in
//!    production; once they settle, store-file bytes written by flushes and compactions over the
//!    bytes flushed.
//! 2. **Foreground p99 during a compaction**: a table of 8 flushed store files; 4 threads run
//!    80% gets / 20% puts, first alone, then while a major compaction of those files runs on the
//!    background pool (throttled at HBase's 50–100 MiB/s); p99 of the operations during over
//!    without. Each round starts from a fresh copy of the prepared table; medians over rounds.
//! 3. **The block cache after a compaction**: a 16 MiB block cache holds the blocks of 6 MiB
//!    of rows, read once (`compaction_read_once_hit_ratio_after`) or twice
//!    (`compaction_hot_hit_ratio_after`, blocks the cache's multi-access share protects); a
//!    major compaction of a cold table four times the cache's size runs; then the rows are
//!    read again: the caching hit ratio of that read (a compaction that cached what it read
//!    pushed the blocks read once out).

#![expect(clippy::print_stdout, reason = "a benchmark reports on the terminal")]

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use keel_region::compaction_policy::CompactionPolicy;
use keel_region::matcher::ReadQuery;
use keel_region::{Engine, EngineOptions, FamilyOptions, RegionError, RegionLimits, Table};
use keel_testkit::figure;
use rand::{Rng, SeedableRng};

const THREADS: usize = 4;
const VALUE: usize = 1024;

fn key(i: u64) -> String {
    format!("row{:016x}", i.wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

fn put_retrying(table: &Table, row: &[u8], value: &[u8]) {
    loop {
        match table.put(row, b"f", b"q", value) {
            Ok(_) => return,
            Err(RegionError::RegionTooBusy { .. }) => std::thread::sleep(Duration::from_millis(1)),
            Err(e) => panic!("put: {e}"),
        }
    }
}

fn write_amplification(dir: &Path, rows: u64) -> f64 {
    let options = EngineOptions {
        limits: RegionLimits {
            flush_size: 1 << 20,
            ..RegionLimits::default()
        },
        flush_check_interval: Duration::from_millis(10),
        // Compaction alone: a table that split would add the rewriting of references.
        auto_split: false,
        ..EngineOptions::default()
    };
    let server = Engine::open(dir, options).expect("open");
    let table = server
        .create_table("t", vec![FamilyOptions::new("f")])
        .expect("create");
    let value = vec![b'w'; VALUE];
    std::thread::scope(|s| {
        for t in 0..THREADS as u64 {
            let (table, value) = (&table, &value);
            s.spawn(move || {
                for i in (t..rows).step_by(THREADS) {
                    put_retrying(table, key(i).as_bytes(), value);
                }
            });
        }
    });
    table.flush().expect("flush");
    // Let the background compactions finish what the last flushes started.
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut last = table.region().stats();
    loop {
        std::thread::sleep(Duration::from_millis(300));
        let now = table.region().stats();
        if now == last || Instant::now() > deadline {
            break;
        }
        last = now;
    }
    let stats = table.region().stats();
    println!(
        "write amplification: {rows} rows of {VALUE} B; {} flushes wrote {:.1} MiB, {} compactions ({} files) wrote {:.1} MiB; {} store files left",
        stats.flushes,
        stats.flushed_bytes as f64 / 1048576.0,
        stats.compactions,
        stats.compacted_files,
        stats.compaction_bytes_written as f64 / 1048576.0,
        table.region().store_file_count()
    );
    drop(table);
    server.close().expect("close");
    (stats.flushed_bytes + stats.compaction_bytes_written) as f64 / stats.flushed_bytes as f64
}

fn prepare(dir: &Path, files: u64, rows_per_file: u64) {
    let server = Engine::open(dir, EngineOptions::default()).expect("open");
    let table = server
        .create_table("t", vec![FamilyOptions::new("f")])
        .expect("create");
    let value = vec![b'p'; VALUE];
    for f in 0..files {
        for i in 0..rows_per_file {
            // Every file covers the whole key range, as flushes of a random load do.
            let row = key(i * files + f);
            table
                .mutate(
                    vec![
                        keel_cell::Cell::put(row, "f", "q", 1 + f as i64, value.clone())
                            .expect("cell"),
                    ],
                    keel_region::Durability::SkipWal,
                )
                .expect("load");
        }
        table.flush().expect("flush");
    }
    drop(table);
    server.close().expect("close");
}

fn load(table: &Table, rows: u64, operations: u64, seed: u64) -> Histogram<u64> {
    let query = ReadQuery::latest(u64::MAX, 0);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS as u64)
            .map(|t| {
                let query = &query;
                s.spawn(move || {
                    let mut rng = rand::rngs::StdRng::seed_from_u64(seed * 100 + t);
                    let mut hist =
                        Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3).expect("hist");
                    let value = vec![b'u'; VALUE];
                    for _ in 0..operations / THREADS as u64 {
                        let row = key(rng.random_range(0..rows));
                        let began = Instant::now();
                        if rng.random_range(0..100) < 20 {
                            put_retrying(table, row.as_bytes(), &value);
                        } else {
                            table.get(row.as_bytes(), query).expect("get");
                        }
                        hist.saturating_record(began.elapsed().as_nanos() as u64);
                    }
                    hist
                })
            })
            .collect();
        let mut all = Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3).expect("hist");
        for h in handles {
            all.add(h.join().expect("thread")).expect("merge");
        }
        all
    })
}

/// A server that compacts only when asked: no periodic major compaction, and no minor one on
/// its own (a baseline must run without one).
fn compacting_on_request() -> EngineOptions {
    EngineOptions {
        major_compaction_period: Duration::ZERO,
        compaction: CompactionPolicy {
            min_files: 100,
            max_files: 100,
            ..CompactionPolicy::default()
        },
        ..EngineOptions::default()
    }
}

/// One round: the load alone, then the same load while a major compaction runs.
fn round(dir: &Path, rows: u64, operations: u64, seed: u64) -> (f64, f64, Duration, u64) {
    let options = compacting_on_request();
    let server = Engine::open(dir, options).expect("open");
    let table = server.table("t").expect("table");
    let query = ReadQuery::latest(u64::MAX, 0);
    for i in 0..rows {
        table.get(key(i).as_bytes(), &query).expect("warm");
    }
    let files = table.region().store_file_count() as u64;
    let alone = load(&table, rows, operations, seed);
    let compacting = AtomicBool::new(true);
    let started = Instant::now();
    server.request_compaction("t", true).expect("request");
    let (during, took) = std::thread::scope(|s| {
        let watcher = s.spawn(|| {
            while table.region().stats().major_compactions == 0 {
                assert!(
                    started.elapsed() < Duration::from_secs(300),
                    "the major compaction never finished: {:?}",
                    server.stats()
                );
                std::thread::sleep(Duration::from_millis(2));
            }
            compacting.store(false, Ordering::Relaxed);
            started.elapsed()
        });
        // Keep the load running in slices until the compaction is over.
        let mut during = Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3).expect("hist");
        let mut slice = 0;
        while compacting.load(Ordering::Relaxed) {
            slice += 1;
            during
                .add(load(&table, rows, operations / 8, seed * 1000 + slice))
                .expect("merge");
        }
        (during, watcher.join().expect("watcher"))
    });
    drop(table);
    server.close().expect("close");
    (
        alone.value_at_quantile(0.99) as f64 / 1000.0,
        during.value_at_quantile(0.99) as f64 / 1000.0,
        took,
        files,
    )
}

/// The hot table's caching hit ratio after a major compaction of the cold one, and the blocks
/// the cache evicted while the compaction ran.
fn hot_hit_ratio_after_compaction(
    dir: &Path,
    hot_rows: u64,
    reads_before: usize,
    cold_files: u64,
) -> (f64, u64) {
    let options = EngineOptions {
        block_cache_bytes: 16 << 20,
        ..compacting_on_request()
    };
    let server = Engine::open(dir, options).expect("open");
    let hot = server
        .create_table("hot", vec![FamilyOptions::new("f")])
        .expect("create");
    let cold = server
        .create_table("cold", vec![FamilyOptions::new("f")])
        .expect("create");
    // A block a row: a read touches each block once, as most reads of a large table do.
    let big = vec![b'h'; 64 << 10];
    for i in 0..hot_rows {
        put_retrying(&hot, key(i).as_bytes(), &big);
    }
    hot.flush().expect("flush");
    let value = vec![b'c'; VALUE];
    // 64 MiB of cold data in `cold_files` files, each covering the whole key range.
    let cold_rows = (64 << 20) / VALUE as u64;
    for f in 0..cold_files {
        for i in (f..cold_rows).step_by(cold_files as usize) {
            put_retrying(&cold, key(i).as_bytes(), &value);
        }
        cold.flush().expect("flush");
    }
    let query = ReadQuery::latest(u64::MAX, 0);
    let read_hot = || {
        for i in 0..hot_rows {
            hot.get(key(i).as_bytes(), &query).expect("get");
        }
    };
    for _ in 0..reads_before {
        read_hot();
    }
    let compacting = server.block_cache_stats().expect("a cache");
    assert_eq!(cold.major_compact().expect("compact"), cold_files as usize);
    let before = server.block_cache_stats().expect("a cache");
    read_hot();
    let after = server.block_cache_stats().expect("a cache");
    drop((hot, cold));
    server.close().expect("close");
    let hits = after.caching_hits - before.caching_hits;
    let misses = after.caching_misses - before.caching_misses;
    let evicted = before.evicted_blocks - compacting.evicted_blocks;
    (hits as f64 / (hits + misses).max(1) as f64, evicted)
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let (wa_rows, files, rows_per_file, operations, rounds) = if quick {
        (16_000, 8, 4_000, 20_000, 2)
    } else {
        (64_000, 8, 20_000, 60_000, 3)
    };
    let scratch = tempfile::tempdir().expect("tempdir");
    let wa = write_amplification(&scratch.path().join("wa"), wa_rows);
    let prepared = scratch.path().join("prepared");
    prepare(&prepared, files, rows_per_file);
    let rows = files * rows_per_file;
    println!(
        "foreground: {rows} rows of {VALUE} B in {files} store files, {THREADS} threads, 80% get / 20% put, {rounds} rounds"
    );
    let mut ratios = Vec::new();
    for r in 0..rounds {
        let dir = scratch.path().join(format!("round-{r}"));
        keel_testkit::copy_dir(&prepared, &dir).expect("copy the prepared table");
        let (alone, during, took, files) = round(&dir, rows, operations, r);
        println!(
            "  round {r}: p99 alone {alone:.0} µs, during the major compaction of {files} files ({took:.1?}) {during:.0} µs: {:.3}",
            during / alone
        );
        ratios.push(during / alone);
        let _ = std::fs::remove_dir_all(&dir);
    }
    println!(
        "{}",
        figure("compaction_foreground_p99_ratio", median(ratios))
    );
    println!("{}", figure("write_amplification", wa));
    let hot_rows = 96;
    let mut ratios = Vec::new();
    for reads_before in [1, 2] {
        let dir = scratch.path().join(format!("cache-{reads_before}"));
        let (ratio, evicted) = hot_hit_ratio_after_compaction(&dir, hot_rows, reads_before, 4);
        println!(
            "block cache 16 MiB: {hot_rows} rows of 64 KiB (6 MiB) read {reads_before}×, a major compaction of 64 MiB in 4 files, the rows read again: caching hit ratio {ratio:.3} ({evicted} blocks evicted during the compaction)"
        );
        ratios.push(ratio);
    }
    println!(
        "{}",
        figure("compaction_read_once_hit_ratio_after", ratios[0])
    );
    println!("{}", figure("compaction_hot_hit_ratio_after", ratios[1]));
}
