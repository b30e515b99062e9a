//! Keel's embedded HBase-style store: keel-wal, keel-mvcc, keel-memstore, keel-storefile and
//! keel-blockcache composed into tables with the reordered write path (HBASE-15158), the read
//! path, flush and WAL replay. The write and read paths, durability contract, crash-consistency
//! argument and figures are in `docs/region.md`.
//!
//! The pieces:
//! - [`Region`]: one region's stores (a memstore and committed store files per family), the
//!   HBASE-15158 write path ([`Region::mutate`], with per-stage [`WriteTimings`]), gets merged
//!   from memstore and store files ([`Region::get`]), flush with an atomic manifest commit
//!   ([`Region::flush`]), and WAL replay on open.
//! - [`matcher`], HBase's read-side cell semantics (delete markers, versions, min versions, TTL,
//!   time range, MVCC visibility) as a streaming filter over the merged cells of every source.
//!
//! ```
//! use std::collections::HashMap;
//! use keel_cell::Cell;
//! use keel_region::matcher::{Matcher, ReadQuery};
//!
//! // Newest first, as a merge of memstore and store files yields them.
//! let cells = vec![
//!     Cell::put("r", "f", "q", 20, "new")?,
//!     Cell::delete_column("r", "f", "q", 15)?,
//!     Cell::put("r", "f", "q", 10, "old")?,
//! ];
//! let mut matcher = Matcher::new(ReadQuery::latest(u64::MAX, 0), HashMap::new());
//! let visible: Vec<&Cell> = cells.iter().filter(|c| matcher.admit(c)).collect();
//! assert_eq!(visible.len(), 1);
//! assert_eq!(&visible[0].value()[..], b"new");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(missing_docs)]

mod catalog;
mod checked_file;
pub mod compaction_policy;
mod error;
pub mod filter;
mod limits;
mod manifest;
pub mod matcher;
pub mod names;
mod region;
mod scan;
mod scanner;
mod server;
pub mod splits;
mod trace;

pub use error::RegionError;
pub use filter::{Comparator, CompareOp, Filter, FilterError, ListOp, ReturnCode};
pub use keel_blockcache::{AreaKind, PoolKind};
/// Store-file settings a family carries (re-exported so users need not depend on keel-storefile).
pub use keel_storefile::{BloomType, Compression, WriterOptions};
pub use limits::{
    CompactionThroughput, IN_MEMORY_FLUSHES_PER_FLUSH, InMemoryCompaction, RegionLimits,
};
pub use region::{
    BlockReads, CompactionOutcome, Durability, FamilyFiles, FamilyOptions, ReadModifyWrites,
    Region, RegionStats, WriteOrder, WriteTimings,
};
pub use scan::Scan;
pub use scanner::RegionScanner;
pub use server::{
    BlockCacheKind, Engine, EngineOptions, EngineStats, RegionInfo, Table, TableOptions,
    TableScanner, TableState,
};

/// The crate README's example, compiled and run as a doctest.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

#[cfg(test)]
mod tests;
