//! Counters, as HBASE-14490 reported them (creations, discards and their bytes) plus HBase's
//! allocator metrics (pooled vs heap allocations and bytes, exhaustion).

use keel_sync::atomic::{AtomicU64, Ordering::Relaxed};

/// A snapshot of a pool's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Buffers the pool created (each a heap allocation that the pool then keeps).
    pub buffers_created: u64,
    /// Bytes of those buffers.
    pub bytes_created: u64,
    /// Buffers the pool dropped instead of keeping.
    pub buffers_discarded: u64,
    /// Bytes of those buffers.
    pub bytes_discarded: u64,
    /// Pooled buffers handed out (a chained request counts each buffer).
    pub pooled_allocations: u64,
    /// Bytes of pooled buffers handed out.
    pub pooled_bytes: u64,
    /// Requests or request tails served from the heap (one heap allocation each).
    pub heap_allocations: u64,
    /// Bytes of those.
    pub heap_bytes: u64,
    /// Times a request wanted a pooled buffer and every buffer was in use.
    pub exhaustions: u64,
    /// Buffers on the free list now.
    pub free_buffers: usize,
    /// Buffers in existence now (free or in use).
    pub live_buffers: usize,
}

impl PoolStats {
    /// The counts between `earlier` and this snapshot (what happened in between); the gauges
    /// (free and live buffers) are this snapshot's.
    pub fn since(&self, earlier: &PoolStats) -> PoolStats {
        PoolStats {
            buffers_created: self.buffers_created - earlier.buffers_created,
            bytes_created: self.bytes_created - earlier.bytes_created,
            buffers_discarded: self.buffers_discarded - earlier.buffers_discarded,
            bytes_discarded: self.bytes_discarded - earlier.bytes_discarded,
            pooled_allocations: self.pooled_allocations - earlier.pooled_allocations,
            pooled_bytes: self.pooled_bytes - earlier.pooled_bytes,
            heap_allocations: self.heap_allocations - earlier.heap_allocations,
            heap_bytes: self.heap_bytes - earlier.heap_bytes,
            exhaustions: self.exhaustions - earlier.exhaustions,
            ..*self
        }
    }
}

/// The live counters. Relaxed atomics: each is an independent tally read for reporting.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    created: AtomicU64,
    bytes_created: AtomicU64,
    discarded: AtomicU64,
    bytes_discarded: AtomicU64,
    pooled: AtomicU64,
    pooled_bytes: AtomicU64,
    heap: AtomicU64,
    heap_bytes: AtomicU64,
    exhaustions: AtomicU64,
}

impl Counters {
    pub(crate) fn created(&self, bytes: usize) {
        self.created.fetch_add(1, Relaxed);
        self.bytes_created.fetch_add(bytes as u64, Relaxed);
    }

    pub(crate) fn discarded(&self, bytes: usize) {
        self.discarded.fetch_add(1, Relaxed);
        self.bytes_discarded.fetch_add(bytes as u64, Relaxed);
    }

    pub(crate) fn pooled(&self, bytes: usize) {
        self.pooled.fetch_add(1, Relaxed);
        self.pooled_bytes.fetch_add(bytes as u64, Relaxed);
    }

    pub(crate) fn heap(&self, bytes: usize) {
        self.heap.fetch_add(1, Relaxed);
        self.heap_bytes.fetch_add(bytes as u64, Relaxed);
    }

    pub(crate) fn exhausted(&self) {
        self.exhaustions.fetch_add(1, Relaxed);
    }

    pub(crate) fn snapshot(&self, free_buffers: usize, live_buffers: usize) -> PoolStats {
        PoolStats {
            buffers_created: self.created.load(Relaxed),
            bytes_created: self.bytes_created.load(Relaxed),
            buffers_discarded: self.discarded.load(Relaxed),
            bytes_discarded: self.bytes_discarded.load(Relaxed),
            pooled_allocations: self.pooled.load(Relaxed),
            pooled_bytes: self.pooled_bytes.load(Relaxed),
            heap_allocations: self.heap.load(Relaxed),
            heap_bytes: self.heap_bytes.load(Relaxed),
            exhaustions: self.exhaustions.load(Relaxed),
            free_buffers,
            live_buffers,
        }
    }
}
