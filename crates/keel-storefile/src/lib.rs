//! Keel's store files: immutable, block-based, sorted files of cells in the spirit of HBase's
//! HFile v3. A flushed memstore or a compaction becomes one; reads that miss the memstore come
//! here, through a block cache the caller plugs in.
//!
//! - [`StoreFileWriter`] takes cells in `CellComparator` order and writes checksummed data
//!   blocks (NONE or DIFF [`Encoding`], optional LZ4 [`Compression`]), a multi-level block index,
//!   a row or row-column bloom filter and a delete-family bloom, [`FileInfo`] and a fixed trailer
//!   — under a temporary name, synced, then renamed.
//! - [`StoreFileReader`] opens a file by reading the trailer, the root index, the file info and
//!   the bloom filters; `get(row)` asks the bloom filter first; [`StoreFileScanner`] seeks,
//!   reseeks forward (skipping blocks through the index), peeks and steps. Every block is
//!   checksum-verified; corruption is a [`StoreFileError`] naming the file and offset, never a
//!   panic and never a wrong cell.
//! - Blocks come through a [`BlockSource`] keyed by (file id, offset): [`DirectSource`] reads
//!   every time; a cache implements the trait with a load-once hook.
//! - [`MergeScanner`] merges any number of [`KeyValueScanner`]s, newer sources first on ties.
//!
//! The format, byte by byte, is in `docs/storefile.md`.
//!
//! ```
//! use std::sync::Arc;
//! use keel_cell::Cell;
//! use keel_fs::StdFs;
//! use keel_storefile::{DirectSource, StoreFileReader, StoreFileWriter, WriterOptions};
//!
//! let dir = tempfile::tempdir()?;
//! let path = dir.path().join("f1");
//! let fs = Arc::new(StdFs);
//! let mut writer = StoreFileWriter::create(fs.clone(), &path, WriterOptions::default())?;
//! for row in ["a", "b", "c"] {
//!     writer.append(&Cell::put(row, "f", "q", 1, "v")?)?;
//! }
//! let info = writer.finish()?;
//! assert_eq!(info.entry_count, 3);
//!
//! let reader = StoreFileReader::open(&*fs, &path, 1, Arc::new(DirectSource))?;
//! assert_eq!(reader.get(b"b")?.len(), 1);
//! assert!(reader.get(b"zz")?.is_empty());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(missing_docs)]

mod bloom;
mod encoding;
mod error;
mod format;
mod index;
mod info;
mod merge;
mod range;
mod reader;
mod row_starts;
mod scanner;
mod source;
mod writer;

pub use bloom::BloomType;
pub use error::{Result, StoreFileError};
pub use format::{Compression, Encoding, FORMAT_VERSION};
pub use info::FileInfo;
pub use keel_cell::{Decide, RunRule, Take};
pub use merge::{KeyValueScanner, MergeScanner, VecScanner};
pub use range::{RangeScanner, RowRange};
pub use reader::{ReadStats, StoreFileReader};
pub use scanner::StoreFileScanner;
pub use source::{BlockKey, BlockSource, DirectSource};
pub use writer::{StoreFileWriter, WriterOptions};

#[cfg(test)]
mod tests;

/// The crate README's example, compiled and run as a doctest.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
