//! `cargo xtask bench regions`: a table of 8 regions against a table of one.
//!
//! **Pre-split load**: 4 writer threads put rows with random 8-hex-digit keys (as a hashed key
//! space has) into a table pre-split into 8 regions (`HexStringSplit`) and into a one-region
//! table, each side on a fresh store, the sides alternating, with a small flush size so both
//! flush and compact while loading. `regions_presplit_load_ratio` = the 8-region table's write
//! throughput ÷ the one-region table's (median over rounds; target ≥ 1.0: eight memstores
//! flush and compact independently, so this should not lose even on 2 cores).
//!
//! **Splits under load**: the same writers on a one-region table whose split threshold is a
//! few MiB (2 × a 1 MiB flush size while it has one region, `max_region_size` 4 MiB after), so
//! it splits several times while they write, against the same load with splitting off, each on
//! a fresh store, alternating. `regions_split_stall_p99_ratio` = the writers' p99 put latency
//! with splits ÷ without (target ≤ 2.0); `regions_splits` = the splits the split runs made
//! (median).

#![expect(clippy::print_stdout, reason = "a benchmark reports on the terminal")]

use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use keel_region::{
    Engine, EngineOptions, FamilyOptions, RegionError, RegionLimits, Table, TableOptions,
};
use keel_testkit::figure;

const THREADS: u64 = 4;

fn key(i: u64) -> String {
    let h = i.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    format!("{:08x}{i:010}", (h >> 32) as u32)
}

fn put_retrying(table: &Table, row: &[u8], value: &[u8]) {
    loop {
        match table.put(row, b"f", b"q", value) {
            Ok(_) => return,
            Err(RegionError::RegionTooBusy { .. } | RegionError::MemoryFull { .. }) => {
                std::thread::sleep(Duration::from_millis(1));
            }
            Err(e) => panic!("put: {e}"),
        }
    }
}

/// Loads `rows` rows into a fresh table of `regions` regions; writes per second.
fn load(regions: u32, rows: u64, value: usize, flush_size: u64) -> f64 {
    let dir = tempfile::tempdir().expect("tempdir");
    let options = EngineOptions {
        limits: RegionLimits {
            flush_size,
            ..RegionLimits::default()
        },
        flush_check_interval: Duration::from_millis(10),
        // The comparison is 8 regions against 1: neither may split.
        auto_split: false,
        ..EngineOptions::default()
    };
    let server = Engine::open(dir.path(), options).expect("open");
    let table = server
        .create_table_with(
            "t",
            vec![FamilyOptions::new("f")],
            TableOptions {
                split_keys: keel_region::splits::hex_string(regions),
                ..TableOptions::default()
            },
        )
        .expect("create");
    let value = vec![b'v'; value];
    let start = Instant::now();
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (table, value) = (&table, &value);
            s.spawn(move || {
                for i in (t..rows).step_by(THREADS as usize) {
                    put_retrying(table, key(i).as_bytes(), value);
                }
            });
        }
    });
    let elapsed = start.elapsed();
    let stats = server.stats();
    let files: usize = table.regions().iter().map(|r| r.store_file_count()).sum();
    println!(
        "  {regions} region(s): {rows} rows in {:.2} s = {:.0} puts/s; {} store files, {} pressure flushes",
        elapsed.as_secs_f64(),
        rows as f64 / elapsed.as_secs_f64(),
        files,
        stats.pressure_flushes
    );
    rows as f64 / elapsed.as_secs_f64()
}

/// Loads `rows` rows into a one-region table, splitting by size or not; returns the writers'
/// p99 put latency in µs and the splits made.
fn load_splitting(split: bool, rows: u64, value: usize) -> (f64, u64) {
    let dir = tempfile::tempdir().expect("tempdir");
    let options = EngineOptions {
        limits: RegionLimits {
            flush_size: 1 << 20,
            ..RegionLimits::default()
        },
        flush_check_interval: Duration::from_millis(10),
        auto_split: split,
        max_region_size: 4 << 20,
        ..EngineOptions::default()
    };
    let server = Engine::open(dir.path(), options).expect("open");
    let table = server
        .create_table("t", vec![FamilyOptions::new("f")])
        .expect("create");
    let value = vec![b'v'; value];
    let latencies: Vec<Histogram<u64>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                let (table, value) = (&table, &value);
                s.spawn(move || {
                    let mut h = Histogram::<u64>::new(3).expect("histogram");
                    for i in (t..rows).step_by(THREADS as usize) {
                        let start = Instant::now();
                        put_retrying(table, key(i).as_bytes(), value);
                        h.saturating_record(start.elapsed().as_micros() as u64);
                    }
                    h
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("writer"))
            .collect()
    });
    let mut all = Histogram::<u64>::new(3).expect("histogram");
    for h in &latencies {
        all.add(h).expect("same bounds");
    }
    let splits = server.stats().splits;
    println!(
        "  splits {}: p99 {} µs, p99.9 {} µs, {} splits, {} regions",
        if split { "on " } else { "off" },
        all.value_at_quantile(0.99),
        all.value_at_quantile(0.999),
        splits,
        table.regions().len()
    );
    (all.value_at_quantile(0.99) as f64, splits)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let (rows, value, flush_size, rounds) = if quick {
        (60_000, 256, 2 << 20, 3)
    } else {
        (400_000, 512, 16 << 20, 5)
    };
    println!(
        "pre-split load: {rows} rows of {value} B, {THREADS} writers, flush size {} MiB, {rounds} rounds per side",
        flush_size >> 20
    );
    let mut ratios = Vec::new();
    for round in 0..rounds {
        // Alternate which side goes first.
        let (eight, one) = if round % 2 == 0 {
            let e = load(8, rows, value, flush_size);
            (e, load(1, rows, value, flush_size))
        } else {
            let o = load(1, rows, value, flush_size);
            (load(8, rows, value, flush_size), o)
        };
        println!("round {round}: 8 regions ÷ 1 = {:.3}", eight / one);
        ratios.push(eight / one);
    }
    let presplit = median(ratios);

    let split_rows = if quick { 80_000 } else { 300_000 };
    println!(
        "splits under load: {split_rows} rows of {value} B, flush size 1 MiB, max region size 4 MiB"
    );
    let (mut stall, mut splits) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        let ((on, n), (off, _)) = if round % 2 == 0 {
            let on = load_splitting(true, split_rows, value);
            (on, load_splitting(false, split_rows, value))
        } else {
            let off = load_splitting(false, split_rows, value);
            (load_splitting(true, split_rows, value), off)
        };
        stall.push(on / off.max(1.0));
        splits.push(n as f64);
    }
    println!("{}", figure("regions_presplit_load_ratio", presplit));
    println!("{}", figure("regions_split_stall_p99_ratio", median(stall)));
    println!("{}", figure("regions_splits", median(splits)));
}
