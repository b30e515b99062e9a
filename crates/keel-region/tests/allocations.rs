//! How many heap allocations a get and an increment make, counted (a count, unlike a time, is
//! exact on a noisy machine): a ten-column row read from a store file and the memstore at once,
//! and a counter incremented from one thread.

use bytes::Bytes;
use keel_cell::Cell;
use keel_region::matcher::ReadQuery;
use keel_region::{Durability, Engine, EngineOptions, FamilyOptions, Table};
use keel_testkit::{CountingAllocator, allocations};

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

/// The counter is the process's: the tests here take turns, so that one's allocations are not
/// counted in the other's.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn row(i: usize) -> Bytes {
    Bytes::from(format!("user{i:019}"))
}

/// This test's turn, and a table of one family `f` in a fresh engine (the directory and the
/// engine kept alive beside it).
fn setup() -> (
    std::sync::MutexGuard<'static, ()>,
    tempfile::TempDir,
    Engine,
    Table,
) {
    let turn = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let dir = tempfile::tempdir().expect("tempdir");
    let engine = Engine::open(dir.path(), EngineOptions::default()).expect("open");
    let table = engine
        .create_table("t", vec![FamilyOptions::new("f")])
        .expect("create");
    (turn, dir, engine, table)
}

#[test]
fn a_ten_column_get_from_a_store_file_and_the_memstore_allocates_eight_times() {
    let (_turn, _dir, _engine, table) = setup();
    let put = |i: usize, f: usize, ts: i64| {
        Cell::put(row(i), "f", format!("field{f}"), ts, vec![b'v'; 100]).expect("cell")
    };
    for i in 0..200 {
        let cells = (0..10).map(|f| put(i, f, 1)).collect();
        table.mutate(cells, Durability::SkipWal).expect("write");
    }
    table.flush().expect("flush");
    // Newer versions of two columns in the memstore: every get merges both tiers.
    for i in 0..200 {
        table
            .mutate(vec![put(i, 2, 2), put(i, 6, 2)], Durability::SkipWal)
            .expect("update");
    }
    let query = ReadQuery::latest(0, i64::MAX / 2);
    let keys: Vec<Bytes> = (0..200).map(row).collect();
    // Warm: blocks cached, the get's size hint learnt.
    for key in &keys {
        assert_eq!(table.get(key, &query).expect("get").len(), 10);
    }
    let before = allocations();
    let mut cells = 0;
    for key in &keys {
        cells += table.get(key, &query).expect("get").len();
    }
    let per_get = (allocations() - before) as f64 / keys.len() as f64;
    assert_eq!(cells, 2_000);
    // The row's copy, the result, the matcher's place, the sources' list, one box per source
    // (store file, memstore), the merge's heap and the memstore scanner's heads. Was 11: the
    // row's copy allocated again on its first clone, and the store-file scanner's index path
    // and the memstore scanner's segment list each allocated too. (A few hundredths more come
    // from the engine's own threads, which the counter also sees.)
    assert!(per_get < 8.5, "{per_get} allocations per get");
}

#[test]
fn an_increment_allocates_nineteen_times() {
    let (_turn, _dir, _engine, table) = setup();
    let rows: Vec<Bytes> = (0..10).map(row).collect();
    let increment = |key: &Bytes| {
        table
            .region_for(key)
            .increment(key, b"f", b"count", 1, Durability::SyncWal)
            .expect("increment")
            .0
    };
    // Warm: the rows exist, the WAL's buffers and the skip list's arena have grown.
    for _ in 0..50 {
        rows.iter().for_each(|key| {
            increment(key);
        });
    }
    let before = allocations();
    let rounds = 100;
    for _ in 0..rounds {
        rows.iter().for_each(|key| {
            increment(key);
        });
    }
    let per_increment = (allocations() - before) as f64 / (rounds * rows.len()) as f64;
    assert_eq!(increment(&rows[0]), 151);
    // The row's copies (the queue's, the read's), the column's names, the combine queue's
    // waiter and batch lists, the read (its query, sources, merge, matcher, result), the new
    // value's cell and the write's lists. Was 29: the names and the new value were plain
    // copies, which allocate again on their first clone, and the read copied the names once
    // more (24 without those); the WAL allocated its record buffer per append and its batch
    // buffers per batch (21 reusing them); and applying a durable write listed the writes and
    // their numbers on the heap (19 inline).
    assert!(
        per_increment < 19.5,
        "{per_increment} allocations per increment"
    );
}

#[test]
fn a_scan_read_into_one_reused_buffer_allocates_nothing_per_row() {
    let (_turn, _dir, _engine, table) = setup();
    let put = |i: usize, f: usize| {
        Cell::put(row(i), "f", format!("field{f}"), 1, vec![b'v'; 100]).expect("cell")
    };
    // Rows 0..1000 in a store file, 1000..2000 in the memstore: the scan reads both tiers.
    for i in 0..2_000 {
        if i == 1_000 {
            table.flush().expect("flush");
        }
        let cells = (0..10).map(|f| put(i, f)).collect();
        table.mutate(cells, Durability::SkipWal).expect("write");
    }
    let scan_of = |start: usize, rows: usize| keel_region::Scan {
        start_row: row(start),
        limit: Some(rows),
        ..keel_region::Scan::all(i64::MAX / 2)
    };
    let mut buffer = Vec::new();
    // The allocations of a scan of `rows` rows from `start`, read into `buffer`, and its cells.
    let mut scan_into = |start: usize, rows: usize| {
        let before = allocations();
        let mut scanner = table.scanner(&scan_of(start, rows)).expect("scanner");
        let mut cells = 0;
        loop {
            buffer.clear();
            match scanner.next_into(&mut buffer).expect("next") {
                0 => break,
                n => cells += n,
            }
        }
        drop(scanner);
        (allocations() - before, cells)
    };
    // Warm: every block cached.
    assert_eq!(scan_into(0, 2_000).1, 20_000);
    for start in [0, 1_500] {
        let (short, short_cells) = scan_into(start, 20);
        let (long, long_cells) = scan_into(start, 400);
        assert_eq!((short_cells, long_cells), (200, 4_000));
        // 380 rows more, and (beyond the few the engine's own threads may make meanwhile) not
        // one allocation more: the row's cells go back and forth between the caller's buffer
        // and the scanner's.
        assert!(
            long <= short + 5,
            "from row {start}: {short} allocations for 20 rows, {long} for 400"
        );
    }
    // The iterator hands each row over in a vector of its own.
    let before = allocations();
    let rows = table.scanner(&scan_of(0, 400)).expect("scanner").count();
    assert_eq!(rows, 400);
    assert!(allocations() - before >= 400);
}
