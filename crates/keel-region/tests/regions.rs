//! Tables of several regions against a single `BTreeMap`: random puts and deletes (single
//! cells, whole rows, and batches spanning regions), flushes and restarts, on tables pre-split
//! at random keys; after each step, gets route to the right region and scans — forward and
//! reversed, with start and stop rows, limits, batches and filters — cross region boundaries in
//! order, exactly as the oracle says, through the iterator and through `next_into`. Splits (at
//! a row, between writes), merges of adjacent regions and compactions happen among the steps;
//! the regions must stay contiguous. (A scan running through splits is tested in
//! `tests/split.rs`.)

use std::collections::BTreeMap;

use bytes::Bytes;
use keel_cell::Cell;
use keel_region::matcher::ReadQuery;
use keel_region::{Durability, Engine, EngineOptions, FamilyOptions, Filter, Scan, TableOptions};
use proptest::prelude::*;

const ROWS: [&str; 13] = [
    "a", "ab", "b", "ba", "bm", "bz", "c", "d", "dd", "e", "f", "fz", "g",
];
const SPLITS: [&str; 5] = ["b", "bm", "d", "f", "zz"];
const NOW: i64 = 1 << 40;

#[derive(Debug, Clone)]
enum Op {
    Put(usize, u8, u8),
    /// Puts in several rows in one call (likely several regions).
    PutMany(Vec<(usize, u8)>, u8),
    DeleteRow(usize),
    Flush,
    Reopen,
    /// Split the region holding this row at it (refused when it is the region's start, or
    /// while the region refers to its parent's files).
    Split(usize),
    /// Merge the region holding this row with the next one.
    Merge(usize),
    /// Compact every region (drops references, so they can split and merge again).
    Compact,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0..ROWS.len(), 0u8..3, any::<u8>()).prop_map(|(r, q, v)| Op::Put(r, q, v)),
        2 => (prop::collection::vec((0..ROWS.len(), 0u8..3), 1..5), any::<u8>())
            .prop_map(|(cells, v)| Op::PutMany(cells, v)),
        1 => (0..ROWS.len()).prop_map(Op::DeleteRow),
        1 => Just(Op::Flush),
        1 => Just(Op::Reopen),
        2 => (0..ROWS.len()).prop_map(Op::Split),
        1 => (0..ROWS.len()).prop_map(Op::Merge),
        1 => Just(Op::Compact),
    ]
}

fn bound() -> impl Strategy<Value = Bytes> {
    prop::sample::select(vec!["", "a", "b", "bb", "bm", "c", "dd", "e", "z"])
        .prop_map(Bytes::from_static_str)
}

trait FromStaticStr {
    fn from_static_str(s: &'static str) -> Bytes;
}

impl FromStaticStr for Bytes {
    fn from_static_str(s: &'static str) -> Bytes {
        Bytes::from_static(s.as_bytes())
    }
}

#[derive(Debug, Clone)]
struct ScanCase {
    start: Bytes,
    stop: Bytes,
    reversed: bool,
    limit: Option<usize>,
    batch: Option<usize>,
    prefix_filter: Option<Bytes>,
}

fn scan_case() -> impl Strategy<Value = ScanCase> {
    (
        bound(),
        bound(),
        any::<bool>(),
        prop::option::of(1usize..6),
        prop::option::of(1usize..3),
        prop::option::of(
            prop::sample::select(vec!["b", "d", "bz"]).prop_map(Bytes::from_static_str),
        ),
    )
        .prop_map(
            |(start, stop, reversed, limit, batch, prefix_filter)| ScanCase {
                start,
                stop,
                reversed,
                limit,
                batch,
                prefix_filter,
            },
        )
}

type Oracle = BTreeMap<(Bytes, u8), u8>;

fn expected(oracle: &Oracle, case: &ScanCase) -> Vec<Vec<(Bytes, u8, u8)>> {
    let mut rows: BTreeMap<Bytes, Vec<(Bytes, u8, u8)>> = BTreeMap::new();
    for ((row, q), v) in oracle {
        rows.entry(row.clone())
            .or_default()
            .push((row.clone(), *q, *v));
    }
    let in_range = |row: &Bytes| {
        let range = if case.reversed {
            (case.start.is_empty() || row <= &case.start)
                && (case.stop.is_empty() || row > &case.stop)
        } else {
            row >= &case.start && (case.stop.is_empty() || row < &case.stop)
        };
        range
            && case
                .prefix_filter
                .as_ref()
                .is_none_or(|p| row.starts_with(p))
    };
    let mut out: Vec<Vec<(Bytes, u8, u8)>> = rows
        .into_iter()
        .filter(|(r, _)| in_range(r))
        .map(|(_, c)| c)
        .collect();
    if case.reversed {
        out.reverse();
    }
    if let Some(limit) = case.limit {
        out.truncate(limit);
    }
    match case.batch {
        Some(b) => out
            .into_iter()
            .flat_map(|r| r.chunks(b).map(<[_]>::to_vec).collect::<Vec<_>>())
            .collect(),
        None => out,
    }
}

fn shown(rows: Vec<Vec<Cell>>) -> Vec<Vec<(Bytes, u8, u8)>> {
    rows.into_iter()
        .map(|r| {
            r.iter()
                .map(|c| (c.row_bytes(), c.qualifier()[0], c.value()[0]))
                .collect()
        })
        .collect()
}

fn put(row: &str, q: u8, v: u8, ts: i64) -> Cell {
    Cell::put(
        Bytes::copy_from_slice(row.as_bytes()),
        Bytes::from_static(b"f"),
        Bytes::copy_from_slice(&[q]),
        ts,
        Bytes::copy_from_slice(&[v]),
    )
    .expect("cell")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn a_table_of_regions_reads_as_one_table(
        splits in prop::sample::subsequence(SPLITS.to_vec(), 0..=5),
        ops in prop::collection::vec(op(), 1..40),
        scans in prop::collection::vec(scan_case(), 4),
    ) {
        let dir = tempfile::tempdir().expect("tempdir");
        let open = || Engine::open(dir.path(), EngineOptions::default()).expect("open");
        let mut server = open();
        let keys: Vec<Bytes> = splits.iter().map(|s| Bytes::copy_from_slice(s.as_bytes())).collect();
        let mut f = FamilyOptions::new("f");
        f.rules.max_versions = 1;
        server
            .create_table_with("t", vec![f], TableOptions { split_keys: keys.clone(), ..TableOptions::default() })
            .expect("create");
        let mut oracle: Oracle = BTreeMap::new();
        let mut ts = 1;
        for op in &ops {
            let t = server.table("t").expect("table");
            match op {
                Op::Put(r, q, v) => {
                    ts += 1;
                    t.mutate(vec![put(ROWS[*r], *q, *v, ts)], Durability::SkipWal).expect("put");
                    oracle.insert((Bytes::copy_from_slice(ROWS[*r].as_bytes()), *q), *v);
                }
                Op::PutMany(cells, v) => {
                    ts += 1;
                    let batch: Vec<Cell> = cells.iter().map(|(r, q)| put(ROWS[*r], *q, *v, ts)).collect();
                    t.mutate(batch, Durability::UseDefault).expect("put many");
                    for (r, q) in cells {
                        oracle.insert((Bytes::copy_from_slice(ROWS[*r].as_bytes()), *q), *v);
                    }
                }
                Op::DeleteRow(r) => {
                    ts += 1;
                    let cell = Cell::delete_family(ROWS[*r], "f", ts).expect("marker");
                    t.mutate(vec![cell], Durability::UseDefault).expect("delete");
                    oracle.retain(|(row, _), _| row != ROWS[*r].as_bytes());
                }
                Op::Flush => {
                    t.flush().expect("flush");
                }
                Op::Reopen => {
                    drop(t);
                    server.close().expect("close");
                    server = open();
                }
                Op::Split(r) => {
                    let row = Bytes::copy_from_slice(ROWS[*r].as_bytes());
                    let region = t.region_for(&row).id();
                    match server.split_region("t", region, Some(row)) {
                        Ok(_) | Err(keel_region::RegionError::SplitRefused { .. }) => {}
                        Err(e) => panic!("split: {e}"),
                    }
                }
                Op::Merge(r) => {
                    let infos = t.region_infos();
                    let here = t.region_for(ROWS[*r].as_bytes()).id();
                    let i = infos.iter().position(|x| x.id == here).expect("listed");
                    if let Some(next) = infos.get(i + 1) {
                        match server.merge_regions("t", here, next.id) {
                            Ok(_) | Err(keel_region::RegionError::SplitRefused { .. }) => {}
                            Err(e) => panic!("merge: {e}"),
                        }
                    }
                }
                Op::Compact => {
                    t.major_compact().expect("compact");
                }
            }
            let infos = server.table("t").expect("table").region_infos();
            prop_assert!(
                infos.first().is_some_and(|r| r.start_key.is_empty())
                    && infos.last().is_some_and(|r| r.end_key.is_empty())
                    && infos.windows(2).all(|w| w[0].end_key == w[1].start_key),
                "regions contiguous: {:?}", infos
            );
        }
        let t = server.table("t").expect("table");
        // Gets route by row.
        for row in ROWS {
            let got: Vec<(u8, u8)> = t
                .get(row.as_bytes(), &ReadQuery::latest(0, NOW))
                .expect("get")
                .iter()
                .map(|c| (c.qualifier()[0], c.value()[0]))
                .collect();
            let want: Vec<(u8, u8)> = oracle
                .iter()
                .filter(|((r, _), _)| r == row.as_bytes())
                .map(|((_, q), v)| (*q, *v))
                .collect();
            prop_assert_eq!(got, want, "get {}", row);
        }
        // Scans cross regions.
        for case in &scans {
            let scan = Scan {
                start_row: case.start.clone(),
                stop_row: case.stop.clone(),
                reversed: case.reversed,
                limit: case.limit,
                batch: case.batch,
                filter: case.prefix_filter.clone().map(Filter::Prefix),
                ..Scan::all(NOW)
            };
            let want = expected(&oracle, case);
            let got = shown(t.scan(&scan).expect("scan"));
            prop_assert_eq!(got, want.clone(), "{:?} over {:?}", case, splits);
            // The same scan through `next_into`: into one buffer cleared before each result
            // (each handed over whole), and appended to one list cut where the counts say.
            let mut scanner = t.scanner(&scan).expect("scanner");
            let (mut buffer, mut reused) = (Vec::new(), Vec::new());
            loop {
                buffer.clear();
                let n = scanner.next_into(&mut buffer).expect("next_into");
                prop_assert_eq!(n, buffer.len());
                if n == 0 {
                    break;
                }
                reused.push(buffer.clone());
            }
            prop_assert_eq!(shown(reused), want.clone(), "reused buffer, {:?}", case);
            let mut scanner = t.scanner(&scan).expect("scanner");
            let (mut all, mut counts) = (Vec::new(), Vec::new());
            loop {
                match scanner.next_into(&mut all).expect("next_into") {
                    0 => break,
                    n => counts.push(n),
                }
            }
            prop_assert_eq!(counts.iter().sum::<usize>(), all.len());
            let mut rest = &all[..];
            let appended: Vec<Vec<Cell>> = counts
                .iter()
                .map(|&n| {
                    let (result, after) = rest.split_at(n);
                    rest = after;
                    result.to_vec()
                })
                .collect();
            prop_assert_eq!(shown(appended), want, "appended, {:?}", case);
        }
    }
}

#[test]
fn split_keys_are_checked_and_each_region_is_listed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Engine::open(dir.path(), EngineOptions::default()).expect("open");
    let with = |keys: &[&str]| TableOptions {
        split_keys: keys
            .iter()
            .map(|k| Bytes::copy_from_slice(k.as_bytes()))
            .collect(),
        ..TableOptions::default()
    };
    for bad in [&["b", "a"][..], &["a", "a"], &[""]] {
        let err = server
            .create_table_with("bad", vec![FamilyOptions::new("f")], with(bad))
            .expect_err("refused");
        assert!(err.to_string().contains("split keys"), "{err}");
    }
    assert!(server.list_tables().is_empty(), "nothing was created");
    let t = server
        .create_table_with(
            "t",
            vec![FamilyOptions::new("f")],
            TableOptions {
                split_keys: keel_region::splits::hex_string(4),
                ..TableOptions::default()
            },
        )
        .expect("create");
    let infos = t.region_infos();
    assert_eq!(infos.len(), 4);
    assert!(infos[0].start_key.is_empty() && infos[3].end_key.is_empty());
    assert_eq!(&infos[1].start_key[..], b"40000000");
    assert!(infos.windows(2).all(|w| w[0].end_key == w[1].start_key));
    // Each region holds its own rows; a row routes to the one whose range holds it.
    t.put(b"80000001", b"f", b"q", b"v").expect("put");
    assert_eq!(t.region_for(b"80000001").id(), infos[2].id);
    assert!(t.regions()[2].memstore_size() > 0);
    assert_eq!(t.regions()[1].memstore_size(), 0);
    // Disabled, enabled, deleted: every region goes with the table.
    server.disable_table("t").expect("disable");
    server.enable_table("t").expect("enable");
    assert_eq!(
        server
            .table("t")
            .expect("t")
            .get_value(b"80000001", b"f", b"q")
            .expect("get"),
        Some(Bytes::from_static(b"v"))
    );
    server.disable_table("t").expect("disable");
    server.delete_table("t").expect("delete");
    let data = dir.path().join("data");
    assert_eq!(
        std::fs::read_dir(&data).expect("data").count(),
        0,
        "every region directory went"
    );
}

/// Every file under `dir`, recursively.
fn files_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).expect("read dir") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            files.extend(files_under(&path));
        } else {
            files.push(path);
        }
    }
    files
}

#[test]
fn a_table_scan_ends_at_its_first_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut family = FamilyOptions::new("f");
    // Small blocks: the first region's rows span many, so one can be damaged past the first.
    family.files.block_size = 1024;
    let value = vec![b'v'; 100];
    let first_region = {
        let engine = Engine::open(dir.path(), EngineOptions::default()).expect("open");
        let t = engine
            .create_table_with(
                "t",
                vec![family],
                TableOptions {
                    split_keys: vec![Bytes::from_static(b"m")],
                    ..TableOptions::default()
                },
            )
            .expect("create");
        for i in 0..300 {
            for prefix in ["a", "n"] {
                t.put(format!("{prefix}{i:03}").as_bytes(), b"f", b"q", &value)
                    .expect("put");
            }
        }
        t.flush().expect("flush");
        let id = t.region_infos()[0].id;
        engine.close().expect("close");
        id
    };
    // The first region's store file, damaged at two thirds of its length (a data block well
    // after the first: 300 rows of 100 bytes in 1 KiB blocks).
    let region_dir = dir.path().join("data").join(format!("{first_region:020}"));
    let store_file = files_under(&region_dir)
        .into_iter()
        .max_by_key(|p| std::fs::metadata(p).expect("metadata").len())
        .expect("a store file");
    let mut bytes = std::fs::read(&store_file).expect("read");
    let at = bytes.len() * 2 / 3;
    bytes[at] ^= 0xFF;
    std::fs::write(&store_file, &bytes).expect("write");

    let engine = Engine::open(dir.path(), EngineOptions::default()).expect("reopen");
    let t = engine.table("t").expect("table");
    let mut scanner = t.scanner(&Scan::all(NOW)).expect("scanner");
    let mut rows = Vec::new();
    let mut buffer = Vec::new();
    let error = loop {
        buffer.clear();
        match scanner.next_into(&mut buffer) {
            Ok(0) => panic!("the scan ended without the damage: {} rows", rows.len()),
            Ok(_) => rows.push(buffer[0].row().to_vec()),
            Err(e) => break e,
        }
    };
    assert!(
        !rows.is_empty(),
        "the rows before the damaged block come first"
    );
    assert!(rows.iter().all(|r| r.starts_with(b"a")), "{rows:?}");
    assert!(!error.to_string().is_empty());
    // Over: not on into the second region's rows.
    assert_eq!(scanner.next_into(&mut buffer).expect("ended"), 0);
    assert!(scanner.next().is_none());
    // The second region reads on its own.
    let second = t
        .scan(&Scan {
            start_row: Bytes::from_static(b"m"),
            ..Scan::all(NOW)
        })
        .expect("the second region is whole");
    assert_eq!(second.len(), 300);
}
