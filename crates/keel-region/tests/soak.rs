//! The soak: a server under tight limits runs a mixed load — puts, deletes and increments from
//! writer threads, gets and scans from readers — with background flushes and throttled
//! compactions, periodic major-compaction requests and a restart every third of the run. A
//! sampler checks that memstore memory never passes the global limit by more than the writes in
//! flight; at each restart and at the end every acknowledged write is checked: each row holds
//! its last acknowledged value, deleted rows are absent, counters hold their totals.
//! `KEEL_SOAK_SECONDS` sets the length (`cargo xtask soak region --minutes N`); CI runs the
//! default few seconds as a smoke test.

#![expect(clippy::print_stdout, reason = "the soak reports what it did")]

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use keel_cell::Cell;
use keel_region::matcher::ReadQuery;
use keel_region::{
    CompactionThroughput, Durability, Engine, EngineOptions, FamilyOptions, RegionError,
    RegionLimits, Scan, Table,
};
use rand::{Rng, SeedableRng};

const WRITERS: usize = 3;
const ROWS_PER_WRITER: u64 = 3_000;
/// Below two regions' blocking size together, so both the region and the global limits act.
const HIGH: u64 = 3 << 19;

fn options() -> EngineOptions {
    EngineOptions {
        limits: RegionLimits {
            flush_size: 256 << 10,
            block_multiplier: 4,
            blocking_store_files: 8,
            blocking_wait: Duration::from_secs(2),
            ..RegionLimits::default()
        },
        memory_bytes: 64 << 20,
        global_memstore_bytes: HIGH,
        block_cache_bytes: 16 << 20,
        compaction_throughput: CompactionThroughput {
            lower_bytes_per_sec: 8 << 20,
            upper_bytes_per_sec: 16 << 20,
        },
        flush_check_interval: Duration::from_millis(20),
        ..EngineOptions::default()
    }
}

/// What one writer has had acknowledged: row → value (`None`: deleted), and its counter.
#[derive(Default, Clone)]
struct Acked {
    rows: BTreeMap<u64, Option<Vec<u8>>>,
    counter: i64,
    clock: i64,
}

fn retrying<T>(mut op: impl FnMut() -> Result<T, RegionError>) -> T {
    loop {
        match op() {
            Ok(value) => return value,
            Err(RegionError::RegionTooBusy { .. } | RegionError::MemoryFull { .. }) => {
                std::thread::sleep(Duration::from_millis(1));
            }
            Err(e) => panic!("{e}"),
        }
    }
}

fn row_key(writer: usize, n: u64) -> String {
    format!("w{writer}-{n:06}")
}

fn write_load(table: &Table, writer: usize, acked: &mut Acked, until: Instant, seed: u64) {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    // Each writer's own clock, so a put after a delete of its row never shares the delete's
    // millisecond (a put at the timestamp of a family delete is masked, as in HBase).
    let mut tick = acked.clock;
    while Instant::now() < until {
        tick += 1;
        let n = rng.random_range(0..ROWS_PER_WRITER);
        let row = row_key(writer, n);
        match rng.random_range(0..10) {
            0 => {
                let delete = Cell::delete_family(row.clone(), "f", tick).expect("cell");
                retrying(|| table.mutate(vec![delete.clone()], Durability::UseDefault));
                acked.rows.insert(n, None);
            }
            1 | 2 => {
                let value =
                    retrying(|| table.increment(format!("c{writer}").as_bytes(), b"f", b"n", 1));
                acked.counter += 1;
                if value != acked.counter {
                    let versions = table
                        .get(
                            format!("c{writer}").as_bytes(),
                            &ReadQuery {
                                max_versions: 300,
                                ..ReadQuery::latest(u64::MAX, 0)
                            },
                        )
                        .expect("get");
                    let shown: Vec<(i64, u64, i64)> = versions
                        .iter()
                        .map(|c| {
                            (
                                c.timestamp(),
                                c.sequence_id(),
                                i64::from_be_bytes(c.value()[..].try_into().expect("8")),
                            )
                        })
                        .collect();
                    panic!(
                        "counter of writer {writer}: got {value}, acknowledged {}; {} files; versions now {shown:?}",
                        acked.counter,
                        table.region().store_file_count()
                    );
                }
            }
            _ => {
                let value: Vec<u8> = format!("{row}/{}/", rng.random::<u32>())
                    .into_bytes()
                    .into_iter()
                    .chain(std::iter::repeat_n(b'x', rng.random_range(100..1500)))
                    .collect();
                let put = Cell::put(row.clone(), "f", "q", tick, value.clone()).expect("cell");
                retrying(|| table.mutate(vec![put.clone()], Durability::UseDefault));
                acked.rows.insert(n, Some(value));
            }
        }
    }
    acked.clock = tick;
}

fn verify(tables: &[Table], acked: &[Acked]) {
    for (writer, acked) in acked.iter().enumerate() {
        let table = &tables[writer % 2];
        for (n, expected) in &acked.rows {
            let row = row_key(writer, *n);
            let got = table.get_value(row.as_bytes(), b"f", b"q").expect("get");
            assert_eq!(got.as_deref(), expected.as_deref(), "row {row}");
        }
        let counter = table
            .get_value(format!("c{writer}").as_bytes(), b"f", b"n")
            .expect("get")
            .map_or(0, |v| {
                i64::from_be_bytes(v[..].try_into().expect("8 bytes"))
            });
        assert_eq!(counter, acked.counter, "counter of writer {writer}");
    }
}

fn run_phase(dir: &Path, acked: &mut [Acked], seconds: f64, phase: u64) -> (u64, u64) {
    let server = Engine::open(dir, options()).expect("open");
    let tables: Vec<Table> = ["t0", "t1"]
        .iter()
        .map(|name| match server.table(name) {
            Ok(t) => t,
            Err(_) => server
                .create_table(name, vec![FamilyOptions::new("f")])
                .expect("create"),
        })
        .collect();
    // What the last phase left must all be there after the restart.
    verify(&tables, acked);
    let until = Instant::now() + Duration::from_secs_f64(seconds);
    let stop = AtomicBool::new(false);
    let peak = AtomicU64::new(0);
    let scans = AtomicU64::new(0);
    std::thread::scope(|s| {
        s.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                peak.fetch_max(server.stats().memstore_bytes, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(1));
            }
        });
        s.spawn(|| {
            let mut rng = rand::rngs::StdRng::seed_from_u64(phase);
            while !stop.load(Ordering::Relaxed) {
                let writer = rng.random_range(0..WRITERS);
                let start = row_key(writer, rng.random_range(0..ROWS_PER_WRITER));
                let scan = Scan {
                    start_row: start.into(),
                    limit: Some(50),
                    ..Scan::all(0)
                };
                let table = &tables[writer % 2];
                let rows = table.scan(&scan).expect("scan");
                for pair in rows.windows(2) {
                    assert!(pair[0][0].row() < pair[1][0].row(), "scan out of order");
                }
                let _ = table.get(b"w0-000001", &ReadQuery::latest(u64::MAX, 0));
                scans.fetch_add(1, Ordering::Relaxed);
                if rng.random_range(0..200) == 0 {
                    let name = ["t0", "t1"][writer % 2];
                    server.request_compaction(name, true).expect("major");
                }
            }
        });
        let writers: Vec<_> = acked
            .iter_mut()
            .enumerate()
            .map(|(w, acked)| {
                let table = &tables[w % 2];
                s.spawn(move || write_load(table, w, acked, until, phase * 100 + w as u64))
            })
            .collect();
        for w in writers {
            w.join().expect("writer");
        }
        stop.store(true, Ordering::Relaxed);
    });
    let slack = WRITERS as u64 * 4096;
    let peak = peak.load(Ordering::Relaxed);
    assert!(
        peak <= HIGH + slack,
        "memstore peaked at {peak} bytes, limit {HIGH}"
    );
    let stats = server.stats();
    assert_eq!(
        stats.flush_failures + stats.compaction_failures,
        0,
        "{stats:?}"
    );
    verify(&tables, acked);
    let region = tables[0].region().stats();
    println!(
        "soak phase {phase}: {:.0} s, peak memstore {:.2} MiB of {:.2}; table t0: {} flushes, {} compactions ({} major), {} store files, {} busy refusals, {} blocked writes, {} scans",
        seconds,
        peak as f64 / 1048576.0,
        HIGH as f64 / 1048576.0,
        region.flushes,
        region.compactions,
        region.major_compactions,
        tables[0].region().store_file_count(),
        region.busy_refusals,
        stats.blocked_writes,
        scans.load(Ordering::Relaxed)
    );
    drop(tables);
    server.close().expect("close");
    (region.flushes, region.compactions)
}

#[test]
fn soak() {
    let seconds: f64 = std::env::var("KEEL_SOAK_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(6.0);
    let dir = tempfile::tempdir().expect("tempdir");
    let mut acked = vec![Acked::default(); WRITERS];
    let mut flushes = 0;
    for phase in 0..3 {
        let (f, _) = run_phase(dir.path(), &mut acked, seconds / 3.0, phase);
        flushes += f;
    }
    assert!(flushes > 0, "the soak never flushed");
    // And once more after the last clean close.
    let server = Engine::open(dir.path(), options()).expect("open");
    let tables = vec![
        server.table("t0").expect("t0"),
        server.table("t1").expect("t1"),
    ];
    verify(&tables, &acked);
    drop(tables);
    server.close().expect("close");
}
