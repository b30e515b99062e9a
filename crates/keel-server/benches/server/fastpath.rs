//! Whole-server A/B of keel-rpc's executors (full runs only): 16 connections each with one
//! call in flight, 50% single-row puts / 50% single-row gets on a pre-loaded table, once with
//! FastPathRwQueue and once with the plain RwQueue (read ratio 0.5), interleaved.

use std::sync::Arc;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use keel_region::{Engine, EngineOptions};
use keel_rpc::ExecutorKind;
use keel_server::{Handler, HandlerOptions, NetOptions, ThriftServer};
use keel_thrift::Client;
use keel_thrift::hbase::{Call, ColumnDescriptor};
use keel_thrift::transport::{Protocol, Transport};
use rand::{Rng, SeedableRng};

use crate::alloc;
use crate::workload::{ROWS, VALUE, b, get_call, put_call};

const CLIENTS: usize = 16;

struct Outcome {
    calls_per_s: f64,
    p99_us: f64,
}

fn run(kind: ExecutorKind, seconds: f64) -> Outcome {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Arc::new(Engine::open(dir.path(), EngineOptions::default()).expect("open"));
    let handler = Arc::new(Handler::new(store, HandlerOptions::default()));
    let mut options = NetOptions {
        listen: "127.0.0.1:0".parse().expect("address"),
        ..NetOptions::default()
    };
    options.rpc.executor = Some(kind);
    options.rpc.read_ratio = 0.5;
    let server = ThriftServer::start(handler, options).expect("start");
    let address = server.local_addr();
    let mut admin = Client::connect(address, Transport::Framed, Protocol::Binary).expect("connect");
    admin
        .call(&Call::CreateTable {
            table: b("t"),
            families: vec![ColumnDescriptor {
                name: b("cf:"),
                ..ColumnDescriptor::default()
            }],
        })
        .expect("create");
    for row in 0..ROWS {
        admin.call(&put_call(row, 1, VALUE)).expect("load");
    }
    let until = Instant::now() + Duration::from_secs_f64(seconds);
    let started = Instant::now();
    let histograms: Vec<(Histogram<u64>, u64)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..CLIENTS)
            .map(|c| {
                s.spawn(move || {
                    alloc::not_counted();
                    let mut client = Client::connect(address, Transport::Framed, Protocol::Binary)
                        .expect("connect");
                    let mut rng = rand::rngs::StdRng::seed_from_u64(c as u64);
                    let mut hist =
                        Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).expect("hist");
                    let mut calls = 0;
                    while Instant::now() < until {
                        let row = rng.random_range(0..ROWS);
                        let call = if rng.random_bool(0.5) {
                            put_call(row, 1, VALUE)
                        } else {
                            get_call(row)
                        };
                        let began = Instant::now();
                        client.call(&call).expect("call");
                        hist.saturating_record(began.elapsed().as_micros().max(1) as u64);
                        calls += 1;
                    }
                    (hist, calls)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("client"))
            .collect()
    });
    let elapsed = started.elapsed().as_secs_f64();
    let mut all = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).expect("hist");
    let mut calls = 0;
    for (h, n) in &histograms {
        all.add(h).expect("merge");
        calls += n;
    }
    server.shutdown();
    Outcome {
        calls_per_s: calls as f64 / elapsed,
        p99_us: all.value_at_quantile(0.99) as f64,
    }
}

/// Runs the comparison and returns (fast-path calls/s, throughput ratio, p99 ratio).
pub(crate) fn compare(seconds: f64, rounds: usize) -> (f64, f64, f64) {
    println!(
        "fast path vs plain RW queue: {CLIENTS} connections, 50% put / 50% get over {ROWS} rows, {seconds} s per run, {rounds} round(s)"
    );
    let mut fast = Vec::new();
    let mut plain = Vec::new();
    for round in 0..rounds {
        let order = if round % 2 == 0 {
            [ExecutorKind::FastPathRwQueue, ExecutorKind::RwQueue]
        } else {
            [ExecutorKind::RwQueue, ExecutorKind::FastPathRwQueue]
        };
        for kind in order {
            let o = run(kind, seconds);
            println!(
                "  round {round}: {kind:?}: {:.0} calls/s, p99 {:.0} µs",
                o.calls_per_s, o.p99_us
            );
            if kind == ExecutorKind::FastPathRwQueue {
                fast.push(o);
            } else {
                plain.push(o);
            }
        }
    }
    let mean =
        |v: &[Outcome], f: fn(&Outcome) -> f64| v.iter().map(f).sum::<f64>() / v.len() as f64;
    let fast_rate = mean(&fast, |o| o.calls_per_s);
    let plain_rate = mean(&plain, |o| o.calls_per_s);
    let fast_p99 = mean(&fast, |o| o.p99_us);
    let plain_p99 = mean(&plain, |o| o.p99_us);
    println!(
        "  fast path vs plain RW queue: throughput {:.3}, p99 {:.3}",
        fast_rate / plain_rate,
        fast_p99 / plain_p99
    );
    (fast_rate, fast_rate / plain_rate, fast_p99 / plain_p99)
}
