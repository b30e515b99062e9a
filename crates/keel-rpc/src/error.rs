//! Why a call was refused (the call comes back with the reason) and why a configuration is bad.

use crate::call::Call;

/// Why [`crate::Executor::dispatch`] refused a call; the server answers the client from it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RejectReason {
    /// The chosen queue is at its soft limit (HBase `CallQueueTooBigException`, "too many items
    /// queued?").
    #[error(
        "call queue {queue} of pool {pool} is full ({limit} calls; hbase.ipc.server.max.callqueue.length)"
    )]
    QueueFull {
        /// The pool (`write`, `read`, …).
        pool: &'static str,
        /// Index of the queue in its pool.
        queue: usize,
        /// The soft limit in force.
        limit: usize,
    },
    /// Admitting the call would put queued and running calls over the byte limit (HBase
    /// `CallQueueTooBigException`, "is hbase.ipc.server.max.callqueue.size too small?").
    #[error(
        "{queued_bytes} bytes queued + {size} would exceed {limit} (hbase.ipc.server.max.callqueue.size)"
    )]
    TooManyBytes {
        /// Bytes of calls already queued or running.
        queued_bytes: u64,
        /// This call's size.
        size: u64,
        /// The limit in force.
        limit: u64,
    },
    /// The call alone is larger than the single-call limit.
    #[error("call of {size} bytes exceeds {limit} (hbase.ipc.max.request.size)")]
    TooLarge {
        /// This call's size.
        size: u64,
        /// The limit in force.
        limit: u64,
    },
    /// The executor is shutting down.
    #[error("the RPC executor is shutting down")]
    ShuttingDown,
}

/// A refused call, handed back with the reason so the caller can answer it.
#[derive(Debug, thiserror::Error)]
#[error("call refused: {reason}")]
pub struct Rejected {
    /// Why.
    pub reason: RejectReason,
    /// The call, untouched.
    pub call: Call,
}

/// A configuration the executor cannot run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConfigError {
    /// No handlers.
    #[error(
        "hbase.regionserver.handler.count must be at least 1 (at least 2 for a read/write split)"
    )]
    TooFewHandlers,
    /// A ratio outside 0..=1 or not a number.
    #[error("{key} = {value} is not a ratio in 0..=1")]
    BadRatio {
        /// The HBase key.
        key: &'static str,
        /// The value given.
        value: f64,
    },
    /// A fast-path executor over deadline queues: a hand-off would jump the deadline order.
    #[error("the deadline queue type cannot use a fast-path executor ({0})")]
    DeadlineWithFastPath(&'static str),
    /// A soft limit above a queue's fixed capacity (HBase: "restart required to grow").
    #[error(
        "queue length {requested} exceeds pool {pool}'s capacity {capacity}; restart to grow it"
    )]
    AboveHardLimit {
        /// The pool.
        pool: &'static str,
        /// The limit asked for.
        requested: usize,
        /// The capacity fixed at start.
        capacity: usize,
    },
    /// The OS would not start a handler thread.
    #[error("cannot start handler thread {name}: {message}")]
    Spawn {
        /// The thread's name.
        name: String,
        /// The OS error.
        message: String,
    },
}
