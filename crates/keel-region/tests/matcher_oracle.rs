//! The streaming matcher against a declarative oracle of HBase's read semantics: for random
//! rows of puts and delete markers (random timestamps, sequence ids, families, qualifiers) and
//! random queries (read point, time range, versions, TTL, min versions, columns), the matcher
//! admits exactly the puts the oracle's set-based rules select. The oracle states each rule over
//! whole sets of cells, not as a running state, so tracker resets and ordering are checked too.

mod common;

use std::collections::{BTreeMap, HashMap};

use bytes::Bytes;
use keel_cell::{Cell, CellKey};
use keel_region::matcher::{FamilyRules, Matcher, ReadQuery, TimeRange};
use proptest::prelude::*;

fn cell_strategy() -> impl Strategy<Value = Cell> {
    common::cell_strategy(0..7)
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
        prop_assert_eq!(admitted, common::oracle(&cells, &case.query, &case.rules));
    }
}
