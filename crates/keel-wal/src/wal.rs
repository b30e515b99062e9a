//! [`Wal`]: group commit over segments. Appenders frame their entry into a shared, bounded
//! pending buffer and wait. A `SyncWal` appender that finds nobody writing becomes the group's
//! leader and writes everything pending itself with one `write` (RocksDB's write group: no
//! hand-off to another thread); the writer thread writes `AsyncWal` entries and covers every
//! `FsyncWal` waiter with one `fdatasync`. One flag, `writing`, makes each batch exclusive, so
//! batches reach the segment in LSN order whoever writes them.

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use keel_fs::FileSystem;
use keel_sync::atomic::{AtomicU64, Ordering::Acquire, Ordering::Release};
use keel_sync::thread::{JoinHandle, spawn_named};
use keel_sync::{Condvar, Mutex, MutexGuard};

use crate::error::WalError;
use crate::format::{RECORD_HEADER_LEN, WalEntry, encode_entry_record, set_record_sequence};
use crate::metrics::{AppendTimings, Metrics, WalStats};
use crate::options::{Durability, WalOptions};
use crate::replay::{ReplayOptions, replay};
use crate::segment::SegmentWriter;

/// A group-commit write-ahead log. Cheap to share (`&Wal` from many threads).
#[derive(Debug)]
pub struct Wal {
    shared: Arc<Shared>,
    writer: Option<JoinHandle<()>>,
}

#[derive(Debug)]
struct Shared {
    fs: Arc<dyn FileSystem>,
    dir: PathBuf,
    options: WalOptions,
    state: Mutex<State>,
    /// The segment being written. Locked only by whoever set `State::writing`, so never
    /// contended; a mutex only because the writer thread and leaders take turns with it.
    segment: Mutex<SegmentWriter>,
    /// Wakes the writer: work arrived, or a roll or close was asked for.
    work: Condvar,
    /// Wakes appenders waiting for an LSN, striped by LSN ([`Shared::stripe`]): entries were
    /// written or synced, or it is a waiter's turn to lead. Waking only the stripes of the LSNs
    /// that moved (one condition variable woke every waiter at every batch: on the increment
    /// shape, 80 threads whose entries mostly were not in it) keeps most wake-ups useful.
    durable: [Condvar; STRIPES],
    /// Wakes appenders waiting for room in the pending buffer.
    space: Condvar,
    /// `written_lsn` and `synced_lsn`, published for [`Wal::is_durable`], which takes no lock.
    marks: Marks,
    metrics: Metrics,
}

/// Copies of the state's `written_lsn` and `synced_lsn`, stored under the state lock as they
/// move, so they are never ahead of what a waiter under the lock would see.
#[derive(Debug)]
struct Marks {
    written: AtomicU64,
    synced: AtomicU64,
}

/// A closed segment and, per region, the highest sequence id it holds.
#[derive(Debug)]
struct ClosedSegment {
    path: PathBuf,
    max_sequence: HashMap<u64, u64>,
}

#[derive(Debug)]
struct State {
    pending: Vec<u8>,
    pending_entries: u64,
    /// (region, sequence id) of each pending entry, for truncation bookkeeping.
    pending_meta: Vec<(u64, u64)>,
    /// The buffers of the batch written last, emptied, for the next batch to fill: without
    /// them a batch's buffers were new each time, two allocations (and their growth) per
    /// batch, which is per append when batches are of one.
    spare_pending: Vec<u8>,
    spare_meta: Vec<(u64, u64)>,
    /// The spans the pending entries were appended in, for the writer's spans to follow.
    #[cfg(feature = "tracing")]
    pending_spans: Vec<tracing::Span>,
    /// When the oldest pending entry was appended.
    pending_since: Option<Instant>,
    /// A pending entry needs the writer thread (an `AsyncWal` or `FsyncWal` one: nobody waits
    /// to lead for it).
    pending_for_writer: bool,
    /// Someone (the writer thread or a leader) is writing or syncing the segment.
    writing: bool,
    /// Appenders waiting for room in the pending buffer.
    space_waiters: usize,
    /// LSNs of the parked `SyncWal` waiters: whoever ends a turn with entries pending wakes the
    /// first one whose entry is unwritten, to lead the next group.
    parked: BTreeSet<u64>,
    next_lsn: u64,
    written_lsn: u64,
    synced_lsn: u64,
    /// Highest LSN an `FsyncWal` append (or `sync()`) needs synced.
    sync_wanted: u64,
    /// Written-but-unsynced since, for the `AsyncWal` bound.
    unsynced_since: Option<Instant>,
    last_sequence: HashMap<u64, u64>,
    flushed: HashMap<u64, u64>,
    /// Regions closed to this log ([`Wal::close_region`]): their entries keep no segment alive
    /// and appends for them are refused.
    closed_regions: HashSet<u64>,
    current_max_sequence: HashMap<u64, u64>,
    closed: VecDeque<ClosedSegment>,
    /// Recent write batches: (last LSN, write time, sync time or zero), for per-append timings.
    batches: VecDeque<(u64, Duration, Duration)>,
    roll_requested: bool,
    poisoned: Option<String>,
    closing: bool,
}

impl Wal {
    /// Opens (creating if needed) the WAL in `dir`: replays it once to learn where it ends,
    /// cuts a damaged tail as `options.recovery` allows, and starts a new segment for writing.
    /// Read the existing entries with [`Wal::replay`].
    pub fn open(fs: Arc<dyn FileSystem>, dir: &Path, options: WalOptions) -> Result<Wal, WalError> {
        fs.create_dir_durable(dir).map_err(|source| WalError::Io {
            op: "create directory",
            path: dir.to_path_buf(),
            source,
        })?;
        let Recovered {
            next_lsn,
            last_sequence,
            closed,
        } = recover(&fs, dir, &options)?;
        let segment = SegmentWriter::create(&fs, dir, next_lsn, options.max_entry_size)?;
        let shared = Arc::new(Shared {
            fs,
            dir: dir.to_path_buf(),
            options,
            state: Mutex::new(State {
                pending: Vec::new(),
                pending_entries: 0,
                pending_meta: Vec::new(),
                spare_pending: Vec::new(),
                spare_meta: Vec::new(),
                #[cfg(feature = "tracing")]
                pending_spans: Vec::new(),
                pending_since: None,
                pending_for_writer: false,
                writing: false,
                space_waiters: 0,
                parked: BTreeSet::new(),
                next_lsn,
                written_lsn: next_lsn - 1,
                synced_lsn: next_lsn - 1,
                sync_wanted: 0,
                unsynced_since: None,
                last_sequence,
                flushed: HashMap::new(),
                closed_regions: HashSet::new(),
                current_max_sequence: HashMap::new(),
                closed,
                batches: VecDeque::new(),
                roll_requested: false,
                poisoned: None,
                closing: false,
            }),
            segment: Mutex::new(segment),
            work: Condvar::new(),
            durable: std::array::from_fn(|_| Condvar::new()),
            space: Condvar::new(),
            marks: Marks {
                written: AtomicU64::new(next_lsn - 1),
                synced: AtomicU64::new(next_lsn - 1),
            },
            metrics: Metrics::default(),
        });
        let thread_shared = Arc::clone(&shared);
        let writer = spawn_named("keel-wal-writer", move || thread_shared.run_writer()).map_err(
            |source| WalError::Io {
                op: "spawn writer",
                path: dir.to_path_buf(),
                source,
            },
        )?;
        Ok(Wal {
            shared,
            writer: Some(writer),
        })
    }

    /// Reads the log's entries (those above each region's `flushed` point), in order.
    pub fn replay(&self, options: ReplayOptions) -> Result<crate::Replay, WalError> {
        replay(Arc::clone(&self.shared.fs), &self.shared.dir, options)
    }

    /// Logs `entry` at `durability` and returns once it is as durable as asked, with how long it
    /// waited for its group, was written and was synced. Sequence ids must strictly increase
    /// per region. `SkipWal` logs nothing; `UseDefault` is `SyncWal`.
    pub fn append(
        &self,
        entry: &WalEntry,
        durability: Durability,
    ) -> Result<AppendReceipt, WalError> {
        self.enqueue(entry, durability)?.wait()
    }

    /// The first half of [`Wal::append`]: puts `entry` in the log's order (checking its sequence
    /// id) and returns at once; [`PendingAppend::wait`] then waits for the durability asked.
    /// Waiting apart lets writers share group commits (HBase's `append` then `sync(txid)`).
    pub fn enqueue(
        &self,
        entry: &WalEntry,
        durability: Durability,
    ) -> Result<PendingAppend<'_>, WalError> {
        self.enqueue_numbered(entry, durability, || (entry.sequence_id, ()))
            .map(|((), pending)| pending)
    }

    /// [`Wal::enqueue`], with the entry's sequence id taken in log order: `number` runs under
    /// the log's lock, at the moment the entry takes its place, and returns the sequence id with
    /// whatever the caller wants back (a region's MVCC write entry). The entry and every cell in
    /// it are logged with that sequence id, whatever they carried. A region that takes its write
    /// numbers here needs no lock of its own to keep them in log order; with HBase's
    /// `begin(Runnable)` the MVCC lock was held across the log's, and writers queued on both.
    ///
    /// The entry is encoded before the lock is taken; under it, only the sequence id is written
    /// into the record and its checksum recomputed. If the log refuses the entry after `number`
    /// ran (a sequence id not above the region's last), what `number` returned is dropped.
    pub fn enqueue_numbered<R>(
        &self,
        entry: &WalEntry,
        durability: Durability,
        number: impl FnOnce() -> (u64, R),
    ) -> Result<(R, PendingAppend<'_>), WalError> {
        let started = Instant::now();
        let durability = durability.resolve(Durability::SyncWal);
        let shared = &self.shared;
        let size = entry.encoded_len();
        if size > shared.options.max_entry_size {
            return Err(WalError::EntryTooLarge {
                size,
                max: shared.options.max_entry_size,
            });
        }
        // Encoded and checksummed before the log's lock is taken: every appender of every region
        // takes that lock, so it holds only the checks and one copy into the pending buffer.
        let mut buffer = RecordBuffer::take();
        let record = &mut buffer.0;
        if durability != Durability::SkipWal {
            record.reserve_exact(RECORD_HEADER_LEN + size);
            encode_entry_record(entry, record);
        }
        let mut state = shared.state.lock();
        check_usable(&state)?;
        // An entry of a closed region would keep no segment alive: it could be truncated away
        // before anyone replays it.
        if !state.closed_regions.is_empty() && state.closed_regions.contains(&entry.region) {
            return Err(WalError::RegionClosed {
                region: entry.region,
            });
        }
        // Bounded memory: wait for the writer to drain the buffer.
        while durability != Durability::SkipWal
            && !state.pending.is_empty()
            && (state.pending.len() + size > shared.options.pending_bytes_max
                || state.pending_entries >= shared.options.pending_entries_max as u64)
        {
            state.space_waiters += 1;
            shared.space.wait(&mut state);
            state.space_waiters -= 1;
            check_usable(&state)?;
        }
        // The entry's place in the log is fixed from here: its sequence id is taken now.
        let (sequence_id, taken) = number();
        if let Some(&previous) = state.last_sequence.get(&entry.region)
            && sequence_id <= previous
        {
            return Err(WalError::SequenceNotIncreasing {
                region: entry.region,
                previous,
                found: sequence_id,
            });
        }
        state.last_sequence.insert(entry.region, sequence_id);
        if durability == Durability::SkipWal {
            let pending = PendingAppend {
                wal: self,
                lsn: None,
                durability,
                started,
            };
            return Ok((taken, pending));
        }
        if sequence_id != entry.sequence_id {
            set_record_sequence(record, sequence_id);
        }
        state.pending.extend_from_slice(record);
        state.pending_entries += 1;
        state.pending_meta.push((entry.region, sequence_id));
        #[cfg(feature = "tracing")]
        {
            let span = tracing::Span::current();
            if !span.is_none() {
                state.pending_spans.push(span);
            }
        }
        state.pending_since.get_or_insert(started);
        let lsn = state.next_lsn;
        state.next_lsn += 1;
        if durability == Durability::FsyncWal {
            state.sync_wanted = state.sync_wanted.max(lsn);
        }
        // A `SyncWal` appender writes its own group when it waits (or a leader takes it along);
        // the others need the writer thread.
        if durability != Durability::SyncWal {
            state.pending_for_writer = true;
            shared.work.notify_one();
        }
        shared.metrics.appended(size);
        let pending = PendingAppend {
            wal: self,
            lsn: Some(lsn),
            durability,
            started,
        };
        Ok((taken, pending))
    }

    fn wait_durable(
        &self,
        lsn: u64,
        durability: Durability,
        started: Instant,
    ) -> Result<AppendReceipt, WalError> {
        let shared = &self.shared;
        let mut state = shared.state.lock();
        let done = |s: &State| match durability {
            Durability::FsyncWal => s.synced_lsn >= lsn,
            Durability::SyncWal => s.written_lsn >= lsn,
            _ => true,
        };
        // Checked before each wait: the WAL may have been poisoned between `enqueue` and here,
        // and then no progress will ever come to wake this waiter.
        while !done(&state) {
            check_usable(&state)?;
            // Nobody is writing and this entry is still pending: lead the group. (Whoever
            // clears `writing` wakes every waiter, so a waiter that finds it set is woken to
            // try again.)
            if durability == Durability::SyncWal && !state.writing && state.written_lsn < lsn {
                state = shared.lead(state);
                continue;
            }
            let may_lead = durability == Durability::SyncWal;
            if may_lead {
                state.parked.insert(lsn);
            }
            shared.stripe(lsn).wait(&mut state);
            if may_lead {
                state.parked.remove(&lsn);
            }
        }
        let (write, sync) = state
            .batches
            .iter()
            .find(|(last, _, _)| *last >= lsn)
            .map_or((Duration::ZERO, Duration::ZERO), |(_, w, s)| (*w, *s));
        drop(state);
        let total = started.elapsed();
        let timings = AppendTimings {
            total,
            write,
            sync: if durability == Durability::FsyncWal {
                sync
            } else {
                Duration::ZERO
            },
        };
        if durability >= Durability::SyncWal {
            shared.metrics.acknowledged(total);
        }
        Ok(AppendReceipt {
            lsn: Some(lsn),
            timings,
        })
    }

    /// Whether the append `ticket` names is already as durable as it asked, the condition
    /// [`PendingAppend::wait`] waits for, read without the log's lock: a writer that finds
    /// another's append durable may finish that write for it.
    pub fn is_durable(&self, ticket: AppendTicket) -> bool {
        let marks = &self.shared.marks;
        match (ticket.lsn, ticket.durability) {
            (None, _) => true,
            (Some(lsn), Durability::FsyncWal) => marks.synced.load(Acquire) >= lsn,
            (Some(lsn), Durability::SyncWal) => marks.written.load(Acquire) >= lsn,
            (Some(_), _) => true,
        }
    }

    /// Makes everything appended so far durable (an `FsyncWal` barrier without an entry).
    pub fn sync(&self) -> Result<(), WalError> {
        let shared = &self.shared;
        let mut state = shared.state.lock();
        check_usable(&state)?;
        let target = state.next_lsn - 1;
        state.sync_wanted = state.sync_wanted.max(target);
        shared.work.notify_one();
        while state.synced_lsn < target {
            shared.stripe(target).wait(&mut state);
            check_usable(&state)?;
        }
        Ok(())
    }

    /// Asks the writer to start a new segment before its next write.
    pub fn roll(&self) {
        let mut state = self.shared.state.lock();
        state.roll_requested = true;
        self.shared.work.notify_one();
    }

    /// Records that `region`'s entries up to `sequence_id` are safe in store files; closed
    /// segments holding nothing newer for any region are deleted (or archived).
    pub fn mark_flushed(&self, region: u64, sequence_id: u64) -> Result<(), WalError> {
        let mut state = self.shared.state.lock();
        let point = state.flushed.entry(region).or_insert(0);
        *point = (*point).max(sequence_id);
        self.shared.truncate(&mut state)
    }

    /// Declares that `region` logs here and that its entries up to `flushed` are safe in its
    /// store files (what its manifest says when it opens). Undoes [`Wal::close_region`]. A
    /// server calls it for every region it opens, so that a restart, which starts with no
    /// flushed points, does not keep every old segment until each region flushes again.
    pub fn open_region(&self, region: u64, flushed: u64) -> Result<(), WalError> {
        let mut state = self.shared.state.lock();
        state.closed_regions.remove(&region);
        let point = state.flushed.entry(region).or_insert(0);
        *point = (*point).max(flushed);
        self.shared.truncate(&mut state)
    }

    /// Declares that `region` will log nothing more until [`Wal::open_region`]: everything it
    /// logged is in its store files, or its table is gone. Its entries stop keeping segments
    /// alive (closed segments holding nothing else unflushed go at once), and appends for it
    /// are refused with [`WalError::RegionClosed`].
    pub fn close_region(&self, region: u64) -> Result<(), WalError> {
        let mut state = self.shared.state.lock();
        state.closed_regions.insert(region);
        self.shared.truncate(&mut state)
    }

    /// Every region with an entry in the log or appended since it opened (sorted), so that a
    /// server can close the ones it does not host.
    pub fn logged_regions(&self) -> Vec<u64> {
        let state = self.shared.state.lock();
        let mut regions: Vec<u64> = state
            .last_sequence
            .keys()
            .chain(state.closed.iter().flat_map(|c| c.max_sequence.keys()))
            .copied()
            .collect::<HashSet<u64>>()
            .into_iter()
            .collect();
        regions.sort_unstable();
        regions
    }

    /// The highest sequence id logged for `region` (found at open or appended since), if any: a
    /// region whose manifest is flushed at or past it has nothing to replay.
    pub fn last_sequence_id(&self, region: u64) -> Option<u64> {
        self.shared.state.lock().last_sequence.get(&region).copied()
    }

    /// The largest entry payload the log accepts (`WalOptions::max_entry_size`).
    pub fn max_entry_size(&self) -> usize {
        self.shared.options.max_entry_size
    }

    /// Why the log refuses every append (a write or sync failed), if it does.
    pub fn poisoned(&self) -> Option<String> {
        self.shared.state.lock().poisoned.clone()
    }

    /// Regions whose unflushed entries keep the oldest segment alive while there are more than
    /// `max_segments` closed segments (HBase asks these regions to flush).
    pub fn regions_to_flush(&self) -> Vec<u64> {
        let state = self.shared.state.lock();
        if state.closed.len() <= self.shared.options.max_segments {
            return Vec::new();
        }
        let Some(oldest) = state.closed.front() else {
            return Vec::new();
        };
        let mut regions: Vec<u64> = oldest
            .max_sequence
            .iter()
            .filter(|(region, max)| {
                !state.closed_regions.contains(region)
                    && state.flushed.get(region).copied().unwrap_or(0) < **max
            })
            .map(|(region, _)| *region)
            .collect();
        regions.sort_unstable();
        regions
    }

    /// Closed segments currently kept.
    pub fn closed_segments(&self) -> usize {
        self.shared.state.lock().closed.len()
    }

    /// Counters and latency histograms.
    pub fn stats(&self) -> WalStats {
        self.shared.metrics.snapshot()
    }

    /// Writes and syncs everything pending, then stops the writer. Also done on drop.
    pub fn close(mut self) -> Result<(), WalError> {
        self.shutdown()
    }

    fn shutdown(&mut self) -> Result<(), WalError> {
        {
            let mut state = self.shared.state.lock();
            state.closing = true;
            state.sync_wanted = state.next_lsn - 1;
            self.shared.work.notify_one();
        }
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
        let state = self.shared.state.lock();
        match &state.poisoned {
            Some(cause) => Err(WalError::Poisoned {
                cause: cause.clone(),
            }),
            None => Ok(()),
        }
    }
}

impl Drop for Wal {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}

/// An entry in the log's order, not yet as durable as asked: [`PendingAppend::wait`] for that.
#[derive(Debug)]
#[must_use = "an enqueued entry is not durable until waited for"]
pub struct PendingAppend<'a> {
    wal: &'a Wal,
    lsn: Option<u64>,
    durability: Durability,
    started: Instant,
}

/// What [`Wal::is_durable`] needs to know of a pending append: its LSN and level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AppendTicket {
    lsn: Option<u64>,
    durability: Durability,
}

impl PendingAppend<'_> {
    /// The append's ticket, for [`Wal::is_durable`].
    pub fn ticket(&self) -> AppendTicket {
        AppendTicket {
            lsn: self.lsn,
            durability: self.durability,
        }
    }

    /// Waits until the entry is as durable as its level asks, and reports where time went.
    pub fn wait(self) -> Result<AppendReceipt, WalError> {
        match self.lsn {
            None => Ok(AppendReceipt {
                lsn: None,
                timings: AppendTimings::default(),
            }),
            Some(lsn) => self.wal.wait_durable(lsn, self.durability, self.started),
        }
    }
}

/// What an append got: its LSN (`None` for `SkipWal`) and where its time went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AppendReceipt {
    /// The record's log sequence number.
    pub lsn: Option<u64>,
    /// Time spent, for the region's per-stage write breakdown.
    pub timings: AppendTimings,
}

/// What `Wal::open` learns from the existing log.
#[derive(Debug)]
struct Recovered {
    next_lsn: u64,
    last_sequence: HashMap<u64, u64>,
    closed: VecDeque<ClosedSegment>,
}

/// Replays the log once: where it ends, each region's last sequence id, and per segment the
/// highest sequence id of each region (what truncation needs). Cuts a damaged tail as
/// `options.recovery` allows and removes a last segment that holds no record, so that writing
/// can start a fresh segment at `next_lsn`.
fn recover(
    fs: &Arc<dyn FileSystem>,
    dir: &Path,
    options: &WalOptions,
) -> Result<Recovered, WalError> {
    let replay_options = ReplayOptions {
        mode: options.recovery,
        flushed: HashMap::new(),
        max_entry_size: options.max_entry_size,
    };
    let mut scan = replay(Arc::clone(fs), dir, replay_options)?;
    // One pass: where the log ends, each region's last sequence id, and per segment the
    // highest sequence id of each region (what truncation needs).
    let mut last_sequence = HashMap::new();
    let mut per_segment: HashMap<PathBuf, HashMap<u64, u64>> = HashMap::new();
    while let Some(item) = scan.next() {
        let entry = item?;
        last_sequence.insert(entry.region, entry.sequence_id);
        if let Some(path) = scan.current_segment() {
            let max = per_segment.entry(path.to_path_buf()).or_default();
            max.insert(entry.region, entry.sequence_id);
        }
    }
    let next_lsn = scan.next_lsn();
    let mut dropped = None;
    if let Some(cut) = scan.tail_cut() {
        let io = |op| {
            let path = cut.path.clone();
            move |source| WalError::Io { op, path, source }
        };
        if cut.offset == 0 {
            fs.remove(&cut.path).map_err(io("remove torn segment"))?;
            dropped = Some(cut.path.clone());
        } else {
            let file = fs.open(&cut.path).map_err(io("open"))?;
            file.truncate(cut.offset)
                .map_err(io("truncate torn tail"))?;
            file.sync_all().map_err(io("sync"))?;
        }
    }
    // A last segment named for `next_lsn` holds no record (a crash right after a roll or an
    // open): replace it rather than collide with it.
    let empty_last = dir.join(crate::format::segment_name(next_lsn));
    if dropped.as_ref() != Some(&empty_last)
        && fs.exists(&empty_last).map_err(|source| WalError::Io {
            op: "stat",
            path: empty_last.clone(),
            source,
        })?
    {
        let io = |op| {
            let path = empty_last.clone();
            move |source| WalError::Io { op, path, source }
        };
        fs.remove(&empty_last).map_err(io("remove empty segment"))?;
        fs.sync_dir(dir).map_err(io("sync directory"))?;
        dropped = Some(empty_last);
    }
    let closed = scan
        .segments()
        .filter(|path| Some(*path) != dropped.as_deref())
        .map(|path| ClosedSegment {
            path: path.to_path_buf(),
            max_sequence: per_segment.remove(path).unwrap_or_default(),
        })
        .collect();
    Ok(Recovered {
        next_lsn,
        last_sequence,
        closed,
    })
}

fn check_usable(state: &MutexGuard<'_, State>) -> Result<(), WalError> {
    if let Some(cause) = &state.poisoned {
        return Err(WalError::Poisoned {
            cause: cause.clone(),
        });
    }
    if state.closing {
        return Err(WalError::Closed);
    }
    Ok(())
}

/// Most batches one `SyncWal` leader writes in a row before returning to its caller.
const LEADER_BATCHES: usize = 4;
/// The largest batch buffer kept for the next batch (bytes).
const SPARE_BYTES_MAX: usize = 1 << 20;
/// The largest encoding buffer an appending thread keeps between appends (bytes): every
/// thread that ever appended holds one, so it stays small.
const RECORD_BUFFER_MAX: usize = 64 << 10;

thread_local! {
    /// The appending thread's encoding buffer, kept between its appends ([`RecordBuffer`]).
    static RECORD: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// The thread's encoding buffer while an append uses it: it goes back, emptied, whatever way
/// the append ends (unless a large entry grew it past [`RECORD_BUFFER_MAX`]). An append
/// allocated a buffer each time before.
struct RecordBuffer(Vec<u8>);

impl RecordBuffer {
    fn take() -> RecordBuffer {
        // `try_with`: a thread appending while its thread-locals are torn down gets a fresh
        // buffer rather than a panic.
        RecordBuffer(RECORD.try_with(std::cell::Cell::take).unwrap_or_default())
    }
}

impl Drop for RecordBuffer {
    fn drop(&mut self) {
        if self.0.capacity() <= RECORD_BUFFER_MAX {
            let mut buffer = std::mem::take(&mut self.0);
            buffer.clear();
            // After the thread-local's teardown the buffer is simply freed.
            let _ = RECORD.try_with(|kept| kept.set(buffer));
        }
    }
}

/// Condition variables the LSN waiters are spread over.
const STRIPES: usize = 32;

impl Shared {
    /// Refuses every later append; wakes every waiter to see it, and the writer to stop.
    fn poison(&self, state: &mut State, err: &WalError) {
        if state.poisoned.is_none() {
            #[cfg(feature = "tracing")]
            tracing::error!(
                dir = %self.dir.display(),
                cause = %err,
                "WAL poisoned: every write is refused until the log is reopened"
            );
        }
        state.poisoned.get_or_insert_with(|| err.to_string());
        self.durable.iter().for_each(Condvar::notify_all);
        self.space.notify_all();
        self.work.notify_one();
    }

    /// The condition variable the waiters for `lsn` park on.
    fn stripe(&self, lsn: u64) -> &Condvar {
        &self.durable[(lsn % STRIPES as u64) as usize]
    }

    /// Wakes the waiters of LSNs `after + 1 ..= through` (just written or synced).
    fn wake_through(&self, after: u64, through: u64) {
        if through.saturating_sub(after) >= STRIPES as u64 {
            self.durable.iter().for_each(Condvar::notify_all);
            return;
        }
        for lsn in after + 1..=through {
            self.stripe(lsn).notify_all();
        }
    }

    /// Whether the writer thread has something to do: entries no leader will take, a sync, a
    /// roll, the `AsyncWal` bound, or the close; or entries pending so long that their appender
    /// evidently never waited for them.
    fn writer_has_work(&self, state: &State) -> bool {
        let interval = self.options.async_sync_interval;
        // One clock read for both ages, and none when neither is running: this is asked under
        // the log's lock at the end of every leader's turn.
        let now =
            (state.unsynced_since.is_some() || state.pending_since.is_some()).then(Instant::now);
        let older = |since: Option<Instant>| {
            since
                .zip(now)
                .is_some_and(|(since, now)| now.saturating_duration_since(since) >= interval)
        };
        let async_due = older(state.unsynced_since);
        let stale = older(state.pending_since);
        state.pending_for_writer
            || stale
            || (state.closing && !state.pending.is_empty())
            || state.sync_wanted > state.synced_lsn
            || state.roll_requested
            || async_due
    }

    /// Ends a turn at writing: clears `writing`, wakes a parked `SyncWal` waiter whose entry is
    /// pending to lead the next group (one that has not parked yet leads when it comes to
    /// wait: it finds nobody writing) and, if it has work, the writer thread.
    fn end_turn(&self, state: &mut State) {
        state.writing = false;
        if let Some(&next) = state.parked.range(state.written_lsn + 1..).next() {
            self.stripe(next).notify_all();
        }
        if self.writer_has_work(state) {
            self.work.notify_one();
        }
    }

    /// A `SyncWal` waiter's turn as leader (the caller saw `writing` clear with its entry
    /// pending): writes everything pending, publishes it and returns the state locked again.
    /// While more arrived meanwhile, it writes that too (up to [`LEADER_BATCHES`] batches), so
    /// the next group need not wait for a woken waiter to be scheduled.
    fn lead<'a>(&'a self, mut state: MutexGuard<'a, State>) -> MutexGuard<'a, State> {
        state.writing = true;
        let mut segment = self.segment.lock();
        for turn in 1..=LEADER_BATCHES {
            let Some((next, last, write_time)) = self.write_pending(state, &mut segment) else {
                drop(segment);
                let mut state = self.state.lock();
                self.end_turn(&mut state);
                return state;
            };
            state = next;
            record_batch(&mut state, last, write_time, Duration::ZERO);
            if state.pending.is_empty() || state.closing || turn == LEADER_BATCHES {
                break;
            }
        }
        drop(segment);
        self.end_turn(&mut state);
        state
    }

    /// Takes everything pending (the caller has set `writing` and holds the segment), rolls the
    /// segment first if due, writes the batch with one call and publishes it as written.
    /// Returns the state locked again, the batch's last LSN and its write time; `None` if the
    /// WAL was poisoned (the state is then unlocked).
    fn write_pending<'a>(
        &'a self,
        mut state: MutexGuard<'a, State>,
        segment: &mut SegmentWriter,
    ) -> Option<(MutexGuard<'a, State>, u64, Duration)> {
        let spare = std::mem::take(&mut state.spare_pending);
        let mut batch = std::mem::replace(&mut state.pending, spare);
        let count = std::mem::take(&mut state.pending_entries);
        let spare_meta = std::mem::take(&mut state.spare_meta);
        let mut meta = std::mem::replace(&mut state.pending_meta, spare_meta);
        state.pending_for_writer = false;
        #[cfg(feature = "tracing")]
        let _write_span = {
            let span = tracing::debug_span!("wal.write", entries = count);
            for cause in std::mem::take(&mut state.pending_spans) {
                span.follows_from(&cause);
            }
            span.entered()
        };
        let queued_since = state.pending_since.take();
        let roll =
            std::mem::take(&mut state.roll_requested) || segment.len() >= self.options.roll_size;
        let last = state.written_lsn + count;
        // Free buffer space now: appenders may fill the next batch while this one writes. (Only
        // those waiting for room: waking every waiter per batch would cost a herd of futile
        // wake-ups.)
        if state.space_waiters > 0 {
            self.space.notify_all();
        }
        drop(state);

        if roll && !segment.is_empty() {
            match self.roll(segment) {
                Ok(closed) => {
                    let mut state = self.state.lock();
                    let max_sequence = std::mem::take(&mut state.current_max_sequence);
                    state.closed.push_back(ClosedSegment {
                        path: closed,
                        max_sequence,
                    });
                    let written = state.written_lsn;
                    if written > state.synced_lsn {
                        self.wake_through(state.synced_lsn, written);
                        state.synced_lsn = written;
                        self.marks.synced.store(written, Release);
                    }
                    if let Err(err) = self.truncate(&mut state) {
                        self.poison(&mut state, &err);
                        return None;
                    }
                }
                Err(err) => {
                    self.poison(&mut self.state.lock(), &err);
                    return None;
                }
            }
        }
        let write_started = Instant::now();
        if count > 0
            && let Err(err) = segment.append_framed(&batch, count)
        {
            self.poison(&mut self.state.lock(), &err);
            return None;
        }
        let write_time = write_started.elapsed();
        let mut state = self.state.lock();
        // The batch's waiters may go (while the next batch is written, if any).
        self.wake_through(state.written_lsn, last);
        state.written_lsn = last;
        self.marks.written.store(last, Release);
        for &(region, sequence) in &meta {
            let max = state.current_max_sequence.entry(region).or_insert(0);
            *max = (*max).max(sequence);
        }
        // Kept for the next batch, unless a burst grew them large (the pending buffer may
        // reach `pending_bytes_max`): memory a quiet log would hold for nothing.
        if batch.capacity() <= SPARE_BYTES_MAX {
            batch.clear();
            state.spare_pending = batch;
        }
        if meta.capacity() <= SPARE_BYTES_MAX / std::mem::size_of::<(u64, u64)>() {
            meta.clear();
            state.spare_meta = meta;
        }
        if count > 0 {
            state
                .unsynced_since
                .get_or_insert(queued_since.unwrap_or(write_started));
            self.metrics.wrote();
        }
        Some((state, last, write_time))
    }

    /// The writer thread: when it has work and nobody is writing, takes its turn: writes
    /// everything pending, wakes the `SyncWal` waiters, then syncs once if any `FsyncWal`
    /// waiter (or the `AsyncWal` bound, or the close) needs it.
    fn run_writer(self: Arc<Self>) {
        loop {
            let mut state = self.state.lock();
            loop {
                let has_work = self.writer_has_work(&state);
                if state.poisoned.is_some() || (state.closing && !has_work && !state.writing) {
                    return;
                }
                if has_work && !state.writing {
                    break;
                }
                let deadline = Instant::now() + self.options.async_sync_interval;
                self.work.wait_until(&mut state, deadline);
            }
            state.writing = true;
            let mut segment = self.segment.lock();
            let Some((mut state, last, write_time)) = self.write_pending(state, &mut segment)
            else {
                return;
            };
            let async_due = state
                .unsynced_since
                .is_some_and(|t| t.elapsed() >= self.options.async_sync_interval);
            let sync = (state.sync_wanted > state.synced_lsn || async_due || state.closing)
                && state.synced_lsn < state.written_lsn;
            record_batch(&mut state, last, write_time, Duration::ZERO);
            if !sync {
                drop(segment);
                self.end_turn(&mut state);
                continue;
            }
            // `writing` stays set through the sync, so nobody writes while it runs (the batch's
            // `SyncWal` waiters were woken when it was written).
            drop(state);
            #[cfg(feature = "tracing")]
            let _sync_span = tracing::debug_span!("wal.sync").entered();
            let sync_started = Instant::now();
            let synced = segment.sync();
            drop(segment);
            let mut state = self.state.lock();
            if let Err(err) = synced {
                self.poison(&mut state, &err);
                return;
            }
            let sync_time = sync_started.elapsed();
            let newly = last - state.synced_lsn;
            self.wake_through(state.synced_lsn, last);
            state.synced_lsn = last;
            self.marks.synced.store(last, Release);
            state.unsynced_since = None;
            record_batch(&mut state, last, write_time, sync_time);
            self.metrics.synced(newly, sync_time);
            self.end_turn(&mut state);
        }
    }

    /// Syncs and closes the current segment and starts the next; returns the closed path.
    fn roll(&self, segment: &mut SegmentWriter) -> Result<PathBuf, WalError> {
        segment.sync()?;
        let next = SegmentWriter::create(
            &self.fs,
            &self.dir,
            segment.next_lsn(),
            self.options.max_entry_size,
        )?;
        let closed = std::mem::replace(segment, next);
        self.metrics.rolled();
        Ok(closed.path().to_path_buf())
    }

    /// Removes (or archives) the oldest closed segments whose every region has flushed past them.
    fn truncate(&self, state: &mut State) -> Result<(), WalError> {
        while let Some(oldest) = state.closed.front() {
            let flushed = oldest.max_sequence.iter().all(|(region, max)| {
                state.closed_regions.contains(region)
                    || state.flushed.get(region).copied().unwrap_or(0) >= *max
            });
            if !flushed {
                return Ok(());
            }
            let path = oldest.path.clone();
            let io = |op| {
                let path = path.clone();
                move |source| WalError::Io { op, path, source }
            };
            match &self.options.archive_dir {
                Some(archive) => {
                    self.fs
                        .create_dir_durable(archive)
                        .map_err(io("create archive"))?;
                    let name = path.file_name().map(PathBuf::from).unwrap_or_default();
                    self.fs
                        .rename(&path, &archive.join(name))
                        .map_err(io("archive"))?;
                    self.fs.sync_dir(archive).map_err(io("sync archive"))?;
                }
                None => self.fs.remove(&path).map_err(io("remove"))?,
            }
            self.fs.sync_dir(&self.dir).map_err(io("sync directory"))?;
            state.closed.pop_front();
            self.metrics.truncated();
        }
        Ok(())
    }
}

fn record_batch(state: &mut State, last: u64, write: Duration, sync: Duration) {
    if let Some(entry) = state.batches.iter_mut().find(|(l, _, _)| *l == last) {
        entry.2 = sync;
        return;
    }
    state.batches.push_back((last, write, sync));
    while state.batches.len() > 256 {
        state.batches.pop_front();
    }
}
