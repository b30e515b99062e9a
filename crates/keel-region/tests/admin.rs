//! What no client or operator can do to a store: names that would reach outside its
//! directory, schemas too large to read back, WAL segments pinned forever by tables that are
//! gone, a region that cannot open taking the others down. And the durability an operator
//! chooses: the server's default, a table's own, or an override by name.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use keel_cell::{Cell, LATEST_TIMESTAMP};
use keel_fs::{Fault, FaultFs, FileSystem};
use keel_region::{
    Durability, Engine, EngineOptions, FamilyOptions, RegionError, TableOptions, TableState,
};
use keel_wal::WalOptions;

fn options() -> EngineOptions {
    EngineOptions {
        flush_check_interval: Duration::from_secs(3600),
        block_cache_bytes: 0,
        ..EngineOptions::default()
    }
}

fn put(row: &str) -> Cell {
    Cell::put(row.to_string(), "f", "q", LATEST_TIMESTAMP, row.to_string()).expect("cell")
}

/// Every file under `dir`, recursively, as paths relative to it.
fn files(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("read dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push(path.strip_prefix(dir).expect("under").display().to_string());
            }
        }
    }
    out.sort();
    out
}

#[test]
fn names_that_could_reach_a_path_are_refused_and_directories_are_ids() {
    let root = tempfile::tempdir().expect("tempdir");
    let store = root.path().join("store");
    let server = Engine::open(&store, options()).expect("open");
    let t = server
        .create_table("t", vec![FamilyOptions::new("cf")])
        .expect("create");
    t.put(b"r", b"cf", b"q", b"v").expect("put");
    t.flush().expect("flush");
    let before = files(root.path());
    for name in [
        ".", "..", "../x", "a/b", "/abs", "-x", "x:y", "a\\b", "", "é",
    ] {
        let err = server
            .create_table(name, vec![FamilyOptions::new("cf")])
            .expect_err(name);
        assert!(matches!(err, RegionError::BadName(_)), "{name:?}: {err}");
    }
    assert!(matches!(
        server.create_table(&"t".repeat(256), vec![FamilyOptions::new("cf")]),
        Err(RegionError::BadName(_))
    ));
    for family in [&b".."[..], b".", b"a/b", b"x:y", b"\n", b"recovered.edits"] {
        let err = server
            .create_table(
                "u",
                vec![FamilyOptions::new(bytes::Bytes::copy_from_slice(family))],
            )
            .expect_err("bad family");
        assert!(matches!(err, RegionError::BadName(_)), "{family:?}: {err}");
    }
    let twice = server.create_table("u", vec![FamilyOptions::new("a"), FamilyOptions::new("a")]);
    assert!(
        matches!(twice, Err(RegionError::DuplicateFamily { .. })),
        "{twice:?}"
    );
    let many: Vec<FamilyOptions> = (0..257)
        .map(|i| FamilyOptions::new(format!("f{i}")))
        .collect();
    assert!(matches!(
        server.create_table("u", many),
        Err(RegionError::TooManyFamilies {
            count: 257,
            max: 256,
            ..
        })
    ));
    assert_eq!(
        files(root.path()),
        before,
        "a refused create touched nothing"
    );
    assert_eq!(server.list_tables(), ["t"]);
    // The region lives under its id, the family under the hex of its name.
    assert!(
        before
            .iter()
            .any(|f| f.starts_with("store/data/00000000000000000001/6366/")),
        "{before:?}"
    );
    drop(t);
    server.close().expect("close");
    let server = Engine::open(&store, options()).expect("reopen");
    assert_eq!(
        server
            .table("t")
            .expect("t")
            .get_value(b"r", b"cf", b"q")
            .expect("get")
            .as_deref(),
        Some(&b"v"[..])
    );
}

#[test]
fn a_catalog_of_the_previous_version_is_refused_by_name() {
    let dir = tempfile::tempdir().expect("tempdir");
    let text = "keel-catalog 1\nnext-region 1\n";
    let crc = crc32fast::hash(text.as_bytes());
    std::fs::write(dir.path().join("CATALOG"), format!("{text}crc {crc:08x}\n")).expect("write");
    let err = Engine::open(dir.path(), options()).expect_err("refused");
    assert!(
        matches!(&err, RegionError::UnsupportedFormat { found, .. } if found == "keel-catalog 1"),
        "{err}"
    );
}

/// The deterministic test of issue 21's item 4: tables A and B write into one segment; A is
/// deleted and B flushed; after a restart and a roll, the segment is gone.
#[test]
fn a_deleted_tables_edits_do_not_pin_the_wal_across_a_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Engine::open(dir.path(), options()).expect("open");
    let a = server
        .create_table("a", vec![FamilyOptions::new("f")])
        .expect("a");
    let b = server
        .create_table("b", vec![FamilyOptions::new("f")])
        .expect("b");
    for i in 0..50 {
        a.mutate(vec![put(&format!("a{i}"))], Durability::SyncWal)
            .expect("a");
        b.mutate(vec![put(&format!("b{i}"))], Durability::SyncWal)
            .expect("b");
    }
    drop(a);
    server.disable_table("a").expect("disable");
    server.delete_table("a").expect("delete");
    b.flush().expect("flush b");
    drop(b);
    let segments_dir = dir.path().join("wal");
    let old: Vec<_> = std::fs::read_dir(&segments_dir)
        .expect("wal dir")
        .map(|e| e.expect("entry").path())
        .collect();
    // A crash rather than a clean close: nothing is flushed on the way down.
    drop(server);
    let server = Engine::open(dir.path(), options()).expect("reopen");
    let b = server.table("b").expect("b");
    server.roll_wal();
    b.mutate(vec![put("after")], Durability::SyncWal)
        .expect("write");
    assert_eq!(server.wal_closed_segments(), 0, "no closed segment is kept");
    for path in old {
        assert!(!path.exists(), "{} is still there", path.display());
    }
    assert!(
        b.get_value(b"b49", b"f", b"q").expect("get").is_some(),
        "b kept its rows"
    );
}

/// The same with table A disabled rather than deleted: after a restart its flushed edits pin
/// nothing, and enabling it later finds every row.
#[test]
fn a_disabled_tables_edits_do_not_pin_the_wal_across_a_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Engine::open(dir.path(), options()).expect("open");
    let a = server
        .create_table("a", vec![FamilyOptions::new("f")])
        .expect("a");
    let b = server
        .create_table("b", vec![FamilyOptions::new("f")])
        .expect("b");
    for i in 0..50 {
        a.mutate(vec![put(&format!("a{i}"))], Durability::SyncWal)
            .expect("a");
        b.mutate(vec![put(&format!("b{i}"))], Durability::SyncWal)
            .expect("b");
    }
    drop(a);
    server.disable_table("a").expect("disable");
    b.flush().expect("flush b");
    drop(b);
    drop(server);
    let server = Engine::open(dir.path(), options()).expect("reopen");
    assert_eq!(server.wal_closed_segments(), 0, "no closed segment is kept");
    server.enable_table("a").expect("enable");
    let a = server.table("a").expect("a");
    for i in 0..50 {
        assert!(
            a.get_value(format!("a{i}").as_bytes(), b"f", b"q")
                .expect("get")
                .is_some()
        );
    }
}

/// Create, write, delete and restart, over and over, while a third table takes writes: the
/// WAL never keeps more closed segments than `max_segments`.
#[test]
fn table_churn_across_restarts_keeps_the_wal_bounded() {
    let dir = tempfile::tempdir().expect("tempdir");
    let max_segments = 3;
    let options = || EngineOptions {
        wal: WalOptions {
            roll_size: 16 << 10,
            max_segments,
            ..WalOptions::default()
        },
        ..options()
    };
    {
        let server = Engine::open(dir.path(), options()).expect("open");
        server
            .create_table("c", vec![FamilyOptions::new("f")])
            .expect("c");
        server.close().expect("close");
    }
    for round in 0..8 {
        let server = Engine::open(dir.path(), options()).expect("open");
        assert!(
            server.wal_closed_segments() <= max_segments,
            "round {round}: {} closed segments after the restart",
            server.wal_closed_segments()
        );
        let name = format!("t{round}");
        let t = server
            .create_table(&name, vec![FamilyOptions::new("f")])
            .expect("t");
        let c = server.table("c").expect("c");
        for i in 0..200 {
            t.mutate(vec![put(&format!("{name}-{i:03}"))], Durability::SyncWal)
                .expect("t");
            c.mutate(vec![put(&format!("c-{round}-{i:03}"))], Durability::SyncWal)
                .expect("c");
        }
        drop(t);
        drop(c);
        server.disable_table(&name).expect("disable");
        server.delete_table(&name).expect("delete");
        server.close().expect("close");
    }
    let server = Engine::open(dir.path(), options()).expect("open");
    assert!(server.wal_closed_segments() <= max_segments);
    let rows = server
        .table("c")
        .expect("c")
        .scan(&keel_region::Scan::all(i64::MAX / 2));
    assert_eq!(
        rows.expect("scan").len(),
        8 * 200,
        "the surviving table kept every row"
    );
}

#[test]
fn a_region_that_cannot_open_fails_alone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Engine::open(dir.path(), options()).expect("open");
    for name in ["good", "broken"] {
        let t = server
            .create_table(name, vec![FamilyOptions::new("f")])
            .expect("create");
        t.mutate(vec![put("flushed")], Durability::SyncWal)
            .expect("write");
        t.flush().expect("flush");
        t.mutate(vec![put("logged")], Durability::SyncWal)
            .expect("write");
    }
    drop(server);
    // Table "broken" is region 2: damage its manifest.
    let manifest = dir
        .path()
        .join("data")
        .join(format!("{:020}", 2))
        .join("MANIFEST");
    std::fs::write(&manifest, b"keel-region-manifest 1\ngarbage\n").expect("damage");
    let server = Engine::open(dir.path(), options()).expect("the server still opens");
    assert!(matches!(
        server.table_state("broken").expect("state"),
        TableState::FailedOpen { .. }
    ));
    let err = server.table("broken").expect_err("failed");
    assert!(
        matches!(&err, RegionError::FailedOpen { table, .. } if table == "broken"),
        "{err}"
    );
    assert!(
        err.to_string().contains("MANIFEST"),
        "the reason names the file: {err}"
    );
    assert_eq!(server.failed_tables().len(), 1);
    let good = server.table("good").expect("the other table serves");
    assert!(
        good.get_value(b"logged", b"f", b"q")
            .expect("get")
            .is_some()
    );
    good.mutate(vec![put("more")], Durability::SyncWal)
        .expect("and writes");
    assert!(
        server.enable_table("broken").is_err(),
        "enabling retries, and fails again"
    );
    // Repaired (here: the manifest removed, so the region is what the WAL holds), it opens.
    std::fs::remove_file(&manifest).expect("repair");
    server.enable_table("broken").expect("enable after repair");
    assert!(
        server
            .table("broken")
            .expect("open")
            .get_value(b"logged", b"f", b"q")
            .expect("get")
            .is_some(),
        "its logged edits were kept in the WAL while it could not open"
    );
}

#[test]
fn durability_is_the_servers_the_tables_or_an_override() {
    let faults = Arc::new(FaultFs::new());
    let fs: Arc<dyn FileSystem> = faults.clone();
    let mut opts = options();
    opts.table_durability
        .insert("overridden".to_string(), Durability::FsyncWal);
    let server = Engine::open_on(Arc::clone(&fs), Path::new("/s"), opts.clone()).expect("open");
    let plain = server
        .create_table("plain", vec![FamilyOptions::new("f")])
        .expect("plain");
    let own = server
        .create_table_with(
            "own",
            vec![FamilyOptions::new("f")],
            TableOptions {
                durability: Durability::FsyncWal,
                ..TableOptions::default()
            },
        )
        .expect("own");
    let overridden = server
        .create_table("overridden", vec![FamilyOptions::new("f")])
        .expect("o");
    assert_eq!(
        server.table_durability("plain").expect("d"),
        Durability::SyncWal
    );
    assert_eq!(
        server.table_durability("own").expect("d"),
        Durability::FsyncWal
    );
    assert_eq!(
        server.table_durability("overridden").expect("d"),
        Durability::FsyncWal
    );
    // The SyncWal write last: an fsync after it would make it durable too.
    for t in [&own, &overridden, &plain] {
        t.put(b"r", b"f", b"q", b"v").expect("put");
    }
    // A power cut: SyncWal writes were only written to the OS; FsyncWal ones were synced.
    let image: Arc<dyn FileSystem> = Arc::new(faults.crash_image());
    let after = Engine::open_on(image, Path::new("/s"), opts.clone()).expect("reopen");
    let has = |name: &str| {
        after
            .table(name)
            .expect("t")
            .get_value(b"r", b"f", b"q")
            .expect("get")
            .is_some()
    };
    assert!(
        !has("plain"),
        "SyncWal does not survive a power cut on FaultFs"
    );
    assert!(has("own") && has("overridden"));
    assert_eq!(
        after.table_durability("own").expect("d"),
        Durability::FsyncWal,
        "persisted"
    );
    // The server's default (hbase.wal.hsync), and a table's durability changed later.
    drop(after);
    let hsync = EngineOptions {
        default_durability: Durability::FsyncWal,
        ..options()
    };
    let s = Engine::open_on(Arc::clone(&fs), Path::new("/s2"), hsync).expect("open");
    s.create_table("t", vec![FamilyOptions::new("f")])
        .expect("t");
    assert_eq!(s.table_durability("t").expect("d"), Durability::FsyncWal);
    s.set_table_durability("t", Durability::AsyncWal)
        .expect("set");
    assert_eq!(s.table_durability("t").expect("d"), Durability::AsyncWal);
    assert_eq!(
        s.table("t").expect("t").region().default_durability(),
        Durability::AsyncWal
    );
}

#[test]
fn a_poisoned_wal_is_reported_and_refuses_every_write() {
    let faults = Arc::new(FaultFs::new());
    let server = Engine::open_on(faults.clone(), Path::new("/s"), options()).expect("open");
    let t = server
        .create_table("t", vec![FamilyOptions::new("f")])
        .expect("t");
    assert_eq!(server.wal_poisoned(), None);
    faults.inject(Fault::fail_sync(1).on_path("wal"));
    assert!(t.mutate(vec![put("a")], Durability::FsyncWal).is_err());
    let cause = server.wal_poisoned().expect("poisoned");
    assert!(cause.contains("sync"), "{cause}");
    let err = t
        .mutate(vec![put("b")], Durability::SyncWal)
        .expect_err("refused");
    assert!(err.to_string().contains("poisoned"), "{err}");
    assert!(t.get_value(b"a", b"f", b"q").is_ok(), "reads still work");
}

/// Free MSLAB chunks are kept in one pool per server, bounded by `chunk_pool_bytes` and part
/// of the start-up memory check — not in one pool per family of up to 128 MiB each, which let
/// a table of many families hold far more than `memory_bytes` once flushed.
#[test]
fn free_memstore_chunks_are_bounded_per_server() {
    let dir = tempfile::tempdir().expect("tempdir");
    let options = EngineOptions {
        memory_bytes: 256 << 20,
        global_memstore_bytes: 96 << 20,
        block_cache_bytes: 0,
        chunk_pool_bytes: Some(16 << 20),
        ..options()
    };
    let server = Engine::open(dir.path(), options.clone()).expect("open");
    let families: Vec<FamilyOptions> = (0..20)
        .map(|i| FamilyOptions::new(format!("f{i}")))
        .collect();
    let t = server.create_table("wide", families).expect("create");
    let value = vec![b'v'; 64 << 10];
    for row in 0..40 {
        let cells = (0..20)
            .map(|f| {
                Cell::put(
                    format!("r{row}"),
                    format!("f{f}"),
                    "q",
                    LATEST_TIMESTAMP,
                    value.clone(),
                )
                .expect("cell")
            })
            .collect();
        t.mutate(cells, Durability::SkipWal).expect("write");
    }
    t.flush().expect("flush");
    let pooled = server.stats().chunk_pool_bytes;
    assert!(pooled > 0, "flushed chunks come back to the pool");
    assert!(pooled <= 16 << 20, "{pooled} bytes pooled");
    let too_much = EngineOptions {
        chunk_pool_bytes: Some(200 << 20),
        ..options
    };
    assert!(matches!(
        Engine::open(tempfile::tempdir().expect("tempdir").path(), too_much),
        Err(RegionError::MemoryConfig(_))
    ));
}
