//! Combined increments and appends (`ReadModifyWrites::Combined`, the default): many writers of
//! one row, each answered once with its own result, every operation's own cell kept, errors kept
//! to the operation that caused them, batches within one WAL entry, and a closing region or a
//! failing WAL answered as on the per-call path.

use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use keel_cell::Cell;
use keel_fs::{Fault, FaultFs, FileSystem, StdFs};
use keel_region::matcher::{FamilyRules, ReadQuery};
use keel_region::{Durability, FamilyOptions, ReadModifyWrites, Region, RegionError};
use keel_wal::{Wal, WalOptions};

fn open_on(
    fs: Arc<dyn FileSystem>,
    dir: &Path,
    versions: u32,
    wal_options: WalOptions,
    mode: ReadModifyWrites,
) -> (Arc<Wal>, Region) {
    let wal = Arc::new(Wal::open(Arc::clone(&fs), &dir.join("wal"), wal_options).expect("wal"));
    let family = FamilyOptions {
        rules: FamilyRules {
            max_versions: versions,
            ..FamilyRules::default()
        },
        ..FamilyOptions::new("f")
    };
    let region = Region::open(fs, &dir.join("region"), Arc::clone(&wal), 1, vec![family])
        .expect("region")
        .with_read_modify_writes(mode);
    (wal, region)
}

fn open(dir: &Path, versions: u32, mode: ReadModifyWrites) -> (Arc<Wal>, Region) {
    open_on(Arc::new(StdFs), dir, versions, WalOptions::default(), mode)
}

fn versions(region: &Region, row: &[u8], max_versions: u32) -> Vec<Cell> {
    let query = ReadQuery {
        max_versions,
        ..ReadQuery::latest(u64::MAX, 0)
    };
    region.get(row, &query).expect("get")
}

fn counter(cell: &Cell) -> i64 {
    i64::from_be_bytes(cell.value()[..].try_into().expect("8 bytes"))
}

/// `threads` threads each increment `row` `each` times; returns every value they were answered.
fn hammer(region: &Region, threads: usize, each: usize) -> Vec<i64> {
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(move || {
                    (0..each)
                        .map(|_| {
                            region
                                .increment(b"hot", b"f", b"n", 1, Durability::SyncWal)
                                .expect("increment")
                                .0
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("thread"))
            .collect()
    })
}

#[test]
fn every_increment_of_a_hot_row_gets_its_own_value_and_keeps_its_own_version() {
    for mode in [ReadModifyWrites::Combined, ReadModifyWrites::PerCall] {
        let dir = tempfile::tempdir().expect("tempdir");
        let (_wal, region) = open(dir.path(), 10_000, mode);
        assert_eq!(region.read_modify_writes(), mode);
        let (threads, each) = (16, 100);
        let mut answered = hammer(&region, threads, each);
        answered.sort_unstable();
        let total = (threads * each) as i64;
        assert_eq!(answered, (1..=total).collect::<Vec<_>>(), "{mode:?}");
        // One version per increment, newest first: values count down as timestamps do.
        let kept = versions(&region, b"hot", 10_000);
        assert_eq!(kept.len(), threads * each, "{mode:?}");
        let values: Vec<i64> = kept.iter().map(counter).collect();
        assert_eq!(values, (1..=total).rev().collect::<Vec<_>>(), "{mode:?}");
        assert!(
            kept.windows(2).all(|w| w[0].timestamp() > w[1].timestamp()),
            "{mode:?}: timestamps must rise with every increment"
        );
        let stats = region.stats();
        // Each increment counts its read, combined or not (and so does the get above).
        assert_eq!(stats.read_requests, total as u64 + 1, "{mode:?}");
        match mode {
            ReadModifyWrites::Combined => {
                assert_eq!(stats.rmw_batched_operations, total as u64);
                // 16 writers of one row, each waiting for the log: batches form.
                assert!(
                    stats.rmw_batches < stats.rmw_batched_operations,
                    "no batch held two operations: {stats:?}"
                );
            }
            ReadModifyWrites::PerCall => assert_eq!(stats.rmw_batches, 0),
        }
    }
}

#[test]
fn an_operations_error_is_its_own_and_the_batch_goes_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_wal, region) = open(dir.path(), 1, ReadModifyWrites::Combined);
    region
        .mutate(
            vec![Cell::put("r", "f", "text", 1, "abc").expect("cell")],
            Durability::SyncWal,
        )
        .expect("put");
    let (threads, each) = (8, 50);
    std::thread::scope(|scope| {
        for _ in 0..threads {
            let region = &region;
            scope.spawn(move || {
                for _ in 0..each {
                    match region.increment(b"r", b"f", b"text", 1, Durability::SyncWal) {
                        Err(RegionError::NotACounter { len: 3, .. }) => {}
                        other => panic!("incrementing a 3-byte value: {other:?}"),
                    }
                    region
                        .increment(b"r", b"f", b"n", 2, Durability::SyncWal)
                        .expect("increment");
                    region
                        .append(b"r", b"f", b"s", b"xy", Durability::SyncWal)
                        .expect("append");
                    let unknown = region.increment(b"r", b"nope", b"n", 1, Durability::SyncWal);
                    assert!(matches!(unknown, Err(RegionError::NoSuchFamily { .. })));
                }
            });
        }
    });
    let cells = versions(&region, b"r", 1);
    let value = |q: &str| {
        cells
            .iter()
            .find(|c| c.qualifier() == q.as_bytes())
            .map(|c| c.value_bytes())
            .expect("column")
    };
    assert_eq!(value("text"), Bytes::from_static(b"abc"));
    assert_eq!(
        value("n"),
        Bytes::copy_from_slice(&(2 * 8 * 50_i64).to_be_bytes())
    );
    assert_eq!(value("s"), Bytes::from("xy".repeat(threads * each)));
}

#[test]
fn a_batch_never_outgrows_one_wal_entry() {
    let dir = tempfile::tempdir().expect("tempdir");
    let wal_options = WalOptions {
        max_entry_size: 4096,
        ..WalOptions::default()
    };
    let (_wal, region) = open_on(
        Arc::new(StdFs),
        dir.path(),
        1,
        wal_options,
        ReadModifyWrites::Combined,
    );
    // Each thread appends 100 bytes to its own column five times: every cell carries its whole
    // value (up to 500 bytes), so eight writers' batch is more than one entry holds.
    let threads = 8;
    std::thread::scope(|scope| {
        for t in 0..threads {
            let region = &region;
            scope.spawn(move || {
                let column = format!("c{t}");
                let suffix = vec![b'a' + t as u8; 100];
                for k in 1..=5 {
                    let (value, _) = region
                        .append(b"r", b"f", column.as_bytes(), &suffix, Durability::SyncWal)
                        .expect("append");
                    assert_eq!(value, suffix.repeat(k));
                }
            });
        }
    });
    // One operation larger than an entry is refused alone.
    let refused = region.append(b"r", b"f", b"big", &[0; 5000], Durability::SyncWal);
    assert!(
        matches!(refused, Err(RegionError::WriteTooLarge { .. })),
        "{refused:?}"
    );
    let cells = versions(&region, b"r", 1);
    assert_eq!(cells.len(), threads);
    assert!(cells.iter().all(|c| c.value().len() == 500));
}

#[test]
fn a_closing_region_answers_combined_writers_as_closed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (wal, region) = open(dir.path(), 1, ReadModifyWrites::Combined);
    let acknowledged = std::sync::atomic::AtomicI64::new(0);
    std::thread::scope(|scope| {
        for _ in 0..8 {
            let (region, acknowledged) = (&region, &acknowledged);
            scope.spawn(move || {
                loop {
                    match region.increment(b"hot", b"f", b"n", 1, Durability::SyncWal) {
                        Ok(_) => {
                            acknowledged.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        }
                        // What the table layer follows to the region's daughters after a split.
                        Err(RegionError::RegionClosed { .. }) => return,
                        Err(other) => panic!("a combined writer of a closing region got {other}"),
                    }
                }
            });
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
        region.close().expect("close");
    });
    drop(region);
    Arc::try_unwrap(wal)
        .expect("only the test holds the WAL")
        .close()
        .expect("WAL closes");
    let (_wal, reopened) = open(dir.path(), 1, ReadModifyWrites::Combined);
    let cells = versions(&reopened, b"hot", 1);
    let kept = cells.first().map_or(0, counter);
    assert_eq!(
        kept,
        acknowledged.load(std::sync::atomic::Ordering::Relaxed),
        "every acknowledged increment, and nothing else, survives the close"
    );
}

#[test]
fn a_failing_wal_fails_the_batch_and_hides_it() {
    let faults = Arc::new(FaultFs::new());
    let fs: Arc<dyn FileSystem> = faults.clone();
    let (_wal, region) = open_on(
        fs,
        Path::new("/"),
        1,
        WalOptions::default(),
        ReadModifyWrites::Combined,
    );
    region
        .increment(b"hot", b"f", b"n", 1, Durability::FsyncWal)
        .expect("first increment");
    let acknowledged = std::sync::atomic::AtomicI64::new(1);
    std::thread::scope(|scope| {
        for t in 0..8 {
            let (region, acknowledged, faults) = (&region, &acknowledged, &faults);
            scope.spawn(move || {
                for i in 0..40 {
                    if t == 0 && i == 10 {
                        faults.inject(Fault::fail_sync(1).on_path("wal").sticky());
                    }
                    match region.increment(b"hot", b"f", b"n", 1, Durability::FsyncWal) {
                        Ok(_) => {
                            acknowledged.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        }
                        Err(RegionError::Wal(_) | RegionError::BatchFailed(_)) => {}
                        Err(other) => panic!("a WAL failure reached a writer as {other}"),
                    }
                }
            });
        }
    });
    // Nothing the log failed is visible; every acknowledged increment is.
    let cells = versions(&region, b"hot", 1);
    assert_eq!(
        cells.first().map_or(0, counter),
        acknowledged.load(std::sync::atomic::Ordering::Relaxed)
    );
    // No write number was left incomplete: a compaction waits for every one begun before it.
    let policy = keel_region::compaction_policy::CompactionPolicy::default();
    let _ = region.compact(&policy, true);
}
