//! WAL counters and latency histograms, and the per-append stage timings handed to callers.

use std::time::Duration;

use hdrhistogram::Histogram;
use keel_sync::Mutex;
use keel_sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Where one append's time went (returned by [`crate::Wal::append`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AppendTimings {
    /// From the call to its return.
    pub total: Duration,
    /// The write of the batch that carried the entry.
    pub write: Duration,
    /// The sync that covered it (zero unless the append waited for one).
    pub sync: Duration,
}

/// A snapshot of the WAL's counters and histograms.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WalStats {
    /// Entries appended (not counting `SkipWal`).
    pub appends: u64,
    /// Payload bytes appended.
    pub bytes: u64,
    /// Writes issued by the writer (each carries one batch).
    pub writes: u64,
    /// Syncs issued.
    pub syncs: u64,
    /// Mean entries made durable per sync.
    pub entries_per_sync_mean: f64,
    /// Entries per sync at the 50th and 99th percentile.
    pub entries_per_sync_p50: u64,
    /// See `entries_per_sync_p50`.
    pub entries_per_sync_p99: u64,
    /// Sync latency percentiles.
    pub sync_latency_p50: Duration,
    /// See `sync_latency_p50`.
    pub sync_latency_p99: Duration,
    /// Acknowledgement latency (SyncWal and FsyncWal appends) percentiles.
    pub ack_latency_p50: Duration,
    /// See `ack_latency_p50`.
    pub ack_latency_p99: Duration,
    /// Segment rolls.
    pub rolls: u64,
    /// Segments removed or archived.
    pub truncated_segments: u64,
}

#[derive(Debug)]
pub(crate) struct Metrics {
    appends: AtomicU64,
    bytes: AtomicU64,
    writes: AtomicU64,
    syncs: AtomicU64,
    synced_entries: AtomicU64,
    rolls: AtomicU64,
    truncated: AtomicU64,
    histograms: Mutex<Histograms>,
}

#[derive(Debug)]
struct Histograms {
    entries_per_sync: Histogram<u64>,
    sync_ns: Histogram<u64>,
    ack_ns: Histogram<u64>,
}

fn histogram() -> Histogram<u64> {
    // Three significant digits, auto-resizing: cannot fail for these settings.
    Histogram::new(3).unwrap_or_else(|e| unreachable!("hdrhistogram rejected sigfig 3: {e}"))
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics {
            appends: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            writes: AtomicU64::new(0),
            syncs: AtomicU64::new(0),
            synced_entries: AtomicU64::new(0),
            rolls: AtomicU64::new(0),
            truncated: AtomicU64::new(0),
            histograms: Mutex::new(Histograms {
                entries_per_sync: histogram(),
                sync_ns: histogram(),
                ack_ns: histogram(),
            }),
        }
    }
}

impl Metrics {
    pub(crate) fn appended(&self, bytes: usize) {
        self.appends.fetch_add(1, Relaxed);
        self.bytes.fetch_add(bytes as u64, Relaxed);
    }

    pub(crate) fn wrote(&self) {
        self.writes.fetch_add(1, Relaxed);
    }

    pub(crate) fn synced(&self, entries: u64, latency: Duration) {
        self.syncs.fetch_add(1, Relaxed);
        self.synced_entries.fetch_add(entries, Relaxed);
        let mut h = self.histograms.lock();
        let _ = h.entries_per_sync.record(entries);
        let _ = h.sync_ns.record(latency.as_nanos() as u64);
    }

    pub(crate) fn acknowledged(&self, latency: Duration) {
        let _ = self
            .histograms
            .lock()
            .ack_ns
            .record(latency.as_nanos() as u64);
    }

    pub(crate) fn rolled(&self) {
        self.rolls.fetch_add(1, Relaxed);
    }

    pub(crate) fn truncated(&self) {
        self.truncated.fetch_add(1, Relaxed);
    }

    pub(crate) fn snapshot(&self) -> WalStats {
        let h = self.histograms.lock();
        let syncs = self.syncs.load(Relaxed);
        let ns = |v: u64| Duration::from_nanos(v);
        WalStats {
            appends: self.appends.load(Relaxed),
            bytes: self.bytes.load(Relaxed),
            writes: self.writes.load(Relaxed),
            syncs,
            entries_per_sync_mean: self.synced_entries.load(Relaxed) as f64 / syncs.max(1) as f64,
            entries_per_sync_p50: h.entries_per_sync.value_at_quantile(0.5),
            entries_per_sync_p99: h.entries_per_sync.value_at_quantile(0.99),
            sync_latency_p50: ns(h.sync_ns.value_at_quantile(0.5)),
            sync_latency_p99: ns(h.sync_ns.value_at_quantile(0.99)),
            ack_latency_p50: ns(h.ack_ns.value_at_quantile(0.5)),
            ack_latency_p99: ns(h.ack_ns.value_at_quantile(0.99)),
            rolls: self.rolls.load(Relaxed),
            truncated_segments: self.truncated.load(Relaxed),
        }
    }
}
