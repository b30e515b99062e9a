//! Keel's memstore: where acknowledged writes live until a flush writes them to a store file.
//!
//! A [`MemStore`] is HBase's `DefaultMemStore`: an active segment, a concurrent skiplist of cells
//! in CellComparator order (an arena skip list of Keel's own), that many writers and readers use at once, and
//! at most one pending [`Snapshot`] that a flush writes out and then clears.
//!
//! - [`MemStore::add`] takes cells with their sequence ids; [`MemStore::scanner`] and
//!   [`MemStore::get`] return raw cells in order, hiding those above the read point. Delete and
//!   version rules are the region's (it merges this scanner with store-file scanners).
//!   [`MemStore::row_scanner`] reads one row (a get), skipping every segment whose row filter
//!   (a growing Bloom filter of the rows it holds) rules the row out.
//!   [`MemStore::visit`] and [`Snapshot::visit`] walk the same cells borrowed, without cloning.
//! - [`MemStore::flatten`] is an in-memory flush (HBase's `CompactingMemStore`, policy BASIC):
//!   it freezes the active segment and merges every frozen one into a flat sorted array, which
//!   reads search and walk faster than a skip list. Its owner decides when (keel-region: at an
//!   eighth of the flush size).
//! - [`MemStore::snapshot`] freezes the active segment and the flattened ones atomically with
//!   respect to writers; until [`MemStore::clear_snapshot`], readers see them all, and a second
//!   `snapshot` returns the pending one.
//! - Sizes ([`SegmentSize`]) are atomics, readable any time without a lock.
//! - MSLAB: cell bytes are copied into 2 MiB chunks from a bounded shared [`ChunkPool`]; a chunk
//!   is reused only once no reader holds a cell from it. [`MemStoreOptions::mslab`] switches it off
//!   (each cell then gets one heap allocation of its own).
//!
//! ```
//! use keel_cell::{Cell, CellKey};
//! use keel_memstore::{MemStore, MemStoreOptions};
//!
//! let memstore = MemStore::new(MemStoreOptions::default());
//! let mut old = Cell::put("row1", "f", "q", 1, "old")?;
//! old.set_sequence_id(1);
//! let mut new = Cell::put("row1", "f", "q", 2, "new")?;
//! new.set_sequence_id(2);
//! memstore.add([old, new]);
//!
//! let at_1: Vec<_> = memstore.scanner(.., 1).collect();
//! assert_eq!(at_1.len(), 1, "sequence id 2 is above the read point");
//!
//! let snapshot = memstore.snapshot();
//! assert_eq!(snapshot.scanner().count(), 2);
//! assert_eq!(memstore.scanner(CellKey::first_on_row("row1").., 2).count(), 2);
//! memstore.clear_snapshot(snapshot.id())?;
//! assert_eq!(memstore.size().cell_count, 0);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(missing_docs)]

mod chunk;
mod flat;
mod memstore;
mod options;
mod row_filter;
mod row_hints;
mod scanner;
mod segment;
mod skiplist;
mod visit;

#[cfg(test)]
mod tests;

pub use chunk::{ChunkPool, ChunkPoolStats};
pub use memstore::{DEFAULT_POOLED_CHUNKS, MemStore, MemStoreError, Snapshot};
pub use options::{
    DEFAULT_CHUNK_SIZE, DEFAULT_MAX_COPIED_CELL, DEFAULT_PIPELINE_SEGMENTS_LIMIT, MemStoreOptions,
};
pub use scanner::MemStoreScanner;
pub use segment::{CELL_OVERHEAD_BYTES, SegmentSize};

/// The crate README's example, compiled and run as a doctest.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
