//! `cargo xtask bench server`: the whole server over TCP against the same operations embedded.
//!
//! 1. Gets, puts and scans (10 rows) with 1, 16 and 64 client connections through keel-thrift's
//!    client (framed binary, one call in flight per connection, as happybase), and the same
//!    operations as direct keel-region calls on 1, 16 and 64 threads, on one store of 10 000
//!    rows: throughput, p50 and p99 for each, the network/embedded ratios, and what the server
//!    adds to a get's median.
//! 2. keel-bufpool on vs off (HBASE-14490): 16 connections putting rows of 8 × 2 KiB (a
//!    ≈16 KiB request, which a pooled buffer holds), with the pool and with every request buffer
//!    on the heap; the server's heap allocations (count and bytes, client threads excluded) per
//!    request, interleaved rounds.
//! 3. The reader side chosen by measurement: keel-server's thread per connection against a
//!    single-thread mio event loop (`event_loop.rs`) over the same handler and executor, gets
//!    and puts at 1, 16 and 64 connections.
//! 4. Full runs only: FastPathRwQueue vs RwQueue under a 50/50 put/get load (`fastpath.rs`).
//!
//! `--quick` shortens every run (under a minute in all).

#![expect(clippy::print_stdout, reason = "a benchmark reports on the terminal")]

mod alloc;
mod event_loop;
mod fastpath;
mod workload;

use std::sync::Arc;

use keel_bufpool::Strategy;
use keel_region::{Engine, EngineOptions};
use keel_server::{Handler, HandlerOptions, NetOptions, ThriftServer};
use keel_testkit::figure;
use keel_thrift::Client;
use keel_thrift::hbase::{Call, ColumnDescriptor};
use keel_thrift::transport::{Protocol, Transport};
use workload::{Op, Outcome, ROWS, VALUE, b, put_call};

#[global_allocator]
static COUNTING: alloc::Counting = alloc::Counting;

/// A server on a fresh store in a temporary directory, with table `t` (family `cf`) loaded.
struct Running {
    _dir: tempfile::TempDir,
    store: Arc<Engine>,
    server: ThriftServer,
}

fn start(buffers: Strategy) -> Running {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Arc::new(Engine::open(dir.path(), EngineOptions::default()).expect("open"));
    let handler = Arc::new(Handler::new(Arc::clone(&store), HandlerOptions::default()));
    let options = NetOptions {
        listen: "127.0.0.1:0".parse().expect("address"),
        buffers,
        ..NetOptions::default()
    };
    let server = ThriftServer::start(handler, options).expect("start");
    let mut admin =
        Client::connect(server.local_addr(), Transport::Framed, Protocol::Binary).expect("connect");
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
    Running {
        _dir: dir,
        store,
        server,
    }
}

fn show(o: &Outcome) -> String {
    format!(
        "{:>9.0} ops/s  p50 {:>6.0} µs  p99 {:>7.0} µs",
        o.ops_per_s, o.p50_us, o.p99_us
    )
}

/// The floor under any network figure: a 64-byte echo over loopback TCP (one thread per
/// connection, one message in flight), the p50 round trip in µs.
fn loopback_echo_p50(seconds: f64) -> f64 {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let address = listener.local_addr().expect("address");
    std::thread::spawn(move || {
        if let Ok((mut socket, _)) = listener.accept() {
            let _ = socket.set_nodelay(true);
            let mut message = [0u8; 64];
            while socket.read_exact(&mut message).is_ok() {
                if socket.write_all(&message).is_err() {
                    break;
                }
            }
        }
    });
    let mut socket = std::net::TcpStream::connect(address).expect("connect");
    socket.set_nodelay(true).expect("nodelay");
    let mut message = [7u8; 64];
    let mut hist =
        hdrhistogram::Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).expect("bounds");
    let until = std::time::Instant::now() + std::time::Duration::from_secs_f64(seconds);
    while std::time::Instant::now() < until {
        let began = std::time::Instant::now();
        socket.write_all(&message).expect("echo write");
        socket.read_exact(&mut message).expect("echo read");
        hist.saturating_record(began.elapsed().as_micros().max(1) as u64);
    }
    hist.value_at_quantile(0.5) as f64
}

/// Part 1: returns (get p50 over the network − embedded at 1 connection, gets/s at 16).
fn network_vs_embedded(seconds: f64) -> (f64, f64) {
    let running = start(Strategy::FixedPool);
    let table = running.store.table("t").expect("table t");
    let address = running.server.local_addr();
    println!("network (framed binary) vs embedded, {ROWS} rows, {seconds} s per run:");
    let (mut overhead, mut gets_16) = (f64::NAN, f64::NAN);
    for op in [Op::Get, Op::Put, Op::Scan] {
        for clients in [1, 16, 64] {
            let net = workload::over_network(address, op, clients, seconds);
            let emb = workload::embedded(&table, op, clients, seconds);
            println!(
                "  {op:?} ×{clients:<2} network {} | embedded {} | throughput ratio {:.3}",
                show(&net),
                show(&emb),
                net.ops_per_s / emb.ops_per_s
            );
            if op == Op::Get && clients == 1 {
                overhead = net.p50_us - emb.p50_us;
            }
            if op == Op::Get && clients == 16 {
                gets_16 = net.ops_per_s;
            }
        }
    }
    running.server.shutdown();
    (overhead, gets_16)
}

/// The server's heap allocations and bytes per request, and its pool's counters, for one run
/// of 16 connections putting ≈16 KiB rows.
fn allocations_per_request(buffers: Strategy, seconds: f64) -> (f64, f64, keel_bufpool::PoolStats) {
    let running = start(buffers);
    let address = running.server.local_addr();
    let before_requests = running
        .server
        .stats()
        .requests
        .load(std::sync::atomic::Ordering::Relaxed);
    let (allocations, bytes) = alloc::counted();
    let outcome = workload_big_puts(address, seconds);
    let (allocations_after, bytes_after) = alloc::counted();
    let requests = running
        .server
        .stats()
        .requests
        .load(std::sync::atomic::Ordering::Relaxed)
        - before_requests;
    assert!(requests >= outcome, "every put was a request");
    let stats = running.server.pool_stats();
    running.server.shutdown();
    (
        (allocations_after - allocations) as f64 / requests as f64,
        (bytes_after - bytes) as f64 / requests as f64,
        stats,
    )
}

/// 16 connections putting rows of 8 × 2 KiB; returns how many puts were made.
fn workload_big_puts(address: std::net::SocketAddr, seconds: f64) -> u64 {
    let until = std::time::Instant::now() + std::time::Duration::from_secs_f64(seconds);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..16u64)
            .map(|c| {
                s.spawn(move || {
                    alloc::not_counted();
                    let mut client = Client::connect(address, Transport::Framed, Protocol::Binary)
                        .expect("connect");
                    let mut n = 0u64;
                    while std::time::Instant::now() < until {
                        let row = (c * 1_000_003 + n * 7919) % ROWS;
                        client.call(&put_call(row, 8, 2048)).expect("put");
                        n += 1;
                    }
                    n
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a client"))
            .sum()
    })
}

/// Part 3: returns event loop ÷ threads, gets per second at 64 connections.
fn threads_vs_event_loop(seconds: f64) -> f64 {
    let threads = start(Strategy::FixedPool);
    let handler = Arc::new(Handler::new(
        Arc::clone(&threads.store),
        HandlerOptions::default(),
    ));
    let looped = event_loop::EventLoopServer::start(handler, keel_rpc::RpcOptions::default());
    println!("reader side: thread per connection vs one mio event loop, {seconds} s per run:");
    let mut ratio_64 = f64::NAN;
    for op in [Op::Get, Op::Put] {
        for clients in [1, 16, 64] {
            let t = workload::over_network(threads.server.local_addr(), op, clients, seconds);
            let e = workload::over_network(looped.local_addr(), op, clients, seconds);
            println!(
                "  {op:?} ×{clients:<2} threads {} | event loop {} | throughput ratio {:.3}",
                show(&t),
                show(&e),
                e.ops_per_s / t.ops_per_s
            );
            if op == Op::Get && clients == 64 {
                ratio_64 = e.ops_per_s / t.ops_per_s;
            }
        }
    }
    drop(looped);
    threads.server.shutdown();
    ratio_64
}

/// Part 2: returns (allocations off ÷ on, bytes off ÷ on).
fn bufpool_on_vs_off(seconds: f64, rounds: usize) -> (f64, f64) {
    let on = Strategy::FixedPool;
    // HBase's `hbase.server.allocator.pool.enabled = false`: every request buffer on the heap.
    let off = Strategy::Plain;
    println!(
        "bufpool on vs off: 16 connections putting 8 × 2 KiB rows, {seconds} s per run, {rounds} round(s):"
    );
    let (mut on_runs, mut off_runs) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        let order = if round % 2 == 0 {
            [true, false]
        } else {
            [false, true]
        };
        for pooled in order {
            let (allocations, bytes, stats) =
                allocations_per_request(if pooled { on } else { off }, seconds);
            println!(
                "  round {round}: pool {}: {allocations:.1} heap allocations and {bytes:.0} heap bytes per request; pool handed out {} buffers, {} heap buffers ({} buffers created)",
                if pooled { "on " } else { "off" },
                stats.pooled_allocations,
                stats.heap_allocations,
                stats.buffers_created
            );
            if pooled {
                on_runs.push((allocations, bytes));
            } else {
                off_runs.push((allocations, bytes));
            }
        }
    }
    let mean =
        |v: &[(f64, f64)], f: fn(&(f64, f64)) -> f64| v.iter().map(f).sum::<f64>() / v.len() as f64;
    (
        mean(&off_runs, |r| r.0) / mean(&on_runs, |r| r.0),
        mean(&off_runs, |r| r.1) / mean(&on_runs, |r| r.1),
    )
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let seconds = if quick { 1.0 } else { 4.0 };
    let echo = loopback_echo_p50(seconds);
    println!("loopback TCP echo (the floor under every network figure): p50 {echo:.0} µs");
    let (overhead, gets_16) = network_vs_embedded(seconds);
    let (alloc_reduction, bytes_reduction) = bufpool_on_vs_off(seconds, if quick { 1 } else { 3 });
    let event_loop_ratio = threads_vs_event_loop(seconds);
    let fast_path = (!quick).then(|| fastpath::compare(8.0, 2));
    println!(
        "the server adds {overhead:.0} µs to an embedded get's median (target: under 50 µs), of which a bare loopback round trip is {echo:.0} µs"
    );
    println!("{}", figure("server_get_overhead_p50_us", overhead));
    println!("{}", figure("server_get_per_s_16c", gets_16));
    println!("{}", figure("server_loopback_echo_p50_us", echo));
    println!(
        "{}",
        figure("server_bufpool_heap_alloc_reduction", alloc_reduction)
    );
    println!(
        "{}",
        figure("server_bufpool_heap_bytes_reduction", bytes_reduction)
    );
    println!(
        "{}",
        figure(
            "server_event_loop_vs_threads_get_per_s_64c",
            event_loop_ratio
        )
    );
    if let Some((calls, throughput, p99)) = fast_path {
        println!("{}", figure("server_calls_per_s", calls));
        println!(
            "{}",
            figure("server_fastpath_vs_rwqueue_throughput", throughput)
        );
        println!("{}", figure("server_fastpath_vs_rwqueue_p99", p99));
    }
}
