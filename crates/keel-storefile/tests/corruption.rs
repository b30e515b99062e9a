//! Damaged files: truncated at random offsets, random bits flipped, random ranges overwritten.
//! Opening or reading (cell by cell, a row at a time, by gets and seeks) must return an error or
//! exactly the original cells — never panic and never yield a cell the writer did not write
//! where it wrote it.

use std::sync::Arc;

use bytes::Bytes;
use keel_cell::{Cell, CellKey};
use keel_fs::{FileSystem, StdFs};
use keel_storefile::{
    Compression, DirectSource, Encoding, KeyValueScanner, StoreFileReader, StoreFileWriter, Take,
    WriterOptions,
};
use rand::Rng;

fn original() -> Vec<Cell> {
    let mut cells = Vec::new();
    for r in 0..400u32 {
        for q in 0..3u32 {
            let value = format!("v{r}-{q}-{}", "x".repeat((r % 17) as usize));
            cells.push(
                Cell::put(format!("row{r:05}"), "f", format!("q{q}"), 3, value)
                    .expect("test setup"),
            );
        }
    }
    cells
}

/// Everything a reader yields from `path`: the full scan and a few gets, or the first error.
fn read_all(path: &std::path::Path, cells: &[Cell]) -> Result<(), String> {
    let fs = StdFs;
    let reader =
        StoreFileReader::open(&fs, path, 1, Arc::new(DirectSource)).map_err(|e| e.to_string())?;
    let mut scanner = reader.scanner();
    let mut i = 0;
    loop {
        match scanner.next() {
            Ok(Some(cell)) => {
                assert_eq!(
                    Some(&cell),
                    cells.get(i),
                    "a damaged file yielded a wrong cell at {i}"
                );
                i += 1;
            }
            Ok(None) => break,
            Err(e) => return Err(e.to_string()),
        }
    }
    assert_eq!(i, cells.len(), "a damaged file lost cells without an error");
    for r in [0u32, 77, 399] {
        let row = Bytes::from(format!("row{r:05}"));
        let got = reader.get(&row).map_err(|e| e.to_string())?;
        let expected: Vec<Cell> = cells.iter().filter(|c| c.row() == row).cloned().collect();
        assert_eq!(got, expected);
    }
    // Row by row through `take_row`, every cell kept: the same cells, or an error.
    let mut s = reader.scanner();
    s.seek(&CellKey::first_on_row(Bytes::new()))
        .map_err(|e| e.to_string())?;
    let mut taken = Vec::new();
    while let Some(first) = s.peek() {
        let row = first.row_bytes();
        s.take_row(&row, &mut taken, &mut |_, _| Take::Keep)
            .map_err(|e| e.to_string())?;
    }
    assert_eq!(taken, cells, "a damaged file's rows taken whole");
    let mut s = reader.scanner();
    s.seek(&CellKey::first_on_row(Bytes::from("row00200")))
        .map_err(|e| e.to_string())?;
    assert_eq!(s.peek(), cells.iter().find(|c| c.row() == b"row00200"));
    Ok(())
}

#[test]
fn damage_is_an_error_or_harmless_never_a_panic_or_a_wrong_cell() {
    let cells = original();
    let dir = tempfile::tempdir().expect("test setup");
    let mut rng = keel_testkit::rng();
    let variants = [
        (Encoding::None, Compression::None),
        (Encoding::Diff, Compression::Lz4),
    ];
    let rounds = if cfg!(debug_assertions) { 150 } else { 600 };
    for (v, (encoding, compression)) in variants.into_iter().enumerate() {
        let good = dir.path().join(format!("good{v}"));
        let fs: Arc<dyn FileSystem> = Arc::new(StdFs);
        let options = WriterOptions {
            block_size: 2048,
            encoding,
            compression,
            index_block_size: 1,
            ..WriterOptions::default()
        };
        let mut w = StoreFileWriter::create(Arc::clone(&fs), &good, options).expect("test setup");
        for c in &cells {
            w.append(c).expect("test setup");
        }
        w.finish().expect("test setup");
        read_all(&good, &cells).expect("the undamaged file reads back");
        let bytes = std::fs::read(&good).expect("test setup");
        let bad = dir.path().join(format!("bad{v}"));
        let (mut errors, mut harmless) = (0, 0);
        for round in 0..rounds {
            let mut damaged = bytes.clone();
            match round % 3 {
                0 => damaged.truncate(rng.random_range(0..bytes.len())),
                1 => {
                    let at = rng.random_range(0..bytes.len());
                    damaged[at] ^= 1 << rng.random_range(0..8);
                }
                _ => {
                    let at = rng.random_range(0..bytes.len());
                    let end = (at + rng.random_range(1..64)).min(bytes.len());
                    rng.fill(&mut damaged[at..end]);
                }
            }
            std::fs::write(&bad, &damaged).expect("test setup");
            match read_all(&bad, &cells) {
                Err(message) => {
                    assert!(message.contains("bad"), "errors name the file: {message}");
                    errors += 1;
                }
                Ok(()) => harmless += 1,
            }
        }
        // Every byte is under a checksum, so damage is almost always caught; "harmless" is a
        // random overwrite that happened to write the same bytes back.
        assert!(
            errors > rounds * 9 / 10,
            "{errors} errors, {harmless} harmless of {rounds}"
        );
    }
}
