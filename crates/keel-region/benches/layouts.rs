//! `cargo xtask bench layouts`: the same records stored two ways, read by short scans.
//!
//! YCSB's HBase binding stores a record as one column per field; a key-value engine stores it
//! as one value. Here each record is [`FIELDS`] fields of [`FIELD`] bytes, written either as
//! that many columns or as one cell holding them all, into two stores flushed to store files
//! (reads go through the block cache, warmed by one full scan). Each round runs the same
//! [`SCANS`] scans of up to [`SCAN_ROWS`] rows from the same random start rows on both, the side
//! that goes first alternating by round.
//!
//! `scan_columns_vs_cell` = one-cell time ÷ ten-column time (1.0 would be "the layout costs
//! nothing"; the issue's floor is 0.67: the columns layout no more than 1.5× the cell layout
//! for the same bytes). `get_columns_vs_cell`: the same for whole-row gets.
//! `get_shared_vs_flushed`: whole-row gets of the ten-column records when two columns of each
//! were updated since the flush (the new versions in the memstore, the rest in the store file)
//! against the same gets with every cell in the file — time in one file ÷ time shared, 1.0
//! when a row split between the memstore and a file costs nothing more.
//!
//! `get_allocs_per_get_columns` and `scan_allocs_per_row_columns`: heap allocations per
//! ten-column get, and per row a ten-column scan returns, counted (not timed) over one pass
//! after the rounds, the results' own vectors included: a count a noisy machine cannot move.
//!
//! `scan_columns_vs_cell_memstore`: the scans again, on two more stores whose records were
//! left in the memstore (at most [`MEMSTORE_RECORDS`] records; most of them in flat segments,
//! as in-memory flushes leave them): the layouts' cost where YCSB E reads its rows before a
//! flush.
//!
//! With `LAYOUTS_PROFILE` set in the environment it runs only the ten-column scans, twenty
//! times over, for `perf record` (`LAYOUTS_PROFILE=get`: the ten-column gets instead;
//! `LAYOUTS_PROFILE=shared`: the gets of rows the memstore and the file share;
//! `LAYOUTS_PROFILE=memstore`: the ten-column scans of the memstore).

#![expect(clippy::print_stdout, reason = "a benchmark reports on the terminal")]

use std::time::{Duration, Instant};

use bytes::Bytes;
use keel_cell::Cell;
use keel_region::matcher::ReadQuery;
use keel_region::{
    Durability, Engine, EngineOptions, FamilyOptions, InMemoryCompaction, Scan, Table,
};
use keel_testkit::{CountingAllocator, allocations, figure};

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

const FIELDS: usize = 10;
const FIELD: usize = 100;
const SCAN_ROWS: usize = 50;
const SCANS: usize = 2_000;
/// Records of the stores left in the memstore, at most: the ten-column ones fill about 85 MiB
/// of it, under the 128 MiB flush size.
const MEMSTORE_RECORDS: usize = 50_000;
/// The columns `get_shared_vs_flushed` updates after the flush.
const UPDATED: [usize; 2] = [2, 6];

fn row(i: usize) -> Bytes {
    Bytes::from(format!(
        "user{:012}",
        i.wrapping_mul(0x9E37_79B9) % 1_000_000_000_000
    ))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layout {
    Columns,
    Cell,
}

fn cells(layout: Layout, i: usize) -> Vec<Cell> {
    let value = |f: usize| Bytes::from(vec![b'a' + (f % 26) as u8; FIELD]);
    match layout {
        Layout::Columns => (0..FIELDS)
            .map(|f| Cell::put(row(i), "f", format!("field{f}"), 1, value(f)).expect("cell"))
            .collect(),
        Layout::Cell => {
            let mut record = Vec::with_capacity(FIELDS * FIELD);
            for f in 0..FIELDS {
                record.extend_from_slice(&value(f));
            }
            vec![Cell::put(row(i), "f", "record", 1, record).expect("cell")]
        }
    }
}

struct Store {
    _dir: tempfile::TempDir,
    _engine: Engine,
    table: Table,
}

/// Where a store's records are read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Held {
    /// Flushed to a store file.
    File,
    /// Left in the memstore, with in-memory compaction on (`Basic`, as the peers' YCSB runs
    /// have it), which turns most of it into flat segments as it grows.
    Memstore,
}

fn store(layout: Layout, records: usize, held: Held) -> Store {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut options = EngineOptions::default();
    if held == Held::Memstore {
        // As the peers' YCSB runs have it: in-memory flushes turn the memstore into flat
        // segments as it grows.
        options.limits.in_memory_compaction = InMemoryCompaction::Basic;
    }
    let engine = Engine::open(dir.path(), options).expect("open");
    let table = engine
        .create_table("t", vec![FamilyOptions::new("f")])
        .expect("create");
    for i in 0..records {
        table
            .mutate(cells(layout, i), Durability::SkipWal)
            .expect("write");
    }
    match held {
        Held::File => {
            table.flush().expect("flush");
        }
        Held::Memstore => assert_eq!(
            table.region().store_file_count(),
            0,
            "the memstore store was flushed"
        ),
    }
    let all = table.scan(&Scan::all(i64::MAX / 2)).expect("warm");
    assert_eq!(all.len(), records);
    Store {
        _dir: dir,
        _engine: engine,
        table,
    }
}

/// Writes newer versions of [`UPDATED`] columns of every record, left in the memstore.
fn update_columns(store: &Store, records: usize) {
    for i in 0..records {
        let cells = UPDATED
            .iter()
            .map(|f| {
                Cell::put(row(i), "f", format!("field{f}"), 2, vec![b'z'; FIELD]).expect("cell")
            })
            .collect();
        store
            .table
            .mutate(cells, Durability::SkipWal)
            .expect("write");
    }
}

/// Runs the scans from `starts`: (time, cells returned).
fn scans(table: &Table, starts: &[Bytes]) -> (Duration, usize) {
    let begun = Instant::now();
    let mut cells = 0;
    for start in starts {
        let scan = Scan {
            start_row: start.clone(),
            limit: Some(SCAN_ROWS),
            ..Scan::all(i64::MAX / 2)
        };
        let rows = table.scan(&scan).expect("scan");
        cells += rows.iter().map(Vec::len).sum::<usize>();
    }
    (begun.elapsed(), cells)
}

/// Gets the rows `keys`: (time, cells returned).
fn gets(table: &Table, keys: &[Bytes]) -> (Duration, usize) {
    let query = ReadQuery::latest(0, i64::MAX / 2);
    let begun = Instant::now();
    let mut cells = 0;
    for key in keys {
        cells += table.get(key, &query).expect("get").len();
    }
    (begun.elapsed(), cells)
}

/// Runs `a` and `b`, `a` first in even rounds and `b` first in odd ones; their results in
/// the order (a, b).
fn in_turn<T>(round: usize, a: impl FnOnce() -> T, b: impl FnOnce() -> T) -> (T, T) {
    if round.is_multiple_of(2) {
        let a = a();
        (a, b())
    } else {
        let b = b();
        (a(), b)
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let (records, rounds) = if quick { (20_000, 7) } else { (100_000, 15) };
    println!("loading {records} records of {FIELDS} × {FIELD} B, as columns and as one cell…");
    let columns = store(Layout::Columns, records, Held::File);
    let cell = store(Layout::Cell, records, Held::File);
    let shared = store(Layout::Columns, records, Held::File);
    let in_memory = records.min(MEMSTORE_RECORDS);
    let columns_in_memory = store(Layout::Columns, in_memory, Held::Memstore);
    let cell_in_memory = store(Layout::Cell, in_memory, Held::Memstore);
    update_columns(&shared, records);
    let mut seed = 0x2545_F491_4F6C_DD1Du64;
    let mut random = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed as usize
    };
    let starts: Vec<Bytes> = (0..SCANS).map(|_| row(random() % records)).collect();
    let keys: Vec<Bytes> = (0..SCANS * 10).map(|_| row(random() % records)).collect();
    if let Some(profile) = std::env::var_os("LAYOUTS_PROFILE") {
        for _ in 0..20 {
            if profile == "get" {
                gets(&columns.table, &keys);
            } else if profile == "shared" {
                gets(&shared.table, &keys);
            } else if profile == "memstore" {
                scans(&columns_in_memory.table, &starts);
            } else {
                scans(&columns.table, &starts);
            }
        }
        return;
    }
    let (mut scan_ratios, mut get_ratios, mut shared_ratios) = (Vec::new(), Vec::new(), Vec::new());
    let mut memstore_ratios = Vec::new();
    for round in 0..rounds {
        let timed_on = |columns: &Table, cell: &Table, f: &dyn Fn(&Table) -> (Duration, usize)| {
            let (c, k) = in_turn(round, || f(columns), || f(cell));
            assert_eq!(c.1, k.1 * FIELDS, "the layouts returned different records");
            let per_record = |t: Duration| t.as_nanos() as f64 / k.1 as f64;
            print!(
                "[{:.0} / {:.0} ns a record] ",
                per_record(c.0),
                per_record(k.0)
            );
            k.0.as_secs_f64() / c.0.as_secs_f64()
        };
        let timed =
            |f: &dyn Fn(&Table) -> (Duration, usize)| timed_on(&columns.table, &cell.table, f);
        let scan = timed(&|t| scans(t, &starts));
        let get = timed(&|t| gets(t, &keys));
        let memstore = timed_on(&columns_in_memory.table, &cell_in_memory.table, &|t| {
            scans(t, &starts)
        });
        let (flushed_time, shared_time) = in_turn(
            round,
            || gets(&columns.table, &keys),
            || gets(&shared.table, &keys),
        );
        assert_eq!(flushed_time.1, shared_time.1, "the shared rows lost cells");
        let shared_ratio = flushed_time.0.as_secs_f64() / shared_time.0.as_secs_f64();
        println!(
            "round {round}: scan cell/columns time {scan:.3}, get {get:.3}, get flushed/shared {shared_ratio:.3}, memstore scan {memstore:.3}"
        );
        memstore_ratios.push(memstore);
        scan_ratios.push(scan);
        get_ratios.push(get);
        shared_ratios.push(shared_ratio);
    }
    let spread = |v: &[f64]| {
        let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = v.iter().copied().fold(0.0, f64::max);
        format!("{lo:.3}–{hi:.3}")
    };
    println!(
        "scan spread {}, get spread {}, shared spread {}, memstore scan spread {}",
        spread(&scan_ratios),
        spread(&get_ratios),
        spread(&shared_ratios),
        spread(&memstore_ratios)
    );
    let before = allocations();
    gets(&columns.table, &keys);
    let get_allocs = (allocations() - before) as f64 / keys.len() as f64;
    let before = allocations();
    let (_, cells) = scans(&columns.table, &starts);
    let scan_allocs = (allocations() - before) as f64 / (cells / FIELDS) as f64;
    println!("{}", figure("scan_columns_vs_cell", median(scan_ratios)));
    println!("{}", figure("get_columns_vs_cell", median(get_ratios)));
    println!(
        "{}",
        figure("scan_columns_vs_cell_memstore", median(memstore_ratios))
    );
    println!("{}", figure("get_shared_vs_flushed", median(shared_ratios)));
    println!("{}", figure("get_allocs_per_get_columns", get_allocs));
    println!("{}", figure("scan_allocs_per_row_columns", scan_allocs));
}
