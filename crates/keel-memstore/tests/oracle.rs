//! keel-memstore against a `BTreeMap` oracle: random adds, in-memory flushes, rollbacks,
//! snapshots, clears and scans — forwards (to the end or to a key), cell by cell and row by
//! row; backwards row by row as a reversed scan moves; and one row as a get reads it (through
//! the segments' row filters) — at random read points, with MSLAB on (tiny chunks, so chunk
//! turnover happens) and off.

use std::collections::BTreeMap;

use bytes::Bytes;
use keel_cell::{Cell, CellKey, CellType, RunRule, Take};
use keel_memstore::{MemStore, MemStoreOptions, MemStoreScanner};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    Add(Vec<Cell>),
    /// An in-memory flush: the active cells join the flat pipeline.
    Flatten,
    /// Takes back the cells at these places among those held outside the snapshot.
    Rollback(Vec<prop::sample::Index>),
    Snapshot,
    Clear,
    Scan {
        read_point: u64,
        from: Option<CellKey>,
        rule: RunRule,
    },
    /// A reversed scan's moves: from before `from`'s row (the last row with `None`), each row
    /// read forward, then the row before it.
    Backward {
        read_point: u64,
        from: Option<CellKey>,
    },
    /// A scan that reads `take` cells, then reseeks to `to` (forward only: a key at or before
    /// where it stands leaves it there) and reads the rest.
    Reseek {
        read_point: u64,
        take: usize,
        to: CellKey,
    },
    /// A scan up to `to` (excluded), which may fall inside a row: read cell by cell and row by
    /// row.
    Bounded {
        read_point: u64,
        to: CellKey,
        rule: RunRule,
    },
    /// A get's read of one row (rows `r0`..`r7`: some never written).
    Row {
        read_point: u64,
        row: u8,
        rule: RunRule,
    },
}

/// A reader's run rule ([`take_rows_run`]): its read point may differ from the scanner's.
fn run_rule() -> impl Strategy<Value = RunRule> {
    (0u64..14, 0i64..3, 1i64..5).prop_map(|(read_point, min_ts, max_ts)| RunRule {
        read_point,
        min_ts,
        max_ts,
    })
}

/// Cells of rows `r0`..`r5`, families `f` and `g` (mostly `f`), three qualifiers and four
/// timestamps; one in eight a `DeleteColumn` marker (the memstore stores markers as it stores
/// puts; a reader's run stops at them).
fn small_cell() -> impl Strategy<Value = Cell> {
    (
        0u8..6,
        prop::sample::select(vec!["f", "f", "f", "g"]),
        0u8..3,
        0i64..4,
        0u64..12,
        prop::collection::vec(any::<u8>(), 0..40),
        0u8..8,
    )
        .prop_map(
            |(row, family, qualifier, timestamp, sequence_id, value, kind)| {
                let kind = if kind == 0 {
                    CellType::DeleteColumn
                } else {
                    CellType::Put
                };
                let mut cell = Cell::builder(vec![b'r', row], family)
                    .qualifier(vec![b'q', qualifier])
                    .timestamp(timestamp)
                    .cell_type(kind)
                    .value(value)
                    .build()
                    .expect("valid cell");
                cell.set_sequence_id(sequence_id);
                cell
            },
        )
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => prop::collection::vec(small_cell(), 1..6).prop_map(Op::Add),
        1 => Just(Op::Flatten),
        1 => prop::collection::vec(any::<prop::sample::Index>(), 1..4).prop_map(Op::Rollback),
        1 => Just(Op::Snapshot),
        1 => Just(Op::Clear),
        2 => (0u64..14, prop::option::of(small_cell()), run_rule()).prop_map(
            |(read_point, from, rule)| Op::Scan {
                read_point,
                from: from.map(|cell| cell.key().clone()),
                rule,
            }
        ),
        2 => (0u64..14, 0usize..40, small_cell()).prop_map(|(read_point, take, to)| Op::Reseek {
            read_point,
            take,
            to: to.key().clone(),
        }),
        1 => (0u64..14, small_cell(), run_rule()).prop_map(|(read_point, to, rule)| {
            Op::Bounded {
                read_point,
                to: to.key().clone(),
                rule,
            }
        }),
        2 => (0u64..14, 0u8..8, run_rule()).prop_map(|(read_point, row, rule)| Op::Row {
            read_point,
            row,
            rule
        }),
        2 => (0u64..14, prop::option::of(small_cell())).prop_map(|(read_point, from)| Op::Backward {
            read_point,
            from: from.map(|cell| cell.key().clone()),
        }),
    ]
}

/// The oracle: cells of the active part, of the pipeline's segments (what in-memory flushes
/// froze, newest first) and of the pending snapshot, with the snapshot's counted cells and
/// bytes (a key in two places is one cell to a reader, the newest's, but counted in each until
/// a flattening merges them).
#[derive(Default)]
struct Oracle {
    active: BTreeMap<CellKey, Bytes>,
    pipeline: Vec<BTreeMap<CellKey, Bytes>>,
    snapshot: Option<BTreeMap<CellKey, Bytes>>,
    snapshot_counted: (u64, u64),
}

fn data_bytes(cells: &BTreeMap<CellKey, Bytes>) -> u64 {
    cells
        .iter()
        .map(|(k, v)| (k.row().len() + k.family().len() + k.qualifier().len() + v.len()) as u64)
        .sum()
}

impl Oracle {
    /// The pipeline's cells as a reader sees them: on a key in several segments, the newest's.
    fn pipeline_merged(&self) -> BTreeMap<CellKey, Bytes> {
        let mut merged = BTreeMap::new();
        for segment in self.pipeline.iter().rev() {
            merged.extend(segment.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        merged
    }

    /// The pipeline's cells and data bytes as the memstore counts them: each segment's.
    fn pipeline_counted(&self) -> (u64, u64) {
        self.pipeline
            .iter()
            .fold((0, 0), |(cells, bytes), segment| {
                (cells + segment.len() as u64, bytes + data_bytes(segment))
            })
    }

    fn visible(&self, read_point: u64, from: Option<&CellKey>) -> Vec<(CellKey, Bytes)> {
        let mut merged = self.snapshot.clone().unwrap_or_default();
        merged.extend(self.pipeline_merged());
        merged.extend(self.active.iter().map(|(k, v)| (k.clone(), v.clone())));
        merged
            .into_iter()
            .filter(|(key, _)| key.sequence_id() <= read_point)
            .filter(|(key, _)| from.is_none_or(|from| key >= from))
            .collect()
    }
}

fn run(ops: Vec<Op>, mslab: bool, limit: usize, copy: bool) -> Result<(), TestCaseError> {
    let memstore = MemStore::new(MemStoreOptions {
        mslab,
        chunk_size: 128,
        max_copied_cell: 48,
        pipeline_segments_limit: limit,
        copy_on_flatten: copy,
    });
    let mut oracle = Oracle::default();
    let mut pending = None;
    for op in ops {
        match op {
            Op::Add(cells) => {
                for cell in &cells {
                    oracle.active.insert(cell.key().clone(), cell.value_bytes());
                }
                memstore.add(cells);
            }
            Op::Flatten => {
                // Something to flatten exactly when the active part holds cells: the pipeline
                // never keeps more than `limit` segments, all flat, after a flattening.
                prop_assert_eq!(memstore.flatten(), !oracle.active.is_empty());
                if !oracle.active.is_empty() {
                    let active = std::mem::take(&mut oracle.active);
                    oracle.pipeline.insert(0, active);
                    if oracle.pipeline.len() > limit {
                        oracle.pipeline = vec![oracle.pipeline_merged()];
                    }
                }
            }
            Op::Rollback(places) => {
                let held: Vec<CellKey> = oracle
                    .active
                    .keys()
                    .chain(oracle.pipeline.iter().flat_map(BTreeMap::keys))
                    .cloned()
                    .collect();
                if held.is_empty() {
                    continue;
                }
                let cells: Vec<Cell> = places
                    .iter()
                    .map(|place| Cell::from_parts(place.get(&held).clone(), Bytes::new()))
                    .collect();
                let expected = cells
                    .iter()
                    .filter(|cell| {
                        // From the active part, else the newest pipeline segment holding it.
                        oracle.active.remove(cell.key()).is_some()
                            || oracle
                                .pipeline
                                .iter_mut()
                                .any(|segment| segment.remove(cell.key()).is_some())
                    })
                    .count();
                prop_assert_eq!(memstore.rollback(&cells), expected);
            }
            Op::Snapshot => {
                let snapshot = memstore.snapshot();
                if oracle.snapshot.is_none() {
                    let (cells, bytes) = oracle.pipeline_counted();
                    let active = std::mem::take(&mut oracle.active);
                    let mut frozen = oracle.pipeline_merged();
                    oracle.pipeline.clear();
                    oracle.snapshot_counted =
                        (active.len() as u64 + cells, data_bytes(&active) + bytes);
                    frozen.extend(active);
                    oracle.snapshot = Some(frozen);
                }
                let expected = oracle.snapshot.clone().unwrap_or_default();
                let got: Vec<_> = snapshot.scanner().map(Cell::into_parts).collect();
                let expected: Vec<_> = expected.into_iter().collect();
                prop_assert_eq!(&got, &expected);
                let mut visited = Vec::new();
                snapshot.visit(|key, value| {
                    visited.push((key.clone(), Bytes::copy_from_slice(value)));
                    std::ops::ControlFlow::Continue(())
                });
                prop_assert_eq!(visited, expected);
                prop_assert_eq!(snapshot.size().cell_count, oracle.snapshot_counted.0);
                pending = Some(snapshot.id());
            }
            Op::Clear => {
                let result = memstore.clear_snapshot(pending.unwrap_or(0));
                prop_assert_eq!(result.is_ok(), oracle.snapshot.is_some());
                oracle.snapshot = None;
                oracle.snapshot_counted = (0, 0);
                pending = None;
            }
            Op::Scan {
                read_point,
                from,
                rule,
            } => {
                let expected = oracle.visible(read_point, from.as_ref());
                let got: Vec<_> = match &from {
                    Some(from) => memstore.scanner(from.clone().., read_point),
                    None => memstore.scanner(.., read_point),
                }
                .map(Cell::into_parts)
                .collect();
                prop_assert_eq!(&got, &expected);
                // The same scan deciding on each peeked cell: every third passed over (a flat
                // segment's not cloned), the others kept with `next_into`.
                let mut scanner = match &from {
                    Some(from) => memstore.scanner(from.clone().., read_point),
                    None => memstore.scanner(.., read_point),
                };
                let (mut peeked, mut kept) = (Vec::new(), Vec::new());
                while let Some(cell) = scanner.peek() {
                    peeked.push(cell.clone().into_parts());
                    if peeked.len() % 3 == 0 {
                        scanner.pass_next();
                    } else {
                        scanner.next_into(&mut kept);
                    }
                }
                prop_assert_eq!(&peeked, &expected);
                let kept: Vec<_> = kept.into_iter().map(Cell::into_parts).collect();
                let wanted: Vec<_> = expected
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| (i + 1) % 3 != 0)
                    .map(|(_, c)| c.clone())
                    .collect();
                prop_assert_eq!(kept, wanted);
                let mut scanner = match &from {
                    Some(from) => memstore.scanner(from.clone().., read_point),
                    None => memstore.scanner(.., read_point),
                };
                prop_assert_eq!(take_rows(&mut scanner)?, without_q1(&expected));
                let mut scanner = match &from {
                    Some(from) => memstore.scanner(from.clone().., read_point),
                    None => memstore.scanner(.., read_point),
                };
                prop_assert_eq!(
                    take_rows_run(&mut scanner, rule)?,
                    run_kept(&expected, rule)
                );
                let mut visited = Vec::new();
                let mut collect = |key: &CellKey, value: &[u8]| {
                    visited.push((key.clone(), Bytes::copy_from_slice(value)));
                    std::ops::ControlFlow::Continue(())
                };
                match &from {
                    Some(from) => memstore.visit(from.clone().., read_point, &mut collect),
                    None => memstore.visit(.., read_point, &mut collect),
                }
                prop_assert_eq!(visited, expected);
            }
            Op::Reseek {
                read_point,
                take,
                to,
            } => {
                let expected = oracle.visible(read_point, None);
                let mut scanner = memstore.scanner(.., read_point);
                let taken: Vec<_> = scanner.by_ref().take(take).map(Cell::into_parts).collect();
                prop_assert_eq!(&taken[..], &expected[..taken.len()]);
                scanner.reseek(&to);
                let rest: Vec<_> = scanner.map(Cell::into_parts).collect();
                let expected_rest: Vec<_> = expected[taken.len()..]
                    .iter()
                    .filter(|(key, _)| *key >= to)
                    .cloned()
                    .collect();
                prop_assert_eq!(rest, expected_rest);
            }
            Op::Bounded {
                read_point,
                to,
                rule,
            } => {
                let mut expected = oracle.visible(read_point, None);
                expected.retain(|(key, _)| *key < to);
                let got: Vec<_> = memstore
                    .scanner(..to.clone(), read_point)
                    .map(Cell::into_parts)
                    .collect();
                prop_assert_eq!(&got, &expected);
                let mut scanner = memstore.scanner(..to.clone(), read_point);
                prop_assert_eq!(take_rows(&mut scanner)?, without_q1(&expected));
                let mut scanner = memstore.scanner(..to, read_point);
                prop_assert_eq!(
                    take_rows_run(&mut scanner, rule)?,
                    run_kept(&expected, rule)
                );
            }
            Op::Row {
                read_point,
                row,
                rule,
            } => {
                let row = Bytes::from(vec![b'r', row]);
                let expected: Vec<_> = oracle
                    .visible(read_point, None)
                    .into_iter()
                    .filter(|(key, _)| key.row() == row)
                    .collect();
                let got: Vec<_> = memstore
                    .row_scanner(&row, read_point)
                    .map(Cell::into_parts)
                    .collect();
                prop_assert_eq!(&got, &expected);
                let mut scanner = memstore.row_scanner(&row, read_point);
                prop_assert_eq!(take_rows(&mut scanner)?, without_q1(&expected));
                let mut scanner = memstore.row_scanner(&row, read_point);
                prop_assert_eq!(
                    take_rows_run(&mut scanner, rule)?,
                    run_kept(&expected, rule)
                );
            }
            Op::Backward { read_point, from } => {
                let visible = oracle.visible(read_point, None);
                let before = |row: Option<&[u8]>| {
                    visible
                        .iter()
                        .rev()
                        .find(|(key, _)| row.is_none_or(|r| key.row() < r))
                        .map(|(key, _)| key.row_bytes())
                };
                let mut expected = Vec::new();
                let mut row = before(from.as_ref().map(CellKey::row));
                while let Some(r) = row {
                    expected.extend(visible.iter().filter(|(key, _)| key.row() == r).cloned());
                    row = before(Some(r.as_ref()));
                }
                let mut scanner = memstore.scanner(.., read_point);
                scanner.seek_before_row(from.as_ref().map(|f| f.row()));
                let mut got = Vec::new();
                while let Some(first) = scanner.peek() {
                    let row = first.row_bytes();
                    while scanner.peek().is_some_and(|c| c.row() == row) {
                        got.push(scanner.next().expect("peeked").into_parts());
                    }
                    scanner.seek_before_row(Some(&row));
                }
                prop_assert_eq!(got, expected);
            }
        }
        let active = memstore.active_size();
        prop_assert_eq!(active.cell_count, oracle.active.len() as u64);
        prop_assert_eq!(active.data_bytes, data_bytes(&oracle.active));
        let pipeline = memstore.pipeline_size();
        prop_assert_eq!(
            (pipeline.cell_count, pipeline.data_bytes),
            oracle.pipeline_counted()
        );
        prop_assert_eq!(
            memstore.snapshot_size().cell_count,
            oracle.snapshot_counted.0
        );
        prop_assert_eq!(
            memstore.snapshot_size().data_bytes,
            oracle.snapshot_counted.1
        );
        let min_seq = oracle
            .active
            .keys()
            .map(CellKey::sequence_id)
            .min()
            .unwrap_or(u64::MAX);
        // A rollback leaves the bounds as they were: wider is safe (the WAL keeps an entry a
        // little longer), narrower would not be.
        prop_assert!(active.min_sequence_id <= min_seq);
        let pipeline_min = oracle
            .pipeline
            .iter()
            .flat_map(BTreeMap::keys)
            .map(CellKey::sequence_id)
            .min();
        prop_assert!(pipeline.min_sequence_id <= pipeline_min.unwrap_or(u64::MAX));
    }
    Ok(())
}

/// Reads `scanner` row by row through `take_row`: cells of qualifier `q1` passed, a cell of
/// timestamp 3 stopped at (then checked to be the next cell, and kept), the others kept.
fn take_rows(scanner: &mut MemStoreScanner) -> Result<Vec<(CellKey, Bytes)>, TestCaseError> {
    let mut kept = Vec::new();
    while let Some(first) = scanner.peek() {
        let row = first.row_bytes();
        let mut stopped = None;
        scanner.take_row(&row, &mut kept, &mut |cell, _| {
            if cell.qualifier() == b"q\x01" {
                Take::Pass
            } else if cell.timestamp() == 3 {
                stopped = Some(cell.key().clone());
                Take::Stop
            } else {
                Take::Keep
            }
        });
        match stopped {
            Some(key) => {
                prop_assert_eq!(scanner.peek().map(Cell::key), Some(&key));
                scanner.next_into(&mut kept);
            }
            None => prop_assert!(scanner.peek().is_none_or(|cell| cell.row() != row)),
        }
    }
    Ok(kept.into_iter().map(Cell::into_parts).collect())
}

/// The reader of [`take_rows_run`]: shown `cell`, with `open` when the cell shown before it
/// in its row was kept with the run's rule (`last`), keeps it by the rule when it continues
/// the run (as the rule promises the source); otherwise stops at timestamp 3, keeps (with the
/// rule) a cell whose value has an even length and passes the rest, so that a cell a source
/// took by the rule without the right to shows in the results.
fn run_decision(rule: RunRule, cell: &Cell, last: Option<&Cell>, open: bool) -> Take {
    if open && last.is_some_and(|last| rule.continues(cell, last)) {
        Take::KeepRun(rule)
    } else if cell.timestamp() == 3 {
        Take::Stop
    } else if cell.value().len().is_multiple_of(2) {
        Take::KeepRun(rule)
    } else {
        Take::Pass
    }
}

/// Reads `scanner` row by row through `take_row` with [`run_decision`]'s reader (a cell
/// stopped at is checked to be the next and kept with `next_into`). A source may keep the
/// cells continuing a run unasked: the reader then finds its results grown by more than the
/// cell it kept, and takes their last as the run's.
fn take_rows_run(
    scanner: &mut MemStoreScanner,
    rule: RunRule,
) -> Result<Vec<(CellKey, Bytes)>, TestCaseError> {
    let mut kept: Vec<Cell> = Vec::new();
    while let Some(first) = scanner.peek() {
        let row = first.row_bytes();
        let row_start = kept.len();
        let mut open = false;
        loop {
            let mut stopped = None;
            scanner.take_row(&row, &mut kept, &mut |cell, so_far| {
                let last = so_far[row_start..].last();
                let take = run_decision(rule, cell, last, open);
                open = matches!(take, Take::KeepRun(_));
                if take == Take::Stop {
                    stopped = Some(cell.key().clone());
                }
                take
            });
            let Some(key) = stopped else {
                break;
            };
            prop_assert_eq!(scanner.peek().map(Cell::key), Some(&key));
            scanner.next_into(&mut kept);
            open = false;
        }
        prop_assert!(scanner.peek().is_none_or(|cell| cell.row() != row));
    }
    Ok(kept.into_iter().map(Cell::into_parts).collect())
}

/// What [`take_rows_run`] keeps of `cells` (sorted, visible), shown every one of them.
fn run_kept(cells: &[(CellKey, Bytes)], rule: RunRule) -> Vec<(CellKey, Bytes)> {
    let mut kept: Vec<Cell> = Vec::new();
    let (mut row, mut row_start, mut open) = (None, 0, false);
    for (key, value) in cells {
        let cell = Cell::from_parts(key.clone(), value.clone());
        if row.as_ref() != Some(&cell.row_bytes()) {
            row = Some(cell.row_bytes());
            row_start = kept.len();
            open = false;
        }
        match run_decision(rule, &cell, kept[row_start..].last(), open) {
            Take::KeepRun(_) => {
                kept.push(cell);
                open = true;
            }
            Take::Stop | Take::Keep => {
                kept.push(cell);
                open = false;
            }
            Take::Pass => open = false,
        }
    }
    kept.into_iter().map(Cell::into_parts).collect()
}

/// `cells` without those of qualifier `q1`, as [`take_rows`] keeps them.
fn without_q1(cells: &[(CellKey, Bytes)]) -> Vec<(CellKey, Bytes)> {
    cells
        .iter()
        .filter(|(key, _)| key.qualifier() != b"q\x01")
        .cloned()
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn memstore_matches_the_oracle_with_mslab(
        ops in prop::collection::vec(op(), 1..40),
        limit in 1usize..4,
        copy: bool,
    ) {
        run(ops, true, limit, copy)?;
    }

    #[test]
    fn memstore_matches_the_oracle_without_mslab(
        ops in prop::collection::vec(op(), 1..40),
        limit in 1usize..4,
        copy: bool,
    ) {
        run(ops, false, limit, copy)?;
    }
}
