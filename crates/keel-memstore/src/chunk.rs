//! MSLAB: cell bytes copied into large chunks taken from a bounded, shared pool.
//!
//! A chunk is one `BytesMut` allocation. Each copied cell is split off its front and frozen,
//! so every cell is a reference-counted slice of the chunk and no insert allocates. The
//! remainder handle is kept; when its segment is cleared it goes to the pool, which reuses the
//! chunk only once `BytesMut::try_reclaim` finds it the sole owner, that is, once no reader
//! still holds a cell from it. No `unsafe` is involved: the `bytes` crate's reference count is
//! the proof that a chunk is free.

use std::sync::atomic::{AtomicU64, Ordering};

use bytes::{Bytes, BytesMut};
use keel_sync::Mutex;

/// Counters of a [`ChunkPool`], read without a lock.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChunkPoolStats {
    /// Chunks allocated from the heap.
    pub created: u64,
    /// Chunks handed out again after every cell in them was dropped.
    pub reused: u64,
    /// Chunks dropped because the pool was full when they came back.
    pub discarded: u64,
    /// Chunks waiting in the pool (free, or returned but still referenced by a reader).
    pub pooled: u64,
}

/// A bounded pool of MSLAB chunks shared by memstores (HBase's `ChunkCreator` pool).
#[derive(Debug)]
pub struct ChunkPool {
    chunk_size: usize,
    max_pooled: usize,
    returned: Mutex<Vec<BytesMut>>,
    created: AtomicU64,
    reused: AtomicU64,
    discarded: AtomicU64,
}

impl ChunkPool {
    /// A pool of `chunk_size`-byte chunks keeping at most `max_pooled` returned chunks (HBase
    /// sizes this from `hbase.hregion.memstore.chunkpool.maxsize`, a fraction of the global
    /// memstore; here it is a count).
    pub fn new(chunk_size: usize, max_pooled: usize) -> ChunkPool {
        ChunkPool {
            chunk_size: chunk_size.max(1),
            max_pooled,
            returned: Mutex::new(Vec::new()),
            created: AtomicU64::new(0),
            reused: AtomicU64::new(0),
            discarded: AtomicU64::new(0),
        }
    }

    /// Bytes per chunk.
    pub fn chunk_size(&self) -> usize {
        self.chunk_size
    }

    /// The pool's counters.
    pub fn stats(&self) -> ChunkPoolStats {
        ChunkPoolStats {
            created: self.created.load(Ordering::Relaxed),
            reused: self.reused.load(Ordering::Relaxed),
            discarded: self.discarded.load(Ordering::Relaxed),
            pooled: self.returned.lock().len() as u64,
        }
    }

    /// An empty chunk: a returned one nobody references any more, else a new one.
    pub(crate) fn take(&self) -> BytesMut {
        {
            let mut returned = self.returned.lock();
            let reclaimable = returned.iter_mut().position(|chunk| {
                chunk.clear();
                chunk.try_reclaim(self.chunk_size)
            });
            if let Some(index) = reclaimable {
                self.reused.fetch_add(1, Ordering::Relaxed);
                return returned.swap_remove(index);
            }
        }
        self.created.fetch_add(1, Ordering::Relaxed);
        BytesMut::with_capacity(self.chunk_size)
    }

    /// Takes back the chunks of a cleared segment; those beyond the bound are dropped (their
    /// memory is freed when the last cell in them is).
    pub(crate) fn give_back(&self, chunks: Vec<BytesMut>) {
        let mut returned = self.returned.lock();
        for chunk in chunks {
            if returned.len() < self.max_pooled {
                returned.push(chunk);
            } else {
                self.discarded.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// One segment's allocator: bump allocation in its current chunk.
#[derive(Debug)]
pub(crate) struct Mslab {
    state: Mutex<MslabState>,
}

#[derive(Debug, Default)]
struct MslabState {
    current: Option<BytesMut>,
    full: Vec<BytesMut>,
}

impl Mslab {
    pub(crate) fn new() -> Mslab {
        Mslab {
            state: Mutex::new(MslabState::default()),
        }
    }

    /// Copies `parts` back to back into a chunk and returns them as one slice.
    pub(crate) fn copy(&self, pool: &ChunkPool, parts: [&[u8]; 2], len: usize) -> Bytes {
        let mut state = self.state.lock();
        let fits = state
            .current
            .as_ref()
            .is_some_and(|chunk| chunk.capacity() - chunk.len() >= len);
        if !fits && let Some(full) = state.current.take() {
            state.full.push(full);
        }
        let chunk = state.current.get_or_insert_with(|| pool.take());
        for part in parts {
            chunk.extend_from_slice(part);
        }
        chunk.split_to(len).freeze()
    }

    /// Hands over the chunks this allocator used, for the pool once the segment is cleared.
    /// Cells already copied stay valid: each holds its own reference to its chunk.
    pub(crate) fn take_chunks(&self) -> Vec<BytesMut> {
        let mut state = self.state.lock();
        let mut chunks = std::mem::take(&mut state.full);
        chunks.extend(state.current.take());
        chunks
    }
}
