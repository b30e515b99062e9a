//! `cargo xtask bench server`: the whole server over TCP — keel-thrift's client, framed binary,
//! 16 connections each with one call in flight, 50% single-row puts / 50% single-row gets on a
//! pre-loaded table — once with keel-rpc's FastPathRwQueue executor and once with the plain
//! RwQueue (read ratio 0.5, 30 handlers), interleaved, 2 rounds (1 with `--quick`). Prints
//! calls per second and call p99 for each, and the fast-path/plain ratios.

#![expect(clippy::print_stdout, reason = "a benchmark reports on the terminal")]

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use hdrhistogram::Histogram;
use keel_region::{RegionServer, ServerOptions};
use keel_rpc::ExecutorKind;
use keel_server::{Handler, HandlerOptions, NetOptions, ThriftServer};
use keel_testkit::figure;
use keel_thrift::Client;
use keel_thrift::hbase::{BatchMutation, Call, ColumnDescriptor, Mutation};
use keel_thrift::transport::{Protocol, Transport};
use rand::{Rng, SeedableRng};

const CLIENTS: usize = 16;
const ROWS: u64 = 10_000;

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

fn put(row: u64) -> Call {
    Call::MutateRows {
        table: b("t"),
        batches: vec![BatchMutation {
            row: b(&format!("row{row:06}")),
            mutations: vec![Mutation {
                column: b("cf:v"),
                value: Some(Bytes::from(vec![b'v'; 100])),
                ..Mutation::default()
            }],
        }],
        timestamp: None,
    }
}

struct Outcome {
    calls_per_s: f64,
    p99_us: f64,
}

fn run(kind: ExecutorKind, seconds: f64) -> Outcome {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Arc::new(RegionServer::open(dir.path(), ServerOptions::default()).expect("open"));
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
        admin.call(&put(row)).expect("load");
    }
    let until = Instant::now() + Duration::from_secs_f64(seconds);
    let started = Instant::now();
    let histograms: Vec<(Histogram<u64>, u64)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..CLIENTS)
            .map(|c| {
                s.spawn(move || {
                    let mut client = Client::connect(address, Transport::Framed, Protocol::Binary)
                        .expect("connect");
                    let mut rng = rand::rngs::StdRng::seed_from_u64(c as u64);
                    let mut hist =
                        Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).expect("hist");
                    let mut calls = 0;
                    while Instant::now() < until {
                        let row = rng.random_range(0..ROWS);
                        let call = if rng.random_bool(0.5) {
                            put(row)
                        } else {
                            Call::GetRows {
                                table: b("t"),
                                rows: vec![b(&format!("row{row:06}"))],
                                columns: None,
                                timestamp: None,
                            }
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

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let (seconds, rounds) = if quick { (2.0, 1) } else { (8.0, 2) };
    println!(
        "server: {CLIENTS} connections, framed binary, 50% put / 50% get over {ROWS} rows, {seconds} s per run, {rounds} round(s)"
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
        "fast path vs plain RW queue: throughput {:.3}, p99 {:.3}",
        fast_rate / plain_rate,
        fast_p99 / plain_p99
    );
    println!("{}", figure("server_calls_per_s", fast_rate));
    println!(
        "{}",
        figure(
            "server_fastpath_vs_rwqueue_throughput",
            fast_rate / plain_rate
        )
    );
    println!(
        "{}",
        figure("server_fastpath_vs_rwqueue_p99", fast_p99 / plain_p99)
    );
}
