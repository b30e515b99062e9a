//! What a region operation can fail with, naming what it was doing.

use std::path::PathBuf;

/// A region error.
#[derive(Debug, thiserror::Error)]
pub enum RegionError {
    /// The write-ahead log failed (the edit is not acknowledged).
    #[error("WAL: {0}")]
    Wal(#[from] keel_wal::WalError),
    /// A store file could not be written or read.
    #[error("store file: {0}")]
    StoreFile(#[from] keel_storefile::StoreFileError),
    /// Row locks could not be taken in time.
    #[error("row lock: {0}")]
    RowLock(#[from] keel_mvcc::RowLockError),
    /// MVCC refused to move (region open).
    #[error("MVCC: {0}")]
    Mvcc(#[from] keel_mvcc::MvccError),
    /// The file system failed.
    #[error("{op} {path}: {source}")]
    Io {
        /// What was being done.
        op: &'static str,
        /// The path.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The manifest is damaged.
    #[error("{path}: corrupt manifest: {what}")]
    CorruptManifest {
        /// The manifest file.
        path: PathBuf,
        /// What was wrong.
        what: String,
    },
    /// An increment found a value that is not an 8-byte counter.
    #[error("row {row}: the counter cell holds {len} bytes, not 8")]
    NotACounter {
        /// The row, printable.
        row: String,
        /// The value's length.
        len: usize,
    },
    /// A single-row operation was given cells of another row.
    #[error("an operation on row {row} got a cell of row {other}")]
    NotOneRow {
        /// The checked row.
        row: String,
        /// The other row.
        other: String,
    },
    /// No table of that name.
    #[error("no table {0}")]
    NoSuchTable(String),
    /// A table of that name exists already.
    #[error("table {0} exists")]
    TableExists(String),
    /// The table is disabled.
    #[error("table {0} is disabled")]
    TableDisabled(String),
    /// The table must be disabled first.
    #[error("table {0} is enabled: disable it first")]
    TableEnabled(String),
    /// A table or family name that breaks HBase's rules.
    #[error(transparent)]
    BadName(#[from] crate::names::NameError),
    /// A table needs at least one column family.
    #[error("table {0} needs at least one column family")]
    NoFamilies(String),
    /// A split or merge that cannot be done (as asked, or yet).
    #[error("table {table}, region {region}: cannot split or merge: {why}")]
    SplitRefused {
        /// The table.
        table: String,
        /// The region.
        region: u64,
        /// Why not.
        why: String,
    },
    /// Split keys a table cannot be created with.
    #[error("table {table}: bad split keys: {why}")]
    BadSplitKeys {
        /// The table.
        table: String,
        /// What is wrong with them.
        why: String,
    },
    /// More families than a table may have.
    #[error("table {table}: {count} column families; a table may have at most {max}")]
    TooManyFamilies {
        /// The table.
        table: String,
        /// Families asked for.
        count: usize,
        /// The limit (`EngineOptions::max_families_per_table`).
        max: usize,
    },
    /// A family named twice in one table.
    #[error("table {table}: column family {family} is named twice")]
    DuplicateFamily {
        /// The table.
        table: String,
        /// The family, printable.
        family: String,
    },
    /// The region no longer takes reads or writes: its table is being disabled or deleted, or
    /// was (HBase's `NotServingRegionException`).
    #[error("region {region} is closed (its table is being disabled, or was)")]
    RegionClosed {
        /// The region id.
        region: u64,
    },
    /// The table's region could not be opened at start (HBase's `FAILED_OPEN`): the table
    /// serves nothing until an operator repairs it and enables it again.
    #[error("table {table}: its region failed to open: {reason}")]
    FailedOpen {
        /// The table.
        table: String,
        /// Why.
        reason: String,
    },
    /// A file in a format this version no longer reads.
    #[error(
        "{path}: format {found:?} was written by an older Keel; this version reads only {supported:?} (move the directory aside and recreate the tables)"
    )]
    UnsupportedFormat {
        /// The file.
        path: PathBuf,
        /// Its first line.
        found: String,
        /// What this version reads.
        supported: &'static str,
    },
    /// A change would make a checked file larger than it may be read back.
    #[error(
        "{path}: the change would make it {bytes} bytes, above the {max}-byte limit it is read with"
    )]
    FileTooLarge {
        /// The file.
        path: PathBuf,
        /// Its size with the change.
        bytes: usize,
        /// The limit.
        max: usize,
    },
    /// The mini-batch an operation was part of failed (the WAL refused it).
    #[error("batch failed: {0}")]
    BatchFailed(String),
    /// A cell could not be built (a limit was exceeded).
    #[error("bad cell: {0}")]
    BadCell(String),
    /// The region's memstores are above flush size × block multiplier (HBase's
    /// `RegionTooBusyException`): a flush was requested; retry after it.
    #[error(
        "region {region} too busy: memstore {memstore} bytes over its limit of {limit}; a flush was requested"
    )]
    RegionTooBusy {
        /// The region id.
        region: u64,
        /// Its memstore size.
        memstore: u64,
        /// The blocking size.
        limit: u64,
    },
    /// Memstore memory across the server stayed above the high watermark for longer than the
    /// writer may wait.
    #[error("memstore memory {used} bytes above the server's limit of {limit} for {waited:?}")]
    MemoryFull {
        /// Bytes held in memstores.
        used: u64,
        /// The high watermark.
        limit: u64,
        /// How long the write waited.
        waited: std::time::Duration,
    },
    /// A compaction was stopped because the server or the region is closing; nothing was
    /// committed.
    #[error("region {0}: compaction cancelled (the server or the region is closing)")]
    CompactionCancelled(u64),
    /// The server's memory settings do not fit together.
    #[error("memory settings: {0}")]
    MemoryConfig(String),
    /// A write whose WAL entry would exceed the log's limit (`WalOptions::max_entry_size`).
    #[error(
        "region {region}: a write (first row {row}) of {bytes} bytes exceeds the WAL's {max}-byte entry limit"
    )]
    WriteTooLarge {
        /// The region id.
        region: u64,
        /// Its first row, printable.
        row: String,
        /// Its WAL entry's size.
        bytes: usize,
        /// The limit.
        max: usize,
    },
    /// A cell names a family the region does not have.
    #[error("no column family {family} in region {region}")]
    NoSuchFamily {
        /// The family, printable.
        family: String,
        /// The region id.
        region: u64,
    },
}

pub(crate) fn io(op: &'static str, path: &std::path::Path, source: std::io::Error) -> RegionError {
    RegionError::Io {
        op,
        path: path.to_path_buf(),
        source,
    }
}
