//! Keel's block caches: the [`BlockCache`] interface with single-flight
//! [`BlockCacheExt::get_or_load`]; HBase's [`LruBlockCache`] (L1) and [`BucketCache`] (L2), combined
//! as HBase does in [`CombinedBlockCache`]; and the per-block read/write id locks with their
//! lock-object pools ([`IdReadWriteLock`], [`PoolKind`]), the mechanism HBASE-17747 measured (soft
//! vs weak pools under a 100 %-cache-hit read load). The bucket cache's area is on the heap or in
//! a memory-mapped file ([`AreaKind`]).
//!
//! ```
//! use keel_blockcache::{IdReadWriteLock, PoolKind};
//!
//! // Block ids: (file id, offset).
//! let locks = IdReadWriteLock::<(u64, u64)>::new(PoolKind::Soft { max_entries: 1024 });
//! {
//!     let _reader = locks.read(&(7, 4096));
//!     let _other_reader = locks.read(&(7, 4096)); // readers share
//! }
//! let _evictor = locks.write(&(7, 4096));
//! assert_eq!(locks.stats().created, 1, "one lock object, kept by the soft pool");
//! ```

mod bucket;
mod cache;
mod combined;
mod id_lock;
mod lru;

pub use bucket::{AreaKind, BucketCache, BucketOptions, DEFAULT_SIZE_CLASSES};
pub use cache::{BlockCache, BlockCacheExt, BlockKey, BlockPriority, CacheStats, LoadFailed};
pub use combined::{BlockKind, CombinedBlockCache, KindStats};
pub use id_lock::{IdLockStats, IdReadGuard, IdReadWriteLock, IdWriteGuard, PoolKind};
pub use lru::{LruBlockCache, LruOptions};

/// The crate README's example, compiled and run as a doctest.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
