//! Unit tests of the matcher: each delete kind, versions, min versions with TTL, time ranges,
//! read points, duplicate timestamps and column selection, on hand-built rows.

use std::collections::HashMap;

use bytes::Bytes;
use keel_cell::{Cell, CellType};

use crate::matcher::{FamilyRules, Matcher, ReadQuery, TimeRange};

fn cell(q: &str, ts: i64, ty: CellType, seq: u64) -> Cell {
    Cell::builder("r", "f")
        .qualifier(q.to_string())
        .timestamp(ts)
        .cell_type(ty)
        .sequence_id(seq)
        .value(format!("{q}@{ts}#{seq}"))
        .build()
        .unwrap()
}

fn put(q: &str, ts: i64) -> Cell {
    cell(q, ts, CellType::Put, 1)
}

/// Sorts `cells` and returns the values the matcher admits.
fn read(mut cells: Vec<Cell>, query: ReadQuery, rules: FamilyRules) -> Vec<String> {
    cells.sort_by(|a, b| a.key().cmp(b.key()));
    let mut families = HashMap::new();
    families.insert(Bytes::from("f"), rules);
    let mut m = Matcher::new(query, families);
    cells
        .iter()
        .filter(|c| m.admit(c))
        .map(|c| String::from_utf8(c.value().to_vec()).unwrap())
        .collect()
}

fn all_versions(read_point: u64) -> ReadQuery {
    ReadQuery {
        max_versions: 10,
        ..ReadQuery::latest(read_point, 1_000)
    }
}

fn ten_versions() -> FamilyRules {
    FamilyRules {
        max_versions: 10,
        ..FamilyRules::default()
    }
}

#[test]
fn each_delete_kind_masks_what_hbase_says() {
    let base = vec![
        put("a", 1),
        put("a", 2),
        put("a", 3),
        put("b", 2),
        put("b", 3),
    ];
    let q = || all_versions(u64::MAX);
    let with = |extra: Cell| {
        let mut cells = base.clone();
        cells.push(extra);
        read(cells, q(), ten_versions())
    };
    assert_eq!(
        read(base.clone(), q(), ten_versions()),
        ["a@3#1", "a@2#1", "a@1#1", "b@3#1", "b@2#1"]
    );
    // Delete: exactly one version of one column.
    assert_eq!(
        with(cell("a", 2, CellType::Delete, 9)),
        ["a@3#1", "a@1#1", "b@3#1", "b@2#1"]
    );
    // DeleteColumn: every version ≤ its timestamp in one column.
    assert_eq!(
        with(cell("a", 2, CellType::DeleteColumn, 9)),
        ["a@3#1", "b@3#1", "b@2#1"]
    );
    // DeleteFamily: every column, versions ≤ its timestamp.
    assert_eq!(
        with(cell("", 2, CellType::DeleteFamily, 9)),
        ["a@3#1", "b@3#1"]
    );
    // DeleteFamilyVersion: every column, the version equal to its timestamp.
    assert_eq!(
        with(cell("", 3, CellType::DeleteFamilyVersion, 9)),
        ["a@2#1", "a@1#1", "b@2#1"]
    );
}

#[test]
fn a_delete_masks_older_timestamps_even_when_the_put_came_later() {
    // The put arrived after the marker (higher sequence id) with an older timestamp: hidden.
    let cells = vec![
        cell("a", 5, CellType::DeleteColumn, 1),
        cell("a", 4, CellType::Put, 2),
    ];
    assert!(read(cells, all_versions(u64::MAX), ten_versions()).is_empty());
}

#[test]
fn the_read_point_hides_cells_and_markers_written_after_it() {
    let cells = vec![
        cell("a", 5, CellType::Put, 3),
        cell("a", 4, CellType::Put, 1),
        cell("a", 6, CellType::DeleteColumn, 4),
    ];
    assert!(read(cells.clone(), all_versions(4), ten_versions()).is_empty());
    assert_eq!(
        read(cells.clone(), all_versions(3), ten_versions()),
        ["a@5#3", "a@4#1"]
    );
    assert_eq!(read(cells, all_versions(2), ten_versions()), ["a@4#1"]);
}

#[test]
fn the_newer_of_two_puts_with_one_timestamp_wins() {
    let cells = vec![
        cell("a", 5, CellType::Put, 1),
        cell("a", 5, CellType::Put, 2),
    ];
    assert_eq!(
        read(cells, all_versions(u64::MAX), ten_versions()),
        ["a@5#2"]
    );
}

#[test]
fn versions_are_capped_by_query_and_family() {
    let cells = vec![put("a", 1), put("a", 2), put("a", 3)];
    let family_two = FamilyRules {
        max_versions: 2,
        ..FamilyRules::default()
    };
    assert_eq!(
        read(cells.clone(), all_versions(u64::MAX), family_two),
        ["a@3#1", "a@2#1"]
    );
    assert_eq!(
        read(cells, ReadQuery::latest(u64::MAX, 0), ten_versions()),
        ["a@3#1"]
    );
}

#[test]
fn each_family_keeps_its_own_version_rules_across_rows() {
    // Rows of two families with different caps, read in order as a scan reads them: the rules
    // follow the family from row to row and back.
    let mut cells = Vec::new();
    for row in ["r1", "r2", "r3"] {
        for family in ["f", "g"] {
            for ts in 1..=3 {
                cells.push(
                    Cell::builder(row, family)
                        .qualifier("q")
                        .timestamp(ts)
                        .value(format!("{row}{family}{ts}"))
                        .build()
                        .unwrap(),
                );
            }
        }
    }
    cells.sort_by(|a, b| a.key().cmp(b.key()));
    let mut families = HashMap::new();
    families.insert(Bytes::from("f"), FamilyRules::default());
    families.insert(Bytes::from("g"), ten_versions());
    let mut m = Matcher::new(all_versions(u64::MAX), families);
    let admitted: Vec<String> = cells
        .iter()
        .filter(|c| m.admit(c))
        .map(|c| String::from_utf8(c.value().to_vec()).unwrap())
        .collect();
    assert_eq!(
        admitted,
        [
            "r1f3", "r1g3", "r1g2", "r1g1", "r2f3", "r2g3", "r2g2", "r2g1", "r3f3", "r3g3", "r3g2",
            "r3g1"
        ]
    );
}

#[test]
fn time_ranges_skip_newer_versions_uncounted_and_end_at_older_ones() {
    let cells = vec![put("a", 1), put("a", 2), put("a", 3), put("a", 4)];
    let query = ReadQuery {
        time_range: TimeRange { min: 2, max: 4 },
        ..ReadQuery::latest(u64::MAX, 0)
    };
    // ts 4 is outside (and not counted), so the one version returned is ts 3.
    assert_eq!(read(cells, query, ten_versions()), ["a@3#1"]);
}

#[test]
fn ttl_expires_versions_but_min_versions_keeps_some() {
    let cells = vec![put("a", 100), put("a", 200), put("a", 900)];
    let rules = FamilyRules {
        max_versions: 10,
        min_versions: 0,
        ttl_ms: Some(500),
    };
    // now = 1000, TTL 500: only ts ≥ 500 live.
    assert_eq!(
        read(cells.clone(), all_versions(u64::MAX), rules),
        ["a@900#1"]
    );
    let keep_two = FamilyRules {
        min_versions: 2,
        ..rules
    };
    assert_eq!(
        read(cells.clone(), all_versions(u64::MAX), keep_two),
        ["a@900#1", "a@200#1"]
    );
    let all_expired = vec![put("a", 100), put("a", 200)];
    let keep_one = FamilyRules {
        min_versions: 1,
        ..rules
    };
    assert_eq!(
        read(all_expired, all_versions(u64::MAX), keep_one),
        ["a@200#1"]
    );
}

#[test]
fn column_selection_returns_only_the_asked_columns() {
    let cells = vec![put("a", 1), put("b", 1), put("c", 1)];
    let query = ReadQuery {
        columns: Some(vec![(Bytes::from("f"), Some(Bytes::from("b")))]),
        ..ReadQuery::latest(u64::MAX, 0)
    };
    assert_eq!(read(cells.clone(), query, ten_versions()), ["b@1#1"]);
    let whole_family = ReadQuery {
        columns: Some(vec![(Bytes::from("f"), None)]),
        ..ReadQuery::latest(u64::MAX, 0)
    };
    assert_eq!(read(cells.clone(), whole_family, ten_versions()).len(), 3);
    let other_family = ReadQuery {
        columns: Some(vec![(Bytes::from("g"), None)]),
        ..ReadQuery::latest(u64::MAX, 0)
    };
    assert!(read(cells, other_family, ten_versions()).is_empty());
}
