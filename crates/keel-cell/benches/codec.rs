//! `cargo xtask bench cell`: decoding a cell batch by slicing the shared buffer (what keel-cell
//! does) against copying every field into its own allocation (the alternative a decoder without
//! `Bytes` would take), measured in the same run; plus encode throughput.

#![expect(clippy::print_stdout, reason = "a benchmark reports on the terminal")]

use std::hint::black_box;
use std::time::{Duration, Instant};

use bytes::Bytes;
use keel_cell::{Cell, CellLimits, decode_batch, encode_batch, encoded_batch_len};
use keel_testkit::figure;

/// A WAL-entry-sized batch: `cells` puts with 16-byte rows, 8-byte qualifiers, `value_len` values.
fn batch(cells: usize, value_len: usize) -> Vec<Cell> {
    (0..cells)
        .map(|i| {
            let row = format!("user{i:012}").into_bytes();
            let qualifier = format!("field{:03}", i % 10).into_bytes();
            Cell::put(
                row,
                "f",
                qualifier,
                1_700_000_000_000,
                vec![b'v'; value_len],
            )
            .unwrap_or_else(|e| panic!("benchmark cell is valid: {e}"))
        })
        .collect()
}

/// The alternative: every field copied out of the buffer into a fresh allocation.
fn decode_copying(buf: &Bytes) -> Vec<Cell> {
    let cells = decode_batch(buf, &CellLimits::default()).unwrap_or_default();
    cells
        .into_iter()
        .map(|c| {
            Cell::builder(c.row().to_vec(), c.family().to_vec())
                .qualifier(c.qualifier().to_vec())
                .timestamp(c.timestamp())
                .cell_type(c.cell_type())
                .sequence_id(c.sequence_id())
                .value(c.value().to_vec())
                .build()
                .unwrap_or_else(|e| panic!("decoded cell is valid: {e}"))
        })
        .collect()
}

/// Best (lowest) time per call over `rounds` rounds of `iters` calls: the least disturbed
/// measurement on a shared machine.
fn best_of(rounds: usize, iters: usize, mut f: impl FnMut()) -> Duration {
    (0..rounds)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..iters {
                f();
            }
            start.elapsed() / iters as u32
        })
        .min()
        .unwrap_or_default()
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let (rounds, iters) = if quick { (5, 200) } else { (15, 1_000) };
    let cells = batch(100, 1_000);
    let mut encoded = Vec::with_capacity(encoded_batch_len(&cells));
    encode_batch(&cells, &mut encoded);
    let encoded = Bytes::from(encoded);
    let mb = encoded.len() as f64 / 1e6;
    let limits = CellLimits::default();

    let encode = best_of(rounds, iters, || {
        let mut out = Vec::with_capacity(encoded.len());
        encode_batch(black_box(&cells), &mut out);
        black_box(out);
    });
    let zero_copy = best_of(rounds, iters, || {
        black_box(decode_batch(black_box(&encoded), &limits).unwrap_or_default());
    });
    let copying = best_of(rounds, iters, || {
        black_box(decode_copying(black_box(&encoded)));
    });

    println!(
        "batch: 100 cells, 1000-byte values, {} bytes encoded",
        encoded.len()
    );
    println!(
        "encode           {:>10.1?} per batch  {:>8.0} MB/s",
        encode,
        mb / encode.as_secs_f64()
    );
    println!(
        "decode zero-copy {:>10.1?} per batch  {:>8.0} MB/s",
        zero_copy,
        mb / zero_copy.as_secs_f64()
    );
    println!(
        "decode copying   {:>10.1?} per batch  {:>8.0} MB/s",
        copying,
        mb / copying.as_secs_f64()
    );
    println!(
        "{}",
        figure("cell_encode_mb_per_s", mb / encode.as_secs_f64())
    );
    println!(
        "{}",
        figure("cell_decode_mb_per_s", mb / zero_copy.as_secs_f64())
    );
    println!(
        "{}",
        figure(
            "zero_copy_decode_speedup",
            copying.as_secs_f64() / zero_copy.as_secs_f64()
        )
    );
}
