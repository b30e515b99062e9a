//! The request-buffer designs HBASE-14490 compared, behind one interface with the fixed-size
//! [`BufferPool`], so a benchmark (or a server) can switch between them:
//!
//! - [`PlainAllocation`]: a fresh heap buffer per request (what HBase did before).
//! - [`PerConnection`]: one reusable buffer per connection, sized to that client's recent
//!   requests and replaced when a request is far from its running average (HBASE-14490's first
//!   patches).
//! - [`SharedAveragePool`]: HBase's `BoundedByteBufferPool`: a bounded queue shared by all
//!   connections, new buffers sized at a running average that only rises, buffers above a
//!   maximum size never kept, a full queue drops what is returned (HBASE-14490 v12).
//! - [`SizeClassPool`]: Hiroshi Ikeda's `ByteBufferPool` from the same issue, the seed's B: a
//!   shared free list per power-of-two capacity, small requests served by fresh buffers.
//! - [`BufferPool`]: fixed-size pooled buffers with a heap fallback (HBASE-15525 and later;
//!   Keel's choice).

use std::fmt;

use bytes::buf::UninitSlice;
use bytes::{Buf, BufMut};
use crossbeam_queue::ArrayQueue;
use keel_sync::atomic::{AtomicUsize, Ordering::Relaxed};

use crate::buf::{PoolBuf, check_advance};
use crate::error::PoolError;
use crate::options::DEFAULT_MAX_ALLOCATION;
use crate::pool::BufferPool;
use crate::stats::{Counters, PoolStats};

pub use crate::size_class::{DEFAULT_MAX_POOLED, DEFAULT_MIN_POOLED, SizeClassPool};

/// A way of getting a buffer to read one request into, and giving it back afterwards.
pub trait RequestBuffers: Send + Sync + fmt::Debug {
    /// Per-connection state (the per-connection design keeps its buffer here).
    type Connection: Send;
    /// The buffer one request is read into; it holds exactly the request's length.
    type Buffer: Buf + BufMut + Send;

    /// A short name for reports.
    fn name(&self) -> &'static str;
    /// State for a new connection.
    fn connect(&self) -> Self::Connection;
    /// A buffer for one request of `len` bytes arriving on `connection`; a length above the
    /// design's limit (default 256 MiB, HBase `hbase.ipc.max.request.size`) is refused.
    fn acquire(
        &self,
        connection: &mut Self::Connection,
        len: usize,
    ) -> Result<Self::Buffer, PoolError>;
    /// Gives the buffer back once the request has been handled.
    fn release(&self, connection: &mut Self::Connection, buffer: Self::Buffer);
    /// Counters so far.
    fn stats(&self) -> PoolStats;
}

impl RequestBuffers for BufferPool {
    type Connection = ();
    type Buffer = PoolBuf;

    fn name(&self) -> &'static str {
        "fixed-size pool"
    }

    fn connect(&self) {}

    fn acquire(&self, _connection: &mut (), len: usize) -> Result<PoolBuf, PoolError> {
        self.allocate(len)
    }

    fn release(&self, _connection: &mut (), buffer: PoolBuf) {
        drop(buffer);
    }

    fn stats(&self) -> PoolStats {
        BufferPool::stats(self)
    }
}

/// Refuses a request above a heap design's limit (by default the pool's, 256 MiB).
pub(crate) fn check_len(len: usize, limit: usize) -> Result<(), PoolError> {
    if len > limit {
        return Err(PoolError::TooLarge { len, max: limit });
    }
    Ok(())
}

/// A heap buffer that accepts exactly `limit` bytes, reused across requests by the
/// alternatives (its allocation may be larger than the request).
#[derive(Debug)]
pub struct HeapBuf {
    data: Vec<u8>,
    limit: usize,
    read: usize,
}

impl HeapBuf {
    /// Wraps `data` (cleared) to hold one request of `len` bytes, growing it if needed.
    pub(crate) fn for_request(mut data: Vec<u8>, len: usize) -> HeapBuf {
        data.clear();
        data.reserve_exact(len);
        HeapBuf {
            data,
            limit: len,
            read: 0,
        }
    }

    /// The allocation underneath, for reuse.
    pub(crate) fn into_inner(self) -> Vec<u8> {
        self.data
    }

    /// Everything written so far (whether or not it has been read).
    pub(crate) fn written(&self) -> &[u8] {
        &self.data
    }
}

impl Buf for HeapBuf {
    fn remaining(&self) -> usize {
        self.data.len() - self.read
    }

    fn chunk(&self) -> &[u8] {
        &self.data[self.read..]
    }

    fn advance(&mut self, cnt: usize) {
        check_advance(cnt, self.remaining());
        self.read += cnt;
    }
}

// SAFETY: `chunk_mut` exposes only the vector's spare capacity up to `limit` (reserved in
// `for_request`); `advance_mut` moves the length over bytes the caller has initialised, as the
// `BufMut` contract requires, and never past `limit`.
unsafe impl BufMut for HeapBuf {
    fn remaining_mut(&self) -> usize {
        self.limit - self.data.len()
    }

    unsafe fn advance_mut(&mut self, cnt: usize) {
        assert!(
            cnt <= self.remaining_mut(),
            "advance_mut {cnt} past the end of the buffer"
        );
        let len = self.data.len() + cnt;
        // SAFETY: `len <= limit <= capacity`, and the caller initialised these `cnt` bytes
        // through `chunk_mut` (the `BufMut::advance_mut` contract).
        unsafe { self.data.set_len(len) };
    }

    fn chunk_mut(&mut self) -> &mut UninitSlice {
        let room = self.limit - self.data.len();
        UninitSlice::uninit(&mut self.data.spare_capacity_mut()[..room])
    }
}

/// A new heap buffer for every request, dropped after it: HBase before pooling.
#[derive(Debug)]
pub struct PlainAllocation {
    limit: usize,
    counters: Counters,
}

impl Default for PlainAllocation {
    fn default() -> Self {
        PlainAllocation::with_limit(DEFAULT_MAX_ALLOCATION)
    }
}

impl PlainAllocation {
    /// Refusing requests above `limit` bytes (the default: the pool's, 256 MiB).
    pub fn with_limit(limit: usize) -> PlainAllocation {
        PlainAllocation {
            limit,
            counters: Counters::default(),
        }
    }
}

impl RequestBuffers for PlainAllocation {
    type Connection = ();
    type Buffer = HeapBuf;

    fn name(&self) -> &'static str {
        "plain allocation"
    }

    fn connect(&self) {}

    fn acquire(&self, _connection: &mut (), len: usize) -> Result<HeapBuf, PoolError> {
        check_len(len, self.limit)?;
        self.counters.created(len);
        self.counters.heap(len);
        Ok(HeapBuf::for_request(Vec::with_capacity(len), len))
    }

    fn release(&self, _connection: &mut (), buffer: HeapBuf) {
        self.counters.discarded(buffer.data.capacity());
    }

    fn stats(&self) -> PoolStats {
        self.counters.snapshot(0, 0)
    }
}

/// One reusable buffer per connection (HBASE-14490's first patches): sized to the client's
/// recent requests, replaced when a request does not fit or is far smaller than the running
/// average.
#[derive(Debug)]
pub struct PerConnection {
    /// A buffer more than this many times the running average is replaced by a smaller one.
    pub shrink_factor: usize,
    limit: usize,
    counters: Counters,
}

impl Default for PerConnection {
    fn default() -> Self {
        PerConnection::with_limit(DEFAULT_MAX_ALLOCATION)
    }
}

impl PerConnection {
    /// Refusing requests above `limit` bytes (the default: the pool's, 256 MiB).
    pub fn with_limit(limit: usize) -> PerConnection {
        PerConnection {
            shrink_factor: 4,
            limit,
            counters: Counters::default(),
        }
    }

    /// The connection has closed: its kept buffer is discarded (and counted), and so is any
    /// buffer a request still in flight returns to it later.
    pub fn close(&self, connection: &mut ConnectionBuffer) {
        connection.closed = true;
        if let Some(buffer) = connection.buffer.take() {
            self.counters.discarded(buffer.capacity());
        }
    }
}

/// The state [`PerConnection`] keeps for one connection.
#[derive(Debug, Default)]
pub struct ConnectionBuffer {
    buffer: Option<Vec<u8>>,
    average: f64,
    requests: u64,
    closed: bool,
}

impl RequestBuffers for PerConnection {
    type Connection = ConnectionBuffer;
    type Buffer = HeapBuf;

    fn name(&self) -> &'static str {
        "per-connection buffer"
    }

    fn connect(&self) -> ConnectionBuffer {
        ConnectionBuffer::default()
    }

    fn acquire(&self, connection: &mut ConnectionBuffer, len: usize) -> Result<HeapBuf, PoolError> {
        check_len(len, self.limit)?;
        connection.requests += 1;
        // Running average over the connection's requests, weighting recent ones more.
        let weight = 1.0 / (connection.requests.min(16) as f64);
        connection.average += (len as f64 - connection.average) * weight;
        let wanted = len.max(connection.average as usize);
        let keep = connection.buffer.take().filter(|b| {
            let capacity = b.capacity();
            let fits = capacity >= len;
            let oversized = capacity > self.shrink_factor * wanted.max(1);
            if !fits || oversized {
                self.counters.discarded(capacity);
            }
            fits && !oversized
        });
        let buffer = keep.unwrap_or_else(|| {
            self.counters.created(wanted);
            self.counters.heap(wanted);
            Vec::with_capacity(wanted)
        });
        Ok(HeapBuf::for_request(buffer, len))
    }

    /// Keeps the buffer as the connection's; if the connection already has one again (a
    /// request arrived while this one was still held), the larger is kept and the other
    /// discarded and counted.
    fn release(&self, connection: &mut ConnectionBuffer, buffer: HeapBuf) {
        let buffer = buffer.into_inner();
        if connection.closed {
            self.counters.discarded(buffer.capacity());
            return;
        }
        let keep = match connection.buffer.take() {
            Some(held) if held.capacity() >= buffer.capacity() => {
                self.counters.discarded(buffer.capacity());
                held
            }
            Some(held) => {
                self.counters.discarded(held.capacity());
                buffer
            }
            None => buffer,
        };
        connection.buffer = Some(keep);
    }

    fn stats(&self) -> PoolStats {
        self.counters.snapshot(0, 0)
    }
}

/// HBase's `BoundedByteBufferPool` (HBASE-13142, used for requests by HBASE-14490 v12): a
/// bounded queue shared by all connections; new buffers are sized at a running average that
/// only rises (from 16 KiB, HBase `hbase.ipc.server.reservoir.initial.buffer.size`); buffers
/// above 1 MiB (`hbase.ipc.server.reservoir.max.buffer.size`) are not kept, and a full queue
/// drops what is returned.
#[derive(Debug)]
pub struct SharedAveragePool {
    queue: ArrayQueue<Vec<u8>>,
    max_buffer_size: usize,
    limit: usize,
    running_average: AtomicUsize,
    returned: AtomicUsize,
    returned_bytes: AtomicUsize,
    counters: Counters,
}

impl SharedAveragePool {
    /// A pool keeping at most `max_count` buffers (HBase `hbase.ipc.server.reservoir.initial.max`,
    /// default 2 × handler count).
    pub fn new(max_count: usize) -> SharedAveragePool {
        SharedAveragePool {
            queue: ArrayQueue::new(max_count.max(1)),
            max_buffer_size: 1024 * 1024,
            limit: DEFAULT_MAX_ALLOCATION,
            running_average: AtomicUsize::new(16 * 1024),
            returned: AtomicUsize::new(0),
            returned_bytes: AtomicUsize::new(0),
            counters: Counters::default(),
        }
    }

    /// Refusing requests above `limit` bytes (the default: the pool's, 256 MiB).
    pub fn with_limit(self, limit: usize) -> SharedAveragePool {
        SharedAveragePool { limit, ..self }
    }
}

impl RequestBuffers for SharedAveragePool {
    type Connection = ();
    type Buffer = HeapBuf;

    fn name(&self) -> &'static str {
        "shared running-average pool"
    }

    fn connect(&self) {}

    fn acquire(&self, _connection: &mut (), len: usize) -> Result<HeapBuf, PoolError> {
        check_len(len, self.limit)?;
        let pooled = self.queue.pop().filter(|b| {
            let fits = b.capacity() >= len;
            if !fits {
                self.counters.discarded(b.capacity());
            }
            fits
        });
        let buffer = pooled.unwrap_or_else(|| {
            let size = len.max(self.running_average.load(Relaxed));
            self.counters.created(size);
            self.counters.heap(size);
            Vec::with_capacity(size)
        });
        Ok(HeapBuf::for_request(buffer, len))
    }

    fn release(&self, _connection: &mut (), buffer: HeapBuf) {
        let buffer = buffer.into_inner();
        let capacity = buffer.capacity();
        if capacity > self.max_buffer_size {
            self.counters.discarded(capacity);
            return;
        }
        let count = self.returned.fetch_add(1, Relaxed) + 1;
        let total = self.returned_bytes.fetch_add(capacity, Relaxed) + capacity;
        self.running_average.fetch_max(total / count, Relaxed);
        if let Err(buffer) = self.queue.push(buffer) {
            self.counters.discarded(buffer.capacity());
        }
    }

    fn stats(&self) -> PoolStats {
        self.counters.snapshot(self.queue.len(), 0)
    }
}
