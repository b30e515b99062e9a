//! Backpressure and memory limits: a region's own limits ([`RegionLimits`]), memstore memory
//! across the regions of a server (`MemoryAccount`, high and low watermarks), and the
//! compaction throughput throttle ([`CompactionThroughput`], HBase's pressure-aware controller).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use keel_sync::{Condvar, Mutex};

/// A region's own limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegionLimits {
    /// `hbase.hregion.memstore.flush.size`: a region whose memstores pass it is due a flush
    /// (128 MiB).
    pub flush_size: u64,
    /// `hbase.hregion.memstore.block.multiplier`: above `flush_size` × this (4) writes are
    /// refused with `RegionTooBusy` and a flush is requested.
    pub block_multiplier: u64,
    /// `hbase.hstore.blockingStoreFiles`: a family with this many store files (16) or more has
    /// its region's flushes delayed while compaction catches up.
    pub blocking_store_files: usize,
    /// `hbase.hstore.blockingWaitTime`: how long at most a flush is delayed so (90 s).
    pub blocking_wait: Duration,
    /// `hbase.hregion.preclose.flush.size`: a region closing (its table being disabled) with
    /// more than this in its memstores first flushes while it still takes writes, so the flush
    /// under the closed state is small (5 MiB).
    pub preclose_flush_size: u64,
    /// Bytes per second that pre-flush may write (Keel's; 50 MiB/s, the compaction throttle's
    /// lower bound): a table operation is admin work and must not take the CPU and disk that
    /// reads and writes of other tables need. 0: no limit.
    pub preclose_flush_bytes_per_sec: u64,
    /// `hbase.busy.wait.duration`: how long a write that finds the region above its blocking
    /// size waits for the flush it requested before it is refused with `RegionTooBusy` (60 s).
    /// HBase's region refuses at once and its client retries for about this long, so an HBase
    /// Thrift client sees a slow write, not an error; Keel has no client in between, so the
    /// region waits. Only a region whose server runs a flusher waits: a region opened on its
    /// own is flushed by its owner, and refuses at once. Zero: refuse at once.
    pub busy_wait: Duration,
    /// `hbase.hregion.compacting.memstore.type`: whether a store's memstore flushes in memory
    /// (see [`InMemoryCompaction`]).
    pub in_memory_compaction: InMemoryCompaction,
    /// `hbase.hregion.compacting.pipeline.segments.limit`: under
    /// [`InMemoryCompaction::Basic`], how many flat segments a store's memstore keeps before an
    /// in-memory flush merges them all into one (2; keel-memstore's
    /// `MemStoreOptions::pipeline_segments_limit`). More segments: cheaper in-memory flushes,
    /// reads that search more arrays. Below 1 counts as 1 (every in-memory flush merges).
    pub pipeline_segments_limit: usize,
    /// Keel's `keel.hregion.compacting.memstore.copy` (true): under
    /// [`InMemoryCompaction::Basic`], an in-memory flush copies the cells it flattens into
    /// fresh chunks in key order, so a scan reads neighbouring rows from neighbouring memory
    /// (keel-memstore's `MemStoreOptions::copy_on_flatten`; HBase's BASIC does not copy).
    /// Off: the cells stay where the writes put them, and no second copy is held while a
    /// flattening runs.
    pub flatten_copies: bool,
}

/// HBase's in-memory compaction policies that Keel has. The default is HBase's, `NONE`
/// (HBase turned `BASIC` off by default before 2.0 shipped, HBASE-20539); Keel's benchmarks
/// measure `BASIC` faster on every YCSB read and scan row (docs/memstore.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum InMemoryCompaction {
    /// No in-memory flush: the memstore's cells stay in its skip list until the flush to disk
    /// (HBase `NONE`).
    #[default]
    None,
    /// HBase's `BASIC`: once a store's active segment holds
    /// [`IN_MEMORY_FLUSHES_PER_FLUSH`]th of the region's flush size (shared between its
    /// families), the flusher freezes it and merges every frozen cell into one flat sorted
    /// array, keeping every version (keel-memstore's `MemStore::flatten`). Reads then search
    /// and walk an array instead of a skip list.
    Basic,
}

impl std::str::FromStr for InMemoryCompaction {
    type Err = String;

    /// HBase's names, in any case. `EAGER` and `ADAPTIVE` (which drop versions in memory)
    /// are refused by name: Keel does not have them.
    fn from_str(s: &str) -> Result<InMemoryCompaction, String> {
        match s.to_ascii_uppercase().as_str() {
            "NONE" => Ok(InMemoryCompaction::None),
            "BASIC" => Ok(InMemoryCompaction::Basic),
            "EAGER" | "ADAPTIVE" => Err(format!(
                "in-memory compaction {s} is not in Keel: NONE or BASIC"
            )),
            _ => Err(format!("unknown in-memory compaction {s}: NONE or BASIC")),
        }
    }
}

impl std::fmt::Display for InMemoryCompaction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            InMemoryCompaction::None => "NONE",
            InMemoryCompaction::Basic => "BASIC",
        })
    }
}

/// In-memory flushes per flush to disk under [`InMemoryCompaction::Basic`]. Each one copies
/// every frozen key into the new array, so a flush's worth of keys is copied about half this
/// many times; HBase's 2 MiB threshold would copy them 32 times at its 128 MiB flush size.
pub const IN_MEMORY_FLUSHES_PER_FLUSH: u64 = 8;

impl Default for RegionLimits {
    fn default() -> RegionLimits {
        RegionLimits {
            flush_size: 128 << 20,
            block_multiplier: 4,
            blocking_store_files: 16,
            blocking_wait: Duration::from_secs(90),
            preclose_flush_size: 5 << 20,
            preclose_flush_bytes_per_sec: 50 << 20,
            busy_wait: Duration::from_secs(60),
            in_memory_compaction: InMemoryCompaction::default(),
            pipeline_segments_limit: keel_memstore::DEFAULT_PIPELINE_SEGMENTS_LIMIT,
            flatten_copies: true,
        }
    }
}

impl RegionLimits {
    /// The memstore size above which writes are refused.
    pub fn blocking_memstore_size(&self) -> u64 {
        self.flush_size.saturating_mul(self.block_multiplier.max(1))
    }

    /// The active segment size at which a store of a region with `families` families flushes
    /// in memory (`None`: never).
    pub fn in_memory_flush_size(&self, families: usize) -> Option<u64> {
        match self.in_memory_compaction {
            InMemoryCompaction::None => None,
            InMemoryCompaction::Basic => Some(
                (self.flush_size / IN_MEMORY_FLUSHES_PER_FLUSH / families.max(1) as u64).max(1),
            ),
        }
    }
}

/// The bytes a cell is charged in memstore accounting: its data and the memstore's per-cell
/// bookkeeping estimate.
pub(crate) fn charge(cells: &[keel_cell::Cell]) -> u64 {
    cells
        .iter()
        .map(|c| {
            let k = c.key();
            (k.row().len() + k.family().len() + k.qualifier().len() + c.value().len()) as u64
                + keel_memstore::CELL_OVERHEAD_BYTES
        })
        .sum()
}

/// Memstore memory across every region of a server (HBase's global memstore limits): above
/// `high` writers block until flushes bring it back under; above `low` the flusher flushes the
/// largest regions first. Regions charge what they insert and release it when a flush clears
/// the snapshot.
pub(crate) struct MemoryAccount {
    used: AtomicU64,
    high: u64,
    low: u64,
    timeout: Duration,
    lock: Mutex<()>,
    released: Condvar,
    blocked_writes: AtomicU64,
    blocked_nanos: AtomicU64,
    wake: Mutex<Option<Box<dyn Fn() + Send + Sync>>>,
}

impl std::fmt::Debug for MemoryAccount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryAccount")
            .field("used", &self.used())
            .field("high", &self.high)
            .field("low", &self.low)
            .finish_non_exhaustive()
    }
}

impl MemoryAccount {
    /// An account that never blocks (a region on its own).
    pub(crate) fn unlimited() -> Arc<MemoryAccount> {
        MemoryAccount::new(u64::MAX, u64::MAX, Duration::MAX)
    }

    pub(crate) fn new(high: u64, low: u64, timeout: Duration) -> Arc<MemoryAccount> {
        Arc::new(MemoryAccount {
            used: AtomicU64::new(0),
            high,
            low: low.min(high),
            timeout,
            lock: Mutex::new(()),
            released: Condvar::new(),
            blocked_writes: AtomicU64::new(0),
            blocked_nanos: AtomicU64::new(0),
            wake: Mutex::new(None),
        })
    }

    /// Called when memory is short: wakes whoever flushes.
    pub(crate) fn set_wake(&self, wake: Box<dyn Fn() + Send + Sync>) {
        *self.wake.lock() = Some(wake);
    }

    /// Whether something flushes when asked ([`MemoryAccount::set_wake`] was called).
    pub(crate) fn has_flusher(&self) -> bool {
        self.wake.lock().is_some()
    }

    /// Waits until some flush releases memory or `timeout` passes.
    pub(crate) fn wait_for_release(&self, timeout: Duration) {
        let mut guard = self.lock.lock();
        self.released
            .wait_until(&mut guard, Instant::now() + timeout);
    }

    pub(crate) fn wake(&self) {
        if let Some(wake) = &*self.wake.lock() {
            wake();
        }
    }

    pub(crate) fn used(&self) -> u64 {
        self.used.load(Ordering::Relaxed)
    }

    pub(crate) fn high(&self) -> u64 {
        self.high
    }

    pub(crate) fn above_low(&self) -> bool {
        self.used() > self.low
    }

    pub(crate) fn charge(&self, bytes: u64) {
        let after = self.used.fetch_add(bytes, Ordering::Relaxed) + bytes;
        if after > self.low && self.low != u64::MAX {
            self.wake();
        }
    }

    pub(crate) fn release(&self, bytes: u64) {
        let before = self
            .used
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |used| {
                Some(used.saturating_sub(bytes))
            })
            .unwrap_or_else(|used| used);
        debug_assert!(
            before >= bytes,
            "released {bytes} of {before} bytes charged"
        );
        // Every release (one per flush, not per write) wakes the writers waiting for memory or
        // for their region's flush. Under the lock, so a writer between its check and its wait
        // cannot miss it.
        let _guard = self.lock.lock();
        self.released.notify_all();
    }

    /// Returns at once below the high watermark; otherwise wakes the flusher and waits until
    /// flushes bring memory under it. `Err(waited)` if that took longer than the timeout.
    pub(crate) fn wait_below_high(&self) -> Result<Option<Duration>, Duration> {
        if self.used() < self.high {
            return Ok(None);
        }
        let started = Instant::now();
        self.blocked_writes.fetch_add(1, Ordering::Relaxed);
        let outcome = loop {
            self.wake();
            let mut guard = self.lock.lock();
            if self.used() < self.high {
                break Ok(Some(started.elapsed()));
            }
            // A bounded wait: the flusher may free memory without crossing the mark exactly.
            self.released
                .wait_until(&mut guard, Instant::now() + Duration::from_millis(50));
            drop(guard);
            if self.used() < self.high {
                break Ok(Some(started.elapsed()));
            }
            if started.elapsed() >= self.timeout {
                break Err(started.elapsed());
            }
        };
        let waited = match outcome {
            Ok(Some(d)) | Err(d) => d,
            Ok(None) => Duration::ZERO,
        };
        self.blocked_nanos
            .fetch_add(waited.as_nanos() as u64, Ordering::Relaxed);
        outcome
    }

    /// Writes that had to wait for memory, and the time they waited.
    pub(crate) fn blocked(&self) -> (u64, Duration) {
        (
            self.blocked_writes.load(Ordering::Relaxed),
            Duration::from_nanos(self.blocked_nanos.load(Ordering::Relaxed)),
        )
    }
}

/// HBase's `PressureAwareCompactionThroughputController`: compactions together write at most
/// `lower + (upper − lower) × pressure` bytes per second, shared among those running, where
/// pressure is how close the busiest store is to `blockingStoreFiles` (0 at the compaction
/// minimum, 1 at the blocking count); above 1 there is no limit, so compaction can always catch
/// up with a writer that is about to be blocked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompactionThroughput {
    /// `hbase.hstore.compaction.throughput.lower.bound`: 50 MiB/s.
    pub lower_bytes_per_sec: u64,
    /// `hbase.hstore.compaction.throughput.higher.bound`: 100 MiB/s.
    pub upper_bytes_per_sec: u64,
}

impl Default for CompactionThroughput {
    fn default() -> CompactionThroughput {
        CompactionThroughput {
            lower_bytes_per_sec: 50 << 20,
            upper_bytes_per_sec: 100 << 20,
        }
    }
}

impl CompactionThroughput {
    /// No limit at all (what `Region::compact` uses).
    pub const UNLIMITED: CompactionThroughput = CompactionThroughput {
        lower_bytes_per_sec: u64::MAX,
        upper_bytes_per_sec: u64::MAX,
    };

    /// The bytes per second allowed in total at `pressure`, `None` for no limit.
    pub fn limit(&self, pressure: f64) -> Option<u64> {
        if pressure > 1.0 || self.lower_bytes_per_sec == u64::MAX {
            return None;
        }
        let pressure = pressure.max(0.0);
        let span = self
            .upper_bytes_per_sec
            .saturating_sub(self.lower_bytes_per_sec) as f64;
        Some(self.lower_bytes_per_sec + (span * pressure) as u64)
    }
}

/// The compactions running under one [`CompactionThroughput`], so they share its limit.
#[derive(Debug, Default)]
pub(crate) struct Throttle {
    pub(crate) settings: Mutex<Option<CompactionThroughput>>,
    active: AtomicUsize,
    slept_nanos: AtomicU64,
    cancelled: std::sync::atomic::AtomicBool,
}

/// The throttle was cancelled (the server is closing): the compaction stops uncommitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cancelled;

impl Throttle {
    pub(crate) fn new(settings: CompactionThroughput) -> Throttle {
        Throttle {
            settings: Mutex::new(Some(settings)),
            ..Throttle::default()
        }
    }

    pub(crate) fn start(&self) -> ThrottledRun<'_> {
        self.active.fetch_add(1, Ordering::Relaxed);
        ThrottledRun {
            throttle: self,
            started: Instant::now(),
            written: 0,
            checked: 0,
        }
    }

    pub(crate) fn slept(&self) -> Duration {
        Duration::from_nanos(self.slept_nanos.load(Ordering::Relaxed))
    }

    /// Makes every run's next check fail with [`Cancelled`].
    pub(crate) fn cancel(&self) {
        self.cancelled.store(true, Ordering::Release);
    }
}

/// One compaction's pacing: after every 256 KiB written it sleeps as long as it is ahead of its
/// share of the limit.
pub(crate) struct ThrottledRun<'a> {
    throttle: &'a Throttle,
    started: Instant,
    written: u64,
    checked: u64,
}

const CHECK_EVERY: u64 = 256 << 10;

impl ThrottledRun<'_> {
    /// Notes `bytes` written; `pressure` is read only when a check is due. Returns the time
    /// slept, or `Cancelled`.
    pub(crate) fn wrote(
        &mut self,
        bytes: u64,
        pressure: impl FnOnce() -> f64,
    ) -> Result<Duration, Cancelled> {
        self.written += bytes;
        if self.written - self.checked < CHECK_EVERY {
            return Ok(Duration::ZERO);
        }
        self.checked = self.written;
        if self.throttle.cancelled.load(Ordering::Acquire) {
            return Err(Cancelled);
        }
        let Some(settings) = *self.throttle.settings.lock() else {
            return Ok(Duration::ZERO);
        };
        let Some(limit) = settings.limit(pressure()) else {
            return Ok(Duration::ZERO);
        };
        let share = (limit / self.throttle.active.load(Ordering::Relaxed).max(1) as u64).max(1);
        let due = Duration::from_secs_f64(self.written as f64 / share as f64);
        let elapsed = self.started.elapsed();
        if due <= elapsed {
            return Ok(Duration::ZERO);
        }
        // Sleep in slices so a cancel is noticed within 50 ms.
        let sleep = due - elapsed;
        let until = Instant::now() + sleep;
        while let Some(left) = until.checked_duration_since(Instant::now()) {
            if self.throttle.cancelled.load(Ordering::Acquire) {
                return Err(Cancelled);
            }
            std::thread::sleep(left.min(Duration::from_millis(50)));
        }
        self.throttle
            .slept_nanos
            .fetch_add(sleep.as_nanos() as u64, Ordering::Relaxed);
        Ok(sleep)
    }
}

impl Drop for ThrottledRun<'_> {
    fn drop(&mut self) {
        self.throttle.active.fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limit_scales_with_pressure_and_lifts_above_one() {
        let t = CompactionThroughput::default();
        assert_eq!(t.limit(0.0), Some(50 << 20));
        assert_eq!(t.limit(1.0), Some(100 << 20));
        assert_eq!(t.limit(0.5), Some(75 << 20));
        assert_eq!(t.limit(-3.0), Some(50 << 20));
        assert_eq!(t.limit(1.01), None);
        assert_eq!(CompactionThroughput::UNLIMITED.limit(0.0), None);
    }

    #[test]
    fn a_throttled_run_keeps_to_its_share() {
        let throttle = Throttle::new(CompactionThroughput {
            lower_bytes_per_sec: 8 << 20,
            upper_bytes_per_sec: 8 << 20,
        });
        let started = Instant::now();
        let mut run = throttle.start();
        for _ in 0..16 {
            run.wrote(256 << 10, || 0.0).expect("not cancelled");
        }
        // 4 MiB at 8 MiB/s: at least half a second.
        assert!(
            started.elapsed() >= Duration::from_millis(480),
            "{:?}",
            started.elapsed()
        );
        assert!(throttle.slept() > Duration::ZERO);
        let started = Instant::now();
        let mut free = throttle.start();
        drop(run);
        for _ in 0..16 {
            free.wrote(256 << 10, || 2.0).expect("not cancelled");
        }
        assert!(started.elapsed() < Duration::from_millis(400));
        throttle.cancel();
        let mut cancelled = throttle.start();
        assert_eq!(cancelled.wrote(1 << 20, || 0.0), Err(Cancelled));
    }

    #[test]
    fn writers_block_above_high_until_release() {
        let account = MemoryAccount::new(1000, 500, Duration::from_secs(10));
        account.charge(1200);
        let woken = Arc::new(AtomicU64::new(0));
        let w = Arc::clone(&woken);
        account.set_wake(Box::new(move || {
            w.fetch_add(1, Ordering::Relaxed);
        }));
        std::thread::scope(|s| {
            let waiter = s.spawn(|| account.wait_below_high());
            std::thread::sleep(Duration::from_millis(100));
            assert!(!waiter.is_finished());
            account.release(600);
            let waited = waiter.join().expect("joins").expect("below high");
            assert!(waited.expect("blocked") >= Duration::from_millis(90));
        });
        assert!(woken.load(Ordering::Relaxed) >= 1);
        assert_eq!(account.blocked().0, 1);
        assert_eq!(account.used(), 600);
        assert!(account.above_low());
        let short = MemoryAccount::new(10, 5, Duration::from_millis(120));
        short.charge(20);
        assert!(short.wait_below_high().is_err());
    }
}
