//! [`PoolBuf`]: an owned request buffer made of pooled and heap segments, usable as one
//! `Buf`/`BufMut`, and [`FrozenBuf`], its read-only `Bytes` form.

use std::fmt;

use bytes::buf::UninitSlice;
use bytes::{Buf, BufMut, Bytes, BytesMut};

use crate::pool::{BufferPool, Inner};

/// The `Buf::advance` precondition, shared by every buffer type here: moving past the data
/// would hand out bytes that were never written.
pub(crate) fn check_advance(cnt: usize, left: usize) {
    assert!(cnt <= left, "advance {cnt} past the {left} bytes left");
}

/// One piece of a buffer: a whole pooled buffer, or a heap allocation of exactly its size.
pub(crate) enum Segment {
    /// A pooled buffer and its slot on the pool's free list.
    Pooled(u32, Box<[u8]>),
    Heap(Box<[u8]>),
}

impl Segment {
    fn bytes(&self) -> &[u8] {
        match self {
            Segment::Pooled(_, b) | Segment::Heap(b) => b,
        }
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        match self {
            Segment::Pooled(_, b) | Segment::Heap(b) => b,
        }
    }
}

/// The segments of a buffer; one segment (the common case) needs no extra allocation.
#[derive(Default)]
pub(crate) enum Segments {
    #[default]
    Empty,
    One(Segment),
    Many(Vec<Segment>),
}

impl Segments {
    pub(crate) fn push(&mut self, segment: Segment) {
        *self = match std::mem::take(self) {
            Segments::Empty => Segments::One(segment),
            Segments::One(first) => Segments::Many(vec![first, segment]),
            Segments::Many(mut all) => {
                all.push(segment);
                Segments::Many(all)
            }
        };
    }

    pub(crate) fn is_empty(&self) -> bool {
        matches!(self, Segments::Empty)
    }

    fn as_slice(&self) -> &[Segment] {
        match self {
            Segments::Empty => &[],
            Segments::One(one) => std::slice::from_ref(one),
            Segments::Many(all) => all,
        }
    }

    fn as_mut_slice(&mut self) -> &mut [Segment] {
        match self {
            Segments::Empty => &mut [],
            Segments::One(one) => std::slice::from_mut(one),
            Segments::Many(all) => all,
        }
    }

    fn into_vec(self) -> Vec<Segment> {
        match self {
            Segments::Empty => Vec::new(),
            Segments::One(one) => vec![one],
            Segments::Many(all) => all,
        }
    }
}

/// An owned buffer for one request of a fixed length: one pooled buffer, a chain of pooled
/// buffers (with a heap tail), or a heap buffer. Write it through [`BufMut`] (up to
/// [`PoolBuf::capacity`] bytes), read back what was written through [`Buf`], or
/// [`PoolBuf::freeze`] it into shareable `Bytes`. Dropping it returns its pooled buffers to the
/// pool; each buffer is owned by exactly one `PoolBuf` or frozen part at a time, so none can be
/// returned twice.
pub struct PoolBuf {
    segments: Segments,
    capacity: usize,
    written: usize,
    read: usize,
    /// The pool to return pooled segments to; `None` for a heap-only buffer, which then costs no
    /// shared reference count.
    pool: Option<BufferPool>,
}

impl fmt::Debug for PoolBuf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PoolBuf")
            .field("capacity", &self.capacity)
            .field("written", &self.written)
            .field("read", &self.read)
            .field("pooled_segments", &self.pooled_segments())
            .field("segments", &self.segments.as_slice().len())
            .finish()
    }
}

impl PoolBuf {
    pub(crate) fn new(segments: Segments, capacity: usize, pool: &BufferPool) -> PoolBuf {
        let pooled = segments
            .as_slice()
            .iter()
            .any(|s| matches!(s, Segment::Pooled(..)));
        let pool = pooled.then(|| pool.clone());
        PoolBuf {
            segments,
            capacity,
            written: 0,
            read: 0,
            pool,
        }
    }

    /// Bytes this buffer holds when full (the length it was allocated for).
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Bytes written so far.
    pub fn written(&self) -> usize {
        self.written
    }

    /// How many of its segments are pooled buffers.
    pub fn pooled_segments(&self) -> usize {
        let pooled = |s: &&Segment| matches!(s, Segment::Pooled(..));
        self.segments.as_slice().iter().filter(pooled).count()
    }

    /// How many segments (pooled and heap) make up the buffer.
    pub fn segment_count(&self) -> usize {
        self.segments.as_slice().len()
    }

    /// The written bytes, segment by segment, from the start (ignoring the read cursor).
    pub fn written_chunks(&self) -> impl Iterator<Item = &[u8]> {
        let mut start = 0;
        let written = self.written;
        self.segments.as_slice().iter().map_while(move |segment| {
            if start >= written {
                return None;
            }
            let bytes = segment.bytes();
            let used = bytes.len().min(written - start);
            start += used;
            Some(&bytes[..used])
        })
    }

    /// The written bytes as one contiguous `Bytes`: for a one-segment buffer (most requests)
    /// without a copy and with no allocation but the `Bytes` owner; a chain is copied into one
    /// piece. Pooled memory goes back to the pool when the last `Bytes` sharing it is dropped.
    pub fn into_bytes(mut self) -> Bytes {
        if !matches!(self.segments, Segments::One(_)) {
            return self.freeze().into_contiguous();
        }
        let Segments::One(segment) = std::mem::take(&mut self.segments) else {
            unreachable!("checked above")
        };
        let used = segment.bytes().len().min(self.written);
        self.frozen_segment(segment).slice(..used)
    }

    /// One segment as `Bytes` that return it to the pool (if pooled) when the last drops.
    fn frozen_segment(&self, segment: Segment) -> Bytes {
        match segment {
            Segment::Pooled(slot, buffer) => {
                let Some(pool) = &self.pool else {
                    unreachable!("a buffer with pooled segments keeps its pool")
                };
                Bytes::from_owner(Returner {
                    slot,
                    buffer: Some(buffer),
                    pool: pool.inner.clone(),
                })
            }
            Segment::Heap(buffer) => Bytes::from(buffer),
        }
    }

    /// Turns the written bytes into shareable, read-only `Bytes` (one part per segment, no copy).
    /// Pooled memory goes back to the pool when the last `Bytes` sharing it is dropped.
    pub fn freeze(mut self) -> FrozenBuf {
        let segments = std::mem::take(&mut self.segments).into_vec();
        let mut parts = Vec::with_capacity(segments.len());
        let mut start = 0;
        for segment in segments {
            let used = segment
                .bytes()
                .len()
                .min(self.written.saturating_sub(start));
            start += used;
            let bytes = self.frozen_segment(segment);
            // An unused segment is dropped here, which returns a pooled buffer at once.
            if used > 0 {
                parts.push(bytes.slice(..used));
            }
        }
        FrozenBuf { parts, part: 0 }
    }

    /// The segment holding byte `offset` and where that segment starts.
    fn locate(&self, offset: usize) -> Option<(usize, usize)> {
        // Most requests are one segment: no walk.
        if let Segments::One(segment) = &self.segments {
            return (offset < segment.bytes().len()).then_some((0, 0));
        }
        let mut start = 0;
        for (index, segment) in self.segments.as_slice().iter().enumerate() {
            let end = start + segment.bytes().len();
            if offset < end {
                return Some((index, start));
            }
            start = end;
        }
        None
    }
}

impl Drop for PoolBuf {
    fn drop(&mut self) {
        let Some(pool) = &self.pool else { return };
        for segment in std::mem::take(&mut self.segments).into_vec() {
            if let Segment::Pooled(slot, buffer) = segment {
                pool.inner.put_back(slot, buffer);
            }
        }
    }
}

impl Buf for PoolBuf {
    fn remaining(&self) -> usize {
        self.written - self.read
    }

    fn chunk(&self) -> &[u8] {
        let Some((index, start)) = self.locate(self.read) else {
            return &[];
        };
        let bytes = self.segments.as_slice()[index].bytes();
        let end = bytes.len().min(self.written - start);
        bytes.get(self.read - start..end).unwrap_or(&[])
    }

    fn advance(&mut self, cnt: usize) {
        check_advance(cnt, self.remaining());
        self.read += cnt;
    }
}

// SAFETY: `chunk_mut` only ever exposes memory inside this buffer's own segments, below
// `capacity`; every segment is fully initialised (zeroed when created), so `advance_mut` can
// never make uninitialised bytes readable, and it refuses to move past `capacity`.
unsafe impl BufMut for PoolBuf {
    fn remaining_mut(&self) -> usize {
        self.capacity - self.written
    }

    unsafe fn advance_mut(&mut self, cnt: usize) {
        assert!(
            cnt <= self.remaining_mut(),
            "advance_mut {cnt} past the end of the buffer"
        );
        self.written += cnt;
    }

    fn chunk_mut(&mut self) -> &mut UninitSlice {
        let written = self.written;
        let capacity = self.capacity;
        let Some((index, start)) = self.locate(written) else {
            return UninitSlice::new(&mut []);
        };
        let bytes = self.segments.as_mut_slice()[index].bytes_mut();
        let end = bytes.len().min(capacity - start);
        UninitSlice::new(&mut bytes[written - start..end])
    }
}

/// Owns a pooled buffer inside `Bytes`; returns it to the pool when the last `Bytes` goes.
struct Returner {
    slot: u32,
    buffer: Option<Box<[u8]>>,
    pool: keel_sync::Arc<Inner>,
}

impl AsRef<[u8]> for Returner {
    fn as_ref(&self) -> &[u8] {
        self.buffer.as_deref().unwrap_or(&[])
    }
}

impl Drop for Returner {
    fn drop(&mut self) {
        if let Some(buffer) = self.buffer.take() {
            self.pool.put_back(self.slot, buffer);
        }
    }
}

/// The read-only form of a [`PoolBuf`]: one `Bytes` per segment that held data. Clone the parts
/// freely; pooled memory returns to the pool when the last clone is dropped.
#[derive(Clone, Debug, Default)]
pub struct FrozenBuf {
    parts: Vec<Bytes>,
    part: usize,
}

impl FrozenBuf {
    /// The parts not yet consumed through [`Buf`].
    pub fn parts(&self) -> &[Bytes] {
        &self.parts[self.part..]
    }

    /// One contiguous `Bytes`: free for a single part, a copy for a chain.
    pub fn into_contiguous(self) -> Bytes {
        match self.parts() {
            [] => Bytes::new(),
            [one] => one.clone(),
            many => {
                let mut all = BytesMut::with_capacity(many.iter().map(Bytes::len).sum());
                for part in many {
                    all.extend_from_slice(part);
                }
                all.freeze()
            }
        }
    }
}

impl Buf for FrozenBuf {
    fn remaining(&self) -> usize {
        self.parts().iter().map(Bytes::len).sum()
    }

    fn chunk(&self) -> &[u8] {
        self.parts().first().map_or(&[], |b| b.as_ref())
    }

    fn advance(&mut self, mut cnt: usize) {
        check_advance(cnt, self.remaining());
        while cnt > 0 {
            let Some(part) = self.parts.get_mut(self.part) else {
                return;
            };
            let step = cnt.min(part.len());
            part.advance(step);
            cnt -= step;
            if part.is_empty() {
                self.part += 1;
            }
        }
    }
}
