//! The operations the benchmark measures, over the network (keel-thrift's client, framed
//! binary, one call in flight per connection, as happybase) and embedded (the same operation as
//! direct keel-region calls), and the timed driver they share.

use std::net::SocketAddr;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use hdrhistogram::Histogram;
use keel_region::matcher::ReadQuery;
use keel_region::{Scan, Table};
use keel_thrift::Client;
use keel_thrift::hbase::{BatchMutation, Call, Mutation, Reply, TScan};
use keel_thrift::transport::{Protocol, Transport};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::alloc;

/// Rows loaded before measuring.
pub(crate) const ROWS: u64 = 10_000;
/// Value bytes of a loaded row and of a measured put.
pub(crate) const VALUE: usize = 100;
/// Rows a measured scan returns.
pub(crate) const SCAN_ROWS: i32 = 10;

pub(crate) fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

pub(crate) fn row_key(i: u64) -> Bytes {
    Bytes::from(format!("row{i:06}"))
}

/// A put of `fields` columns of `value` bytes each to one row.
pub(crate) fn put_call(row: u64, fields: usize, value: usize) -> Call {
    Call::MutateRows {
        table: b("t"),
        batches: vec![BatchMutation {
            row: row_key(row),
            mutations: (0..fields)
                .map(|f| Mutation {
                    column: Bytes::from(format!("cf:f{f}")),
                    value: Some(Bytes::from(vec![b'v'; value])),
                    ..Mutation::default()
                })
                .collect(),
        }],
        timestamp: None,
    }
}

pub(crate) fn get_call(row: u64) -> Call {
    Call::GetRows {
        table: b("t"),
        rows: vec![row_key(row)],
        columns: None,
        timestamp: None,
    }
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// What is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    /// One row by key.
    Get,
    /// One row, one 100-byte column.
    Put,
    /// Ten rows from a random start (open, one batch, close: three calls over the network).
    Scan,
}

/// Throughput and latency of one measured run.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Outcome {
    pub(crate) ops_per_s: f64,
    pub(crate) p50_us: f64,
    pub(crate) p99_us: f64,
}

/// Runs `step` on `threads` threads for `seconds`, each thread with its own state from `make`.
fn drive<S>(
    threads: usize,
    seconds: f64,
    make: impl Fn() -> S + Sync,
    step: impl Fn(&mut S, &mut StdRng) + Sync,
) -> Outcome {
    let until = Instant::now() + Duration::from_secs_f64(seconds);
    let started = Instant::now();
    let per_thread: Vec<Histogram<u64>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (make, step) = (&make, &step);
                s.spawn(move || {
                    alloc::not_counted();
                    let mut state = make();
                    let mut rng = StdRng::seed_from_u64(t as u64);
                    let mut hist = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3)
                        .expect("histogram bounds");
                    while Instant::now() < until {
                        let began = Instant::now();
                        step(&mut state, &mut rng);
                        hist.saturating_record(began.elapsed().as_micros().max(1) as u64);
                    }
                    hist
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a driver thread"))
            .collect()
    });
    let elapsed = started.elapsed().as_secs_f64();
    let mut all = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).expect("histogram bounds");
    for h in &per_thread {
        all.add(h).expect("same bounds");
    }
    Outcome {
        ops_per_s: all.len() as f64 / elapsed,
        p50_us: all.value_at_quantile(0.50) as f64,
        p99_us: all.value_at_quantile(0.99) as f64,
    }
}

/// `op` through `connections` client connections to the server at `address`.
pub(crate) fn over_network(
    address: SocketAddr,
    op: Op,
    connections: usize,
    seconds: f64,
) -> Outcome {
    drive(
        connections,
        seconds,
        || Client::connect(address, Transport::Framed, Protocol::Binary).expect("connect"),
        |client, rng| {
            let row = rng.random_range(0..ROWS);
            match op {
                Op::Get => {
                    client.call(&get_call(row)).expect("get");
                }
                Op::Put => {
                    client.call(&put_call(row, 1, VALUE)).expect("put");
                }
                Op::Scan => {
                    let open = Call::ScannerOpen {
                        table: b("t"),
                        scan: TScan {
                            start_row: Some(row_key(row)),
                            caching: Some(SCAN_ROWS),
                            ..TScan::default()
                        },
                    };
                    let Ok(Reply::I32(id)) = client.call(&open) else {
                        panic!("scannerOpen failed");
                    };
                    client
                        .call(&Call::ScannerGet {
                            id,
                            rows: SCAN_ROWS,
                        })
                        .expect("scannerGetList");
                    client.call(&Call::ScannerClose { id }).expect("close");
                }
            }
        },
    )
}

/// `op` as direct keel-region calls on `threads` threads.
pub(crate) fn embedded(table: &Table, op: Op, threads: usize, seconds: f64) -> Outcome {
    let value = vec![b'v'; VALUE];
    drive(
        threads,
        seconds,
        || (),
        |(), rng| {
            let row = row_key(rng.random_range(0..ROWS));
            match op {
                Op::Get => {
                    table
                        .get(&row, &ReadQuery::latest(0, now_ms()))
                        .expect("get");
                }
                Op::Put => {
                    table.put(&row, b"cf", b"f0", &value).expect("put");
                }
                Op::Scan => {
                    let scan = Scan {
                        start_row: row,
                        limit: Some(SCAN_ROWS as usize),
                        ..Scan::all(now_ms())
                    };
                    table.scan(&scan).expect("scan");
                }
            }
        },
    )
}
