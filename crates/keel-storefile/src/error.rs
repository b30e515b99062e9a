//! What can go wrong writing or reading a store file, with the file and offset it happened at.

use std::path::PathBuf;

/// A store-file error. Corruption is always reported, never panicked on and never turned into a
/// wrong cell.
#[derive(Debug, thiserror::Error)]
pub enum StoreFileError {
    /// The file system failed.
    #[error("{op} {path}: {source}")]
    Io {
        /// What was being done (`read`, `write`, `sync`, `rename`, …).
        op: &'static str,
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The bytes at `offset` are not what the format says they must be.
    #[error("{path}: corrupt at offset {offset}: {what}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// Byte offset in the file of the structure that failed to check.
        offset: u64,
        /// What was wrong.
        what: String,
    },
    /// The file was written by an unknown format version.
    #[error("{path}: format version {found}, this build reads version {supported}")]
    Version {
        /// The file.
        path: PathBuf,
        /// The version in the trailer.
        found: u32,
        /// The version this build reads.
        supported: u32,
    },
    /// Cells were appended out of `CellComparator` order (or a duplicate key).
    #[error(
        "{path}: cell {next} appended after {previous}: store files take cells in sorted order"
    )]
    OutOfOrder {
        /// The file being written.
        path: PathBuf,
        /// The previous key, printable.
        previous: String,
        /// The offending key, printable.
        next: String,
    },
    /// A cell too large for one block (a block holds at most 64 MiB, so that a reader never
    /// trusts a larger size).
    #[error("{path}: a cell of {size} bytes on row {row} exceeds the {limit}-byte block limit")]
    CellTooLarge {
        /// The file being written.
        path: PathBuf,
        /// The cell's row, printable.
        row: String,
        /// The cell's encoded size.
        size: usize,
        /// The limit.
        limit: usize,
    },
    /// `finish` on a writer that was given no cells.
    #[error("{path}: a store file needs at least one cell")]
    Empty {
        /// The file being written.
        path: PathBuf,
    },
}

/// Result alias.
pub type Result<T> = std::result::Result<T, StoreFileError>;

pub(crate) fn corrupt(
    path: &std::path::Path,
    offset: u64,
    what: impl Into<String>,
) -> StoreFileError {
    StoreFileError::Corrupt {
        path: path.to_path_buf(),
        offset,
        what: what.into(),
    }
}

pub(crate) fn io(
    op: &'static str,
    path: &std::path::Path,
    source: std::io::Error,
) -> StoreFileError {
    StoreFileError::Io {
        op,
        path: path.to_path_buf(),
        source,
    }
}
