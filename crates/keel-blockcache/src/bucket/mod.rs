//! [`BucketCache`]: HBase's L2 cache. A large preallocated area cut into size-classed slots; new
//! blocks wait in a RAM staging map (readable at once) and on bounded writer queues; writer
//! threads copy them into slots and publish them in the backing map. A slot is never freed or
//! reused while a reader copies from it: readers hold the read side of the slot's id lock and
//! re-check the entry under it; eviction takes the write side before it frees the slot.

mod allocator;
mod area;
mod evict;

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::io;
use std::path::PathBuf;
use std::sync::Arc;

use bytes::Bytes;
use keel_sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use keel_sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use keel_sync::thread::{JoinHandle, spawn_named};
use keel_sync::{CachePadded, Mutex};

use self::allocator::Allocator;
pub use self::allocator::DEFAULT_SIZE_CLASSES;
use self::area::Area;
use crate::cache::{BlockCache, BlockKey, BlockPriority, CacheCounters, CacheStats, KeyHasher};
use crate::id_lock::{IdReadWriteLock, PoolKind};

/// Where a bucket cache's area lives (HBase `hbase.bucketcache.ioengine`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum AreaKind {
    /// Process memory (HBase's "offheap"; here an ordinary heap allocation, made once).
    #[default]
    Heap,
    /// A file mapped into memory (HBase's "file"/"mmap"); created or truncated at this path.
    Mapped(PathBuf),
}

/// Sizes and policy of a [`BucketCache`], with HBase's defaults.
#[derive(Clone, Debug, PartialEq)]
pub struct BucketOptions {
    /// Bytes of the area (HBase `hbase.bucketcache.size`), rounded down to whole buckets.
    pub capacity_bytes: usize,
    /// Where the area lives.
    pub area: AreaKind,
    /// Slot sizes (HBase `hbase.bucketcache.bucket.sizes`, 5 KiB … 513 KiB).
    pub size_classes: Vec<usize>,
    /// Writer threads (HBase `hbase.bucketcache.writer.threads`, 3).
    pub writer_threads: usize,
    /// Queue length per writer (HBase `hbase.bucketcache.writer.queuelength`, 64); a full queue
    /// drops the block and counts a failed insert.
    pub writer_queue_len: usize,
    /// Priority shares, as in the LRU cache (HBase `hbase.bucketcache.{single,multi,memory}.factor`).
    pub shares: [f64; 3],
    /// Eviction frees slots down to this fraction of the area (HBase
    /// `hbase.bucketcache.minfactor`, 0.85).
    pub min_factor: f64,
    /// Pool for the per-slot and per-block id locks (HBase uses a soft pool here, HBASE-17747).
    pub id_lock_pool: PoolKind,
}

impl Default for BucketOptions {
    fn default() -> Self {
        BucketOptions {
            capacity_bytes: 256 * 1024 * 1024,
            area: AreaKind::Heap,
            size_classes: DEFAULT_SIZE_CLASSES.to_vec(),
            writer_threads: 3,
            writer_queue_len: 64,
            shares: [0.25, 0.50, 0.25],
            min_factor: 0.85,
            id_lock_pool: PoolKind::Soft {
                max_entries: 100_000,
            },
        }
    }
}

const SHARDS: usize = 16;

/// A block in a slot.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SlotEntry {
    pub(crate) offset: usize,
    pub(crate) len: usize,
    pub(crate) priority: BlockPriority,
    pub(crate) last_access: u64,
    /// Distinguishes this placement from any later one of the same key or slot.
    pub(crate) generation: u64,
}

/// A block waiting for its slot, and whether it is in-memory.
type Staged = (Bytes, bool);

/// One shard of the backing map: where each placed block is.
pub(crate) type BackingShard = Mutex<HashMap<BlockKey, SlotEntry, KeyHasher>>;

/// One shard of the RAM staging map.
type RamShard = Mutex<HashMap<BlockKey, Staged, KeyHasher>>;

#[derive(Debug)]
pub(crate) struct Inner {
    pub(crate) options: BucketOptions,
    area: Area,
    pub(crate) allocator: Mutex<Allocator>,
    ram: Box<[CachePadded<RamShard>]>,
    pub(crate) backing: Box<[CachePadded<BackingShard>]>,
    hasher: KeyHasher,
    pub(crate) slot_locks: IdReadWriteLock<usize>,
    clock: CachePadded<AtomicU64>,
    pub(crate) stored_bytes: AtomicU64,
    pub(crate) counters: CacheCounters,
    blocks: AtomicU64,
    /// Blocks on the writer queues or being placed.
    queued: AtomicUsize,
}

/// HBase's bucket cache. See the module docs.
#[derive(Debug)]
pub struct BucketCache {
    inner: Arc<Inner>,
    queues: Vec<SyncSender<(BlockKey, Bytes, bool)>>,
    writers: Vec<JoinHandle<()>>,
    load_locks: IdReadWriteLock<BlockKey>,
}

impl BucketCache {
    /// A cache over a zeroed area of `options.capacity_bytes`, with its writer threads started.
    /// Fails only if a mapped area's file cannot be created or mapped.
    pub fn new(options: BucketOptions) -> io::Result<BucketCache> {
        let allocator = Allocator::new(options.capacity_bytes, &options.size_classes);
        let area = match &options.area {
            AreaKind::Heap => Area::heap(allocator.area_len()),
            AreaKind::Mapped(path) => Area::mapped(path, allocator.area_len())?,
        };
        let hasher = KeyHasher::new();
        let inner = Arc::new(Inner {
            area,
            allocator: Mutex::new(allocator),
            ram: (0..SHARDS)
                .map(|_| CachePadded(Mutex::new(HashMap::with_hasher(hasher))))
                .collect(),
            backing: (0..SHARDS)
                .map(|_| CachePadded(Mutex::new(HashMap::with_hasher(hasher))))
                .collect(),
            hasher,
            slot_locks: IdReadWriteLock::new(options.id_lock_pool),
            clock: CachePadded(AtomicU64::new(0)),
            stored_bytes: AtomicU64::new(0),
            counters: CacheCounters::new(),
            blocks: AtomicU64::new(0),
            queued: AtomicUsize::new(0),
            options: options.clone(),
        });
        let mut queues = Vec::new();
        let mut writers = Vec::new();
        for i in 0..options.writer_threads.max(1) {
            let (sender, receiver) = sync_channel(options.writer_queue_len.max(1));
            let inner = Arc::clone(&inner);
            let writer = spawn_named(&format!("keel-bucket-writer-{i}"), move || {
                inner.run_writer(receiver)
            })
            .unwrap_or_else(|e| panic!("cannot start a bucket cache writer: {e}"));
            queues.push(sender);
            writers.push(writer);
        }
        Ok(BucketCache {
            inner,
            queues,
            writers,
            load_locks: IdReadWriteLock::new(options.id_lock_pool),
        })
    }

    /// Waits until every block queued so far has been written to its slot (or dropped).
    pub fn flush_writes(&self) {
        while self.inner.queued.load(Relaxed) > 0 || self.inner.staged() > 0 {
            keel_sync::thread::yield_now();
        }
    }

    /// The per-slot id locks (for their counters: lock objects created per read).
    pub fn slot_locks(&self) -> &IdReadWriteLock<usize> {
        &self.inner.slot_locks
    }
}

impl Drop for BucketCache {
    fn drop(&mut self) {
        self.queues.clear();
        for writer in self.writers.drain(..) {
            let _ = writer.join();
        }
    }
}

impl Inner {
    fn shard_index(&self, key: &BlockKey) -> usize {
        (self.hasher.hash_one(key) >> 48) as usize % SHARDS
    }

    fn staged(&self) -> usize {
        self.ram.iter().map(|s| s.lock().len()).sum()
    }

    /// A writer thread: place each queued block in a slot and publish it.
    fn run_writer(self: Arc<Self>, queue: Receiver<(BlockKey, Bytes, bool)>) {
        while let Ok((key, block, in_memory)) = queue.recv() {
            self.place(key, block, in_memory);
            self.queued.fetch_sub(1, Relaxed);
        }
    }

    /// Puts one staged block into a slot and publishes it (or drops it if there is no room).
    fn place(&self, key: BlockKey, block: Bytes, in_memory: bool) {
        let shard = self.shard_index(&key);
        let offset = self.allocate_slot(block.len());
        let Some(offset) = offset else {
            if self.ram[shard].lock().remove(&key).is_some() {
                self.blocks.fetch_sub(1, Relaxed);
            }
            self.counters.failed_inserts.fetch_add(1, Relaxed);
            return;
        };
        self.area.write(offset, &block);
        let mut ram = self.ram[shard].lock();
        // Evicted while it waited: give the slot back instead of publishing.
        if !ram.contains_key(&key) {
            drop(ram);
            self.allocator.lock().free(offset);
            return;
        }
        let priority = if in_memory {
            BlockPriority::Memory
        } else {
            BlockPriority::Single
        };
        let entry = SlotEntry {
            offset,
            len: block.len(),
            priority,
            last_access: self.clock.fetch_add(1, Relaxed),
            generation: self.clock.fetch_add(1, Relaxed),
        };
        self.backing[shard].lock().insert(key, entry);
        ram.remove(&key);
        self.stored_bytes.fetch_add(block.len() as u64, Relaxed);
    }

    /// A slot for `len` bytes, evicting once if the area is full.
    fn allocate_slot(&self, len: usize) -> Option<usize> {
        if let Some(offset) = self.allocator.lock().allocate(len) {
            return Some(offset);
        }
        self.free_space();
        self.allocator.lock().allocate(len)
    }

    /// Removes `key`'s slot entry if it is still `generation`, taking the slot's write lock so
    /// no reader is copying from it; frees the slot. Returns the bytes freed.
    pub(crate) fn remove_entry(&self, key: &BlockKey, expected: Option<u64>) -> Option<SlotEntry> {
        let shard = self.shard_index(key);
        let offset = self.backing[shard].lock().get(key)?.offset;
        let _exclusive = self.slot_locks.write(&offset);
        let mut backing = self.backing[shard].lock();
        let entry = *backing.get(key)?;
        if entry.offset != offset || expected.is_some_and(|g| g != entry.generation) {
            return None;
        }
        backing.remove(key);
        drop(backing);
        self.allocator.lock().free(entry.offset);
        self.stored_bytes.fetch_sub(entry.len as u64, Relaxed);
        self.blocks.fetch_sub(1, Relaxed);
        Some(entry)
    }
}

impl BlockCache for BucketCache {
    fn get(&self, key: &BlockKey, caching: bool, repeat: bool) -> Option<Bytes> {
        let inner = &self.inner;
        let shard = inner.shard_index(key);
        let staged = inner.ram[shard]
            .lock()
            .get(key)
            .map(|(block, _)| block.clone());
        let found = staged.or_else(|| {
            let entry = {
                let mut backing = inner.backing[shard].lock();
                let entry = backing.get_mut(key)?;
                // Read, not advanced, at a hit: the LRU cache's reasoning (`lru/mod.rs`).
                let now = inner.clock.load(Relaxed);
                if entry.last_access != now {
                    entry.last_access = now;
                }
                if entry.priority == BlockPriority::Single {
                    entry.priority = BlockPriority::Multi;
                }
                *entry
            };
            // Hold the slot's read lock, then make sure the slot still holds this block.
            let _reading = inner.slot_locks.read(&entry.offset);
            let still = inner.backing[shard].lock().get(key).map(|e| e.generation)
                == Some(entry.generation);
            still.then(|| inner.area.read(entry.offset, entry.len))
        });
        inner
            .counters
            .count_lookup(found.is_some(), caching, repeat);
        found
    }

    fn insert(&self, key: BlockKey, block: Bytes, in_memory: bool) -> bool {
        let inner = &self.inner;
        let fits = inner.allocator.lock().slot_size(block.len()).is_some();
        if !fits {
            inner.counters.failed_inserts.fetch_add(1, Relaxed);
            return false;
        }
        let shard = inner.shard_index(&key);
        {
            let mut ram = inner.ram[shard].lock();
            if ram.contains_key(&key) || inner.backing[shard].lock().contains_key(&key) {
                return true;
            }
            ram.insert(key, (block.clone(), in_memory));
        }
        let queue = &self.queues[(inner.hasher.hash_one(key) as usize) % self.queues.len()];
        // Counted before it is sent, so the writer can never count it off first.
        inner.queued.fetch_add(1, Relaxed);
        match queue.try_send((key, block, in_memory)) {
            Ok(()) => {
                inner.blocks.fetch_add(1, Relaxed);
                true
            }
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                inner.queued.fetch_sub(1, Relaxed);
                inner.ram[shard].lock().remove(&key);
                inner.counters.failed_inserts.fetch_add(1, Relaxed);
                false
            }
        }
    }

    fn evict(&self, key: &BlockKey) -> bool {
        let shard = self.inner.shard_index(key);
        if self.inner.ram[shard].lock().remove(key).is_some() {
            self.inner.blocks.fetch_sub(1, Relaxed);
            return true;
        }
        self.inner.remove_entry(key, None).is_some()
    }

    fn evict_file(&self, file_id: u64) -> usize {
        let mut evicted = 0;
        for shard in 0..SHARDS {
            let staged: Vec<BlockKey> = self.inner.ram[shard]
                .lock()
                .keys()
                .filter(|k| k.file_id == file_id)
                .copied()
                .collect();
            let placed: Vec<BlockKey> = self.inner.backing[shard]
                .lock()
                .keys()
                .filter(|k| k.file_id == file_id)
                .copied()
                .collect();
            for key in staged.iter().chain(&placed) {
                evicted += usize::from(self.evict(key));
            }
        }
        evicted
    }

    fn stats(&self) -> CacheStats {
        let inner = &self.inner;
        let size_bytes = inner.stored_bytes.load(Relaxed);
        let capacity = inner.allocator.lock().area_len() as u64;
        let free_bytes = capacity.saturating_sub(inner.allocator.lock().used_bytes() as u64);
        inner
            .counters
            .stats(size_bytes, free_bytes, inner.blocks.load(Relaxed))
    }

    fn id_locks(&self) -> &IdReadWriteLock<BlockKey> {
        &self.load_locks
    }
}

#[cfg(all(test, not(shuttle)))]
mod tests;
