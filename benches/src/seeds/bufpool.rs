//! Seed 002, HBASE-14490: a bounded pool of fixed-size request buffers shared by every
//! connection vs allocating each request's buffer. The seed's YCSB workload over the network:
//! 25 client threads, records of 64 fields with zipfian lengths up to 10 KiB, loaded, then read
//! (one zipfian-chosen field each); the server's request buffers counted by keel-bufpool.
//! keel-server wires two strategies — HBase's fixed-size pool (its default) and plain
//! allocation (`hbase.server.allocator.pool.enabled = false`).

use std::sync::Arc;

use keel_bufpool::{PoolOptions, PoolStats};
use keel_region::{RegionServer, ServerOptions};
use keel_server::{Handler, HandlerOptions, NetOptions, ThriftServer};

use super::{Row, SeedResult, Size};
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
    load: Report,
    read: Report,
    after_load: PoolStats,
    after_read: PoolStats,
}

fn one_strategy(p: &Props, pool: PoolOptions) -> Result<Outcome, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let store = Arc::new(
        RegionServer::open(dir.path(), ServerOptions::default()).map_err(|e| e.to_string())?,
    );
    let server = ThriftServer::start(
        Arc::new(Handler::new(store, HandlerOptions::default())),
        NetOptions {
            listen: "127.0.0.1:0".parse().map_err(|e| format!("{e}"))?,
            pool,
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
    let minus = |a: PoolStats, b: PoolStats| PoolStats {
        buffers_created: a.buffers_created - b.buffers_created,
        bytes_created: a.bytes_created - b.bytes_created,
        buffers_discarded: a.buffers_discarded - b.buffers_discarded,
        bytes_discarded: a.bytes_discarded - b.bytes_discarded,
        heap_allocations: a.heap_allocations - b.heap_allocations,
        heap_bytes: a.heap_bytes - b.heap_bytes,
        pooled_allocations: a.pooled_allocations - b.pooled_allocations,
        ..a
    };
    Ok(Outcome {
        load,
        read,
        after_load: minus(after_load, base),
        after_read: minus(after_read, after_load),
    })
}

/// Heap allocations made for request buffers: requests served from the heap plus buffers the
/// pool created (each of those is one allocation too).
fn allocations(s: &PoolStats) -> u64 {
    s.heap_allocations + s.buffers_created
}

fn average(r: &Report, op: &str) -> f64 {
    r.ops
        .iter()
        .find(|o| o.name == op)
        .map_or(f64::NAN, |o| o.average_us)
}

/// Runs the experiment.
pub fn run_seed(size: Size) -> Result<SeedResult, String> {
    let p = props(size);
    let plain = PoolOptions {
        min_allocate_size: usize::MAX,
        ..PoolOptions::default()
    };
    let pooled = one_strategy(&p, PoolOptions::default())?;
    let heap = one_strategy(&p, plain)?;
    let total = |o: &Outcome| allocations(&o.after_load) + allocations(&o.after_read);
    let bytes = |o: &Outcome| {
        o.after_load.heap_bytes
            + o.after_load.bytes_created
            + o.after_read.heap_bytes
            + o.after_read.bytes_created
    };
    let ratio = total(&heap) as f64 / total(&pooled).max(1) as f64;
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
            measure: "buffers created (insert phase)".into(),
            keel_a: allocations(&pooled.after_load) as f64,
            keel_b: allocations(&heap.after_load) as f64,
            seed_a: Some(15.0),
            seed_b: Some(70.0),
        },
        Row {
            measure: "bytes created (insert phase)".into(),
            keel_a: (pooled.after_load.heap_bytes + pooled.after_load.bytes_created) as f64,
            keel_b: (heap.after_load.heap_bytes + heap.after_load.bytes_created) as f64,
            seed_a: Some(1_441_979.0),
            seed_b: Some(503_152.0),
        },
        Row {
            measure: "buffers created (read phase)".into(),
            keel_a: allocations(&pooled.after_read) as f64,
            keel_b: allocations(&heap.after_read) as f64,
            seed_a: Some(0.0),
            seed_b: Some(10_058.0),
        },
        Row {
            measure: "bytes created, both phases".into(),
            keel_a: bytes(&pooled) as f64,
            keel_b: bytes(&heap) as f64,
            seed_a: None,
            seed_b: None,
        },
    ];
    let notes = vec![
        format!(
            "pool: {} pooled buffers handed out, {} heap requests, {} buffers created (insert phase); {} pooled, {} heap (read phase)",
            pooled.after_load.pooled_allocations,
            pooled.after_load.heap_allocations,
            pooled.after_load.buffers_created,
            pooled.after_read.pooled_allocations,
            pooled.after_read.heap_allocations
        ),
        "A read request (one field) is far below the pool's minimum (a sixth of 65 KiB), so HBase's \
         pool and Keel's serve reads from the heap under both strategies; the seed's byteBufferPool \
         compared here is a different pool that did allocate per read."
            .into(),
        "An insert larger than one 65 KiB buffer arrives as a chain of pooled buffers, which keel-server \
         copies into one contiguous buffer for the decoder (docs/server.md): those copies are heap \
         allocations the pool does not count."
            .into(),
    ];
    Ok(SeedResult {
        id: "seed002".into(),
        name: "bufpool".into(),
        hbase: "HBASE-14490".into(),
        title: "a shared fixed-size request buffer pool vs per-request allocation".into(),
        labels: ("fixed-size pool".into(), "plain allocation".into()),
        setup: format!(
            "keel serve in-process over loopback; YCSB: {} records of 64 fields, zipfian lengths up to {} bytes, \
             25 threads, load then read one field per record (zipfian keys); the seed's B column is \
             the byteBufferPool it compared against",
            p.get("recordcount").unwrap_or("?"),
            p.get("fieldlength").unwrap_or("?")
        ),
        figure: ("seed002_heap_alloc_reduction".into(), ratio),
        rows,
        notes,
        series: Vec::new(),
        size,
    })
}
