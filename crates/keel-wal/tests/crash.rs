//! Real process kills (`cargo xtask crash wal` runs more rounds): a child appends from 8 threads
//! and reports every acknowledged (region, sequence id) on its stdout; the parent SIGKILLs it at
//! a seeded random moment, reopens the WAL, and checks that every acknowledged entry replays.
//! At `FsyncWal` and at `SyncWal`: a process kill leaves the page cache, so `SyncWal` must lose
//! nothing either. `KEEL_CRASH_ROUNDS` sets the rounds per level (default 2).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use keel_cell::Cell;
use keel_fs::{FileSystem, StdFs};
use keel_testkit::{ChildProcess, child_role, report};
use keel_wal::{Durability, ReplayOptions, Wal, WalEntry, WalOptions};
use rand::Rng;

const DIR_ENV: &str = "KEEL_WAL_CRASH_DIR";

fn entry(region: u64, sequence_id: u64) -> WalEntry {
    let cell = Cell::builder(format!("row-{region}-{sequence_id}"), "f")
        .value(vec![b'v'; 100])
        .sequence_id(sequence_id)
        .build()
        .expect("a valid cell");
    WalEntry {
        region,
        sequence_id,
        write_time_ms: 0,
        cells: vec![cell],
    }
}

/// The child: 8 appending threads, one region each, until killed.
fn run_child(dir: &Path, durability: Durability) {
    let fs: Arc<dyn FileSystem> = Arc::new(StdFs);
    // Small segments so that kills also land in rolls.
    let options = WalOptions {
        roll_size: 64 * 1024,
        ..WalOptions::default()
    };
    let wal = Wal::open(fs, dir, options).expect("child opens the WAL");
    std::thread::scope(|scope| {
        for region in 0..8u64 {
            let wal = &wal;
            scope.spawn(move || {
                for seq in 1.. {
                    wal.append(&entry(region, seq), durability).expect("append");
                    report(&format!("{region} {seq}"));
                }
            });
        }
    });
}

fn rounds() -> u32 {
    std::env::var("KEEL_CRASH_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(2)
}

fn kill_and_check(test_name: &str, durability: Durability) {
    if let Some(role) = child_role() {
        let dir = PathBuf::from(std::env::var(DIR_ENV).expect("dir for the child"));
        assert_eq!(role, format!("{durability:?}"));
        run_child(&dir, durability);
        return;
    }
    let mut rng = keel_testkit::rng();
    for round in 0..rounds() {
        let tmp = tempfile::tempdir().expect("crash test step");
        let dir = tmp.path().join("wal");
        let role = format!("{durability:?}");
        let dir_text = dir.display().to_string();
        let mut child = ChildProcess::spawn_with_env(test_name, &role, &[(DIR_ENV, &dir_text)])
            .expect("crash test step");
        let kill_after = rng.random_range(50..2_000);
        let mut acked = child
            .wait_for_reports(kill_after, Duration::from_secs(60))
            .expect("crash test step");
        acked.extend(child.kill_and_collect().expect("crash test step"));

        let fs: Arc<dyn FileSystem> = Arc::new(StdFs);
        let wal =
            Wal::open(Arc::clone(&fs), &dir, WalOptions::default()).expect("reopen after kill");
        let mut replayed: HashMap<u64, Vec<u64>> = HashMap::new();
        for item in wal
            .replay(ReplayOptions::default())
            .expect("crash test step")
        {
            let e = item.expect("replay after kill");
            replayed.entry(e.region).or_default().push(e.sequence_id);
        }
        let present: HashSet<(u64, u64)> = replayed
            .iter()
            .flat_map(|(r, seqs)| seqs.iter().map(move |s| (*r, *s)))
            .collect();
        for line in &acked {
            let mut parts = line
                .split(' ')
                .map(|p| p.parse::<u64>().expect("crash test step"));
            let (region, seq) = (
                parts.next().expect("crash test step"),
                parts.next().expect("crash test step"),
            );
            assert!(
                present.contains(&(region, seq)),
                "round {round}: acked {region}/{seq} lost ({durability:?})"
            );
        }
        for (region, seqs) in &replayed {
            assert!(
                seqs.windows(2).all(|w| w[0] + 1 == w[1]),
                "region {region}: gap or duplicate"
            );
            assert_eq!(seqs.first(), Some(&1));
        }
        assert!(acked.len() >= kill_after);
    }
}

#[test]
fn acknowledged_fsync_appends_survive_sigkill() {
    kill_and_check(
        "acknowledged_fsync_appends_survive_sigkill",
        Durability::FsyncWal,
    );
}

#[test]
fn acknowledged_sync_appends_survive_sigkill() {
    kill_and_check(
        "acknowledged_sync_appends_survive_sigkill",
        Durability::SyncWal,
    );
}
