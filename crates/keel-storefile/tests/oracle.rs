//! keel-storefile against a `BTreeMap` oracle: random sorted cells written with random block
//! sizes, encodings, compression and bloom types (tiny blocks force two- and three-level
//! indexes); every cell read back by a full scan, rows by `get`, random present and absent keys
//! by `seek`, ascending keys by `reseek`, the row before random rows by `seek_before_row` and
//! every row walked backwards, and a merge of several files and an in-memory source, forwards
//! and backwards.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use bytes::Bytes;
use keel_cell::{Cell, CellKey, RunRule};
use keel_fs::{FileSystem, StdFs};
use keel_storefile::{
    BlockKey, BlockSource, BloomType, Compression, DirectSource, Encoding, KeyValueScanner,
    MergeScanner, RowRange, StoreFileReader, StoreFileWriter, Take, VecScanner, WriterOptions,
};
use proptest::prelude::*;

fn cell_strategy() -> impl Strategy<Value = Cell> {
    (
        prop::collection::vec(prop::sample::select(vec![b'a', b'b', 0u8, 0xFF]), 1..4),
        prop::sample::select(vec!["f", "g"]),
        prop::collection::vec(any::<u8>(), 0..3),
        0i64..5,
        keel_testkit::strategies::storable_type(),
        0u64..4,
        prop::collection::vec(any::<u8>(), 0..60),
    )
        .prop_map(|(row, family, qualifier, ts, ty, seq, value)| {
            Cell::builder(row, family)
                .qualifier(qualifier)
                .timestamp(ts)
                .cell_type(ty)
                .sequence_id(seq)
                .value(value)
                .build()
                .expect("valid cell")
        })
}

fn options_strategy() -> impl Strategy<Value = WriterOptions> {
    (
        prop::sample::select(vec![1usize, 40, 200, 4096]),
        prop::sample::select(vec![Encoding::None, Encoding::Diff]),
        prop::sample::select(vec![Compression::None, Compression::Lz4]),
        prop::sample::select(vec![BloomType::None, BloomType::Row, BloomType::RowCol]),
        prop::sample::select(vec![64u32, 1024, 16 * 1024]),
    )
        .prop_map(
            |(block_size, encoding, compression, bloom, per)| WriterOptions {
                block_size,
                encoding,
                compression,
                bloom,
                bytes_per_checksum: per,
                // Tiny index blocks: 16 entries each (the minimum), so many blocks mean many levels.
                index_block_size: 1,
                ..WriterOptions::default()
            },
        )
}

/// A block source that keeps every block it loads, as a cache does.
#[derive(Debug, Default)]
struct Keeping(std::sync::Mutex<std::collections::HashMap<BlockKey, Bytes>>);

impl BlockSource for Keeping {
    fn get_or_load(
        &self,
        key: BlockKey,
        load: &mut dyn FnMut() -> keel_storefile::Result<Bytes>,
    ) -> keel_storefile::Result<Bytes> {
        let mut blocks = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(block) = blocks.get(&key) {
            return Ok(block.clone());
        }
        let block = load()?;
        blocks.insert(key, block.clone());
        Ok(block)
    }
}

fn write(
    dir: &std::path::Path,
    name: &str,
    cells: &[Cell],
    options: WriterOptions,
) -> StoreFileReader {
    let fs: Arc<dyn FileSystem> = Arc::new(StdFs);
    let path = dir.join(name);
    let keeping = name.len().is_multiple_of(2) || options.block_size >= 200;
    let mut writer = StoreFileWriter::create(Arc::clone(&fs), &path, options).expect("test setup");
    for cell in cells {
        writer.append(cell).expect("test setup");
    }
    let info = writer.finish().expect("test setup");
    assert_eq!(info.entry_count, cells.len() as u64);
    assert!(!fs.exists(&path.with_extension("tmp")).expect("test setup"));
    // Half the files through a source that keeps blocks, whose data blocks carry row starts
    // (seeks jump by them), half through one that does not.
    let source: Arc<dyn BlockSource> = if keeping {
        Arc::new(Keeping::default())
    } else {
        Arc::new(DirectSource)
    };
    StoreFileReader::open(&*fs, &path, 1, source).expect("test setup")
}

fn sorted(cells: Vec<Cell>) -> Vec<Cell> {
    let map: BTreeMap<CellKey, Cell> = cells.into_iter().map(|c| (c.key().clone(), c)).collect();
    map.into_values().collect()
}

fn seek_key_strategy() -> impl Strategy<Value = CellKey> {
    (
        prop::collection::vec(
            prop::sample::select(vec![b'a', b'b', 0u8, 0xFF, b'c']),
            0..4,
        ),
        any::<bool>(),
    )
        .prop_map(|(row, last)| {
            if last {
                CellKey::last_on_row(Bytes::from(row))
            } else {
                CellKey::first_on_row(Bytes::from(row))
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// A reader restricted to a row range (a split's reference) shows exactly the cells of
    /// those rows: by a full scan, a seek to every key, a walk backwards, gets and row checks;
    /// and its mid row splits what it shows.
    #[test]
    fn a_ranged_reader_shows_exactly_its_rows(
        cells in prop::collection::vec(cell_strategy(), 1..300),
        options in options_strategy(),
        bounds in (prop::collection::vec(prop::sample::select(vec![b'a', b'b', 0u8, 0xFF]), 0..3),
                   prop::collection::vec(prop::sample::select(vec![b'a', b'b', 0u8, 0xFF]), 0..3)),
        seeks in prop::collection::vec(seek_key_strategy(), 0..8),
    ) {
        let cells = sorted(cells);
        let dir = tempfile::tempdir().expect("test setup");
        let (mut start, mut end) = (Bytes::from(bounds.0), Bytes::from(bounds.1));
        if !end.is_empty() && end < start {
            std::mem::swap(&mut start, &mut end);
        }
        let range = RowRange { start, end };
        let reader = Arc::new(write(dir.path(), "f", &cells, options).with_range(range.clone()));
        let shown: Vec<Cell> = cells.iter().filter(|c| range.contains(c.row())).cloned().collect();
        let mut s = reader.range_scanner();
        s.seek(&CellKey::first_on_row(Bytes::new())).expect("seek");
        let mut scanned = Vec::new();
        while let Some(c) = s.next().expect("next") {
            scanned.push(c);
        }
        prop_assert_eq!(&scanned, &shown);
        for key in &seeks {
            let mut s = reader.range_scanner();
            s.seek(key).expect("seek");
            prop_assert_eq!(s.peek(), shown.iter().find(|c| c.key() >= key));
        }
        let rows: BTreeSet<Bytes> = shown.iter().map(|c| c.row_bytes()).collect();
        let mut s = reader.range_scanner();
        s.seek_before_row(None).expect("seek");
        let mut walked = Vec::new();
        while let Some(c) = s.peek() {
            let row = c.row_bytes();
            walked.push(row.clone());
            s.seek_before_row(Some(&row)).expect("seek");
        }
        prop_assert_eq!(walked, rows.iter().rev().cloned().collect::<Vec<_>>());
        for cell in &cells {
            let row = cell.row();
            let want: Vec<Cell> = shown.iter().filter(|c| c.row() == row).cloned().collect();
            prop_assert_eq!(reader.get(row).expect("get"), want);
        }
        if let Some(mid) = reader.mid_row().expect("mid") {
            prop_assert!(range.contains(&mid), "{:?} outside {:?}", mid, range);
            prop_assert!(rows.iter().any(|r| r < &mid), "nothing before the mid row");
            prop_assert!(rows.iter().any(|r| r >= &mid), "nothing from the mid row on");
        }
    }

    /// The borrowed walk visits exactly the cells `next` returns, from the start or from a
    /// seek; stopped early, it leaves the scanner where `next` continues with the cell after.
    #[test]
    fn borrowed_walks_match_the_oracle(
        cells in prop::collection::vec(cell_strategy(), 1..400),
        options in options_strategy(),
        seek in prop::option::of(seek_key_strategy()),
        stop in any::<prop::sample::Index>(),
        name in prop::sample::select(vec!["f", "ff"]),
    ) {
        let cells = sorted(cells);
        let dir = tempfile::tempdir().expect("test setup");
        let reader = write(dir.path(), name, &cells, options);
        let from = seek.as_ref().map_or(0, |key| cells.partition_point(|c| c.key() < key));
        let start = |scanner: &mut keel_storefile::StoreFileScanner<'_>| {
            if let Some(key) = &seek {
                scanner.seek(key).expect("seek");
            }
        };
        let mut scanner = reader.scanner();
        start(&mut scanner);
        let mut seen = Vec::new();
        scanner
            .for_each_ref(|c| {
                seen.push(c.to_cell());
                std::ops::ControlFlow::Continue(())
            })
            .expect("walk");
        prop_assert_eq!(&seen[..], &cells[from..]);
        prop_assert_eq!(scanner.next().expect("next"), None);
        // Stopped after `take` cells: `next` goes on from the one after.
        let take = stop.index(cells.len() - from + 1);
        let mut scanner = reader.scanner();
        start(&mut scanner);
        let mut count = 0;
        scanner
            .for_each_ref(|_| {
                count += 1;
                if count >= take {
                    std::ops::ControlFlow::Break(())
                } else {
                    std::ops::ControlFlow::Continue(())
                }
            })
            .expect("walk");
        prop_assert_eq!(count, take.max(usize::from(from < cells.len())).min(cells.len() - from));
        let after = (from + count).min(cells.len());
        let next = scanner.next().expect("next");
        prop_assert_eq!(next.as_ref(), cells.get(after));
    }

    #[test]
    fn reads_match_the_oracle(
        cells in prop::collection::vec(cell_strategy(), 1..400),
        options in options_strategy(),
        seeks in prop::collection::vec(seek_key_strategy(), 0..12),
    ) {
        let cells = sorted(cells);
        let dir = tempfile::tempdir().expect("test setup");
        let reader = write(dir.path(), "f", &cells, options.clone());
        let info = reader.info();
        prop_assert_eq!(&info.first_key, cells[0].key());
        prop_assert_eq!(&info.last_key, cells[cells.len() - 1].key());
        if options.block_size == 1 && cells.len() > 16 {
            prop_assert!(info.index_levels >= 2, "{} blocks, {} levels", info.data_blocks, info.index_levels);
        }

        // Full scan.
        let mut scanner = reader.scanner();
        let mut scanned = Vec::new();
        while let Some(cell) = scanner.next().expect("test setup") {
            scanned.push(cell);
        }
        prop_assert_eq!(&scanned, &cells);

        // Full scans keeping every cell through `next_into` (from an unstarted scanner), and
        // every other cell with `skip` between.
        let mut scanner = reader.scanner();
        let mut kept = Vec::new();
        let mut alternate = Vec::new();
        let mut other = reader.scanner();
        for i in 0..cells.len() {
            KeyValueScanner::next_into(&mut scanner, &mut kept).expect("test setup");
            if i % 2 == 0 {
                KeyValueScanner::next_into(&mut other, &mut alternate).expect("test setup");
            } else {
                KeyValueScanner::skip(&mut other).expect("test setup");
            }
        }
        prop_assert_eq!(&kept, &cells);
        prop_assert!(scanner.peek().is_none() && other.peek().is_none());
        let every_other: Vec<Cell> = cells.iter().step_by(2).cloned().collect();
        prop_assert_eq!(alternate, every_other);

        // Gets of every row present, and of absent rows.
        let rows: BTreeSet<Bytes> = cells.iter().map(|c| c.row_bytes()).collect();
        for row in &rows {
            let expected: Vec<Cell> = cells.iter().filter(|c| c.row() == row).cloned().collect();
            prop_assert_eq!(reader.get(row).expect("test setup"), expected);
        }
        for absent in [&b"c"[..], b"", b"ab\x01", b"\xff\xff\xff\xff"] {
            if !rows.contains(absent) {
                prop_assert!(reader.get(absent).expect("test setup").is_empty());
            }
        }

        // Seeks to random keys and to every stored key.
        // Also the keys a region's reads skip with: past the rest of a cell's column, and past
        // the rest of its family in its row, and past the rest of its row.
        let skips = cells.iter().step_by(3).flat_map(|c| {
            let mut next_family = c.family().to_vec();
            next_family.push(0);
            [
                CellKey::last_on_column(c.row_bytes(), c.family(), c.qualifier()),
                CellKey::first_on_column(c.row_bytes(), next_family, b""),
                // The end of its row (a one-family scan's `NextRow`), stepped by headers.
                CellKey::last_on_row(c.row_bytes()),
            ]
        });
        let targets: Vec<CellKey> = seeks
            .iter()
            .cloned()
            .chain(cells.iter().step_by(7).map(|c| c.key().clone()))
            .chain(skips)
            .collect();
        for key in &targets {
            let mut s = reader.scanner();
            s.seek(key).expect("test setup");
            let expected = cells.iter().find(|c| c.key() >= key);
            prop_assert_eq!(s.peek(), expected);
        }

        // Backward: the first cell of the last row before each target row, and a walk over
        // every row in descending order (a reversed scan's moves), from one scanner.
        let rows_desc: Vec<Bytes> = rows.iter().rev().cloned().collect();
        for key in &targets {
            let mut s = reader.scanner();
            s.seek_before_row(Some(key.row())).expect("test setup");
            prop_assert_eq!(s.peek(), first_before(&cells, Some(key.row())));
        }
        let mut s = reader.scanner();
        s.seek_before_row(None).expect("test setup");
        let mut walked = Vec::new();
        while let Some(cell) = s.peek() {
            let row = cell.row_bytes();
            prop_assert_eq!(Some(cell), cells.iter().find(|c| c.row() == row));
            walked.push(row.clone());
            s.seek_before_row(Some(&row)).expect("test setup");
        }
        prop_assert_eq!(walked, rows_desc);

        // Reseeks in ascending order from one scanner, with a step after each: within a block
        // (no index lookup) and across blocks, never back.
        let mut ascending = targets.clone();
        ascending.sort();
        let mut s = reader.scanner();
        // The oracle's position: the index of the cell the scanner stands on.
        let mut at = 0;
        for (i, key) in ascending.iter().enumerate() {
            s.reseek(key).expect("test setup");
            at = at.max(cells.partition_point(|c| c.key() < key));
            prop_assert_eq!(s.peek(), cells.get(at));
            if i % 2 == 1 && at < cells.len() {
                s.next().expect("test setup");
                at += 1;
            }
        }
    }

    #[test]
    fn merge_of_files_and_memory_matches_the_oracle(
        cells in prop::collection::vec(cell_strategy(), 1..300),
        assignment in prop::collection::vec(0usize..4, 300),
        options in options_strategy(),
        start in seek_key_strategy(),
        takes in prop::collection::vec(0u8..3, 1..300),
    ) {
        let cells = sorted(cells);
        let dir = tempfile::tempdir().expect("test setup");
        let mut parts: Vec<Vec<Cell>> = vec![Vec::new(); 4];
        for (i, cell) in cells.iter().enumerate() {
            parts[assignment[i]].push(cell.clone());
        }
        let readers: Vec<StoreFileReader> = parts[..3]
            .iter()
            .enumerate()
            .filter(|(_, p)| !p.is_empty())
            .map(|(i, p)| write(dir.path(), &format!("f{i}"), p, options.clone()))
            .collect();
        let mut sources: Vec<Box<dyn KeyValueScanner + '_>> =
            readers.iter().map(|r| Box::new(r.scanner()) as Box<dyn KeyValueScanner>).collect();
        sources.push(Box::new(VecScanner::new(parts[3].clone())));
        let mut merge = MergeScanner::new(sources, &start).expect("test setup");
        let mut merged = Vec::new();
        while let Some(cell) = merge.next().expect("test setup") {
            merged.push(cell);
        }
        let expected: Vec<Cell> = cells.iter().filter(|c| c.key() >= &start).cloned().collect();
        prop_assert_eq!(&merged, &expected);

        // The same walk deciding on each peeked cell: taken by `next` or `next_into`, or
        // passed over by `skip`; every cell is peeked in order and the taken ones kept.
        merge.seek(&start).expect("test setup");
        let (mut peeked, mut taken, mut wanted) = (Vec::new(), Vec::new(), Vec::new());
        while let Some(cell) = merge.peek().cloned() {
            match takes[peeked.len() % takes.len()] {
                0 => {
                    taken.push(merge.next().expect("test setup").expect("peeked"));
                    wanted.push(cell.clone());
                }
                1 => {
                    merge.next_into(&mut taken).expect("test setup");
                    wanted.push(cell.clone());
                }
                _ => merge.skip().expect("test setup"),
            }
            peeked.push(cell);
        }
        prop_assert_eq!(&peeked, &expected);
        prop_assert_eq!(taken, wanted);

        // The same decisions a row at a time through `take_row`: it shows every cell of the
        // row once, in order, with the results kept so far, until a `Stop`, where the cell is
        // left for the walker (who passes it over itself).
        merge.seek(&start).expect("test setup");
        let (mut shown, mut taken, mut wanted) = (Vec::new(), Vec::new(), Vec::new());
        let mut decisions = 0usize;
        while let Some(first) = merge.peek() {
            let row = first.row_bytes();
            merge
                .take_row(&row, &mut taken, &mut |cell, kept| {
                    assert_eq!(kept, &wanted[..], "the results kept so far");
                    assert_eq!(cell.row(), &row[..], "a cell of the row");
                    let take = match takes[decisions % takes.len()] {
                        0 => Take::Keep,
                        1 => Take::Pass,
                        _ => Take::Stop,
                    };
                    decisions += 1;
                    if take != Take::Stop {
                        shown.push(cell.clone());
                    }
                    if take == Take::Keep {
                        wanted.push(cell.clone());
                    }
                    take
                })
                .expect("test setup");
            if let Some(left) = merge.peek().filter(|c| c.row() == row).cloned() {
                shown.push(left);
                merge.skip().expect("test setup");
            }
        }
        prop_assert_eq!(&shown, &expected);
        prop_assert_eq!(taken, wanted);

        // Reseeks over the merge, every third cell's key ahead, with steps between: each lands
        // where the oracle says and never moves back.
        merge.seek(&start).expect("test setup");
        let targets: Vec<CellKey> = cells
            .iter()
            .filter(|c| c.key() >= &start)
            .step_by(3)
            .map(|c| c.key().clone())
            .collect();
        let mut at = cells.partition_point(|c| c.key() < &start);
        for target in &targets {
            merge.reseek(target).expect("test setup");
            at = at.max(cells.partition_point(|c| c.key() < target));
            prop_assert_eq!(merge.peek(), cells.get(at));
            if at < cells.len() {
                merge.next().expect("test setup");
                at += 1;
            }
        }

        // A reversed scan's moves over the merge: each row forward, then the row before it.
        merge.seek_before_row(Some(start.row())).expect("test setup");
        let mut reversed = Vec::new();
        while let Some(first) = merge.peek() {
            let row = first.row_bytes();
            while merge.peek().is_some_and(|c| c.row() == row) {
                reversed.push(merge.next().expect("test setup").expect("peeked"));
            }
            merge.seek_before_row(Some(&row)).expect("test setup");
        }
        let rows: BTreeSet<Bytes> = cells
            .iter()
            .filter(|c| c.row() < start.row())
            .map(|c| c.row_bytes())
            .collect();
        let expected: Vec<Cell> = rows
            .iter()
            .rev()
            .flat_map(|row| cells.iter().filter(move |c| c.row() == row).cloned())
            .collect();
        prop_assert_eq!(reversed, expected);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// A reader keeping runs (`Take::KeepRun`) by a random rule, deciding every other cell at
    /// random: the store file keeps each cell that continues an open run without showing it
    /// to the reader, within a block and across blocks, and keeps exactly what the reader
    /// would have kept had it been shown every cell.
    #[test]
    fn runs_kept_unasked_match_the_oracle(
        cells in prop::collection::vec(cell_strategy(), 1..300),
        options in options_strategy(),
        read_point in 0u64..5,
        min_ts in 0i64..4,
        span in 0i64..6,
        choices in prop::collection::vec(0u8..3, 300),
    ) {
        let cells = sorted(cells);
        let rule = RunRule { read_point, min_ts, max_ts: min_ts + span };
        // The reader's decision for a cell no open run continues, by its place in `cells`.
        let choice = |cell: &Cell| {
            let at = cells.binary_search_by(|c| c.key().cmp(cell.key())).expect("a written cell");
            match choices[at] {
                0 => Take::Keep,
                1 => Take::KeepRun(rule),
                _ => Take::Pass,
            }
        };
        let dir = tempfile::tempdir().expect("test setup");
        let reader = write(dir.path(), "runs", &cells, options);
        let mut s = reader.scanner();
        s.seek(&CellKey::first_on_row(Bytes::new())).expect("test setup");
        while let Some(first) = s.peek() {
            let row = first.row_bytes();
            // The oracle: the reader shown every cell of the row.
            let (mut wanted, mut open) = (Vec::<Cell>::new(), false);
            for cell in cells.iter().filter(|c| c.row() == row) {
                if open && rule.continues(cell, wanted.last().expect("a run's cell")) {
                    wanted.push(cell.clone());
                    continue;
                }
                let take = choice(cell);
                open = matches!(take, Take::KeepRun(_));
                if take != Take::Pass {
                    wanted.push(cell.clone());
                }
            }
            let (mut taken, mut open, mut shown_in_run) = (Vec::new(), false, 0);
            s.take_row(&row, &mut taken, &mut |cell, kept| {
                if open && rule.continues(cell, kept.last().expect("a run's cell")) {
                    shown_in_run += 1;
                    return Take::KeepRun(rule);
                }
                let take = choice(cell);
                open = matches!(take, Take::KeepRun(_));
                take
            })
            .expect("test setup");
            prop_assert_eq!(&taken, &wanted);
            prop_assert_eq!(shown_in_run, 0, "a cell the open run continues was shown");
            prop_assert!(s.peek().is_none_or(|c| c.row() != row), "the row taken whole");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// `keep_and_reseek` from a store file and from a merge of it with a memory source: the
    /// current cell is kept and the scanner stands where `next_into` and then `reseek` would
    /// leave it, for reseeks past the kept cell's column, family and row (stepped over by
    /// headers, within a block and across blocks), to keys further on, and to keys at or
    /// before it.
    #[test]
    fn keeps_then_reseeks_match_the_oracle(
        cells in prop::collection::vec(cell_strategy(), 1..300),
        in_memory in prop::collection::vec(cell_strategy(), 0..20),
        options in options_strategy(),
        steps in prop::collection::vec((0u8..6, seek_key_strategy()), 1..60),
    ) {
        let cells = sorted(cells);
        let dir = tempfile::tempdir().expect("test setup");
        let reader = write(dir.path(), "keep", &cells, options);
        // The store file alone, against its cells.
        let mut s = reader.scanner();
        s.seek(&CellKey::first_on_row(Bytes::new())).expect("test setup");
        keep_and_reseek_steps(&mut s, &cells, &steps)?;
        // Leaving the row from a scanner not yet positioned keeps the file's first cell.
        let mut fresh = reader.scanner();
        let mut out = Vec::new();
        fresh.keep_and_leave_row(&mut out).expect("test setup");
        prop_assert_eq!(&out[..], &cells[..1]);
        let past = CellKey::last_on_row(cells[0].row_bytes());
        prop_assert_eq!(fresh.peek(), cells.iter().find(|c| c.key() > &past));
        // A merge of the file and a memory source, against all their cells.
        // (Keys of their own: the oracle holds one cell per key.)
        let memory: Vec<Cell> = sorted(in_memory)
            .into_iter()
            .filter(|m| cells.binary_search_by(|c| c.key().cmp(m.key())).is_err())
            .collect();
        let all = sorted(cells.iter().chain(&memory).cloned().collect());
        let sources: Vec<Box<dyn KeyValueScanner>> = vec![
            Box::new(reader.scanner()),
            Box::new(VecScanner::new(memory)),
        ];
        let mut merge = MergeScanner::new(sources, &CellKey::first_on_row(Bytes::new()))
            .expect("test setup");
        keep_and_reseek_steps(&mut merge, &all, &steps)?;
    }
}

/// `steps` of `keep_and_reseek` on `scanner` (positioned at the first of `cells`), each to a
/// key chosen by its kind: the end of the kept cell's column (0), past its family (1), past
/// its row (2), the step's own key (3), the kept cell's key (4); or `keep_and_leave_row` (5),
/// whose oracle is the reseek past the row. After each, the cell kept and where the scanner
/// stands must be the oracle's.
fn keep_and_reseek_steps(
    scanner: &mut impl KeyValueScanner,
    cells: &[Cell],
    steps: &[(u8, CellKey)],
) -> Result<(), TestCaseError> {
    let mut at = 0;
    for (kind, other) in steps {
        let Some(current) = scanner.peek().cloned() else {
            break;
        };
        prop_assert_eq!(Some(&current), cells.get(at));
        let key = match kind {
            0 => {
                CellKey::last_on_column(current.row_bytes(), current.family(), current.qualifier())
            }
            1 => CellKey::past_family(current.row(), current.family()),
            2 | 5 => CellKey::last_on_row(current.row_bytes()),
            3 => other.clone(),
            _ => current.key().clone(),
        };
        let mut out = Vec::new();
        if *kind == 5 {
            scanner.keep_and_leave_row(&mut out).expect("test setup");
        } else {
            scanner.keep_and_reseek(&mut out, &key).expect("test setup");
        }
        prop_assert_eq!(out, vec![current]);
        at = (at + 1).max(cells.partition_point(|c| c.key() < &key));
        prop_assert_eq!(scanner.peek(), cells.get(at));
    }
    Ok(())
}

/// The oracle of `seek_before_row`: the first cell of the last row before `row` (of all rows
/// with `None`).
fn first_before<'a>(cells: &'a [Cell], row: Option<&[u8]>) -> Option<&'a Cell> {
    let last = cells
        .iter()
        .rev()
        .find(|c| row.is_none_or(|r| c.row() < r))?;
    cells.iter().find(|c| c.row() == last.row())
}
