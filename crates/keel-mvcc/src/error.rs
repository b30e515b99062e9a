//! Typed errors of MVCC and row locks.

use std::time::Duration;

/// Why [`crate::Mvcc::advance_to`] refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MvccError {
    /// Writes are in flight; advancing now would skip them.
    #[error(
        "cannot advance MVCC while writes are in flight (read point {read_point}, write point {write_point})"
    )]
    NotIdle {
        /// The read point seen.
        read_point: u64,
        /// The write point seen.
        write_point: u64,
    },
    /// The points never move backwards.
    #[error("cannot move MVCC backwards from {current} to {requested}")]
    Backwards {
        /// The current write point.
        current: u64,
        /// The number asked for.
        requested: u64,
    },
}

/// What limited a row-lock wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitLimit {
    /// The lock table's own bound (HBase `hbase.rowlock.wait.duration`).
    RowLockWait,
    /// The caller's deadline (HBase's RPC deadline: `TimeoutIOException`).
    Deadline,
}

/// Why a row lock was not granted.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RowLockError {
    /// The wait for `row` ran out. No lock of the request is held afterwards.
    #[error("timed out after {waited:?} waiting for lock on row {row} (limit: {limit:?})")]
    Timeout {
        /// The row, escaped for printing.
        row: String,
        /// How long this row was waited for.
        waited: Duration,
        /// Which bound ran out.
        limit: WaitLimit,
    },
}
