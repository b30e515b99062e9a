//! Keel's write-ahead log.
//!
//! [`Wal`] is a group-commit log: any number of threads [`Wal::append`] entries at a
//! [`Durability`] level; one writer thread writes each batch with one call and covers every
//! waiting `FsyncWal` append with one `fdatasync`. Segments roll at a size, are truncated once
//! every region in them has flushed ([`Wal::mark_flushed`]), and replay ([`Wal::replay`],
//! [`replay`]) streams them back with constant memory, checking every byte, never panicking on
//! any content, and applying a [`RecoveryMode`] to a damaged tail. After a failed write or sync
//! the WAL is poisoned until reopened. The format is in [`format`](mod@format); the durability
//! contract, recovery modes and measured figures in `docs/wal.md`.
//!
//! What this crate is not: it does not assign sequence ids (the region ties them to MVCC write
//! numbers) and keeps no data beyond the log.
//!
//! ```
//! use std::path::Path;
//! use std::sync::Arc;
//! use keel_cell::Cell;
//! use keel_fs::{FileSystem, StdFs};
//! use keel_wal::{ReplayOptions, SegmentWriter, WalEntry, replay};
//!
//! let dir = std::env::temp_dir().join(format!("keel-wal-doc-{}", std::process::id()));
//! let fs: Arc<dyn FileSystem> = Arc::new(StdFs);
//! fs.create_dir_all(&dir)?;
//! let mut segment = SegmentWriter::create(&fs, &dir, 1, 1 << 20)?;
//! let cells = vec![Cell::builder("row", "f").value("v").sequence_id(7).build()?];
//! segment.append(&WalEntry { region: 1, sequence_id: 7, write_time_ms: 0, cells })?;
//! segment.sync()?;
//! let entries: Vec<WalEntry> = replay(fs.clone(), &dir, ReplayOptions::default())?
//!     .collect::<Result<_, _>>()?;
//! assert_eq!(entries[0].sequence_id, 7);
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod error;
pub mod format;
mod metrics;
mod options;
mod replay;
mod segment;
mod wal;

pub use error::{Corruption, WalError};
pub use format::WalEntry;
pub use metrics::{AppendTimings, WalStats};
pub use options::{Durability, WalOptions};
pub use replay::{RecoveryMode, Replay, ReplayOptions, TailCut, replay};
pub use segment::{DEFAULT_MAX_ENTRY_SIZE, SegmentWriter};
pub use wal::{AppendReceipt, AppendTicket, PendingAppend, Wal};

/// The crate README's example, compiled and run as a doctest.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
