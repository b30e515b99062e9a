//! Filtered scans against a naive oracle: random puts (several families, qualifiers and
//! versions, some flushed to store files), then scans with random filters, each compared with
//! the filter's documented semantics applied to the same scan without a filter. The oracle is
//! written from HBase's descriptions (a cell passes or not, a row is kept or not), never from
//! return codes and seeks, so it checks that the scanner's seeks skip nothing they should not.
//! Also: every generated filter prints to the filter language and parses back equal.

use std::collections::BTreeSet;

use bytes::Bytes;
use keel_cell::Cell;
use keel_region::filter::ColumnTest;
use keel_region::matcher::ReadQuery;
use keel_region::{
    Comparator, CompareOp, Durability, Engine, EngineOptions, FamilyOptions, Filter, ListOp, Scan,
};
use proptest::prelude::*;

const ROWS: [&str; 7] = ["a", "ab", "abc", "b", "ba", "c", "d"];
const QUALIFIERS: [&str; 4] = ["", "x", "xy", "y"];
const VALUES: [&str; 6] = ["0", "5", "9", "Ab", "xab", "a,b"];

fn put() -> impl Strategy<Value = (String, String, String, i64, String)> {
    (
        prop::sample::select(ROWS.to_vec()),
        prop::sample::select(vec!["f", "g"]),
        prop::sample::select(QUALIFIERS.to_vec()),
        1i64..5,
        prop::sample::select(VALUES.to_vec()),
    )
        .prop_map(|(r, f, q, ts, v)| (r.into(), f.into(), q.into(), ts, v.into()))
}

fn bytes_of(options: &[&'static str]) -> impl Strategy<Value = Bytes> {
    prop::sample::select(options.to_vec())
        .prop_map(|s: &'static str| Bytes::from_static(s.as_bytes()))
}

fn op() -> impl Strategy<Value = CompareOp> {
    prop::sample::select(vec![
        CompareOp::Less,
        CompareOp::LessOrEqual,
        CompareOp::Equal,
        CompareOp::NotEqual,
        CompareOp::GreaterOrEqual,
        CompareOp::Greater,
    ])
}

/// A comparison: binary and binaryprefix with any operator; regex and substring with = or !=.
fn comparison(operands: &'static [&'static str]) -> impl Strategy<Value = (CompareOp, Comparator)> {
    prop_oneof![
        (op(), bytes_of(operands)).prop_map(|(o, b)| (o, Comparator::Binary(b))),
        (op(), bytes_of(operands)).prop_map(|(o, b)| (o, Comparator::BinaryPrefix(b))),
        (
            prop::sample::select(vec![CompareOp::Equal, CompareOp::NotEqual]),
            prop::sample::select(vec!["^a", "b$", "x.", "[0-4]", "Ab", "."])
        )
            .prop_map(|(o, p)| (o, Comparator::regex(p).expect("pattern"))),
        (
            prop::sample::select(vec![CompareOp::Equal, CompareOp::NotEqual]),
            prop::sample::select(vec!["ab", "X", "5", ","])
        )
            .prop_map(|(o, s)| (o, Comparator::substring(s))),
    ]
}

/// Filters that decide cell by cell, with no state: the oracle is a predicate.
fn cell_predicate() -> impl Strategy<Value = Filter> {
    prop_oneof![
        comparison(&["x", "xy", "y", ""]).prop_map(|(o, c)| Filter::Qualifier(o, c)),
        comparison(&["f", "g"]).prop_map(|(o, c)| Filter::Family(o, c)),
        comparison(&["0", "5", "Ab", "x"]).prop_map(|(o, c)| Filter::Value(o, c)),
        bytes_of(&["x", "xy", "y", "z"]).prop_map(Filter::ColumnPrefix),
        prop::collection::btree_set(bytes_of(&["x", "xy", "y", "z"]), 0..3)
            .prop_map(|s| Filter::MultipleColumnPrefix(s.into_iter().collect())),
        (
            prop::option::of(bytes_of(&["x", "xy", "y"])),
            any::<bool>(),
            prop::option::of(bytes_of(&["x", "xy", "y", "z"])),
            any::<bool>()
        )
            .prop_map(
                |(min, min_inclusive, max, max_inclusive)| Filter::ColumnRange {
                    min,
                    min_inclusive,
                    max,
                    max_inclusive
                }
            ),
        prop::collection::btree_set(1i64..5, 1..3).prop_map(|s| Filter::Timestamps {
            timestamps: s.into_iter().collect(),
            can_hint: false
        }),
        any::<bool>().prop_map(|len_as_value| Filter::KeyOnly { len_as_value }),
    ]
}

/// Predicates that may also look at the row key.
fn predicate() -> impl Strategy<Value = Filter> {
    prop_oneof![
        3 => cell_predicate(),
        1 => comparison(&["a", "ab", "b", "c"]).prop_map(|(o, c)| Filter::Row(o, c)),
        1 => bytes_of(&["a", "ab", "b", "c", "e"]).prop_map(Filter::Prefix),
    ]
}

fn list_of(leaf: BoxedStrategy<Filter>) -> BoxedStrategy<Filter> {
    leaf.prop_recursive(2, 8, 3, |inner| {
        (
            prop::sample::select(vec![ListOp::All, ListOp::One]),
            prop::collection::vec(inner, 2..4),
        )
            .prop_map(|(op, filters)| Filter::List(op, filters))
    })
    .boxed()
}

fn column_test() -> impl Strategy<Value = ColumnTest> {
    (
        bytes_of(&["f", "g"]),
        bytes_of(&["x", "y", ""]),
        comparison(&["0", "5", "Ab"]),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(
            |(family, qualifier, (op, comparator), filter_if_missing, latest_only)| ColumnTest {
                family,
                qualifier,
                op,
                comparator,
                filter_if_missing,
                latest_only,
            },
        )
}

/// Filters with state, run alone.
fn stateful() -> impl Strategy<Value = Filter> {
    prop_oneof![
        Just(Filter::FirstKeyOnly),
        (0u64..4).prop_map(Filter::Page),
        (0u32..3, 0u32..3).prop_map(|(limit, offset)| Filter::ColumnPagination { limit, offset }),
        (0u32..4).prop_map(Filter::ColumnCountGet),
        bytes_of(&["a", "ab", "b", "bb", "d"]).prop_map(Filter::InclusiveStop),
        column_test().prop_map(Filter::SingleColumnValue),
        column_test().prop_map(Filter::SingleColumnValueExclude),
        (
            bytes_of(&["f", "g"]),
            bytes_of(&["x", "y"]),
            any::<bool>(),
            prop::option::of(comparison(&["0", "5"]))
        )
            .prop_map(
                |(family, qualifier, drop, compare)| Filter::DependentColumn {
                    family,
                    qualifier,
                    drop,
                    compare
                }
            ),
        (
            bytes_of(&["f", "g"]),
            bytes_of(&["x", "y"]),
            comparison(&["0", "5", "Ab"])
        )
            .prop_map(
                |(family, qualifier, (op, comparator))| Filter::ColumnValue {
                    family,
                    qualifier,
                    op,
                    comparator
                }
            ),
    ]
}

fn any_filter() -> impl Strategy<Value = Filter> {
    let cells = list_of(cell_predicate().boxed());
    prop_oneof![
        3 => list_of(predicate().boxed()),
        1 => cells.clone().prop_map(|f| Filter::Skip(Box::new(f))),
        1 => cells.prop_map(|f| Filter::WhileMatch(Box::new(f))),
        2 => stateful(),
    ]
}

// ---- the oracle, from the documented semantics ----

fn passes(op: CompareOp, c: &Comparator, bytes: &[u8]) -> bool {
    // "cell op operand" (CompareFilter), with the comparators' documented meanings.
    let text = String::from_utf8_lossy(bytes);
    match c {
        Comparator::Binary(o) => cmp_op(op, bytes.cmp(&o[..])),
        Comparator::BinaryPrefix(o) => {
            let n = o.len().min(bytes.len());
            cmp_op(op, bytes[..n].cmp(&o[..n]).then(n.cmp(&o.len())))
        }
        Comparator::Regex(r) => {
            let found = regex::Regex::new(&format!("(?s){}", r.pattern()))
                .expect("pattern")
                .is_match(&text);
            (op == CompareOp::Equal) == found
        }
        Comparator::Substring(s) => {
            let found = text.to_lowercase().contains(s.as_str());
            (op == CompareOp::Equal) == found
        }
    }
}

fn cmp_op(op: CompareOp, cell_vs_operand: std::cmp::Ordering) -> bool {
    match op {
        CompareOp::Less => cell_vs_operand.is_lt(),
        CompareOp::LessOrEqual => cell_vs_operand.is_le(),
        CompareOp::Equal => cell_vs_operand.is_eq(),
        CompareOp::NotEqual => cell_vs_operand.is_ne(),
        CompareOp::GreaterOrEqual => cell_vs_operand.is_ge(),
        CompareOp::Greater => cell_vs_operand.is_gt(),
        CompareOp::NoOp => false,
    }
}

/// Whether a stateless predicate passes `cell`.
fn pass(f: &Filter, cell: &Cell) -> bool {
    let q = cell.qualifier();
    match f {
        Filter::Row(o, c) => passes(*o, c, cell.row()),
        Filter::Prefix(p) => cell.row().starts_with(p),
        Filter::Family(o, c) => cell.family().is_empty() || passes(*o, c, cell.family()),
        Filter::Qualifier(o, c) => q.is_empty() || passes(*o, c, q),
        Filter::Value(o, c) => passes(*o, c, cell.value()),
        Filter::ColumnPrefix(p) => q.starts_with(p),
        Filter::MultipleColumnPrefix(ps) => ps.is_empty() || ps.iter().any(|p| q.starts_with(p)),
        Filter::ColumnRange {
            min,
            min_inclusive,
            max,
            max_inclusive,
        } => {
            let above = min
                .as_ref()
                .is_none_or(|m| q > &m[..] || (*min_inclusive && q == &m[..]));
            let below = max
                .as_ref()
                .is_none_or(|m| q < &m[..] || (*max_inclusive && q == &m[..]));
            above && below
        }
        Filter::Timestamps { timestamps, .. } => timestamps.contains(&cell.timestamp()),
        Filter::KeyOnly { .. } => true,
        Filter::List(ListOp::All, fs) => fs.iter().all(|f| pass(f, cell)),
        Filter::List(ListOp::One, fs) => fs.iter().any(|f| pass(f, cell)),
        other => unreachable!("not a predicate: {other:?}"),
    }
}

/// A passing cell as the filter returns it: KeyOnlyFilter's transform, through every list
/// member that included the cell.
fn transform(f: &Filter, cell: Cell) -> Cell {
    match f {
        Filter::KeyOnly { len_as_value } => {
            let value = if *len_as_value {
                Bytes::copy_from_slice(&(cell.value().len() as u32).to_be_bytes())
            } else {
                Bytes::new()
            };
            let (key, _) = cell.into_parts();
            Cell::from_parts(key, value)
        }
        Filter::List(_, fs) => fs
            .iter()
            .filter(|f| pass(f, &cell))
            .fold(cell.clone(), |c, f| transform(f, c)),
        Filter::Skip(inner) | Filter::WhileMatch(inner) => transform(inner, cell),
        _ => cell,
    }
}

/// Distinct columns of a row, in order, with their newest version.
fn columns(row: &[Cell]) -> Vec<Cell> {
    let mut out: Vec<Cell> = Vec::new();
    for c in row {
        if out
            .last()
            .is_none_or(|l| l.family() != c.family() || l.qualifier() != c.qualifier())
        {
            out.push(c.clone());
        }
    }
    out
}

fn is_column(c: &Cell, family: &[u8], qualifier: &[u8]) -> bool {
    c.family() == family && c.qualifier() == qualifier
}

/// The filtered scan, from the unfiltered one (rows in scan order).
fn oracle(filter: &Filter, rows: &[Vec<Cell>], reversed: bool) -> Vec<Vec<Cell>> {
    let mut out = Vec::new();
    match filter {
        Filter::Skip(p) => {
            for row in rows {
                if row.iter().all(|c| pass(p, c)) {
                    out.push(row.iter().map(|c| transform(p, c.clone())).collect());
                }
            }
        }
        Filter::WhileMatch(p) => {
            for row in rows {
                let kept: Vec<Cell> = row.iter().take_while(|c| pass(p, c)).cloned().collect();
                let whole = kept.len() == row.len();
                if !kept.is_empty() {
                    out.push(kept.into_iter().map(|c| transform(p, c)).collect());
                }
                if !whole {
                    break;
                }
            }
        }
        Filter::FirstKeyOnly => {
            out = rows.iter().map(|r| vec![r[0].clone()]).collect();
        }
        Filter::Page(n) => out = rows.iter().take(*n as usize).cloned().collect(),
        Filter::ColumnPagination { limit, offset } => {
            for row in rows {
                let cols: Vec<Cell> = columns(row)
                    .into_iter()
                    .skip(*offset as usize)
                    .take(*limit as usize)
                    .collect();
                if !cols.is_empty() {
                    out.push(cols);
                }
            }
        }
        Filter::ColumnCountGet(n) => {
            for row in rows {
                let cols = columns(row);
                let wide = cols.len() > *n as usize;
                let kept: Vec<Cell> = cols.into_iter().take(*n as usize).collect();
                if !kept.is_empty() {
                    out.push(kept);
                }
                if wide {
                    break;
                }
            }
        }
        Filter::InclusiveStop(stop) => {
            for row in rows {
                let r = row[0].row();
                if (!reversed && r > stop) || (reversed && r < stop) {
                    break;
                }
                out.push(row.clone());
            }
        }
        Filter::SingleColumnValue(t) | Filter::SingleColumnValueExclude(t) => {
            for row in rows {
                let versions: Vec<&Cell> = row
                    .iter()
                    .filter(|c| is_column(c, &t.family, &t.qualifier))
                    .collect();
                let keep = match versions.first() {
                    None => !t.filter_if_missing,
                    Some(latest) if t.latest_only => passes(t.op, &t.comparator, latest.value()),
                    Some(_) => versions
                        .iter()
                        .any(|c| passes(t.op, &t.comparator, c.value())),
                };
                if keep {
                    let exclude = matches!(filter, Filter::SingleColumnValueExclude(_));
                    let cells: Vec<Cell> = row
                        .iter()
                        .filter(|c| !exclude || !is_column(c, &t.family, &t.qualifier))
                        .cloned()
                        .collect();
                    if !cells.is_empty() {
                        out.push(cells);
                    }
                }
            }
        }
        Filter::DependentColumn {
            family,
            qualifier,
            drop,
            compare,
        } => {
            for row in rows {
                let reference = |c: &Cell| is_column(c, family, qualifier);
                let counts = |c: &Cell| {
                    compare
                        .as_ref()
                        .is_none_or(|(o, cmp)| passes(*o, cmp, c.value()))
                };
                let stamps: BTreeSet<i64> = row
                    .iter()
                    .filter(|c| reference(c) && counts(c))
                    .map(Cell::timestamp)
                    .collect();
                let cells: Vec<Cell> = row
                    .iter()
                    .filter(|c| stamps.contains(&c.timestamp()))
                    .filter(|c| !reference(c) || (counts(c) && !drop))
                    .cloned()
                    .collect();
                if !cells.is_empty() {
                    out.push(cells);
                }
            }
        }
        Filter::ColumnValue {
            family,
            qualifier,
            op,
            comparator,
        } => {
            for row in rows {
                let cells: Vec<Cell> = row
                    .iter()
                    .filter(|c| {
                        is_column(c, family, qualifier) && passes(*op, comparator, c.value())
                    })
                    .cloned()
                    .collect();
                if !cells.is_empty() {
                    out.push(cells);
                }
            }
        }
        predicate => {
            for row in rows {
                let cells: Vec<Cell> = row
                    .iter()
                    .filter(|c| pass(predicate, c))
                    .map(|c| transform(predicate, c.clone()))
                    .collect();
                if !cells.is_empty() {
                    out.push(cells);
                }
            }
        }
    }
    out
}

fn shown(rows: &[Vec<Cell>]) -> Vec<Vec<String>> {
    rows.iter()
        .map(|r| {
            r.iter()
                .map(|c| {
                    format!(
                        "{}/{}:{}/{}={:?}",
                        String::from_utf8_lossy(c.row()),
                        String::from_utf8_lossy(c.family()),
                        String::from_utf8_lossy(c.qualifier()),
                        c.timestamp(),
                        c.value()
                    )
                })
                .collect()
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(120))]

    #[test]
    fn filtered_scans_match_the_documented_semantics(
        puts in prop::collection::vec(put(), 1..40),
        flush_at in 0usize..40,
        filters in prop::collection::vec(any_filter(), 1..6),
        reversed in any::<bool>(),
        versions in 1u32..4,
        one_family in any::<bool>(),
    ) {
        let dir = tempfile::tempdir().expect("tempdir");
        let server = Engine::open(dir.path(), EngineOptions::default()).expect("open");
        let families = ["f", "g"]
            .into_iter()
            .map(|n| {
                let mut f = FamilyOptions::new(n);
                f.rules.max_versions = 3;
                f
            })
            .collect();
        let t = server.create_table("t", families).expect("create");
        for (i, (r, f, q, ts, v)) in puts.iter().enumerate() {
            let cell = Cell::put(
                Bytes::copy_from_slice(r.as_bytes()),
                Bytes::copy_from_slice(f.as_bytes()),
                Bytes::copy_from_slice(q.as_bytes()),
                *ts,
                Bytes::copy_from_slice(v.as_bytes()),
            )
            .expect("cell");
            t.mutate(vec![cell], Durability::SkipWal).expect("put");
            if i == flush_at {
                t.flush().expect("flush");
            }
        }
        let base = Scan {
            reversed,
            query: ReadQuery {
                max_versions: versions,
                // A scan of one family merges one store: a row-level step is then a seek to
                // the end of the row rather than past the family.
                columns: one_family.then(|| vec![(Bytes::from_static(b"f"), None)]),
                ..ReadQuery::latest(0, i64::MAX / 2)
            },
            ..Scan::all(i64::MAX / 2)
        };
        let unfiltered = t.scan(&base).expect("scan");
        for filter in &filters {
            let got = t
                .scan(&Scan { filter: Some(filter.clone()), ..base.clone() })
                .expect("filtered scan");
            let want = oracle(filter, &unfiltered, reversed);
            prop_assert_eq!(shown(&got), shown(&want), "{}", filter);
        }
    }

    #[test]
    fn every_filter_prints_and_parses_back(filter in any_filter()) {
        let text = filter.to_filter_string();
        let back = Filter::parse(&text);
        prop_assert_eq!(back.as_ref(), Ok(&filter), "{}", String::from_utf8_lossy(&text));
    }
}
