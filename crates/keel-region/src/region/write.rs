//! The HBASE-15158 write path: resource checks, row locks, MVCC begin with the WAL append in
//! sequence order, the durability wait, the memstore insert and visibility.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use bytes::Bytes;
use keel_cell::{Cell, LATEST_TIMESTAMP};
use keel_mvcc::{LockMode, RowLockGuard};
use keel_wal::WalEntry;

use super::checked::CheckedWrite;
use super::{Durability, Region, WriteOrder, WriteTimings, now_ms};
use crate::error::RegionError;
#[cfg(feature = "tracing")]
use crate::trace::Printable;
use crate::trace::span;

impl Region {
    /// HBase's `checkResources`, before a write takes its locks: above the blocking memstore
    /// size the write is refused with `RegionTooBusy` and a flush requested; above the global
    /// high watermark it waits for flushes to free memory.
    pub(super) fn check_resources(&self) -> Result<(), RegionError> {
        // A closing region refuses at once rather than after waiting for memory.
        self.check_open(true)?;
        let limit = self.limits.blocking_memstore_size();
        if self.memstore_size() > limit {
            self.wait_for_flush(limit)?;
        }
        match self.account.wait_below_high() {
            Ok(None) => Ok(()),
            Ok(Some(waited)) => {
                self.counters.blocked(waited);
                Ok(())
            }
            Err(waited) => {
                self.counters.blocked(waited);
                Err(RegionError::MemoryFull {
                    used: self.account.used(),
                    limit: self.account.high(),
                    waited,
                })
            }
        }
    }

    /// Above the blocking size: requests a flush and, where a flusher runs, waits up to
    /// `limits.busy_wait` for the memstores to come back under `limit` (HBase's client would
    /// retry for that long); refuses with `RegionTooBusy` if they do not, or at once if the
    /// region starts closing (the caller follows a split to its daughters).
    fn wait_for_flush(&self, limit: u64) -> Result<(), RegionError> {
        let started = Instant::now();
        let waits = self.limits.busy_wait > Duration::ZERO && self.account.has_flusher();
        loop {
            self.request_flush();
            let size = self.memstore_size();
            if size <= limit {
                self.counters.blocked(started.elapsed());
                return Ok(());
            }
            let left = self.limits.busy_wait.saturating_sub(started.elapsed());
            if !waits || left.is_zero() {
                self.counters.busy_refusals.fetch_add(1, Ordering::Relaxed);
                return Err(RegionError::RegionTooBusy {
                    region: self.id,
                    memstore: size,
                    limit,
                });
            }
            self.account
                .wait_for_release(left.min(Duration::from_millis(20)));
            self.check_open(true)?;
        }
    }

    /// The time for a server-assigned timestamp: the clock, or the latest timestamp already
    /// handed out if that is ahead.
    pub(super) fn server_time(&self) -> i64 {
        let now = now_ms();
        self.last_server_ts
            .fetch_max(now, Ordering::Relaxed)
            .max(now)
    }

    /// Applies `cells` (puts and delete markers, any rows) atomically at `durability`, on the
    /// HBASE-15158 path: the write's one validation (`Region::check_write`) → row locks
    /// (shared, sorted) → server timestamps for cells that carry `LATEST_TIMESTAMP` → WAL
    /// enqueue, taking the MVCC write number (the sequence id) under the log's lock → queued
    /// for applying → WAL durability wait → the memstore inserts and MVCC completions of every
    /// durable queued write (`apply.rs`) → wait until visible → unlock. A WAL failure returns
    /// before the memstore is touched, so there is nothing to roll back.
    pub fn mutate(
        &self,
        cells: Vec<Cell>,
        durability: Durability,
    ) -> Result<WriteTimings, RegionError> {
        self.count_writes(1);
        let write = self.check_write(cells)?;
        self.apply(write, durability)
    }

    /// A checked write on shared row locks (a mutate, or one mini-batch of a batch).
    fn apply(
        &self,
        write: CheckedWrite,
        durability: Durability,
    ) -> Result<WriteTimings, RegionError> {
        let _span = span!(
            INFO,
            "region.mutate",
            region = self.id,
            cells = write.cells().len()
        );
        self.check_resources()?;
        let mut timings = WriteTimings::default();
        let started = Instant::now();
        let rows = {
            let cells = write.cells();
            // Most writes name one row: its lock is taken without collecting, sorting and
            // deduplicating a clone of the row per cell.
            let one_row = cells
                .split_first()
                .filter(|(first, rest)| rest.iter().all(|c| c.row() == first.row()));
            let _span = span!(DEBUG, "region.row_lock", one_row = one_row.is_some());
            match one_row {
                Some((first, _)) => {
                    self.locks
                        .lock_row(first.row_bytes(), LockMode::Shared, None)?
                }
                None => self.locks.lock_rows(
                    cells.iter().map(Cell::row_bytes),
                    LockMode::Shared,
                    None,
                )?,
            }
        };
        timings.lock_wait = started.elapsed();
        self.write_locked(write, durability, timings, rows)
    }

    /// Applies several mutations of one row atomically under the row's exclusive lock (HBase
    /// `mutateRow`), so no read-modify-write of the row interleaves.
    pub fn mutate_row(
        &self,
        row: &[u8],
        cells: Vec<Cell>,
        durability: Durability,
    ) -> Result<WriteTimings, RegionError> {
        let _span = span!(INFO, "region.mutate_row", region = self.id, row = %Printable(row));
        self.count_writes(1);
        let write = self.check_row_write(row, cells)?;
        self.check_resources()?;
        // The lock's key shares a cell's bytes (every cell is of `row`) instead of a copy.
        let key = match write.cells().first() {
            Some(cell) => cell.row_bytes(),
            None => Bytes::copy_from_slice(row),
        };
        let (guard, timings) = self.lock_exclusive(key)?;
        self.write_locked(write, durability, timings, guard)
    }

    /// Applies many operations (each a set of cells of one row, with its durability), as
    /// HBase's `batch`: an operation that is invalid (an unknown family, cells of several rows,
    /// no cells) gets its error and the others still go, together, in mini-batches of as many
    /// operations as fit one WAL entry (one entry, one MVCC write, shared locks on their rows
    /// each); a mini-batch takes the strongest durability of its operations. Returns one status
    /// per operation, in order; a failure of a mini-batch itself (the WAL) is the status of
    /// each of its operations.
    pub fn batch(&self, operations: Vec<(Vec<Cell>, Durability)>) -> Vec<Result<(), RegionError>> {
        let _span = span!(
            INFO,
            "region.batch",
            region = self.id,
            operations = operations.len()
        );
        self.count_writes(operations.len());
        let mut statuses: Vec<Option<Result<(), RegionError>>> =
            Vec::with_capacity(operations.len());
        let mut valid = Vec::new();
        for (i, (op, op_durability)) in operations.into_iter().enumerate() {
            let checked = match op.first() {
                None => Err(RegionError::BadCell(
                    "an operation with no cells".to_string(),
                )),
                Some(first) => {
                    let row = first.row_bytes();
                    self.check_row_write(&row, op)
                }
            };
            match checked {
                Ok(write) => {
                    // Resolved now: an unresolved `UseDefault` would lose to `SkipWal` in the
                    // mini-batch's maximum below.
                    valid.push((i, write, self.resolve_durability(op_durability)));
                    statuses.push(None);
                }
                Err(e) => statuses.push(Some(Err(e))),
            }
        }
        let max_entry = self.wal.max_entry_size();
        // Mini-batches: operations in order, while their cells fit one WAL entry.
        let mut mini: Option<(CheckedWrite, Vec<usize>, Durability)> = None;
        for (i, write, durability) in valid {
            match &mut mini {
                Some((joined, members, joined_durability))
                    if joined.can_join(&write, max_entry) =>
                {
                    joined.join(write);
                    members.push(i);
                    // As durable as its most demanding operation.
                    *joined_durability = (*joined_durability).max(durability);
                }
                _ => {
                    if let Some(done) = mini.take() {
                        self.apply_mini_batch(done, &mut statuses);
                    }
                    mini = Some((write, vec![i], durability));
                }
            }
        }
        if let Some(done) = mini {
            self.apply_mini_batch(done, &mut statuses);
        }
        statuses.into_iter().map(|s| s.unwrap_or(Ok(()))).collect()
    }

    fn apply_mini_batch(
        &self,
        (write, members, durability): (CheckedWrite, Vec<usize>, Durability),
        statuses: &mut [Option<Result<(), RegionError>>],
    ) {
        let outcome = self.apply(write, durability);
        for i in members {
            statuses[i] = Some(match &outcome {
                Ok(_) => Ok(()),
                Err(e) => Err(RegionError::BatchFailed(e.to_string())),
            });
        }
    }

    /// Takes one row's exclusive lock (read-modify-write, atomic row mutations) and starts the
    /// write's timings with the wait.
    pub(super) fn lock_exclusive(
        &self,
        row: Bytes,
    ) -> Result<(RowLockGuard<'_>, WriteTimings), RegionError> {
        let started = Instant::now();
        let _span = span!(DEBUG, "region.row_lock", rows = 1);
        let guard = self.locks.lock_row(row, LockMode::Exclusive, None)?;
        let timings = WriteTimings {
            lock_wait: started.elapsed(),
            ..WriteTimings::default()
        };
        Ok((guard, timings))
    }

    /// The write path after the row locks: timestamps, MVCC + WAL, sync, memstore, visible.
    /// Takes only a [`CheckedWrite`]: nothing reaches the WAL unchecked.
    pub(super) fn write_locked(
        &self,
        write: CheckedWrite,
        durability: Durability,
        mut timings: WriteTimings,
        rows: RowLockGuard<'_>,
    ) -> Result<WriteTimings, RegionError> {
        let mut cells = write.into_cells();
        // Timestamps only once the locks are held: a later write to a row never gets an
        // earlier server timestamp.
        let now = self.server_time();
        for cell in &mut cells {
            if cell.timestamp() == LATEST_TIMESTAMP {
                cell.set_timestamp(now);
            }
        }
        let _updates = self.updates.read();
        // Under the updates lock: a closing region takes it exclusively once, after which no
        // write can start, and every write that started has finished.
        self.check_open(true)?;
        let durability = self.resolve_durability(durability);
        let mut lap = Lap::start();
        let (entry, pending) = {
            let _span = span!(DEBUG, "wal.append", cells = cells.len());
            // The cells are lent to the entry and taken back: the WAL encodes them, it keeps
            // nothing, and a clone would be a reference count per field per cell.
            let wal_entry = WalEntry {
                region: self.id,
                sequence_id: 0,
                write_time_ms: now,
                cells: std::mem::take(&mut cells),
            };
            // The write number is taken under the log's lock, as the entry takes its place
            // there: numbers reach the log in order with no lock of the region's own (the WAL
            // writes the number into the entry and its cells).
            let enqueued = self.wal.enqueue_numbered(&wal_entry, durability, || {
                let entry = self.mvcc.begin();
                (entry.write_number(), entry)
            });
            cells = wal_entry.cells;
            // On error nothing reached the memstore, and an MVCC entry taken before the log
            // refused the entry completed itself when dropped.
            enqueued?
        };
        for cell in &mut cells {
            cell.set_sequence_id(entry.write_number());
        }
        timings.wal_append = lap.next();
        match self.order {
            WriteOrder::Reordered => {
                // Queued for whichever of the waiting writers the log wakes first to apply
                // (`apply.rs`): the entry's completion goes with it.
                let number = entry.detach();
                self.applying.push(number, pending.ticket(), cells);
                let waited = {
                    let _span = span!(DEBUG, "wal.sync_wait");
                    pending.wait()
                };
                timings.sync_wait = lap.next();
                if let Err(e) = waited {
                    // Not durable, so nobody applied it: taken back and completed unapplied.
                    if self.applying.withdraw(number).is_some() {
                        self.mvcc.complete_detached(&[number]);
                    }
                    return Err(e.into());
                }
                self.apply_durable();
                timings.memstore = lap.next();
                {
                    let _span = span!(DEBUG, "mvcc.wait");
                    self.mvcc.wait_visible(number);
                }
                timings.mvcc_wait = lap.next();
                drop(rows);
            }
            WriteOrder::Legacy => {
                // Kept for the rollback below.
                self.add_to_memstores(cells.clone());
                timings.memstore = lap.next();
                drop(rows);
                let synced = {
                    let _span = span!(DEBUG, "wal.sync_wait");
                    pending.wait()
                };
                timings.sync_wait = lap.next();
                if let Err(e) = synced {
                    // Not yet visible (the MVCC entry is open), so no reader saw these cells.
                    for store in self.stores.values() {
                        store.memstore.rollback(&cells);
                    }
                    let charged = crate::limits::charge(&cells);
                    self.active_bytes.fetch_sub(charged, Ordering::Relaxed);
                    self.account.release(charged);
                    return Err(e.into());
                }
                self.mvcc.complete_and_wait(entry);
                timings.mvcc_wait = lap.next();
            }
        }
        Ok(timings)
    }

    /// Inserts and charges the cells (under the updates lock, so a flush's snapshot takes
    /// exactly the charges of the cells it holds).
    pub(super) fn add_to_memstores(&self, cells: Vec<Cell>) {
        let charged = crate::limits::charge(&cells);
        // A write's cells are mostly of one family: each store's go in with one call (one
        // take of its segment lock), found by a pass over the cells per family written.
        let mut cells = cells.into_iter().peekable();
        while let Some(first) = cells.peek() {
            let family = first.family_bytes();
            let run = std::iter::from_fn(|| cells.next_if(|c| c.family() == family));
            match self.stores.get(&family) {
                Some(store) => {
                    store.memstore.add(run);
                    self.note_active_size(&store.memstore);
                }
                None => run.for_each(drop),
            }
        }
        self.active_bytes.fetch_add(charged, Ordering::Relaxed);
        self.account.charge(charged);
    }

    pub(super) fn count_writes(&self, operations: usize) {
        self.counters.write_requests.add(operations as u64);
    }
}

/// The write's stage clock: each stage ends where the next begins, so a stage boundary reads
/// the clock once (an `elapsed()` and a fresh `Instant::now()` per boundary were eleven clock
/// reads a write, 4% of a YCSB A update's time in `clock_gettime`).
struct Lap(Instant);

impl Lap {
    fn start() -> Lap {
        Lap(Instant::now())
    }

    /// The time since the last boundary; this is the next one.
    fn next(&mut self) -> Duration {
        let now = Instant::now();
        let stage = now.saturating_duration_since(self.0);
        self.0 = now;
        stage
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;
    use std::sync::mpsc;
    use std::thread;

    use keel_fs::{FaultFs, FileSystem};
    use keel_wal::{Wal, WalOptions};

    use super::*;
    use crate::FamilyOptions;

    fn region() -> Region {
        let fs: Arc<dyn FileSystem> = Arc::new(FaultFs::new());
        let wal = Wal::open(Arc::clone(&fs), Path::new("/wal"), WalOptions::default());
        let families = vec![FamilyOptions::new("f")];
        Region::open(
            fs,
            Path::new("/region"),
            Arc::new(wal.expect("wal")),
            1,
            families,
        )
        .expect("region")
    }

    fn put(row: &'static str, qualifier: &'static str) -> Cell {
        Cell::put(row, "f", qualifier, LATEST_TIMESTAMP, "v").expect("cell")
    }

    /// Runs `cells` as one mutate while `row` is locked exclusively: the mutate must still be
    /// waiting when the lock goes, and done after.
    fn waits_for(region: &Region, row: &'static str, cells: Vec<Cell>) {
        let held = region
            .locks
            .lock_row(
                Bytes::from_static(row.as_bytes()),
                LockMode::Exclusive,
                None,
            )
            .expect("lock");
        let (done, finished) = mpsc::channel();
        thread::scope(|scope| {
            scope.spawn(|| {
                let result = region.mutate(cells, Durability::SyncWal);
                done.send(result.map(|_| ())).expect("send");
            });
            let early = finished.recv_timeout(Duration::from_millis(200));
            assert!(early.is_err(), "wrote past the lock on {row}: {early:?}");
            drop(held);
            finished.recv().expect("answer").expect("write");
        });
    }

    #[test]
    fn a_write_of_one_row_takes_that_rows_lock() {
        let region = region();
        waits_for(&region, "a", vec![put("a", "q1"), put("a", "q2")]);
        for qualifier in [b"q1", b"q2"] {
            let value = region.latest(b"a", b"f", qualifier).expect("read");
            assert!(value.is_some(), "{qualifier:?} written");
        }
    }

    #[test]
    fn a_write_of_several_rows_takes_each_rows_lock() {
        let region = region();
        waits_for(
            &region,
            "b",
            vec![put("a", "q"), put("b", "q"), put("a", "r")],
        );
        waits_for(&region, "a", vec![put("c", "q"), put("a", "q")]);
    }
}
