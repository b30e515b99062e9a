//! The region server: tables created, listed, disabled, enabled and deleted, with the catalog
//! and the data surviving a restart; bad names and states refused with typed errors.

use keel_region::{Engine, EngineOptions, FamilyOptions, RegionError, RegionLimits};

#[test]
fn tables_and_their_data_survive_a_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Engine::open(dir.path(), EngineOptions::default()).expect("open");
    let t = server
        .create_table("t1", vec![FamilyOptions::new("f"), FamilyOptions::new("g")])
        .expect("create");
    server
        .create_table("t2", vec![FamilyOptions::new("f")])
        .expect("create");
    t.put(b"r", b"f", b"q", b"v1").expect("put");
    assert_eq!(t.increment(b"r", b"g", b"n", 5).expect("inc"), 5);
    t.flush().expect("flush");
    t.put(b"r2", b"f", b"q", b"unflushed").expect("put");
    drop(t);
    server.close().expect("close");

    let server = Engine::open(dir.path(), EngineOptions::default()).expect("reopen");
    assert_eq!(server.list_tables(), ["t1", "t2"]);
    let t = server.table("t1").expect("table");
    assert_eq!(
        t.get_value(b"r", b"f", b"q").expect("get").as_deref(),
        Some(&b"v1"[..])
    );
    assert_eq!(
        t.get_value(b"r2", b"f", b"q").expect("get").as_deref(),
        Some(&b"unflushed"[..])
    );
    assert_eq!(t.increment(b"r", b"g", b"n", 1).expect("inc"), 6);
    // Tables keep their own regions: t2 does not see t1's rows.
    assert!(
        server
            .table("t2")
            .expect("t2")
            .get_value(b"r", b"f", b"q")
            .expect("get")
            .is_none()
    );
    drop(t);
    server.close().expect("close");
}

#[test]
fn table_states_and_names_are_checked() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Engine::open(dir.path(), EngineOptions::default()).expect("open");
    assert!(matches!(
        server.create_table("bad name", vec![FamilyOptions::new("f")]),
        Err(RegionError::BadName(_))
    ));
    assert!(matches!(
        server.create_table("t", vec![]),
        Err(RegionError::NoFamilies(_))
    ));
    let t = server
        .create_table("t", vec![FamilyOptions::new("f")])
        .expect("create");
    assert!(matches!(
        server.create_table("t", vec![FamilyOptions::new("f")]),
        Err(RegionError::TableExists(_))
    ));
    t.put(b"r", b"f", b"q", b"v").expect("put");
    drop(t);
    assert!(matches!(
        server.delete_table("t"),
        Err(RegionError::TableEnabled(_))
    ));
    server.disable_table("t").expect("disable");
    assert!(matches!(
        server.table("t"),
        Err(RegionError::TableDisabled(_))
    ));
    server.enable_table("t").expect("enable");
    assert_eq!(
        server
            .table("t")
            .expect("t")
            .get_value(b"r", b"f", b"q")
            .expect("get")
            .as_deref(),
        Some(&b"v"[..]),
        "data kept across disable/enable"
    );
    server.disable_table("t").expect("disable");
    server.delete_table("t").expect("delete");
    assert!(server.list_tables().is_empty());
    assert!(matches!(
        server.table("t"),
        Err(RegionError::NoSuchTable(_))
    ));
    // A table created again under the same name starts empty.
    let t = server
        .create_table("t", vec![FamilyOptions::new("f")])
        .expect("create again");
    assert!(t.get_value(b"r", b"f", b"q").expect("get").is_none());
    drop(t);
    server.close().expect("close");
}

#[test]
fn a_get_reads_only_its_rows_blocks() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Engine::open(dir.path(), EngineOptions::default()).expect("open");
    let t = server
        .create_table("t", vec![FamilyOptions::new("f")])
        .expect("create");
    // Each row fills a 64 KiB block: every row ends its block.
    let value = vec![b'v'; 64 << 10];
    for i in 0..20 {
        t.put(format!("r{i:02}").as_bytes(), b"f", b"q", &value)
            .expect("put");
    }
    t.flush().expect("flush");
    let before = server.block_cache_stats().expect("a cache");
    for i in 0..20 {
        let got = t.get_value(format!("r{i:02}").as_bytes(), b"f", b"q");
        assert_eq!(got.expect("get").map(|v| v.len()), Some(value.len()));
    }
    let after = server.block_cache_stats().expect("a cache");
    let lookups = (after.hits + after.misses) - (before.hits + before.misses);
    assert_eq!(
        lookups, 20,
        "one block a get, not the next row's too: {after:?}"
    );
    drop(t);
    server.close().expect("close");
}

#[test]
fn a_compaction_reads_around_the_block_cache() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Engine::open(dir.path(), EngineOptions::default()).expect("open");
    let t = server
        .create_table("t", vec![FamilyOptions::new("f")])
        .expect("create");
    let value = vec![b'v'; 1000];
    for file in 0..3 {
        for i in 0..300 {
            t.put(format!("r{i:03}").as_bytes(), b"f", b"q", &value)
                .expect("put");
        }
        t.flush().expect("flush");
        assert_eq!(t.region().store_file_count(), file + 1);
    }
    // A read keeps a block of each file.
    assert!(t.get_value(b"r150", b"f", b"q").expect("get").is_some());
    let before = server.block_cache_stats().expect("a cache");
    assert!(before.blocks >= 3, "{before:?}");
    assert_eq!(t.major_compact().expect("compact"), 3);
    assert_eq!(t.region().store_file_count(), 1);
    let after = server.block_cache_stats().expect("a cache");
    // The compaction read 3 × 300 KB of blocks and cached none of them (nor a miss counted
    // against the caching hit ratio); index blocks it read may have been kept.
    assert!(
        after.size_bytes < before.size_bytes + 64 * 1024,
        "{before:?} -> {after:?}"
    );
    assert_eq!(after.caching_misses, before.caching_misses, "{after:?}");
    for i in (0..300).step_by(37) {
        assert_eq!(
            t.get_value(format!("r{i:03}").as_bytes(), b"f", b"q")
                .expect("get")
                .as_deref(),
            Some(&value[..])
        );
    }
    drop(t);
    server.close().expect("close");
}

#[test]
fn reads_of_store_files_go_through_the_shared_block_cache() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Engine::open(dir.path(), EngineOptions::default()).expect("open");
    let hot = FamilyOptions {
        in_memory: true,
        ..FamilyOptions::new("f")
    };
    let t = server.create_table("t", vec![hot]).expect("create");
    for i in 0..100 {
        t.put(format!("r{i:03}").as_bytes(), b"f", b"q", b"v")
            .expect("put");
    }
    t.flush().expect("flush");
    let before = server.block_cache_stats().expect("a cache");
    for _ in 0..10 {
        assert!(t.get_value(b"r050", b"f", b"q").expect("get").is_some());
    }
    let after = server.block_cache_stats().expect("a cache");
    assert!(
        after.misses > before.misses,
        "the first read loads the block: {after:?}"
    );
    assert!(
        after.hits >= before.hits + 9,
        "later reads hit it: {after:?}"
    );
    drop(t);
    server.close().expect("close");
    // The in-memory flag survives in the catalog.
    let server = Engine::open(
        dir.path(),
        EngineOptions {
            block_cache_bytes: 0,
            ..EngineOptions::default()
        },
    )
    .expect("reopen");
    assert!(server.block_cache_stats().is_none());
    assert_eq!(
        server
            .table("t")
            .expect("t")
            .get_value(b"r050", b"f", b"q")
            .expect("get")
            .as_deref(),
        Some(&b"v"[..])
    );
    server.close().expect("close");
}

#[test]
fn the_flusher_flushes_a_region_past_its_flush_size() {
    let dir = tempfile::tempdir().expect("tempdir");
    let options = EngineOptions {
        limits: RegionLimits {
            flush_size: 64 * 1024,
            ..RegionLimits::default()
        },
        flush_check_interval: std::time::Duration::from_millis(10),
        ..EngineOptions::default()
    };
    let server = Engine::open(dir.path(), options).expect("open");
    // Two tables: the two flusher threads each look after one.
    let other = server
        .create_table("a", vec![FamilyOptions::new("f")])
        .expect("create");
    let t = server
        .create_table("t", vec![FamilyOptions::new("f")])
        .expect("create");
    let value = vec![b'x'; 1024];
    for i in 0..400 {
        for table in [&t, &other] {
            put_retrying(table, format!("r{i:05}").as_bytes(), &value);
        }
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    // The flushers keep at it until every memstore is back under the flush size.
    let settled =
        |r: &keel_region::Region| r.store_file_count() > 0 && r.memstore_size() < 64 * 1024;
    while !settled(&t.region()) || !settled(&other.region()) {
        assert!(
            std::time::Instant::now() < deadline,
            "no background flush brought the memstores under the flush size"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    for i in [0, 199, 399] {
        assert_eq!(
            t.get_value(format!("r{i:05}").as_bytes(), b"f", b"q")
                .expect("get")
                .as_deref(),
            Some(&value[..])
        );
    }
    assert_eq!(server.flush_failures(), 0);
    drop((t, other));
    server.close().expect("close");
}

#[test]
fn the_flusher_flattens_memstores_in_memory_under_basic() {
    let dir = tempfile::tempdir().expect("tempdir");
    // 4 MiB flush size: a store flushes in memory at 512 KiB, long before a flush.
    let options = EngineOptions {
        limits: RegionLimits {
            flush_size: 4 << 20,
            in_memory_compaction: keel_region::InMemoryCompaction::Basic,
            ..RegionLimits::default()
        },
        flush_check_interval: std::time::Duration::from_millis(10),
        ..EngineOptions::default()
    };
    let server = Engine::open(dir.path(), options).expect("open");
    let t = server
        .create_table("t", vec![FamilyOptions::new("f")])
        .expect("create");
    let value = |i: usize| format!("{i:0>1000}").into_bytes();
    // Rows in an order unrelated to their keys, and half of them written twice.
    let rows: Vec<usize> = (0..1500).map(|i| i * 7919 % 1500).collect();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    for (n, &i) in rows.iter().chain(&rows[..750]).enumerate() {
        put_retrying(&t, format!("r{i:05}").as_bytes(), &value(i + n / 1500));
    }
    while t.region().stats().in_memory_flushes == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "no in-memory flush after 2 MiB of writes"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(
        t.region().store_file_count(),
        0,
        "nothing was flushed to disk"
    );
    let scan = keel_region::Scan::all(0);
    let scanned = t.region().scan(&scan).expect("scan");
    assert_eq!(scanned.len(), 1500);
    for (i, row) in scanned.iter().enumerate() {
        let rewritten = rows[..750].contains(&i);
        assert_eq!(row[0].row(), format!("r{i:05}").as_bytes());
        assert_eq!(row[0].value(), &value(i + usize::from(rewritten))[..]);
    }
    drop(t);
    server.close().expect("close");
    // The flattened cells were in the WAL and the close flushed them: all there on reopen.
    let server = Engine::open(dir.path(), EngineOptions::default()).expect("reopen");
    let t = server.table("t").expect("table");
    assert_eq!(
        t.get_value(b"r00042", b"f", b"q").expect("get").as_deref(),
        Some(&value(42 + usize::from(rows[..750].contains(&42)))[..])
    );
    drop(t);
    server.close().expect("close");
}

/// A put that, refused because the region is too busy, retries as an HBase client does.
fn put_retrying(table: &keel_region::Table, row: &[u8], value: &[u8]) {
    loop {
        match table.put(row, b"f", b"q", value) {
            Ok(_) => return,
            Err(keel_region::RegionError::RegionTooBusy { .. }) => {
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            Err(e) => panic!("put: {e}"),
        }
    }
}

/// The counters a status page shows: read and write requests per region, store files and
/// their bytes per family, and the server's WAL, segments and block cache.
#[test]
fn request_counters_store_file_sizes_and_wal_stats() {
    use keel_cell::{Cell, LATEST_TIMESTAMP};
    use keel_region::{Durability, Scan, matcher::ReadQuery};
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Engine::open(dir.path(), EngineOptions::default()).expect("open");
    let t = server
        .create_table(
            "t",
            vec![FamilyOptions::new("cf"), FamilyOptions::new("cf2")],
        )
        .expect("create");
    let appends_before = server.wal_stats().appends;
    for i in 0..3 {
        t.put(format!("r{i}").as_bytes(), b"cf", b"q", b"v")
            .expect("put");
    }
    let batch: Vec<(Vec<Cell>, Durability)> = (0..4)
        .map(|i| {
            let cell = Cell::put(format!("b{i}"), "cf", "q", LATEST_TIMESTAMP, "v").expect("cell");
            (vec![cell], Durability::UseDefault)
        })
        .collect();
    assert!(t.region().batch(batch).iter().all(Result::is_ok));
    t.increment(b"n", b"cf", b"count", 1).expect("increment");
    for _ in 0..2 {
        t.get(b"r0", &ReadQuery::latest(0, i64::MAX / 2))
            .expect("get");
    }
    t.scan(&Scan::all(i64::MAX / 2)).expect("scan");
    let stats = t.region().stats();
    assert_eq!(stats.write_requests, 3 + 4 + 1);
    // 2 gets, 1 scan, and the increment's read.
    assert_eq!(stats.read_requests, 2 + 1 + 1);
    // 3 puts, one batch entry, one increment.
    assert_eq!(server.wal_stats().appends - appends_before, 3 + 1 + 1);
    assert!(
        t.region()
            .store_file_sizes()
            .iter()
            .all(|f| f.files == 0 && f.bytes == 0)
    );
    t.flush().expect("flush");
    let files = t.region().store_file_sizes();
    let cf = files.iter().find(|f| f.family == "cf").expect("cf");
    assert_eq!(cf.files, 1);
    assert!(cf.bytes > 100, "{cf:?}");
    let cf2 = files.iter().find(|f| f.family == "cf2").expect("cf2");
    assert_eq!((cf2.files, cf2.bytes), (0, 0), "nothing was written to cf2");
    assert!(server.block_cache_lock_stats().is_some());
    assert_eq!(
        server.block_cache_capacity(),
        EngineOptions::default().block_cache_bytes
    );
    let _ = server.wal_closed_segments();
}

/// Store files read through a bucket cache, whose every read takes its slot's id lock from the
/// chosen pool (HBASE-17747): a weak pool makes a lock object per read, a soft one keeps them.
#[test]
fn a_bucket_cache_with_a_weak_or_a_soft_id_lock_pool() {
    use keel_region::{AreaKind, BlockCacheKind, PoolKind, matcher::ReadQuery};
    let mut created = Vec::new();
    for pool in [
        PoolKind::Weak,
        PoolKind::Soft {
            max_entries: 10_000,
        },
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let server = Engine::open(
            dir.path(),
            EngineOptions {
                block_cache_kind: BlockCacheKind::Bucket(AreaKind::Heap),
                block_cache_bytes: 64 << 20,
                block_cache_lock_pool: Some(pool),
                ..EngineOptions::default()
            },
        )
        .expect("open");
        let t = server
            .create_table("t", vec![FamilyOptions::new("cf")])
            .expect("create");
        for i in 0..200 {
            t.put(format!("r{i:04}").as_bytes(), b"cf", b"q", &[b'v'; 100])
                .expect("put");
        }
        t.flush().expect("flush");
        let get_all = || {
            for i in 0..200 {
                let cells = t
                    .get(
                        format!("r{i:04}").as_bytes(),
                        &ReadQuery::latest(0, i64::MAX / 2),
                    )
                    .expect("get");
                assert_eq!(cells.len(), 1);
            }
        };
        // The bucket cache's writers insert in the background, and a block still staged in
        // memory is read without a slot lock: wait for hits that took one (the table's one
        // data block is then in its slot; on a loaded machine every measured read once came
        // from the stage, and the weak pool made no lock object).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let locks_at_start = server.block_cache_lock_stats().expect("cached").created;
        loop {
            get_all();
            let locked = server.block_cache_lock_stats().expect("cached").created > locks_at_start;
            if locked && server.block_cache_stats().expect("cached").hits >= 200 {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the bucket cache never hit"
            );
        }
        // Counted over reads that hit (how many of the warm-up's missed depends on how soon the
        // background writer ran).
        let before = server.block_cache_lock_stats().expect("cached").created;
        let reads = 3 * 200;
        for _ in 0..3 {
            get_all();
        }
        let locks = server.block_cache_lock_stats().expect("cached");
        created.push((pool, locks.created - before, reads));
    }
    let (_, weak, reads) = created[0];
    let (_, soft, _) = created[1];
    assert!(
        weak > reads as u64 / 2,
        "weak: a lock object per read ({weak})"
    );
    assert!(
        soft * 10 < weak,
        "soft keeps its lock objects ({soft} vs {weak})"
    );
}
