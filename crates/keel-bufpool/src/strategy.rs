//! Any of the five request-buffer designs, chosen at run time, behind one type a server can
//! hold: [`RequestPool`] → one [`RequestConnection`] per client → one [`RequestBuf`] per request,
//! frozen into `Bytes` that give the buffer back to its design when the last clone or slice is
//! dropped. The server never has to know which design it runs, or when a request's bytes are
//! finished with (a handler on another thread may hold them after the reader has moved on).

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use bytes::buf::UninitSlice;
use bytes::{BufMut, Bytes};
use keel_sync::Mutex;

use crate::alternatives::{
    ConnectionBuffer, HeapBuf, PerConnection, PlainAllocation, RequestBuffers, SharedAveragePool,
    SizeClassPool,
};
use crate::buf::PoolBuf;
use crate::error::PoolError;
use crate::options::PoolOptions;
use crate::pool::BufferPool;
use crate::stats::PoolStats;

/// Which request-buffer design (HBASE-14490's alternatives and HBase's current allocator).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Strategy {
    /// [`BufferPool`]: fixed-size pooled buffers with a heap fallback (HBase 2's
    /// `ByteBuffAllocator`, `hbase.server.allocator.pool.enabled = true`).
    #[default]
    FixedPool,
    /// [`PlainAllocation`]: a fresh heap buffer per request
    /// (`hbase.server.allocator.pool.enabled = false`).
    Plain,
    /// [`PerConnection`]: one reusable buffer per connection.
    PerConnection,
    /// [`SharedAveragePool`]: HBase 1's `BoundedByteBufferPool` (HBASE-14490 v12).
    SharedAverage,
    /// [`SizeClassPool`]: Hiroshi Ikeda's `ByteBufferPool` (HBASE-14490), power-of-two classes.
    SizeClass,
}

impl Strategy {
    /// Every design, the default first.
    pub const ALL: [Strategy; 5] = [
        Strategy::FixedPool,
        Strategy::Plain,
        Strategy::PerConnection,
        Strategy::SharedAverage,
        Strategy::SizeClass,
    ];

    /// The name [`FromStr`] accepts: `fixed-pool`, `plain`, `per-connection`, `shared-average`,
    /// `size-class`.
    pub fn name(self) -> &'static str {
        match self {
            Strategy::FixedPool => "fixed-pool",
            Strategy::Plain => "plain",
            Strategy::PerConnection => "per-connection",
            Strategy::SharedAverage => "shared-average",
            Strategy::SizeClass => "size-class",
        }
    }
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Strategy {
    type Err = String;

    fn from_str(s: &str) -> Result<Strategy, String> {
        Strategy::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| {
                format!(
                    "unknown request-buffer strategy {s:?}: expected one of {}",
                    Strategy::ALL.map(Strategy::name).join(", ")
                )
            })
    }
}

/// The design itself; the heap designs sit behind `Arc`s their buffers point back to.
#[derive(Clone, Debug)]
enum Design {
    Fixed(BufferPool),
    Plain(Arc<PlainAllocation>),
    PerConnection(Arc<PerConnection>),
    SharedAverage(Arc<SharedAveragePool>),
    SizeClass(Arc<SizeClassPool>),
}

/// A request-buffer design chosen at run time, shared by every connection. Cloning shares it.
///
/// ```
/// use bytes::BufMut;
/// use keel_bufpool::{PoolOptions, RequestPool, Strategy};
///
/// let pool = RequestPool::new(Strategy::SharedAverage, PoolOptions::default());
/// let mut connection = pool.connect();
/// let mut request = connection.allocate(5)?;
/// request.put_slice(b"hello");
/// let bytes = request.freeze();
/// assert_eq!(&bytes[..], b"hello");
/// drop(bytes); // the buffer is back in the shared pool
/// assert_eq!(pool.stats().free_buffers, 1);
/// # Ok::<(), keel_bufpool::PoolError>(())
/// ```
#[derive(Clone, Debug)]
pub struct RequestPool {
    strategy: Strategy,
    design: Design,
}

impl RequestPool {
    /// A pool of the given design. The fixed pool takes every option; the heap designs take
    /// the request limit ([`PoolOptions::max_allocation`]), and the shared running-average
    /// pool keeps at most [`PoolOptions::max_buffers`] buffers, and the size-class pool at most
    /// the fixed pool's bytes ([`PoolOptions::max_buffers`] × [`PoolOptions::buffer_size`]).
    ///
    /// The fixed pool gives a request larger than one buffer a chain of pooled buffers, as
    /// [`BufferPool::allocate`] does (HBase's `MultiByteBuff`): read it with
    /// [`RequestBuf::freeze_parts`], which keeps the chain; [`RequestBuf::freeze`] would copy
    /// it into one piece.
    pub fn new(strategy: Strategy, options: PoolOptions) -> RequestPool {
        let limit = options.max_allocation;
        let design = match strategy {
            Strategy::FixedPool => Design::Fixed(BufferPool::new(options)),
            Strategy::Plain => Design::Plain(Arc::new(PlainAllocation::with_limit(limit))),
            Strategy::PerConnection => {
                Design::PerConnection(Arc::new(PerConnection::with_limit(limit)))
            }
            Strategy::SharedAverage => Design::SharedAverage(Arc::new(
                SharedAveragePool::new(options.max_buffers).with_limit(limit),
            )),
            Strategy::SizeClass => Design::SizeClass(Arc::new(
                SizeClassPool::new(options.max_buffers.saturating_mul(options.buffer_size))
                    .with_limit(limit),
            )),
        };
        RequestPool { strategy, design }
    }

    /// Which design this is.
    pub fn strategy(&self) -> Strategy {
        self.strategy
    }

    /// State for a new connection (the per-connection design keeps its buffer there).
    pub fn connect(&self) -> RequestConnection {
        let buffer = match &self.design {
            Design::PerConnection(design) => Some(Arc::new(Mutex::new(design.connect()))),
            _ => None,
        };
        RequestConnection {
            design: self.design.clone(),
            buffer,
        }
    }

    /// The design's counters so far.
    pub fn stats(&self) -> PoolStats {
        match &self.design {
            Design::Fixed(d) => d.stats(),
            Design::Plain(d) => d.stats(),
            Design::PerConnection(d) => d.stats(),
            Design::SharedAverage(d) => d.stats(),
            Design::SizeClass(d) => d.stats(),
        }
    }
}

/// One connection's handle on a [`RequestPool`]. Dropping it (the connection closed) discards
/// the per-connection design's buffer, now or when the request holding it is done.
#[derive(Debug)]
pub struct RequestConnection {
    design: Design,
    /// The per-connection design's buffer, shared with the requests that will return it.
    buffer: Option<Arc<Mutex<ConnectionBuffer>>>,
}

impl RequestConnection {
    /// A buffer that holds exactly `len` bytes; a length above the limit is refused.
    pub fn allocate(&mut self, len: usize) -> Result<RequestBuf, PoolError> {
        let mut none = ();
        let (buffer, home) = match &self.design {
            Design::Fixed(d) => return d.allocate(len).map(|b| RequestBuf(Held::Pooled(b))),
            Design::Plain(d) => (d.acquire(&mut none, len)?, Home::Plain(Arc::clone(d))),
            Design::SharedAverage(d) => (
                d.acquire(&mut none, len)?,
                Home::SharedAverage(Arc::clone(d)),
            ),
            Design::SizeClass(d) => (d.acquire(&mut none, len)?, Home::SizeClass(Arc::clone(d))),
            Design::PerConnection(d) => {
                let slot = self
                    .buffer
                    .get_or_insert_with(|| Arc::new(Mutex::new(d.connect())));
                let buffer = d.acquire(&mut slot.lock(), len)?;
                (buffer, Home::PerConnection(Arc::clone(d), Arc::clone(slot)))
            }
        };
        Ok(RequestBuf(Held::Heap(Returning {
            buffer: Some(buffer),
            home,
        })))
    }
}

impl Drop for RequestConnection {
    fn drop(&mut self) {
        if let (Design::PerConnection(design), Some(slot)) = (&self.design, &self.buffer) {
            design.close(&mut slot.lock());
        }
    }
}

/// Where a heap design's buffer goes back to.
#[derive(Debug)]
enum Home {
    Plain(Arc<PlainAllocation>),
    PerConnection(Arc<PerConnection>, Arc<Mutex<ConnectionBuffer>>),
    SharedAverage(Arc<SharedAveragePool>),
    SizeClass(Arc<SizeClassPool>),
}

/// A heap design's buffer, released to its design when dropped (as a [`RequestBuf`] or as the
/// owner inside frozen `Bytes`).
#[derive(Debug)]
struct Returning {
    buffer: Option<HeapBuf>,
    home: Home,
}

impl AsRef<[u8]> for Returning {
    fn as_ref(&self) -> &[u8] {
        self.buffer.as_ref().map_or(&[], HeapBuf::written)
    }
}

impl Drop for Returning {
    fn drop(&mut self) {
        let Some(buffer) = self.buffer.take() else {
            return;
        };
        match &self.home {
            Home::Plain(d) => d.release(&mut (), buffer),
            Home::SharedAverage(d) => d.release(&mut (), buffer),
            Home::SizeClass(d) => d.release(&mut (), buffer),
            Home::PerConnection(d, slot) => d.release(&mut slot.lock(), buffer),
        }
    }
}

#[derive(Debug)]
enum Held {
    Pooled(PoolBuf),
    Heap(Returning),
}

/// One request's buffer from a [`RequestPool`]: write exactly its length through [`BufMut`],
/// then [`RequestBuf::freeze`] it. Dropping it unfrozen returns the buffer at once.
#[derive(Debug)]
pub struct RequestBuf(Held);

impl RequestBuf {
    /// Bytes written so far.
    pub fn written(&self) -> usize {
        match &self.0 {
            Held::Pooled(b) => b.written(),
            Held::Heap(r) => r.as_ref().len(),
        }
    }

    /// The written bytes as one contiguous `Bytes`: without a copy, except for the fixed pool's
    /// chain (a request larger than one buffer), which is copied into one piece; prefer
    /// [`RequestBuf::freeze_parts`] where the reader takes a chain. The buffer goes back to its
    /// design when the last clone or slice is dropped.
    pub fn freeze(self) -> Bytes {
        match self.0 {
            Held::Pooled(b) => b.into_bytes(),
            Held::Heap(r) => Bytes::from_owner(r),
        }
    }

    /// The written bytes as they lie, one `Bytes` per buffer, never copied: one part except for
    /// the fixed pool's chain. Each buffer goes back to its design when the last clone or slice
    /// of its part is dropped.
    pub fn freeze_parts(self) -> Vec<Bytes> {
        match self.0 {
            Held::Pooled(b) => b.freeze().parts().to_vec(),
            Held::Heap(r) => vec![Bytes::from_owner(r)],
        }
    }

    fn inner(&mut self) -> &mut dyn ForwardMut {
        match &mut self.0 {
            Held::Pooled(b) => b,
            Held::Heap(r) => r
                .buffer
                .as_mut()
                .expect("a live RequestBuf always holds its buffer"),
        }
    }
}

/// The two `BufMut` methods [`RequestBuf`] forwards through one `&mut dyn`.
trait ForwardMut {
    /// # Safety
    /// As `BufMut::advance_mut`.
    unsafe fn advance_mut(&mut self, cnt: usize);
    fn chunk_mut(&mut self) -> &mut UninitSlice;
}

impl<B: BufMut> ForwardMut for B {
    unsafe fn advance_mut(&mut self, cnt: usize) {
        // SAFETY: the caller upholds `BufMut::advance_mut`'s contract, forwarded unchanged.
        unsafe { BufMut::advance_mut(self, cnt) }
    }

    fn chunk_mut(&mut self) -> &mut UninitSlice {
        BufMut::chunk_mut(self)
    }
}

// SAFETY: every method forwards to the held buffer's own `BufMut` implementation (`PoolBuf`'s or
// `HeapBuf`'s, each of which upholds the contract), so `chunk_mut` exposes only memory that
// buffer may hand out and `advance_mut` moves over bytes the caller initialised.
unsafe impl BufMut for RequestBuf {
    fn remaining_mut(&self) -> usize {
        match &self.0 {
            Held::Pooled(b) => BufMut::remaining_mut(b),
            Held::Heap(r) => r.buffer.as_ref().map_or(0, BufMut::remaining_mut),
        }
    }

    unsafe fn advance_mut(&mut self, cnt: usize) {
        // SAFETY: the caller upholds `advance_mut`'s contract for this buffer, which is the
        // held buffer's.
        unsafe { self.inner().advance_mut(cnt) }
    }

    fn chunk_mut(&mut self) -> &mut UninitSlice {
        self.inner().chunk_mut()
    }
}
