//! The committed fixture `fixtures/format-v1.ksf` (DIFF + LZ4, row bloom, delete-family bloom,
//! two index levels): it must read back exactly, and writing the same cells today must produce
//! the same bytes, so an accidental format change fails loudly. Regenerate only on purpose, with
//! a new FORMAT_VERSION: `KEEL_WRITE_FIXTURE=1 cargo test -p keel-storefile --test fixture`.

use std::path::PathBuf;
use std::sync::Arc;

use keel_cell::{Cell, CellType};
use keel_fs::{FileSystem, StdFs};
use keel_storefile::{
    BloomType, Compression, DirectSource, Encoding, FORMAT_VERSION, StoreFileReader,
    StoreFileWriter, WriterOptions,
};

fn fixture_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/format-v1.ksf")
}

fn fixture_cells() -> Vec<Cell> {
    let mut cells = Vec::new();
    for r in 0..300u32 {
        let row = format!("user{:06}", r * 37 % 1000);
        cells.push((row, r));
    }
    cells.sort();
    let mut out = Vec::new();
    for (row, r) in cells {
        if r % 25 == 0 {
            out.push(Cell::delete_family(row.clone(), "family", 900).expect("test setup"));
        }
        for q in 0..2u32 {
            let cell = Cell::builder(row.clone(), "family")
                .qualifier(format!("field{q}"))
                .timestamp(1_000 + i64::from(r))
                .cell_type(CellType::Put)
                .sequence_id(u64::from(r) + 1)
                .value(format!("value {r} {q}"))
                .build()
                .expect("test setup");
            out.push(cell);
        }
    }
    out
}

fn options() -> WriterOptions {
    WriterOptions {
        block_size: 512,
        encoding: Encoding::Diff,
        compression: Compression::Lz4,
        bloom: BloomType::Row,
        index_block_size: 1,
        ..WriterOptions::default()
    }
}

fn write(path: &std::path::Path) {
    let fs: Arc<dyn FileSystem> = Arc::new(StdFs);
    let mut w = StoreFileWriter::create(fs, path, options()).expect("test setup");
    for c in fixture_cells() {
        w.append(&c).expect("test setup");
    }
    w.finish().expect("test setup");
}

#[test]
fn the_committed_fixture_reads_back() {
    if std::env::var_os("KEEL_WRITE_FIXTURE").is_some() {
        write(&fixture_path());
    }
    assert_eq!(
        FORMAT_VERSION, 1,
        "a new format version needs a new fixture"
    );
    let reader = StoreFileReader::open(&StdFs, &fixture_path(), 1, Arc::new(DirectSource))
        .expect("test setup");
    let info = reader.info();
    assert_eq!(info.entry_count, 612);
    assert_eq!(info.delete_family_count, 12);
    assert_eq!(
        (info.encoding, info.compression),
        (Encoding::Diff, Compression::Lz4)
    );
    assert_eq!(info.index_levels, 2);
    let mut s = reader.scanner();
    for expected in fixture_cells() {
        assert_eq!(s.next().expect("test setup"), Some(expected));
    }
    assert_eq!(s.next().expect("test setup"), None);
}

#[test]
fn writing_the_fixture_cells_today_gives_the_same_bytes() {
    let dir = tempfile::tempdir().expect("test setup");
    let path = dir.path().join("again.ksf");
    write(&path);
    let today = std::fs::read(&path).expect("test setup");
    let committed = std::fs::read(fixture_path()).expect("test setup");
    assert!(
        today == committed,
        "the store-file format changed: bump FORMAT_VERSION and add a fixture"
    );
}
