//! Keel's write-ahead log.
//!
//! This release holds the log's foundation: the on-disk format ([`format`](mod@format): CRC-framed records
//! in segment files named by log sequence number), [`SegmentWriter`] to write segments, and
//! [`replay`], a streaming reader that checks every byte, keeps constant memory whatever the
//! log's size, never panics on any content, and applies a [`RecoveryMode`] to a damaged tail.
//! The group-commit writer (durability levels, roll, truncation, poisoning, metrics) builds on
//! these; see `docs/wal.md` for what exists and what is still to come.
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
pub use wal::{AppendReceipt, Wal};
