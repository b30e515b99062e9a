//! [`WalOptions`] and [`Durability`].

use std::path::PathBuf;
use std::time::Duration;

use crate::replay::RecoveryMode;
use crate::segment::DEFAULT_MAX_ENTRY_SIZE;

/// How durable a write is before it is acknowledged: HBase's `Durability`, the one type every
/// Keel crate uses (keel-region re-exports it).
///
/// Ordered weakest first, with `UseDefault` below all: a batch takes the strongest level among
/// its members *after* each member's `UseDefault` is resolved ([`Durability::resolve`]) — the
/// maximum of an unresolved `UseDefault` and `SkipWal` would be `SkipWal`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Durability {
    /// Whatever the one applying it chooses: a region's table or server default; for the log
    /// itself, `SyncWal`.
    #[default]
    UseDefault,
    /// Nothing is logged: lost on any crash.
    SkipWal,
    /// Acknowledged once buffered; the writer writes it at once and syncs it with the next
    /// `FsyncWal` append, roll, `sync()`, close, or at most `async_sync_interval` later.
    AsyncWal,
    /// Acknowledged once `write(2)` has put it in the OS page cache: survives a process crash,
    /// not a power cut (HBase's default, like HDFS hflush).
    SyncWal,
    /// Acknowledged after `fdatasync`: survives a power cut (like HDFS hsync). Also makes every
    /// entry before it durable.
    FsyncWal,
}

impl Durability {
    /// Every level, weakest first.
    pub const ALL: [Durability; 5] = [
        Durability::UseDefault,
        Durability::SkipWal,
        Durability::AsyncWal,
        Durability::SyncWal,
        Durability::FsyncWal,
    ];

    /// `default` in place of `UseDefault`; any other level stays.
    pub fn resolve(self, default: Durability) -> Durability {
        match self {
            Durability::UseDefault => default,
            other => other,
        }
    }

    /// HBase's name for it (`USE_DEFAULT`, `SKIP_WAL`, `ASYNC_WAL`, `SYNC_WAL`, `FSYNC_WAL`).
    pub fn name(self) -> &'static str {
        match self {
            Durability::UseDefault => "USE_DEFAULT",
            Durability::SkipWal => "SKIP_WAL",
            Durability::AsyncWal => "ASYNC_WAL",
            Durability::SyncWal => "SYNC_WAL",
            Durability::FsyncWal => "FSYNC_WAL",
        }
    }
}

impl std::fmt::Display for Durability {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Durability {
    type Err = String;

    /// HBase's names, in any case.
    fn from_str(text: &str) -> Result<Durability, String> {
        Durability::ALL
            .into_iter()
            .find(|d| d.name().eq_ignore_ascii_case(text))
            .ok_or_else(|| {
                format!(
                    "unknown durability {text:?}: USE_DEFAULT, SKIP_WAL, ASYNC_WAL, SYNC_WAL or FSYNC_WAL"
                )
            })
    }
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
