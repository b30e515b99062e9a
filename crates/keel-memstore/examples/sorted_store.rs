//! An in-memory sorted store with snapshots, on keel-memstore alone: four writer threads add
//! versioned cells concurrently while a reader scans at fixed read points; then a snapshot
//! freezes what was written (as a flush would) while writes go on into the active set. Every
//! scan is checked against a `BTreeMap` of what was added: sorted, complete, and never showing
//! a cell above its read point.
//!
//! `cargo run -p keel-memstore --example sorted_store`

#![expect(clippy::print_stdout, reason = "an example reports what it did")]

use std::collections::BTreeMap;
use std::error::Error;

use keel_cell::{Cell, CellKey};
use keel_memstore::{MemStore, MemStoreOptions};

const WRITERS: u64 = 4;
const PER_WRITER: u64 = 2_000;

/// The cell writer `w` adds as its `n`th: rows interleave between writers; sequence ids are
/// unique, as an MVCC would hand them out.
fn cell(w: u64, n: u64) -> Result<Cell, Box<dyn Error + Send + Sync>> {
    let sequence = n * WRITERS + w + 1;
    let mut cell = Cell::put(
        format!("row{:05}", (n * 7 + w) % 500),
        "f",
        format!("q{w}"),
        sequence as i64,
        format!("value {sequence}"),
    )?;
    cell.set_sequence_id(sequence);
    Ok(cell)
}

fn check(
    memstore: &MemStore,
    oracle: &BTreeMap<CellKey, Cell>,
    read_point: u64,
) -> Result<usize, String> {
    let expected: Vec<&Cell> = oracle
        .values()
        .filter(|c| c.sequence_id() <= read_point)
        .collect();
    let got: Vec<Cell> = memstore.scanner(.., read_point).collect();
    if got.len() != expected.len() || got.iter().zip(&expected).any(|(a, b)| a != *b) {
        return Err(format!(
            "at read point {read_point}: scanned {} cells, expected {}",
            got.len(),
            expected.len()
        ));
    }
    Ok(got.len())
}

fn main() -> Result<(), Box<dyn Error>> {
    let memstore = MemStore::new(MemStoreOptions::default());
    // Writers and a concurrent reader: the reader's scans must always be sorted.
    std::thread::scope(|s| -> Result<(), String> {
        let writers: Vec<_> = (0..WRITERS)
            .map(|w| {
                let memstore = &memstore;
                s.spawn(move || -> Result<(), String> {
                    for n in 0..PER_WRITER {
                        memstore.add([cell(w, n).map_err(|e| e.to_string())?]);
                    }
                    Ok(())
                })
            })
            .collect();
        let reader = s.spawn(|| -> Result<(), String> {
            for _ in 0..20 {
                let keys: Vec<CellKey> = memstore
                    .scanner(.., u64::MAX)
                    .map(|c| c.key().clone())
                    .collect();
                if keys.windows(2).any(|w| w[0] >= w[1]) {
                    return Err("a concurrent scan came back out of order".into());
                }
            }
            Ok(())
        });
        for writer in writers {
            writer.join().map_err(|_| "a writer panicked")??;
        }
        reader.join().map_err(|_| "the reader panicked")?
    })?;

    let mut oracle = BTreeMap::new();
    for w in 0..WRITERS {
        for n in 0..PER_WRITER {
            let c = cell(w, n).map_err(|e| e.to_string())?;
            oracle.insert(c.key().clone(), c);
        }
    }
    let all = WRITERS * PER_WRITER;
    for read_point in [0, 1, all / 3, all / 2, all] {
        check(&memstore, &oracle, read_point)?;
    }

    // A snapshot freezes the cells so far (a flush would write it out); new writes go on.
    let snapshot = memstore.snapshot();
    let frozen = snapshot.scanner().count();
    let mut late = Cell::put("row99999", "f", "late", 1, "after the snapshot")?;
    late.set_sequence_id(all + 1);
    memstore.add([late.clone()]);
    oracle.insert(late.key().clone(), late);
    let seen = check(&memstore, &oracle, u64::MAX)?;
    memstore.clear_snapshot(snapshot.id())?;
    let after_flush = memstore.scanner(.., u64::MAX).count();
    println!(
        "{all} cells added by {WRITERS} threads, scans match the oracle at every read point; \
         snapshot froze {frozen}, scans saw {seen} with it, {after_flush} after it was flushed"
    );
    if frozen as u64 != all || after_flush != 1 {
        return Err(format!(
            "snapshot held {frozen} (expected {all}), {after_flush} left (expected 1)"
        )
        .into());
    }
    Ok(())
}
