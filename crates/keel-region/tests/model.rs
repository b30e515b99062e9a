//! Shuttle models of the region's lock that orders flushes against writers (`cargo xtask model
//! region`): the updates lock, taken shared by a writer from its MVCC begin to its memstore
//! insert and exclusively by a flush to snapshot, so that every edit at or below the flush's
//! sequence id is in the snapshot. Writers at `FsyncWal` race a flush, and a close; under the
//! random and PCT schedulers every acknowledged write must be readable at once and after a
//! power cut (a crash image, reopened), and a write refused by a closing region must not be.
//! Without the lock a write whose sequence id the flush covers can miss its snapshot: the WAL
//! then lets go of it and a crash loses it.
//!
//! The same race with in-memory compaction `BASIC`: the active segment is flattened twice
//! under the writers, then flushed; every acknowledged write must still be read and survive.
//!
//! A third model races writers at three durability levels through the apply queue (writers
//! finish each other's durable writes): each write must be visible the moment it is
//! acknowledged, with every write acknowledged before it, and no writer may be left asleep. A
//! fourth combines increments of one row: each answered once, with its own value, visible.

#![cfg(shuttle)]

use std::path::Path;
use std::sync::Arc;

use keel_cell::Cell;
use keel_fs::{FaultFs, FileSystem};
use keel_region::matcher::ReadQuery;
use keel_region::{
    Durability, FamilyOptions, InMemoryCompaction, Region, RegionError, RegionLimits,
};
use keel_wal::{Wal, WalOptions};

/// The levels the mixed-level models' three writers write at.
const LEVELS: [Durability; 3] = [
    Durability::SyncWal,
    Durability::FsyncWal,
    Durability::SkipWal,
];

fn iterations() -> usize {
    keel_testkit::model_iterations(200)
}

fn open(fs: Arc<dyn FileSystem>) -> (Arc<Wal>, Arc<Region>) {
    open_limited(fs, RegionLimits::default())
}

fn open_limited(fs: Arc<dyn FileSystem>, limits: RegionLimits) -> (Arc<Wal>, Arc<Region>) {
    let wal = Arc::new(
        Wal::open(Arc::clone(&fs), Path::new("/wal"), WalOptions::default()).expect("wal"),
    );
    let region = Region::open(
        fs,
        Path::new("/region"),
        Arc::clone(&wal),
        1,
        vec![FamilyOptions::new("f")],
    )
    .expect("region")
    .with_limits(limits);
    (wal, Arc::new(region))
}

/// In-memory compaction `BASIC` with a flush size whose in-memory share (an eighth, 128 B)
/// one of the models' cells passes, so that each flatten the admin asks for acts on what the
/// writers have added; writes would block only at four flush sizes, which the models never
/// reach.
fn flattening() -> RegionLimits {
    RegionLimits {
        flush_size: 1 << 10,
        in_memory_compaction: InMemoryCompaction::Basic,
        ..RegionLimits::default()
    }
}

fn row(writer: usize, n: usize) -> String {
    format!("w{writer}-{n}")
}

fn present(region: &Region, row: &str) -> bool {
    !region
        .get(row.as_bytes(), &ReadQuery::latest(0, i64::MAX / 2))
        .expect("get")
        .is_empty()
}

/// Two writers of two rows each race `admin` (a flush, a close, or flattens) on a region with
/// `limits`; every write it acknowledged must be visible and survive a crash, and every write
/// refused as closed must not come back.
fn race(admin: fn(&Region), limits: fn() -> RegionLimits) {
    let fault = FaultFs::new();
    let (wal, region) = open_limited(Arc::new(fault.clone()), limits());
    let writers: Vec<_> = (0..2)
        .map(|w| {
            let region = Arc::clone(&region);
            shuttle::thread::spawn(move || {
                let mut acked = Vec::new();
                for n in 0..2 {
                    let cell = Cell::put(row(w, n), "f", "q", 1, "v").expect("cell");
                    match region.mutate(vec![cell], Durability::FsyncWal) {
                        Ok(_) => acked.push(row(w, n)),
                        Err(RegionError::RegionClosed { .. }) => {}
                        Err(e) => panic!("write failed: {e}"),
                    }
                }
                acked
            })
        })
        .collect();
    let admin_region = Arc::clone(&region);
    let admin_thread = shuttle::thread::spawn(move || admin(&admin_region));
    let acked: Vec<String> = writers
        .into_iter()
        .flat_map(|w| w.join().expect("writer"))
        .collect();
    admin_thread.join().expect("admin");
    let all: Vec<String> = (0..2)
        .flat_map(|w| (0..2).map(move |n| row(w, n)))
        .collect();
    if region.is_open() {
        for r in &acked {
            assert!(present(&region, r), "acknowledged {r} is not visible");
        }
    }
    // A power cut now: only what was synced survives.
    let image: Arc<dyn FileSystem> = Arc::new(fault.crash_image());
    drop(region);
    drop(wal);
    let (_wal, reopened) = open_limited(image, limits());
    for r in &all {
        let there = present(&reopened, r);
        if acked.contains(r) {
            assert!(there, "acknowledged {r} lost after the crash");
        } else {
            assert!(!there, "refused {r} came back");
        }
    }
}

fn flush_races_writers() {
    race(
        |region| {
            region.flush().expect("flush");
            region.flush().expect("flush");
        },
        RegionLimits::default,
    );
}

fn close_races_writers() {
    race(
        |region| {
            region.close().expect("close");
        },
        RegionLimits::default,
    );
}

/// The active segment turned into a flat one (an in-memory flush) while writers insert into
/// it, twice, then a flush of the segments that holds: a cell that landed in the active segment
/// after the flattener copied it, but before the new active segment took over, would be lost.
fn flatten_races_writers() {
    race(
        |region| {
            region.flatten_memstores();
            region.flatten_memstores();
            region.flush().expect("flush");
        },
        flattening,
    );
}

#[test]
fn a_flush_never_loses_a_write_it_raced() {
    shuttle::check_random(flush_races_writers, iterations());
    shuttle::check_pct(flush_races_writers, iterations(), 3);
}

#[test]
fn a_flatten_never_loses_a_write_it_raced() {
    shuttle::check_random(flatten_races_writers, iterations());
    shuttle::check_pct(flatten_races_writers, iterations(), 3);
}

#[test]
fn a_close_keeps_every_acknowledged_write_and_refuses_the_rest() {
    shuttle::check_random(close_races_writers, iterations());
    shuttle::check_pct(close_races_writers, iterations(), 3);
}

/// Three writers, at `SyncWal`, `FsyncWal` and `SkipWal`, two rows each: every write is
/// visible when acknowledged, and so is every write its writer acknowledged earlier.
fn writers_at_mixed_levels_see_their_writes_at_once() {
    let fault = FaultFs::new();
    let (_wal, region) = open(Arc::new(fault));
    let writers: Vec<_> = LEVELS
        .into_iter()
        .enumerate()
        .map(|(w, level)| {
            let region = Arc::clone(&region);
            shuttle::thread::spawn(move || {
                for n in 0..2 {
                    let cell = Cell::put(row(w, n), "f", "q", 1, "v").expect("cell");
                    region.mutate(vec![cell], level).expect("write");
                    for earlier in 0..=n {
                        assert!(
                            present(&region, &row(w, earlier)),
                            "{} not visible after its write at {level:?} was acknowledged",
                            row(w, earlier)
                        );
                    }
                }
            })
        })
        .collect();
    for writer in writers {
        writer.join().expect("writer");
    }
}

#[test]
fn acknowledged_writes_are_visible_at_once_at_every_level() {
    shuttle::check_random(
        writers_at_mixed_levels_see_their_writes_at_once,
        iterations(),
    );
    shuttle::check_pct(
        writers_at_mixed_levels_see_their_writes_at_once,
        iterations(),
        3,
    );
}

/// Three writers increment one row twice each, at three levels, combined (the default): every
/// increment is answered once with its own value, that value is visible when it is answered,
/// and no writer is left waiting for a combiner that has gone.
fn combined_increments_of_one_row() {
    let fault = FaultFs::new();
    let (_wal, region) = open(Arc::new(fault));
    let writers: Vec<_> = LEVELS
        .into_iter()
        .map(|level| {
            let region = Arc::clone(&region);
            shuttle::thread::spawn(move || {
                let mut answered = Vec::new();
                for _ in 0..2 {
                    let (value, _) = region
                        .increment(b"hot", b"f", b"n", 1, level)
                        .expect("increment");
                    let seen = region
                        .get(b"hot", &ReadQuery::latest(0, i64::MAX / 2))
                        .expect("get");
                    let visible = seen.first().map_or(0, |c| {
                        i64::from_be_bytes(c.value()[..].try_into().expect("8 bytes"))
                    });
                    assert!(
                        visible >= value,
                        "increment to {value} acknowledged, {visible} visible"
                    );
                    answered.push(value);
                }
                answered
            })
        })
        .collect();
    let mut answered: Vec<i64> = writers
        .into_iter()
        .flat_map(|w| w.join().expect("writer"))
        .collect();
    answered.sort_unstable();
    assert_eq!(answered, [1, 2, 3, 4, 5, 6]);
}

#[test]
fn combined_increments_are_answered_once_each_and_visible() {
    shuttle::check_random(combined_increments_of_one_row, iterations());
    shuttle::check_pct(combined_increments_of_one_row, iterations(), 3);
}
