//! Seed 002, HBASE-14490: HBase 1's shared `BoundedByteBufferPool` vs the `ByteBufferPool`
//! Hiroshi Ikeda attached to the issue, for request buffers, as the seed compared them. The
//! seed's YCSB workload over the network: 25 client threads, records of 64 fields with zipfian
//! lengths up to 10 KiB, loaded, then read (one zipfian-chosen field each); the server's
//! request buffers counted by keel-bufpool. The headline is the seed's: buffers created over
//! both phases, byteBufferPool ÷ BoundedByteBufferPool (the two as keel-bufpool's
//! `size-class` and `shared-average` designs, wired into keel-server through
//! `keel.server.request.buffers`), in alternating pairs on fresh stores. Every other design
//! (HBase 2's fixed-size pool, Keel's default; plain allocation; one buffer per connection) runs
//! once beside them.

use std::sync::Arc;

use keel_bufpool::{PoolStats, Strategy};
use keel_region::{Engine, EngineOptions};
use keel_server::{Handler, HandlerOptions, NetOptions, ThriftServer};

use super::{Row, SeedResult, Size, Table};
use crate::ycsb::measure::Report;
use crate::ycsb::props::Props;
use crate::ycsb::runner::{RunOptions, run};
use crate::ycsb::targets::{Layout, Thrift};
use crate::ycsb::workload::CoreWorkload;

fn props(size: Size) -> Props {
    let (records, field_length) = match size {
        Size::Quick => (100, 1_024),
        Size::Default => (2_000, 10_240),
        Size::Full => (10_000, 10_240),
    };
    let mut p = Props::new();
    p.load_str(&format!(
        "recordcount={records}\noperationcount={records}\nthreadcount=25\nreadproportion=1.0\n\
         updateproportion=0\nscanproportion=0\ninsertproportion=0\nfieldcount=64\n\
         fieldlength={field_length}\nreadallfields=false\nwriteallfields=false\n\
         fieldlengthdistribution=zipfian\nrequestdistribution=zipfian\n"
    ));
    p
}

struct Outcome {
    strategy: Strategy,
    load: Report,
    read: Report,
    after_load: PoolStats,
    after_read: PoolStats,
}

fn one_strategy(p: &Props, buffers: Strategy) -> Result<Outcome, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let store =
        Arc::new(Engine::open(dir.path(), EngineOptions::default()).map_err(|e| e.to_string())?);
    let server = ThriftServer::start(
        Arc::new(Handler::new(store, HandlerOptions::default())),
        NetOptions {
            listen: "127.0.0.1:0".parse().map_err(|e| format!("{e}"))?,
            buffers,
            ..NetOptions::default()
        },
    )
    .map_err(|e| format!("starting the server: {e}"))?;
    let workload = CoreWorkload::new(p).map_err(|e| e.to_string())?;
    let target = Thrift::new(
        server.local_addr(),
        &workload.table,
        "family",
        Layout::Columns,
    )?;
    let options = |load| {
        RunOptions::from_props(p, load).map(|mut o| {
            o.status = false;
            o.progress = false;
            o
        })
    };
    let base = server.pool_stats();
    let load = run(
        &workload,
        &target,
        &options(true).map_err(|e| e.to_string())?,
    )?;
    let after_load = server.pool_stats();
    let read = run(
        &workload,
        &target,
        &options(false).map_err(|e| e.to_string())?,
    )?;
    let after_read = server.pool_stats();
    server.shutdown();
    Ok(Outcome {
        strategy: buffers,
        load,
        read,
        after_load: after_load.since(&base),
        after_read: after_read.since(&after_load),
    })
}

/// Heap allocations made for request buffers. The fixed pool: requests served from the heap
/// plus the pooled buffers it created. The heap designs count each new buffer both as created
/// and as a heap allocation, and a reused one as neither: their creations.
fn allocations(strategy: Strategy, s: &PoolStats) -> u64 {
    match strategy {
        Strategy::FixedPool => s.heap_allocations + s.buffers_created,
        _ => s.buffers_created,
    }
}

fn average(r: &Report, op: &str) -> f64 {
    r.ops
        .iter()
        .find(|o| o.name == op)
        .map_or(f64::NAN, |o| o.average_us)
}

fn p99(r: &Report, op: &str) -> f64 {
    r.ops
        .iter()
        .find(|o| o.name == op)
        .and_then(|o| o.percentiles.iter().find(|(p, _)| *p == 99.0))
        .map_or(f64::NAN, |(_, us)| *us as f64)
}

/// Request-buffer allocations over both phases.
fn total(o: &Outcome) -> u64 {
    allocations(o.strategy, &o.after_load) + allocations(o.strategy, &o.after_read)
}

/// Buffers a design created over both phases (the seed's "create times").
fn created(o: &Outcome) -> f64 {
    (o.after_load.buffers_created + o.after_read.buffers_created) as f64
}

/// The median of `f` over a design's runs.
fn median(runs: &[Outcome], f: &dyn Fn(&Outcome) -> f64) -> f64 {
    super::median(runs.iter().map(f))
}

/// One measure: its name, how to read it from a run, and the seed's BoundedByteBufferPool and
/// byteBufferPool values (NaN where the seed published none).
type Measure = (&'static str, fn(&Outcome) -> f64, [f64; 2]);

const MEASURES: [Measure; 12] = [
    (
        "insert throughput, ops/s",
        |o| o.load.throughput(),
        [232.504, 230.044],
    ),
    (
        "insert average latency, µs",
        |o| average(&o.load, "INSERT"),
        [2_004.2, 1_998.9],
    ),
    ("insert p99, µs", |o| p99(&o.load, "INSERT"), [f64::NAN; 2]),
    (
        "read throughput, ops/s",
        |o| o.read.throughput(),
        [306.157, 285.177],
    ),
    (
        "read average latency, µs",
        |o| average(&o.read, "READ"),
        [1_057.9, 1_246.4],
    ),
    (
        "buffers created (insert phase)",
        |o| o.after_load.buffers_created as f64,
        [15.0, 70.0],
    ),
    (
        "buffers discarded (insert phase)",
        |o| o.after_load.buffers_discarded as f64,
        [13.0, 66.0],
    ),
    (
        "bytes of buffers created (insert phase)",
        |o| o.after_load.bytes_created as f64,
        [1_441_979.0, 503_152.0],
    ),
    (
        "buffers created (read phase)",
        |o| o.after_read.buffers_created as f64,
        [0.0, 10_058.0],
    ),
    (
        "buffers discarded (read phase)",
        |o| o.after_read.buffers_discarded as f64,
        [0.0, 10_058.0],
    ),
    (
        "bytes of buffers created (read phase)",
        |o| o.after_read.bytes_created as f64,
        [0.0, 1_344_303.0],
    ),
    (
        "heap allocations for request buffers, both phases",
        |o| total(o) as f64,
        [f64::NAN; 2],
    ),
];

/// Every design side by side (medians of its runs), the seed's two pools beside them.
fn all_designs(runs: &[(Strategy, Vec<Outcome>)]) -> Table {
    let known = |v: f64| Some(v).filter(|v| v.is_finite());
    let mut rows: Vec<(String, Vec<Option<f64>>)> = MEASURES
        .iter()
        .map(|(measure, f, seed)| {
            let mut values: Vec<Option<f64>> =
                runs.iter().map(|(_, o)| known(median(o, f))).collect();
            values.extend(seed.map(known));
            (measure.to_string(), values)
        })
        .collect();
    let plain = runs
        .iter()
        .find(|(s, _)| *s == Strategy::Plain)
        .map_or(f64::NAN, |(_, o)| median(o, &|o| total(o) as f64));
    let mut ratio: Vec<Option<f64>> = runs
        .iter()
        .map(|(_, o)| known(plain / median(o, &|o| total(o).max(1) as f64)))
        .collect();
    ratio.extend([None, None]);
    rows.push(("heap allocations: plain ÷ this design".into(), ratio));
    let mut columns: Vec<String> = runs.iter().map(|(s, _)| s.name().to_string()).collect();
    columns.extend([
        "seed: BoundedByteBufferPool".to_string(),
        "seed: byteBufferPool".to_string(),
    ]);
    Table {
        title: "Every keel-bufpool design in the same run, medians of its runs (shared-average \
                is the seed's BoundedByteBufferPool, size-class its byteBufferPool; buffers \
                created and discarded are what the design itself made and dropped, heap requests \
                included):"
            .into(),
        columns,
        rows,
    }
}

/// The seed's pair: BoundedByteBufferPool (A) and Hiroshi Ikeda's byteBufferPool (B).
const PAIR: [Strategy; 2] = [Strategy::SharedAverage, Strategy::SizeClass];
/// Pairs of the seed's two designs, the one that runs first alternating.
const PAIRS: usize = 3;

/// Runs the experiment: the seed's two pools in alternating pairs, each run on a fresh store,
/// then every other design once.
pub fn run_seed(size: Size) -> Result<SeedResult, String> {
    let p = props(size);
    let mut runs: Vec<(Strategy, Vec<Outcome>)> =
        Strategy::ALL.iter().map(|s| (*s, Vec::new())).collect();
    let mut record = |o: Outcome| {
        if let Some((_, v)) = runs.iter_mut().find(|(s, _)| *s == o.strategy) {
            v.push(o);
        }
    };
    for pair in 0..PAIRS {
        let order = if pair % 2 == 0 {
            PAIR
        } else {
            [PAIR[1], PAIR[0]]
        };
        for strategy in order {
            record(one_strategy(&p, strategy)?);
        }
    }
    for strategy in Strategy::ALL.into_iter().filter(|s| !PAIR.contains(s)) {
        record(one_strategy(&p, strategy)?);
    }
    let outcomes = |s: Strategy| {
        runs.iter()
            .find(|(x, _)| *x == s)
            .map(|(_, o)| o.as_slice())
            .expect("every design ran")
    };
    let (bounded, ikeda) = (outcomes(PAIR[0]), outcomes(PAIR[1]));
    let rows: Vec<Row> = MEASURES
        .iter()
        .filter(|(measure, ..)| !measure.starts_with("insert p99"))
        .map(|(measure, f, [seed_a, seed_b])| Row {
            measure: format!("{measure} (median of {PAIRS})"),
            keel_a: median(bounded, f),
            keel_b: median(ikeda, f),
            seed_a: Some(*seed_a).filter(|v| v.is_finite()),
            seed_b: Some(*seed_b).filter(|v| v.is_finite()),
        })
        .collect();
    let creations = |o: &[Outcome]| median(o, &created);
    let ratio = creations(ikeda) / creations(bounded).max(1.0);
    let read_ratios: Vec<String> = bounded
        .iter()
        .zip(ikeda)
        .map(|(a, b)| format!("{:.3}", a.read.throughput() / b.read.throughput()))
        .collect();
    let notes = vec![
        format!(
            "The seed's pair: BoundedByteBufferPool (shared-average) created {:.0} buffers over \
             both phases and byteBufferPool (size-class) {:.0} (medians of {PAIRS} runs each; the \
             seed: 15 and 10 128). Read throughput, BoundedByteBufferPool ÷ byteBufferPool, per \
             pair: {} (the seed: 1.074).",
            creations(bounded),
            creations(ikeda),
            read_ratios.join(", ")
        ),
        "byteBufferPool is Hiroshi Ikeda's design as its thread and the seed's counters describe \
         it (docs/bufpool.md): a shared free list per power-of-two size from 1 KiB to 1 MiB, \
         requests below 1 KiB served by a fresh buffer each. A read request (one field, about \
         100 bytes) is below it, so every read creates and discards one buffer, as in the seed; \
         BoundedByteBufferPool's shared buffers, sized at the running average, fit the reads."
            .into(),
        "Rust has no collector: a created and discarded buffer costs one malloc and one free, \
         not young-generation churn, so the throughput gap the seed saw (7% on reads) has \
         little to act on here."
            .into(),
        "The other designs (Keel's fixed pool, HBase 2's default; plain allocation; one buffer \
         per connection) ran once each, in the table below."
            .into(),
    ];
    Ok(SeedResult {
        id: "seed002".into(),
        name: "bufpool".into(),
        hbase: "HBASE-14490".into(),
        title: "BoundedByteBufferPool vs Hiroshi Ikeda's byteBufferPool for request buffers (and the other designs)".into(),
        labels: ("BoundedByteBufferPool".into(), "byteBufferPool".into()),
        seed_labels: None,
        setup: format!(
            "keel serve in-process over loopback, a fresh store per run; YCSB: {} records of 64 \
             fields, zipfian lengths up to {} bytes, 25 threads, load then read one field per \
             record (zipfian keys); the seed's two pools in {PAIRS} alternating pairs, every other \
             keel-bufpool design once",
            p.get("recordcount").unwrap_or("?"),
            p.get("fieldlength").unwrap_or("?")
        ),
        figure: ("seed002_buffer_creations_ratio".into(), ratio),
        rows,
        notes,
        series: Vec::new(),
        tables: vec![all_designs(&runs)],
        size,
    })
}
