//! [`IdReadWriteLock`]: a read/write lock per id (a block's file and offset) whose lock objects
//! live in a pluggable pool. HBase's `IdReadWriteLock` keeps them in a weak object pool, which
//! re-creates the object for every uncontended read of a cached block; HBASE-17747 measured a soft
//! pool (objects kept while the pool is under a bound) 6 % faster. Keel offers both and the two
//! designs Rust makes natural:
//!
//! | pool | an object lives | allocation per uncontended read |
//! |---|---|---|
//! | [`PoolKind::Weak`] | while a guard holds it; removed by the last release | one |
//! | [`PoolKind::Soft`] | until the pool passes its bound; unused ones reclaimed oldest first | none once warm |
//! | [`PoolKind::Strong`] | forever (the id space is bounded, e.g. a bucket cache's slots) | none once warm |
//! | [`PoolKind::Striped`] | forever: a fixed array indexed by hash; ids may share a lock | none |

mod object;

use std::collections::hash_map::RandomState;
use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::hash::{BuildHasher, Hash};
use std::sync::{Arc, Weak};

use keel_sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed, Ordering::SeqCst, fence};
use keel_sync::{CachePadded, Mutex};

use self::object::LockObject;

/// Which pool keeps the lock objects.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PoolKind {
    /// HBase's default (`WeakObjectPool`): an object exists only while someone holds it.
    #[default]
    Weak,
    /// HBase's choice for the bucket cache (`SoftObjectPool`, HBASE-17747): objects stay while the
    /// pool holds at most `max_entries`; above that, unused ones are reclaimed oldest first.
    Soft {
        /// The bound; the pool never holds more than this plus the objects in use.
        max_entries: usize,
    },
    /// Objects are never removed (HBASE-23223): right when ids are bounded.
    Strong,
    /// A fixed array of `stripes` locks indexed by the id's hash: no allocation, no map; two ids
    /// may share a lock (a reader of one may wait for a writer of the other).
    Striped {
        /// Number of locks (rounded up to a power of two).
        stripes: usize,
    },
}

/// Counters of an [`IdReadWriteLock`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IdLockStats {
    /// Lock objects allocated.
    pub created: u64,
    /// Lock objects removed from the pool.
    pub reclaimed: u64,
    /// Lock objects in the pool now.
    pub pooled: usize,
}

/// A read/write lock per id, with lock objects from a [`PoolKind`].
pub struct IdReadWriteLock<K> {
    kind: PoolKind,
    shards: Box<[CachePadded<Mutex<Shard<K>>>]>,
    stripes: Box<[LockObject]>,
    hasher: RandomState,
    per_shard_bound: usize,
    /// Soft pool: the shard may hold more than its bound (objects were in use when it last
    /// reclaimed), so a release there should reclaim too. See `release`.
    over_bound: Box<[AtomicBool]>,
    created: AtomicU64,
    reclaimed: AtomicU64,
}

struct Shard<K> {
    entries: HashMap<K, Entry>,
    /// Soft pool: ids in insertion order, for oldest-first reclaim.
    order: VecDeque<K>,
}

enum Entry {
    Weak(Weak<LockObject>),
    Strong(Arc<LockObject>),
}

/// How a guard reaches its lock object.
enum Held<'a, K> {
    Pooled {
        object: Arc<LockObject>,
        id: K,
        shard: usize,
    },
    Striped(&'a LockObject),
}

impl<K> fmt::Debug for IdReadWriteLock<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IdReadWriteLock")
            .field("kind", &self.kind)
            .finish_non_exhaustive()
    }
}

const SHARDS: usize = 16;

impl<K: Hash + Eq + Clone> IdReadWriteLock<K> {
    /// An empty lock table with the given pool.
    pub fn new(kind: PoolKind) -> IdReadWriteLock<K> {
        let stripes = match kind {
            PoolKind::Striped { stripes } => stripes.max(1).next_power_of_two(),
            _ => 0,
        };
        let per_shard_bound = match kind {
            PoolKind::Soft { max_entries } => (max_entries / SHARDS).max(1),
            _ => usize::MAX,
        };
        IdReadWriteLock {
            kind,
            shards: (0..SHARDS)
                .map(|_| {
                    CachePadded(Mutex::new(Shard {
                        entries: HashMap::new(),
                        order: VecDeque::new(),
                    }))
                })
                .collect(),
            stripes: (0..stripes).map(|_| LockObject::default()).collect(),
            hasher: RandomState::new(),
            per_shard_bound,
            over_bound: (0..SHARDS).map(|_| AtomicBool::new(false)).collect(),
            created: AtomicU64::new(0),
            reclaimed: AtomicU64::new(0),
        }
    }

    /// The pool in use.
    pub fn kind(&self) -> PoolKind {
        self.kind
    }

    /// Shared access to `id` (readers of a cached block).
    pub fn read(&self, id: &K) -> IdReadGuard<'_, K> {
        let held = self.acquire(id);
        held.object().lock_read();
        IdReadGuard {
            lock: self,
            held: Some(held),
        }
    }

    /// Exclusive access to `id` (whoever frees or reuses the block's slot).
    pub fn write(&self, id: &K) -> IdWriteGuard<'_, K> {
        let held = self.acquire(id);
        held.object().lock_write();
        IdWriteGuard {
            lock: self,
            held: Some(held),
        }
    }

    /// Counters.
    pub fn stats(&self) -> IdLockStats {
        let pooled = match self.kind {
            PoolKind::Striped { .. } => self.stripes.len(),
            _ => self.shards.iter().map(|s| s.lock().entries.len()).sum(),
        };
        IdLockStats {
            created: self.created.load(Relaxed)
                + if matches!(self.kind, PoolKind::Striped { .. }) {
                    self.stripes.len() as u64
                } else {
                    0
                },
            reclaimed: self.reclaimed.load(Relaxed),
            pooled,
        }
    }

    fn acquire(&self, id: &K) -> Held<'_, K> {
        let hash = self.hasher.hash_one(id);
        if let PoolKind::Striped { .. } = self.kind {
            return Held::Striped(&self.stripes[(hash as usize) & (self.stripes.len() - 1)]);
        }
        let shard_index = (hash >> 48) as usize % SHARDS;
        let mut shard = self.shards[shard_index].lock();
        let existing = match shard.entries.get(id) {
            Some(Entry::Strong(object)) => Some(Arc::clone(object)),
            Some(Entry::Weak(object)) => object.upgrade(),
            None => None,
        };
        let object = match existing {
            Some(object) => object,
            None => {
                self.created.fetch_add(1, Relaxed);
                let object = Arc::new(LockObject::default());
                let entry = match self.kind {
                    PoolKind::Weak => Entry::Weak(Arc::downgrade(&object)),
                    _ => Entry::Strong(Arc::clone(&object)),
                };
                shard.entries.insert(id.clone(), entry);
                if let PoolKind::Soft { .. } = self.kind {
                    shard.order.push_back(id.clone());
                    if shard.entries.len() > self.per_shard_bound {
                        // Dekker with `release`: raise the flag, then read the use counts.
                        self.over_bound[shard_index].store(true, SeqCst);
                        fence(SeqCst);
                        self.reclaim_soft(&mut shard);
                        if shard.entries.len() <= self.per_shard_bound {
                            self.over_bound[shard_index].store(false, SeqCst);
                        }
                    }
                }
                object
            }
        };
        Held::Pooled {
            object,
            id: id.clone(),
            shard: shard_index,
        }
    }

    /// Soft pool above its bound: drop unused objects, oldest first, until under it again or
    /// only objects in use remain (each is looked at once).
    fn reclaim_soft(&self, shard: &mut Shard<K>) {
        let mut budget = shard.order.len();
        while shard.entries.len() > self.per_shard_bound && budget > 0 {
            budget -= 1;
            let Some(id) = shard.order.pop_front() else {
                break;
            };
            let in_use = match shard.entries.get(&id) {
                Some(Entry::Strong(object)) => Arc::strong_count(object) > 1,
                _ => false,
            };
            if in_use {
                shard.order.push_back(id);
            } else if shard.entries.remove(&id).is_some() {
                self.reclaimed.fetch_add(1, Relaxed);
            }
        }
    }

    /// After a guard let go: a weak pool removes the object if that was its last user; a soft
    /// pool over its bound reclaims. The soft check is lock-free unless the shard is over its
    /// bound: the releaser drops its handle, then reads the flag; an inserter raises the flag,
    /// then reads the use counts. With a fence between each pair, at least one of them sees the
    /// other, so a shard never stays above its bound once nothing in it is in use.
    fn release(&self, held: Held<'_, K>) {
        let Held::Pooled { object, id, shard } = held else {
            return;
        };
        if let PoolKind::Soft { .. } = self.kind {
            drop(object);
            fence(SeqCst);
            if self.over_bound[shard].load(SeqCst) {
                let mut guard = self.shards[shard].lock();
                self.reclaim_soft(&mut guard);
                if guard.entries.len() <= self.per_shard_bound {
                    self.over_bound[shard].store(false, SeqCst);
                }
            }
            return;
        }
        if self.kind != PoolKind::Weak {
            return;
        }
        let mut shard = self.shards[shard].lock();
        // Under the shard lock nobody can take a new handle, so a count of one is final.
        if Arc::strong_count(&object) == 1 {
            let same = matches!(shard.entries.get(&id), Some(Entry::Weak(w)) if w.ptr_eq(&Arc::downgrade(&object)));
            if same {
                shard.entries.remove(&id);
                self.reclaimed.fetch_add(1, Relaxed);
            }
        }
        drop(object);
    }
}

impl<K> Held<'_, K> {
    fn object(&self) -> &LockObject {
        match self {
            Held::Pooled { object, .. } => object,
            Held::Striped(object) => object,
        }
    }
}

/// Shared access to one id; released on drop.
#[must_use = "the lock is released as soon as the guard is dropped"]
pub struct IdReadGuard<'a, K: Hash + Eq + Clone> {
    lock: &'a IdReadWriteLock<K>,
    held: Option<Held<'a, K>>,
}

/// Exclusive access to one id; released on drop.
#[must_use = "the lock is released as soon as the guard is dropped"]
pub struct IdWriteGuard<'a, K: Hash + Eq + Clone> {
    lock: &'a IdReadWriteLock<K>,
    held: Option<Held<'a, K>>,
}

impl<K: Hash + Eq + Clone> Drop for IdReadGuard<'_, K> {
    fn drop(&mut self) {
        if let Some(held) = self.held.take() {
            held.object().unlock_read();
            self.lock.release(held);
        }
    }
}

impl<K: Hash + Eq + Clone> Drop for IdWriteGuard<'_, K> {
    fn drop(&mut self) {
        if let Some(held) = self.held.take() {
            held.object().unlock_write();
            self.lock.release(held);
        }
    }
}

impl<K: Hash + Eq + Clone> fmt::Debug for IdReadGuard<'_, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("IdReadGuard")
    }
}

impl<K: Hash + Eq + Clone> fmt::Debug for IdWriteGuard<'_, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("IdWriteGuard")
    }
}

#[cfg(all(test, not(shuttle)))]
mod tests;
