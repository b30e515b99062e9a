//! Executor configuration, with HBase's keys and defaults.

use std::time::Duration;

/// How the general handlers are organised (HBase's `RpcExecutor` subclasses).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExecutorKind {
    /// N queues shared by every class, a random balancer, handler i bound to queue i mod N
    /// (`BalancedQueueRpcExecutor`).
    Balanced,
    /// `Balanced` plus one idle-handler stack: a call goes straight to the most recently idle
    /// handler when there is one (`FastPathBalancedQueueRpcExecutor`, HBASE-16023).
    FastPathBalanced,
    /// Separate write, read and scan queues and handlers, split by HBase's formulas
    /// (`RWQueueRpcExecutor`).
    RwQueue,
    /// `RwQueue` plus an idle-handler stack per class (`FastPathRWQueueRpcExecutor`, HBASE-26551).
    FastPathRwQueue,
}

impl ExecutorKind {
    /// Every kind, in the order the benchmark runs them.
    pub const ALL: [ExecutorKind; 4] = [
        ExecutorKind::RwQueue,
        ExecutorKind::FastPathRwQueue,
        ExecutorKind::Balanced,
        ExecutorKind::FastPathBalanced,
    ];

    /// True for the kinds with read/write/scan queues.
    pub fn is_rw(self) -> bool {
        matches!(self, ExecutorKind::RwQueue | ExecutorKind::FastPathRwQueue)
    }

    /// True for the kinds that hand calls to idle handlers.
    pub fn is_fast_path(self) -> bool {
        matches!(
            self,
            ExecutorKind::FastPathBalanced | ExecutorKind::FastPathRwQueue
        )
    }

    /// HBase's class name for the kind.
    pub fn name(self) -> &'static str {
        match self {
            ExecutorKind::Balanced => "Balanced",
            ExecutorKind::FastPathBalanced => "FastPathBalanced",
            ExecutorKind::RwQueue => "RwQueue",
            ExecutorKind::FastPathRwQueue => "FastPathRwQueue",
        }
    }
}

/// The queue discipline (`hbase.ipc.server.callqueue.type`, default `fifo`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum QueueType {
    /// First in, first out.
    #[default]
    Fifo,
    /// Ordered by receive time + min(scan delay, `hbase.ipc.server.queue.max.call.delay`), FIFO
    /// among ties; long scans yield to short calls. A hand-off would jump that order, so this
    /// type has no fast path.
    Deadline,
    /// FIFO that turns LIFO above a fill threshold and sheds calls that waited too long while
    /// the queue is overloaded (`AdaptiveLifoCoDelCallQueue`, HBASE-15136).
    Codel,
}

/// CoDel parameters (`hbase.ipc.server.callqueue.codel.*`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CodelOptions {
    /// `codel.target.delay`: 100 ms, HBase's default through 2.6/3.0 (master moved to 5 ms in
    /// HBASE-29912; 100 ms does not shed a healthy, merely busy, server).
    pub target_delay: Duration,
    /// `codel.interval`: 100 ms, the window whose minimum delay decides "overloaded".
    pub interval: Duration,
    /// `codel.lifo.threshold`: 0.8 of the soft length limit, above which takes are LIFO.
    pub lifo_threshold: f64,
}

impl Default for CodelOptions {
    fn default() -> CodelOptions {
        CodelOptions {
            target_delay: Duration::from_millis(100),
            interval: Duration::from_millis(100),
            lifo_threshold: 0.8,
        }
    }
}

/// What [`crate::Executor::shutdown`] does with calls still queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ShutdownMode {
    /// Run every queued call, then stop.
    #[default]
    Drain,
    /// Answer every queued call with [`crate::Failure::ShuttingDown`]; running calls finish.
    FailQueued,
}

/// Executor configuration. Defaults are HBase's.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcOptions {
    /// `hbase.regionserver.handler.count`: 30 general handlers.
    pub handler_count: usize,
    /// `hbase.ipc.server.callqueue.handler.factor`: 0.1 queues per handler (clamped to 0..=1).
    pub handler_factor: f64,
    /// `hbase.ipc.server.callqueue.read.ratio`: 0; above 0 the executor splits reads from writes.
    pub read_ratio: f64,
    /// `hbase.ipc.server.callqueue.scan.ratio`: 0; the share of the read side given to scans.
    pub scan_ratio: f64,
    /// `hbase.ipc.server.callqueue.type`: FIFO.
    pub queue_type: QueueType,
    /// The executor; `None` chooses as HBase's `SimpleRpcScheduler` does: `FastPathRwQueue` if
    /// `read_ratio` > 0, else `FastPathBalanced`; with the deadline queue type, which a hand-off
    /// would reorder, the same without the fast path (HBase keeps it for RW, Keel does not).
    pub executor: Option<ExecutorKind>,
    /// `hbase.ipc.server.max.callqueue.length`: the per-queue soft limit; `None` means HBase's
    /// default, (handlers / queues) × 10. The hard capacity is max(soft, 250), fixed at start.
    pub max_queue_length: Option<usize>,
    /// `hbase.ipc.server.max.callqueue.size`: 1 GiB of queued and running call bytes.
    pub max_queued_bytes: u64,
    /// `hbase.ipc.max.request.size`: 256 MiB for a single call.
    pub max_call_size: u64,
    /// `hbase.regionserver.metahandler.count`: 20 handlers for [`crate::CallClass::Priority`]
    /// calls (a fast-path balanced FIFO pool); 0 sends them to the read side instead.
    pub priority_handler_count: usize,
    /// `hbase.ipc.server.queue.max.call.delay`: 5 s, the most a deadline queue defers a call.
    pub max_call_delay: Duration,
    /// `hbase.ipc.server.scan.vtime.weight`: 1.0.
    pub scan_vtime_weight: f64,
    /// CoDel parameters, used by [`QueueType::Codel`].
    pub codel: CodelOptions,
    /// Prefix of handler thread names: `keel-rpc` gives `keel-rpc-write-3`.
    pub thread_name_prefix: String,
}

impl Default for RpcOptions {
    fn default() -> RpcOptions {
        RpcOptions {
            handler_count: 30,
            handler_factor: 0.1,
            read_ratio: 0.0,
            scan_ratio: 0.0,
            queue_type: QueueType::Fifo,
            executor: None,
            max_queue_length: None,
            max_queued_bytes: 1 << 30,
            max_call_size: 256 << 20,
            priority_handler_count: 20,
            max_call_delay: Duration::from_millis(5000),
            scan_vtime_weight: 1.0,
            codel: CodelOptions::default(),
            thread_name_prefix: "keel-rpc".to_string(),
        }
    }
}

impl RpcOptions {
    /// The executor these options select (see [`RpcOptions::executor`]).
    pub fn executor_kind(&self) -> ExecutorKind {
        let deadline = self.queue_type == QueueType::Deadline;
        self.executor
            .unwrap_or(match (self.read_ratio > 0.0, deadline) {
                (true, false) => ExecutorKind::FastPathRwQueue,
                (true, true) => ExecutorKind::RwQueue,
                (false, false) => ExecutorKind::FastPathBalanced,
                (false, true) => ExecutorKind::Balanced,
            })
    }
}
