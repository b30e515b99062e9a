//! Writing and reading a store file on keel-storefile alone: 20 000 cells (2 000 rows of ten
//! columns) written sorted into one file with small blocks, DIFF encoding, LZ4 and a row bloom
//! filter; then read back by a full scan (borrowed cells), point gets of present and absent
//! rows, and a seek into the middle. Every answer is checked against the cells written.
//!
//! `cargo run -p keel-storefile --example write_and_read`

#![expect(clippy::print_stdout, reason = "an example reports what it did")]

use std::error::Error;
use std::ops::ControlFlow;
use std::sync::Arc;

use keel_cell::{Cell, CellKey};
use keel_fs::{FileSystem, StdFs};
use keel_storefile::{
    BloomType, Compression, DirectSource, Encoding, StoreFileReader, StoreFileWriter, WriterOptions,
};

fn main() -> Result<(), Box<dyn Error>> {
    let dir = tempfile::tempdir()?;
    let fs: Arc<dyn FileSystem> = Arc::new(StdFs);
    let path = dir.path().join("cells.sf");
    let mut cells = Vec::new();
    for row in 0..2_000u32 {
        for column in 0..10u32 {
            let value = format!(
                "row {row} column {column} {}",
                "x".repeat((row % 50) as usize)
            );
            cells.push(Cell::put(
                format!("user{:06}", row * 2),
                "cf",
                format!("field{column}"),
                1,
                value,
            )?);
        }
    }
    cells.sort();

    let options = WriterOptions {
        block_size: 8 * 1024,
        encoding: Encoding::Diff,
        compression: Compression::Lz4,
        bloom: BloomType::Row,
        ..WriterOptions::default()
    };
    let mut writer = StoreFileWriter::create(Arc::clone(&fs), &path, options)?;
    for cell in &cells {
        writer.append(cell)?;
    }
    let info = writer.finish()?;

    let reader = StoreFileReader::open(&*fs, &path, 1, Arc::new(DirectSource))?;
    // A full scan, each cell borrowed from its block.
    let mut scanned = 0usize;
    let mut mismatch = None;
    reader.scanner().for_each_ref(|cell| {
        if cells.get(scanned).map(Cell::borrowed) != Some(cell) {
            mismatch = Some(scanned);
            return ControlFlow::Break(());
        }
        scanned += 1;
        ControlFlow::Continue(())
    })?;
    if let Some(at) = mismatch {
        return Err(format!("the scan's cell {at} differs from the one written").into());
    }
    if scanned != cells.len() {
        return Err(format!("scanned {scanned} cells of {}", cells.len()).into());
    }
    // Gets: every present row has its ten columns; absent rows (odd numbers) have none.
    for row in (0..2_000u32).step_by(97) {
        let got = reader.get(format!("user{:06}", row * 2).as_bytes())?;
        if got.len() != 10 {
            return Err(format!("row {row}: {} cells, expected 10", got.len()).into());
        }
        if !reader
            .get(format!("user{:06}", row * 2 + 1).as_bytes())?
            .is_empty()
        {
            return Err(format!("absent row {} came back", row * 2 + 1).into());
        }
    }
    // A seek lands on the first cell at or after the key.
    let mut scanner = reader.scanner();
    scanner.seek(&CellKey::first_on_row("user002001"))?;
    let next = scanner.next()?.ok_or("the seek ran off the end")?;
    if next.row() != b"user002002" {
        return Err(format!("the seek landed on {:?}", next.row()).into());
    }
    let stats = reader.stats();
    println!(
        "{} cells in {} bytes ({:.2} of their size), scanned and checked; {} data blocks read",
        info.entry_count,
        info.file_len,
        info.file_len as f64 / cells.iter().map(|c| c.encoded_len()).sum::<usize>() as f64,
        stats.data_blocks
    );
    Ok(())
}
