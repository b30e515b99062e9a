//! Real process kills (`cargo xtask crash region` runs more rounds): a child runs a mixed load on
//! a region — 3 threads writing two-cell rows, one incrementing a counter, one flushing, one
//! compacting (minor, and every fifth a major compaction) — and
//! reports each acknowledged write; the parent SIGKILLs it at a seeded random moment, reopens
//! WAL and region, and checks: every acknowledged write is there; no write is half there (both
//! cells of a row or neither); the counter is at least its highest acknowledged value and at
//! most one in-flight increment beyond it; and the region serves new writes. At `FsyncWal` and
//! `SyncWal` (a process kill leaves the page cache). `KEEL_CRASH_ROUNDS` sets rounds per level
//! (default 2).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use keel_cell::Cell;
use keel_fs::{FileSystem, StdFs};
use keel_region::matcher::ReadQuery;
use keel_region::{Durability, FamilyOptions, Region};
use keel_testkit::{ChildProcess, child_role, report};
use keel_wal::{Wal, WalOptions};
use rand::Rng;

const DIR_ENV: &str = "KEEL_REGION_CRASH_DIR";

fn open(dir: &Path) -> (Arc<Wal>, Region) {
    let fs: Arc<dyn FileSystem> = Arc::new(StdFs);
    let options = WalOptions {
        roll_size: 64 * 1024,
        ..WalOptions::default()
    };
    let wal = Arc::new(Wal::open(Arc::clone(&fs), &dir.join("wal"), options).expect("WAL opens"));
    let region = Region::open(
        fs,
        &dir.join("region"),
        Arc::clone(&wal),
        1,
        vec![FamilyOptions::new("f")],
    )
    .expect("region opens");
    (wal, region)
}

fn row_cells(thread: u32, n: u64) -> Vec<Cell> {
    let row = format!("t{thread}-{n:08}");
    ["a", "b"]
        .into_iter()
        .map(|q| Cell::put(row.clone(), "f", q, 1, format!("{row}/{q}")).expect("cell"))
        .collect()
}

fn run_child(dir: &Path, durability: Durability) {
    let (_wal, region) = open(dir);
    std::thread::scope(|scope| {
        for thread in 0..3u32 {
            let region = &region;
            scope.spawn(move || {
                for n in 0.. {
                    region
                        .mutate(row_cells(thread, n), durability)
                        .expect("write");
                    report(&format!("row {thread} {n}"));
                }
            });
        }
        let region = &region;
        scope.spawn(move || {
            loop {
                let (value, _) = region
                    .increment(b"counter", b"f", b"n", 1, durability)
                    .expect("increment");
                report(&format!("inc {value}"));
            }
        });
        scope.spawn(move || {
            loop {
                std::thread::sleep(Duration::from_millis(20));
                region.flush().expect("flush");
            }
        });
        // Compactions running too: minor ones as files pile up, every fifth a major one.
        scope.spawn(move || {
            let policy = keel_region::compaction_policy::CompactionPolicy::default();
            for n in 0u64.. {
                std::thread::sleep(Duration::from_millis(30));
                region.compact(&policy, n % 5 == 4).expect("compact");
            }
        });
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
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir_text = tmp.path().display().to_string();
        let role = format!("{durability:?}");
        let mut child =
            ChildProcess::spawn_with_env(test_name, &role, &[(DIR_ENV, &dir_text)]).expect("spawn");
        let kill_after = rng.random_range(100..3_000);
        let mut acked = child
            .wait_for_reports(kill_after, Duration::from_secs(60))
            .expect("reports");
        acked.extend(child.kill_and_collect().expect("kill"));

        let (wal, region) = open(tmp.path());
        let everything = ReadQuery::latest(0, 0);
        let mut max_inc = 0i64;
        let mut highest = [None::<u64>; 3];
        for line in &acked {
            let parts: Vec<&str> = line.split(' ').collect();
            match parts.as_slice() {
                ["row", t, n] => {
                    let (t, n): (u32, u64) = (t.parse().expect("t"), n.parse().expect("n"));
                    let got = region
                        .get(row_cells(t, n)[0].row(), &everything)
                        .expect("get");
                    assert_eq!(
                        got.len(),
                        2,
                        "round {round}: acknowledged row t{t}-{n} lost ({durability:?})"
                    );
                    let h = &mut highest[t as usize];
                    *h = Some(h.map_or(n, |h| h.max(n)));
                }
                ["inc", v] => max_inc = max_inc.max(v.parse().expect("value")),
                _ => panic!("unexpected report {line:?}"),
            }
        }
        // The write in flight at the kill (one past the last acknowledged) is all or nothing.
        for (t, h) in highest.iter().enumerate() {
            let next = h.map_or(0, |h| h + 1);
            let got = region
                .get(row_cells(t as u32, next)[0].row(), &everything)
                .expect("get");
            assert!(
                got.is_empty() || got.len() == 2,
                "round {round}: a half-visible write"
            );
        }
        let counter = region
            .get(b"counter", &everything)
            .expect("get")
            .first()
            .map_or(0, |c| {
                i64::from_be_bytes(c.value()[..].try_into().expect("8 bytes"))
            });
        assert!(
            counter == max_inc || counter == max_inc + 1,
            "round {round}: counter {counter}, highest acknowledged {max_inc}"
        );
        // Whatever compaction was cut short left nothing behind: the family directory holds
        // exactly the committed files.
        let family_dir = tmp.path().join("region").join("66");
        let on_disk = std::fs::read_dir(&family_dir).expect("family dir").count();
        assert_eq!(
            on_disk,
            region.store_file_count(),
            "round {round}: stray files"
        );
        // The region serves again, above everything it replayed.
        region
            .mutate(
                vec![Cell::put("after", "f", "q", 1, "x").expect("cell")],
                durability,
            )
            .expect("write after reopen");
        assert_eq!(region.get(b"after", &everything).expect("get").len(), 1);
        // The counter reads back as before the write (absent if no increment landed before
        // the kill: the row writers can report hundreds of rows first).
        assert_eq!(
            region
                .get(&Bytes::from("counter"), &everything)
                .expect("get")
                .len(),
            usize::from(counter > 0),
            "round {round}: counter {counter}"
        );
        drop(region);
        Arc::try_unwrap(wal)
            .expect("sole owner")
            .close()
            .expect("close");
        assert!(acked.len() >= kill_after);
    }
}

#[test]
fn acknowledged_fsync_writes_survive_sigkill() {
    kill_and_check(
        "acknowledged_fsync_writes_survive_sigkill",
        Durability::FsyncWal,
    );
}

#[test]
fn acknowledged_sync_writes_survive_sigkill() {
    kill_and_check(
        "acknowledged_sync_writes_survive_sigkill",
        Durability::SyncWal,
    );
}
