//! A concurrent, insert-only skip list whose nodes live in an arena: RocksDB's `InlineSkipList`
//! shape, for the memstore's segments.
//!
//! crossbeam-skiplist allocated one node per cell from the heap (`memstore_allocs_per_insert_mslab`
//! was 1.0) and freed removed nodes through epochs, which every reader paid for with a pin. A
//! memstore segment never frees a cell before the segment itself goes, so the list here never
//! unlinks a node: nodes are bump-allocated from blocks that the list frees all at once when it
//! is dropped, and a reader needs no guard, only a borrow of the list.
//!
//! - **Insert** (lock-free, many writers): search for each level's neighbours, then link the
//!   node bottom level first with a compare-and-swap per level, searching again from the left
//!   neighbour at that level when the CAS loses a race. A node linked at level `l` is already in
//!   every level below it, so a reader descending the levels never misses it.
//! - **Identical keys** (rare: one write naming one cell twice, or a replay): the new node goes
//!   in at the bottom level right after every node with its key, and the one it replaces is
//!   then marked removed. Those replacements, and [`SkipList::remove`], take one mutex; a first
//!   insert racing a replacement of the same key finds the key at its bottom-level CAS and
//!   becomes a replacement itself. So exactly one node per key is live once the writers return
//!   (a reader walking meanwhile may meet both the old and the new node once).
//! - **Removal** marks a node; walks skip marked nodes ([`Entry::is_removed`]). The node stays
//!   linked, and its key is dropped with the list.

use std::alloc::{Layout, alloc, dealloc, handle_alloc_error};
use std::cmp::Ordering as CmpOrdering;
use std::marker::PhantomData;
use std::mem::{align_of, offset_of, size_of};
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};

use keel_sync::Mutex;

use crate::row_hints::RowHints;

/// Levels at most. With a quarter of the nodes reaching each next level (below), twelve levels
/// keep searches logarithmic to 4^12 (16 M) nodes; a segment holds around a million.
pub(crate) const MAX_HEIGHT: usize = 12;

/// The first block of a list's arena; blocks double up to [`MAX_BLOCK`], so a small memstore
/// (one of many regions, or a test) holds little and a large one allocates rarely.
const FIRST_BLOCK: usize = 4 << 10;
/// The largest arena block.
const MAX_BLOCK: usize = 256 << 10;

/// A node: the key, the value, the end of its run, the removal mark, the height, then `height`
/// next pointers (the tower) in the arena right after it. The bottom level's pointer follows
/// the key, so a walk along the bottom reads one cache line or two per node.
#[repr(C)]
struct Node<K> {
    key: K,
    value: u64,
    /// A later node of this node's run (see [`SkipList::insert_hinted`]): the farthest its
    /// successor knew of when this node went in, null when the successor was of another run.
    /// Written before the node is published, never after. It sorts after this node (and
    /// every node between is of the run), so a search for a key past it may start there.
    run_end: AtomicPtr<Node<K>>,
    removed: AtomicBool,
    /// Set once the node is linked at every level of its tower. Until then its upper pointers
    /// are its inserter's to write (a link another writer made there would be overwritten),
    /// so a climb that reached it through a lower level uses only that level ([`climb`]).
    /// Never set on a replacement ([`SkipList::replace`]): it is linked at the bottom level
    /// only, whatever height it was drawn with.
    linked: AtomicBool,
    height: u8,
    tower: [AtomicPtr<Node<K>>; 0],
}

/// Bytes of a node before its tower: what each key costs in the arena beyond its tower.
pub(crate) const fn node_header_bytes<K>() -> usize {
    offset_of!(Node<K>, tower)
}

/// Where a search stands: before the list's first node (the head) or after a node.
type Link<K> = Option<NonNull<Node<K>>>;

/// A new node and the node it went in right after at the bottom level.
type Placed<K> = (NonNull<Node<K>>, NonNull<Node<K>>);

/// Sorted keys, each with a `u64` value; see the module doc.
pub(crate) struct SkipList<K> {
    head: [AtomicPtr<Node<K>>; MAX_HEIGHT],
    /// Levels in use (at least 1).
    height: AtomicUsize,
    /// Live (not removed) nodes.
    len: AtomicUsize,
    arena: Mutex<Arena>,
    /// Taken by replacements and removals (see the module doc).
    replacing: Mutex<()>,
    /// Where searches for a row may start ([`SkipList::insert_hinted`]); only ever nodes of
    /// this list.
    hints: RowHints<Node<K>>,
}

// SAFETY: the list owns its keys (dropped with it) and shares them only as `&K` through
// `Entry`, so it may move to and be shared with other threads when `K` may; everything written
// after a node is published (its tower, its mark) is atomic, and the arena is behind a mutex.
unsafe impl<K: Send + Sync> Send for SkipList<K> {}
// SAFETY: as above.
unsafe impl<K: Send + Sync> Sync for SkipList<K> {}

impl<K> std::fmt::Debug for SkipList<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SkipList")
            .field("len", &self.len.load(Ordering::Relaxed))
            .field("height", &self.height.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

/// A node of a list, borrowed for as long as the list is.
pub(crate) struct Entry<'a, K> {
    node: NonNull<Node<K>>,
    list: PhantomData<&'a SkipList<K>>,
}

impl<K> Clone for Entry<'_, K> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<K> Copy for Entry<'_, K> {}

impl<K> std::fmt::Debug for Entry<'_, K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Entry")
            .field("value", &self.value())
            .finish()
    }
}

impl<'a, K> Entry<'a, K> {
    fn new(node: NonNull<Node<K>>) -> Entry<'a, K> {
        Entry {
            node,
            list: PhantomData,
        }
    }

    /// The node's key.
    #[inline]
    pub(crate) fn key(&self) -> &'a K {
        // SAFETY: a published node's key is initialized, never written again, and dropped only
        // when the list is, which outlives `'a`.
        unsafe { &(*self.node.as_ptr()).key }
    }

    /// The value stored with the key.
    #[inline]
    pub(crate) fn value(&self) -> u64 {
        // SAFETY: as for `key`.
        unsafe { (*self.node.as_ptr()).value }
    }

    /// Whether the node was removed or replaced.
    #[inline]
    pub(crate) fn is_removed(&self) -> bool {
        // SAFETY: as for `key`; the mark is atomic.
        unsafe { (*self.node.as_ptr()).removed.load(Ordering::Acquire) }
    }

    /// Asks for the node's memory (its first line and its bottom-level pointer's), a hint for
    /// a walk that will step onto it soon: the step then need not wait for memory.
    #[inline]
    pub(crate) fn prefetch(&self) {
        // SAFETY: a published node: initialized, with a level 0 pointer.
        unsafe {
            keel_sync::prefetch_value(self.node.as_ref());
            keel_sync::prefetch_value(&*tower(self.node, 0));
        }
    }

    /// The farthest node of this node's run known when it went in (see
    /// [`SkipList::insert_hinted`]), if any.
    #[inline]
    fn run_end(&self) -> Option<Entry<'a, K>> {
        // SAFETY: as for `key`; the pointer was written before the node was published and
        // points at a published node or is null.
        NonNull::new(unsafe { (*self.node.as_ptr()).run_end.load(Ordering::Relaxed) })
            .map(Entry::new)
    }

    /// The highest level of the node a climb may go on from, having reached it through a
    /// pointer at level `reached` (it is linked there and below): its top level once it is
    /// linked at every level, else `reached`.
    #[inline]
    fn top_level(&self, reached: usize) -> usize {
        // SAFETY: as for `key`; the height never changes and the flag is atomic.
        let node = unsafe { self.node.as_ref() };
        if node.linked.load(Ordering::Acquire) {
            usize::from(node.height) - 1
        } else {
            reached.min(usize::from(node.height) - 1)
        }
    }

    /// The next node along the bottom level, removed or not.
    #[inline]
    pub(crate) fn next(&self) -> Option<Entry<'a, K>> {
        // SAFETY: every published node has its level 0 pointer, and it points at a published
        // node or is null.
        let next = unsafe { next(self.node, 0) };
        NonNull::new(next).map(Entry::new)
    }
}

/// An entry's place without the list's borrow, for a reader that keeps the list alive by other
/// means (an `Arc` beside it) and so cannot name the borrow's lifetime.
pub(crate) struct Detached<K>(NonNull<Node<K>>);

impl<K> Clone for Detached<K> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<K> Copy for Detached<K> {}

impl<K> std::fmt::Debug for Detached<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Detached").field(&self.0).finish()
    }
}

// SAFETY: a detached entry is only a node's address; reading through it needs `attach`, whose
// caller shows the list alive, and the list is `Send + Sync` for such `K`.
unsafe impl<K: Send + Sync> Send for Detached<K> {}
// SAFETY: as above.
unsafe impl<K: Send + Sync> Sync for Detached<K> {}

impl<K> Entry<'_, K> {
    /// The entry's place, to [`Detached::attach`] again while the list lives.
    #[inline]
    pub(crate) fn detach(self) -> Detached<K> {
        Detached(self.node)
    }
}

impl<K> Detached<K> {
    /// The entry again, borrowed from `list`.
    ///
    /// # Safety
    /// `self` was detached from an entry of `list` (not another list): a list frees its nodes
    /// only when it drops, so the node lives as long as the borrow of `list`.
    #[inline]
    pub(crate) unsafe fn attach<'a>(self, list: &'a SkipList<K>) -> Entry<'a, K> {
        let _ = list;
        Entry::new(self.0)
    }
}

/// The address of `node`'s level `level` pointer.
///
/// # Safety
/// `node` is a node of a list (from its arena, fully initialized), and `level < node.height`.
#[inline]
unsafe fn tower<K>(node: NonNull<Node<K>>, level: usize) -> *const AtomicPtr<Node<K>> {
    // SAFETY: the node was allocated with room for `height` pointers after the `tower` field
    // (see `SkipList::new_node`), and the pointer keeps the arena block's provenance.
    unsafe {
        node.as_ptr()
            .cast::<u8>()
            .add(offset_of!(Node<K>, tower))
            .cast::<AtomicPtr<Node<K>>>()
            .add(level)
    }
}

/// `node`'s successor at `level` (null at the end).
///
/// # Safety
/// As for [`tower`].
#[inline]
unsafe fn next<K>(node: NonNull<Node<K>>, level: usize) -> *mut Node<K> {
    // SAFETY: the caller's promise; the pointer was initialized before the node was published.
    unsafe { (*tower(node, level)).load(Ordering::Acquire) }
}

impl<K: Ord> SkipList<K> {
    /// An empty list.
    pub(crate) fn new() -> SkipList<K> {
        SkipList {
            head: std::array::from_fn(|_| AtomicPtr::new(ptr::null_mut())),
            height: AtomicUsize::new(1),
            len: AtomicUsize::new(0),
            arena: Mutex::new(Arena::default()),
            replacing: Mutex::new(()),
            hints: RowHints::default(),
        }
    }

    /// Live keys.
    pub(crate) fn len(&self) -> usize {
        self.len.load(Ordering::Relaxed)
    }

    /// The pointer after `link` at `level` (the head's when `link` is `None`).
    #[inline]
    fn link_at(&self, link: Link<K>, level: usize) -> &AtomicPtr<Node<K>> {
        match link {
            None => &self.head[level],
            // SAFETY: searches reach a node at `level` only through a pointer at `level`, which
            // only nodes at least `level + 1` high are linked into.
            Some(node) => unsafe { &*tower(node, level) },
        }
    }

    /// From `from` (which sorts before the target), the last link at `level` before the
    /// target (at or before it, when `or_equal`) and the node after it. `target` orders a
    /// node's key against the target (`key.cmp(target)`). `stop` is a node already known to
    /// end the walk (the one the level above stopped at, or null): reaching it, the walk ends
    /// without comparing its key again (RocksDB's `FindGreaterOrEqual` does the same). Keys
    /// never change, so a node inserted meanwhile cannot make that verdict wrong.
    #[inline]
    fn search_level(
        &self,
        mut from: Link<K>,
        level: usize,
        target: &impl Fn(&K) -> CmpOrdering,
        or_equal: bool,
        stop: *mut Node<K>,
    ) -> (Link<K>, *mut Node<K>) {
        loop {
            let next = self.link_at(from, level).load(Ordering::Acquire);
            if next == stop {
                return (from, next);
            }
            let Some(node) = NonNull::new(next) else {
                return (from, next);
            };
            // SAFETY: a node reached through the list is published and lives as long as it.
            let order = target(unsafe { &(*node.as_ptr()).key });
            match order {
                CmpOrdering::Less => from = Some(node),
                CmpOrdering::Equal if or_equal => from = Some(node),
                _ => return (from, next),
            }
        }
    }

    /// Every level's neighbours of `key`, from the top: the last link before it (at or before
    /// it, when `or_equal`) and the node after that.
    fn search(&self, target: &impl Fn(&K) -> CmpOrdering, or_equal: bool) -> Splice<K> {
        let mut splice = Splice {
            prev: [None; MAX_HEIGHT],
            next: [ptr::null_mut(); MAX_HEIGHT],
        };
        self.search_down_to(&mut splice, 0, target, or_equal);
        splice
    }

    /// [`SkipList::search`]'s walk from the top, filling `splice` for levels `floor` and up
    /// only.
    fn search_down_to(
        &self,
        splice: &mut Splice<K>,
        floor: usize,
        target: &impl Fn(&K) -> CmpOrdering,
        or_equal: bool,
    ) {
        let (mut from, mut stop) = (None, ptr::null_mut());
        for level in (floor..self.height.load(Ordering::Acquire)).rev() {
            let (prev, next) = self.search_level(from, level, target, or_equal, stop);
            splice.prev[level] = prev;
            splice.next[level] = next;
            (from, stop) = (prev, next);
        }
    }

    /// The neighbours of the target at levels `0..height` (the levels a new node of that
    /// height links into), searched from `finger` instead of the top; `None` when `finger`
    /// does not sort before the target. It climbs as [`SkipList::lower_bound_after`] does to a
    /// node `n` before the target, then descends from the level the climb stands at there (a
    /// level `n` is linked at: see [`climb`]). That is exact: at each level `n` is linked
    /// into, the target's predecessor is the last node there before the target, which is `n`
    /// or after it, so a walk from `n` finds it. A new node taller than that level (one in five
    /// or fewer: both heights drawn as [`random_height`] draws, and the climb mostly gains
    /// height) has its upper levels searched from the top, down to the level above only. A
    /// row's new cell lands a few nodes after its row's hint, so this costs a step or two
    /// where a search from the top costs a cache miss per level, most of them in the bottom
    /// levels, which hold most nodes.
    fn finger_splice(
        &self,
        finger: NonNull<Node<K>>,
        target: &impl Fn(&K) -> CmpOrdering,
        height: usize,
    ) -> Option<Splice<K>> {
        // `finger` is a published node of this list (the caller's promise).
        let finger = Entry::new(finger);
        if target(finger.key()) != CmpOrdering::Less {
            return None;
        }
        let (node, level, stop) = climb(finger, target);
        let mut splice = Splice {
            prev: [None; MAX_HEIGHT],
            next: [ptr::null_mut(); MAX_HEIGHT],
        };
        if height > level + 1 {
            // Levels above the list's height stay empty (the head, null), as `search` leaves
            // them.
            self.search_down_to(&mut splice, level + 1, target, false);
        }
        splice.prev[level] = Some(node);
        splice.next[level] = stop;
        let (mut from, mut stop) = (Some(node), stop);
        for below in (0..level).rev() {
            (from, stop) = self.search_level(from, below, target, false, stop);
            splice.prev[below] = from;
            splice.next[below] = stop;
        }
        Some(splice)
    }

    /// The first node whose key is at least `key`, removed or not.
    #[cfg(test)]
    pub(crate) fn lower_bound(&self, key: &K) -> Option<Entry<'_, K>> {
        self.lower_bound_by(|k| k.cmp(key))
    }

    /// The first node whose key is at least the target, removed or not; `target` orders a key
    /// against it (`key.cmp(target)`), so a search needs no key of the list's type.
    pub(crate) fn lower_bound_by(
        &self,
        target: impl Fn(&K) -> CmpOrdering,
    ) -> Option<Entry<'_, K>> {
        let mut from = None;
        let mut next = ptr::null_mut();
        for level in (0..self.height.load(Ordering::Acquire)).rev() {
            (from, next) = self.search_level(from, level, &target, false, next);
        }
        NonNull::new(next).map(Entry::new)
    }

    /// [`SkipList::lower_bound_by`] from `entry`, whose key sorts before the target: a finger
    /// search. It climbs along the tallest pointers of the nodes it passes while they still
    /// land before the target, then descends from there, so a target `d` nodes on costs about
    /// `log d` steps wherever the list is large; a reseek past a hot column's versions no
    /// longer walks down from the list's top through other rows' (cold) nodes, and jumps to
    /// the end of the column's run when it starts in one ([`climb`]).
    pub(crate) fn lower_bound_after(
        &self,
        entry: Entry<'_, K>,
        target: impl Fn(&K) -> CmpOrdering,
    ) -> Option<Entry<'_, K>> {
        debug_assert_eq!(
            target(entry.key()),
            CmpOrdering::Less,
            "a finger search goes forward"
        );
        let (node, level, stop) = climb(entry, &target);
        let mut from = Some(node);
        let mut found = stop;
        for below in (0..level).rev() {
            (from, found) = self.search_level(from, below, &target, false, found);
        }
        NonNull::new(found).map(Entry::new)
    }

    /// The first node, removed or not.
    pub(crate) fn front(&self) -> Option<Entry<'_, K>> {
        NonNull::new(self.head[0].load(Ordering::Acquire)).map(Entry::new)
    }

    /// The last node whose key is below `key` (the last node when `None`), removed or not.
    #[cfg(test)]
    pub(crate) fn last_below(&self, key: Option<&K>) -> Option<Entry<'_, K>> {
        self.last_below_by(key.map(|key| move |k: &K| k.cmp(key)))
    }

    /// The last node whose key is below the target (the last node when `None`), removed or
    /// not; `target` as for [`SkipList::lower_bound_by`].
    pub(crate) fn last_below_by(
        &self,
        target: Option<impl Fn(&K) -> CmpOrdering>,
    ) -> Option<Entry<'_, K>> {
        let (mut from, mut stop): (Link<K>, *mut Node<K>) = (None, ptr::null_mut());
        for level in (0..self.height.load(Ordering::Acquire)).rev() {
            from = match &target {
                Some(target) => {
                    let (before, after) = self.search_level(from, level, target, false, stop);
                    stop = after;
                    before
                }
                None => loop {
                    match NonNull::new(self.link_at(from, level).load(Ordering::Acquire)) {
                        Some(node) => from = Some(node),
                        None => break from,
                    }
                },
            };
        }
        from.map(Entry::new)
    }

    /// Adds `key` with `value`. If a live node holds an identical key, the new node replaces it
    /// and its value is returned.
    #[cfg(test)]
    pub(crate) fn insert(&self, key: K, value: u64) -> Option<u64> {
        self.insert_after(key, value, None, &|_: &K, _: &K| false).0
    }

    /// [`SkipList::insert`], and when the node the new one went in right after (at the bottom
    /// level) starts before the new key's group (`before_group(that key, new key)`: a row's
    /// cells, for the memstore), records that node as the hint for `hash`, the group's hash:
    /// [`SkipList::lower_bound_hinted`] then starts there. The group's first node's
    /// predecessor is where a search for the group's start lands. When `seen` (the group may
    /// have been hinted), the insert's own search starts at the group's hint too, if there is
    /// one before the key (see [`SkipList::finger_splice`]). Returns what
    /// [`SkipList::insert`] does, and the bytes the hints allocated (see `row_hints`).
    ///
    /// `same_run(new key, later key)` says whether a later key belongs to the new key's run
    /// (a column's versions, for the memstore, which a read that is done with the column
    /// skips): the new node then records where its run ends, as far as its successor knew,
    /// and finger searches jump there from it ([`climb`]) instead of stepping over the run.
    pub(crate) fn insert_hinted(
        &self,
        key: K,
        value: u64,
        hash: u64,
        seen: bool,
        before_group: impl Fn(&K, &K) -> bool,
        same_run: impl Fn(&K, &K) -> bool,
    ) -> (Option<u64>, usize) {
        // A hint is a node of this list (only this method records one), which frees its nodes
        // only when it drops.
        let finger = seen
            .then(|| self.hints.lookup(hash))
            .flatten()
            .and_then(NonNull::new);
        let (replaced, placed) = self.insert_after(key, value, finger, &same_run);
        let mut allocated = 0;
        if let Some((prev, node)) = placed
            // SAFETY: both are published nodes of this list.
            && before_group(unsafe { &(*prev.as_ptr()).key }, unsafe {
                &(*node.as_ptr()).key
            })
        {
            allocated = self.hints.record(hash, prev.as_ptr());
        }
        (replaced, allocated)
    }

    /// Bytes the row hints have allocated.
    pub(crate) fn hint_bytes(&self) -> usize {
        self.hints.allocated_bytes()
    }

    /// The first node whose key is at least the target, as [`SkipList::lower_bound_by`], from
    /// the node hinted for `hash` when it sorts before the target (a finger search from there:
    /// the target is usually its next node), else from the top.
    pub(crate) fn lower_bound_hinted(
        &self,
        hash: u64,
        target: impl Fn(&K) -> CmpOrdering,
    ) -> Option<Entry<'_, K>> {
        if let Some(node) = self.hints.lookup(hash).and_then(NonNull::new) {
            // A hint is a node of this list (only `insert_hinted` records one), which frees
            // its nodes only when it drops.
            let hinted = Entry::new(node);
            if target(hinted.key()) == CmpOrdering::Less {
                return self.lower_bound_after(hinted, target);
            }
        }
        self.lower_bound_by(target)
    }

    /// [`SkipList::insert`], returning also, for a new node (not a replacement), the node it
    /// went in right after at the bottom level (none: first in the list) and the new node.
    /// `finger`, a node of this list, is where the search may start (see
    /// [`SkipList::finger_splice`]); the top of the list when it cannot.
    fn insert_after(
        &self,
        key: K,
        value: u64,
        finger: Option<NonNull<Node<K>>>,
        same_run: &impl Fn(&K, &K) -> bool,
    ) -> (Option<u64>, Option<Placed<K>>) {
        let height = random_height();
        let target = |k: &K| k.cmp(&key);
        let mut splice = finger
            .and_then(|finger| self.finger_splice(finger, &target, height))
            .unwrap_or_else(|| self.search(&target, false));
        if let Some(next) = NonNull::new(splice.next[0])
            // SAFETY: a node reached through the list is published.
            && unsafe { (*next.as_ptr()).key == key }
        {
            return (self.replace(self.new_node(key, value, 1)), None);
        }
        let node = self.new_node(key, value, height);
        // SAFETY: `node` is initialized and unpublished; only this thread reads it so far.
        let key = unsafe { &(*node.as_ptr()).key };
        let mut current = self.height.load(Ordering::Relaxed);
        while height > current {
            match self.height.compare_exchange_weak(
                current,
                height,
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(_) => break,
                Err(now) => current = now,
            }
        }
        for level in 0..height {
            loop {
                if level == 0 {
                    let end = run_end_from(splice.next[0], key, same_run);
                    // SAFETY: the node is not published yet: the CAS below publishes it.
                    unsafe { (*node.as_ptr()).run_end.store(end, Ordering::Relaxed) };
                }
                // SAFETY: `level < height`, the node's own tower.
                unsafe { (*tower(node, level)).store(splice.next[level], Ordering::Relaxed) };
                // Release: a reader that follows this pointer sees the node's key, value and
                // its tower below (stored before).
                if self
                    .link_at(splice.prev[level], level)
                    .compare_exchange(
                        splice.next[level],
                        node.as_ptr(),
                        Ordering::AcqRel,
                        Ordering::Acquire,
                    )
                    .is_ok()
                {
                    break;
                }
                // A node went in next to ours: find the neighbours again from the left one,
                // which still sorts before the key.
                let (prev, next) = self.search_level(
                    splice.prev[level],
                    level,
                    &|k: &K| k.cmp(key),
                    false,
                    ptr::null_mut(),
                );
                if level == 0
                    && let Some(found) = NonNull::new(next)
                    // SAFETY: a node reached through the list is published.
                    && unsafe { (*found.as_ptr()).key == *key }
                {
                    // A first insert of the same key won the race: ours, linked nowhere yet,
                    // replaces it.
                    return (self.replace(node), None);
                }
                splice.prev[level] = prev;
                splice.next[level] = next;
            }
        }
        // SAFETY: a published node; the flag is atomic. Release: a climb that reads it set
        // sees every level's link.
        unsafe { (*node.as_ptr()).linked.store(true, Ordering::Release) };
        self.len.fetch_add(1, Ordering::Relaxed);
        (None, splice.prev[0].map(|prev| (prev, node)))
    }

    /// Links `node` (unlinked) at the bottom level after every node with its key, and marks
    /// the live one among them removed, returning its value.
    fn replace(&self, node: NonNull<Node<K>>) -> Option<u64> {
        let _one_at_a_time = self.replacing.lock();
        // SAFETY: `node` is initialized and still private to this thread.
        let key = unsafe { &(*node.as_ptr()).key };
        let target = |k: &K| k.cmp(key);
        let splice = self.search(&target, false);
        let mut live = None;
        let mut at = NonNull::new(splice.next[0]).map(Entry::<K>::new);
        while let Some(entry) = at
            && entry.key() == key
        {
            if !entry.is_removed() {
                live = Some(entry);
            }
            at = entry.next();
        }
        let mut prev = splice.prev[0];
        loop {
            // Past every node with the key: only greater keys can go in meanwhile (an equal
            // one waits for the mutex), so the node lands right after the last equal one.
            let (p, next) = self.search_level(prev, 0, &target, true, ptr::null_mut());
            prev = p;
            // SAFETY: level 0 of the node's own tower.
            unsafe { (*tower(node, 0)).store(next, Ordering::Relaxed) };
            if self
                .link_at(prev, 0)
                .compare_exchange(next, node.as_ptr(), Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                break;
            }
        }
        match live {
            Some(old) => {
                // SAFETY: a published node; the mark is atomic.
                unsafe { (*old.node.as_ptr()).removed.store(true, Ordering::Release) };
                Some(old.value())
            }
            None => {
                self.len.fetch_add(1, Ordering::Relaxed);
                None
            }
        }
    }

    /// Marks the live node holding exactly `key` removed and returns its value.
    #[cfg(test)]
    pub(crate) fn remove(&self, key: &K) -> Option<u64> {
        self.remove_by(|k| k.cmp(key))
    }

    /// Marks the live node whose key orders equal to the target removed and returns its
    /// value; `target` as for [`SkipList::lower_bound_by`].
    pub(crate) fn remove_by(&self, target: impl Fn(&K) -> CmpOrdering) -> Option<u64> {
        let _one_at_a_time = self.replacing.lock();
        let mut at = self.lower_bound_by(&target);
        while let Some(entry) = at {
            if target(entry.key()) != CmpOrdering::Equal {
                return None;
            }
            if !entry.is_removed() {
                // SAFETY: a published node; the mark is atomic.
                unsafe {
                    (*entry.node.as_ptr())
                        .removed
                        .store(true, Ordering::Release)
                };
                self.len.fetch_sub(1, Ordering::Relaxed);
                return Some(entry.value());
            }
            at = entry.next();
        }
        None
    }

    /// A node holding `key` and `value`, `height` levels high, its tower null.
    fn new_node(&self, key: K, value: u64, height: usize) -> NonNull<Node<K>> {
        let size = offset_of!(Node<K>, tower) + height * size_of::<AtomicPtr<Node<K>>>();
        let node = self
            .arena
            .lock()
            .alloc(size, align_of::<Node<K>>())
            .cast::<Node<K>>();
        // SAFETY: the arena handed out `size` bytes aligned for a node, for this node alone.
        unsafe {
            ptr::write(
                node.as_ptr(),
                Node {
                    key,
                    value,
                    run_end: AtomicPtr::new(ptr::null_mut()),
                    removed: AtomicBool::new(false),
                    linked: AtomicBool::new(false),
                    height: height as u8,
                    tower: [],
                },
            );
            for level in 0..height {
                ptr::write(
                    tower(node, level).cast_mut(),
                    AtomicPtr::new(ptr::null_mut()),
                );
            }
        }
        node
    }
}

impl<K> Drop for SkipList<K> {
    fn drop(&mut self) {
        // Every node is linked at the bottom level (an insert either links its node or hands
        // it to `replace`, which does), so the walk drops every key once.
        let mut at = NonNull::new(*self.head[0].get_mut());
        while let Some(node) = at {
            // SAFETY: `&mut self`: no reader is left; the node is initialized, and its level 0
            // pointer is read before its key is dropped in place.
            unsafe {
                at = NonNull::new(next(node, 0));
                debug_assert!((*node.as_ptr()).height >= 1);
                ptr::drop_in_place(&raw mut (*node.as_ptr()).key);
            }
        }
        // The arena frees its blocks when it drops, after the keys.
    }
}

/// Where the run of a node placed before `next` ends: `next` itself, or the end `next`
/// recorded, when `next` is of the new key's run (`same_run`); null otherwise.
fn run_end_from<K>(
    next: *mut Node<K>,
    key: &K,
    same_run: &impl Fn(&K, &K) -> bool,
) -> *mut Node<K> {
    match NonNull::new(next).map(Entry::<K>::new) {
        Some(next) if same_run(key, next.key()) => next.run_end().unwrap_or(next).node.as_ptr(),
        _ => ptr::null_mut(),
    }
}

/// From `from` (sorting before the target), the climb of a finger search: along the tallest
/// pointer of each node passed while it lands before the target, and from a node to the end of
/// its run ([`Node::run_end`]) when that lands before the target (a hot column's versions, which
/// a climb by pointers alone stepped over in `log d` steps, each a cache miss). Returns the node
/// reached, the level the climb stands at there, and the node after it at that level (at or
/// after the target; null at the end). Every node reached sorts before the target, and each
/// after the one before, so a descent from the node reached finds the target's neighbours at
/// that level and below.
///
/// A node still being inserted is linked at its lower levels only: the climb stands on it at
/// the level it came through (a node reached by a jump, or `from`, at the bottom level) until
/// its [`Node::linked`] flag says every level is linked. A finger insert links its node after
/// the node the climb reached at each of those levels, and a link made at a level where that
/// node was not linked yet was lost when its inserter wrote the level's pointer: the new node
/// then lay in the levels below but not in that one (one run in sixty of the concurrent
/// hinted-insert test).
fn climb<K>(
    from: Entry<'_, K>,
    target: &impl Fn(&K) -> CmpOrdering,
) -> (NonNull<Node<K>>, usize, *mut Node<K>) {
    let (mut node, mut level) = (from, from.top_level(0));
    loop {
        // Not to the node right after: that jump saves no step and costs a comparison, a
        // cache miss on its key (most runs are a version or two).
        if let Some(end) = node.run_end()
            && node.next().is_none_or(|next| next.node != end.node)
            && target(end.key()) == CmpOrdering::Less
        {
            (node, level) = (end, end.top_level(0));
        }
        // SAFETY: `level < node.height` (`top_level`'s result).
        let next = unsafe { next(node.node, level) };
        match NonNull::new(next).map(Entry::new) {
            Some(ahead) if target(ahead.key()) == CmpOrdering::Less => {
                (node, level) = (ahead, ahead.top_level(level));
            }
            _ => return (node.node, level, next),
        }
    }
}

/// A search's neighbours at every level.
struct Splice<K> {
    prev: [Link<K>; MAX_HEIGHT],
    next: [*mut Node<K>; MAX_HEIGHT],
}

/// 1 with probability 3/4, 2 with 3/16, and so on: each next level holds a quarter of the
/// nodes (RocksDB's branching factor 4).
fn random_height() -> usize {
    use std::cell::Cell;
    thread_local! {
        static STATE: Cell<u64> = const { Cell::new(0) };
    }
    let bits = STATE.with(|state| {
        let mut x = state.get();
        if x == 0 {
            // Seeded per thread from the state's address and a counter; any nonzero seed works.
            static SEEDS: AtomicUsize = AtomicUsize::new(0x9E37_79B9);
            x = (state as *const Cell<u64> as u64)
                ^ (SEEDS.fetch_add(0x7F4A_7C15, Ordering::Relaxed) as u64).rotate_left(32)
                | 1;
        }
        // xorshift64
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        state.set(x);
        x
    });
    // Two bits per level: a level is added while both are zero.
    let extra = (bits.trailing_zeros() / 2) as usize;
    (1 + extra).min(MAX_HEIGHT)
}

/// Blocks that nodes are bump-allocated from, freed together.
#[derive(Debug, Default)]
struct Arena {
    /// The free part of the newest block.
    cursor: usize,
    end: usize,
    blocks: Vec<(NonNull<u8>, Layout)>,
}

// SAFETY: the arena only hands out and frees memory; the blocks are plain bytes.
unsafe impl Send for Arena {}

impl Arena {
    /// `size` bytes aligned to `align` (at most 16), never handed out again.
    fn alloc(&mut self, size: usize, align: usize) -> NonNull<u8> {
        debug_assert!(align <= 16 && size <= FIRST_BLOCK);
        let start = self.cursor.next_multiple_of(align);
        if self.blocks.is_empty() || start + size > self.end {
            let block_size = match self.blocks.last() {
                None => FIRST_BLOCK,
                Some((_, layout)) => (layout.size() * 2).min(MAX_BLOCK),
            };
            let layout = match Layout::from_size_align(block_size, 16) {
                Ok(layout) => layout,
                Err(_) => unreachable!("a block is a few KiB, aligned to 16"),
            };
            // SAFETY: the layout's size is not zero.
            let block = unsafe { alloc(layout) };
            let Some(block) = NonNull::new(block) else {
                handle_alloc_error(layout)
            };
            self.blocks.push((block, layout));
            self.cursor = block.as_ptr() as usize;
            self.end = self.cursor + block_size;
            return self.alloc(size, align);
        }
        self.cursor = start + size;
        let (block, layout) = self.blocks[self.blocks.len() - 1];
        let offset = start - block.as_ptr() as usize;
        debug_assert!(offset + size <= layout.size());
        // SAFETY: `offset + size` lies within the block (checked above), so the pointer keeps
        // the block's provenance and stays in bounds.
        unsafe { block.add(offset) }
    }

    /// Bytes allocated in blocks, for tests.
    #[cfg(test)]
    fn block_bytes(&self) -> usize {
        self.blocks.iter().map(|(_, layout)| layout.size()).sum()
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        for (block, layout) in self.blocks.drain(..) {
            // SAFETY: allocated by `alloc` with this layout, freed once.
            unsafe { dealloc(block.as_ptr(), layout) };
        }
    }
}

#[cfg(test)]
mod tests;
