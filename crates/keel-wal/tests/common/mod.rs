//! Helpers shared by the WAL's integration tests.

#![allow(dead_code, reason = "each test file uses a different subset")]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use keel_cell::Cell;
use keel_fs::{FaultFs, FileSystem};
use keel_wal::{ReplayOptions, SegmentWriter, TailCut, WalEntry, WalError, replay};

pub(crate) const DIR: &str = "/wal";

/// A small deterministic entry.
pub(crate) fn entry(region: u64, sequence_id: u64, value_len: usize) -> WalEntry {
    let value = vec![(sequence_id % 251) as u8; value_len];
    let cell = Cell::builder(format!("row-{sequence_id}"), "f")
        .qualifier("q")
        .timestamp(sequence_id as i64)
        .sequence_id(sequence_id)
        .value(value)
        .build()
        .expect("a valid cell");
    WalEntry {
        region,
        sequence_id,
        write_time_ms: 1_700_000_000_000 + sequence_id as i64,
        cells: vec![cell],
    }
}

/// Writes `entries` into segments of `per_segment` records each, syncing every segment.
pub(crate) fn write_segments(
    fs: &Arc<dyn FileSystem>,
    entries: &[WalEntry],
    per_segment: usize,
) -> Vec<PathBuf> {
    let dir = Path::new(DIR);
    fs.create_dir_durable(dir).expect("mkdir");
    let mut paths = Vec::new();
    let mut lsn = 1;
    for chunk in entries.chunks(per_segment.max(1)) {
        let mut writer = SegmentWriter::create(fs, dir, lsn, 1 << 20).expect("create segment");
        for e in chunk {
            lsn = writer.append(e).expect("append") + 1;
        }
        writer.sync().expect("sync");
        paths.push(writer.path().to_path_buf());
    }
    paths
}

/// Replays everything: the entries read, the tail cut, or the error.
pub(crate) fn read_all(
    fs: &Arc<dyn FileSystem>,
    options: ReplayOptions,
) -> (Vec<WalEntry>, Option<TailCut>, Option<WalError>) {
    let mut replay = replay(Arc::clone(fs), Path::new(DIR), options).expect("open replay");
    let mut entries = Vec::new();
    let mut error = None;
    for item in replay.by_ref() {
        match item {
            Ok(entry) => entries.push(entry),
            Err(err) => error = Some(err),
        }
    }
    (entries, replay.tail_cut().cloned(), error)
}

pub(crate) fn fault_fs() -> (FaultFs, Arc<dyn FileSystem>) {
    let fault = FaultFs::new();
    let fs: Arc<dyn FileSystem> = Arc::new(fault.clone());
    (fault, fs)
}

/// Overwrites bytes of a file in place.
pub(crate) fn poke(fs: &Arc<dyn FileSystem>, path: &Path, offset: u64, bytes: &[u8]) {
    fs.open(path)
        .expect("open")
        .write_at(bytes, offset)
        .expect("poke");
}

pub(crate) fn file_len(fs: &Arc<dyn FileSystem>, path: &Path) -> u64 {
    fs.open(path).expect("open").len().expect("len")
}
