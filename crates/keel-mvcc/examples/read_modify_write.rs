//! Row locks around a read-modify-write, on keel-mvcc alone: eight threads increment counters
//! on five hot rows of a toy versioned store. Each increment takes the row's exclusive lock,
//! reads the latest visible value at the MVCC read point, begins a write number, stores the new
//! version under it, and completes it (waiting until it is visible) before unlocking — HBase's
//! order. No increment is lost, and readers never see a version above the read point.
//!
//! `cargo run -p keel-mvcc --example read_modify_write`

#![expect(clippy::print_stdout, reason = "an example reports what it did")]

use std::collections::BTreeMap;
use std::error::Error;

use bytes::Bytes;
use keel_mvcc::{LockMode, Mvcc, RowLocks};
use parking_lot::Mutex;

/// A toy store: per row, its versions by write number.
#[derive(Default)]
struct Store(Mutex<BTreeMap<(Bytes, u64), u64>>);

impl Store {
    /// The newest value of `row` visible at `read_point`.
    fn read(&self, row: &Bytes, read_point: u64) -> u64 {
        let versions = self.0.lock();
        versions
            .range((row.clone(), 0)..=(row.clone(), read_point))
            .next_back()
            .map_or(0, |(_, v)| *v)
    }

    fn write(&self, row: Bytes, write_number: u64, value: u64) {
        self.0.lock().insert((row, write_number), value);
    }
}

const THREADS: u64 = 8;
const INCREMENTS: u64 = 2_000;
const ROWS: u64 = 5;

fn main() -> Result<(), Box<dyn Error>> {
    let (mvcc, locks, store) = (Mvcc::new(), RowLocks::default(), Store::default());
    let rows: Vec<Bytes> = (0..ROWS)
        .map(|r| Bytes::from(format!("counter{r}")))
        .collect();
    std::thread::scope(|s| -> Result<(), String> {
        let workers: Vec<_> = (0..THREADS)
            .map(|t| {
                let (mvcc, locks, store, rows) = (&mvcc, &locks, &store, &rows);
                s.spawn(move || -> Result<(), String> {
                    for i in 0..INCREMENTS {
                        let row = &rows[((t + i) % ROWS) as usize];
                        let guard = locks
                            .lock_row(row.clone(), LockMode::Exclusive, None)
                            .map_err(|e| e.to_string())?;
                        let current = store.read(row, mvcc.read_point());
                        let entry = mvcc.begin();
                        store.write(row.clone(), entry.write_number(), current + 1);
                        // Visible before the lock goes, so the next holder reads this value.
                        mvcc.complete_and_wait(entry);
                        drop(guard);
                    }
                    Ok(())
                })
            })
            .collect();
        for worker in workers {
            worker.join().map_err(|_| "a worker panicked")??;
        }
        Ok(())
    })?;
    let read_point = mvcc.read_point();
    let totals: Vec<u64> = rows.iter().map(|r| store.read(r, read_point)).collect();
    let sum: u64 = totals.iter().sum();
    println!(
        "{} increments on {ROWS} rows by {THREADS} threads: totals {totals:?}, read point {read_point}",
        THREADS * INCREMENTS
    );
    if sum != THREADS * INCREMENTS || read_point != THREADS * INCREMENTS {
        return Err(format!("lost increments: sum {sum}, read point {read_point}").into());
    }
    Ok(())
}
