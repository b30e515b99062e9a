//! `cargo xtask bench admin`: table operations stay off the data path.
//!
//! Table B (10 000 rows, flushed and cached) is read by one thread with random gets — each
//! looking the table up by name first, as every call through `keel serve` does, and paced at
//! 20 000 gets/s with latency counted from when each get was due (YCSB's intended latency: a
//! reader held up for 90 ms counts every get it owed, not one slow one). Tables A1 and A2 each
//! hold at least 64 MiB (256 MiB in the full run) in their memstores. Each round, on a fresh
//! store, measures B's get p99 in three phases, in an order that rotates between rounds:
//! - **without**: nothing else runs;
//! - **disable**: A1 is disabled (its region closes as HBase's does: a pre-flush while it still
//!   takes writes, paced at `RegionLimits::preclose_flush_bytes_per_sec`, 50 MiB/s; then writes
//!   stop, a final flush of what came meanwhile, and the catalog is rewritten);
//! - **flush**: A2 is flushed at full speed, as a flush for memory pressure is, with no table
//!   operation involved (the control: what an unpaced flush of that size costs B on this
//!   machine).
//!
//! Figures (medians over rounds): `admin_isolation_p99_ratio` = disable ÷ without (the issue's
//! target is ≤ 2.0), and `admin_disable_vs_flush_p99_ratio` = disable ÷ flush: what the table
//! operation adds to the flush it has to do. Before the fix a disable held the server's table
//! map write-locked through its flush and every lookup of every table waited (this benchmark
//! measured about 10⁴ then).

#![expect(clippy::print_stdout, reason = "a benchmark reports on the terminal")]

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use keel_cell::Cell;
use keel_region::matcher::ReadQuery;
use keel_region::{Durability, Engine, EngineOptions, FamilyOptions, RegionLimits};
use keel_testkit::figure;
use rand::{Rng, SeedableRng};

const B_ROWS: u64 = 10_000;
const A_VALUE: usize = 1024;
/// Each reader's pace: 20 000 gets/s.
const PACE: Duration = Duration::from_micros(50);
/// Reads before recording starts, in both phases.
const WARM_UP: Duration = Duration::from_millis(50);

fn key(i: u64) -> String {
    format!("row{:016x}", i.wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

fn options() -> EngineOptions {
    EngineOptions {
        // A's 64 MiB must stay in its memstore until the disable flushes them.
        limits: RegionLimits {
            flush_size: 1 << 30,
            ..RegionLimits::default()
        },
        memory_bytes: 4 << 30,
        global_memstore_bytes: 1 << 30,
        flush_check_interval: Duration::from_secs(3600),
        ..EngineOptions::default()
    }
}

/// A fresh store with B loaded and cached and A1's and A2's memstores holding `a_bytes` each.
fn prepare(dir: &Path, a_bytes: usize) -> Engine {
    let server = Engine::open(dir, options()).expect("open");
    let b = server
        .create_table("b", vec![FamilyOptions::new("f")])
        .expect("b");
    for i in 0..B_ROWS {
        b.put(key(i).as_bytes(), b"f", b"q", &[b'b'; 100])
            .expect("load b");
    }
    b.flush().expect("flush b");
    let query = ReadQuery::latest(u64::MAX, 0);
    for i in 0..B_ROWS {
        b.get(key(i).as_bytes(), &query).expect("warm");
    }
    let value = vec![b'a'; A_VALUE];
    for name in ["a1", "a2"] {
        let a = server
            .create_table(name, vec![FamilyOptions::new("f")])
            .expect("a");
        let mut n = 0u64;
        while (a.region().memstore_size() as usize) < a_bytes {
            let cells = (0..64)
                .map(|k| Cell::put(key(n * 64 + k), "f", "q", 1, value.clone()).expect("cell"))
                .collect();
            a.mutate(cells, Durability::SkipWal).expect("load a");
            n += 1;
        }
    }
    drop(b);
    server
}

/// Gets on table B from `readers` threads until `stop` is set, each looking the table up by
/// name as a server call does; B's latency histogram in ns, of the gets due while `recording`
/// was set.
fn read_until(
    server: &Engine,
    readers: u64,
    recording: &AtomicBool,
    stop: &AtomicBool,
    seed: u64,
) -> Histogram<u64> {
    let query = ReadQuery::latest(u64::MAX, 0);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..readers)
            .map(|t| {
                let query = &query;
                s.spawn(move || {
                    let mut rng = rand::rngs::StdRng::seed_from_u64(seed * 10 + t);
                    let mut hist =
                        Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3).expect("hist");
                    let start = Instant::now();
                    let mut due = start;
                    while !stop.load(Ordering::Relaxed) {
                        due += PACE;
                        // Sleeping, not spinning: a spinning reader would take the CPU the
                        // flush needs on a 2-core machine. Oversleeping counts, in both phases.
                        let now = Instant::now();
                        if due > now {
                            std::thread::sleep(due - now);
                        }
                        let record = recording.load(Ordering::Relaxed);
                        let row = key(rng.random_range(0..B_ROWS));
                        let b = server.table("b").expect("b");
                        let got = b.get(row.as_bytes(), query).expect("get");
                        if record {
                            hist.saturating_record(due.elapsed().as_nanos() as u64);
                        }
                        assert_eq!(got.len(), 1);
                    }
                    hist
                })
            })
            .collect();
        let mut all = Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3).expect("hist");
        for h in handles {
            all.add(h.join().expect("reader")).expect("merge");
        }
        all
    })
}

/// B's get p99 (µs) while nothing else runs, for `span`.
fn without(server: &Engine, readers: u64, span: Duration, seed: u64) -> (f64, u64) {
    let (recording, stop) = (AtomicBool::new(false), AtomicBool::new(false));
    let hist = std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(WARM_UP);
            recording.store(true, Ordering::Relaxed);
            std::thread::sleep(span);
            stop.store(true, Ordering::Relaxed);
        });
        read_until(server, readers, &recording, &stop, seed)
    });
    (hist.value_at_quantile(0.99) as f64 / 1000.0, hist.len())
}

/// B's get p99 (µs) while `action` runs, and how long it took.
fn during(
    server: &Engine,
    readers: u64,
    seed: u64,
    action: impl FnOnce() + Send,
) -> (f64, u64, Duration) {
    let (recording, stop) = (AtomicBool::new(false), AtomicBool::new(false));
    let (hist, took) = std::thread::scope(|s| {
        let admin = s.spawn(|| {
            std::thread::sleep(WARM_UP);
            recording.store(true, Ordering::Relaxed);
            let started = Instant::now();
            action();
            let took = started.elapsed();
            stop.store(true, Ordering::Relaxed);
            took
        });
        let hist = read_until(server, readers, &recording, &stop, seed);
        (hist, admin.join().expect("admin"))
    });
    (
        hist.value_at_quantile(0.99) as f64 / 1000.0,
        hist.len(),
        took,
    )
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// One phase's outcome.
struct Phase {
    p99_us: f64,
    gets: u64,
    took: Duration,
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let (rounds, a_mib) = if quick { (6, 64) } else { (12, 256) };
    let readers = 1;
    let scratch = tempfile::tempdir().expect("tempdir");
    println!(
        "admin isolation: paced gets on table B ({B_ROWS} cached rows) without, while A1 ({a_mib} MiB of memstore) is disabled, and while A2 (as much) is flushed; {rounds} rounds, fresh store each, the order rotating"
    );
    let (mut isolation, mut versus_flush) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        let dir = scratch.path().join(format!("round-{round}"));
        let server = prepare(&dir, (a_mib as usize) << 20);
        let seed = round as u64;
        // The side without runs as long as the disable takes (estimated from its pace when it
        // runs first).
        let mut span = Duration::from_millis(1000 * a_mib / 50);
        let (mut without_p, mut disable_p, mut flush_p) = (None, None, None);
        for step in 0..3 {
            match (round + step) % 3 {
                0 => {
                    let (p99_us, gets) = without(&server, readers, span, seed);
                    without_p = Some(Phase {
                        p99_us,
                        gets,
                        took: span,
                    });
                }
                1 => {
                    let (p99_us, gets, took) = during(&server, readers, seed, || {
                        server.disable_table("a1").expect("disable a1");
                    });
                    span = took;
                    disable_p = Some(Phase { p99_us, gets, took });
                }
                _ => {
                    let (p99_us, gets, took) = during(&server, readers, seed, || {
                        server.table("a2").expect("a2").flush().expect("flush a2");
                    });
                    flush_p = Some(Phase { p99_us, gets, took });
                }
            }
        }
        let (w, d, f) = (
            without_p.expect("ran"),
            disable_p.expect("ran"),
            flush_p.expect("ran"),
        );
        println!(
            "  round {round}: B get p99 {:.1} µs without ({} gets, {:.2?}), {:.1} µs during the disable ({} gets, {:.2?}), {:.1} µs during the flush ({} gets, {:.2?}): {:.3} / {:.3}",
            w.p99_us,
            w.gets,
            w.took,
            d.p99_us,
            d.gets,
            d.took,
            f.p99_us,
            f.gets,
            f.took,
            d.p99_us / w.p99_us,
            d.p99_us / f.p99_us
        );
        isolation.push(d.p99_us / w.p99_us);
        versus_flush.push(d.p99_us / f.p99_us);
        server.close().expect("close");
        let _ = std::fs::remove_dir_all(&dir);
    }
    let spread = |v: &[f64]| {
        (
            v.iter().copied().fold(f64::INFINITY, f64::min),
            v.iter().copied().fold(0.0, f64::max),
        )
    };
    let (lo, hi) = spread(&isolation);
    println!(
        "  disable ÷ without: median {:.3}, spread {lo:.3}–{hi:.3}",
        median(isolation.clone())
    );
    let (lo, hi) = spread(&versus_flush);
    println!(
        "  disable ÷ flush:   median {:.3}, spread {lo:.3}–{hi:.3}",
        median(versus_flush.clone())
    );
    println!("{}", figure("admin_isolation_p99_ratio", median(isolation)));
    println!(
        "{}",
        figure("admin_disable_vs_flush_p99_ratio", median(versus_flush))
    );
}
