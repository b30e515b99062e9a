//! Multi-version concurrency control and row locks: the two pieces that make HBase's reordered
//! write path (HBASE-15158) correct.
//!
//! - [`Mvcc`] hands out write numbers ([`Mvcc::begin`]) and keeps the *read point*: every write
//!   at or below it is complete. Writes become visible strictly in begin order, whatever order
//!   they complete in. The write number doubles as the sequence id of the write's cells and WAL
//!   entry (HBASE-8763). `begin` is one atomic add (HBase takes a mutex there too); `complete`
//!   marks the write in a ring of completion flags under a mutex held for a few instructions,
//!   pops the completed prefix and publishes the read point with one store. A lock-free ring
//!   was built first and measured 4-8x slower on two cores (docs/mvcc.md).
//! - [`RowLocks`] gives shared and exclusive locks per row, many rows at a time in sorted order
//!   (no deadlock between batches), with bounded waits and FIFO fairness.
//!
//! The write path these serve: lock rows → `begin` (taken where the WAL entry takes its place in
//! the log, or inside [`Mvcc::begin_with`] to order a closure with it) → WAL append and sync →
//! memstore insert → [`Mvcc::complete_and_wait`] → unlock. A write that fails after `begin` must still complete its entry; an entry dropped
//! without completion completes itself, so forgetting cannot stall the region.
//!
//! ```
//! use bytes::Bytes;
//! use keel_mvcc::{LockMode, Mvcc, RowLocks};
//!
//! let (mvcc, locks) = (Mvcc::new(), RowLocks::default());
//! let guard = locks.lock_row(Bytes::from("row1"), LockMode::Exclusive, None)?;
//! let entry = mvcc.begin();
//! let sequence_id = entry.write_number();
//! // ... append to the WAL with `sequence_id`, sync, insert into the memstore ...
//! mvcc.complete_and_wait(entry);
//! drop(guard);
//! assert_eq!(mvcc.read_point(), sequence_id);
//! # Ok::<(), keel_mvcc::RowLockError>(())
//! ```
//!
//! What this crate is not: it stores nothing and knows nothing of the WAL or the memstore; it
//! orders and excludes. Its primitives come from keel-sync, so its tests also run under shuttle.

mod error;
mod mvcc;
mod row_lock;

pub use error::{MvccError, RowLockError, WaitLimit};
pub use mvcc::{Mvcc, MvccStats, WriteEntry};
pub use row_lock::{LockMode, RowLockGuard, RowLockOptions, RowLockStats, RowLocks};

/// The crate README's example, compiled and run as a doctest.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
