//! Increments and appends of one row, combined (flat combining, as RocksDB's write group combines
//! writers): while one writer works on a row, the others that want to increment or append to
//! the same row queue their operations instead of each waiting for the row lock in turn. The
//! working writer, the combiner, takes the row lock, reads each column once, applies every
//! queued operation in queue order, writes all their cells in one WAL entry and hands each
//! writer its own result.
//!
//! Why: on the per-call path every increment of a hot row holds the row lock across its WAL
//! write and then hands the lock to the next parked writer, a wake-up on the critical path of
//! every increment (about 45 µs on a 2-core VM). Combined, a batch of N operations costs one
//! lock hold, one WAL write and N wake-ups made by the combiner off the row's critical path.
//!
//! What stays as on the per-call path:
//! - each operation reads the value the operation before it (in queue order) left, and nothing
//!   else writes the row in between: the combiner holds the row's exclusive lock for the batch;
//! - every operation writes its own cell (so a family keeping several versions keeps one per
//!   operation), its timestamp max(previous + 1, now);
//! - an operation is acknowledged once its batch's WAL entry is as durable as the most durable
//!   member asked for and visible (the batch goes through `write_locked`).
//!
//! Failures: an operation's own error (not a counter, a cell over a limit) is its alone. A batch
//! that fails before the WAL has its entry (the row lock timed out, the region started closing, a
//! read failed) logged nothing: the combiner's own operation gets the error, and every other
//! member runs again alone on the per-call path, where it meets its own outcome. A batch the WAL
//! failed fails every member, as a failed mini-batch of `Region::batch` does.
//!
//! Bounds: a batch is at most [`MAX_BATCH`] operations and one WAL entry (the rest wait for the
//! next batch). A combiner writes at most [`MAX_ROUNDS`] batches, then hands the role to the
//! oldest waiter, so that its own caller is not kept by a row that never goes quiet. Should a
//! combiner panic (a bug), its batch's unanswered writers run alone and the row passes on
//! ([`InFlight`]): nobody waits forever.

use std::collections::HashMap;
use std::time::Instant;

use bytes::Bytes;
use keel_cell::{Cell, escape_bytes};
use keel_sync::atomic::{AtomicU64, Ordering};
use keel_sync::{Arc, Condvar, Mutex};

use super::{Durability, Region, WriteTimings};
use crate::error::RegionError;

/// Operations in one batch, at most.
const MAX_BATCH: usize = 256;
/// Batches one combiner writes before handing the role on.
const MAX_ROUNDS: usize = 4;
/// Queue shards, chosen by the row's hash (so writers of different rows share no lock word).
const SHARDS: usize = 16;
/// Times a queued writer yields its core, looking for its answer, before it parks: the
/// combiner then answers it without a futex wake-up when the batch is quick (docs/region.md).
const WAIT_YIELDS: usize = 8;

/// A read-modify-write of one column.
#[derive(Debug, Clone)]
pub(crate) enum RmwOp {
    /// Add to the 8-byte big-endian counter (absent counts as 0).
    Increment(i64),
    /// Append these bytes (absent is empty).
    Append(Bytes),
}

impl RmwOp {
    /// The new value, from the current one.
    pub(crate) fn apply(&self, row: &[u8], current: Option<&[u8]>) -> Result<Bytes, RegionError> {
        match self {
            RmwOp::Increment(delta) => {
                let old = match current {
                    None => 0,
                    Some(value) => {
                        let bytes: [u8; 8] =
                            value[..].try_into().map_err(|_| RegionError::NotACounter {
                                row: escape_bytes(row),
                                len: value.len(),
                            })?;
                        i64::from_be_bytes(bytes)
                    }
                };
                // Shared: the value goes into the cell, the batch's column and the answer.
                Ok(keel_cell::shared_copy(
                    &old.wrapping_add(*delta).to_be_bytes(),
                ))
            }
            RmwOp::Append(suffix) => {
                let mut value = current.map(|v| v.to_vec()).unwrap_or_default();
                value.extend_from_slice(suffix);
                Ok(Bytes::from(value))
            }
        }
    }
}

/// One operation: its column, what it does, how durable it must be.
#[derive(Debug)]
pub(crate) struct RmwRequest {
    pub(crate) family: Bytes,
    pub(crate) qualifier: Bytes,
    pub(crate) op: RmwOp,
    pub(crate) durability: Durability,
}

/// What a queued writer is told.
enum Outcome {
    /// Its operation's result: the new value.
    Done(Result<(Bytes, WriteTimings), RegionError>),
    /// Its batch failed before the log had it: run the operation alone.
    Alone,
    /// Combine: the previous combiner handed the row on.
    Combine,
}

/// A writer in a row's queue.
struct Waiter {
    request: RmwRequest,
    queued_at: Instant,
    /// How many times it was told something (read without the lock by [`InFlight`]).
    tells: AtomicU64,
    /// What it was told and has not yet taken.
    outcome: Mutex<Option<Outcome>>,
    told: Condvar,
}

impl Waiter {
    fn new(request: RmwRequest) -> Waiter {
        Waiter {
            request,
            queued_at: Instant::now(),
            tells: AtomicU64::new(0),
            outcome: Mutex::new(None),
            told: Condvar::new(),
        }
    }

    fn tell(&self, outcome: Outcome) {
        let mut slot = self.outcome.lock();
        self.tells.fetch_add(1, Ordering::Relaxed);
        *slot = Some(outcome);
        drop(slot);
        self.told.notify_one();
    }

    fn tells(&self) -> u64 {
        self.tells.load(Ordering::Relaxed)
    }

    fn wait(&self) -> Outcome {
        let mut early = None;
        keel_sync::yield_until(WAIT_YIELDS, || {
            early = self.outcome.lock().take();
            early.is_some()
        });
        if let Some(told) = early {
            return told;
        }
        let mut slot = self.outcome.lock();
        loop {
            if let Some(told) = slot.take() {
                return told;
            }
            self.told.wait(&mut slot);
        }
    }
}

/// A combiner's batch in flight: should the combiner panic (a bug), the writers of the batch
/// not yet answered run alone and the row's combining passes on, rather than wait forever.
struct InFlight<'a> {
    queues: &'a RmwQueues,
    row: &'a Bytes,
    /// The batch's other writers, with how many times each had been told when it began.
    members: Vec<(Arc<Waiter>, u64)>,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            return;
        }
        for (waiter, tells) in &self.members {
            if waiter.tells() == *tells {
                waiter.tell(Outcome::Alone);
            }
        }
        if let Some(next) = self.queues.hand_on(self.row, Vec::new()) {
            next.tell(Outcome::Combine);
        }
    }
}

/// One shard's rows being combined, each with the writers waiting for one of its batches. A
/// row is in the map exactly while it has a combiner.
type Rows = HashMap<Bytes, Vec<Arc<Waiter>>>;

/// The rows being combined, in [`SHARDS`] shards.
pub(super) struct RmwQueues {
    shards: Box<[Mutex<Rows>]>,
}

impl Default for RmwQueues {
    fn default() -> RmwQueues {
        RmwQueues {
            shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
        }
    }
}

impl std::fmt::Debug for RmwQueues {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RmwQueues").finish_non_exhaustive()
    }
}

impl RmwQueues {
    fn shard(&self, row: &[u8]) -> &Mutex<Rows> {
        // FNV-1a: rows are short, and the shard only spreads lock words.
        let hash = row.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
        });
        &self.shards[(hash % SHARDS as u64) as usize]
    }

    /// Queues `waiter` behind the row's combiner; if the row has none, makes the caller its
    /// combiner (true) instead.
    fn join(&self, row: &Bytes, waiter: &Arc<Waiter>) -> bool {
        let mut rows = self.shard(row).lock();
        match rows.get_mut(row.as_ref()) {
            Some(queue) => {
                queue.push(Arc::clone(waiter));
                false
            }
            None => {
                rows.insert(row.clone(), Vec::new());
                true
            }
        }
    }

    /// The next batch: `carried` (deferred from the last batch, or the combiner's own) and then
    /// queued writers, up to [`MAX_BATCH`]. `None`, with the row's combining ended, when there
    /// is nothing left.
    fn next_batch(&self, row: &Bytes, mut carried: Vec<Arc<Waiter>>) -> Option<Vec<Arc<Waiter>>> {
        let mut rows = self.shard(row).lock();
        let queue = rows.get_mut(row.as_ref())?;
        let take = MAX_BATCH.saturating_sub(carried.len()).min(queue.len());
        carried.extend(queue.drain(..take));
        if carried.is_empty() {
            rows.remove(row.as_ref());
            return None;
        }
        Some(carried)
    }

    /// Ends this combiner's turn: `carried` go back to the front of the queue and the oldest
    /// waiter becomes the row's combiner (returned), or the row's combining ends.
    fn hand_on(&self, row: &Bytes, carried: Vec<Arc<Waiter>>) -> Option<Arc<Waiter>> {
        let mut rows = self.shard(row).lock();
        let queue = rows.get_mut(row.as_ref())?;
        queue.splice(0..0, carried);
        if queue.is_empty() {
            rows.remove(row.as_ref());
            return None;
        }
        Some(queue.remove(0))
    }
}

/// One column's value as the batch goes: read once, then each operation's result.
struct Column {
    family: Bytes,
    qualifier: Bytes,
    value: Option<Bytes>,
    timestamp: Option<i64>,
}

impl Region {
    /// A read-modify-write of `row`, combined with the others of the row in flight (see the
    /// module's documentation). Returns the new value.
    pub(super) fn combined_rmw(
        &self,
        row: &[u8],
        request: RmwRequest,
    ) -> Result<(Bytes, WriteTimings), RegionError> {
        let row = keel_cell::shared_copy(row);
        let own = Arc::new(Waiter::new(request));
        let mut combining = self.rmw_queues.join(&row, &own);
        loop {
            if combining {
                self.combine(&row, &own);
            }
            match own.wait() {
                Outcome::Done(result) => return result,
                Outcome::Alone => return self.rmw_locked(&row, &own.request),
                Outcome::Combine => combining = true,
            }
        }
    }

    /// A combiner's turn: batches until the queue is empty or [`MAX_ROUNDS`] are written. The
    /// combiner's own operation is first in the first batch, so it is answered by then.
    fn combine(&self, row: &Bytes, own: &Arc<Waiter>) {
        let mut carried = vec![Arc::clone(own)];
        for _ in 0..MAX_ROUNDS {
            let Some(batch) = self.rmw_queues.next_batch(row, carried) else {
                return;
            };
            let in_flight = InFlight {
                queues: &self.rmw_queues,
                row,
                members: batch
                    .iter()
                    .filter(|w| !Arc::ptr_eq(w, own))
                    .map(|w| (Arc::clone(w), w.tells()))
                    .collect(),
            };
            carried = self.write_batch(row, batch, own);
            drop(in_flight);
        }
        if let Some(next) = self.rmw_queues.hand_on(row, carried) {
            next.tell(Outcome::Combine);
        }
    }

    /// Applies `batch` in order under the row's lock and writes it; answers every member except
    /// those that did not fit the WAL entry, which are returned for the next batch.
    fn write_batch(
        &self,
        row: &Bytes,
        batch: Vec<Arc<Waiter>>,
        own: &Arc<Waiter>,
    ) -> Vec<Arc<Waiter>> {
        let started = Instant::now();
        let (guard, timings) = match self.lock_exclusive(row.clone()) {
            Ok(locked) => locked,
            Err(e) => {
                fail_unlogged(batch, own, e);
                return Vec::new();
            }
        };
        let now = self.server_time();
        let max_entry = self.wal.max_entry_size();
        let mut entry_len = keel_wal::format::ENTRY_HEADER_LEN + keel_cell::encoded_batch_len(&[]);
        let mut columns: Vec<Column> = Vec::new();
        let mut cells = Vec::with_capacity(batch.len());
        let mut members: Vec<(Arc<Waiter>, Bytes)> = Vec::with_capacity(batch.len());
        let mut durability = Durability::SkipWal;
        let mut deferred = Vec::new();
        // Every operation counts as a read request, as on the per-call path, though the batch
        // reads each column once (`column` below counts those).
        let operations = batch.len();
        let mut batch = batch.into_iter();
        while let Some(waiter) = batch.next() {
            let request = &waiter.request;
            let at = match self.column(row, request, &mut columns) {
                Ok(at) => at,
                Err(e) => {
                    fail_unlogged(vec![waiter], own, e);
                    continue;
                }
            };
            let column = &mut columns[at];
            let built = request
                .op
                .apply(row, column.value.as_deref())
                .and_then(|value| {
                    let timestamp = column
                        .timestamp
                        .map_or(i64::MIN, |t| t.saturating_add(1))
                        .max(now);
                    Cell::builder(row.clone(), request.family.clone())
                        .qualifier(request.qualifier.clone())
                        .timestamp(timestamp)
                        .value(value.clone())
                        .build()
                        .map(|cell| (cell, value))
                        .map_err(|e| RegionError::BadCell(e.to_string()))
                });
            let (cell, value) = match built {
                Ok(built) => built,
                Err(e) => {
                    waiter.tell(Outcome::Done(Err(e)));
                    continue;
                }
            };
            let len = cell.encoded_len();
            if entry_len + len > max_entry {
                if cells.is_empty() {
                    waiter.tell(Outcome::Done(Err(RegionError::WriteTooLarge {
                        region: self.id,
                        row: escape_bytes(row),
                        bytes: entry_len + len,
                        max: max_entry,
                    })));
                    continue;
                }
                // The rest go in the next batch, in order.
                deferred.push(waiter);
                deferred.extend(batch);
                break;
            }
            entry_len += len;
            column.value = Some(value.clone());
            column.timestamp = Some(cell.timestamp());
            durability = durability.max(self.resolve_durability(request.durability));
            cells.push(cell);
            members.push((waiter, value));
        }
        let served = operations - deferred.len();
        self.counters
            .read_requests
            .add(served.saturating_sub(columns.len()) as u64);
        if cells.is_empty() {
            return deferred;
        }
        if let Some(latest) = cells.iter().map(Cell::timestamp).max() {
            // A put after these must not get an older server timestamp.
            self.last_server_ts
                .fetch_max(latest, std::sync::atomic::Ordering::Relaxed);
        }
        let write = match self.check_write(cells) {
            Ok(write) => write,
            Err(e) => {
                fail_unlogged(members.into_iter().map(|(w, _)| w).collect(), own, e);
                return deferred;
            }
        };
        self.counters.record_rmw_batch(members.len());
        match self.write_locked(write, durability, timings, guard) {
            Ok(written) => {
                for (waiter, value) in members {
                    let mut timings = written;
                    timings.lock_wait += started.saturating_duration_since(waiter.queued_at);
                    waiter.tell(Outcome::Done(Ok((value, timings))));
                }
            }
            Err(RegionError::Wal(e)) => {
                // Logged or not, the log failed it: every member fails, none runs again.
                let shared = e.to_string();
                let mut own_error = Some(RegionError::Wal(e));
                for (waiter, _) in members {
                    let error = match own_error.take_if(|_| Arc::ptr_eq(&waiter, own)) {
                        Some(error) => error,
                        None => RegionError::BatchFailed(format!(
                            "the WAL failed the batch of read-modify-writes of row {}: {shared}",
                            escape_bytes(row)
                        )),
                    };
                    waiter.tell(Outcome::Done(Err(error)));
                }
            }
            Err(e) => fail_unlogged(members.into_iter().map(|(w, _)| w).collect(), own, e),
        }
        deferred
    }

    /// The index in `columns` of the request's column, read (latest visible cell) on first use.
    fn column(
        &self,
        row: &[u8],
        request: &RmwRequest,
        columns: &mut Vec<Column>,
    ) -> Result<usize, RegionError> {
        if let Some(at) = columns
            .iter()
            .position(|c| c.family == request.family && c.qualifier == request.qualifier)
        {
            return Ok(at);
        }
        let current = self.latest_for_update(row, &request.family, &request.qualifier)?;
        columns.push(Column {
            family: request.family.clone(),
            qualifier: request.qualifier.clone(),
            timestamp: current.as_ref().map(Cell::timestamp),
            value: current.map(|c| c.value_bytes()),
        });
        Ok(columns.len() - 1)
    }
}

/// A batch that failed before the log had its entry: nothing was written, so the combiner's own
/// operation gets the error and every other member runs again alone.
fn fail_unlogged(waiters: Vec<Arc<Waiter>>, own: &Arc<Waiter>, error: RegionError) {
    let mut error = Some(error);
    for waiter in waiters {
        match error.take_if(|_| Arc::ptr_eq(&waiter, own)) {
            Some(error) => waiter.tell(Outcome::Done(Err(error))),
            None => waiter.tell(Outcome::Alone),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn waiter() -> Arc<Waiter> {
        Arc::new(Waiter::new(RmwRequest {
            family: Bytes::from_static(b"f"),
            qualifier: Bytes::from_static(b"q"),
            op: RmwOp::Increment(1),
            durability: Durability::SyncWal,
        }))
    }

    #[test]
    fn a_combiner_that_panics_lets_its_batch_run_alone_and_hands_the_row_on() {
        let queues = RmwQueues::default();
        let row = Bytes::from_static(b"row");
        let (own, first, second, late) = (waiter(), waiter(), waiter(), waiter());
        assert!(queues.join(&row, &own), "the first writer combines");
        assert!(!queues.join(&row, &first));
        assert!(!queues.join(&row, &second));
        let batch = queues
            .next_batch(&row, vec![Arc::clone(&own)])
            .expect("batch");
        assert_eq!(batch.len(), 3);
        // `first` is answered before the panic; `second` is not.
        first.tell(Outcome::Done(Ok((Bytes::new(), WriteTimings::default()))));
        first.wait();
        assert!(
            !queues.join(&row, &late),
            "joins the row's queue behind the batch"
        );
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _in_flight = InFlight {
                queues: &queues,
                row: &row,
                members: [&first, &second]
                    .into_iter()
                    .map(|w| (Arc::clone(w), 0))
                    .collect(),
            };
            panic!("a bug in the batch");
        }));
        assert!(panicked.is_err());
        assert_eq!(first.tells(), 1, "an answered writer is not told again");
        assert!(matches!(second.wait(), Outcome::Alone));
        assert!(matches!(late.wait(), Outcome::Combine), "the row passes on");
        // The new combiner finds its queue empty and ends the row's combining.
        assert!(queues.next_batch(&row, Vec::new()).is_none());
        assert!(
            queues.join(&row, &waiter()),
            "the next writer combines anew"
        );
    }
}
