//! Writers finish each other's durable writes (RocksDB's write group, after the log): a write
//! on the reordered path queues its cells as soon as its WAL entry is enqueued; the first of
//! the queued writers that the log wakes inserts every queued write the log has made durable
//! into the memstore and completes their MVCC numbers together. The others, when they run,
//! find their write visible and return.
//!
//! Why: a write is visible only when every write numbered before it is complete. When the log
//! woke a group, each writer inserted its own cells and then slept until the writers numbered
//! before it, not yet scheduled on this 2-core machine, had done the same: on the increment
//! shape that wait was the largest stage of a write. Finishing the others' writes costs the
//! waker a memstore insert each (microseconds) and saves them a sleep and a wake-up.
//!
//! Invariants:
//! - A queued write is applied only once the log has made it as durable as it asked
//!   ([`Wal::is_durable`], the condition its own wait waits for), so nothing is visible before it
//!   is durable; a write whose log wait fails is taken back out by its writer, never applied.
//! - Every queued write number is completed exactly once: by the writer that applies it, or by
//!   its own writer when the log failed it. Cells are inserted before their numbers complete.
//! - Writers of queued writes still hold the region's updates lock shared, so a flush never
//!   snapshots between a write's insert and its completion.

use keel_cell::Cell;
use keel_wal::{AppendTicket, Wal};
use smallvec::SmallVec;

use super::Region;

/// A write whose WAL entry is enqueued, waiting to be applied.
#[derive(Debug)]
pub(super) struct Queued {
    number: u64,
    ticket: AppendTicket,
    cells: Vec<Cell>,
}

/// The queued writes of one region, in no particular order: visibility is MVCC's to order.
#[derive(Debug, Default)]
pub(super) struct ApplyQueue {
    queued: keel_sync::Mutex<Vec<Queued>>,
}

impl ApplyQueue {
    /// Queues write `number` (detached from its MVCC entry), whose log append is `ticket`.
    pub(super) fn push(&self, number: u64, ticket: AppendTicket, cells: Vec<Cell>) {
        self.queued.lock().push(Queued {
            number,
            ticket,
            cells,
        });
    }

    /// Takes write `number` back out, if nobody has applied it (its log append failed).
    pub(super) fn withdraw(&self, number: u64) -> Option<Vec<Cell>> {
        let mut queued = self.queued.lock();
        let at = queued.iter().position(|q| q.number == number)?;
        Some(queued.swap_remove(at).cells)
    }

    /// Takes every queued write the log has made durable (inline up to a group of four, the
    /// usual: a heap list per write was two allocations of every write's few dozen).
    fn take_durable(&self, wal: &Wal) -> SmallVec<[Queued; 4]> {
        let mut queued = self.queued.lock();
        if queued.is_empty() {
            return SmallVec::new();
        }
        queued
            .extract_if(.., |q| wal.is_durable(q.ticket))
            .collect()
    }
}

impl Region {
    /// Applies every queued write that the log has made durable (the caller's own, unless
    /// another writer applied it already): inserts their cells into the memstores, then
    /// completes their MVCC numbers in one step.
    pub(super) fn apply_durable(&self) {
        let taken = self.applying.take_durable(&self.wal);
        if taken.is_empty() {
            return;
        }
        // Completed when this goes out of scope, after the inserts, or on the way out of a
        // panic: a detached number left incomplete would stall every later write.
        let complete = CompleteOnDrop {
            mvcc: &self.mvcc,
            numbers: taken.iter().map(|write| write.number).collect(),
        };
        for write in taken {
            self.add_to_memstores(write.cells);
        }
        drop(complete);
    }
}

/// Completes detached write numbers when dropped.
struct CompleteOnDrop<'a> {
    mvcc: &'a keel_mvcc::Mvcc,
    numbers: SmallVec<[u64; 4]>,
}

impl Drop for CompleteOnDrop<'_> {
    fn drop(&mut self) {
        self.mvcc.complete_detached(&self.numbers);
    }
}
