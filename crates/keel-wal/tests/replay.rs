//! Replay: round trips across segments, filtering, ordering checks, and every kind of damage in
//! the middle and at the tail under both recovery modes.

mod common;

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use common::*;
use keel_fs::{Fault, FileSystem, StdFs};
use keel_wal::format::{HEADER_LEN, RECORD_HEADER_LEN, segment_name};
use keel_wal::{Corruption, RecoveryMode, ReplayOptions, SegmentWriter, WalError};

fn entries(n: u64) -> Vec<keel_wal::WalEntry> {
    (1..=n)
        .map(|seq| entry(seq % 3, seq, 40 + seq as usize))
        .collect()
}

fn strict() -> ReplayOptions {
    ReplayOptions {
        mode: RecoveryMode::AbsoluteConsistency,
        ..ReplayOptions::default()
    }
}

fn corrupt_reason(err: &Option<WalError>) -> (&Corruption, u64, String) {
    match err {
        Some(WalError::Corrupt {
            reason,
            offset,
            path,
        }) => (reason, *offset, path.display().to_string()),
        other => panic!("expected a corruption error, got {other:?}"),
    }
}

#[test]
fn entries_round_trip_across_segments_in_order() {
    let (_, fs) = fault_fs();
    let written = entries(25);
    let paths = write_segments(&fs, &written, 10);
    assert_eq!(paths.len(), 3);
    assert!(
        paths[1].ends_with(segment_name(11)),
        "segments are named by first LSN"
    );
    let mut replay =
        keel_wal::replay(fs.clone(), Path::new(DIR), ReplayOptions::default()).unwrap();
    let read: Vec<_> = replay.by_ref().map(Result::unwrap).collect();
    assert_eq!(read, written);
    assert_eq!(replay.next_lsn(), 26);
    assert!(replay.tail_cut().is_none());
    assert_eq!(replay.segments().count(), 3);
}

#[test]
fn an_empty_or_missing_log_replays_nothing() {
    let (_, fs) = fault_fs();
    fs.create_dir_all(Path::new(DIR)).unwrap();
    let (read, cut, err) = read_all(&fs, ReplayOptions::default());
    assert!(read.is_empty() && cut.is_none() && err.is_none());
    let missing = keel_wal::replay(fs, Path::new("/nope"), ReplayOptions::default()).unwrap_err();
    assert!(
        matches!(missing, WalError::Io { op: "list", .. }),
        "{missing}"
    );
}

#[test]
fn flushed_entries_are_skipped_per_region() {
    let (_, fs) = fault_fs();
    let written = entries(12);
    write_segments(&fs, &written, 5);
    let flushed = HashMap::from([(0, 9), (1, 4)]);
    let (read, _, err) = read_all(
        &fs,
        ReplayOptions {
            flushed,
            ..ReplayOptions::default()
        },
    );
    assert!(err.is_none());
    let expected: Vec<_> = written
        .into_iter()
        .filter(|e| match e.region {
            0 => e.sequence_id > 9,
            1 => e.sequence_id > 4,
            _ => true,
        })
        .collect();
    assert_eq!(read, expected);
}

#[test]
fn sequence_ids_going_backwards_are_corruption() {
    let (_, fs) = fault_fs();
    write_segments(&fs, &[entry(7, 5, 10), entry(7, 5, 10)], 10);
    let (read, _, err) = read_all(&fs, ReplayOptions::default());
    assert_eq!(read.len(), 1);
    let (reason, offset, path) = corrupt_reason(&err);
    assert_eq!(
        reason,
        &Corruption::OutOfOrder {
            region: 7,
            previous: 5,
            found: 5
        }
    );
    assert!(offset > HEADER_LEN as u64 && path.ends_with(&segment_name(1)));
}

#[test]
fn a_missing_middle_segment_is_a_gap() {
    let (_, fs) = fault_fs();
    let paths = write_segments(&fs, &entries(9), 3);
    fs.remove(&paths[1]).unwrap();
    let (read, _, err) = read_all(&fs, ReplayOptions::default());
    assert_eq!(read.len(), 3);
    assert_eq!(
        corrupt_reason(&err).0,
        &Corruption::LsnGap {
            expected: 4,
            found: 7
        }
    );
}

#[test]
fn header_damage_is_named() {
    let cases: [(&str, u64, &[u8]); 4] = [
        ("magic", 0, b"X"),
        ("version", 8, &[9]),
        ("lsn", 12, &[99]),
        ("crc", 21, &[0xAB]),
    ];
    for (what, offset, bytes) in cases {
        let (_, fs) = fault_fs();
        let paths = write_segments(&fs, &entries(4), 2);
        poke(&fs, &paths[0], offset, bytes);
        let (_, _, err) = read_all(&fs, ReplayOptions::default());
        let reason = corrupt_reason(&err).0.clone();
        let ok = match what {
            "magic" => reason == Corruption::BadMagic,
            // The checksum is checked before the fields it covers.
            _ => reason == Corruption::HeaderChecksum,
        };
        assert!(ok, "{what}: {reason:?}");
    }
    // A correct checksum over a wrong LSN: the file was renamed.
    let (_, fs) = fault_fs();
    let paths = write_segments(&fs, &entries(2), 2);
    fs.rename(&paths[0], &Path::new(DIR).join(segment_name(5)))
        .unwrap();
    let (_, _, err) = read_all(&fs, ReplayOptions::default());
    assert_eq!(
        corrupt_reason(&err).0,
        &Corruption::NameMismatch {
            expected: 5,
            found: 1
        }
    );
}

/// Damage to the last record of the last segment is a torn write: cut (and reported) when
/// tolerating, an error when not.
#[test]
fn a_damaged_tail_is_cut_or_refused_by_mode() {
    type Damage = fn(&Arc<dyn FileSystem>, &Path, u64);
    let damages: [(&str, Damage); 4] = [
        ("truncated payload", |fs, path, len| {
            fs.open(path).unwrap().truncate(len - 5).unwrap()
        }),
        ("truncated frame", |fs, path, len| {
            let last_record = (RECORD_HEADER_LEN + entry(1, 10, 140).encoded_len()) as u64;
            fs.open(path)
                .unwrap()
                .truncate(len - last_record + 3)
                .unwrap();
        }),
        ("bit flip in payload", |fs, path, len| {
            poke(fs, path, len - 3, &[0xFF])
        }),
        ("zeroed payload", |fs, path, len| {
            poke(fs, path, len - 20, &[0; 20])
        }),
    ];
    for (what, damage) in damages {
        let (_, fs) = fault_fs();
        // Ten entries with values of 40 + 10 × seq bytes.
        let written: Vec<_> = (1..=10)
            .map(|seq| entry(1, seq, 40 + 10 * seq as usize))
            .collect();
        let paths = write_segments(&fs, &written, 6);
        let last = paths.last().unwrap().clone();
        let len = file_len(&fs, &last);
        damage(&fs, &last, len);

        let (read, cut, err) = read_all(&fs, ReplayOptions::default());
        assert!(err.is_none(), "{what}: {err:?}");
        assert_eq!(
            read,
            written[..9],
            "{what}: everything before the torn record"
        );
        let cut = cut.unwrap_or_else(|| panic!("{what}: no tail cut reported"));
        assert_eq!((cut.path, cut.next_lsn), (last.clone(), 10), "{what}");

        let (read, cut, err) = read_all(&fs, strict());
        assert_eq!(read.len(), 9, "{what}");
        assert!(cut.is_none());
        let (_, offset, path) = corrupt_reason(&err);
        assert!(path.ends_with(&segment_name(7)) && offset > 0, "{what}");
    }
}

#[test]
fn damage_before_the_tail_is_always_an_error() {
    for mode in [
        RecoveryMode::TolerateTailCorruption,
        RecoveryMode::AbsoluteConsistency,
    ] {
        let (_, fs) = fault_fs();
        let paths = write_segments(&fs, &entries(10), 10);
        // A bit flip in the third record's payload, with valid records after it.
        let written = entries(10);
        let record = |e: &keel_wal::WalEntry| (RECORD_HEADER_LEN + e.encoded_len()) as u64;
        let third = HEADER_LEN as u64 + record(&written[0]) + record(&written[1]);
        poke(
            &fs,
            &paths[0],
            third + RECORD_HEADER_LEN as u64 + 30,
            &[0x5A],
        );
        let (read, cut, err) = read_all(
            &fs,
            ReplayOptions {
                mode,
                ..ReplayOptions::default()
            },
        );
        assert!(cut.is_none(), "{mode:?}");
        assert!(read.len() < 10, "{mode:?}");
        let (reason, _, _) = corrupt_reason(&err);
        assert!(
            matches!(
                reason,
                Corruption::Checksum
                    | Corruption::BadLength { .. }
                    | Corruption::TruncatedRecord { .. }
                    | Corruption::Entry(_)
            ),
            "{reason:?}"
        );
        // Damage in the last record of a segment that is not the last is an error too.
        let (_, fs) = fault_fs();
        let paths = write_segments(&fs, &entries(10), 5);
        let len = file_len(&fs, &paths[0]);
        poke(&fs, &paths[0], len - 2, &[0x5A]);
        let (read, cut, err) = read_all(
            &fs,
            ReplayOptions {
                mode,
                ..ReplayOptions::default()
            },
        );
        assert!(cut.is_none() && read.len() == 4, "{mode:?}");
        assert_eq!(corrupt_reason(&err).0, &Corruption::Checksum);
    }
}

#[test]
fn an_absurd_record_length_is_never_a_tail() {
    let (_, fs) = fault_fs();
    let paths = write_segments(&fs, &entries(3), 3);
    let len = file_len(&fs, &paths[0]);
    let last_start = len
        - (RECORD_HEADER_LEN as u64
            + 40
            + 3
            + keel_cell::CELL_HEADER_LEN as u64
            + 5
            + 1
            + 1
            + 24
            + 5);
    let _ = last_start;
    // Append a frame claiming 2 GiB.
    fs.open(&paths[0])
        .unwrap()
        .append(&[0, 0, 0, 0x80, 1, 2, 3, 4])
        .unwrap();
    let (read, cut, err) = read_all(&fs, ReplayOptions::default());
    assert_eq!(read.len(), 3);
    assert!(cut.is_none());
    assert!(matches!(
        corrupt_reason(&err).0,
        Corruption::BadLength {
            len: 2_147_483_648,
            ..
        }
    ));
}

#[test]
fn zeroed_preallocated_space_is_a_clean_end() {
    let (_, fs) = fault_fs();
    let paths = write_segments(&fs, &entries(4), 4);
    fs.open(&paths[0]).unwrap().append(&[0; 4096]).unwrap();
    let (read, cut, err) = read_all(&fs, strict());
    assert_eq!((read.len(), cut, err.is_none()), (4, None, true));
    // A few zero bytes (less than a frame) too.
    fs.open(&paths[0])
        .unwrap()
        .truncate(file_len(&fs, &paths[0]) - 4093)
        .unwrap();
    let (read, _, err) = read_all(&fs, strict());
    assert_eq!((read.len(), err.is_none()), (4, true));
    // But garbage after the end-of-data marker is damage.
    let len = file_len(&fs, &paths[0]);
    poke(&fs, &paths[0], len - 1, &[7]);
    let (_, _, err) = read_all(&fs, strict());
    assert!(err.is_some());
}

#[test]
fn a_segment_torn_at_creation_is_cut_only_when_last() {
    let (_, fs) = fault_fs();
    write_segments(&fs, &entries(3), 3);
    // A crash right after creating segment 4: its header never reached the disk.
    fs.create(&Path::new(DIR).join(segment_name(4)))
        .unwrap()
        .append(&[0; 10])
        .unwrap();
    let (read, cut, err) = read_all(&fs, ReplayOptions::default());
    assert!(err.is_none());
    assert_eq!(read.len(), 3);
    assert_eq!(cut.map(|c| (c.offset, c.next_lsn)), Some((0, 4)));
    let (_, _, err) = read_all(&fs, strict());
    assert!(matches!(
        corrupt_reason(&err).0,
        Corruption::ShortHeader { found: 10, .. }
    ));
}

#[test]
fn a_short_write_is_a_tail_and_a_crash_keeps_exactly_the_synced_entries() {
    let (fault, fs) = fault_fs();
    let dir = Path::new(DIR);
    fs.create_dir_durable(dir).unwrap();
    let mut writer = SegmentWriter::create(&fs, dir, 1, 1 << 20).unwrap();
    for seq in 1..=5 {
        writer.append(&entry(1, seq, 100)).unwrap();
    }
    writer.sync().unwrap();
    writer.append(&entry(1, 6, 100)).unwrap();
    fault.inject(Fault::short_write(1));
    assert!(writer.append(&entry(1, 7, 100)).is_err());
    let (read, cut, _) = read_all(&fs, ReplayOptions::default());
    assert_eq!(read.len(), 6, "live view: the torn seventh record is cut");
    assert!(matches!(
        cut.map(|c| c.reason),
        Some(Corruption::TruncatedRecord { .. })
    ));
    // After a power cut only the synced five remain, with no garbage.
    let image: Arc<dyn FileSystem> = Arc::new(fault.crash_image());
    let (read, cut, err) = read_all(&image, strict());
    assert_eq!((read.len(), cut, err.is_none()), (5, None, true));
}

#[test]
fn oversized_entries_are_refused_at_append() {
    let fs: Arc<dyn FileSystem> = Arc::new(StdFs);
    let tmp = tempfile::tempdir().unwrap();
    let mut writer = SegmentWriter::create(&fs, tmp.path(), 1, 100).unwrap();
    let err = writer.append(&entry(1, 1, 200)).unwrap_err();
    assert!(
        matches!(err, WalError::EntryTooLarge { max: 100, .. }),
        "{err}"
    );
    assert_eq!(writer.next_lsn(), 1);
    assert!(err.to_string().contains("exceeds the 100-byte limit"));
    // The real file system works the same way.
    writer.append(&entry(1, 1, 10)).unwrap();
    writer.sync().unwrap();
    let replayed: Vec<_> = keel_wal::replay(fs, tmp.path(), ReplayOptions::default())
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(replayed, vec![entry(1, 1, 10)]);
}

#[test]
fn io_errors_name_the_file() {
    let (fault, fs) = fault_fs();
    write_segments(&fs, &entries(2), 2);
    fault.inject(Fault::fail_read(1));
    let (_, _, err) = read_all(&fs, ReplayOptions::default());
    match err {
        Some(WalError::Io {
            op: "read", path, ..
        }) => assert!(path.ends_with(segment_name(1))),
        other => panic!("{other:?}"),
    }
}
