//! Shared and exclusive row locks, granted in FIFO order, with bounded waits.
//!
//! The table is split into shards, each a hash table of the rows currently locked or waited
//! for, under one mutex, with one condition variable. Every change to an entry (grant, release,
//! queueing, cancelling, removal) happens under its shard's mutex, so a thread can never find
//! an entry that another thread is removing: the race HBase closes with its `usable` flag does not
//! exist here. An entry leaves the table as soon as nobody holds or waits for it.
//!
//! Fairness: requests for one row are granted in arrival order. A request that finds the row
//! free and nobody queued is granted at once; otherwise it takes the next ticket in the row's
//! queue. A release admits queued requests from the front: a run of shared requests together, or
//! one exclusive request. So a stream of shared holders cannot starve an exclusive waiter (shared
//! requests arriving after it queue behind it), and exclusive waiters cannot starve each other.

use std::collections::VecDeque;
use std::hash::BuildHasher;
use std::time::{Duration, Instant};

use bytes::Bytes;
use hashbrown::HashTable;
use keel_sync::{CachePadded, Condvar, Mutex};

use crate::error::{RowLockError, WaitLimit};

/// Options for a [`RowLocks`] table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowLockOptions {
    /// The longest a request waits for one row before failing with
    /// [`RowLockError::Timeout`]. HBase key `hbase.rowlock.wait.duration`, default 30 000 ms.
    /// Zero makes every contended request fail at once (a try-lock).
    pub wait: Duration,
    /// Number of independently locked shards (rounded up to a power of two). Default 64.
    pub shards: usize,
}

impl Default for RowLockOptions {
    fn default() -> Self {
        RowLockOptions {
            wait: Duration::from_millis(30_000),
            shards: 64,
        }
    }
}

/// How a row is locked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LockMode {
    /// Many holders at once: plain puts and deletes (HBase takes the read lock for them).
    Shared,
    /// One holder: increment, append, check-and-mutate, atomic multi-row mutations.
    Exclusive,
}

/// Counters of a [`RowLocks`] table.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RowLockStats {
    /// Rows currently locked or waited for (entries in the table).
    pub rows: usize,
    /// Requests that had to queue.
    pub waits: u64,
    /// Requests that gave up.
    pub timeouts: u64,
}

/// A table of per-row shared/exclusive locks keyed by row bytes.
#[derive(Debug)]
pub struct RowLocks {
    shards: Box<[CachePadded<Shard>]>,
    shard_mask: u64,
    hasher: foldhash::fast::RandomState,
    options: RowLockOptions,
}

#[derive(Debug)]
struct Shard {
    state: Mutex<ShardState>,
    /// Notified whenever a queued request of this shard is admitted.
    admitted: Condvar,
}

#[derive(Debug, Default)]
struct ShardState {
    table: HashTable<Entry>,
    waits: u64,
    timeouts: u64,
}

#[derive(Debug)]
struct Entry {
    row: Bytes,
    hash: u64,
    shared: u32,
    exclusive: bool,
    /// Requests waiting, in arrival order; the front has ticket `head_ticket`.
    queue: VecDeque<Waiter>,
    head_ticket: u64,
}

#[derive(Clone, Copy, Debug)]
struct Waiter {
    mode: LockMode,
    cancelled: bool,
}

impl Entry {
    fn held(row: Bytes, hash: u64, mode: LockMode) -> Entry {
        let mut entry = Entry {
            row,
            hash,
            shared: 0,
            exclusive: false,
            queue: VecDeque::new(),
            head_ticket: 0,
        };
        entry.grant(mode);
        entry
    }

    fn can_grant(&self, mode: LockMode) -> bool {
        match mode {
            LockMode::Shared => !self.exclusive,
            LockMode::Exclusive => !self.exclusive && self.shared == 0,
        }
    }

    fn grant(&mut self, mode: LockMode) {
        match mode {
            LockMode::Shared => self.shared += 1,
            LockMode::Exclusive => self.exclusive = true,
        }
    }

    /// Grants queued requests from the front while they fit; drops cancelled ones on the way.
    /// Returns true if any request was granted.
    fn admit(&mut self) -> bool {
        let mut granted = false;
        while let Some(front) = self.queue.front().copied() {
            if !front.cancelled {
                if !self.can_grant(front.mode) {
                    break;
                }
                self.grant(front.mode);
                granted = true;
            }
            self.queue.pop_front();
            self.head_ticket += 1;
        }
        granted
    }

    fn is_idle(&self) -> bool {
        self.shared == 0 && !self.exclusive && self.queue.is_empty()
    }
}

/// The locks of one `lock_row`/`lock_rows` call, released together when dropped.
#[derive(Debug)]
#[must_use = "the locks are released as soon as the guard is dropped"]
pub struct RowLockGuard<'a> {
    locks: &'a RowLocks,
    mode: LockMode,
    held: Held,
}

/// Locked rows with their hashes (kept so release does not hash again). One row needs no Vec.
#[derive(Debug)]
enum Held {
    One(u64, Bytes),
    Many(Vec<(u64, Bytes)>),
}

impl RowLockGuard<'_> {
    /// The rows this guard holds, sorted and without duplicates.
    pub fn rows(&self) -> impl Iterator<Item = &Bytes> {
        let rows: &[(u64, Bytes)] = match &self.held {
            Held::One(hash, row) => return RowsIter::One(Some((*hash, row))),
            Held::Many(rows) => rows,
        };
        RowsIter::Many(rows.iter())
    }

    /// How many rows this guard holds.
    pub fn len(&self) -> usize {
        match &self.held {
            Held::One(..) => 1,
            Held::Many(rows) => rows.len(),
        }
    }

    /// True if the guard holds no row (an empty request).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The mode the rows are held in.
    pub fn mode(&self) -> LockMode {
        self.mode
    }
}

enum RowsIter<'a> {
    One(Option<(u64, &'a Bytes)>),
    Many(std::slice::Iter<'a, (u64, Bytes)>),
}

impl<'a> Iterator for RowsIter<'a> {
    type Item = &'a Bytes;

    fn next(&mut self) -> Option<&'a Bytes> {
        match self {
            RowsIter::One(row) => row.take().map(|(_, row)| row),
            RowsIter::Many(rows) => rows.next().map(|(_, row)| row),
        }
    }
}

impl Drop for RowLockGuard<'_> {
    fn drop(&mut self) {
        match &self.held {
            Held::One(hash, row) => self.locks.release(*hash, row, self.mode),
            // Release in reverse order of acquisition (not needed for safety; tidy and cheap).
            Held::Many(rows) => {
                for (hash, row) in rows.iter().rev() {
                    self.locks.release(*hash, row, self.mode);
                }
            }
        }
    }
}

impl Default for RowLocks {
    fn default() -> Self {
        RowLocks::new(RowLockOptions::default())
    }
}

impl RowLocks {
    /// An empty lock table.
    pub fn new(options: RowLockOptions) -> RowLocks {
        let shards = options.shards.max(1).next_power_of_two();
        RowLocks {
            shards: (0..shards)
                .map(|_| {
                    CachePadded(Shard {
                        state: Mutex::new(ShardState::default()),
                        admitted: Condvar::new(),
                    })
                })
                .collect(),
            shard_mask: shards as u64 - 1,
            hasher: foldhash::fast::RandomState::default(),
            options,
        }
    }

    /// Locks one row. `deadline` (the caller's, e.g. an RPC deadline) and
    /// [`RowLockOptions::wait`] (counted from when the request queues) bound the wait,
    /// whichever comes first.
    pub fn lock_row(
        &self,
        row: Bytes,
        mode: LockMode,
        deadline: Option<Instant>,
    ) -> Result<RowLockGuard<'_>, RowLockError> {
        let hash = self.hasher.hash_one(row.as_ref());
        self.acquire(hash, &row, mode, &mut WaitBound::new(deadline))?;
        Ok(RowLockGuard {
            locks: self,
            mode,
            held: Held::One(hash, row),
        })
    }

    /// Locks many rows in one mode, in sorted order with duplicates removed (so two batches
    /// can never deadlock on each other), and returns one guard for all of them. On failure no
    /// row of the request stays locked. The bounds cover the whole call: its waits for all the
    /// rows together, [`RowLockOptions::wait`] counted from the first.
    pub fn lock_rows(
        &self,
        rows: impl IntoIterator<Item = Bytes>,
        mode: LockMode,
        deadline: Option<Instant>,
    ) -> Result<RowLockGuard<'_>, RowLockError> {
        let mut bound = WaitBound::new(deadline);
        let mut rows: Vec<Bytes> = rows.into_iter().collect();
        rows.sort_unstable();
        rows.dedup();
        let mut guard = RowLockGuard {
            locks: self,
            mode,
            held: Held::Many(Vec::with_capacity(rows.len())),
        };
        for row in rows {
            let hash = self.hasher.hash_one(row.as_ref());
            // On error the guard drops here and releases what was taken.
            self.acquire(hash, &row, mode, &mut bound)?;
            if let Held::Many(held) = &mut guard.held {
                held.push((hash, row));
            }
        }
        Ok(guard)
    }

    /// Counters, summed over the shards.
    pub fn stats(&self) -> RowLockStats {
        let mut stats = RowLockStats::default();
        for shard in self.shards.iter() {
            let state = shard.state.lock();
            stats.rows += state.table.len();
            stats.waits += state.waits;
            stats.timeouts += state.timeouts;
        }
        stats
    }

    fn shard(&self, hash: u64) -> &Shard {
        // High bits pick the shard; the hash table inside uses the low and top bits.
        &self.shards[((hash >> 32) & self.shard_mask) as usize]
    }

    fn acquire(
        &self,
        hash: u64,
        row: &Bytes,
        mode: LockMode,
        bound: &mut WaitBound,
    ) -> Result<(), RowLockError> {
        let shard = self.shard(hash);
        let mut state = shard.state.lock();
        let Some(entry) = state.table.find_mut(hash, |e| e.row == *row) else {
            state
                .table
                .insert_unique(hash, Entry::held(row.clone(), hash, mode), |e| e.hash);
            return Ok(());
        };
        if entry.queue.is_empty() && entry.can_grant(mode) {
            entry.grant(mode);
            return Ok(());
        }
        let ticket = entry.head_ticket + entry.queue.len() as u64;
        entry.queue.push_back(Waiter {
            mode,
            cancelled: false,
        });
        state.waits += 1;
        let Fixed {
            deadline,
            limit,
            started,
        } = bound.fix(self.options.wait);
        loop {
            let timed_out = shard.admitted.wait_until(&mut state, deadline);
            let Some(entry) = state.table.find_mut(hash, |e| e.row == *row) else {
                unreachable!("a row with a queued request stays in the lock table");
            };
            // Only this thread cancels its ticket, so a ticket behind the head was admitted.
            if entry.head_ticket > ticket {
                return Ok(());
            }
            if timed_out || Instant::now() >= deadline {
                let index = (ticket - entry.head_ticket) as usize;
                entry.queue[index].cancelled = true;
                if entry.admit() {
                    shard.admitted.notify_all();
                }
                let idle = entry.is_idle();
                if idle {
                    remove(&mut state.table, hash, row);
                }
                state.timeouts += 1;
                return Err(RowLockError::Timeout {
                    row: keel_cell::escape_bytes(row),
                    waited: started.elapsed(),
                    limit,
                });
            }
        }
    }

    fn release(&self, hash: u64, row: &Bytes, mode: LockMode) {
        let shard = self.shard(hash);
        let mut state = shard.state.lock();
        let Some(entry) = state.table.find_mut(hash, |e| e.row == *row) else {
            unreachable!("a held row is in the lock table");
        };
        match mode {
            LockMode::Shared => entry.shared -= 1,
            LockMode::Exclusive => entry.exclusive = false,
        }
        if entry.admit() {
            shard.admitted.notify_all();
        }
        if entry.is_idle() {
            remove(&mut state.table, hash, row);
        }
    }
}

/// The bound on one call's waits: the caller's deadline or [`RowLockOptions::wait`], whichever
/// comes first, counted from the first time the call has to wait (a lock nobody holds reads no
/// clock, which was a third of an uncontended lock and release) and shared by every row of a
/// [`RowLocks::lock_rows`] call, which it bounds as a whole.
struct WaitBound {
    caller: Option<Instant>,
    fixed: Option<Fixed>,
}

/// A [`WaitBound`] once fixed.
#[derive(Clone, Copy)]
struct Fixed {
    deadline: Instant,
    limit: WaitLimit,
    started: Instant,
}

impl WaitBound {
    fn new(caller: Option<Instant>) -> WaitBound {
        WaitBound {
            caller,
            fixed: None,
        }
    }

    /// The bound, fixed now from `wait` if it was not yet.
    fn fix(&mut self, wait: Duration) -> Fixed {
        let caller = self.caller;
        *self.fixed.get_or_insert_with(|| {
            let started = Instant::now();
            // A wait too long for `Instant` to represent is as good as forever: a year.
            let own = started
                .checked_add(wait)
                .unwrap_or_else(|| started + Duration::from_secs(365 * 24 * 3600));
            let (deadline, limit) = match caller {
                Some(deadline) if deadline < own => (deadline, WaitLimit::Deadline),
                _ => (own, WaitLimit::RowLockWait),
            };
            Fixed {
                deadline,
                limit,
                started,
            }
        })
    }
}

fn remove(table: &mut HashTable<Entry>, hash: u64, row: &Bytes) {
    if let Ok(occupied) = table.find_entry(hash, |e| e.row == *row) {
        occupied.remove();
    }
}

#[cfg(all(test, not(shuttle)))]
mod tests;
