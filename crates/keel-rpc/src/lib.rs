//! Keel's RPC executor: the scheduler between the network and the store. It decides which
//! handler thread runs which call, and when to refuse work.
//!
//! A [`Call`] carries its [`CallClass`] (write, read, scan, priority), receive time, optional
//! deadline and size around a [`Task`], the caller's code. [`Executor::dispatch`] either accepts
//! it or hands it back in a [`Rejected`] with the reason, so a server can answer the client
//! (`CallQueueTooBig`). An accepted call's task is either run once on a handler thread or failed
//! once with a [`Failure`] (timed out, shed by CoDel, shut down, or its run panicked).
//!
//! The executors are HBase's, chosen by [`RpcOptions::executor`]:
//! - [`ExecutorKind::Balanced`]: N queues, a random balancer, handler i serving queue i mod N.
//! - [`ExecutorKind::RwQueue`]: write, read and scan pools split by HBase's formulas ([`layout`]).
//! - [`ExecutorKind::FastPathBalanced`] and [`ExecutorKind::FastPathRwQueue`] (HBASE-16023,
//!   HBASE-26551): an idle handler parks on a stack (one per pool, LIFO so the warmest runs
//!   next) and a new call goes straight to it, never touching a queue. Unlike HBase, a handler's
//!   empty poll and its push onto the stack are one step under the queue's lock, so a call can
//!   never wait in a queue while a handler of its pool sits parked.
//!
//! Queues are FIFO, deadline-ordered or CoDel ([`QueueType`]); every queue has a soft length
//! limit, the executor a byte limit and a single-call limit, all changeable at runtime.
//! [`Executor::metrics`] reports what HBase's `MetricsHBaseServerSource` does.
//!
//! ```
//! use keel_rpc::{Call, CallClass, Executor, Failure, RpcOptions, RunInfo, Task};
//! use std::sync::mpsc;
//!
//! struct Get(mpsc::Sender<Result<String, Failure>>);
//! impl Task for Get {
//!     fn run(&mut self, info: &RunInfo) {
//!         let _ = self.0.send(Ok(format!("ran as {:?}", info.class)));
//!     }
//!     fn fail(&mut self, failure: Failure) {
//!         let _ = self.0.send(Err(failure));
//!     }
//! }
//!
//! let executor = Executor::new(RpcOptions { read_ratio: 0.5, ..RpcOptions::default() })?;
//! let (tx, rx) = mpsc::channel();
//! executor
//!     .dispatch(Call::new(CallClass::Read, Get(tx)).with_size(64))
//!     .map_err(|rejected| rejected.reason)?;
//! assert_eq!(rx.recv()?, Ok("ran as Read".to_string()));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(missing_docs)]

mod call;
mod error;
mod executor;
pub mod layout;
mod metrics;
mod options;
mod pool;
mod queue;

pub use call::{Call, CallClass, Failure, RunInfo, Task};
pub use error::{ConfigError, RejectReason, Rejected};
pub use executor::Executor;
pub use layout::{Layout, PoolLayout};
pub use metrics::{PoolMetrics, RpcMetrics};
pub use options::{CodelOptions, ExecutorKind, QueueType, RpcOptions, ShutdownMode};

#[cfg(test)]
mod tests;

/// The crate README's example, compiled and run as a doctest.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
