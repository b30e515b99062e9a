//! A region's counters: requests, refusals and waits of its limits, flushes and compactions.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use keel_sync::StripedCounter;

use super::compaction::CompactionOutcome;

/// What a region has done and refused, since it opened.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RegionStats {
    /// Read requests (HBase `readRequestsCount`): gets and scanner opens. Increments, appends and
    /// check-and-mutates count one too, for the read they make.
    pub read_requests: u64,
    /// Write requests (HBase `writeRequestsCount`): row operations applied or attempted, a
    /// batch counting each of its operations.
    pub write_requests: u64,
    /// Writes refused with `RegionTooBusy` (memstore above flush size × block multiplier).
    pub busy_refusals: u64,
    /// Writes that waited for global memstore memory (above the high watermark).
    pub blocked_writes: u64,
    /// The time they waited, summed.
    pub blocked_time: Duration,
    /// Flushes committed.
    pub flushes: u64,
    /// Bytes of store files flushes wrote.
    pub flushed_bytes: u64,
    /// Times a due flush was held back because a family had too many store files.
    pub flush_delays: u64,
    /// In-memory flushes: a store's frozen cells merged into one flat array
    /// (`RegionLimits::in_memory_compaction`).
    pub in_memory_flushes: u64,
    /// Compactions that did something (each over every family).
    pub compactions: u64,
    /// Major compactions among them.
    pub major_compactions: u64,
    /// Store files compactions removed.
    pub compacted_files: u64,
    /// Bytes compactions read.
    pub compaction_bytes_read: u64,
    /// Bytes compactions wrote.
    pub compaction_bytes_written: u64,
    /// Time compactions slept in the throughput throttle.
    pub compaction_throttled: Duration,
    /// Logged cells skipped at open because their family is not the region's.
    pub skipped_replay_cells: u64,
    /// Store files the manifest lists for a family the region does not have, skipped at open.
    pub skipped_files: u64,
    /// Batches of combined increments and appends written ([`super::ReadModifyWrites`]).
    pub rmw_batches: u64,
    /// Increments and appends written in those batches (over `rmw_batches`: the mean batch).
    pub rmw_batched_operations: u64,
}

#[derive(Debug, Default)]
pub(crate) struct Counters {
    /// Bumped by every request: striped, so that readers on different cores do not pull one
    /// cache line between them.
    pub(crate) read_requests: StripedCounter,
    pub(crate) write_requests: StripedCounter,
    pub(crate) busy_refusals: AtomicU64,
    blocked_writes: AtomicU64,
    blocked_nanos: AtomicU64,
    pub(crate) flushes: AtomicU64,
    pub(crate) flushed_bytes: AtomicU64,
    pub(crate) flush_delays: AtomicU64,
    pub(crate) in_memory_flushes: AtomicU64,
    compactions: AtomicU64,
    major_compactions: AtomicU64,
    compacted_files: AtomicU64,
    compaction_bytes_read: AtomicU64,
    compaction_bytes_written: AtomicU64,
    compaction_throttled_nanos: AtomicU64,
    pub(crate) skipped_replay_cells: AtomicU64,
    pub(crate) skipped_files: AtomicU64,
    rmw_batches: AtomicU64,
    rmw_batched_operations: AtomicU64,
}

impl Counters {
    pub(crate) fn blocked(&self, waited: Duration) {
        self.blocked_writes.fetch_add(1, Ordering::Relaxed);
        self.blocked_nanos
            .fetch_add(waited.as_nanos() as u64, Ordering::Relaxed);
    }

    pub(crate) fn record_rmw_batch(&self, operations: usize) {
        self.rmw_batches.fetch_add(1, Ordering::Relaxed);
        self.rmw_batched_operations
            .fetch_add(operations as u64, Ordering::Relaxed);
    }

    pub(crate) fn record_compaction(&self, outcome: &CompactionOutcome, major: bool) {
        if outcome.files_removed == 0 && !major {
            return;
        }
        self.compactions.fetch_add(1, Ordering::Relaxed);
        self.major_compactions
            .fetch_add(u64::from(major), Ordering::Relaxed);
        self.compacted_files
            .fetch_add(outcome.files_removed as u64, Ordering::Relaxed);
        self.compaction_bytes_read
            .fetch_add(outcome.bytes_read, Ordering::Relaxed);
        self.compaction_bytes_written
            .fetch_add(outcome.bytes_written, Ordering::Relaxed);
        self.compaction_throttled_nanos
            .fetch_add(outcome.throttled.as_nanos() as u64, Ordering::Relaxed);
    }

    pub(crate) fn read(&self) -> RegionStats {
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        RegionStats {
            read_requests: self.read_requests.sum(),
            write_requests: self.write_requests.sum(),
            busy_refusals: load(&self.busy_refusals),
            blocked_writes: load(&self.blocked_writes),
            blocked_time: Duration::from_nanos(load(&self.blocked_nanos)),
            flushes: load(&self.flushes),
            flushed_bytes: load(&self.flushed_bytes),
            flush_delays: load(&self.flush_delays),
            in_memory_flushes: load(&self.in_memory_flushes),
            compactions: load(&self.compactions),
            major_compactions: load(&self.major_compactions),
            compacted_files: load(&self.compacted_files),
            compaction_bytes_read: load(&self.compaction_bytes_read),
            compaction_bytes_written: load(&self.compaction_bytes_written),
            compaction_throttled: Duration::from_nanos(load(&self.compaction_throttled_nanos)),
            skipped_replay_cells: load(&self.skipped_replay_cells),
            skipped_files: load(&self.skipped_files),
            rmw_batches: load(&self.rmw_batches),
            rmw_batched_operations: load(&self.rmw_batched_operations),
        }
    }
}
