//! One validated write path: every way to write — mutate, mutate_row, batch, check-and-mutate,
//! increment, append — refuses a cell of a family the region does not have before anything
//! reaches the WAL, so a crash never leaves an edit that stops the region from opening. And a
//! region whose WAL or manifest does name a family it no longer has (a family since dropped)
//! skips it with a counter instead of refusing to open.

use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use keel_cell::{Cell, LATEST_TIMESTAMP};
use keel_fs::{FaultFs, FileSystem};
use keel_region::{Durability, FamilyOptions, Region, RegionError};
use keel_wal::{Wal, WalOptions};

fn open(fs: Arc<dyn FileSystem>, families: &[&'static str]) -> (Arc<Wal>, Region) {
    let wal = Arc::new(
        Wal::open(Arc::clone(&fs), Path::new("/wal"), WalOptions::default()).expect("wal"),
    );
    let families = families.iter().map(|f| FamilyOptions::new(*f)).collect();
    let region =
        Region::open(fs, Path::new("/region"), Arc::clone(&wal), 1, families).expect("opens");
    (wal, region)
}

fn put(row: &'static str, family: &'static str, value: &'static str) -> Cell {
    Cell::put(row, family, "q", LATEST_TIMESTAMP, value).expect("cell")
}

fn no_such_family(result: Result<impl std::fmt::Debug, RegionError>, what: &str) {
    match result {
        Err(RegionError::NoSuchFamily { family, .. }) => assert!(family.contains("nope"), "{what}"),
        other => panic!("{what}: expected NoSuchFamily, got {other:?}"),
    }
}

fn value(region: &Region, row: &str) -> Option<Bytes> {
    region
        .latest(row.as_bytes(), b"f", b"q")
        .expect("read")
        .map(|c| c.value_bytes())
}

#[test]
fn every_write_method_refuses_a_missing_family_before_the_wal() {
    let faults = Arc::new(FaultFs::new());
    let (wal, region) = open(faults.clone(), &["f"]);
    region
        .mutate(vec![put("ok", "f", "before")], Durability::FsyncWal)
        .expect("a good write");
    let appends = wal.stats().appends;
    let fsync = Durability::FsyncWal;
    no_such_family(
        region.mutate(vec![put("a", "f", "1"), put("a", "nope", "2")], fsync),
        "mutate",
    );
    no_such_family(
        region.mutate_row(b"b", vec![put("b", "nope", "1")], fsync),
        "mutate_row",
    );
    let statuses = region.batch(vec![
        (vec![put("c", "f", "kept")], fsync),
        (vec![put("d", "nope", "1")], fsync),
        (vec![put("e", "f", "kept too")], fsync),
    ]);
    assert!(statuses[0].is_ok() && statuses[2].is_ok(), "{statuses:?}");
    assert!(
        matches!(statuses[1], Err(RegionError::NoSuchFamily { .. })),
        "{statuses:?}"
    );
    // checkAndPut's check passes (absent matches absent) but its put names a missing family:
    // an error, never `true` with the put silently dropped.
    no_such_family(
        region.check_and_mutate(
            b"g",
            b"f",
            b"q",
            |v| v.is_none(),
            vec![put("g", "nope", "1")],
            fsync,
        ),
        "check_and_mutate (put)",
    );
    no_such_family(
        region.check_and_mutate(
            b"g",
            b"nope",
            b"q",
            |_| true,
            vec![put("g", "f", "1")],
            fsync,
        ),
        "check_and_mutate (check)",
    );
    no_such_family(region.increment(b"h", b"nope", b"q", 1, fsync), "increment");
    no_such_family(region.append(b"i", b"nope", b"q", b"x", fsync), "append");
    assert_eq!(
        wal.stats().appends,
        appends + 1,
        "only the batch's valid operations reached the WAL"
    );
    assert_eq!(value(&region, "a"), None, "a refused write left nothing");
    // A crash now (only synced bytes survive): the region opens and has every acknowledged row.
    let image: Arc<dyn FileSystem> = Arc::new(faults.crash_image());
    drop(region);
    drop(wal);
    let (_wal, reopened) = open(image, &["f"]);
    assert_eq!(value(&reopened, "ok").as_deref(), Some(&b"before"[..]));
    assert_eq!(value(&reopened, "c").as_deref(), Some(&b"kept"[..]));
    assert_eq!(value(&reopened, "e").as_deref(), Some(&b"kept too"[..]));
    assert_eq!(reopened.stats().skipped_replay_cells, 0);
}

#[test]
fn a_write_larger_than_one_wal_entry_is_refused_and_a_large_batch_is_split() {
    let fs: Arc<dyn FileSystem> = Arc::new(FaultFs::new());
    let options = WalOptions {
        max_entry_size: 4096,
        ..WalOptions::default()
    };
    let wal = Arc::new(Wal::open(Arc::clone(&fs), Path::new("/wal"), options).expect("wal"));
    let region = Region::open(
        fs,
        Path::new("/region"),
        Arc::clone(&wal),
        1,
        vec![FamilyOptions::new("f")],
    )
    .expect("opens");
    let big = Cell::put("big", "f", "q", 1, vec![b'x'; 5000]).expect("cell");
    assert!(matches!(
        region.mutate(vec![big], Durability::SyncWal),
        Err(RegionError::WriteTooLarge { max: 4096, .. })
    ));
    // 40 operations of ~300 bytes: more than one entry's worth, applied as several.
    let operations = (0..40)
        .map(|i| {
            let cell = Cell::put(format!("r{i:02}"), "f", "q", 1, vec![b'v'; 300]).expect("cell");
            (vec![cell], Durability::SyncWal)
        })
        .collect();
    let statuses = region.batch(operations);
    assert!(statuses.iter().all(Result::is_ok), "{statuses:?}");
    assert!(wal.stats().appends >= 3, "{:?}", wal.stats());
    for i in 0..40 {
        assert!(value(&region, &format!("r{i:02}")).is_some(), "row {i}");
    }
}

#[test]
fn replay_and_manifest_skip_a_family_the_region_no_longer_has() {
    let faults = Arc::new(FaultFs::new());
    let (wal, region) = open(faults.clone(), &["f", "g"]);
    region
        .mutate(vec![put("flushed", "g", "1")], Durability::FsyncWal)
        .expect("write");
    region.flush().expect("flush");
    region
        .mutate(
            vec![put("logged", "f", "kept"), put("logged", "g", "2")],
            Durability::FsyncWal,
        )
        .expect("write");
    let image: Arc<dyn FileSystem> = Arc::new(faults.crash_image());
    drop(region);
    drop(wal);
    // Family g is gone from the table's description: the region still opens.
    let (_wal, reopened) = open(image, &["f"]);
    assert_eq!(value(&reopened, "logged").as_deref(), Some(&b"kept"[..]));
    let stats = reopened.stats();
    assert_eq!(stats.skipped_replay_cells, 1, "{stats:?}");
    assert_eq!(stats.skipped_files, 1, "{stats:?}");
    reopened
        .mutate(vec![put("new", "f", "v")], Durability::FsyncWal)
        .expect("and takes writes");
}

/// HBase's rule for a batch: each operation's `USE_DEFAULT` resolves to the region's durability
/// first, then the batch takes the strongest. Taking the maximum first would let a `SkipWal`
/// operation (Thrift's `writeToWAL=false`) drag an operation that asked for the default out of
/// the log: acknowledged, then lost.
#[test]
fn a_batch_resolves_use_default_before_taking_the_strongest() {
    let faults = Arc::new(FaultFs::new());
    let (wal, region) = open(faults.clone(), &["f"]);
    let region = region.with_default_durability(Durability::FsyncWal);
    let statuses = region.batch(vec![
        (vec![put("logged", "f", "v")], Durability::UseDefault),
        (vec![put("skipped", "f", "v")], Durability::SkipWal),
    ]);
    assert!(statuses.iter().all(Result::is_ok), "{statuses:?}");
    let image: Arc<dyn FileSystem> = Arc::new(faults.crash_image());
    drop(region);
    drop(wal);
    let (_wal, reopened) = open(image, &["f"]);
    assert!(
        value(&reopened, "logged").is_some(),
        "the UseDefault (FsyncWal) operation survives a power cut"
    );
}
