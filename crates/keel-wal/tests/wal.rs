//! The group-commit WAL: durability levels, group commit, rolls, truncation, poisoning, faults at
//! every write and sync, and recovery of a torn tail at reopen.

mod common;

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use common::*;
use keel_fs::{Fault, FaultFs, FileSystem};
use keel_wal::{Durability, RecoveryMode, ReplayOptions, Wal, WalEntry, WalError, WalOptions};

fn open(fs: &Arc<dyn FileSystem>, options: WalOptions) -> Wal {
    Wal::open(Arc::clone(fs), Path::new(DIR), options).expect("open")
}

fn replayed(fs: &Arc<dyn FileSystem>) -> Vec<WalEntry> {
    let (entries, _, err) = read_all(fs, ReplayOptions::default());
    assert!(err.is_none(), "{err:?}");
    entries
}

#[test]
fn every_durability_level_round_trips_except_skip() {
    let (_, fs) = fault_fs();
    let wal = open(&fs, WalOptions::default());
    let levels = [
        Durability::SyncWal,
        Durability::FsyncWal,
        Durability::AsyncWal,
        Durability::SkipWal,
    ];
    for (i, level) in levels.into_iter().enumerate() {
        let receipt = wal.append(&entry(1, i as u64 + 1, 10), level).unwrap();
        assert_eq!(
            receipt.lsn.is_some(),
            level != Durability::SkipWal,
            "{level:?}"
        );
    }
    wal.close().unwrap();
    let seqs: Vec<u64> = replayed(&fs).iter().map(|e| e.sequence_id).collect();
    assert_eq!(seqs, [1, 2, 3]);
}

#[test]
fn many_fsync_appenders_share_few_syncs_and_every_ack_is_durable() {
    let (fault, fs) = fault_fs();
    let wal = Arc::new(open(&fs, WalOptions::default()));
    std::thread::scope(|scope| {
        for region in 0..16u64 {
            let wal = Arc::clone(&wal);
            scope.spawn(move || {
                for seq in 1..=50 {
                    let receipt = wal
                        .append(&entry(region, seq, 100), Durability::FsyncWal)
                        .unwrap();
                    assert!(receipt.lsn.is_some());
                }
            });
        }
    });
    let stats = wal.stats();
    assert_eq!(stats.appends, 800);
    assert!(
        stats.syncs < 800,
        "group commit: {} syncs for 800 appends",
        stats.syncs
    );
    assert!(stats.entries_per_sync_mean > 1.0);
    // Every acknowledged append survives a power cut right now.
    let image: Arc<dyn FileSystem> = Arc::new(fault.crash_image());
    let durable = replayed(&image);
    assert_eq!(durable.len(), 800);
    let mut per_region: HashMap<u64, Vec<u64>> = HashMap::new();
    for e in durable {
        per_region.entry(e.region).or_default().push(e.sequence_id);
    }
    assert!(
        per_region
            .values()
            .all(|s| *s == (1..=50).collect::<Vec<_>>())
    );
}

#[test]
fn sequence_ids_must_increase_per_region() {
    let (_, fs) = fault_fs();
    let wal = open(&fs, WalOptions::default());
    wal.append(&entry(1, 5, 1), Durability::SyncWal).unwrap();
    wal.append(&entry(2, 1, 1), Durability::SyncWal).unwrap();
    let err = wal
        .append(&entry(1, 5, 1), Durability::SyncWal)
        .unwrap_err();
    assert!(
        matches!(
            err,
            WalError::SequenceNotIncreasing {
                region: 1,
                previous: 5,
                found: 5
            }
        ),
        "{err}"
    );
    let big = wal.append(&entry(1, 6, 1 << 20), Durability::SyncWal);
    assert!(big.is_ok(), "a 1 MiB entry is within the default limit");
    wal.close().unwrap();
    // Reopening remembers the last sequence id of each region.
    let wal = open(&fs, WalOptions::default());
    assert!(wal.append(&entry(1, 6, 1), Durability::SyncWal).is_err());
    wal.append(&entry(1, 7, 1), Durability::SyncWal).unwrap();
    let (_, small) = fault_fs();
    let limited = WalOptions {
        max_entry_size: 100,
        ..WalOptions::default()
    };
    let wal = open(&small, limited);
    let err = wal
        .append(&entry(1, 1, 200), Durability::SyncWal)
        .unwrap_err();
    assert!(
        matches!(err, WalError::EntryTooLarge { max: 100, .. }),
        "{err}"
    );
}

#[test]
fn rolls_keep_order_and_truncation_removes_or_archives_flushed_segments() {
    for archive in [false, true] {
        let (_, fs) = fault_fs();
        let options = WalOptions {
            roll_size: 2_000,
            archive_dir: archive.then(|| Path::new("/archive").to_path_buf()),
            max_segments: 2,
            ..WalOptions::default()
        };
        let wal = open(&fs, options);
        for seq in 1..=40 {
            wal.append(&entry(seq % 2, seq, 200), Durability::SyncWal)
                .unwrap();
        }
        wal.roll();
        wal.append(&entry(0, 100, 10), Durability::FsyncWal)
            .unwrap();
        assert!(wal.stats().rolls >= 3, "{:?}", wal.stats());
        let closed = wal.closed_segments();
        assert!(closed > 2);
        // More than max_segments closed: both regions hold the oldest one.
        assert_eq!(wal.regions_to_flush(), [0, 1]);
        wal.mark_flushed(1, 39).unwrap();
        assert_eq!(wal.regions_to_flush(), [0]);
        wal.mark_flushed(0, 40).unwrap();
        assert_eq!(wal.closed_segments(), 0, "every closed segment is flushed");
        assert_eq!(wal.stats().truncated_segments as usize, closed);
        wal.close().unwrap();
        let remaining: Vec<u64> = replayed(&fs).iter().map(|e| e.sequence_id).collect();
        assert_eq!(remaining, [100], "only the live segment remains");
        let archived = fs.list(Path::new("/archive")).map(|l| l.len()).unwrap_or(0);
        assert_eq!(archived, if archive { closed } else { 0 });
    }
}

/// The truncation bookkeeping a region server relies on across restarts: a reopened log starts
/// with no flushed points, so every region it hosts declares its own (`open_region`) and every
/// region it no longer hosts is closed (`close_region`); otherwise a deleted table's entries
/// would keep their segments forever.
#[test]
fn closed_regions_release_their_segments_and_refuse_appends() {
    let (_, fs) = fault_fs();
    let options = WalOptions {
        roll_size: 1_000,
        max_segments: 1,
        ..WalOptions::default()
    };
    let wal = open(&fs, options.clone());
    for seq in 1..=20 {
        // Region 1 (a table later deleted) and region 2 (one that flushes) share segments.
        wal.append(&entry(1 + seq % 2, seq, 200), Durability::SyncWal)
            .unwrap();
    }
    wal.roll();
    wal.append(&entry(2, 21, 10), Durability::SyncWal).unwrap();
    assert!(wal.closed_segments() > 1);
    assert_eq!(wal.logged_regions(), [1, 2]);
    assert_eq!(wal.last_sequence_id(2), Some(21));
    assert_eq!(wal.last_sequence_id(3), None);
    wal.close().unwrap();

    // After a restart nothing is known flushed: both regions pin every old segment.
    let wal = open(&fs, options.clone());
    let segments = wal.closed_segments();
    assert!(segments > 1, "{segments}");
    assert_eq!(wal.regions_to_flush(), [1, 2]);
    wal.open_region(2, 21).unwrap();
    assert_eq!(
        wal.regions_to_flush(),
        [1],
        "only the unhosted region holds them now"
    );
    wal.close_region(1).unwrap();
    assert_eq!(wal.closed_segments(), 0, "nothing pins an old segment");
    assert!(wal.regions_to_flush().is_empty());
    let err = wal
        .append(&entry(1, 30, 10), Durability::SyncWal)
        .unwrap_err();
    assert!(matches!(err, WalError::RegionClosed { region: 1 }), "{err}");
    // Opened again, it logs again, and its new entries pin their segment until flushed.
    wal.open_region(1, 20).unwrap();
    wal.append(&entry(1, 31, 10), Durability::SyncWal).unwrap();
    wal.roll();
    wal.append(&entry(2, 32, 10), Durability::SyncWal).unwrap();
    assert_eq!(wal.closed_segments(), 1);
    wal.mark_flushed(2, 32).unwrap();
    assert_eq!(
        wal.closed_segments(),
        1,
        "region 1's entry 31 is not flushed"
    );
    wal.mark_flushed(1, 31).unwrap();
    assert_eq!(wal.closed_segments(), 0);
    assert_eq!(wal.poisoned(), None);
    wal.close().unwrap();
}

#[test]
fn a_failed_sync_poisons_the_wal_until_reopened() {
    let (fault, fs) = fault_fs();
    let wal = open(&fs, WalOptions::default());
    wal.append(&entry(1, 1, 10), Durability::FsyncWal).unwrap();
    fault.inject(Fault::fail_sync(1));
    let err = wal
        .append(&entry(1, 2, 10), Durability::FsyncWal)
        .unwrap_err();
    assert!(matches!(err, WalError::Poisoned { .. }), "{err}");
    assert!(wal.poisoned().is_some_and(|cause| cause.contains("sync")));
    let err = wal
        .append(&entry(1, 3, 10), Durability::SyncWal)
        .unwrap_err();
    assert!(err.to_string().contains("poisoned"), "{err}");
    assert!(wal.close().is_err());
    let image: Arc<dyn FileSystem> = Arc::new(fault.crash_image());
    let wal = open(&image, WalOptions::default());
    assert!(replayed(&image).iter().any(|e| e.sequence_id == 1));
    wal.append(&entry(1, 4, 10), Durability::FsyncWal).unwrap();
}

/// A fault at every write and every sync index in turn: each run appends at FsyncWal until the
/// WAL fails; a crash image must then replay every acknowledged entry, in order, and nothing
/// corrupt, and the WAL must reopen over it.
#[test]
fn a_fault_at_any_write_or_sync_loses_no_acknowledged_entry() {
    type MakeFault = fn(u64) -> Fault;
    let kinds: [(&str, MakeFault); 4] = [
        ("write", Fault::fail_write),
        ("short write", Fault::short_write),
        ("enospc", Fault::no_space),
        ("sync", Fault::fail_sync),
    ];
    for (name, fault_at) in kinds {
        for n in 1..=12u64 {
            let fault = FaultFs::new();
            let fs: Arc<dyn FileSystem> = Arc::new(fault.clone());
            fault.inject(fault_at(n));
            let options = WalOptions {
                roll_size: 600,
                ..WalOptions::default()
            };
            let Ok(wal) = Wal::open(Arc::clone(&fs), Path::new(DIR), options) else {
                continue; // the fault hit the first segment's creation: nothing was acked
            };
            let mut acked = Vec::new();
            for seq in 1..=30u64 {
                match wal.append(&entry(1, seq, 50), Durability::FsyncWal) {
                    Ok(_) => acked.push(seq),
                    Err(_) => break,
                }
            }
            drop(wal);
            let image: Arc<dyn FileSystem> = Arc::new(fault.crash_image());
            let (read, _, err) = read_all(&image, ReplayOptions::default());
            assert!(err.is_none(), "{name} #{n}: {err:?}");
            let seqs: Vec<u64> = read.iter().map(|e| e.sequence_id).collect();
            assert!(
                seqs.starts_with(&acked),
                "{name} #{n}: acked {acked:?}, replayed {seqs:?}"
            );
            assert!(
                seqs.windows(2).all(|w| w[0] + 1 == w[1]),
                "{name} #{n}: no gap or garbage"
            );
            let wal = Wal::open(image, Path::new(DIR), WalOptions::default()).unwrap();
            let next = seqs.last().copied().unwrap_or(0) + 1;
            wal.append(&entry(1, next, 5), Durability::FsyncWal)
                .unwrap();
        }
    }
}

#[test]
fn reopening_cuts_a_torn_tail_and_continues_after_it() {
    let (fault, fs) = fault_fs();
    let wal = open(&fs, WalOptions::default());
    for seq in 1..=5 {
        wal.append(&entry(1, seq, 30), Durability::FsyncWal)
            .unwrap();
    }
    fault.inject(Fault::short_write(1));
    assert!(wal.append(&entry(1, 6, 300), Durability::SyncWal).is_err());
    drop(wal);
    let strict = Wal::open(
        Arc::clone(&fs),
        Path::new(DIR),
        WalOptions {
            recovery: RecoveryMode::AbsoluteConsistency,
            ..WalOptions::default()
        },
    );
    assert!(matches!(strict, Err(WalError::Corrupt { .. })));
    let wal = open(&fs, WalOptions::default());
    wal.append(&entry(1, 6, 30), Durability::FsyncWal).unwrap();
    wal.close().unwrap();
    let seqs: Vec<u64> = replayed(&fs).iter().map(|e| e.sequence_id).collect();
    assert_eq!(seqs, [1, 2, 3, 4, 5, 6]);
    let strict = ReplayOptions {
        mode: RecoveryMode::AbsoluteConsistency,
        ..ReplayOptions::default()
    };
    let (_, cut, err) = read_all(&fs, strict);
    assert!(
        cut.is_none() && err.is_none(),
        "the tail was truncated on reopen"
    );
}

#[test]
fn async_entries_become_durable_within_the_bound() {
    let (fault, fs) = fault_fs();
    let wal = open(
        &fs,
        WalOptions {
            async_sync_interval: Duration::from_millis(30),
            ..WalOptions::default()
        },
    );
    wal.append(&entry(1, 1, 10), Durability::AsyncWal).unwrap();
    std::thread::sleep(Duration::from_millis(400));
    let image: Arc<dyn FileSystem> = Arc::new(fault.crash_image());
    assert_eq!(
        replayed(&image).len(),
        1,
        "synced by the writer within the interval"
    );
    wal.sync().unwrap();
    let timings = wal
        .append(&entry(1, 2, 10), Durability::FsyncWal)
        .unwrap()
        .timings;
    assert!(timings.total >= timings.sync);
}

#[test]
fn the_pending_buffer_is_bounded() {
    let (_, fs) = fault_fs();
    let options = WalOptions {
        pending_entries_max: 2,
        pending_bytes_max: 1_000,
        ..WalOptions::default()
    };
    let wal = Arc::new(open(&fs, options));
    std::thread::scope(|scope| {
        for region in 0..8u64 {
            let wal = Arc::clone(&wal);
            scope.spawn(move || {
                for seq in 1..=40 {
                    wal.append(&entry(region, seq, 300), Durability::AsyncWal)
                        .unwrap();
                }
            });
        }
    });
    assert!(wal.stats().writes > 100, "small batches: {:?}", wal.stats());
    wal.sync().unwrap();
    assert_eq!(replayed(&fs).len(), 320);
}

#[test]
fn enqueue_orders_entries_and_wait_makes_them_durable_in_any_order() {
    let (_, fs) = fault_fs();
    let wal = open(&fs, WalOptions::default());
    // Enqueued in sequence order, waited for in reverse: both acknowledged and durable.
    let first = wal.enqueue(&entry(1, 1, 10), Durability::FsyncWal).unwrap();
    let second = wal.enqueue(&entry(1, 2, 10), Durability::SyncWal).unwrap();
    assert!(
        wal.enqueue(&entry(1, 2, 10), Durability::SyncWal).is_err(),
        "order is checked at enqueue"
    );
    let skipped = wal.enqueue(&entry(1, 3, 10), Durability::SkipWal).unwrap();
    assert!(second.wait().unwrap().lsn.is_some());
    assert!(first.wait().unwrap().lsn.is_some());
    assert_eq!(skipped.wait().unwrap().lsn, None);
    wal.close().unwrap();
    let seqs: Vec<u64> = replayed(&fs).iter().map(|e| e.sequence_id).collect();
    assert_eq!(seqs, [1, 2]);
}

/// An entry of three cells of different sizes, all carrying `sequence_id`.
fn three_cells(region: u64, sequence_id: u64) -> WalEntry {
    let cells = ["a", "bb", "ccc"]
        .iter()
        .enumerate()
        .map(|(i, q)| {
            keel_cell::Cell::builder(format!("row-{i}"), "f")
                .qualifier(*q)
                .timestamp(1)
                .sequence_id(sequence_id)
                .value(vec![7u8; 10 * (i + 1)])
                .build()
                .expect("a valid cell")
        })
        .collect();
    WalEntry {
        region,
        sequence_id,
        write_time_ms: 1_700_000_000_000,
        cells,
    }
}

#[test]
fn numbers_taken_at_enqueue_reach_the_log_in_order_in_the_entry_and_every_cell() {
    let (_, fs) = fault_fs();
    let wal = open(&fs, WalOptions::default());
    let counter = std::sync::atomic::AtomicU64::new(0);
    let take = || {
        let n = counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
        (n, n)
    };
    std::thread::scope(|scope| {
        for _ in 0..8 {
            scope.spawn(|| {
                for _ in 0..50 {
                    // Encoded with a sequence id the log must replace.
                    let (n, pending) = wal
                        .enqueue_numbered(&three_cells(7, 0), Durability::SyncWal, take)
                        .unwrap();
                    assert!(n >= 1);
                    pending.wait().unwrap();
                }
            });
        }
    });
    // A number the region already logged is refused, and what the closure returned is dropped.
    let stale = wal.enqueue_numbered(&three_cells(7, 0), Durability::SyncWal, || (5, ()));
    assert!(matches!(
        stale,
        Err(WalError::SequenceNotIncreasing { found: 5, .. })
    ));
    wal.close().unwrap();
    let entries = replayed(&fs);
    let seqs: Vec<u64> = entries.iter().map(|e| e.sequence_id).collect();
    assert_eq!(
        seqs,
        (1..=400).collect::<Vec<_>>(),
        "log order is number order"
    );
    for e in &entries {
        assert_eq!(e.cells.len(), 3);
        assert!(e.cells.iter().all(|c| c.sequence_id() == e.sequence_id));
    }
}

#[test]
fn is_durable_agrees_with_what_wait_waits_for() {
    let (_, fs) = fault_fs();
    let wal = open(&fs, WalOptions::default());
    // A `SyncWal` entry is written when someone waits for it (or after a second): not yet.
    let sync = wal.enqueue(&entry(1, 1, 10), Durability::SyncWal).unwrap();
    let skip = wal.enqueue(&entry(1, 2, 10), Durability::SkipWal).unwrap();
    assert!(!wal.is_durable(sync.ticket()));
    assert!(wal.is_durable(skip.ticket()));
    let ticket = sync.ticket();
    sync.wait().unwrap();
    assert!(wal.is_durable(ticket));
    let fsync = wal.enqueue(&entry(1, 3, 10), Durability::FsyncWal).unwrap();
    let ticket = fsync.ticket();
    fsync.wait().unwrap();
    assert!(wal.is_durable(ticket));
    wal.close().unwrap();
}
