//! [`WalOptions`] and [`Durability`].

use std::path::PathBuf;
use std::time::Duration;

use crate::replay::RecoveryMode;
use crate::segment::DEFAULT_MAX_ENTRY_SIZE;

/// How durable an append is before it is acknowledged, with HBase's names (ordered weakest first;
/// a batch takes the strongest level among its members).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Durability {
    /// Nothing is logged: lost on any crash.
    SkipWal,
    /// Acknowledged once buffered; the writer writes it at once and syncs it with the next
    /// `FsyncWal` append, roll, `sync()`, close, or at most `async_sync_interval` later.
    AsyncWal,
    /// Acknowledged once `write(2)` has put it in the OS page cache: survives a process crash,
    /// not a power cut (HBase's default, like HDFS hflush).
    #[default]
    SyncWal,
    /// Acknowledged after `fdatasync`: survives a power cut (like HDFS hsync). Also makes every
    /// entry before it durable.
    FsyncWal,
}

/// How a [`crate::Wal`] is run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WalOptions {
    /// Roll to a new segment once the current one passes this many bytes. HBase rolls at
    /// block size × 0.5 (`hbase.regionserver.logroll.multiplier`); Keel has no HDFS block, so
    /// 64 MiB: large enough that rolls are rare, small enough that truncation frees space often.
    pub roll_size: u64,
    /// Closed segments kept before the WAL asks for flushes so the oldest can go. HBase
    /// `hbase.regionserver.maxlogs`, 32.
    pub max_segments: usize,
    /// Most bytes buffered before appenders block (bounds memory).
    pub pending_bytes_max: usize,
    /// Most entries buffered before appenders block.
    pub pending_entries_max: usize,
    /// Largest entry payload accepted.
    pub max_entry_size: usize,
    /// How replay at open treats a damaged tail.
    pub recovery: RecoveryMode,
    /// Where truncated segments go; `None` deletes them.
    pub archive_dir: Option<PathBuf>,
    /// Longest an `AsyncWal` entry stays written but unsynced.
    pub async_sync_interval: Duration,
}

impl Default for WalOptions {
    fn default() -> Self {
        WalOptions {
            roll_size: 64 * 1024 * 1024,
            max_segments: 32,
            pending_bytes_max: 16 * 1024 * 1024,
            pending_entries_max: 100_000,
            max_entry_size: DEFAULT_MAX_ENTRY_SIZE,
            recovery: RecoveryMode::default(),
            archive_dir: None,
            async_sync_interval: Duration::from_secs(1),
        }
    }
}
