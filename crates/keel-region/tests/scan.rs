//! Scans against the declarative oracle: random writes (every cell type) to a few rows with
//! flushes and in-memory flushes between, then random scans — start/stop rows, prefixes, reversed, row limits, batches,
//! column selections and single-column-value filters — each compared with the oracle applied row
//! by row, then ranged, filtered, reversed, limited and batched.

mod common;

use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;

use bytes::Bytes;
use keel_cell::{Cell, CellType};
use keel_fs::{FileSystem, StdFs};
use keel_region::filter::ColumnTest;
use keel_region::matcher::{FamilyRules, ReadQuery};
use keel_region::{
    Comparator, CompareOp, Durability, FamilyOptions, Filter, InMemoryCompaction, Region,
    RegionLimits, Scan,
};
use keel_wal::{Wal, WalOptions};
use proptest::prelude::*;

const ROWS: [&str; 6] = ["a", "ab", "abc", "b", "ba", "c"];

fn cell_strategy() -> impl Strategy<Value = Cell> {
    (
        prop::sample::select(ROWS.to_vec()),
        prop::sample::select(vec!["f", "g"]),
        prop::sample::select(vec!["", "x", "y"]),
        0i64..5,
        prop::sample::select(vec![
            CellType::Put,
            CellType::Put,
            CellType::Put,
            CellType::Put,
            CellType::Delete,
            CellType::DeleteColumn,
            CellType::DeleteFamily,
        ]),
        prop::sample::select(vec!["1", "5", "9"]),
    )
        .prop_map(|(row, family, qualifier, ts, ty, value)| {
            let qualifier = if ty == CellType::DeleteFamily {
                ""
            } else {
                qualifier
            };
            Cell::builder(row, family)
                .qualifier(qualifier)
                .timestamp(ts)
                .cell_type(ty)
                .value(value)
                .build()
                .expect("cell")
        })
}

fn row_bound() -> impl Strategy<Value = Bytes> {
    prop::sample::select(vec!["", "a", "ab", "abz", "b", "bb", "c", "d"]).prop_map(Bytes::from)
}

fn scan_strategy() -> impl Strategy<Value = Scan> {
    (
        row_bound(),
        row_bound(),
        prop::option::of(prop::sample::select(vec!["a", "ab", "b", "z"]).prop_map(Bytes::from)),
        any::<bool>(),
        prop::option::of(1usize..4),
        prop::option::of(1usize..3),
        1u32..3,
        prop::option::of(prop::sample::select(vec![
            vec![("f", None)],
            vec![("g", Some("x")), ("f", Some(""))],
        ])),
        prop::option::of((
            prop::sample::select(vec![
                CompareOp::Equal,
                CompareOp::Greater,
                CompareOp::NotEqual,
            ]),
            prop::sample::select(vec!["1", "5"]),
            any::<bool>(),
        )),
    )
        .prop_map(
            |(start_row, stop_row, prefix, reversed, limit, batch, versions, columns, filter)| {
                Scan {
                    start_row,
                    stop_row,
                    prefix,
                    query: ReadQuery {
                        max_versions: versions,
                        columns: columns.map(|cols| {
                            cols.into_iter()
                                .map(|(f, q)| (Bytes::from(f), q.map(Bytes::from)))
                                .collect()
                        }),
                        ..ReadQuery::latest(u64::MAX, 0)
                    },
                    limit,
                    batch,
                    reversed,
                    filter: filter.map(|(op, value, filter_if_missing)| {
                        Filter::SingleColumnValue(ColumnTest {
                            family: Bytes::from("f"),
                            qualifier: Bytes::from("x"),
                            op,
                            comparator: Comparator::Binary(Bytes::from(value)),
                            filter_if_missing,
                            latest_only: true,
                        })
                    }),
                }
            },
        )
}

/// HBase's `SingleColumnValueFilter` on a row, written from its documentation: the row is kept
/// if its latest selected version of the column passes, or (unless `filter_if_missing`) if it
/// has none.
fn keeps(filter: &Filter, row: &[Cell]) -> bool {
    let Filter::SingleColumnValue(test) = filter else {
        unreachable!("the strategy makes only these")
    };
    let Comparator::Binary(operand) = &test.comparator else {
        unreachable!("the strategy makes only these")
    };
    let latest = row
        .iter()
        .find(|c| c.family() == test.family && c.qualifier() == test.qualifier);
    match latest {
        Some(cell) => {
            let ord = cell.value().cmp(operand);
            match test.op {
                CompareOp::Equal => ord.is_eq(),
                CompareOp::Greater => ord.is_gt(),
                CompareOp::NotEqual => ord.is_ne(),
                other => unreachable!("{other:?}"),
            }
        }
        None => !test.filter_if_missing,
    }
}

fn expected(written: &[Cell], scan: &Scan, rules: &FamilyRules) -> Vec<Vec<Bytes>> {
    let rows: BTreeSet<Bytes> = written.iter().map(|c| c.row_bytes()).collect();
    let in_range = |row: &Bytes| {
        let prefixed = scan.prefix.as_ref().is_none_or(|p| row.starts_with(p));
        let range = if scan.reversed {
            (scan.start_row.is_empty() || row <= &scan.start_row)
                && (scan.stop_row.is_empty() || row > &scan.stop_row)
        } else {
            row >= &scan.start_row && (scan.stop_row.is_empty() || row < &scan.stop_row)
        };
        prefixed && range
    };
    let mut out: Vec<Vec<Cell>> = Vec::new();
    for row in rows.iter().filter(|r| in_range(r)) {
        let mut mine: Vec<Cell> = written.iter().filter(|c| c.row() == row).cloned().collect();
        mine.reverse();
        let mut seen = HashSet::new();
        mine.retain(|c| seen.insert(c.key().clone()));
        mine.sort_by(|a, b| a.key().cmp(b.key()));
        let cells = common::oracle(&mine, &scan.query, rules);
        if cells.is_empty() || !scan.filter.as_ref().is_none_or(|f| keeps(f, &cells)) {
            continue;
        }
        out.push(cells);
    }
    if scan.reversed {
        out.reverse();
    }
    if let Some(limit) = scan.limit {
        out.truncate(limit);
    }
    let out: Vec<Vec<Cell>> = match scan.batch {
        Some(b) => out
            .into_iter()
            .flat_map(|r| r.chunks(b).map(<[Cell]>::to_vec).collect::<Vec<_>>())
            .collect(),
        None => out,
    };
    out.into_iter()
        .map(|r| r.iter().map(|c| c.value_bytes()).collect())
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(150))]

    #[test]
    fn scans_match_the_oracle(
        writes in prop::collection::vec(prop::collection::vec(cell_strategy(), 1..4), 1..20),
        // After each write: 0 nothing, 1 a flush, 2 an in-memory flush (the active segment
        // turned flat, which a scan reads by its next-column bits).
        after in prop::collection::vec(0u8..3, 20),
        scans in prop::collection::vec(scan_strategy(), 1..8),
        family_versions in 1u32..3,
    ) {
        let dir = tempfile::tempdir().expect("tempdir");
        let fs: Arc<dyn FileSystem> = Arc::new(StdFs);
        let wal = Arc::new(Wal::open(Arc::clone(&fs), &dir.path().join("wal"), WalOptions::default()).expect("wal"));
        let rules = FamilyRules { max_versions: family_versions, ..FamilyRules::default() };
        let families = ["f", "g"].into_iter().map(|n| FamilyOptions { rules, ..FamilyOptions::new(n) }).collect();
        // A 4 KiB flush size: with two families, a store flushes in memory from 256 bytes,
        // a few cells (writes block only at 16 KiB, which the writes never reach).
        let limits = RegionLimits {
            flush_size: 4 << 10,
            in_memory_compaction: InMemoryCompaction::Basic,
            ..RegionLimits::default()
        };
        let region = Region::open(Arc::clone(&fs), &dir.path().join("region"), Arc::clone(&wal), 1, families)
            .expect("region")
            .with_limits(limits);
        let mut written = Vec::new();
        for (i, cells) in writes.into_iter().enumerate() {
            region.mutate(cells.clone(), Durability::SkipWal).expect("write");
            for mut c in cells {
                c.set_sequence_id(i as u64 + 1);
                written.push(c);
            }
            match after[i] {
                1 => {
                    region.flush().expect("flush");
                }
                2 => {
                    region.flatten_memstores();
                }
                _ => {}
            }
        }
        for scan in &scans {
            let got: Vec<Vec<Bytes>> = region
                .scan(scan)
                .expect("scan")
                .into_iter()
                .map(|r| r.iter().map(|c| c.value_bytes()).collect())
                .collect();
            prop_assert_eq!(got, expected(&written, scan, &rules), "{:?}", scan);
        }
    }
}

/// A reversed scan streams: the row at or before a key (Thrift's `getRowOrBefore`) costs a few
/// block reads — a backward seek — not a read of every row before it, and a reversed scan of
/// the whole table holds one row at a time (it returns its first row before reading the rest).
#[test]
fn a_reversed_scan_seeks_instead_of_reading_the_table() {
    use keel_region::{Engine, EngineOptions, FamilyOptions};
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Engine::open(dir.path(), EngineOptions::default()).expect("open");
    let mut family = FamilyOptions::new("f");
    family.files.block_size = 4096;
    let t = server.create_table("t", vec![family]).expect("create");
    for i in 0..20_000u32 {
        t.put(format!("row{i:06}").as_bytes(), b"f", b"q", &[b'v'; 100])
            .expect("put");
    }
    t.flush().expect("flush");
    for i in 20_000..20_100u32 {
        t.put(
            format!("row{i:06}").as_bytes(),
            b"f",
            b"q",
            b"in the memstore",
        )
        .expect("put");
    }
    let lookups = || {
        let s = server.block_cache_stats().expect("a cache");
        s.hits + s.misses
    };
    let before = lookups();
    let scan = Scan {
        start_row: Bytes::from_static(b"row010000x"),
        reversed: true,
        limit: Some(1),
        ..Scan::all(i64::MAX / 2)
    };
    let rows = t.scan(&scan).expect("scan");
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0][0].row(), b"row010000");
    let used = lookups() - before;
    assert!(used < 20, "{used} block lookups for one row before a key");
    // The whole table backwards, lazily: the first result comes after a handful of blocks.
    let before = lookups();
    let mut scanner = t
        .region()
        .scanner(&Scan {
            reversed: true,
            ..Scan::all(i64::MAX / 2)
        })
        .expect("scanner");
    let first = scanner.next().expect("a row").expect("read");
    assert_eq!(first[0].row(), b"row020099");
    assert!(
        lookups() - before < 20,
        "the first row of a full reversed scan read the table"
    );
    assert_eq!(scanner.count(), 20_099);
}
