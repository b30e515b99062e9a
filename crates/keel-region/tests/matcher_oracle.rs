//! The streaming matcher against a declarative oracle of HBase's read semantics: for random
//! rows of puts and delete markers (random timestamps, sequence ids, families, qualifiers) and
//! random queries (read point, time range, versions, TTL, min versions, columns), the matcher
//! admits exactly the puts the oracle's set-based rules select. The oracle states each rule over
//! whole sets of cells, not as a running state, so tracker resets and ordering are checked too.

use std::collections::{BTreeMap, HashMap};

use bytes::Bytes;
use keel_cell::{Cell, CellKey, CellType};
use keel_region::matcher::{FamilyRules, Matcher, ReadQuery, TimeRange};
use proptest::prelude::*;

fn cell_strategy() -> impl Strategy<Value = Cell> {
    (
        prop::sample::select(vec!["r1", "r2"]),
        prop::sample::select(vec!["f", "g"]),
        prop::sample::select(vec!["", "x", "y"]),
        0i64..7,
        prop::sample::select(vec![
            CellType::Put,
            CellType::Put,
            CellType::Put,
            CellType::Delete,
            CellType::DeleteColumn,
            CellType::DeleteFamily,
            CellType::DeleteFamilyVersion,
        ]),
        1u64..9,
    )
        .prop_map(|(row, family, qualifier, ts, ty, seq)| {
            // HBase writes family markers with an empty qualifier.
            let qualifier = match ty {
                CellType::DeleteFamily | CellType::DeleteFamilyVersion => "",
                _ => qualifier,
            };
            Cell::builder(row, family)
                .qualifier(qualifier)
                .timestamp(ts)
                .cell_type(ty)
                .sequence_id(seq)
                .value(format!("{row}/{family}:{qualifier}@{ts}#{seq}"))
                .build()
                .expect("cell")
        })
}

#[derive(Debug, Clone)]
struct Case {
    query: ReadQuery,
    rules: FamilyRules,
}

fn case_strategy() -> impl Strategy<Value = Case> {
    (
        0u64..10,
        0i64..4,
        1i64..8,
        1u32..4,
        1u32..4,
        0u32..3,
        prop::option::of(1i64..6),
        prop::option::of(prop::sample::select(vec![
            vec![("f", Some("x"))],
            vec![("g", None)],
            vec![("f", Some("")), ("g", Some("y"))],
        ])),
    )
        .prop_map(
            |(
                read_point,
                min,
                span,
                query_versions,
                family_versions,
                min_versions,
                ttl,
                columns,
            )| Case {
                query: ReadQuery {
                    read_point,
                    time_range: TimeRange {
                        min,
                        max: min + span,
                    },
                    max_versions: query_versions,
                    now_ms: 7,
                    columns: columns.map(|cols| {
                        cols.into_iter()
                            .map(|(f, q)| (Bytes::from(f), q.map(Bytes::from)))
                            .collect()
                    }),
                },
                rules: FamilyRules {
                    max_versions: family_versions,
                    min_versions,
                    ttl_ms: ttl,
                },
            },
        )
}

/// The oracle: a put is returned iff every rule, stated over sets, holds.
fn oracle(cells: &[Cell], case: &Case) -> Vec<Cell> {
    let q = &case.query;
    let visible: Vec<&Cell> = cells
        .iter()
        .filter(|c| c.sequence_id() <= q.read_point)
        .collect();
    let same_group = |a: &Cell, b: &Cell| a.row() == b.row() && a.family() == b.family();
    let masked = |p: &Cell| {
        visible.iter().any(|m| {
            same_group(m, p)
                && m.timestamp() >= q.time_range.min
                && match m.cell_type() {
                    CellType::DeleteFamily => p.timestamp() <= m.timestamp(),
                    CellType::DeleteFamilyVersion => p.timestamp() == m.timestamp(),
                    CellType::DeleteColumn => {
                        m.qualifier() == p.qualifier() && p.timestamp() <= m.timestamp()
                    }
                    CellType::Delete => {
                        m.qualifier() == p.qualifier() && p.timestamp() == m.timestamp()
                    }
                    _ => false,
                }
        })
    };
    let wanted = |p: &Cell| match &q.columns {
        None => true,
        Some(cols) => cols.iter().any(|(f, qual)| {
            f == p.family() && qual.as_ref().is_none_or(|qual| qual == p.qualifier())
        }),
    };
    // Candidate versions: visible, unmasked, in range puts; per column and timestamp, the one
    // with the highest sequence id.
    let mut winners: BTreeMap<(Bytes, Bytes, Bytes, i64), &Cell> = BTreeMap::new();
    for p in &visible {
        if p.cell_type() != CellType::Put || masked(p) || !q.time_range.contains(p.timestamp()) {
            continue;
        }
        let key = (
            p.row().clone(),
            p.family().clone(),
            p.qualifier().clone(),
            p.timestamp(),
        );
        let better = winners
            .get(&key)
            .is_none_or(|w| p.sequence_id() > w.sequence_id());
        if better {
            winners.insert(key, p);
        }
    }
    let max = q.max_versions.min(case.rules.max_versions);
    let mut out: Vec<Cell> = winners
        .iter()
        .filter(|((row, family, qualifier, ts), p)| {
            let rank = winners
                .keys()
                .filter(|(r, f, ql, t)| r == row && f == family && ql == qualifier && t >= ts)
                .count() as u32;
            let expired = case.rules.ttl_ms.is_some_and(|ttl| *ts < q.now_ms - ttl);
            wanted(p) && rank <= max && (!expired || rank <= case.rules.min_versions)
        })
        .map(|(_, p)| (*p).clone())
        .collect();
    out.sort_by(|a, b| a.key().cmp(b.key()));
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn matcher_admits_exactly_what_the_oracle_selects(
        cells in prop::collection::vec(cell_strategy(), 0..40),
        case in case_strategy(),
    ) {
        let by_key: BTreeMap<CellKey, Cell> = cells.into_iter().map(|c| (c.key().clone(), c)).collect();
        let cells: Vec<Cell> = by_key.into_values().collect();
        let mut families = HashMap::new();
        families.insert(Bytes::from("f"), case.rules);
        families.insert(Bytes::from("g"), case.rules);
        let mut matcher = Matcher::new(case.query.clone(), families);
        let admitted: Vec<Cell> = cells.iter().filter(|c| matcher.admit(c)).cloned().collect();
        prop_assert_eq!(admitted, oracle(&cells, &case));
    }
}
