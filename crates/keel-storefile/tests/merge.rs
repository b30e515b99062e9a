//! `MergeScanner` against an oracle: up to five in-memory sources drawn from a tiny key space,
//! so that the same key is often in several sources, each cell's value naming its source.
//! The oracle is every (cell, source) sorted by key and, on equal keys, newer (higher) source
//! first — `KeyValueHeap`'s order. Random walks of `next`, `next_into`, `skip`, `seek` and
//! `reseek` must land on the oracle's cell every step; `seek_before_row` and the rows walked
//! backwards must match it too.

use bytes::Bytes;
use keel_cell::{Cell, CellKey, RunRule, Take};
use keel_storefile::{KeyValueScanner, MergeScanner, VecScanner};
use proptest::prelude::*;

/// A cell's coordinates: row, qualifier, timestamp.
type Coordinates = (&'static str, &'static str, i64);

fn cell_strategy() -> impl Strategy<Value = Coordinates> {
    (
        prop::sample::select(vec!["a", "b", "c"]),
        prop::sample::select(vec!["q", "r"]),
        0i64..3,
    )
}

fn key_strategy() -> impl Strategy<Value = CellKey> {
    (
        prop::sample::select(vec!["", "a", "b", "c", "d"]),
        prop::sample::select(vec![None, Some("q"), Some("r")]),
        0i64..3,
        any::<bool>(),
    )
        .prop_map(|(row, qualifier, ts, last)| match (qualifier, last) {
            (None, false) => CellKey::first_on_row(Bytes::from(row)),
            (Some(_), _) if row.is_empty() => CellKey::first_on_row(Bytes::new()),
            (None, true) => CellKey::last_on_row(Bytes::from(row)),
            (Some(q), _) => Cell::builder(row, "f")
                .qualifier(q)
                .timestamp(ts)
                .build()
                .expect("test setup")
                .key()
                .clone(),
        })
}

#[derive(Debug, Clone)]
enum Step {
    Next,
    /// `next_into`, keeping the cell.
    NextInto,
    /// `skip`, dropping it.
    Skip,
    Seek(CellKey),
    Reseek(CellKey),
    /// `take_row` of the current cell's row, deciding its cells in this order, round again.
    TakeRow(Vec<Take>),
}

/// A keep whose run rule admits any next column: sources that cannot apply a rule without
/// reading the cells (these) keep just the one cell, as with `Keep`.
const KEEP_ANY_RUN: Take = Take::KeepRun(RunRule {
    read_point: u64::MAX,
    min_ts: i64::MIN,
    max_ts: i64::MAX,
});

fn step_strategy() -> impl Strategy<Value = Step> {
    prop_oneof![
        2 => Just(Step::Next),
        1 => Just(Step::NextInto),
        1 => Just(Step::Skip),
        1 => key_strategy().prop_map(Step::Seek),
        2 => key_strategy().prop_map(Step::Reseek),
        2 => prop::collection::vec(
            prop::sample::select(vec![Take::Keep, KEEP_ANY_RUN, Take::Pass, Take::Stop]),
            1..6,
        )
        .prop_map(Step::TakeRow),
    ]
}

/// Each source's cells (sorted, one per key) with its index as the value, and the oracle.
fn setup(sources: Vec<Vec<Coordinates>>) -> (Vec<Vec<Cell>>, Vec<Cell>) {
    let sources: Vec<Vec<Cell>> = sources
        .into_iter()
        .enumerate()
        .map(|(i, cells)| {
            let mut cells: Vec<Cell> = cells
                .into_iter()
                .map(|(row, qualifier, ts)| {
                    Cell::builder(row, "f")
                        .qualifier(qualifier)
                        .timestamp(ts)
                        .value(vec![i as u8])
                        .build()
                        .expect("test setup")
                })
                .collect();
            cells.sort_by(|a, b| a.key().cmp(b.key()));
            cells.dedup_by(|a, b| a.key() == b.key());
            cells
        })
        .collect();
    let mut all: Vec<Cell> = sources.iter().flatten().cloned().collect();
    all.sort_by(|a, b| a.key().cmp(b.key()).then(b.value().cmp(a.value())));
    (sources, all)
}

fn merge_of(sources: &[Vec<Cell>], start: &CellKey) -> MergeScanner<'static> {
    let scanners: Vec<Box<dyn KeyValueScanner>> = sources
        .iter()
        .map(|cells| Box::new(VecScanner::new(cells.clone())) as Box<dyn KeyValueScanner>)
        .collect();
    MergeScanner::new(scanners, start).expect("test setup")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn steps_land_where_the_oracle_says(
        sources in prop::collection::vec(prop::collection::vec(cell_strategy(), 0..12), 1..6),
        start in key_strategy(),
        steps in prop::collection::vec(step_strategy(), 0..40),
    ) {
        let (sources, all) = setup(sources);
        let mut merge = merge_of(&sources, &start);
        let mut at = all.partition_point(|c| c.key() < &start);
        prop_assert_eq!(merge.peek(), all.get(at));
        for step in steps {
            match step {
                Step::Next => {
                    let cell = merge.next().expect("in memory");
                    prop_assert_eq!(cell.as_ref(), all.get(at));
                    at = (at + 1).min(all.len());
                }
                Step::NextInto => {
                    let mut out = vec![Cell::put("x", "f", "q", 0, "kept before").expect("test setup")];
                    merge.next_into(&mut out).expect("in memory");
                    prop_assert_eq!(out.get(1), all.get(at));
                    prop_assert_eq!(out.len(), 1 + usize::from(at < all.len()));
                    at = (at + 1).min(all.len());
                }
                Step::Skip => {
                    merge.skip().expect("in memory");
                    at = (at + 1).min(all.len());
                }
                Step::Seek(key) => {
                    merge.seek(&key).expect("in memory");
                    at = all.partition_point(|c| c.key() < &key);
                }
                Step::Reseek(key) => {
                    merge.reseek(&key).expect("in memory");
                    at = at.max(all.partition_point(|c| c.key() < &key));
                }
                Step::TakeRow(decisions) => {
                    let Some(row) = all.get(at).map(|c| c.row_bytes()) else {
                        continue;
                    };
                    // The oracle: the row's cells from `at` in order, up to the first `Stop`.
                    let (mut wanted, mut shown) = (Vec::new(), Vec::new());
                    while let Some(cell) = all.get(at).filter(|c| c.row() == &row[..]) {
                        let take = decisions[shown.len() % decisions.len()];
                        shown.push(cell.clone());
                        match take {
                            Take::Keep | Take::KeepRun(_) => wanted.push(cell.clone()),
                            Take::Pass => {}
                            Take::Stop => break,
                        }
                        at += 1;
                    }
                    let (mut out, mut seen) = (Vec::new(), Vec::<Cell>::new());
                    merge
                        .take_row(&row, &mut out, &mut |cell, kept| {
                            let take = decisions[seen.len() % decisions.len()];
                            let kept_before = wanted.iter().filter(|w| seen.contains(w)).count();
                            assert_eq!(kept.len(), kept_before, "the results kept so far");
                            seen.push(cell.clone());
                            take
                        })
                        .expect("in memory");
                    prop_assert_eq!(seen, shown);
                    prop_assert_eq!(out, wanted);
                }
            }
            prop_assert_eq!(merge.peek(), all.get(at));
        }
    }

    #[test]
    fn rows_walked_backwards_match_the_oracle(
        sources in prop::collection::vec(prop::collection::vec(cell_strategy(), 0..12), 1..6),
    ) {
        let (sources, all) = setup(sources);
        let mut merge = merge_of(&sources, &CellKey::first_on_row(Bytes::new()));
        merge.seek_before_row(None).expect("in memory");
        let mut walked: Vec<Cell> = Vec::new();
        while let Some(first) = merge.peek() {
            let row = first.row_bytes();
            let mut cells = Vec::new();
            while merge.peek().is_some_and(|c| c.row() == row) {
                cells.extend(merge.next().expect("in memory"));
            }
            walked.splice(0..0, cells);
            merge.seek_before_row(Some(&row)).expect("in memory");
        }
        prop_assert_eq!(walked, all);
    }
}
