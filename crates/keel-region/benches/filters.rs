//! `cargo xtask bench filters`: filters evaluated inside the region scanner, on the embedded
//! API.
//!
//! 1. **A prefix filter seeks**: a full-table scan (no start or stop row) with a `PrefixFilter`
//!    whose prefix holds 1% of the rows, in the middle of the table, against a scan of exactly
//!    those rows by start and stop keys. `filter_prefix_vs_range_scan` = range-scan time ÷
//!    filtered-scan time (≥ 0.8: the filter seeks instead of reading the table);
//!    `filter_prefix_cells_read_vs_range` = cells the scans took from their sources, filtered ÷
//!    range (≤ 1.5).
//! 2. **Counting rows**: `FirstKeyOnlyFilter() AND KeyOnlyFilter()` (happybase's row count)
//!    over rows of five 100-byte columns, against a full scan:
//!    `filter_keyonly_count_vs_full_scan` = counting time ÷ full-scan time (< 1 expected).
//!
//! 3. **A get naming one column seeks to it**: on rows of the first store given
//!    [`VERSIONS`] newer versions of every column in the memstore, a get of the row's last column
//!    (latest version) against a get of the whole row (latest versions).
//!    `get_column_vs_row` = whole-row time ÷ one-column time (> 1: the get seeks past the other
//!    columns and stops after its own, HBase's explicit column tracker; a get that walked the
//!    row and filtered it cost about as much as the whole row). `scan_column_vs_row`: the same
//!    for a scan of those rows naming the column against one of whole rows.
//!
//! With `FILTERS_PROFILE` set in the environment it runs only the row counts (or, set to
//! `prefix` or `range`, only the prefix-filtered scans or the range scans), for `perf record`.
//!
//! Each side has its own store, loaded identically and flushed (so reads go through store
//! files and the block cache, warmed by one scan first); the sides alternate, and each figure is
//! the median over rounds.

#![expect(clippy::print_stdout, reason = "a benchmark reports on the terminal")]

use std::time::{Duration, Instant};

use bytes::Bytes;
use keel_region::matcher::ReadQuery;
use keel_region::{Engine, EngineOptions, FamilyOptions, Filter, Scan, Table};
use keel_testkit::figure;

const COLUMNS: usize = 5;
const VALUE: usize = 100;

fn row(i: usize) -> String {
    format!("row{i:07}")
}

/// Writes every column of row `i` at `timestamp`, each value `VALUE` bytes of `fill`.
fn write_row(table: &Table, i: usize, timestamp: i64, fill: u8) {
    let cells = (0..COLUMNS)
        .map(|c| {
            keel_cell::Cell::put(
                Bytes::from(row(i)),
                Bytes::from_static(b"f"),
                Bytes::from(format!("c{c}")),
                timestamp,
                Bytes::from(vec![fill; VALUE]),
            )
            .expect("cell")
        })
        .collect();
    table
        .mutate(cells, keel_region::Durability::SkipWal)
        .expect("write");
}

struct Store {
    _dir: tempfile::TempDir,
    _server: Engine,
    table: Table,
}

fn store(rows: usize) -> Store {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Engine::open(dir.path(), EngineOptions::default()).expect("open");
    let table = server
        .create_table("t", vec![FamilyOptions::new("f")])
        .expect("create");
    for i in 0..rows {
        write_row(&table, i, 1, b'v');
    }
    table.flush().expect("flush");
    Store {
        _dir: dir,
        _server: server,
        table,
    }
}

/// Runs `scan` to the end: (time, rows returned, cells read).
fn run(table: &Table, scan: &Scan) -> (Duration, usize, u64) {
    let start = Instant::now();
    let mut scanner = table.region().scanner(scan).expect("scanner");
    let mut rows = 0;
    for result in scanner.by_ref() {
        result.expect("row");
        rows += 1;
    }
    (start.elapsed(), rows, scanner.cells_read())
}

/// Newer versions of every column written to the rows the column gets read.
const VERSIONS: usize = 8;

/// Gets `rows` rows of `table` with `query`: (time, cells returned).
fn gets(table: &Table, rows: usize, query: &ReadQuery) -> (Duration, usize) {
    let start = Instant::now();
    let mut cells = 0;
    for i in 0..rows {
        cells += table.get(row(i).as_bytes(), query).expect("get").len();
    }
    (start.elapsed(), cells)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    // Sizes whose 1% is a power of ten, so one prefix holds exactly those rows.
    let (rows, rounds) = if quick { (10_000, 15) } else { (100_000, 15) };
    let now = i64::MAX / 2;
    println!("loading two stores of {rows} rows × {COLUMNS} columns of {VALUE} B…");
    let filtered_side = store(rows);
    let range_side = store(rows);

    // 1% of the rows, in the middle: rows/100 consecutive rows sharing a prefix.
    let middle = rows / 2;
    let prefix = row(middle);
    let digits = (rows / 100).to_string().len() - 1; // the low digits the 1% spans
    let prefix = Bytes::from(prefix[..prefix.len() - digits].to_string());
    let first = row(middle - middle % 10usize.pow(digits as u32));
    let last_exclusive = {
        let mut end = prefix.to_vec();
        *end.last_mut().expect("non-empty") += 1;
        Bytes::from(end)
    };
    let filtered = Scan {
        filter: Some(Filter::Prefix(prefix.clone())),
        ..Scan::all(now)
    };
    let range = Scan {
        start_row: Bytes::from(first),
        stop_row: last_exclusive,
        ..Scan::all(now)
    };
    let count = Scan {
        filter: Some(Filter::parse(b"FirstKeyOnlyFilter() AND KeyOnlyFilter()").expect("filter")),
        ..Scan::all(now)
    };
    let full = Scan::all(now);
    // Warm both stores' blocks.
    run(&filtered_side.table, &full);
    run(&range_side.table, &full);

    if let Some(profile) = std::env::var_os("FILTERS_PROFILE") {
        // For `perf record`: only the prefix-filtered scans (`prefix`), the range scans
        // (`range`) or the row counts.
        if profile == "prefix" || profile == "range" {
            let scan = if profile == "prefix" {
                &filtered
            } else {
                &range
            };
            let started = Instant::now();
            for _ in 0..20_000 {
                run(&filtered_side.table, scan);
            }
            println!(
                "20 000 scans: {:.1} ms",
                started.elapsed().as_secs_f64() * 1e3
            );
        } else {
            let started = Instant::now();
            for _ in 0..40 {
                run(&filtered_side.table, &count);
            }
            println!("40 counts: {:.1} ms", started.elapsed().as_secs_f64() * 1e3);
        }
        return;
    }
    let (mut prefix_ratio, mut cells_ratio, mut count_ratio) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds {
        // Alternate which side goes first.
        let (f, r) = if round % 2 == 0 {
            let f = run(&filtered_side.table, &filtered);
            (f, run(&range_side.table, &range))
        } else {
            let r = run(&range_side.table, &range);
            (run(&filtered_side.table, &filtered), r)
        };
        assert_eq!(f.1, r.1, "the filter and the range return the same rows");
        assert_eq!(f.1, rows / 100);
        prefix_ratio.push(r.0.as_secs_f64() / f.0.as_secs_f64());
        cells_ratio.push(f.2 as f64 / r.2 as f64);
        let (c, s) = if round % 2 == 0 {
            let c = run(&filtered_side.table, &count);
            (c, run(&range_side.table, &full))
        } else {
            let s = run(&range_side.table, &full);
            (run(&filtered_side.table, &count), s)
        };
        assert_eq!(c.1, s.1, "counting sees every row");
        count_ratio.push(c.0.as_secs_f64() / s.0.as_secs_f64());
        println!(
            "round {round}: prefix {:.2} ms ({} cells) vs range {:.2} ms ({} cells); count {:.1} ms ({} cells) vs full scan {:.1} ms ({} cells)",
            f.0.as_secs_f64() * 1e3,
            f.2,
            r.0.as_secs_f64() * 1e3,
            r.2,
            c.0.as_secs_f64() * 1e3,
            c.2,
            s.0.as_secs_f64() * 1e3,
            s.2
        );
    }

    // Newer versions of every column of the first rows, in the memstore (not flushed).
    let get_rows = rows / 5;
    for version in 0..VERSIONS {
        for i in 0..get_rows {
            write_row(&filtered_side.table, i, 2 + version as i64, b'w');
        }
    }
    let whole_row = ReadQuery::latest(0, now);
    let last_column = ReadQuery {
        columns: Some(vec![(
            Bytes::from_static(b"f"),
            Some(Bytes::from(format!("c{}", COLUMNS - 1))),
        )]),
        ..ReadQuery::latest(0, now)
    };
    let scan_of = |query: &ReadQuery| Scan {
        stop_row: Bytes::from(row(get_rows)),
        query: query.clone(),
        ..Scan::all(now)
    };
    let (column_scan, row_scan) = (scan_of(&last_column), scan_of(&whole_row));
    let (mut column_ratio, mut scan_ratio) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        let (c, w) = if round % 2 == 0 {
            let c = run(&filtered_side.table, &column_scan);
            (c, run(&filtered_side.table, &row_scan))
        } else {
            let w = run(&filtered_side.table, &row_scan);
            (run(&filtered_side.table, &column_scan), w)
        };
        assert_eq!((c.1, w.1), (get_rows, get_rows), "every row, both ways");
        scan_ratio.push(w.0.as_secs_f64() / c.0.as_secs_f64());
        let scan_pair = (c.0.as_secs_f64() * 1e3, w.0.as_secs_f64() * 1e3);
        let (c, w) = if round % 2 == 0 {
            let c = gets(&filtered_side.table, get_rows, &last_column);
            (c, gets(&filtered_side.table, get_rows, &whole_row))
        } else {
            let w = gets(&filtered_side.table, get_rows, &whole_row);
            (gets(&filtered_side.table, get_rows, &last_column), w)
        };
        assert_eq!(c.1, get_rows, "one cell per row");
        assert_eq!(w.1, get_rows * COLUMNS, "every column of every row");
        column_ratio.push(w.0.as_secs_f64() / c.0.as_secs_f64());
        println!(
            "round {round}: {get_rows} gets of one column {:.1} ms vs of the whole row {:.1} ms; scans {:.1} ms vs {:.1} ms",
            c.0.as_secs_f64() * 1e3,
            w.0.as_secs_f64() * 1e3,
            scan_pair.0,
            scan_pair.1
        );
    }
    println!(
        "{}",
        figure("filter_prefix_vs_range_scan", median(prefix_ratio))
    );
    println!(
        "{}",
        figure("filter_prefix_cells_read_vs_range", median(cells_ratio))
    );
    println!(
        "{}",
        figure("filter_keyonly_count_vs_full_scan", median(count_ratio))
    );
    println!("{}", figure("get_column_vs_row", median(column_ratio)));
    println!("{}", figure("scan_column_vs_row", median(scan_ratio)));
}
