//! The server's background work: flusher threads (size, WAL and memory-pressure flushes, with
//! HBase's delay while a store has too many files) and the small and large compaction pools.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use keel_sync::RwLock;
use keel_wal::Wal;

use super::{EngineOptions, Hosted, Serving, State};
use crate::limits::{MemoryAccount, Throttle};
use crate::region::Region;

/// Counters of the background work.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) flush_failures: AtomicU64,
    pub(crate) pressure_flushes: AtomicU64,
    pub(crate) compaction_failures: AtomicU64,
    pub(crate) small_compactions: AtomicU64,
    pub(crate) large_compactions: AtomicU64,
    pub(crate) splits: AtomicU64,
    pub(crate) split_failures: AtomicU64,
}

struct Job {
    region: Weak<Region>,
    major: bool,
}

/// What every background thread shares.
pub(crate) struct Shared {
    /// The server's table operations (for splits and the janitor).
    state: Weak<State>,
    tables: Weak<RwLock<BTreeMap<String, Hosted>>>,
    wal: Weak<Wal>,
    options: EngineOptions,
    pub(crate) account: Arc<MemoryAccount>,
    pub(crate) throttle: Throttle,
    pub(crate) counters: Counters,
    small: Sender<Job>,
    large: Sender<Job>,
    splits: Sender<(String, u64)>,
    /// Regions with a split queued or running.
    splitting: keel_sync::Mutex<std::collections::HashSet<u64>>,
    stopped: AtomicBool,
}

impl Shared {
    /// Queues a compaction of `region` (one at a time per region) on the small or large pool by
    /// the bytes it would read (`hbase.regionserver.thread.compaction.throttle`).
    pub(crate) fn request_compaction(&self, region: &Arc<Region>, major: bool) {
        let policy = &self.options.compaction;
        if !major && !region.needs_compaction(policy) {
            return;
        }
        let size = region.compaction_input_size(policy, major);
        if !major && size == 0 {
            return;
        }
        let bit = if major { 2 } else { 1 };
        if region.compaction_queued.fetch_or(bit, Ordering::AcqRel) & bit != 0 {
            return;
        }
        let job = Job {
            region: Arc::downgrade(region),
            major,
        };
        let (pool, count) = if size > self.options.compaction_throttle_point {
            (&self.large, &self.counters.large_compactions)
        } else {
            (&self.small, &self.counters.small_compactions)
        };
        count.fetch_add(1, Ordering::Relaxed);
        if pool.send(job).is_err() {
            region.compaction_queued.fetch_and(!bit, Ordering::AcqRel);
        }
    }

    fn regions(&self) -> Option<Vec<Arc<Region>>> {
        let tables = self.tables.upgrade()?;
        let regions = tables
            .read()
            .values()
            .flat_map(super::Hosted::regions)
            .collect();
        Some(regions)
    }

    fn flush(&self, region: &Arc<Region>) -> bool {
        match region.flush() {
            Ok(_) => {
                self.request_compaction(region, false);
                self.consider_split(region);
                true
            }
            Err(_) => {
                self.counters.flush_failures.fetch_add(1, Ordering::Relaxed);
                false
            }
        }
    }

    /// Queues a split of `region` if HBase's `SteppingSplitPolicy` says so: its largest store
    /// above 2 × the flush size while its table has one region, above `max_region_size` once it
    /// has several; never while it still refers to a parent's files.
    fn consider_split(&self, region: &Arc<Region>) {
        if !self.options.auto_split || region.has_references() {
            return;
        }
        let Some(tables) = self.tables.upgrade() else {
            return;
        };
        let found = tables
            .read()
            .iter()
            .find_map(|(name, hosted)| match &hosted.serving {
                Serving::Open(live) => {
                    let regions = live.get();
                    regions
                        .all()
                        .any(|r| r.id() == region.id())
                        .then(|| (name.clone(), regions.regions.len()))
                }
                _ => None,
            });
        let Some((table, count)) = found else {
            return;
        };
        let threshold = if count == 1 {
            2 * self.options.limits.flush_size
        } else {
            self.options.max_region_size
        };
        if region.largest_store_bytes() <= threshold {
            return;
        }
        if self.splitting.lock().insert(region.id())
            && self.splits.send((table, region.id())).is_err()
        {
            self.splitting.lock().remove(&region.id());
        }
    }

    /// The splitter thread's work: one split at a time, the daughters' compactions queued after.
    fn split_worker(self: &Arc<Shared>, jobs: &Receiver<(String, u64)>) {
        while let Ok((table, id)) = jobs.recv() {
            if self.stopped.load(Ordering::Acquire) {
                return;
            }
            let Some(state) = self.state.upgrade() else {
                return;
            };
            match state.split_region(&table, id, None) {
                Ok(daughters) => {
                    self.counters.splits.fetch_add(1, Ordering::Relaxed);
                    if self.options.compact_split_regions
                        && let Some(regions) = self.regions()
                    {
                        for r in regions
                            .iter()
                            .filter(|r| daughters.iter().any(|d| d.id == r.id()))
                        {
                            self.request_compaction(r, true);
                        }
                    }
                }
                // A region that changed meanwhile (already split, no split point): nothing to do.
                Err(crate::error::RegionError::SplitRefused { .. }) => {}
                Err(e) => {
                    self.counters.split_failures.fetch_add(1, Ordering::Relaxed);
                    crate::trace::event!(WARN, table = %table, region = id, error = %e, "a background split failed; the region is as it was");
                    let _ = e;
                }
            }
            self.splitting.lock().remove(&id);
        }
    }

    /// One flusher pass over the `k`-th share of the regions.
    fn flusher_pass(&self, k: usize, threads: usize) -> Option<()> {
        let regions = self.regions()?;
        let wanted = self.wal.upgrade()?.regions_to_flush();
        let now = crate::region::now_ms();
        for region in regions.iter().skip(k).step_by(threads) {
            if self.stopped.load(Ordering::Acquire) {
                return Some(());
            }
            let named_by_wal = wanted.contains(&region.id());
            let due = named_by_wal
                || region.flush_requested()
                || region.memstore_size() >= region.limits().flush_size;
            if due {
                // HBase delays a flush while a store has too many files (up to
                // `blocking_wait`); a flush the WAL needs to let segments go is not delayed.
                if !named_by_wal && region.flush_should_wait() {
                    self.request_compaction(region, false);
                } else {
                    self.flush(region);
                }
            } else if region.flatten_requested() {
                region.flatten_memstores();
            } else if region.compaction_queued.load(Ordering::Acquire) & 1 == 0 {
                self.request_compaction(region, false);
            }
            if region.major_compaction_due(
                self.options.major_compaction_period,
                self.options.major_compaction_jitter,
                now,
            ) {
                self.request_compaction(region, true);
            }
        }
        if k == 0 {
            self.relieve_global_pressure(&regions);
        }
        Some(())
    }

    /// Above the low watermark, flushes one region at a time until below it, choosing as HBase's
    /// `flushOneForGlobalPressure` does: the largest memstore among regions without too many
    /// store files, unless the largest of all is more than twice as large (or there is no
    /// such region and writers are blocked).
    fn relieve_global_pressure(&self, regions: &[Arc<Region>]) {
        let mut tried = std::collections::HashSet::new();
        while self.account.above_low() && !self.stopped.load(Ordering::Acquire) {
            let candidates = || {
                regions
                    .iter()
                    .filter(|r| !tried.contains(&r.id()) && r.memstore_size() > 0)
            };
            let best_any = candidates().max_by_key(|r| r.memstore_size());
            let best_ok = candidates()
                .filter(|r| !r.too_many_store_files())
                .max_by_key(|r| r.memstore_size());
            let chosen = match (best_ok, best_any) {
                (_, None) => return,
                (Some(ok), Some(any)) if any.memstore_size() <= 2 * ok.memstore_size() => ok,
                // Every candidate is waiting for compaction: flushing one only adds a small
                // file to a store already over its count. Keel leaves them (their own limits
                // refuse writes) until writers actually block at the high watermark.
                (None, Some(_)) if self.account.used() < self.account.high() => return,
                (_, Some(any)) => any,
            };
            tried.insert(chosen.id());
            self.counters
                .pressure_flushes
                .fetch_add(1, Ordering::Relaxed);
            if !self.flush(chosen) {
                return;
            }
        }
    }

    fn compactor(&self, jobs: &Receiver<Job>) {
        loop {
            let job = match jobs.recv_timeout(self.options.flush_check_interval) {
                Ok(job) => job,
                Err(RecvTimeoutError::Timeout) => {
                    if self.stopped.load(Ordering::Acquire) {
                        return;
                    }
                    continue;
                }
                Err(RecvTimeoutError::Disconnected) => return,
            };
            if self.stopped.load(Ordering::Acquire) {
                return;
            }
            let Some(region) = job.region.upgrade() else {
                continue;
            };
            // The request stays marked queued until the compaction is over, so a periodic
            // check during it (the last major is recorded only at its end) does not queue the
            // same work again.
            let bit = if job.major { 2 } else { 1 };
            let referred = region.has_references();
            let result =
                region.compact_throttled(&self.options.compaction, job.major, &self.throttle);
            region.compaction_queued.fetch_and(!bit, Ordering::AcqRel);
            // The last reference to a parent's files may be gone: the janitor looks.
            if referred
                && !region.has_references()
                && let Some(state) = self.state.upgrade()
            {
                state.run_janitor();
            }
            match result {
                // Flushes may have added files meanwhile: look again.
                Ok(outcome) if outcome.files_removed > 0 => {
                    self.request_compaction(&region, false);
                }
                Ok(_) => {}
                // The region closed meanwhile (a split, a merge, a disable): not a failure.
                Err(crate::error::RegionError::CompactionCancelled(_)) => {}
                Err(_) => {
                    self.counters
                        .compaction_failures
                        .fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    }
}

/// The running background threads.
pub(crate) struct Housekeeping {
    pub(crate) shared: Arc<Shared>,
    handles: Vec<JoinHandle<()>>,
}

impl Housekeeping {
    pub(crate) fn start(
        state: Weak<State>,
        tables: Weak<RwLock<BTreeMap<String, Hosted>>>,
        wal: Weak<Wal>,
        options: EngineOptions,
        account: Arc<MemoryAccount>,
    ) -> std::io::Result<Housekeeping> {
        let (small, small_jobs) = crossbeam_channel::unbounded();
        let (large, large_jobs) = crossbeam_channel::unbounded();
        let (splits, split_jobs) = crossbeam_channel::unbounded();
        let shared = Arc::new(Shared {
            state,
            splits,
            splitting: keel_sync::Mutex::new(std::collections::HashSet::new()),
            tables,
            wal,
            throttle: Throttle::new(options.compaction_throughput),
            options,
            account,
            counters: Counters::default(),
            small,
            large,
            stopped: AtomicBool::new(false),
        });
        let mut housekeeping = Housekeeping {
            shared: Arc::clone(&shared),
            handles: Vec::new(),
        };
        let flushers = shared.options.flusher_threads.max(1);
        let pools = [
            ("small", shared.options.compaction_threads_small, small_jobs),
            ("large", shared.options.compaction_threads_large, large_jobs),
        ];
        let spawn = |name: String, body: Box<dyn FnOnce() + Send>| {
            std::thread::Builder::new().name(name).spawn(body)
        };
        let mut started = Vec::new();
        for k in 0..flushers {
            let s = Arc::downgrade(&shared);
            let interval = shared.options.flush_check_interval;
            started.push(spawn(
                format!("keel-region-flusher-{k}"),
                Box::new(move || {
                    loop {
                        std::thread::park_timeout(interval);
                        // A dropped server (without close) ends the thread here.
                        let Some(shared) = s.upgrade() else { return };
                        if shared.stopped.load(Ordering::Acquire)
                            || shared.flusher_pass(k, flushers).is_none()
                        {
                            return;
                        }
                    }
                }),
            ));
        }
        for (pool, threads, jobs) in pools {
            for i in 0..threads.max(1) {
                let s = Arc::downgrade(&shared);
                let jobs = jobs.clone();
                started.push(spawn(
                    format!("keel-region-compact-{pool}-{i}"),
                    Box::new(move || {
                        if let Some(shared) = s.upgrade() {
                            shared.compactor(&jobs);
                        }
                    }),
                ));
            }
        }
        {
            let s = Arc::downgrade(&shared);
            started.push(spawn(
                "keel-region-splitter".to_string(),
                Box::new(move || {
                    if let Some(shared) = s.upgrade() {
                        shared.split_worker(&split_jobs);
                    }
                }),
            ));
        }
        for handle in started {
            match handle {
                Ok(handle) => housekeeping.handles.push(handle),
                Err(e) => {
                    housekeeping.stop();
                    return Err(e);
                }
            }
        }
        let flusher_threads: Vec<std::thread::Thread> = housekeeping
            .handles
            .iter()
            .take(flushers)
            .map(|h| h.thread().clone())
            .collect();
        shared.account.set_wake(Box::new(move || {
            for thread in &flusher_threads {
                thread.unpark();
            }
        }));
        Ok(housekeeping)
    }

    /// Stops every thread and joins them; a compaction in progress is cancelled (its partial
    /// file is never committed, and the next open removes it).
    pub(crate) fn stop(&mut self) {
        self.shared.stopped.store(true, Ordering::Release);
        self.shared.throttle.cancel();
        // Wake the splitter (it sees `stopped` and ends).
        let _ = self.shared.splits.send((String::new(), 0));
        // Wake every compactor now rather than at its next timeout: an empty job each.
        let options = &self.shared.options;
        for (pool, threads) in [
            (&self.shared.small, options.compaction_threads_small),
            (&self.shared.large, options.compaction_threads_large),
        ] {
            for _ in 0..threads.max(1) {
                let _ = pool.send(Job {
                    region: Weak::new(),
                    major: false,
                });
            }
        }
        for handle in &self.handles {
            handle.thread().unpark();
        }
        for handle in self.handles.drain(..) {
            let _ = handle.join();
        }
    }
}

impl Drop for Housekeeping {
    fn drop(&mut self) {
        self.stop();
    }
}
