//! `cargo xtask bench peers`: Keel beside the other embedded engines, row by row — YCSB A, C,
//! E and F and HBase's increment test (80 threads on 100 hot rows, IncrementPerformanceTest's
//! shape) at both durability levels — each engine on a fresh store for every measurement,
//! the engines' order reversed every round, the median of the rounds reported. Keel runs in
//! both layouts (one column per field, as HBase users store records, and one cell per record,
//! as the key-value peers do); its best layout is compared with the best peer that meets the
//! row's durability ([`PeerKind::meets`]).

use std::sync::Arc;
use std::time::Instant;

use keel_region::{Durability, EngineOptions, FamilyOptions, InMemoryCompaction};

use super::db::Target;
use super::peers::{self, Peer, PeerKind, WriteMode};
use super::props::{Props, preset};
use super::runner::{self, RunOptions};
use super::targets::{Embedded, Layout};
use super::workload::CoreWorkload;

/// An engine in the comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    /// Keel embedded, in a layout.
    Keel(Layout),
    /// A peer.
    Peer(PeerKind),
}

impl Engine {
    /// Its name in reports.
    pub fn name(self) -> String {
        match self {
            Engine::Keel(Layout::Columns) => "Keel columns".into(),
            Engine::Keel(Layout::Cell) => "Keel cell".into(),
            Engine::Peer(kind) => kind.name().into(),
        }
    }
}

/// What a row measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Work {
    /// A YCSB workload (`a`, `c`, `e`, `f`) over loaded records.
    Ycsb(&'static str),
    /// `threads` threads each incrementing the 100 hot rows in turn, `per_thread` times.
    Increment {
        /// Client threads.
        threads: usize,
        /// Increments per thread.
        per_thread: usize,
    },
}

/// One row of the comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Row {
    /// The figure's workload token (`a`, `c`, `e`, `f`, `increment`).
    pub name: &'static str,
    /// What runs.
    pub work: Work,
    /// `Sync` or `Fsync`.
    pub mode: WriteMode,
    /// YCSB operations in the run phase (for `Ycsb`).
    pub operations: u64,
}

impl Row {
    /// The durability token of the figure names.
    pub fn level(&self) -> &'static str {
        match self.mode {
            WriteMode::Fsync => "fsync",
            _ => "sync",
        }
    }
}

/// The comparison's size.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Records loaded before each YCSB run.
    pub records: u64,
    /// YCSB client threads.
    pub threads: usize,
    /// Rounds (each engine measured once per round).
    pub rounds: usize,
    /// The rows.
    pub rows: Vec<Row>,
    /// The peers.
    pub peers: Vec<PeerKind>,
    /// Keel's layouts that run (fewer only to profile one layout, or a peer alone).
    pub layouts: Vec<Layout>,
    /// Keel's in-memory compaction (`BASIC` unless asked otherwise: a setting an HBase user
    /// chooses per table or server, like the layout; `NONE` is HBase's default).
    pub in_memory_compaction: InMemoryCompaction,
    /// Under `BASIC`, whether an in-memory flush copies its cells into key order (Keel's
    /// default, `RegionLimits::flatten_copies`); off to measure the flattening that does not.
    pub flatten_copies: bool,
}

impl Plan {
    /// The full comparison (`quick`: a shortened one that runs in under a minute).
    pub fn new(quick: bool) -> Plan {
        // Operations per row: enough for a few seconds each at the full size.
        let scale = |full: u64| if quick { (full / 40).max(200) } else { full };
        let ycsb = |name: &'static str, mode: WriteMode, full: u64| Row {
            name,
            work: Work::Ycsb(name),
            mode,
            operations: scale(full),
        };
        let increment = |mode: WriteMode, per_thread: usize| Row {
            name: "increment",
            work: Work::Increment {
                threads: 80,
                per_thread: if quick { per_thread / 20 } else { per_thread },
            },
            mode,
            operations: 0,
        };
        Plan {
            records: if quick { 5_000 } else { 100_000 },
            threads: 8,
            rounds: if quick { 1 } else { 2 },
            rows: vec![
                ycsb("a", WriteMode::Sync, 200_000),
                ycsb("a", WriteMode::Fsync, 40_000),
                ycsb("c", WriteMode::Sync, 800_000),
                ycsb("e", WriteMode::Sync, 40_000),
                ycsb("e", WriteMode::Fsync, 20_000),
                ycsb("f", WriteMode::Sync, 200_000),
                ycsb("f", WriteMode::Fsync, 40_000),
                increment(WriteMode::Sync, 1_000),
                increment(WriteMode::Fsync, 400),
            ],
            peers: PeerKind::built(),
            layouts: vec![Layout::Columns, Layout::Cell],
            in_memory_compaction: InMemoryCompaction::Basic,
            flatten_copies: true,
        }
    }

    /// The engines a row runs: both Keel layouts where the layout matters (increments are
    /// one cell in either), and every peer.
    pub fn engines(&self, row: &Row) -> Vec<Engine> {
        let mut engines = Vec::new();
        for &layout in &self.layouts {
            // Increments are one cell in either layout: they run once, as columns.
            if matches!(row.work, Work::Ycsb(_)) || layout == Layout::Columns {
                engines.push(Engine::Keel(layout));
            }
        }
        engines.extend(self.peers.iter().map(|&p| Engine::Peer(p)));
        engines
    }
}

/// An engine's throughputs (ops/s) in one row, one per round.
#[derive(Debug, Clone)]
pub struct Measured {
    /// The engine.
    pub engine: Engine,
    /// Ops/s per round.
    pub rounds: Vec<f64>,
}

impl Measured {
    /// The median round.
    pub fn median(&self) -> f64 {
        median(&self.rounds)
    }
}

/// The median of `values` (the mean of the middle two for an even count).
pub fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// Runs `row` on a fresh store of `engine` in `dir`; returns its ops/s.
pub fn measure(
    plan: &Plan,
    row: &Row,
    engine: Engine,
    dir: &std::path::Path,
) -> Result<f64, String> {
    match engine {
        Engine::Keel(layout) => {
            let durability = match row.mode {
                WriteMode::Fsync => Durability::FsyncWal,
                _ => Durability::SyncWal,
            };
            let store = Arc::new(
                keel_region::Engine::open(dir, {
                    let mut options = EngineOptions::default();
                    options.limits.in_memory_compaction = plan.in_memory_compaction;
                    options.limits.flatten_copies = plan.flatten_copies;
                    options
                })
                .map_err(|e| format!("opening Keel in {}: {e}", dir.display()))?,
            );
            let outcome = match row.work {
                Work::Ycsb(workload) => {
                    let load = Embedded::new(&store, "usertable", "family", layout)?;
                    let run = load.clone().with_durability(durability);
                    ycsb(plan, row, workload, &load, &run)
                }
                Work::Increment {
                    threads,
                    per_thread,
                } => {
                    let table = store
                        .create_table("counters", vec![FamilyOptions::new("f")])
                        .map_err(|e| e.to_string())?;
                    increments(threads, per_thread, |row| {
                        table
                            .region_for(row)
                            .increment(row, b"f", b"count", 1, durability)
                            .map(|(value, _)| value as u64)
                            .map_err(|e| e.to_string())
                    })
                }
            };
            // Closed here, not in the next measurement's time: flushes, compactions and the
            // WAL's threads finish before the next store opens.
            Arc::try_unwrap(store)
                .map_err(|_| "the Keel store is still shared".to_string())?
                .close()
                .map_err(|e| e.to_string())?;
            outcome
        }
        Engine::Peer(kind) => {
            let kv = peers::open(kind, dir)?;
            match row.work {
                Work::Ycsb(workload) => {
                    let load = Peer::new(kind, Arc::clone(&kv), WriteMode::Load);
                    let run = Peer::new(kind, Arc::clone(&kv), row.mode);
                    let settle = || kv.settle();
                    ycsb_settled(plan, row, workload, &load, &settle, &run)
                }
                Work::Increment {
                    threads,
                    per_thread,
                } => increments(threads, per_thread, |key| kv.increment(key, row.mode)),
            }
        }
    }
}

fn ycsb(
    plan: &Plan,
    row: &Row,
    workload: &str,
    load: &dyn Target,
    run: &dyn Target,
) -> Result<f64, String> {
    ycsb_settled(plan, row, workload, load, &|| Ok(()), run)
}

/// Loads `plan.records` through `load`, calls `settle`, and returns the run phase's ops/s
/// through `run`.
fn ycsb_settled(
    plan: &Plan,
    row: &Row,
    workload: &str,
    load: &dyn Target,
    settle: &dyn Fn() -> Result<(), String>,
    run: &dyn Target,
) -> Result<f64, String> {
    let mut props = Props::new();
    props.load_str(preset(workload).ok_or_else(|| format!("no workload {workload}"))?);
    props.set("recordcount", &plan.records.to_string());
    props.set("operationcount", &row.operations.to_string());
    props.set("threadcount", &plan.threads.to_string());
    let work = CoreWorkload::new(&props).map_err(|e| e.to_string())?;
    let quiet = |load| -> Result<RunOptions, String> {
        let mut o = RunOptions::from_props(&props, load).map_err(|e| e.to_string())?;
        o.status = false;
        o.progress = false;
        Ok(o)
    };
    runner::run(&work, load, &quiet(true)?)?;
    settle()?;
    // Timed here, to the nanosecond: YCSB's report keeps whole milliseconds, which quantizes a
    // short run's throughput (a `--quick` read phase lasts tens of milliseconds).
    let started = Instant::now();
    let report = runner::run(&work, run, &quiet(false)?)?;
    let elapsed = started.elapsed().as_secs_f64();
    if report.errors() > 0 {
        return Err(format!("{} failed operations", report.errors()));
    }
    Ok(report.operations as f64 / elapsed)
}

/// `threads` threads each increment the rows `row-0000` … `row-0099` in turn, `per_thread`
/// times; checks every increment landed and returns increments per second.
fn increments(
    threads: usize,
    per_thread: usize,
    increment: impl Fn(&[u8]) -> Result<u64, String> + Sync,
) -> Result<f64, String> {
    const ROWS: usize = 100;
    let started = Instant::now();
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                let increment = &increment;
                s.spawn(move || -> Result<(), String> {
                    for i in 0..per_thread {
                        increment(format!("row-{:04}", i % ROWS).as_bytes())?;
                    }
                    Ok(())
                })
            })
            .collect();
        handles.into_iter().try_for_each(|h| {
            h.join()
                .map_err(|_| "an increment thread panicked".to_string())?
        })
    })?;
    let elapsed = started.elapsed();
    // Every increment landed once: the next one of row 0 sees them all.
    let expected = (threads * per_thread.div_ceil(ROWS)) as u64;
    let seen = increment(b"row-0000")? - 1;
    if per_thread >= ROWS && seen != expected {
        return Err(format!(
            "row-0000 holds {seen} increments, {expected} were made"
        ));
    }
    Ok((threads * per_thread) as f64 / elapsed.as_secs_f64())
}

/// Every row's measurements, in the plan's order.
pub type Results = Vec<(Row, Vec<Measured>)>;

/// Runs the plan: every row, every engine, `rounds` times, the order reversed each round.
/// `progress` hears each measurement.
pub fn run(plan: &Plan, progress: &mut dyn FnMut(&Row, Engine, f64)) -> Result<Results, String> {
    let mut results = Vec::new();
    for row in &plan.rows {
        let engines = plan.engines(row);
        let mut measured: Vec<Measured> = engines
            .iter()
            .map(|&engine| Measured {
                engine,
                rounds: Vec::new(),
            })
            .collect();
        for round in 0..plan.rounds {
            let mut order: Vec<usize> = (0..engines.len()).collect();
            if round % 2 == 1 {
                order.reverse();
            }
            for i in order {
                let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
                let ops = measure(plan, row, engines[i], dir.path()).map_err(|e| {
                    format!("{} {} {}: {e}", row.name, row.level(), engines[i].name())
                })?;
                progress(row, engines[i], ops);
                measured[i].rounds.push(ops);
            }
        }
        results.push((*row, measured));
    }
    Ok(results)
}

/// Keel's best layout ÷ the best peer that meets the row's durability (`None` without one).
pub fn keel_vs_best(row: &Row, measured: &[Measured]) -> Option<f64> {
    let keel = measured
        .iter()
        .filter(|m| matches!(m.engine, Engine::Keel(_)))
        .map(Measured::median)
        .fold(0.0, f64::max);
    let best = measured
        .iter()
        .filter(|m| matches!(m.engine, Engine::Peer(p) if p.meets(row.mode)))
        .map(Measured::median)
        .fold(0.0, f64::max);
    (best > 0.0).then(|| keel / best)
}

/// Keel's columns layout ÷ its cell layout in a YCSB row.
pub fn columns_vs_cell(measured: &[Measured]) -> Option<f64> {
    let of = |layout| {
        measured
            .iter()
            .find(|m| m.engine == Engine::Keel(layout))
            .map(Measured::median)
    };
    Some(of(Layout::Columns)? / of(Layout::Cell)?)
}
