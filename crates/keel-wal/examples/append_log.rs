//! A durable append-only log on keel-wal alone: a writer logs events from four threads at
//! `FsyncWal` (each append returns once fdatasync covered it; concurrent appends share one sync),
//! closes, and the log is read back from disk, every event once and in each thread's order.
//!
//! `cargo run -p keel-wal --example append_log`

#![expect(clippy::print_stdout, reason = "an example reports what it did")]

use std::error::Error;
use std::sync::Arc;

use keel_cell::Cell;
use keel_fs::{FileSystem, StdFs};
use keel_wal::{Durability, ReplayOptions, Wal, WalEntry, WalOptions};

const THREADS: u64 = 4;
const EVENTS: u64 = 250;

fn main() -> Result<(), Box<dyn Error>> {
    let dir = tempfile::tempdir()?;
    let fs: Arc<dyn FileSystem> = Arc::new(StdFs);
    let wal = Wal::open(Arc::clone(&fs), dir.path(), WalOptions::default())?;
    // One "region" per thread: sequence ids must rise per region, so each thread owns one.
    std::thread::scope(|s| -> Result<(), Box<dyn Error + Send + Sync>> {
        let handles: Vec<_> = (1..=THREADS)
            .map(|region| {
                let wal = &wal;
                s.spawn(move || -> Result<(), Box<dyn Error + Send + Sync>> {
                    for n in 1..=EVENTS {
                        let event = format!("thread {region} event {n}");
                        let cell = Cell::builder(format!("event-{n:05}"), "log")
                            .value(event)
                            .sequence_id(n)
                            .build()?;
                        let entry = WalEntry {
                            region,
                            sequence_id: n,
                            write_time_ms: 0,
                            cells: vec![cell],
                        };
                        wal.append(&entry, Durability::FsyncWal)?;
                    }
                    Ok(())
                })
            })
            .collect();
        for handle in handles {
            handle.join().map_err(|_| "an appender panicked")??;
        }
        Ok(())
    })
    .map_err(|e| e.to_string())?;
    let stats = wal.stats();
    wal.close()?;

    // Read it back from the files alone.
    let mut next = vec![1u64; THREADS as usize + 1];
    let mut total = 0;
    for entry in keel_wal::replay(Arc::clone(&fs), dir.path(), ReplayOptions::default())? {
        let entry = entry?;
        let expected = next[entry.region as usize];
        let value = format!("thread {} event {expected}", entry.region);
        if entry.sequence_id != expected || entry.cells[0].value()[..] != *value.as_bytes() {
            return Err(format!(
                "region {}: expected event {expected}, read {entry:?}",
                entry.region
            )
            .into());
        }
        next[entry.region as usize] += 1;
        total += 1;
    }
    if total != THREADS * EVENTS {
        return Err(format!("read {total} events back, logged {}", THREADS * EVENTS).into());
    }
    println!("{total} events logged durably and read back in order ({stats:?})");
    Ok(())
}
