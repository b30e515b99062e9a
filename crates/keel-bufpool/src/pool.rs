//! [`BufferPool`]: fixed-size buffers on a lock-free free list, created on demand up to a bound.

use std::fmt;

use keel_sync::atomic::{AtomicUsize, Ordering::Relaxed};
use keel_sync::{Arc, CachePadded};

use crate::buf::{PoolBuf, Segment, Segments};
use crate::error::PoolError;
use crate::free_stack::FreeStack;
use crate::options::PoolOptions;
use crate::stats::{Counters, PoolStats};

/// A bounded pool of fixed-size buffers shared by every connection. Cloning shares the pool.
///
/// [`BufferPool::allocate`] refuses only a request above the configured limit. Otherwise, when
/// the request is small, or the pool has handed out every buffer it may create, the request (or
/// its remainder) is served from the heap and the counters say so. Buffers go back to the pool when the [`PoolBuf`] (or the last `Bytes` frozen
/// from it) is dropped; the pool never frees them.
#[derive(Clone)]
pub struct BufferPool {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) options: PoolOptions,
    free: FreeStack,
    /// Buffers created so far (never above `options.max_buffers`).
    created: CachePadded<AtomicUsize>,
    pub(crate) counters: Counters,
}

impl fmt::Debug for BufferPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BufferPool")
            .field("options", &self.inner.options)
            .field("stats", &self.stats())
            .finish()
    }
}

impl Default for BufferPool {
    fn default() -> Self {
        BufferPool::new(PoolOptions::default())
    }
}

impl BufferPool {
    /// A pool with `options` (a zero buffer size or count is raised to 1).
    pub fn new(options: PoolOptions) -> BufferPool {
        let options = PoolOptions {
            buffer_size: options.buffer_size.max(1),
            max_buffers: options.max_buffers.max(1),
            ..options
        };
        let inner = Arc::new(Inner {
            options,
            free: FreeStack::new(options.max_buffers),
            created: CachePadded(AtomicUsize::new(0)),
            counters: Counters::default(),
        });
        let pool = BufferPool { inner };
        if options.preallocate {
            while let Some((slot, buffer)) = pool.inner.create() {
                pool.inner.put_back(slot, buffer);
            }
        }
        pool
    }

    /// The options in force.
    pub fn options(&self) -> PoolOptions {
        self.inner.options
    }

    /// A buffer with room for exactly `len` bytes, as HBase's `ByteBuffAllocator.allocate`:
    /// requests below `min_allocate_size` come from the heap; otherwise pooled buffers are taken
    /// while at least `min_allocate_size` bytes remain, and any remainder (a small tail, or what
    /// an exhausted pool could not supply) is one heap segment.
    ///
    /// A request above [`PoolOptions::max_allocation`] is refused with [`PoolError::TooLarge`].
    pub fn allocate(&self, len: usize) -> Result<PoolBuf, PoolError> {
        let options = &self.inner.options;
        if len > options.max_allocation {
            return Err(PoolError::TooLarge {
                len,
                max: options.max_allocation,
            });
        }
        let min = options.min_allocate_size.max(1);
        let mut segments = Segments::default();
        let mut remaining = len;
        if len >= min {
            while remaining >= min {
                let Some((slot, buffer)) = self.inner.take() else {
                    break;
                };
                self.inner.counters.pooled(options.buffer_size);
                remaining = remaining.saturating_sub(options.buffer_size);
                segments.push(Segment::Pooled(slot, buffer));
            }
        }
        if remaining > 0 || segments.is_empty() {
            self.inner.counters.heap(remaining);
            segments.push(Segment::Heap(vec![0u8; remaining].into_boxed_slice()));
        }
        Ok(PoolBuf::new(segments, len, self))
    }

    /// One whole pooled buffer (or, if the pool is exhausted, a heap buffer of the same size),
    /// for a reader that does not know the request size yet (HBase `allocateOneBuffer`).
    pub fn allocate_one(&self) -> PoolBuf {
        let size = self.inner.options.buffer_size;
        let segment = match self.inner.take() {
            Some((slot, buffer)) => {
                self.inner.counters.pooled(size);
                Segment::Pooled(slot, buffer)
            }
            None => {
                self.inner.counters.heap(size);
                Segment::Heap(vec![0u8; size].into_boxed_slice())
            }
        };
        let mut segments = Segments::default();
        segments.push(segment);
        PoolBuf::new(segments, size, self)
    }

    /// Counters since the pool was built.
    pub fn stats(&self) -> PoolStats {
        let inner = &self.inner;
        inner
            .counters
            .snapshot(inner.free.len(), inner.created.load(Relaxed))
    }
}

impl Inner {
    /// A free buffer (the most recently returned: likely still in cache), or a new one while
    /// fewer than `max_buffers` exist, or `None` (exhausted). Each comes with its slot number.
    fn take(&self) -> Option<(u32, Box<[u8]>)> {
        if let Some(free) = self.free.pop() {
            return Some(free);
        }
        if let Some(created) = self.create() {
            return Some(created);
        }
        // Another thread may have returned one between our pop and our failed create.
        if let Some(free) = self.free.pop() {
            return Some(free);
        }
        self.counters.exhausted();
        None
    }

    fn create(&self) -> Option<(u32, Box<[u8]>)> {
        let max = self.free.capacity();
        let slot = self
            .created
            .fetch_update(Relaxed, Relaxed, |n| (n < max).then_some(n + 1))
            .ok()?;
        self.counters.created(self.options.buffer_size);
        Some((
            slot as u32,
            vec![0u8; self.options.buffer_size].into_boxed_slice(),
        ))
    }

    /// Returns a buffer to its slot on the free list. Only the owner of a slot returns it, once
    /// (ownership moves with the `Box`); a buffer of the wrong size or slot cannot come through
    /// the API, and would be discarded and counted rather than pooled.
    pub(crate) fn put_back(&self, slot: u32, buffer: Box<[u8]>) {
        let in_range = (slot as usize) < self.created.load(Relaxed);
        if buffer.len() != self.options.buffer_size || !in_range {
            self.counters.discarded(buffer.len());
            return;
        }
        self.free.push(slot, buffer);
    }
}
