//! Unit tests: index depth and what a get touches, order and emptiness errors, abandoned
//! writers, bloom filters (no false negatives, measured false-positive rate, delete-family),
//! and what each encoding and compression does to the file size.

use std::sync::Arc;

use bytes::Bytes;
use keel_cell::{Cell, CellType};
use keel_fs::{FileSystem, StdFs};

use crate::*;

fn fs() -> Arc<dyn FileSystem> {
    Arc::new(StdFs)
}

fn row(i: u32) -> Bytes {
    Bytes::from(format!("row{i:08}"))
}

fn cells(rows: u32, per_row: u32) -> Vec<Cell> {
    let mut out = Vec::new();
    for r in 0..rows {
        for q in 0..per_row {
            out.push(Cell::put(row(r), "f", format!("q{q}"), 7, format!("value-{r}-{q}")).unwrap());
        }
    }
    out
}

fn write(path: &std::path::Path, cells: &[Cell], options: WriterOptions) -> FileInfo {
    let mut w = StoreFileWriter::create(fs(), path, options).unwrap();
    for c in cells {
        w.append(c).unwrap();
    }
    w.finish().unwrap()
}

fn open(path: &std::path::Path) -> StoreFileReader {
    StoreFileReader::open(&*fs(), path, 7, Arc::new(DirectSource)).unwrap()
}

#[test]
fn a_deep_index_costs_one_block_per_level_on_a_get() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("deep");
    let all = cells(600, 1);
    let options = WriterOptions {
        block_size: 1,
        index_block_size: 1,
        ..WriterOptions::default()
    };
    let info = write(&path, &all, options);
    // 600 blocks, 16 entries per index block: 38 leaves, 3 intermediate blocks, a root.
    assert_eq!((info.data_blocks, info.index_levels), (600, 3));
    let reader = open(&path);
    assert_eq!(reader.get(&row(321)).unwrap(), vec![all[321].clone()]);
    let stats = reader.stats();
    assert_eq!((stats.index_blocks, stats.data_blocks), (2, 1), "{stats:?}");
    let mut s = reader.scanner();
    let mut n = 0;
    while s.next().unwrap().is_some() {
        n += 1;
    }
    assert_eq!(n, 600);
}

/// 1 KiB blocks: a file of a few thousand cells has about a hundred.
fn small_blocks() -> WriterOptions {
    WriterOptions {
        block_size: 1024,
        ..WriterOptions::default()
    }
}

/// A source that keeps every block, as a cache does (its data blocks carry row starts).
#[derive(Debug, Default)]
struct Keeping(std::sync::Mutex<std::collections::HashMap<BlockKey, Bytes>>);

impl BlockSource for Keeping {
    fn get_or_load(&self, key: BlockKey, load: &mut dyn FnMut() -> Result<Bytes>) -> Result<Bytes> {
        let mut blocks = self.0.lock().unwrap();
        if let Some(block) = blocks.get(&key) {
            return Ok(block.clone());
        }
        let block = load()?;
        blocks.insert(key, block.clone());
        Ok(block)
    }

    fn kept(&self, key: BlockKey) -> Option<Bytes> {
        self.0.lock().unwrap().get(&key).cloned()
    }
}

#[test]
fn a_compaction_scanner_takes_kept_blocks_and_keeps_none() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pass");
    let all = cells(2000, 2);
    write(&path, &all, small_blocks());
    let source = Arc::new(Keeping::default());
    let reader = Arc::new(StoreFileReader::open(&*fs(), &path, 7, source.clone()).unwrap());
    let blocks = u64::from(reader.info().data_blocks);
    // Reads keep a few blocks (with their row starts) scattered through the file.
    for i in [0, 17, 900, 1999] {
        assert_eq!(reader.get(&row(i)).unwrap().len(), 2);
    }
    let kept: Vec<BlockKey> = source.0.lock().unwrap().keys().copied().collect();
    assert!(
        !kept.is_empty() && (kept.len() as u64) < blocks / 10,
        "{kept:?}"
    );
    for pass in 0..2 {
        let mut scanner = reader.compaction_scanner();
        scanner
            .seek(&keel_cell::CellKey::first_on_row(Bytes::new()))
            .unwrap();
        let mut read = Vec::new();
        if pass == 0 {
            while let Some(cell) = scanner.next().unwrap() {
                read.push(cell);
            }
        } else {
            // Reseeks through blocks with row starts and blocks without.
            while let Some(cell) = scanner.peek().cloned() {
                read.push(cell);
                scanner.skip().unwrap();
                if let Some(next) = scanner.peek().cloned() {
                    scanner.reseek(next.key()).unwrap();
                }
            }
        }
        assert_eq!(read, all, "pass {pass}");
        let mut now: Vec<BlockKey> = source.0.lock().unwrap().keys().copied().collect();
        let mut before = kept.clone();
        now.sort_by_key(|k| k.offset);
        before.sort_by_key(|k| k.offset);
        assert_eq!(now, before, "pass {pass}: the pass kept no block");
    }
    // A plain scanner keeps what it reads.
    let mut scanner = reader.range_scanner();
    scanner
        .seek(&keel_cell::CellKey::first_on_row(Bytes::new()))
        .unwrap();
    while scanner.next().unwrap().is_some() {}
    assert_eq!(source.0.lock().unwrap().len() as u64, blocks);
}

#[test]
fn reseek_skips_blocks_through_the_index() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("skip");
    let all = cells(2000, 1);
    write(&path, &all, small_blocks());
    // Through a keeping source too: a block with row starts answers "is the key in this
    // block?" from its own last row when it can, and must still send a key past that row
    // through the index.
    let sources: [Arc<dyn BlockSource>; 2] = [Arc::new(DirectSource), Arc::new(Keeping::default())];
    for source in sources {
        let reader = StoreFileReader::open(&*fs(), &path, 7, source).unwrap();
        let mut s = reader.scanner();
        s.seek(all[0].key()).unwrap();
        // Within the first block, then far ahead.
        s.reseek(all[2].key()).unwrap();
        assert_eq!(s.peek(), Some(&all[2]));
        s.reseek(all[1990].key()).unwrap();
        assert_eq!(s.peek(), Some(&all[1990]));
        let blocks = reader.info().data_blocks as u64;
        assert!(
            reader.stats().data_blocks <= 2,
            "read {:?} of {blocks} blocks",
            reader.stats()
        );
    }
}

#[test]
fn out_of_order_duplicate_and_empty_input_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad");
    let mut w = StoreFileWriter::create(fs(), &path, WriterOptions::default()).unwrap();
    let b = Cell::put("b", "f", "q", 1, "v").unwrap();
    w.append(&b).unwrap();
    let err = w
        .append(&Cell::put("a", "f", "q", 1, "v").unwrap())
        .unwrap_err();
    assert!(matches!(err, StoreFileError::OutOfOrder { .. }), "{err}");
    assert!(err.to_string().contains("\"a\""), "{err}");
    assert!(matches!(
        w.append(&b).unwrap_err(),
        StoreFileError::OutOfOrder { .. }
    ));
    drop(w);
    assert!(
        !path.exists(),
        "an abandoned file never appears under its name"
    );
    assert!(
        !dir.path().join("bad.tmp").exists(),
        "and its temporary is removed"
    );
    let w = StoreFileWriter::create(fs(), &path, WriterOptions::default()).unwrap();
    assert!(matches!(
        w.finish().unwrap_err(),
        StoreFileError::Empty { .. }
    ));
}

#[test]
fn bloom_has_no_false_negatives_and_about_its_configured_false_positive_rate() {
    let dir = tempfile::tempdir().unwrap();
    for (bloom, name) in [(BloomType::Row, "row"), (BloomType::RowCol, "rowcol")] {
        let path = dir.path().join(name);
        let all = cells(10_000, 2);
        write(
            &path,
            &all,
            WriterOptions {
                bloom,
                ..WriterOptions::default()
            },
        );
        let reader = open(&path);
        for c in &all {
            assert!(reader.may_contain_column(c.row(), c.family(), c.qualifier()));
            assert!(reader.may_contain_row(c.row()));
        }
        // Absent keys inside the file's key range, so only the bloom filter can say no.
        let probes = 20_000;
        let false_positives = (0..probes)
            .filter(|i| {
                let r = Bytes::from(format!("row{:08}x{i}", i % 10_000));
                match bloom {
                    BloomType::RowCol => reader.may_contain_column(&r, b"f", b"q0"),
                    _ => reader.may_contain_row(&r),
                }
            })
            .count();
        let rate = false_positives as f64 / probes as f64;
        assert!(
            rate < 0.02,
            "{name}: false-positive rate {rate} for a 1% filter"
        );
        assert!(
            rate > 0.002,
            "{name}: rate {rate} is suspiciously low for 1%"
        );
    }
}

#[test]
fn a_negative_get_touches_no_index_or_data_block() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("neg");
    write(
        &path,
        &cells(5000, 1),
        WriterOptions {
            block_size: 512,
            index_block_size: 1,
            ..WriterOptions::default()
        },
    );
    let reader = open(&path);
    let mut negatives = 0;
    for i in 0..1000 {
        let absent = format!("row{:08}-absent", i * 5);
        assert!(reader.get(absent.as_bytes()).unwrap().is_empty());
        negatives += 1;
    }
    let stats = reader.stats();
    // Bloom negatives touch nothing; the ~1% false positives each cost a descent.
    assert!(stats.bloom_negatives > negatives * 95 / 100, "{stats:?}");
    assert!(stats.data_blocks < negatives * 5 / 100, "{stats:?}");
}

#[test]
fn delete_family_markers_have_their_own_bloom() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("del");
    let mut all = Vec::new();
    for r in 0..1000 {
        if r % 10 == 0 {
            all.push(Cell::delete_family(row(r), "f", 9).unwrap());
        }
        all.push(Cell::put(row(r), "f", "q", 5, "v").unwrap());
    }
    let info = write(&path, &all, WriterOptions::default());
    assert_eq!(info.delete_family_count, 100);
    let reader = open(&path);
    let with = (0..1000)
        .filter(|r| r % 10 == 0)
        .all(|r| reader.may_have_delete_family(&row(r)));
    assert!(with, "no false negatives");
    let without = (0..1000)
        .filter(|r| r % 10 != 0 && reader.may_have_delete_family(&row(*r)))
        .count();
    assert!(
        without < 40,
        "{without} of 900 rows without markers said maybe"
    );
    assert!(all.iter().any(|c| c.cell_type() == CellType::DeleteFamily));
}

#[test]
fn diff_encoding_and_lz4_shrink_repetitive_files_and_read_back_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let all = cells(3000, 4);
    let mut sizes = Vec::new();
    for encoding in [Encoding::None, Encoding::Diff] {
        for compression in [Compression::None, Compression::Lz4] {
            let path = dir.path().join(format!("{encoding:?}-{compression:?}"));
            let info = write(
                &path,
                &all,
                WriterOptions {
                    encoding,
                    compression,
                    ..WriterOptions::default()
                },
            );
            sizes.push(info.file_len);
            let reader = open(&path);
            assert_eq!(reader.info().encoding, encoding);
            let mut s = reader.scanner();
            for c in &all {
                assert_eq!(s.next().unwrap().as_ref(), Some(c));
            }
            assert_eq!(s.next().unwrap(), None);
        }
    }
    let (plain, lz4, diff, both) = (sizes[0], sizes[1], sizes[2], sizes[3]);
    assert!(diff < plain * 8 / 10, "DIFF {diff} vs NONE {plain}");
    assert!(lz4 < plain, "LZ4 {lz4} vs NONE {plain}");
    assert!(both < diff, "DIFF+LZ4 {both} vs DIFF {diff}");
}

#[test]
fn a_cell_larger_than_a_block_may_be_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big");
    let mut w = StoreFileWriter::create(fs(), &path, WriterOptions::default()).unwrap();
    let limits = keel_cell::CellLimits::UNLIMITED;
    let huge = Cell::builder("r", "f")
        .value(vec![0u8; 33 << 20])
        .limits(limits)
        .build()
        .unwrap();
    let err = w.append(&huge).unwrap_err();
    assert!(matches!(err, StoreFileError::CellTooLarge { .. }), "{err}");
    w.append(&Cell::put("s", "f", "q", 1, "small").unwrap())
        .unwrap();
    w.finish().unwrap();
    assert_eq!(open(&path).get(b"s").unwrap().len(), 1);
}
