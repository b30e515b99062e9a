//! Shuttle model of the group-commit hand-off (`cargo xtask model wal`): appenders at FsyncWal
//! and SyncWal race the writer thread under the random and PCT schedulers. An FsyncWal append
//! must not return before a power cut would keep its entry, a SyncWal append not before its entry
//! is written, and no appender may be left asleep (shuttle reports a deadlock). Closing the WAL
//! afterwards must also finish.

#![cfg(shuttle)]

mod common;

use std::path::Path;
use std::sync::Arc;

use common::*;
use keel_fs::{FaultFs, FileSystem};
use keel_wal::{Durability, ReplayOptions, Wal, WalOptions};

fn iterations() -> usize {
    keel_testkit::model_iterations(300)
}

fn present(fs: &Arc<dyn FileSystem>, region: u64) -> bool {
    let (entries, _, err) = read_all(fs, ReplayOptions::default());
    assert!(err.is_none(), "{err:?}");
    entries.iter().any(|e| e.region == region)
}

fn model() {
    run(&[
        Durability::FsyncWal,
        Durability::FsyncWal,
        Durability::SyncWal,
    ]);
}

/// `SyncWal` appenders lead their own groups: two of them race each other, the writer thread
/// (woken by an `AsyncWal` append) and an `FsyncWal` append for turns at writing.
fn leaders() {
    run(&[
        Durability::SyncWal,
        Durability::SyncWal,
        Durability::AsyncWal,
        Durability::FsyncWal,
    ]);
}

fn run(levels: &[Durability]) {
    let fault = FaultFs::new();
    let fs: Arc<dyn FileSystem> = Arc::new(fault.clone());
    let wal = Arc::new(Wal::open(Arc::clone(&fs), Path::new(DIR), WalOptions::default()).unwrap());
    let threads: Vec<_> = levels
        .iter()
        .copied()
        .into_iter()
        .enumerate()
        .map(|(region, level)| {
            let (wal, fault, fs) = (Arc::clone(&wal), fault.clone(), Arc::clone(&fs));
            shuttle::thread::spawn(move || {
                wal.append(&entry(region as u64, 1, 20), level).unwrap();
                if level == Durability::AsyncWal {
                    return;
                }
                if level == Durability::FsyncWal {
                    let image: Arc<dyn FileSystem> = Arc::new(fault.crash_image());
                    assert!(
                        present(&image, region as u64),
                        "acked FsyncWal entry not durable"
                    );
                } else {
                    assert!(
                        present(&fs, region as u64),
                        "acked SyncWal entry not written"
                    );
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    match Arc::try_unwrap(wal) {
        Ok(wal) => wal.close().unwrap(),
        Err(_) => panic!("every appender has finished"),
    }
    // Whoever wrote each batch, every entry is in the log once, in LSN order.
    let (entries, _, err) = read_all(&fs, ReplayOptions::default());
    assert!(err.is_none(), "{err:?}");
    let mut regions: Vec<u64> = entries.iter().map(|e| e.region).collect();
    assert_eq!(regions.len(), levels.len(), "{regions:?}");
    regions.sort_unstable();
    regions.dedup();
    assert_eq!(regions.len(), levels.len());
}

#[test]
fn group_commit_acks_only_covered_entries_and_wakes_everyone() {
    shuttle::check_random(model, iterations());
    shuttle::check_pct(model, iterations(), 3);
}

#[test]
fn leaders_take_turns_with_the_writer_and_nobody_sleeps_forever() {
    shuttle::check_random(leaders, iterations());
    shuttle::check_pct(leaders, iterations(), 3);
}
