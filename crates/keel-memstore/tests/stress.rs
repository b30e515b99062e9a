//! Writers, scanners and a flusher at once. Sequence ids 1, 2, 3, … are handed out in order and
//! the read point advances only over completed writes (as keel-mvcc does), so at read point `rp`
//! exactly the cells with ids `1..=rp` must be visible: every scan is checked for order, for no
//! cell above its read point, and for no missing cell at or below it. Snapshots and clears run
//! throughout; cleared cells are counted as flushed, and nothing may be lost. With in-memory
//! flushing on, a flattener merges the frozen segments into flat arrays all the while.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::thread;

use keel_cell::Cell;
use keel_memstore::{MemStore, MemStoreOptions};
use keel_sync::Mutex;

/// Hands out sequence ids and advances the read point in order over completed ones.
#[derive(Default)]
struct Sequencer {
    state: Mutex<(u64, BTreeSet<u64>)>,
    read_point: AtomicU64,
}

impl Sequencer {
    fn begin(&self) -> u64 {
        let mut state = self.state.lock();
        state.0 += 1;
        state.0
    }

    fn complete(&self, id: u64) {
        let mut state = self.state.lock();
        state.1.insert(id);
        let mut point = self.read_point.load(Ordering::Relaxed);
        while state.1.remove(&(point + 1)) {
            point += 1;
        }
        self.read_point.store(point, Ordering::Release);
    }
}

fn cell_for(id: u64) -> Cell {
    // Row order unrelated to id order, so scans interleave old and new cells.
    let row = format!("row{:08}", id.wrapping_mul(2_654_435_761) % 100_000_000);
    let mut cell = Cell::put(row, "f", "q", id as i64, id.to_le_bytes().to_vec()).expect("valid");
    cell.set_sequence_id(id);
    cell
}

fn run(mslab: bool, flatten: bool) {
    const WRITERS: usize = 3;
    const PER_WRITER: u64 = 10_000;
    let memstore = Arc::new(MemStore::new(MemStoreOptions {
        mslab,
        chunk_size: 4096,
        max_copied_cell: 1024,
        ..MemStoreOptions::default()
    }));
    let sequencer = Arc::new(Sequencer::default());
    let done = Arc::new(AtomicBool::new(false));
    let flushed = Arc::new(Mutex::new(BTreeSet::new()));

    let writers: Vec<_> = (0..WRITERS)
        .map(|_| {
            let (memstore, sequencer) = (Arc::clone(&memstore), Arc::clone(&sequencer));
            thread::spawn(move || {
                for _ in 0..PER_WRITER {
                    let id = sequencer.begin();
                    memstore.add([cell_for(id)]);
                    sequencer.complete(id);
                }
            })
        })
        .collect();
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let (memstore, sequencer) = (Arc::clone(&memstore), Arc::clone(&sequencer));
            let (done, flushed) = (Arc::clone(&done), Arc::clone(&flushed));
            thread::spawn(move || {
                let mut scans = 0;
                while !done.load(Ordering::Acquire) || scans < 3 {
                    let read_point = sequencer.read_point.load(Ordering::Acquire);
                    // Alternate the owned scanner and the borrowed visit.
                    let cells: Vec<Cell> = if scans % 2 == 0 {
                        memstore.scanner(.., read_point).collect()
                    } else {
                        let mut cells = Vec::new();
                        memstore.visit(.., read_point, |key, value| {
                            cells.push(Cell::from_parts(
                                key.clone(),
                                bytes::Bytes::copy_from_slice(value),
                            ));
                            std::ops::ControlFlow::Continue(())
                        });
                        cells
                    };
                    // Cells flushed and cleared before the scanner opened are legitimately gone;
                    // the flusher records them before clearing, so reading this after opening
                    // covers every such cell.
                    let gone: BTreeSet<u64> = flushed.lock().clone();
                    assert!(
                        cells.windows(2).all(|w| w[0].key() < w[1].key()),
                        "unsorted"
                    );
                    let seen: BTreeSet<u64> = cells.iter().map(Cell::sequence_id).collect();
                    assert!(seen.iter().all(|&id| id <= read_point), "above read point");
                    for id in 1..=read_point {
                        assert!(
                            seen.contains(&id) || gone.contains(&id),
                            "cell {id} missing at read point {read_point}"
                        );
                    }
                    scans += 1;
                }
                scans
            })
        })
        .collect();
    // Until the first in-memory flush (or a deadline), the flusher leaves the active segment
    // alone and the flattener keeps trying after the writers end: on a loaded machine the
    // flattener was once never scheduled while there was data, and the test proved nothing
    // about flattening.
    let flattens = Arc::new(AtomicUsize::new(0));
    let started = std::time::Instant::now();
    let first_flatten_pending = {
        let flattens = Arc::clone(&flattens);
        move || {
            flatten
                && flattens.load(Ordering::Acquire) == 0
                && started.elapsed() < std::time::Duration::from_secs(10)
        }
    };
    let flusher = {
        let (memstore, flushed, done) = (
            Arc::clone(&memstore),
            Arc::clone(&flushed),
            Arc::clone(&done),
        );
        let first_flatten_pending = first_flatten_pending.clone();
        thread::spawn(move || {
            let mut flushes = 0;
            while !done.load(Ordering::Acquire) {
                if first_flatten_pending() {
                    thread::sleep(std::time::Duration::from_millis(1));
                    continue;
                }
                let snapshot = memstore.snapshot();
                let ids: Vec<u64> = snapshot.scanner().map(|c| c.sequence_id()).collect();
                assert_eq!(ids.len() as u64, snapshot.size().cell_count);
                // Record before clearing, as a flush makes its file visible before the clear.
                flushed.lock().extend(ids);
                memstore.clear_snapshot(snapshot.id()).expect("pending");
                flushes += 1;
                thread::sleep(std::time::Duration::from_millis(2));
            }
            flushes
        })
    };
    let flattener = {
        let (memstore, done, flattens) = (
            Arc::clone(&memstore),
            Arc::clone(&done),
            Arc::clone(&flattens),
        );
        thread::spawn(move || {
            let mut flattened = 0;
            while flatten && (!done.load(Ordering::Acquire) || first_flatten_pending()) {
                // 4 KiB: small beside what arrives between two of the flusher's snapshots
                // (2 ms), so the flattener finds work however the threads are scheduled.
                if memstore.active_size().data_bytes >= 4 << 10 && memstore.flatten() {
                    flattened += 1;
                    flattens.fetch_add(1, Ordering::Release);
                }
                thread::yield_now();
            }
            flattened
        })
    };
    for writer in writers {
        writer.join().expect("writer");
    }
    done.store(true, Ordering::Release);
    let flushes = flusher.join().expect("flusher");
    let flattened = flattener.join().expect("flattener");
    assert!(!flatten || flattened > 0, "no in-memory flush happened");
    for reader in readers {
        assert!(reader.join().expect("reader") >= 3);
    }
    let total = WRITERS as u64 * PER_WRITER;
    let mut all: BTreeSet<u64> = flushed.lock().clone();
    let remaining: Vec<u64> = memstore
        .scanner(.., u64::MAX)
        .map(|c| c.sequence_id())
        .collect();
    assert_eq!(remaining.len() as u64, memstore.size().cell_count);
    all.extend(remaining);
    assert_eq!(
        all.len() as u64,
        total,
        "lost cells after {flushes} flushes and {flattened} in-memory flushes"
    );
    assert_eq!(all.last().copied(), Some(total));
}

#[test]
fn concurrent_writes_scans_and_flushes_with_mslab() {
    run(true, false);
}

#[test]
fn concurrent_writes_scans_and_flushes_without_mslab() {
    run(false, false);
}

#[test]
fn concurrent_writes_scans_flushes_and_in_memory_flushes_with_mslab() {
    run(true, true);
}

#[test]
fn concurrent_writes_scans_flushes_and_in_memory_flushes_without_mslab() {
    run(false, true);
}
