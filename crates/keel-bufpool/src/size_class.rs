//! [`SizeClassPool`]: the design Hiroshi Ikeda attached to HBASE-14490 (`ByteBufferPool`),
//! which the seed measured against HBase 1's `BoundedByteBufferPool` and found creating far
//! more buffers: a free list per power-of-two capacity, shared by every connection, with
//! requests below a minimum served by a fresh buffer dropped after use.
//!
//! The attachment itself is not public text any more; what Keel builds is what the thread
//! says of it and what its counters show. In the seed's run the reads (≈ 134-byte requests)
//! created and discarded one buffer each (10 058 of each), while the puts (tens of KiB) created
//! 70 buffers in all and kept the large ones: small requests bypass the pool, large ones reuse
//! a buffer of their size class. The Java pool held its buffers through soft references, so
//! the collector could take idle ones back; without a collector, Keel bounds the pooled bytes
//! instead (by default the fixed pool's budget), and a return over the bound is dropped.

use crossbeam_queue::ArrayQueue;
use keel_sync::atomic::{AtomicUsize, Ordering::Relaxed};

use crate::alternatives::{HeapBuf, RequestBuffers, check_len};
use crate::error::PoolError;
use crate::options::DEFAULT_MAX_ALLOCATION;
use crate::stats::{Counters, PoolStats};

/// Smallest request given a pooled buffer: 1 KiB. Below it a fresh buffer is cheaper than a
/// pooled one kept for it.
pub const DEFAULT_MIN_POOLED: usize = 1024;
/// Largest pooled capacity: 1 MiB (HBase's `hbase.ipc.server.reservoir.max.buffer.size`, the
/// same bound as [`crate::alternatives::SharedAveragePool`]'s).
pub const DEFAULT_MAX_POOLED: usize = 1024 * 1024;
/// Most buffers one size class keeps.
const MAX_PER_CLASS: usize = 1024;

/// Ikeda's `ByteBufferPool` (HBASE-14490): one free list per power-of-two capacity from
/// [`DEFAULT_MIN_POOLED`] to [`DEFAULT_MAX_POOLED`], shared by all connections. A request
/// takes a buffer of the smallest class that holds it (creating one when the class's list is
/// empty) and gives it back to that class; a request below the smallest class or above the
/// largest gets a fresh heap buffer, dropped after use. Pooled bytes are bounded: a return that
/// would pass the bound is dropped (counted as discarded).
#[derive(Debug)]
pub struct SizeClassPool {
    classes: Box<[ArrayQueue<Vec<u8>>]>,
    min_pooled: usize,
    max_bytes: usize,
    pooled_bytes: AtomicUsize,
    limit: usize,
    counters: Counters,
}

impl SizeClassPool {
    /// A pool keeping at most `max_bytes` bytes of free buffers.
    pub fn new(max_bytes: usize) -> SizeClassPool {
        let min_pooled = DEFAULT_MIN_POOLED;
        let count = (DEFAULT_MAX_POOLED / min_pooled).trailing_zeros() as usize + 1;
        let classes = (0..count)
            .map(|k| ArrayQueue::new((max_bytes / (min_pooled << k)).clamp(1, MAX_PER_CLASS)))
            .collect();
        SizeClassPool {
            classes,
            min_pooled,
            max_bytes,
            pooled_bytes: AtomicUsize::new(0),
            limit: DEFAULT_MAX_ALLOCATION,
            counters: Counters::default(),
        }
    }

    /// Refusing requests above `limit` bytes (the default: the pool's, 256 MiB).
    pub fn with_limit(self, limit: usize) -> SizeClassPool {
        SizeClassPool { limit, ..self }
    }

    /// The size class (index into `classes`) whose buffers hold `len` bytes, if `len` is pooled.
    fn class_of(&self, len: usize) -> Option<usize> {
        if len < self.min_pooled {
            return None;
        }
        let capacity = len.checked_next_power_of_two()?;
        let k = (capacity / self.min_pooled).trailing_zeros() as usize;
        (k < self.classes.len()).then_some(k)
    }

    /// The class a returned buffer of `capacity` bytes belongs to: only an exact class size.
    fn home_of(&self, capacity: usize) -> Option<usize> {
        if !capacity.is_power_of_two() {
            return None;
        }
        self.class_of(capacity)
            .filter(|&k| self.min_pooled << k == capacity)
    }
}

impl RequestBuffers for SizeClassPool {
    type Connection = ();
    type Buffer = HeapBuf;

    fn name(&self) -> &'static str {
        "size-class pool"
    }

    fn connect(&self) {}

    fn acquire(&self, _connection: &mut (), len: usize) -> Result<HeapBuf, PoolError> {
        check_len(len, self.limit)?;
        let Some(k) = self.class_of(len) else {
            self.counters.created(len);
            self.counters.heap(len);
            return Ok(HeapBuf::for_request(Vec::with_capacity(len), len));
        };
        let capacity = self.min_pooled << k;
        let buffer = match self.classes[k].pop() {
            Some(buffer) => {
                self.pooled_bytes.fetch_sub(buffer.capacity(), Relaxed);
                self.counters.pooled(capacity);
                buffer
            }
            None => {
                self.counters.created(capacity);
                self.counters.heap(capacity);
                Vec::with_capacity(capacity)
            }
        };
        Ok(HeapBuf::for_request(buffer, len))
    }

    fn release(&self, _connection: &mut (), buffer: HeapBuf) {
        let buffer = buffer.into_inner();
        let capacity = buffer.capacity();
        let Some(k) = self.home_of(capacity) else {
            self.counters.discarded(capacity);
            return;
        };
        // Reserve the bytes first so concurrent returns cannot pass the bound together.
        if self.pooled_bytes.fetch_add(capacity, Relaxed) + capacity > self.max_bytes {
            self.pooled_bytes.fetch_sub(capacity, Relaxed);
            self.counters.discarded(capacity);
            return;
        }
        if let Err(buffer) = self.classes[k].push(buffer) {
            self.pooled_bytes.fetch_sub(capacity, Relaxed);
            self.counters.discarded(buffer.capacity());
        }
    }

    fn stats(&self) -> PoolStats {
        let free = self.classes.iter().map(ArrayQueue::len).sum();
        self.counters.snapshot(free, 0)
    }
}

#[cfg(test)]
mod tests {
    use bytes::BufMut as _;

    use super::*;

    fn round_trip(pool: &SizeClassPool, len: usize) {
        let mut buffer = pool.acquire(&mut (), len).expect("within the limit");
        buffer.put_bytes(7, len);
        pool.release(&mut (), buffer);
    }

    #[test]
    fn small_requests_bypass_the_pool_and_large_ones_reuse_their_class() {
        let pool = SizeClassPool::new(1 << 20);
        for _ in 0..10 {
            round_trip(&pool, 134);
        }
        let stats = pool.stats();
        assert_eq!((stats.buffers_created, stats.buffers_discarded), (10, 10));
        for _ in 0..10 {
            round_trip(&pool, 3_000);
        }
        let stats = pool.stats();
        assert_eq!(stats.buffers_created, 11, "one 4 KiB buffer, reused");
        assert_eq!(stats.bytes_created, 10 * 134 + 4096);
        assert_eq!((stats.pooled_allocations, stats.free_buffers), (9, 1));
        // A request of another class gets its own buffer; an exact power of two fits its class.
        round_trip(&pool, 4096);
        round_trip(&pool, 4097);
        let stats = pool.stats();
        assert_eq!(stats.buffers_created, 12);
        assert_eq!(stats.free_buffers, 2);
    }

    #[test]
    fn pooled_bytes_stay_within_the_bound() {
        let pool = SizeClassPool::new(10_000);
        let held: Vec<_> = (0..5)
            .map(|_| pool.acquire(&mut (), 4000).expect("within the limit"))
            .collect();
        for buffer in held {
            pool.release(&mut (), buffer);
        }
        let stats = pool.stats();
        assert_eq!(stats.free_buffers, 2, "two 4 KiB buffers fit 10 000 bytes");
        assert_eq!(stats.buffers_discarded, 3);
        assert!(pool.pooled_bytes.load(Relaxed) <= 10_000);
        // Above the largest class: fresh each time.
        round_trip(&pool, DEFAULT_MAX_POOLED + 1);
        assert_eq!(pool.stats().buffers_discarded, 4);
        assert!(
            pool.acquire(&mut (), usize::MAX).is_err(),
            "a hostile length is refused, not attempted"
        );
    }
}
