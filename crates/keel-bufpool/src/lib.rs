//! A bounded pool of reusable buffers for reading requests (HBASE-14490; HBase's current
//! `ByteBuffAllocator`).
//!
//! [`BufferPool`] hands out [`PoolBuf`]s built from fixed-size buffers (65 KiB by default) kept
//! on a lock-free free list and created on demand up to a bound. A request of `len` bytes gets
//! one pooled buffer, a chain of them for larger requests (usable as one `bytes::Buf` /
//! `BufMut`), or a heap buffer when it is small or the pool is exhausted. Within the request
//! limit ([`PoolOptions::max_allocation`]) allocation never fails: it degrades to the heap and
//! the [`PoolStats`] say so. Dropping the buffer, or the last `Bytes`
//! frozen from it, returns pooled memory to the pool.
//!
//! ```
//! use bytes::{Buf, BufMut};
//! use keel_bufpool::{BufferPool, PoolOptions};
//!
//! let pool = BufferPool::new(PoolOptions::with_buffer_size(1024));
//! // One pooled buffer plus a 76-byte heap tail (below the 1/6-of-a-buffer minimum).
//! let mut request = pool.allocate(1100)?;
//! assert_eq!((request.pooled_segments(), request.segment_count()), (1, 2));
//! request.put_slice(&[7u8; 1100]);
//! let frozen = request.freeze();
//! assert_eq!(frozen.remaining(), 1100);
//! drop(frozen); // the pooled buffer is back on the free list
//! assert_eq!(pool.stats().free_buffers, 1);
//! assert!(pool.allocate(usize::MAX).is_err(), "a hostile length is refused, not attempted");
//! # Ok::<(), keel_bufpool::PoolError>(())
//! ```
//!
//! [`alternatives`] holds the designs HBase compared (plain allocation, one buffer per
//! connection, a shared running-average pool, a pool of power-of-two size classes) behind the
//! same [`RequestBuffers`] interface as the pool, so the benchmark can put them side by side.
//! [`RequestPool`] holds any of the five,
//! chosen at run time ([`Strategy`]), and freezes each request into `Bytes` that return their
//! buffer to the design when dropped: the form keel-server uses.
//!
//! What this crate is not: it reads nothing from sockets and knows no protocol; keel-server reads
//! into its buffers.

pub mod alternatives;
mod buf;
mod error;
mod free_stack;
mod options;
mod pool;
mod size_class;
mod stats;
mod strategy;

pub use alternatives::RequestBuffers;
pub use buf::{FrozenBuf, PoolBuf};
pub use error::PoolError;
pub use options::{DEFAULT_MAX_ALLOCATION, PoolOptions};
pub use pool::BufferPool;
pub use stats::PoolStats;
pub use strategy::{RequestBuf, RequestConnection, RequestPool, Strategy};

#[cfg(test)]
mod tests;

/// The crate README's example, compiled and run as a doctest.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
