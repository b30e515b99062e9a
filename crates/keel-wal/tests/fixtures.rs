//! Committed fixtures: a clean five-entry segment and four damaged copies. The generator must
//! reproduce every file byte for byte (so an accidental format change is caught), and each
//! damaged copy must give the outcome its recovery mode promises. `KEEL_BLESS=1` rewrites them.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::*;
use keel_fs::{FaultFs, FileSystem};
use keel_wal::format::{RECORD_HEADER_LEN, segment_name};
use keel_wal::{Corruption, RecoveryMode, ReplayOptions, WalEntry, WalError};

fn written() -> Vec<WalEntry> {
    (1..=5)
        .map(|seq| entry(1, seq, 16 * seq as usize))
        .collect()
}

/// The clean segment's bytes, and where each record starts.
fn clean() -> (Vec<u8>, Vec<usize>) {
    let (fault, fs) = fault_fs();
    let paths = write_segments(&fs, &written(), 10);
    let bytes = fault.contents(&paths[0]).expect("written");
    let mut starts = Vec::new();
    let mut at = keel_wal::format::HEADER_LEN;
    for e in written() {
        starts.push(at);
        at += RECORD_HEADER_LEN + e.encoded_len();
    }
    assert_eq!(at, bytes.len());
    (bytes, starts)
}

fn fixtures() -> Vec<(&'static str, Vec<u8>)> {
    let (bytes, starts) = clean();
    let mut truncated = bytes.clone();
    truncated.truncate(bytes.len() - 7);
    let mut flipped_tail = bytes.clone();
    let last = flipped_tail.len() - 5;
    flipped_tail[last] ^= 0x10;
    let mut zeroed = bytes.clone();
    zeroed.extend_from_slice(&[0; 512]);
    let mut corrupt_middle = bytes.clone();
    corrupt_middle[starts[1] + RECORD_HEADER_LEN + 3] ^= 0x01;
    vec![
        ("clean", bytes),
        ("truncated_tail", truncated),
        ("bit_flipped_tail", flipped_tail),
        ("zeroed_tail", zeroed),
        ("corrupt_middle", corrupt_middle),
    ]
}

fn fixture_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
        .join(segment_name(1))
}

#[test]
fn fixtures_match_the_generator_byte_for_byte() {
    for (name, bytes) in fixtures() {
        let path = fixture_path(name);
        if std::env::var_os("KEEL_BLESS").is_some() {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &bytes).unwrap();
        }
        let committed = std::fs::read(&path).unwrap_or_else(|e| {
            panic!("{}: {e} (run with KEEL_BLESS=1 to create)", path.display())
        });
        assert!(
            committed == bytes,
            "{name}: the format changed (KEEL_BLESS=1 to accept)"
        );
    }
}

/// Loads a committed fixture into a fresh in-memory WAL directory.
fn load(name: &str) -> Arc<dyn FileSystem> {
    let fault = FaultFs::new();
    let fs: Arc<dyn FileSystem> = Arc::new(fault);
    fs.create_dir_all(Path::new(DIR)).expect("mkdir");
    let bytes = std::fs::read(fixture_path(name)).expect("fixture is committed");
    let file = fs
        .create(&Path::new(DIR).join(segment_name(1)))
        .expect("create");
    file.append(&bytes).expect("load fixture");
    fs
}

fn outcome(name: &str, mode: RecoveryMode) -> (usize, Option<Corruption>, Option<Corruption>) {
    let (read, cut, err) = read_all(
        &load(name),
        ReplayOptions {
            mode,
            ..ReplayOptions::default()
        },
    );
    assert_eq!(
        read[..],
        written()[..read.len()],
        "{name}: replay is a prefix"
    );
    let err = err.map(|e| match e {
        WalError::Corrupt { reason, .. } => reason,
        other => panic!("{name}: {other}"),
    });
    (read.len(), cut.map(|c| c.reason), err)
}

#[test]
fn each_fixture_gives_its_recovery_mode_outcome() {
    use Corruption::{Checksum, TruncatedRecord};
    use RecoveryMode::{AbsoluteConsistency as Strict, TolerateTailCorruption as Tolerant};
    assert_eq!(outcome("clean", Tolerant), (5, None, None));
    assert_eq!(outcome("clean", Strict), (5, None, None));
    assert_eq!(outcome("zeroed_tail", Tolerant), (5, None, None));
    assert_eq!(outcome("zeroed_tail", Strict), (5, None, None));
    let truncated = |r: &Option<Corruption>| matches!(r, Some(TruncatedRecord { .. }));
    let (n, cut, err) = outcome("truncated_tail", Tolerant);
    assert!(n == 4 && truncated(&cut) && err.is_none());
    let (n, cut, err) = outcome("truncated_tail", Strict);
    assert!(n == 4 && cut.is_none() && truncated(&err));
    assert_eq!(
        outcome("bit_flipped_tail", Tolerant),
        (4, Some(Checksum), None)
    );
    assert_eq!(
        outcome("bit_flipped_tail", Strict),
        (4, None, Some(Checksum))
    );
    assert_eq!(
        outcome("corrupt_middle", Tolerant),
        (1, None, Some(Checksum))
    );
    assert_eq!(outcome("corrupt_middle", Strict), (1, None, Some(Checksum)));
}
