//! The executor: admission (size and byte limits), routing a call to its pool, the handler
//! threads and their run loop, runtime limit changes, metrics and shutdown.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Instant;

use keel_sync::atomic::{AtomicBool, AtomicU64, Ordering};
use keel_sync::thread::{JoinHandle, spawn_named};
use keel_sync::{Arc, Mutex};

use crate::call::{Call, Failure, RunInfo};
use crate::error::{ConfigError, RejectReason, Rejected};
use crate::layout::{Layout, layout};
use crate::metrics::RpcMetrics;
use crate::options::{ExecutorKind, QueueType, RpcOptions, ShutdownMode};
use crate::pool::{Pool, Work};
use crate::queue::QueueConfig;

struct Shared {
    kind: ExecutorKind,
    pools: Vec<Pool>,
    /// Pool index per [`crate::CallClass`].
    route: [usize; 4],
    shutting_down: AtomicBool,
    queued_bytes: AtomicU64,
    max_queued_bytes: AtomicU64,
    max_call_size: AtomicU64,
    rejected_too_many_bytes: AtomicU64,
    rejected_too_large: AtomicU64,
    rejected_shutting_down: AtomicU64,
}

/// Schedules calls onto handler threads. See the crate documentation for the executors.
pub struct Executor {
    shared: Arc<Shared>,
    layout: Layout,
    handles: Mutex<Vec<JoinHandle<()>>>,
}

impl std::fmt::Debug for Executor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Executor")
            .field("kind", &self.shared.kind)
            .field("layout", &self.layout)
            .finish_non_exhaustive()
    }
}

impl Executor {
    /// Validates `options`, lays out the pools and starts every handler thread.
    pub fn new(options: RpcOptions) -> Result<Executor, ConfigError> {
        let kind = options.executor_kind();
        validate(&options, kind)?;
        let layout = layout(&options, kind);
        let pools = layout
            .pools
            .iter()
            .map(|p| {
                // The priority pool is FIFO with a fast path, as HBase's meta handlers are.
                let queue_type = if p.name == "priority" {
                    QueueType::Fifo
                } else {
                    options.queue_type
                };
                Pool::new(p, QueueConfig::from_options(&options, queue_type))
            })
            .collect();
        let shared = Arc::new(Shared {
            kind,
            pools,
            route: layout.route,
            shutting_down: AtomicBool::new(false),
            queued_bytes: AtomicU64::new(0),
            max_queued_bytes: AtomicU64::new(options.max_queued_bytes),
            max_call_size: AtomicU64::new(options.max_call_size),
            rejected_too_many_bytes: AtomicU64::new(0),
            rejected_too_large: AtomicU64::new(0),
            rejected_shutting_down: AtomicU64::new(0),
        });
        let executor = Executor {
            shared,
            layout,
            handles: Mutex::new(Vec::new()),
        };
        for (index, pool) in executor.shared.pools.iter().enumerate() {
            for handler in 0..pool.handlers {
                let name = format!("{}-{}-{handler}", options.thread_name_prefix, pool.name);
                let shared = Arc::clone(&executor.shared);
                match spawn_named(&name, move || shared.serve(index, handler)) {
                    Ok(handle) => executor.handles.lock().push(handle),
                    Err(e) => {
                        executor.shutdown(ShutdownMode::Drain);
                        return Err(ConfigError::Spawn {
                            name,
                            message: e.to_string(),
                        });
                    }
                }
            }
        }
        Ok(executor)
    }

    /// Accepts `call` (handed to an idle handler or queued) or gives it back with the reason.
    pub fn dispatch(&self, call: Call) -> Result<(), Rejected> {
        self.shared.dispatch(call)
    }

    /// The executor's kind.
    pub fn kind(&self) -> ExecutorKind {
        self.shared.kind
    }

    /// The pools, queues and handlers this executor runs.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Sets every pool's per-queue soft limit (`hbase.ipc.server.max.callqueue.length`, changed
    /// online); calls already queued stay. It may not exceed a queue's fixed capacity.
    pub fn set_max_queue_length(&self, length: usize) -> Result<(), ConfigError> {
        for pool in &self.shared.pools {
            if length > pool.hard_limit {
                return Err(ConfigError::AboveHardLimit {
                    pool: pool.name,
                    requested: length,
                    capacity: pool.hard_limit,
                });
            }
        }
        for pool in &self.shared.pools {
            pool.queue_limit.store(length, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Sets the byte limit of queued and running calls; lowering it below what is queued now
    /// refuses new calls until enough finish.
    pub fn set_max_queued_bytes(&self, bytes: u64) {
        self.shared.max_queued_bytes.store(bytes, Ordering::Relaxed);
    }

    /// Sets the single-call size limit.
    pub fn set_max_call_size(&self, bytes: u64) {
        self.shared.max_call_size.store(bytes, Ordering::Relaxed);
    }

    /// A snapshot of every counter, gauge and histogram.
    pub fn metrics(&self) -> RpcMetrics {
        let s = &self.shared;
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        RpcMetrics {
            executor: s.kind,
            queued_bytes: load(&s.queued_bytes),
            rejected_too_many_bytes: load(&s.rejected_too_many_bytes),
            rejected_too_large: load(&s.rejected_too_large),
            rejected_shutting_down: load(&s.rejected_shutting_down),
            pools: s
                .pools
                .iter()
                .map(|p| p.counters.snapshot(p.name, p.shape()))
                .collect(),
        }
    }

    /// Stops accepting calls, runs or fails the queued ones as `mode` says, and joins every
    /// handler. Idempotent; must not be called from a handler thread (it would join itself).
    pub fn shutdown(&self, mode: ShutdownMode) {
        let shared = &self.shared;
        shared.shutting_down.store(true, Ordering::Release);
        for pool in &shared.pools {
            for call in pool.stop(mode == ShutdownMode::FailQueued) {
                pool.counters
                    .failed_at_shutdown
                    .fetch_add(1, Ordering::Relaxed);
                shared.answer(call, Failure::ShuttingDown);
            }
        }
        let handles = std::mem::take(&mut *self.handles.lock());
        for handle in handles {
            // A handler never panics (calls are caught); a join error has nothing left to undo.
            let _ = handle.join();
        }
    }
}

impl Drop for Executor {
    fn drop(&mut self) {
        self.shutdown(ShutdownMode::Drain);
    }
}

fn validate(options: &RpcOptions, kind: ExecutorKind) -> Result<(), ConfigError> {
    let min_handlers = if kind.is_rw() { 2 } else { 1 };
    if options.handler_count < min_handlers {
        return Err(ConfigError::TooFewHandlers);
    }
    for (key, value) in [
        ("hbase.ipc.server.callqueue.read.ratio", options.read_ratio),
        ("hbase.ipc.server.callqueue.scan.ratio", options.scan_ratio),
        (
            "hbase.ipc.server.callqueue.codel.lifo.threshold",
            options.codel.lifo_threshold,
        ),
    ] {
        if !(0.0..=1.0).contains(&value) {
            return Err(ConfigError::BadRatio { key, value });
        }
    }
    if options.queue_type == QueueType::Deadline && kind.is_fast_path() {
        return Err(ConfigError::DeadlineWithFastPath(kind.name()));
    }
    Ok(())
}

impl Shared {
    fn dispatch(&self, call: Call) -> Result<(), Rejected> {
        let size = call.size;
        let max_size = self.max_call_size.load(Ordering::Relaxed);
        if size > max_size {
            self.rejected_too_large.fetch_add(1, Ordering::Relaxed);
            let reason = RejectReason::TooLarge {
                size,
                limit: max_size,
            };
            return Err(Rejected { reason, call });
        }
        let limit = self.max_queued_bytes.load(Ordering::Relaxed);
        let before = self.queued_bytes.fetch_add(size, Ordering::AcqRel);
        if before.saturating_add(size) > limit {
            self.queued_bytes.fetch_sub(size, Ordering::AcqRel);
            self.rejected_too_many_bytes.fetch_add(1, Ordering::Relaxed);
            let reason = RejectReason::TooManyBytes {
                queued_bytes: before,
                size,
                limit,
            };
            return Err(Rejected { reason, call });
        }
        let pool = &self.pools[self.route[call.class.index()]];
        pool.offer(call, &self.shutting_down)
            .inspect_err(|rejected| {
                self.queued_bytes.fetch_sub(size, Ordering::AcqRel);
                if rejected.reason == RejectReason::ShuttingDown {
                    self.rejected_shutting_down.fetch_add(1, Ordering::Relaxed);
                }
            })
    }

    /// A handler thread's life: take a call, run it, repeat until shutdown empties its queue.
    fn serve(&self, pool_index: usize, handler: usize) {
        let pool = &self.pools[pool_index];
        let mut dropped = Vec::new();
        loop {
            let work = pool.next(handler, &self.shutting_down, &mut dropped);
            for call in dropped.drain(..) {
                pool.counters.dropped.fetch_add(1, Ordering::Relaxed);
                let waited = call.received.elapsed();
                self.answer(call, Failure::Dropped { waited });
            }
            match work {
                Work::Run(call, handed_off) => self.run(pool, handler, call, handed_off),
                Work::Retry => {}
                Work::Exit => return,
            }
        }
    }

    fn run(&self, pool: &Pool, handler: usize, mut call: Call, handed_off: bool) {
        let start = Instant::now();
        let queue_time = start.saturating_duration_since(call.received);
        if call.deadline.is_some_and(|deadline| start > deadline) {
            pool.counters.timed_out.fetch_add(1, Ordering::Relaxed);
            self.answer(call, Failure::TimedOut { waited: queue_time });
            return;
        }
        let info = RunInfo {
            class: call.class,
            queue_time,
            handed_off,
            handler,
        };
        pool.counters.active.fetch_add(1, Ordering::Relaxed);
        let outcome = catch_unwind(AssertUnwindSafe(|| call.task.run(&info)));
        let processing = start.elapsed();
        pool.counters.completed.fetch_add(1, Ordering::Relaxed);
        pool.counters
            .record(handler, queue_time, processing, handed_off);
        // Last, with Release: whoever sees the handler inactive sees the call counted.
        pool.counters.active.fetch_sub(1, Ordering::Release);
        match outcome {
            Ok(()) => self.release(call.size),
            Err(payload) => {
                pool.counters.panicked.fetch_add(1, Ordering::Relaxed);
                self.answer(call, Failure::Panicked(panic_message(payload.as_ref())));
            }
        }
    }

    /// Frees a call's bytes and tells its task it failed (a panicking `fail` is contained).
    fn answer(&self, mut call: Call, failure: Failure) {
        self.release(call.size);
        let _ = catch_unwind(AssertUnwindSafe(|| call.task.fail(failure)));
    }

    fn release(&self, size: u64) {
        self.queued_bytes.fetch_sub(size, Ordering::AcqRel);
    }
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic with a non-string payload".to_string()
    }
}
