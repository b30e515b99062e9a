//! A region on real files: writes and gets with HBase semantics, flush into store files, reopen
//! with WAL replay, the durability contract across a restart, concurrent writers, and a random
//! model of puts, deletes, flushes and restarts checked against the declarative oracle.

mod common;

use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use keel_cell::{Cell, LATEST_TIMESTAMP};
use keel_fs::{FileSystem, StdFs};
use keel_region::matcher::{FamilyRules, ReadQuery};
use keel_region::{
    Durability, FamilyOptions, InMemoryCompaction, Region, RegionLimits, WriteOrder,
};
use keel_wal::{Wal, WalOptions};
use proptest::prelude::*;

fn fs() -> Arc<dyn FileSystem> {
    Arc::new(StdFs)
}

fn families(rules: FamilyRules) -> Vec<FamilyOptions> {
    ["f", "g"]
        .into_iter()
        .map(|name| FamilyOptions {
            rules,
            ..FamilyOptions::new(name)
        })
        .collect()
}

struct Opened {
    region: Region,
    wal: Arc<Wal>,
}

fn open(dir: &Path, rules: FamilyRules) -> Opened {
    open_with(dir, rules, WriteOrder::Reordered)
}

fn open_with(dir: &Path, rules: FamilyRules, order: WriteOrder) -> Opened {
    let wal = Arc::new(Wal::open(fs(), &dir.join("wal"), WalOptions::default()).expect("wal"));
    let region = Region::open(
        fs(),
        &dir.join("region"),
        Arc::clone(&wal),
        1,
        families(rules),
    )
    .expect("region")
    .with_write_order(order);
    Opened { region, wal }
}

/// A WAL at `/wal` and a region at `/region` on `fs` (a `FaultFs` or its crash image).
fn open_at_root(fs: Arc<dyn FileSystem>, order: WriteOrder) -> (Arc<Wal>, Region) {
    let wal = Arc::new(
        Wal::open(Arc::clone(&fs), Path::new("/wal"), WalOptions::default()).expect("wal"),
    );
    let region = Region::open(
        fs,
        Path::new("/region"),
        Arc::clone(&wal),
        1,
        families(FamilyRules::default()),
    )
    .expect("region")
    .with_write_order(order);
    (wal, region)
}

fn close(opened: Opened) {
    drop(opened.region);
    let wal = Arc::try_unwrap(opened.wal).expect("only the test holds the WAL");
    wal.close().expect("close");
}

fn all_versions() -> ReadQuery {
    ReadQuery {
        max_versions: 100,
        ..ReadQuery::latest(0, i64::MAX / 2)
    }
}

fn values(cells: &[Cell]) -> Vec<String> {
    cells
        .iter()
        .map(|c| String::from_utf8(c.value().to_vec()).expect("utf8"))
        .collect()
}

fn put(row: &str, q: &str, ts: i64, v: &str) -> Cell {
    Cell::put(row.to_string(), "f", q.to_string(), ts, v.to_string()).expect("cell")
}

#[test]
fn writes_are_read_back_with_hbase_semantics_before_and_after_a_flush() {
    let dir = tempfile::tempdir().expect("tempdir");
    let rules = FamilyRules {
        max_versions: 3,
        ..FamilyRules::default()
    };
    let o = open(dir.path(), rules);
    let r = &o.region;
    r.mutate(
        vec![
            put("a", "q", 1, "v1"),
            put("a", "q", 2, "v2"),
            put("b", "q", 1, "b1"),
        ],
        Durability::SyncWal,
    )
    .expect("write");
    // Server timestamps for LATEST_TIMESTAMP cells.
    r.mutate(
        vec![put("a", "q", LATEST_TIMESTAMP, "v3")],
        Durability::SyncWal,
    )
    .expect("write");
    let got = r.get(b"a", &all_versions()).expect("get");
    assert_eq!(values(&got), ["v3", "v2", "v1"]);
    assert!(
        got[0].timestamp() > 1_000_000,
        "server time, not LATEST_TIMESTAMP"
    );
    r.flush().expect("flush");
    assert_eq!(r.store_file_count(), 1);
    assert_eq!(
        values(&r.get(b"a", &all_versions()).expect("get")),
        ["v3", "v2", "v1"]
    );
    // A delete in the memstore masks versions in the store file.
    r.mutate(
        vec![Cell::delete_column("a", "f", "q", 2).expect("cell")],
        Durability::SyncWal,
    )
    .expect("delete");
    assert_eq!(values(&r.get(b"a", &all_versions()).expect("get")), ["v3"]);
    assert_eq!(
        values(&r.get(b"b", &ReadQuery::latest(0, 0)).expect("get")),
        ["b1"]
    );
    assert!(r.get(b"zz", &all_versions()).expect("get").is_empty());
    close(o);
}

#[test]
fn reopening_replays_unflushed_writes_and_keeps_flushed_ones() {
    let dir = tempfile::tempdir().expect("tempdir");
    let rules = FamilyRules {
        max_versions: 10,
        ..FamilyRules::default()
    };
    let o = open(dir.path(), rules);
    for i in 0..50 {
        o.region
            .mutate(
                vec![put("r", "q", i, &format!("v{i}"))],
                Durability::SyncWal,
            )
            .expect("write");
        if i == 20 {
            o.region.flush().expect("flush");
        }
    }
    o.region
        .mutate(vec![put("skipped", "q", 1, "lost")], Durability::SkipWal)
        .expect("write");
    assert_eq!(
        o.region
            .get(b"skipped", &all_versions())
            .expect("get")
            .len(),
        1
    );
    close(o);
    let o = open(dir.path(), rules);
    let got = o.region.get(b"r", &all_versions()).expect("get");
    let expected: Vec<String> = (40..50).rev().map(|i| format!("v{i}")).collect();
    assert_eq!(
        values(&got),
        expected,
        "10 newest versions, from store file and replayed WAL"
    );
    assert!(
        o.region
            .get(b"skipped", &all_versions())
            .expect("get")
            .is_empty(),
        "SkipWal writes do not survive a restart unless flushed"
    );
    // New writes after a reopen get sequence ids above everything replayed.
    o.region
        .mutate(vec![put("r", "q", 100, "after")], Durability::SyncWal)
        .expect("write");
    assert_eq!(
        values(&o.region.get(b"r", &ReadQuery::latest(0, 0)).expect("get")),
        ["after"]
    );
    close(o);
}

#[test]
fn concurrent_writers_all_land() {
    let dir = tempfile::tempdir().expect("tempdir");
    let o = open(
        dir.path(),
        FamilyRules {
            max_versions: 1000,
            ..FamilyRules::default()
        },
    );
    std::thread::scope(|scope| {
        for t in 0..8 {
            let region = &o.region;
            scope.spawn(move || {
                for i in 0..100 {
                    let row = format!("row{}", i % 10);
                    let cell = put(&row, &format!("t{t}"), i, "v");
                    region
                        .mutate(vec![cell], Durability::SyncWal)
                        .expect("write");
                }
            });
        }
        let region = &o.region;
        scope.spawn(move || {
            for _ in 0..3 {
                region.flush().expect("flush");
            }
        });
    });
    let total: usize = (0..10)
        .map(|r| {
            o.region
                .get(format!("row{r}").as_bytes(), &all_versions())
                .expect("get")
                .len()
        })
        .sum();
    assert_eq!(total, 800);
    close(o);
}

#[derive(Debug, Clone)]
enum Op {
    Write(Vec<Cell>, Durability),
    /// Add to the counter at cnt/f:n.
    Increment(i64, Durability),
    /// Put r1/f:x = the value if its latest value is `expect` (`None`: absent, `Some(true)`:
    /// whatever the model says it is now, `Some(false)`: something it is not).
    CheckAndPut(Option<bool>),
    Batch(Vec<(Vec<Cell>, Durability)>),
    Flush,
    /// An in-memory flush of every store past its in-memory flush size (nothing under `NONE`).
    Flatten,
    /// A minor (lossless) compaction of whatever the exploring policy selects.
    Compact,
    /// A major compaction: every family's files rewritten as one.
    MajorCompact,
    Reopen,
}

fn durability_strategy() -> impl Strategy<Value = Durability> {
    prop::sample::select(vec![
        Durability::SkipWal,
        Durability::AsyncWal,
        Durability::SyncWal,
        Durability::UseDefault,
        Durability::FsyncWal,
    ])
}

fn cell_strategy() -> impl Strategy<Value = Cell> {
    common::cell_strategy(0..6)
}

fn op_strategy() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (
            prop::collection::vec(cell_strategy(), 1..4),
            prop::sample::select(vec![
                Durability::SkipWal,
                Durability::AsyncWal,
                Durability::SyncWal,
                Durability::SyncWal,
                Durability::FsyncWal,
            ]),
        )
            .prop_map(|(cells, durability)| Op::Write(cells, durability)),
        2 => (-3i64..4, durability_strategy()).prop_map(|(d, durability)| Op::Increment(d, durability)),
        2 => prop::option::of(any::<bool>()).prop_map(Op::CheckAndPut),
        2 => prop::collection::vec((prop::collection::vec(cell_strategy(), 0..3), durability_strategy()), 1..4)
            .prop_map(Op::Batch),
        1 => Just(Op::Flush),
        2 => Just(Op::Flatten),
        1 => Just(Op::Compact),
        1 => Just(Op::MajorCompact),
        1 => Just(Op::Reopen),
    ]
}

/// The latest visible value of one column by the oracle.
fn latest_value(
    written: &[Cell],
    row: &str,
    qualifier: &str,
    rules: &FamilyRules,
) -> Option<Bytes> {
    let query = ReadQuery {
        columns: Some(vec![(
            Bytes::from("f"),
            Some(Bytes::from(qualifier.to_string())),
        )]),
        ..ReadQuery::latest(u64::MAX, 0)
    };
    visible(written, row, &query, rules)
        .first()
        .map(|c| c.value_bytes())
}

/// The oracle's answer for one row: the cells written to it, the last of equal keys winning.
/// What a major compaction leaves, stated over the written cells: of those in store files
/// (sequence id at most `flushed_seq`), the puts a read of every version would return, and the
/// delete markers at or above the oldest timestamp in the memstore (they may mask a put there);
/// the memstore's cells untouched.
fn major_compacted(
    written: &[Cell],
    family: &Bytes,
    flushed_seq: u64,
    rules: &FamilyRules,
) -> Vec<Cell> {
    let (files, mut others): (Vec<Cell>, Vec<Cell>) = written
        .iter()
        .cloned()
        .partition(|c| c.sequence_id() <= flushed_seq && c.family() == family);
    let memstore: Vec<&Cell> = others.iter().filter(|c| c.family() == family).collect();
    let oldest = memstore
        .iter()
        .map(|c| c.timestamp())
        .min()
        .unwrap_or(i64::MAX);
    let all_versions = ReadQuery {
        max_versions: u32::MAX,
        ..ReadQuery::latest(u64::MAX, 0)
    };
    let mut kept = Vec::new();
    for row in ["r1", "r2"] {
        kept.extend(visible(&files, row, &all_versions, rules));
    }
    kept.extend(
        files
            .iter()
            .filter(|c| c.cell_type() != keel_cell::CellType::Put && c.timestamp() >= oldest)
            .cloned(),
    );
    kept.append(&mut others);
    kept.sort_by_key(Cell::sequence_id);
    kept
}

fn visible(written: &[Cell], row: &str, query: &ReadQuery, rules: &FamilyRules) -> Vec<Cell> {
    let mut mine: Vec<Cell> = written
        .iter()
        .filter(|c| c.row() == row.as_bytes())
        .cloned()
        .collect();
    mine.reverse();
    let mut seen = std::collections::HashSet::new();
    mine.retain(|c| seen.insert(c.key().clone()));
    mine.sort_by(|a, b| a.key().cmp(b.key()));
    common::oracle(&mine, query, rules)
}

/// Gets of both rows and scans over them, forwards and reversed, return what the oracle says
/// `query` sees in `written`.
fn reads_match_the_oracle(
    region: &Region,
    written: &[Cell],
    rules: &FamilyRules,
    query: &ReadQuery,
    what: &str,
) -> Result<(), TestCaseError> {
    let mut expected_rows = Vec::new();
    for row in ["r1", "r2"] {
        let got = region.get(row.as_bytes(), query).expect("get");
        let expected = visible(written, row, query, rules);
        let got_values: Vec<Bytes> = got.iter().map(|c| c.value_bytes()).collect();
        let expected_values: Vec<Bytes> = expected.iter().map(|c| c.value_bytes()).collect();
        prop_assert_eq!(&got_values, &expected_values, "{} of {}", what, row);
        if !expected_values.is_empty() {
            expected_rows.push(expected_values);
        }
    }
    for reversed in [false, true] {
        let scan = keel_region::Scan {
            // Reversed, it stops before the counter's row `cnt`, as forwards it starts after it.
            start_row: Bytes::from(if reversed { "r3" } else { "r" }),
            stop_row: Bytes::from(if reversed { "r" } else { "" }),
            query: query.clone(),
            reversed,
            ..keel_region::Scan::all(0)
        };
        let mut scanned: Vec<Vec<Bytes>> = region
            .scan(&scan)
            .expect("scan")
            .into_iter()
            .map(|row| row.iter().map(|c| c.value_bytes()).collect())
            .collect();
        if reversed {
            scanned.reverse();
        }
        prop_assert_eq!(&scanned, &expected_rows, "{} reversed {}", what, reversed);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(120))]

    #[test]
    fn random_writes_flushes_and_restarts_match_the_oracle(
        ops in prop::collection::vec(op_strategy(), 1..25),
        max_versions in 1u32..4,
        legacy in any::<bool>(),
        basic in any::<bool>(),
    ) {
        let dir = tempfile::tempdir().expect("tempdir");
        let rules = FamilyRules { max_versions, ..FamilyRules::default() };
        let order = if legacy { WriteOrder::Legacy } else { WriteOrder::Reordered };
        // A 16 KiB flush size: with two families, a store flushes in memory at 1 KiB, every
        // few writes (writes block only at 64 KiB, which the model never reaches).
        let limits = RegionLimits {
            flush_size: 16 << 10,
            in_memory_compaction: if basic { InMemoryCompaction::Basic } else { InMemoryCompaction::None },
            ..RegionLimits::default()
        };
        let open_limited = |order| {
            let o = open_with(dir.path(), rules, order);
            Opened { region: o.region.with_limits(limits), wal: o.wal }
        };
        let mut o = open_limited(order);
        let mut flattened = 0;
        // What the region acknowledged, with the sequence ids it must have given (one per
        // write, increasing, as MVCC hands them out).
        let mut written: Vec<Cell> = Vec::new();
        // SkipWal cells not yet flushed: a restart loses them (a clean close keeps the rest).
        let mut volatile: Vec<Cell> = Vec::new();
        let mut seq = 0u64;
        // The counter now, and as a restart would leave it (its last logged or flushed value).
        let (mut counter, mut durable_counter) = (0i64, 0i64);
        let mut cas_round = 0u32;
        // Every acknowledged write up to here is in a store file.
        let mut flushed_seq = 0u64;
        for op in ops {
            match op {
                Op::Write(cells, durability) => {
                    o.region.mutate(cells.clone(), durability).expect("write");
                    seq += 1;
                    for mut cell in cells {
                        cell.set_sequence_id(seq);
                        if durability == Durability::SkipWal {
                            volatile.push(cell.clone());
                        }
                        written.push(cell);
                    }
                }
                Op::Increment(delta, durability) => {
                    let (value, _) = o.region.increment(b"cnt", b"f", b"n", delta, durability).expect("increment");
                    counter += delta;
                    prop_assert_eq!(value, counter);
                    if durability != Durability::SkipWal {
                        durable_counter = counter;
                    }
                }
                Op::CheckAndPut(expect) => {
                    cas_round += 1;
                    let current = latest_value(&written, "r1", "x", &rules);
                    let target = match expect {
                        None => None,
                        Some(true) => current.clone(),
                        Some(false) => Some(Bytes::from("never written")),
                    };
                    let cell = Cell::put("r1", "f", "x", 3, format!("cas{cas_round}")).expect("cell");
                    let applied = o
                        .region
                        .check_and_mutate(b"r1", b"f", b"x", |v| v == target.as_deref(), vec![cell.clone()], Durability::SyncWal)
                        .expect("check and mutate");
                    prop_assert_eq!(applied, current == target);
                    if applied {
                        seq += 1;
                        let mut cell = cell;
                        cell.set_sequence_id(seq);
                        written.push(cell);
                    }
                }
                Op::Batch(operations) => {
                    let statuses = o.region.batch(operations.clone());
                    let mut batch_cells = Vec::new();
                    let mut strongest = Durability::UseDefault;
                    for ((cells, durability), status) in operations.iter().zip(&statuses) {
                        let valid = cells.first().is_some_and(|first| cells.iter().all(|c| c.row() == first.row()));
                        prop_assert_eq!(status.is_ok(), valid, "{:?}", status);
                        if valid {
                            batch_cells.extend(cells.iter().cloned());
                            // HBase's rule: each operation's USE_DEFAULT is the region's
                            // durability (SyncWal here) before the batch takes the strongest.
                            strongest = strongest.max(durability.resolve(Durability::SyncWal));
                        }
                    }
                    if !batch_cells.is_empty() {
                        seq += 1;
                        for mut cell in batch_cells {
                            cell.set_sequence_id(seq);
                            if strongest == Durability::SkipWal {
                                volatile.push(cell.clone());
                            }
                            written.push(cell);
                        }
                    }
                }
                Op::Flush => {
                    o.region.flush().expect("flush");
                    flushed_seq = seq;
                    volatile.clear();
                    durable_counter = counter;
                }
                Op::Flatten => {
                    flattened += o.region.flatten_memstores();
                    prop_assert!(basic || flattened == 0);
                }
                Op::Compact => {
                    let before = o.region.store_file_count();
                    let before_per_family = o.region.store_file_counts();
                    let policy = keel_region::compaction_policy::CompactionPolicy::default();
                    let removed = o.region.compact(&policy, false).expect("compact");
                    prop_assert!(removed == 0 || o.region.store_file_count() < before);
                    for ((family, was), (_, now)) in before_per_family.iter().zip(o.region.store_file_counts()) {
                        if *was >= 2 && now <= 1 {
                            // Every file of the family was in it: a major compaction, whose
                            // effect the oracle states on its own terms.
                            written = major_compacted(&written, family, flushed_seq, &rules);
                        }
                    }
                }
                Op::MajorCompact => {
                    let before_per_family = o.region.store_file_counts();
                    let policy = keel_region::compaction_policy::CompactionPolicy::default();
                    o.region.compact(&policy, true).expect("major compaction");
                    for ((family, was), (_, now)) in before_per_family.iter().zip(o.region.store_file_counts()) {
                        prop_assert!(now <= 1);
                        if *was >= 1 {
                            written = major_compacted(&written, family, flushed_seq, &rules);
                        }
                    }
                }
                Op::Reopen => {
                    written.retain(|c| {
                        !volatile.iter().any(|v| v.key() == c.key() && v.value() == c.value())
                    });
                    volatile.clear();
                    counter = durable_counter;
                    close(o);
                    o = open_limited(order);
                }
            }
            // Whole rows, then gets and scans naming single columns (which end at the last
            // column they name): one column, two of one family, and one of each family, at one
            // version and at ten.
            reads_match_the_oracle(&o.region, &written, &rules, &ReadQuery { max_versions: 10, ..ReadQuery::latest(u64::MAX, 0) }, "whole rows")?;
            let named: [&[(&str, &str)]; 5] = [
                &[("f", "x")],
                &[("g", "")],
                &[("f", "y"), ("f", "")],
                &[("f", "x"), ("g", "y")],
                &[("g", "x"), ("f", "y"), ("f", "x")],
            ];
            for columns in named {
                for versions in [1, 10] {
                    let query = ReadQuery {
                        max_versions: versions,
                        columns: Some(
                            columns
                                .iter()
                                .map(|(f, q)| (Bytes::from(*f), Some(Bytes::from(*q))))
                                .collect(),
                        ),
                        ..ReadQuery::latest(u64::MAX, 0)
                    };
                    reads_match_the_oracle(&o.region, &written, &rules, &query, &format!("{columns:?}"))?;
                }
            }
            let value = o.region.get(b"cnt", &ReadQuery::latest(u64::MAX, 0)).expect("get").first().map(|c| {
                i64::from_be_bytes(c.value()[..].try_into().expect("8 bytes"))
            });
            prop_assert_eq!(value.unwrap_or(0), counter);
        }
        close(o);
    }
}

#[test]
fn concurrent_increments_reach_exact_totals_in_both_write_orders() {
    for order in [WriteOrder::Reordered, WriteOrder::Legacy] {
        concurrent_increments(order);
    }
}

fn concurrent_increments(order: WriteOrder) {
    let dir = tempfile::tempdir().expect("tempdir");
    let o = open_with(dir.path(), FamilyRules::default(), order);
    std::thread::scope(|scope| {
        for t in 0..64 {
            let region = &o.region;
            scope.spawn(move || {
                for i in 0..50 {
                    let counter = format!("c{}", (i + t) % 16);
                    region
                        .increment(counter.as_bytes(), b"f", b"n", 1, Durability::SyncWal)
                        .expect("increment");
                }
            });
        }
        let region = &o.region;
        scope.spawn(move || {
            for _ in 0..3 {
                region.flush().expect("flush");
            }
        });
    });
    let total: i64 = (0..16)
        .map(|c| {
            let (value, _) = o
                .region
                .increment(
                    format!("c{c}").as_bytes(),
                    b"f",
                    b"n",
                    0,
                    Durability::SyncWal,
                )
                .expect("read");
            value
        })
        .sum();
    assert_eq!(total, 64 * 50);
    close(o);
}

#[test]
fn increments_append_and_check_and_mutate_read_modify_write() {
    let dir = tempfile::tempdir().expect("tempdir");
    let o = open(dir.path(), FamilyRules::default());
    let r = &o.region;
    assert_eq!(
        r.increment(b"row", b"f", b"n", 5, Durability::SyncWal)
            .expect("inc")
            .0,
        5
    );
    assert_eq!(
        r.increment(b"row", b"f", b"n", -2, Durability::SyncWal)
            .expect("inc")
            .0,
        3
    );
    // Timestamps strictly increase even within one millisecond.
    let cells = r.get(b"row", &all_versions()).expect("get");
    assert_eq!(cells.len(), 1, "one version kept");
    r.mutate(vec![put("row", "s", 1, "abc")], Durability::SyncWal)
        .expect("put");
    let err = r
        .increment(b"row", b"f", b"s", 1, Durability::SyncWal)
        .unwrap_err();
    assert!(err.to_string().contains("not 8"), "{err}");
    assert_eq!(
        &r.append(b"row", b"f", b"s", b"def", Durability::SyncWal)
            .expect("append")
            .0[..],
        b"abcdef"
    );
    let applied = r
        .check_and_mutate(
            b"row",
            b"f",
            b"s",
            |v| v.is_some_and(|v| v == b"nope"),
            vec![put("row", "t", 1, "x")],
            Durability::SyncWal,
        )
        .expect("cam");
    assert!(!applied);
    let applied = r
        .check_and_mutate(
            b"row",
            b"f",
            b"s",
            |v| v.is_some_and(|v| v == b"abcdef"),
            vec![put("row", "t", 1, "x")],
            Durability::SyncWal,
        )
        .expect("cam");
    assert!(applied);
    let absent = r
        .check_and_mutate(
            b"row",
            b"f",
            b"missing",
            |v| v.is_none(),
            vec![put("row", "u", 1, "y")],
            Durability::SyncWal,
        )
        .expect("cam");
    assert!(absent);
    assert!(
        r.check_and_mutate(
            b"row",
            b"f",
            b"s",
            |_| true,
            vec![put("other", "t", 1, "x")],
            Durability::SyncWal
        )
        .is_err()
    );
    close(o);
}

#[test]
fn a_write_whose_wal_sync_fails_is_never_visible_in_either_order() {
    use keel_fs::{Fault, FaultFs};
    for order in [WriteOrder::Reordered, WriteOrder::Legacy] {
        let faults = Arc::new(FaultFs::new());
        let fs: Arc<dyn FileSystem> = faults.clone();
        let (_wal, region) = open_at_root(fs, order);
        region
            .mutate(vec![put("a", "q", 1, "ok")], Durability::FsyncWal)
            .expect("first write");
        faults.inject(Fault::fail_sync(1).on_path("wal").sticky());
        let err = region
            .mutate(vec![put("b", "q", 1, "lost")], Durability::FsyncWal)
            .unwrap_err();
        assert!(err.to_string().contains("WAL"), "{order:?}: {err}");
        assert!(
            region.get(b"b", &all_versions()).expect("get").is_empty(),
            "{order:?}: a failed write became visible"
        );
        assert_eq!(
            values(&region.get(b"a", &all_versions()).expect("get")),
            ["ok"]
        );
        assert_eq!(region.write_order(), order);
        // The failed write's MVCC number was completed, not left behind: a compaction waits for
        // every number begun before it, and returns (a hang is a failure: nextest kills it).
        let policy = keel_region::compaction_policy::CompactionPolicy::default();
        let _ = region.compact(&policy, true);
    }
}

#[test]
fn check_and_mutate_is_linearizable_on_one_row() {
    // 8 threads each try to move a value from n to n + 1 with check-and-mutate (read, then CAS);
    // every success must be a distinct step, so the final value equals the number of successes.
    let dir = tempfile::tempdir().expect("tempdir");
    let o = open(dir.path(), FamilyRules::default());
    o.region
        .mutate(vec![put("cas", "v", 1, "0")], Durability::SyncWal)
        .expect("seed");
    let successes = std::sync::atomic::AtomicU64::new(0);
    std::thread::scope(|scope| {
        for _ in 0..8 {
            let (region, successes) = (&o.region, &successes);
            scope.spawn(move || {
                for _ in 0..60 {
                    let query = ReadQuery::latest(0, 0);
                    let seen = region.get(b"cas", &query).expect("get")[0].value_bytes();
                    let n: u64 = std::str::from_utf8(&seen)
                        .expect("utf8")
                        .parse()
                        .expect("number");
                    let next = put("cas", "v", LATEST_TIMESTAMP, &(n + 1).to_string());
                    let applied = region
                        .check_and_mutate(
                            b"cas",
                            b"f",
                            b"v",
                            |v| v == Some(&seen),
                            vec![next],
                            Durability::SyncWal,
                        )
                        .expect("cam");
                    if applied {
                        successes.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                }
            });
        }
    });
    let value = o.region.get(b"cas", &ReadQuery::latest(0, 0)).expect("get")[0].value_bytes();
    let value: u64 = std::str::from_utf8(&value)
        .expect("utf8")
        .parse()
        .expect("number");
    let successes = successes.load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(value, successes);
    assert!(
        successes >= 60,
        "at least one thread's worth of progress: {successes}"
    );
    close(o);
}

#[test]
fn batches_report_each_operation_and_mutate_row_is_one_row() {
    let dir = tempfile::tempdir().expect("tempdir");
    let o = open(dir.path(), FamilyRules::default());
    let r = &o.region;
    let bad_family = vec![Cell::put("x", "nope", "q", 1, "v").expect("cell")];
    let two_rows = vec![put("y", "q", 1, "v"), put("z", "q", 1, "v")];
    let statuses = r.batch(vec![
        (vec![put("a", "q", 1, "A")], Durability::SyncWal),
        (bad_family, Durability::SyncWal),
        (vec![], Durability::SyncWal),
        (two_rows, Durability::SyncWal),
        (
            vec![put("b", "q", 1, "B"), put("b", "p", 1, "B2")],
            Durability::UseDefault,
        ),
    ]);
    let ok: Vec<bool> = statuses.iter().map(Result::is_ok).collect();
    assert_eq!(ok, [true, false, false, false, true], "{statuses:?}");
    assert!(matches!(
        statuses[1],
        Err(keel_region::RegionError::NoSuchFamily { .. })
    ));
    assert_eq!(values(&r.get(b"a", &all_versions()).expect("get")), ["A"]);
    assert_eq!(
        values(&r.get(b"b", &all_versions()).expect("get")),
        ["B2", "B"]
    );
    assert!(
        r.get(b"y", &all_versions()).expect("get").is_empty(),
        "a rejected operation wrote nothing"
    );
    r.mutate_row(
        b"m",
        vec![
            put("m", "q", 1, "1"),
            Cell::delete_column("m", "f", "q", 0).expect("cell"),
        ],
        Durability::SyncWal,
    )
    .expect("mutate_row");
    assert_eq!(values(&r.get(b"m", &all_versions()).expect("get")), ["1"]);
    assert!(
        r.mutate_row(b"m", vec![put("n", "q", 1, "1")], Durability::SyncWal)
            .is_err()
    );
    close(o);
}

#[test]
fn a_streaming_scan_keeps_its_view_while_writes_and_flushes_happen_beneath_it() {
    use keel_region::Scan;
    let dir = tempfile::tempdir().expect("tempdir");
    let o = open(dir.path(), FamilyRules::default());
    for i in 0..20 {
        o.region
            .mutate(
                vec![put(&format!("r{i:02}"), "q", 1, "old")],
                Durability::SyncWal,
            )
            .expect("write");
    }
    let mut scanner = o.region.scanner(&Scan::all(0)).expect("scanner");
    let first = scanner.next().expect("a row").expect("ok");
    assert_eq!(values(&first), ["old"]);
    // Beneath the open scanner: overwrite every row, add rows, delete one, flush twice.
    for i in 0..25 {
        o.region
            .mutate(
                vec![put(&format!("r{i:02}"), "q", 2, "new")],
                Durability::SyncWal,
            )
            .expect("write");
    }
    o.region.flush().expect("flush");
    o.region
        .mutate(
            vec![Cell::delete_family("r10", "f", 100).expect("cell")],
            Durability::SyncWal,
        )
        .expect("delete");
    o.region.flush().expect("flush");
    let rest: Vec<Vec<Cell>> = scanner.collect::<Result<_, _>>().expect("scan");
    assert_eq!(rest.len(), 19, "the rows as of the scan's start");
    assert!(rest.iter().all(|row| values(row) == ["old"]));
    // A new scan sees the new state.
    let now = o.region.scan(&Scan::all(0)).expect("scan");
    assert_eq!(now.len(), 24);
    assert!(now.iter().all(|row| values(row) == ["new"]));
    close(o);
}

#[test]
fn a_batch_is_as_durable_as_its_strongest_operation() {
    use keel_fs::FaultFs;
    let faults = Arc::new(FaultFs::new());
    let fs: Arc<dyn FileSystem> = faults.clone();
    let (_wal, region) = open_at_root(fs, WriteOrder::Reordered);
    region
        .mutate(vec![put("alone", "q", 1, "v")], Durability::SkipWal)
        .expect("write");
    let statuses = region.batch(vec![
        (vec![put("skip", "q", 1, "v")], Durability::SkipWal),
        (vec![put("fsync", "q", 1, "v")], Durability::FsyncWal),
    ]);
    assert!(statuses.iter().all(Result::is_ok));
    // A power cut now: only what was fsynced survives.
    let (_wal2, after) = open_at_root(Arc::new(faults.crash_image()), WriteOrder::Reordered);
    let has = |row: &[u8]| !after.get(row, &all_versions()).expect("get").is_empty();
    assert!(!has(b"alone"), "a lone SkipWal write is not logged");
    assert!(
        has(b"skip") && has(b"fsync"),
        "the batch took FsyncWal for both"
    );
}

#[test]
fn reads_skip_store_files_older_than_their_time_range_but_not_newer_deletes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let o = open(
        dir.path(),
        FamilyRules {
            max_versions: 10,
            ..FamilyRules::default()
        },
    );
    let r = &o.region;
    r.mutate(vec![put("a", "q", 5, "old")], Durability::SyncWal)
        .expect("write");
    r.flush().expect("flush"); // file 1: ts 5
    r.mutate(vec![put("a", "q", 50, "mid")], Durability::SyncWal)
        .expect("write");
    r.flush().expect("flush"); // file 2: ts 50
    r.mutate(
        vec![Cell::delete_column("a", "f", "q", 60).expect("cell")],
        Durability::SyncWal,
    )
    .expect("write");
    r.flush().expect("flush"); // file 3: a marker at ts 60, masking ts ≤ 60
    r.mutate(vec![put("a", "q", 70, "new")], Durability::SyncWal)
        .expect("write");
    let range = |min, max| ReadQuery {
        time_range: keel_region::matcher::TimeRange { min, max },
        ..all_versions()
    };
    // [40, 55): file 1 is skipped, file 3's newer marker still masks ts 50.
    assert!(r.get(b"a", &range(40, 55)).expect("get").is_empty());
    // [65, 100): only the newest put.
    assert_eq!(values(&r.get(b"a", &range(65, 100)).expect("get")), ["new"]);
    assert_eq!(values(&r.get(b"a", &all_versions()).expect("get")), ["new"]);
    close(o);
}

#[test]
fn compaction_merges_files_without_changing_any_read() {
    use keel_region::compaction_policy::CompactionPolicy;
    let dir = tempfile::tempdir().expect("tempdir");
    let rules = FamilyRules {
        max_versions: 3,
        ..FamilyRules::default()
    };
    let o = open(dir.path(), rules);
    for round in 0..6i64 {
        let mut cells = Vec::new();
        for r in 0..20 {
            cells.push(put(&format!("r{r:02}"), "q", round, &format!("v{round}")));
        }
        if round == 3 {
            cells.push(Cell::delete_column("r05", "f", "q", 2).expect("cell"));
            cells.push(Cell::delete_family("r07", "f", 10).expect("cell"));
        }
        o.region.mutate(cells, Durability::SyncWal).expect("write");
        o.region.flush().expect("flush");
    }
    assert_eq!(o.region.store_file_count(), 6);
    let read_all = |r: &Region| -> Vec<Vec<String>> {
        r.scan(&keel_region::Scan {
            query: all_versions(),
            ..keel_region::Scan::all(0)
        })
        .expect("scan")
        .iter()
        .map(|row| values(row))
        .collect()
    };
    let before = read_all(&o.region);
    let removed = o
        .region
        .compact(&CompactionPolicy::default(), false)
        .expect("compact");
    assert_eq!(
        (removed, o.region.store_file_count()),
        (6, 1),
        "six small files merged into one"
    );
    assert_eq!(read_all(&o.region), before);
    assert_eq!(
        o.region
            .compact(&CompactionPolicy::default(), false)
            .expect("again"),
        0,
        "one file: nothing to do"
    );
    close(o);
    let o = open(dir.path(), rules);
    assert_eq!(
        o.region.store_file_count(),
        1,
        "the manifest lists the merged file only"
    );
    assert_eq!(read_all(&o.region), before);
    let family_dir = std::fs::read_dir(dir.path().join("region").join("66"))
        .expect("family dir")
        .count();
    assert_eq!(family_dir, 1, "the merged-away files are gone");
    close(o);
}

#[test]
fn a_compaction_that_fails_leaves_every_file_and_cell_in_place() {
    use keel_fs::{Fault, FaultFs};
    use keel_region::compaction_policy::CompactionPolicy;
    let faults = Arc::new(FaultFs::new());
    let fs: Arc<dyn FileSystem> = faults.clone();
    let (_wal, region) = open_at_root(fs, WriteOrder::Reordered);
    for round in 0..4i64 {
        region
            .mutate(
                vec![put(&format!("r{round}"), "q", 1, "v")],
                Durability::FsyncWal,
            )
            .expect("write");
        region.flush().expect("flush");
    }
    faults.inject(Fault::fail_sync(1).on_path(".ksf"));
    assert!(region.compact(&CompactionPolicy::default(), true).is_err());
    assert_eq!(region.store_file_count(), 4);
    for round in 0..4 {
        assert_eq!(
            values(
                &region
                    .get(format!("r{round}").as_bytes(), &all_versions())
                    .expect("get")
            ),
            ["v"]
        );
    }
    let (_wal2, after) = open_at_root(Arc::new(faults.crash_image()), WriteOrder::Reordered);
    assert_eq!(after.store_file_count(), 4);
    for round in 0..4 {
        assert_eq!(
            values(
                &after
                    .get(format!("r{round}").as_bytes(), &all_versions())
                    .expect("get")
            ),
            ["v"]
        );
    }
}

#[test]
fn major_compaction_drops_what_no_read_can_return_and_open_scans_keep_their_view() {
    use keel_region::compaction_policy::CompactionPolicy;
    let dir = tempfile::tempdir().expect("tempdir");
    let rules = FamilyRules {
        max_versions: 2,
        ..FamilyRules::default()
    };
    let o = open(dir.path(), rules);
    let r = &o.region;
    for ts in 1..=4i64 {
        r.mutate(
            vec![
                put("a", "q", ts, &format!("a{ts}")),
                put("b", "q", ts, &format!("b{ts}")),
            ],
            Durability::SyncWal,
        )
        .expect("write");
        r.flush().expect("flush");
    }
    r.mutate(
        vec![Cell::delete_family("b", "f", 100).expect("cell")],
        Durability::SyncWal,
    )
    .expect("delete");
    r.flush().expect("flush");
    // 8 puts and 1 marker in 5 files; a read returns a4, a3 (2 versions) and nothing of b.
    assert_eq!(r.store_file_cells(), 9);
    let scan_all = keel_region::Scan {
        query: all_versions(),
        ..keel_region::Scan::all(0)
    };
    let before: Vec<Vec<String>> = r
        .scan(&scan_all)
        .expect("scan")
        .iter()
        .map(|row| values(row))
        .collect();
    assert_eq!(before, [vec!["a4".to_string(), "a3".to_string()]]);
    let mut open_scan = r.scanner(&scan_all).expect("scanner");
    let removed = r
        .compact(&CompactionPolicy::default(), true)
        .expect("major");
    assert_eq!(removed, 5);
    assert_eq!(
        (r.store_file_count(), r.store_file_cells()),
        (1, 2),
        "only a4 and a3 are left"
    );
    let after: Vec<Vec<String>> = r
        .scan(&scan_all)
        .expect("scan")
        .iter()
        .map(|row| values(row))
        .collect();
    assert_eq!(after, before);
    // The scan opened before the compaction reads the files it started with.
    let first = open_scan.next().expect("a row").expect("ok");
    assert_eq!(values(&first), ["a4", "a3"]);
    drop(open_scan);
    // Deleting everything and compacting again leaves no file at all.
    r.mutate(
        vec![Cell::delete_family("a", "f", 100).expect("cell")],
        Durability::SyncWal,
    )
    .expect("delete");
    r.flush().expect("flush");
    r.compact(&CompactionPolicy::default(), true)
        .expect("major");
    assert_eq!(r.store_file_count(), 0);
    assert!(r.scan(&scan_all).expect("scan").is_empty());
    close(o);
}

#[test]
fn a_compaction_of_every_file_keeps_markers_that_still_mask_the_memstore() {
    use keel_region::compaction_policy::CompactionPolicy;
    let dir = tempfile::tempdir().expect("tempdir");
    let o = open(dir.path(), FamilyRules::default());
    let write = |cells: Vec<Cell>| {
        o.region.mutate(cells, Durability::SyncWal).expect("write");
    };
    write(vec![put("a", "q", 1, "old")]);
    o.region.flush().expect("flush");
    write(vec![Cell::delete("a", "f", "q", 5).expect("cell")]);
    write(vec![Cell::delete_column("b", "f", "q", 3).expect("cell")]);
    o.region.flush().expect("flush");
    write(vec![put("c", "q", 1, "c")]);
    o.region.flush().expect("flush");
    // Written after the markers, with timestamps they cover: still masked, whatever the order.
    write(vec![put("a", "q", 5, "masked")]);
    write(vec![put("b", "q", 2, "masked too")]);
    let read = |row: &str| values(&o.region.get(row.as_bytes(), &all_versions()).expect("get"));
    assert_eq!(read("a"), vec!["old"]);
    assert!(read("b").is_empty());
    // All three files selected: a major compaction. The memstore's oldest timestamp is 1, so
    // both markers may still mask something there and are kept.
    let removed = o
        .region
        .compact(&CompactionPolicy::default(), false)
        .expect("compact");
    assert_eq!((removed, o.region.store_file_count()), (3, 1));
    assert_eq!(read("a"), vec!["old"]);
    assert!(read("b").is_empty());
    assert_eq!(read("c"), vec!["c"]);
    // Once the memstore is flushed and everything compacted, the markers and what they
    // masked go together.
    o.region.flush().expect("flush");
    o.region
        .compact(&CompactionPolicy::default(), true)
        .expect("major");
    assert_eq!(read("a"), vec!["old"]);
    assert!(read("b").is_empty());
    assert_eq!(
        o.region.store_file_cells(),
        2,
        "a@1 and c@1 are all that is left"
    );
    close(o);
}

/// A read racing a flush sees every acknowledged write: the flush moves cells from the memstore
/// snapshot to a new file in one step with respect to reads (the soak found reads that took the
/// file list before a flush and the memstore after it, missing the flushed cells).
#[test]
fn reads_racing_flushes_never_miss_acknowledged_writes() {
    use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
    let dir = tempfile::tempdir().expect("tempdir");
    let o = open(dir.path(), FamilyRules::default());
    let region = &o.region;
    let acknowledged = AtomicI64::new(0);
    let stop = AtomicBool::new(false);
    let seconds = if cfg!(debug_assertions) { 2 } else { 4 };
    std::thread::scope(|s| {
        s.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                region.flush().expect("flush");
            }
        });
        for _ in 0..2 {
            s.spawn(|| {
                while !stop.load(Ordering::Relaxed) {
                    let floor = acknowledged.load(Ordering::Acquire);
                    let seen = region
                        .latest(b"c", b"f", b"n")
                        .expect("get")
                        .map_or(0, |c| {
                            i64::from_be_bytes(c.value()[..].try_into().expect("8"))
                        });
                    assert!(seen >= floor, "read {seen} after {floor} was acknowledged");
                }
            });
        }
        let started = std::time::Instant::now();
        while started.elapsed() < std::time::Duration::from_secs(seconds) {
            let (v, _) = region
                .increment(b"c", b"f", b"n", 1, Durability::SkipWal)
                .expect("increment");
            acknowledged.store(v, Ordering::Release);
        }
        stop.store(true, Ordering::Relaxed);
    });
}

/// Increments in one millisecond run a counter's timestamps ahead of the clock (each is the
/// previous + 1); a put with a server timestamp afterwards must still be the latest (happybase's
/// `counter_set` after `counter_inc` found this).
#[test]
fn a_put_after_fast_increments_is_the_latest_version() {
    let dir = tempfile::tempdir().expect("tempdir");
    let o = open(dir.path(), FamilyRules::default());
    for _ in 0..50 {
        o.region
            .increment(b"c", b"f", b"n", 1, Durability::SkipWal)
            .expect("increment");
    }
    let set =
        Cell::put("c", "f", "n", LATEST_TIMESTAMP, 7i64.to_be_bytes().to_vec()).expect("cell");
    o.region
        .mutate(vec![set], Durability::SkipWal)
        .expect("put");
    let latest = o
        .region
        .latest(b"c", b"f", b"n")
        .expect("get")
        .expect("a value");
    assert_eq!(latest.value(), &7i64.to_be_bytes());
    let (value, _) = o
        .region
        .increment(b"c", b"f", b"n", 1, Durability::SkipWal)
        .expect("increment");
    assert_eq!(value, 8);
}
