//! Seed 002, HBASE-14490: a bounded pool of fixed-size request buffers shared by every
//! connection vs allocating each request's buffer. The seed's YCSB workload over the network:
//! 25 client threads, records of 64 fields with zipfian lengths up to 10 KiB, loaded, then read
//! (one zipfian-chosen field each); the server's request buffers counted by keel-bufpool.
//! Once per keel-bufpool design, each wired into keel-server (`keel.server.request.buffers`):
//! HBase's fixed-size pool (its default), plain allocation
//! (`hbase.server.allocator.pool.enabled = false`), one buffer per connection, and HBase 1's
//! shared running-average pool (`BoundedByteBufferPool`, the seed's own A).

use std::sync::Arc;

use keel_bufpool::{PoolStats, Strategy};
use keel_region::{RegionServer, ServerOptions};
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
    let store = Arc::new(
        RegionServer::open(dir.path(), ServerOptions::default()).map_err(|e| e.to_string())?,
    );
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

/// The bytes of those allocations.
fn allocated_bytes(strategy: Strategy, s: &PoolStats) -> u64 {
    match strategy {
        Strategy::FixedPool => s.heap_bytes + s.bytes_created,
        _ => s.bytes_created,
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

/// Bytes allocated for request buffers over both phases.
fn bytes(o: &Outcome) -> u64 {
    allocated_bytes(o.strategy, &o.after_load) + allocated_bytes(o.strategy, &o.after_read)
}

/// Every design side by side, the seed's two pools beside them.
fn all_designs(runs: &[(Strategy, Outcome)]) -> Table {
    let plain = runs
        .iter()
        .find(|(s, _)| *s == Strategy::Plain)
        .map_or(1, |(_, o)| total(o));
    let row = |measure: &str, f: &dyn Fn(&Outcome) -> f64, seed: [f64; 2]| {
        let known = |v: f64| Some(v).filter(|v| v.is_finite());
        let mut values: Vec<Option<f64>> = runs.iter().map(|(_, o)| known(f(o))).collect();
        values.extend(seed.map(known));
        (measure.to_string(), values)
    };
    let created = |s: &PoolStats| s.buffers_created as f64;
    let mut columns: Vec<String> = runs.iter().map(|(s, _)| s.name().to_string()).collect();
    columns.extend([
        "seed: BoundedByteBufferPool".to_string(),
        "seed: byteBufferPool".to_string(),
    ]);
    Table {
        title: "Every keel-bufpool design in the same run (shared-average is the seed's \
                BoundedByteBufferPool; buffers created and discarded are what the design itself \
                made and dropped, heap requests included):"
            .into(),
        columns,
        rows: vec![
            row(
                "insert throughput, ops/s",
                &|o| o.load.throughput(),
                [232.504, 230.044],
            ),
            row(
                "insert average latency, µs",
                &|o| average(&o.load, "INSERT"),
                [2_004.2, 1_998.9],
            ),
            row("insert p99, µs", &|o| p99(&o.load, "INSERT"), [f64::NAN; 2]),
            row(
                "read throughput, ops/s",
                &|o| o.read.throughput(),
                [306.157, 285.177],
            ),
            row(
                "read average latency, µs",
                &|o| average(&o.read, "READ"),
                [1_057.9, 1_246.4],
            ),
            row(
                "buffers created (insert phase)",
                &|o| created(&o.after_load),
                [15.0, 70.0],
            ),
            row(
                "buffers discarded (insert phase)",
                &|o| o.after_load.buffers_discarded as f64,
                [13.0, 66.0],
            ),
            row(
                "bytes of buffers created (insert phase)",
                &|o| o.after_load.bytes_created as f64,
                [1_441_979.0, 503_152.0],
            ),
            row(
                "buffers created (read phase)",
                &|o| created(&o.after_read),
                [0.0, 10_058.0],
            ),
            row(
                "heap allocations for request buffers, both phases",
                &|o| total(o) as f64,
                [f64::NAN; 2],
            ),
            row(
                "heap allocations: plain ÷ this design",
                &|o| plain as f64 / total(o).max(1) as f64,
                [f64::NAN; 2],
            ),
        ],
    }
}

/// Runs the experiment: every design, the fixed pool and plain allocation first (the A/B).
pub fn run_seed(size: Size) -> Result<SeedResult, String> {
    let p = props(size);
    let mut runs = Vec::new();
    for strategy in Strategy::ALL {
        runs.push((strategy, one_strategy(&p, strategy)?));
    }
    let outcome = |s: Strategy| {
        runs.iter()
            .find(|(x, _)| *x == s)
            .map(|(_, o)| o)
            .expect("every design ran")
    };
    let (pooled, heap) = (outcome(Strategy::FixedPool), outcome(Strategy::Plain));
    let ratio = total(heap) as f64 / total(pooled).max(1) as f64;
    let rows = vec![
        Row {
            measure: "insert throughput, ops/s".into(),
            keel_a: pooled.load.throughput(),
            keel_b: heap.load.throughput(),
            seed_a: Some(232.504_068_821_204_38),
            seed_b: Some(230.043_708_304_577_88),
        },
        Row {
            measure: "insert average latency, µs".into(),
            keel_a: average(&pooled.load, "INSERT"),
            keel_b: average(&heap.load, "INSERT"),
            seed_a: Some(2_004.213_3),
            seed_b: Some(1_998.856_5),
        },
        Row {
            measure: "read throughput, ops/s".into(),
            keel_a: pooled.read.throughput(),
            keel_b: heap.read.throughput(),
            seed_a: Some(306.156_813_519_884_9),
            seed_b: Some(285.176_524_268_522_2),
        },
        Row {
            measure: "read average latency, µs".into(),
            keel_a: average(&pooled.read, "READ"),
            keel_b: average(&heap.read, "READ"),
            seed_a: Some(1_057.906_5),
            seed_b: Some(1_246.394_9),
        },
        Row {
            measure: "heap allocations (insert phase)".into(),
            keel_a: allocations(pooled.strategy, &pooled.after_load) as f64,
            keel_b: allocations(heap.strategy, &heap.after_load) as f64,
            seed_a: Some(15.0),
            seed_b: Some(70.0),
        },
        Row {
            measure: "heap allocations (read phase)".into(),
            keel_a: allocations(pooled.strategy, &pooled.after_read) as f64,
            keel_b: allocations(heap.strategy, &heap.after_read) as f64,
            seed_a: Some(0.0),
            seed_b: Some(10_058.0),
        },
        Row {
            measure: "bytes allocated, both phases".into(),
            keel_a: bytes(pooled) as f64,
            keel_b: bytes(heap) as f64,
            seed_a: None,
            seed_b: None,
        },
    ];
    let notes = vec![
        format!(
            "fixed pool: {} pooled buffers handed out, {} heap requests, {} buffers created (insert phase); {} pooled, {} heap (read phase)",
            pooled.after_load.pooled_allocations,
            pooled.after_load.heap_allocations,
            pooled.after_load.buffers_created,
            pooled.after_read.pooled_allocations,
            pooled.after_read.heap_allocations
        ),
        "The seed's A/B was two pools (BoundedByteBufferPool vs Ikeda's byteBufferPool), not a pool \
         vs plain allocation: its columns sit beside Keel's fixed pool and plain allocation for \
         shape only. The table below puts the seed's pools beside all four of Keel's designs."
            .into(),
        "A read request (one field) is far below the fixed pool's minimum (a sixth of 65 KiB), so \
         HBase's pool and Keel's serve reads from the heap; the heap designs that reuse buffers \
         (per-connection, shared-average) reuse them for reads too."
            .into(),
        "The fixed pool reads an insert larger than one 65 KiB buffer straight into the heap \
         (counted): keel-thrift decodes one contiguous slice, so a chain of pooled buffers would \
         only add a copy (docs/server.md). HBase decodes such requests from the chain \
         (MultiByteBuff), which Keel does not yet."
            .into(),
    ];
    Ok(SeedResult {
        id: "seed002".into(),
        name: "bufpool".into(),
        hbase: "HBASE-14490".into(),
        title: "a shared fixed-size request buffer pool vs per-request allocation (and the other designs)".into(),
        labels: ("fixed-size pool".into(), "plain allocation".into()),
        seed_labels: Some(("BoundedByteBufferPool".into(), "byteBufferPool".into())),
        setup: format!(
            "keel serve in-process over loopback, once per request-buffer design; YCSB: {} records \
             of 64 fields, zipfian lengths up to {} bytes, 25 threads, load then read one field per \
             record (zipfian keys)",
            p.get("recordcount").unwrap_or("?"),
            p.get("fieldlength").unwrap_or("?")
        ),
        figure: ("seed002_heap_alloc_reduction".into(), ratio),
        rows,
        notes,
        series: Vec::new(),
        tables: vec![all_designs(&runs)],
        size,
    })
}
