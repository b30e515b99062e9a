//! Seed 000, HBASE-26551: FastPathRWQueueRpcExecutor vs RWQueueRpcExecutor. The seed's YCSB
//! workload over the network: 50% writes (insert and update), 25% gets, 25% scans of up to
//! 1 000 rows, 100 client threads, read ratio 0.5, handler factor 0.2, with 1 000 handlers and
//! with a count sized to this machine (30). Throughput, p95/p99 per operation, and the mean
//! queue time every half second (the seed's QueueTimeComparison chart). Every run gets a store
//! of its own, loaded the same way (a run inherits no grown memstore or extra versions from
//! the one before it); three pairs per handler count, the side that runs first alternating
//! from pair to pair; the report gives medians and the spread of the pairs' ratios.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use keel_region::{Engine, EngineOptions};
use keel_rpc::{ExecutorKind, RpcOptions};
use keel_server::{Handler, HandlerOptions, NetOptions, ThriftServer};

use super::{Row, SeedResult, Series, Size, median};
use crate::ycsb::measure::Report;
use crate::ycsb::props::Props;
use crate::ycsb::runner::{RunOptions, run};
use crate::ycsb::targets::{Layout, Thrift};
use crate::ycsb::workload::CoreWorkload;

struct Shape {
    records: i64,
    operations: i64,
    threads: usize,
    max_scan: i64,
    handler_counts: &'static [usize],
}

fn shape(size: Size) -> Shape {
    match size {
        Size::Quick => Shape {
            records: 500,
            operations: 1_000,
            threads: 8,
            max_scan: 50,
            handler_counts: &[30],
        },
        Size::Default => Shape {
            records: 20_000,
            operations: 20_000,
            threads: 100,
            max_scan: 1_000,
            handler_counts: &[1_000, 30],
        },
        Size::Full => Shape {
            records: 200_000,
            operations: 200_000,
            threads: 100,
            max_scan: 1_000,
            handler_counts: &[1_000, 30],
        },
    }
}

fn props(s: &Shape) -> Props {
    let mut p = Props::new();
    p.load_str(&format!(
        "recordcount={}\noperationcount={}\nthreadcount={}\nreadproportion=0.25\n\
         scanproportion=0.25\nupdateproportion=0.25\ninsertproportion=0.25\nmaxscanlength={}\n",
        s.records, s.operations, s.threads, s.max_scan
    ));
    p
}

fn quiet(mut o: RunOptions) -> RunOptions {
    o.status = false;
    o.progress = false;
    o
}

/// The mean queue time per interval, sampled from the executor's histograms.
fn sample_queue_time(server: &ThriftServer, stop: &AtomicBool) -> Vec<(f64, f64)> {
    let started = Instant::now();
    let mut previous: Option<hdrhistogram::Histogram<u64>> = None;
    let mut points = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(500));
        let metrics = server.executor().metrics();
        let mut all: Option<hdrhistogram::Histogram<u64>> = None;
        for pool in metrics.pools {
            match &mut all {
                None => all = Some(pool.queue_time_us),
                Some(h) => {
                    let _ = h.add(&pool.queue_time_us);
                }
            }
        }
        let Some(all) = all else { continue };
        let mut interval = all.clone();
        if let Some(prev) = &previous {
            let _ = interval.subtract(prev);
        }
        if !interval.is_empty() {
            points.push((started.elapsed().as_secs_f64(), interval.mean()));
        }
        previous = Some(all);
    }
    points
}

/// `store` served over loopback with `rpc`, and a YCSB target on it for `workload`'s table.
fn serve(
    store: &Arc<Engine>,
    rpc: RpcOptions,
    workload: &CoreWorkload,
) -> Result<(ThriftServer, Thrift), String> {
    let server = ThriftServer::start(
        Arc::new(Handler::new(Arc::clone(store), HandlerOptions::default())),
        NetOptions {
            listen: "127.0.0.1:0".parse().map_err(|e| format!("{e}"))?,
            rpc,
            ..NetOptions::default()
        },
    )
    .map_err(|e| format!("starting the server: {e}"))?;
    let target = Thrift::new(
        server.local_addr(),
        &workload.table,
        "family",
        Layout::Columns,
    )?;
    Ok((server, target))
}

fn one_run(
    store: &Arc<Engine>,
    workload: &CoreWorkload,
    p: &Props,
    handlers: usize,
    kind: ExecutorKind,
) -> Result<(Report, Vec<(f64, f64)>), String> {
    let rpc = RpcOptions {
        handler_count: handlers,
        read_ratio: 0.5,
        handler_factor: 0.2,
        executor: Some(kind),
        ..RpcOptions::default()
    };
    let (server, target) = serve(store, rpc, workload)?;
    let stop = AtomicBool::new(false);
    let (report, series) = std::thread::scope(|s| {
        let sampler = s.spawn(|| sample_queue_time(&server, &stop));
        let report = RunOptions::from_props(p, false)
            .map_err(|e| e.to_string())
            .and_then(|o| run(workload, &target, &quiet(o)));
        stop.store(true, Ordering::Relaxed);
        (report, sampler.join().unwrap_or_default())
    });
    server.shutdown();
    Ok((report?, series))
}

fn percentile(r: &Report, op: &str, p: f64) -> f64 {
    r.ops
        .iter()
        .find(|o| o.name == op)
        .and_then(|o| o.percentiles.iter().find(|(q, _)| *q == p))
        .map_or(f64::NAN, |(_, v)| *v as f64)
}

/// Loads a fresh store with the workload's records (8 threads, not measured).
fn loaded_store(p: &Props, dir: &std::path::Path) -> Result<Arc<Engine>, String> {
    let store = Arc::new(Engine::open(dir, EngineOptions::default()).map_err(|e| e.to_string())?);
    let workload = CoreWorkload::new(p).map_err(|e| e.to_string())?;
    let (server, target) = serve(&store, RpcOptions::default(), &workload)?;
    let mut load = quiet(RunOptions::from_props(p, true).map_err(|e| e.to_string())?);
    load.threads = 8;
    run(&workload, &target, &load)?;
    server.shutdown();
    Ok(store)
}

/// One side's runs of a handler count.
#[derive(Default)]
struct Side {
    reports: Vec<Report>,
}

impl Side {
    fn median_of(&self, f: impl Fn(&Report) -> f64) -> f64 {
        median(self.reports.iter().map(f))
    }
}

/// Runs the experiment: for each handler count, `pairs` pairs of runs, each run on a fresh
/// store loaded the same way, the side that runs first alternating from pair to pair.
pub fn run_seed(size: Size) -> Result<SeedResult, String> {
    let s = shape(size);
    let p = props(&s);
    let pairs = 3;
    let mut rows = Vec::new();
    let mut series = Vec::new();
    let mut notes = Vec::new();
    let mut headline = f64::NAN;
    let mut turn = 0usize;
    for (i, &handlers) in s.handler_counts.iter().enumerate() {
        let (mut fast, mut plain) = (Side::default(), Side::default());
        let mut ratios = Vec::new();
        for pair in 0..pairs {
            let order = if turn.is_multiple_of(2) {
                [ExecutorKind::FastPathRwQueue, ExecutorKind::RwQueue]
            } else {
                [ExecutorKind::RwQueue, ExecutorKind::FastPathRwQueue]
            };
            turn += 1;
            let mut throughput = [f64::NAN; 2];
            for kind in order {
                let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
                let store = loaded_store(&p, dir.path())?;
                let workload = CoreWorkload::new(&p).map_err(|e| e.to_string())?;
                let (report, points) = one_run(&store, &workload, &p, handlers, kind)?;
                drop(store);
                if pair == 0 {
                    series.push(Series {
                        label: format!("{kind:?}, {handlers} handlers"),
                        points,
                    });
                }
                let (slot, side) = if kind == ExecutorKind::FastPathRwQueue {
                    (0, &mut fast)
                } else {
                    (1, &mut plain)
                };
                throughput[slot] = report.throughput();
                side.reports.push(report);
            }
            ratios.push(throughput[0] / throughput[1]);
        }
        let seed = handlers == 1_000;
        rows.push(Row {
            measure: format!("throughput, ops/s ({handlers} handlers, median of {pairs})"),
            keel_a: fast.median_of(Report::throughput),
            keel_b: plain.median_of(Report::throughput),
            seed_a: seed.then_some(5_498.342_249_811_681_5),
            seed_b: seed.then_some(5_215.053_146_606_617),
        });
        let published: [(&str, [f64; 4]); 4] = [
            ("READ", [29_775.0, 39_391.0, 30_815.0, 43_071.0]),
            ("UPDATE", [29_855.0, 39_551.0, 30_255.0, 41_855.0]),
            ("INSERT", [29_919.0, 39_647.0, 30_271.0, 41_919.0]),
            ("SCAN", [57_823.0, 74_751.0, 62_879.0, 80_447.0]),
        ];
        for (op, [f95, f99, p95, p99]) in published {
            for (q, fa, pb) in [(95.0, f95, p95), (99.0, f99, p99)] {
                rows.push(Row {
                    measure: format!("{op} p{q} µs ({handlers} handlers)"),
                    keel_a: fast.median_of(|r| percentile(r, op, q)),
                    keel_b: plain.median_of(|r| percentile(r, op, q)),
                    seed_a: seed.then_some(fa),
                    seed_b: seed.then_some(pb),
                });
            }
        }
        let ratio = median(ratios.iter().copied());
        if i == 0 {
            headline = ratio;
        }
        let (low, high) = ratios
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), r| {
                (l.min(*r), h.max(*r))
            });
        notes.push(format!(
            "{handlers} handlers: fast path ÷ RW queue throughput per pair {}; median {ratio:.3}, \
             spread {low:.3}–{high:.3} ({pairs} pairs, each run on a fresh store, the first side \
             alternating)",
            ratios
                .iter()
                .map(|r| format!("{r:.3}"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    Ok(SeedResult {
        id: "seed000".into(),
        name: "fastpath".into(),
        hbase: "HBASE-26551".into(),
        title: "FastPathRWQueueRpcExecutor vs RWQueueRpcExecutor".into(),
        seed_labels: None,
        labels: ("fast path".into(), "RW queue".into()),
        setup: format!(
            "keel serve in-process over loopback (Thrift, framed binary); YCSB: {} records, {} operations, \
             25% insert / 25% update / 25% read / 25% scan (up to {} rows), {} client threads; \
             read ratio 0.5, handler factor 0.2; handler counts {:?}; 3 pairs per handler count, \
             every run on a freshly loaded store, the side that runs first alternating; medians",
            s.records, s.operations, s.max_scan, s.threads, s.handler_counts
        ),
        figure: ("seed000_fastpath_throughput_ratio".into(), headline),
        rows,
        notes,
        series,
        tables: Vec::new(),
        size,
    })
}
