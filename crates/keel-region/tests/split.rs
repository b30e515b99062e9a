//! Splitting and merging regions: the rows stay where they were as far as any reader can tell
//! (gets, scans both ways, across restarts), daughters read their parent's files through
//! references until a compaction rewrites them, the parent's directory goes only then, a scan
//! that started before a split finishes in order, and writers running through splits lose
//! nothing they were told was written.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use bytes::Bytes;
use keel_cell::Cell;
use keel_region::{Durability, Engine, EngineOptions, FamilyOptions, RegionError, Scan};

const NOW: i64 = i64::MAX / 2;

fn rows_of(t: &keel_region::Table, reversed: bool) -> Vec<(String, String)> {
    t.scan(&Scan {
        reversed,
        ..Scan::all(NOW)
    })
    .expect("scan")
    .into_iter()
    .flatten()
    .map(|c| {
        (
            String::from_utf8_lossy(c.row()).into_owned(),
            String::from_utf8_lossy(c.value()).into_owned(),
        )
    })
    .collect()
}

fn put(t: &keel_region::Table, row: &str, value: &str) {
    t.mutate(
        vec![
            Cell::put(
                row.to_string(),
                "f",
                "q",
                keel_cell::LATEST_TIMESTAMP,
                value.to_string(),
            )
            .expect("cell"),
        ],
        Durability::SyncWal,
    )
    .expect("put");
}

fn region_dirs(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir.join("data")).expect("data").count()
}

#[test]
fn a_split_keeps_every_row_and_its_parent_until_nothing_refers_to_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    // The daughters keep their references until this test compacts them.
    let options = || EngineOptions {
        compact_split_regions: false,
        ..EngineOptions::default()
    };
    let server = Engine::open(dir.path(), options()).expect("open");
    let t = server
        .create_table("t", vec![FamilyOptions::new("f")])
        .expect("create");
    let mut expected = BTreeMap::new();
    for i in 0..200 {
        let row = format!("r{i:03}");
        put(&t, &row, &format!("v{i}"));
        expected.insert(row, format!("v{i}"));
        if i == 120 {
            t.flush().expect("flush");
        }
    }
    // Rows still in the memstore go into the parent's files when it closes for the split.
    let parent = t.regions()[0].id();
    let [a, b] = server.split_region("t", parent, None).expect("split");
    assert!(a.start_key.is_empty() && b.end_key.is_empty() && a.end_key == b.start_key);
    assert!(
        b.start_key > Bytes::from_static(b"r000"),
        "the split row is inside: {:?}",
        b.start_key
    );
    let want: Vec<(String, String)> = expected.clone().into_iter().collect();
    assert_eq!(rows_of(&t, false), want, "the old handle follows the split");
    let mut back = want.clone();
    back.reverse();
    assert_eq!(rows_of(&t, true), back);
    assert_eq!(t.regions().len(), 2);
    assert!(t.regions().iter().all(|r| r.has_references()));
    // Writes go to the daughters.
    put(&t, "r000", "new");
    put(&t, "r199", "new");
    expected.insert("r000".into(), "new".into());
    expected.insert("r199".into(), "new".into());
    // A daughter that still reads its parent's files is compacted first, then splits.
    let [a1, a2] = server
        .split_region("t", a.id, Some(Bytes::from_static(b"r010")))
        .expect("a daughter splits again");
    assert_eq!(a2.start_key, Bytes::from_static(b"r010"));
    assert_eq!(t.regions().len(), 3);
    let want: Vec<(String, String)> = expected.clone().into_iter().collect();
    assert_eq!(rows_of(&t, false), want);
    // Across a restart: the catalog names the three regions, which still read older files.
    drop(t);
    server.close().expect("close");
    let server = Engine::open(dir.path(), options()).expect("reopen");
    let t = server.table("t").expect("t");
    assert_eq!(rows_of(&t, false), want);
    assert_eq!(
        region_dirs(dir.path()),
        5,
        "three regions, the first daughter and the parent"
    );
    // Compactions rewrite the references; then the closed regions' directories go.
    t.major_compact().expect("compact");
    assert!(t.regions().iter().all(|r| !r.has_references()));
    server.remove_unreferenced_regions();
    assert_eq!(
        region_dirs(dir.path()),
        3,
        "the closed regions' directories went"
    );
    assert_eq!(rows_of(&t, false), want);
    // Merges, the second at once on the first's result, which still reads its parents' files.
    let merged = server.merge_regions("t", a1.id, a2.id).expect("merge");
    assert_eq!(t.regions().len(), 2);
    let merged = server
        .merge_regions("t", merged.id, b.id)
        .expect("a merge right after a merge");
    assert!(merged.start_key.is_empty() && merged.end_key.is_empty());
    assert_eq!(t.regions().len(), 1);
    assert_eq!(rows_of(&t, false), want);
    t.major_compact().expect("compact");
    server.remove_unreferenced_regions();
    assert_eq!(region_dirs(dir.path()), 1);
    drop(t);
    server.close().expect("close");
    let server = Engine::open(dir.path(), EngineOptions::default()).expect("reopen");
    assert_eq!(rows_of(&server.table("t").expect("t"), false), want);
}

#[test]
fn bad_splits_and_merges_are_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Engine::open(dir.path(), EngineOptions::default()).expect("open");
    let t = server
        .create_table_with(
            "t",
            vec![FamilyOptions::new("f")],
            keel_region::TableOptions {
                split_keys: vec!["g".into(), "n".into()],
                ..keel_region::TableOptions::default()
            },
        )
        .expect("create");
    let ids: Vec<u64> = t.regions().iter().map(|r| r.id()).collect();
    for (region, at) in [(ids[0], "g"), (ids[0], "z"), (ids[1], "g"), (999, "b")] {
        let refused = server.split_region("t", region, Some(Bytes::copy_from_slice(at.as_bytes())));
        assert!(
            matches!(refused, Err(RegionError::SplitRefused { .. })),
            "{region} at {at}: {refused:?}"
        );
    }
    // An empty region has no split point.
    assert!(matches!(
        server.split_region("t", ids[2], None),
        Err(RegionError::SplitRefused { .. })
    ));
    assert!(matches!(
        server.merge_regions("t", ids[0], ids[2]),
        Err(RegionError::SplitRefused { .. })
    ));
    assert_eq!(t.regions().len(), 3, "nothing changed");
}

#[test]
fn a_scan_and_writers_run_through_splits() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Arc::new(Engine::open(dir.path(), EngineOptions::default()).expect("open"));
    let t = server
        .create_table("t", vec![FamilyOptions::new("f")])
        .expect("create");
    for i in 0..400 {
        put(&t, &format!("a{i:04}"), "old");
    }
    t.flush().expect("flush");
    // A scan opened before the splits, read slowly while they happen.
    let mut scanner = t.scanner(&Scan::all(NOW)).expect("scanner");
    let first = scanner.next().expect("a row").expect("ok");
    assert_eq!(first[0].row(), &Bytes::from_static(b"a0000"));
    let stop = Arc::new(AtomicBool::new(false));
    let acked = std::thread::scope(|s| {
        let writers: Vec<_> = (0..3)
            .map(|w| {
                let (t, stop) = (t.clone(), Arc::clone(&stop));
                s.spawn(move || {
                    let mut acked = Vec::new();
                    let mut i = 0;
                    while !stop.load(Ordering::Relaxed) {
                        let row = format!("b{w}{i:05}");
                        let cell =
                            Cell::put(row.clone(), "f", "q", keel_cell::LATEST_TIMESTAMP, "v")
                                .expect("cell");
                        match t.mutate(vec![cell], Durability::SyncWal) {
                            Ok(_) => acked.push(row),
                            Err(e) => panic!("a write failed during splits: {e}"),
                        }
                        i += 1;
                    }
                    acked
                })
            })
            .collect();
        // Split whatever region is largest, a few times, while they write.
        for _ in 0..4 {
            t.flush().expect("flush");
            let regions = t.regions();
            let Some(largest) = regions
                .iter()
                .filter(|r| !r.has_references())
                .max_by_key(|r| r.largest_store_bytes())
            else {
                t.major_compact().expect("compact");
                continue;
            };
            match server.split_region("t", largest.id(), None) {
                Ok(_) | Err(RegionError::SplitRefused { .. }) => {}
                Err(e) => panic!("split: {e}"),
            }
            t.major_compact().expect("compact");
        }
        stop.store(true, Ordering::Relaxed);
        writers
            .into_iter()
            .flat_map(|w| w.join().expect("writer"))
            .collect::<Vec<String>>()
    });
    assert!(t.regions().len() > 1, "some splits happened");
    // The scan that began before the splits goes on in order, every old row once.
    let mut seen = vec![first[0].row_bytes()];
    for row in scanner {
        seen.push(row.expect("row")[0].row_bytes());
    }
    assert!(
        seen.windows(2).all(|w| w[0] < w[1]),
        "in order, no row twice"
    );
    let old: Vec<Bytes> = seen
        .iter()
        .filter(|r| r.starts_with(b"a"))
        .cloned()
        .collect();
    assert_eq!(old.len(), 400);
    // Every acknowledged write is there exactly once, now and after a restart.
    let check = |t: &keel_region::Table| {
        let rows: Vec<String> = rows_of(t, false).into_iter().map(|(r, _)| r).collect();
        let mut want: Vec<String> = (0..400)
            .map(|i| format!("a{i:04}"))
            .chain(acked.iter().cloned())
            .collect();
        want.sort();
        assert_eq!(rows, want);
    };
    check(&t);
    drop(t);
    let server = Arc::try_unwrap(server).expect("one owner");
    server.close().expect("close");
    let server = Engine::open(dir.path(), EngineOptions::default()).expect("reopen");
    check(&server.table("t").expect("t"));
}

/// A table's compactions, minor and major, while its regions split under them: a region
/// closed by a split cancels its compaction, and the table's call goes on to the daughters
/// instead of failing (it failed with `CompactionCancelled` before).
#[test]
fn table_compactions_follow_regions_through_splits() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Arc::new(Engine::open(dir.path(), EngineOptions::default()).expect("open"));
    let t = server
        .create_table("t", vec![FamilyOptions::new("f")])
        .expect("create");
    for i in 0..2_000 {
        put(&t, &format!("a{i:05}"), "value");
    }
    t.flush().expect("flush");
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let compactor = s.spawn(|| {
            let mut rounds = 0;
            while !stop.load(Ordering::Relaxed) {
                t.major_compact().expect("major compaction during splits");
                t.compact().expect("compaction during splits");
                rounds += 1;
            }
            rounds
        });
        for _ in 0..6 {
            let regions = t.regions();
            let largest = regions
                .iter()
                .max_by_key(|r| r.largest_store_bytes())
                .expect("a region");
            match server.split_region("t", largest.id(), None) {
                Ok(_) | Err(RegionError::SplitRefused { .. }) => {}
                Err(e) => panic!("split: {e}"),
            }
        }
        stop.store(true, Ordering::Relaxed);
        assert!(compactor.join().expect("compactor") > 0);
    });
    assert!(t.regions().len() > 1, "some splits happened");
    let rows = rows_of(&t, false);
    assert_eq!(rows.len(), 2_000);
}
