//! Counters and latency histograms per handler pool, named as HBase's `MetricsHBaseServerSource`
//! names them. Histograms are sharded by handler so that recording never contends.

use std::time::Duration;

use hdrhistogram::Histogram;
use keel_sync::Mutex;
use keel_sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// Histogram shards per pool; handler i records into shard i mod SHARDS.
const SHARDS: usize = 8;

/// Latencies are kept in microseconds, 1 µs to one hour, two significant digits.
fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000, 2)
        .unwrap_or_else(|e| unreachable!("hdrhistogram rejected constant bounds: {e}"))
}

fn micros(d: Duration) -> u64 {
    (d.as_micros() as u64).clamp(1, 3_600_000_000)
}

#[derive(Debug)]
struct Shard {
    queue: Histogram<u64>,
    processing: Histogram<u64>,
    total: Histogram<u64>,
    handoff: Histogram<u64>,
}

/// Live counters of one pool.
#[derive(Debug)]
pub(crate) struct PoolCounters {
    pub(crate) dispatched: AtomicU64,
    pub(crate) handed_off: AtomicU64,
    pub(crate) queued: AtomicU64,
    pub(crate) rejected_queue_full: AtomicU64,
    pub(crate) completed: AtomicU64,
    pub(crate) dropped: AtomicU64,
    pub(crate) timed_out: AtomicU64,
    pub(crate) panicked: AtomicU64,
    pub(crate) failed_at_shutdown: AtomicU64,
    pub(crate) lifo_takes: AtomicU64,
    pub(crate) active: AtomicUsize,
    shards: Vec<Mutex<Shard>>,
}

impl PoolCounters {
    pub(crate) fn new() -> PoolCounters {
        PoolCounters {
            dispatched: AtomicU64::new(0),
            handed_off: AtomicU64::new(0),
            queued: AtomicU64::new(0),
            rejected_queue_full: AtomicU64::new(0),
            completed: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            timed_out: AtomicU64::new(0),
            panicked: AtomicU64::new(0),
            failed_at_shutdown: AtomicU64::new(0),
            lifo_takes: AtomicU64::new(0),
            active: AtomicUsize::new(0),
            shards: (0..SHARDS)
                .map(|_| {
                    Mutex::new(Shard {
                        queue: histogram(),
                        processing: histogram(),
                        total: histogram(),
                        handoff: histogram(),
                    })
                })
                .collect(),
        }
    }

    pub(crate) fn record(
        &self,
        handler: usize,
        queue: Duration,
        processing: Duration,
        handed_off: bool,
    ) {
        let mut shard = self.shards[handler % SHARDS].lock();
        shard.queue.saturating_record(micros(queue));
        shard.processing.saturating_record(micros(processing));
        shard.total.saturating_record(micros(queue + processing));
        if handed_off {
            shard.handoff.saturating_record(micros(queue));
        }
    }

    pub(crate) fn snapshot(&self, name: &'static str, layout: PoolShape) -> PoolMetrics {
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let (mut queue, mut processing, mut total, mut handoff) =
            (histogram(), histogram(), histogram(), histogram());
        for shard in &self.shards {
            let shard = shard.lock();
            // Same bounds on both sides, so `add` cannot fail; saturate rather than panic.
            let _ = queue.add(&shard.queue);
            let _ = processing.add(&shard.processing);
            let _ = total.add(&shard.total);
            let _ = handoff.add(&shard.handoff);
        }
        PoolMetrics {
            name,
            queues: layout.queues,
            handlers: layout.handlers,
            queue_limit: layout.queue_limit,
            queued_calls: layout.queued_calls,
            active_handlers: self.active.load(Ordering::Acquire),
            dispatched: load(&self.dispatched),
            handed_off: load(&self.handed_off),
            queued: load(&self.queued),
            rejected_queue_full: load(&self.rejected_queue_full),
            completed: load(&self.completed),
            dropped: load(&self.dropped),
            timed_out: load(&self.timed_out),
            panicked: load(&self.panicked),
            failed_at_shutdown: load(&self.failed_at_shutdown),
            lifo_takes: load(&self.lifo_takes),
            queue_time_us: queue,
            processing_time_us: processing,
            total_time_us: total,
            handoff_time_us: handoff,
        }
    }
}

/// Shape and gauges read by the executor for a snapshot.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PoolShape {
    pub(crate) queues: usize,
    pub(crate) handlers: usize,
    pub(crate) queue_limit: usize,
    pub(crate) queued_calls: usize,
}

/// A snapshot of one handler pool.
#[derive(Debug, Clone)]
pub struct PoolMetrics {
    /// `general`, `write`, `read`, `scan` or `priority`.
    pub name: &'static str,
    /// Number of queues.
    pub queues: usize,
    /// Number of handlers.
    pub handlers: usize,
    /// Current per-queue soft limit.
    pub queue_limit: usize,
    /// Calls waiting in this pool's queues now (`numCallsIn<Class>Queue`).
    pub queued_calls: usize,
    /// Handlers running a call now (`numActive<Class>Handler`).
    pub active_handlers: usize,
    /// Calls accepted by dispatch.
    pub dispatched: u64,
    /// Accepted calls handed straight to an idle handler (fast path).
    pub handed_off: u64,
    /// Accepted calls that went into a queue.
    pub queued: u64,
    /// Calls refused because their queue was at its limit (`CallQueueTooBig`, "too many items").
    pub rejected_queue_full: u64,
    /// Calls that ran to completion (including ones that panicked).
    pub completed: u64,
    /// Calls shed by CoDel (`numGeneralCallsDropped`).
    pub dropped: u64,
    /// Calls dropped because their deadline passed while they waited (`callTimedOut`).
    pub timed_out: u64,
    /// Calls whose run panicked; the handler kept serving.
    pub panicked: u64,
    /// Queued calls failed by a [`crate::ShutdownMode::FailQueued`] shutdown.
    pub failed_at_shutdown: u64,
    /// Takes a CoDel queue served from the back (`numLifoModeSwitches`).
    pub lifo_takes: u64,
    /// Receive to handler start, µs (`queueCallTime`).
    pub queue_time_us: Histogram<u64>,
    /// Handler start to end, µs (`processCallTime`).
    pub processing_time_us: Histogram<u64>,
    /// Receive to end, µs (`totalCallTime`).
    pub total_time_us: Histogram<u64>,
    /// Queue time of fast-path hand-offs only: dispatch to the handler starting the call, µs.
    pub handoff_time_us: Histogram<u64>,
}

/// A snapshot of the whole executor.
#[derive(Debug, Clone)]
pub struct RpcMetrics {
    /// The executor's kind.
    pub executor: crate::ExecutorKind,
    /// Bytes of queued and running calls (`queueSize`).
    pub queued_bytes: u64,
    /// Calls refused because the byte limit would be exceeded.
    pub rejected_too_many_bytes: u64,
    /// Calls refused because they alone exceed the size limit.
    pub rejected_too_large: u64,
    /// Calls refused because the executor is shutting down.
    pub rejected_shutting_down: u64,
    /// One entry per handler pool.
    pub pools: Vec<PoolMetrics>,
}

impl RpcMetrics {
    /// The pool named `name`, if the executor has one.
    pub fn pool(&self, name: &str) -> Option<&PoolMetrics> {
        self.pools.iter().find(|p| p.name == name)
    }
}
