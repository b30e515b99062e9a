//! Typed WAL errors: what failed, in which file, at which byte.

use std::io;
use std::path::PathBuf;

use keel_cell::DecodeError;

/// A WAL operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WalError {
    /// The file system refused an operation.
    #[error("WAL {op} failed on {path}: {source}")]
    Io {
        /// What was being done ("open", "append", "sync", …).
        op: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The underlying error (its kind is kept: `StorageFull` for ENOSPC).
        source: io::Error,
    },
    /// A segment's bytes are not a valid WAL.
    #[error("corrupt WAL segment {path} at byte {offset}: {reason}")]
    Corrupt {
        /// The segment file.
        path: PathBuf,
        /// Where the bad header or record starts.
        offset: u64,
        /// What is wrong there.
        reason: Corruption,
    },
    /// A write or sync failed earlier; the WAL refuses every append until it is reopened, because
    /// a failed fsync cannot be retried safely (the kernel may have dropped the dirty pages).
    #[error(
        "WAL poisoned by a failed write or sync ({cause}): it refuses every write until it is reopened (restart the server)"
    )]
    Poisoned {
        /// What failed first.
        cause: String,
    },
    /// A region's sequence ids must strictly increase.
    #[error("region {region}: sequence id {found} is not above the last logged {previous}")]
    SequenceNotIncreasing {
        /// The region.
        region: u64,
        /// The last sequence id logged for it.
        previous: u64,
        /// The one offered.
        found: u64,
    },
    /// The WAL is closed.
    #[error("WAL is closed")]
    Closed,
    /// The region was closed to this log ([`crate::Wal::close_region`]) and not opened again.
    #[error("region {region} is closed to the WAL: it must be opened before it logs again")]
    RegionClosed {
        /// The region.
        region: u64,
    },
    /// An entry is larger than the configured maximum.
    #[error("WAL entry of {size} bytes exceeds the {max}-byte limit")]
    EntryTooLarge {
        /// The entry's payload size.
        size: usize,
        /// The limit in force.
        max: usize,
    },
}

/// What is wrong with a segment's bytes.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Corruption {
    /// The file is shorter than a segment header.
    #[error("segment shorter than its {expected}-byte header ({found} bytes)")]
    ShortHeader {
        /// Header size.
        expected: usize,
        /// File size.
        found: u64,
    },
    /// The file does not start with the WAL magic.
    #[error("bad magic")]
    BadMagic,
    /// A format version this code does not read.
    #[error("unsupported format version {0}")]
    UnsupportedVersion(u32),
    /// The header's checksum does not match.
    #[error("header checksum mismatch")]
    HeaderChecksum,
    /// The header names another first LSN than the file name.
    #[error("header says first LSN {found}, file name says {expected}")]
    NameMismatch {
        /// From the file name.
        expected: u64,
        /// From the header.
        found: u64,
    },
    /// Segments do not follow each other: one is missing or duplicated.
    #[error("segment starts at LSN {found} but the previous one ended before LSN {expected}")]
    LsnGap {
        /// The LSN the previous segment's records end before.
        expected: u64,
        /// The LSN this segment starts at.
        found: u64,
    },
    /// Fewer bytes remain than a record header needs.
    #[error("truncated record header ({available} of 8 bytes)")]
    TruncatedHeader {
        /// Bytes left in the file.
        available: u64,
    },
    /// A record length above the limit.
    #[error("record length {len} above the {max}-byte limit")]
    BadLength {
        /// The length read.
        len: u64,
        /// The limit.
        max: usize,
    },
    /// A record runs past the end of the file.
    #[error("record of {needed} bytes runs past the end of the file ({available} left)")]
    TruncatedRecord {
        /// Bytes the record needs.
        needed: u64,
        /// Bytes left.
        available: u64,
    },
    /// A record's checksum does not match.
    #[error("record checksum mismatch")]
    Checksum,
    /// Non-zero bytes follow the end-of-data marker (a zero length).
    #[error("non-zero bytes after the end-of-data marker")]
    GarbageAfterEnd,
    /// The record's checksum matches but its entry does not decode.
    #[error("entry does not decode: {0}")]
    Entry(DecodeError),
    /// A region's sequence ids go backwards or repeat.
    #[error("region {region}: sequence id {found} after {previous}")]
    OutOfOrder {
        /// The region.
        region: u64,
        /// The sequence id before.
        previous: u64,
        /// The offending one.
        found: u64,
    },
}
