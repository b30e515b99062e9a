//! `cargo xtask bench bufpool`: HBASE-14490's experiment in one run. 25 connections read 10 000
//! requests shaped like YCSB inserts (64 fields, zipfian lengths up to 10 KiB), then 10 000 shaped
//! like YCSB reads (one field), once per request-buffer design. Each request is copied into its
//! buffer (the socket read) and checksummed (the decode), then its buffer is released. Prints the
//! seed's table: creations and discards with their bytes, throughput, heap allocations.

#![expect(clippy::print_stdout, reason = "a benchmark reports on the terminal")]

use std::time::{Duration, Instant};

use bytes::{Buf, BufMut};
use keel_bufpool::alternatives::{PerConnection, PlainAllocation, SharedAveragePool};
use keel_bufpool::{BufferPool, PoolOptions, PoolStats, RequestBuffers};
use keel_testkit::{Zipfian, figure};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const CONNECTIONS: usize = 25;
const FIELDS: usize = 64;
const FIELD_LENGTH: u64 = 10_240;

/// Request sizes per connection: a Thrift `mutateRow` carrying 64 fields for a put (table, row
/// key and per-field column name and framing around the values), a `get` of one field for a read.
fn workload(requests: usize, seed: u64) -> (Vec<Vec<usize>>, Vec<Vec<usize>>) {
    let zipfian = Zipfian::new(1, FIELD_LENGTH);
    let mut rng = StdRng::seed_from_u64(seed);
    let per_connection = requests / CONNECTIONS;
    let mut puts: Vec<Vec<usize>> = (0..CONNECTIONS)
        .map(|_| Vec::with_capacity(per_connection))
        .collect();
    let mut reads: Vec<Vec<usize>> = (0..CONNECTIONS)
        .map(|_| Vec::with_capacity(per_connection))
        .collect();
    for connection in 0..CONNECTIONS {
        for _ in 0..per_connection {
            let values: u64 = (0..FIELDS).map(|_| zipfian.next(&mut rng)).sum();
            puts[connection].push(60 + FIELDS * 24 + values as usize);
            reads[connection].push(60 + 24 + rng.random_range(0..8));
        }
    }
    (puts, reads)
}

/// Reads every connection's requests (`repeat` times over) on its own thread; returns the
/// elapsed time.
fn phase<R: RequestBuffers>(
    design: &R,
    sizes: &[Vec<usize>],
    wire: &[u8],
    repeat: usize,
) -> Duration {
    let start = Instant::now();
    std::thread::scope(|scope| {
        for requests in sizes {
            scope.spawn(move || {
                let mut connection = design.connect();
                let mut checksum = 0u64;
                let replayed = std::iter::repeat_n(requests, repeat).flatten();
                for (i, &len) in replayed.enumerate() {
                    let mut buffer = design
                        .acquire(&mut connection, len)
                        .unwrap_or_else(|e| panic!("{e}"));
                    let from = (i * 4099) % (wire.len() - len);
                    buffer.put_slice(&wire[from..from + len]);
                    while buffer.has_remaining() {
                        let chunk = buffer.chunk();
                        checksum = chunk.chunks(8).fold(checksum, |sum, word| {
                            let mut le = [0u8; 8];
                            le[..word.len()].copy_from_slice(word);
                            sum.wrapping_add(u64::from_le_bytes(le))
                        });
                        let n = chunk.len();
                        buffer.advance(n);
                    }
                    design.release(&mut connection, buffer);
                }
                std::hint::black_box(checksum);
            });
        }
    });
    start.elapsed()
}

/// One design's results: counters per phase and the best throughput seen.
struct Row {
    put: PoolStats,
    read: PoolStats,
    put_rate: f64,
    read_rate: f64,
    total_rate: f64,
}

/// One round of one design. The counters come from a fresh instance reading the seed's 10 000
/// requests once per phase, as the seed counted them; the throughput from another fresh instance
/// reading them `repeat` times over, so that the timed part is long enough to mean something.
fn run_once<R: RequestBuffers>(
    make: impl Fn() -> R,
    puts: &[Vec<usize>],
    reads: &[Vec<usize>],
    wire: &[u8],
    repeat: usize,
) -> Row {
    let counted = make();
    phase(&counted, puts, wire, 1);
    let after_puts = counted.stats();
    phase(&counted, reads, wire, 1);
    let after_reads = counted.stats();

    let timed = make();
    let requests = |s: &[Vec<usize>]| (s.iter().map(Vec::len).sum::<usize>() * repeat) as f64;
    let put_time = phase(&timed, puts, wire, repeat);
    let read_time = phase(&timed, reads, wire, repeat);
    Row {
        put: after_puts,
        read: after_reads.since(&after_puts),
        put_rate: requests(puts) / put_time.as_secs_f64(),
        read_rate: requests(reads) / read_time.as_secs_f64(),
        total_rate: (requests(puts) + requests(reads)) / (put_time + read_time).as_secs_f64(),
    }
}

/// Keeps the best throughput seen for a design (counters are the same every round: the
/// workload is fixed by its seed).
fn keep_best(best: &mut Option<Row>, row: Row) {
    if best.as_ref().is_none_or(|b| row.total_rate > b.total_rate) {
        *best = Some(row);
    }
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let (requests, rounds, repeat) = if quick {
        (10_000, 2, 4)
    } else {
        (10_000, 5, 10)
    };
    let seed = 14_490;
    let (puts, reads) = workload(requests, seed);
    let mut rng = StdRng::seed_from_u64(seed);
    let wire: Vec<u8> = (0..2 * 1024 * 1024).map(|_| rng.random()).collect();
    let put_bytes: usize = puts.iter().flatten().sum();
    let largest = puts.iter().flatten().max().copied().unwrap_or(0);
    println!(
        "workload: {CONNECTIONS} connections, {} puts (mean {} B, largest {largest} B), {} reads",
        puts.iter().map(Vec::len).sum::<usize>(),
        put_bytes / puts.iter().map(Vec::len).sum::<usize>().max(1),
        reads.iter().map(Vec::len).sum::<usize>(),
    );

    let no_minimum = PoolOptions {
        min_allocate_size: 0,
        ..PoolOptions::default()
    };
    // Rounds interleave the designs so that a noisy moment on a shared machine hits all alike.
    let mut best: [Option<Row>; 5] = [None, None, None, None, None];
    for _ in 0..rounds {
        let (p, r, w) = (&puts, &reads, &wire);
        keep_best(
            &mut best[0],
            run_once(PlainAllocation::default, p, r, w, repeat),
        );
        keep_best(
            &mut best[1],
            run_once(PerConnection::default, p, r, w, repeat),
        );
        keep_best(
            &mut best[2],
            run_once(|| SharedAveragePool::new(2 * 30), p, r, w, repeat),
        );
        keep_best(&mut best[3], run_once(BufferPool::default, p, r, w, repeat));
        keep_best(
            &mut best[4],
            run_once(|| BufferPool::new(no_minimum), p, r, w, repeat),
        );
    }
    let rows = best.map(|row| row.unwrap_or_else(|| panic!("at least one round")));
    let names = [
        "plain allocation",
        "per-connection buffer",
        "shared running-average pool",
        "fixed pool (HBase defaults)",
        "fixed pool, no minimum size",
    ];

    println!();
    println!(
        "{:<29} {:>7} {:>7} {:>12} {:>12} {:>7} {:>7} {:>11} {:>11} {:>9} {:>9} {:>8}",
        "design",
        "put cr",
        "put dis",
        "put cr B",
        "put dis B",
        "rd cr",
        "rd dis",
        "rd cr B",
        "rd dis B",
        "put/s",
        "read/s",
        "heap/req"
    );
    for (row, name) in rows.iter().zip(names) {
        let heap_per_request =
            (row.put.heap_allocations + row.read.heap_allocations) as f64 / (2 * requests) as f64;
        println!(
            "{:<29} {:>7} {:>7} {:>12} {:>12} {:>7} {:>7} {:>11} {:>11} {:>9.0} {:>9.0} {:>8.3}",
            name,
            row.put.buffers_created,
            row.put.buffers_discarded,
            row.put.bytes_created,
            row.put.bytes_discarded,
            row.read.buffers_created,
            row.read.buffers_discarded,
            row.read.bytes_created,
            row.read.bytes_discarded,
            row.put_rate,
            row.read_rate,
            heap_per_request,
        );
    }
    let heap = |r: &Row| (r.put.heap_allocations + r.read.heap_allocations).max(1) as f64;
    let [plain, per_connection, shared, pool, pool_no_min] = &rows;
    println!();
    println!(
        "fixed pool: {} pooled buffers handed out, {} exhaustions; heap allocations: {} (puts {} + reads {})",
        pool.put.pooled_allocations + pool.read.pooled_allocations,
        pool.put.exhaustions + pool.read.exhaustions,
        heap(pool),
        pool.put.heap_allocations,
        pool.read.heap_allocations
    );
    println!(
        "heap allocation reduction vs plain: fixed pool {:.1}×, fixed pool without minimum {:.1}×, per-connection {:.1}×, shared pool {:.1}×",
        heap(plain) / heap(pool),
        heap(plain) / heap(pool_no_min),
        heap(plain) / heap(per_connection),
        heap(plain) / heap(shared)
    );
    println!(
        "throughput vs plain (puts + reads): fixed pool {:.2}, fixed pool without minimum {:.2}, per-connection {:.2}, shared pool {:.2}",
        pool.total_rate / plain.total_rate,
        pool_no_min.total_rate / plain.total_rate,
        per_connection.total_rate / plain.total_rate,
        shared.total_rate / plain.total_rate
    );
    println!(
        "{}",
        figure("bufpool_heap_alloc_reduction", heap(plain) / heap(pool))
    );
    println!(
        "{}",
        figure(
            "bufpool_throughput_vs_plain",
            pool.total_rate / plain.total_rate
        )
    );
}
