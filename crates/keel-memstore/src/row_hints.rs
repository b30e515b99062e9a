//! Row hints: for a row's hash, a skip-list node that sorted just before the row's first cell
//! when the hint was recorded, so that a get starts its search there (a finger search, a step
//! or two) instead of at the list's top (a cache miss per node on the way down: a third of a
//! get of a row that the memstore shares with a store file).
//!
//! A hint is only ever a place to start: the list checks that the node sorts before the search
//! target and otherwise searches from the top. So a hint may be stale (rows inserted after it
//! lie between it and the row; the finger search steps over them in `log d`), overwritten by
//! another row whose hash shares the slot, or torn between two writers (one's tag, the other's
//! node): each costs speed, never a wrong answer. Nodes are never freed before their list, so a
//! hint never dangles while the list lives.
//!
//! The table grows like [`crate::row_filter`]'s levels: a level of slots takes hints until it
//! holds as many rows as slots, then the next, four times larger, takes over. A lookup tries the
//! newest level first, then the older ones. Levels are allocated only when reached: 16 bytes a
//! slot, so 21 bytes per row when the newest level is full and up to 85 just after it was
//! allocated. Unlike the row filter's few bits, that is counted: [`RowHints::record`] returns
//! what it allocated, which the segment adds to its size. A row may take any of the four slots
//! of one cache line.

use std::mem::size_of;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering};

/// Slots in the first level: 16 KiB.
const FIRST_LEVEL_SLOTS: usize = 1024;
/// Each level has this many times the slots of the one before.
const GROWTH: usize = 4;
/// Levels at most: the last holds 1024 × 4⁹ slots (4 GiB) and is never reached by a memstore of
/// HBase's sizes; if it were, it would keep taking hints, overwriting more of them.
const LEVELS: usize = 10;
/// Slots in a group: one cache line, any of whose slots a row may take.
const WAYS: usize = 4;

/// One row's hint: its hash (the tag: which row the slot speaks for) and the node.
struct Slot<T> {
    tag: AtomicU64,
    node: AtomicPtr<T>,
}

/// The slots a row may take, in one cache line: a row whose hash lands on a group finds a free
/// slot there or takes the one its hash picks, and a lookup reads the line once. With one slot
/// per hash, colliding rows overwrote each other's hints: 4 in 10 gets of a 20 000-row segment
/// found none.
#[repr(align(64))]
struct Group<T>([Slot<T>; WAYS]);

/// Hints from row hashes to nodes of type `T`; see the module doc.
pub(crate) struct RowHints<T> {
    levels: [OnceLock<Box<[Group<T>]>>; LEVELS],
    /// Rows given a slot in each level (a slot taken over from another row counts again).
    counts: [AtomicUsize; LEVELS],
    /// The level hints go to.
    current: AtomicUsize,
}

impl<T> Default for RowHints<T> {
    fn default() -> Self {
        RowHints {
            levels: std::array::from_fn(|_| OnceLock::new()),
            counts: std::array::from_fn(|_| AtomicUsize::new(0)),
            current: AtomicUsize::new(0),
        }
    }
}

impl<T> std::fmt::Debug for RowHints<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RowHints")
            .field("current", &self.current.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

fn groups_of(level: usize) -> usize {
    FIRST_LEVEL_SLOTS * GROWTH.pow(level as u32) / WAYS
}

/// The group of `groups` (a power of two) that `hash` lands on.
#[inline]
fn group_of<T>(groups: &[Group<T>], hash: u64) -> &Group<T> {
    &groups[(hash as usize) & (groups.len() - 1)]
}

impl<T> RowHints<T> {
    /// Records `node` as where a search for the row hashing to `hash` may start. Returns the
    /// bytes this call allocated (a new level's), for the segment's size.
    pub(crate) fn record(&self, hash: u64, node: *mut T) -> usize {
        let level = self.current.load(Ordering::Relaxed);
        let mut allocated = 0;
        let groups = self.levels[level].get_or_init(|| {
            allocated = groups_of(level) * size_of::<Group<T>>();
            (0..groups_of(level))
                .map(|_| {
                    Group(std::array::from_fn(|_| Slot {
                        tag: AtomicU64::new(0),
                        node: AtomicPtr::new(std::ptr::null_mut()),
                    }))
                })
                .collect()
        });
        let group = &group_of(groups, hash).0;
        let tags = group
            .each_ref()
            .map(|slot| slot.tag.load(Ordering::Relaxed));
        let slot = match tags.iter().position(|tag| *tag == hash) {
            Some(own) => &group[own],
            None => {
                let rows = self.counts[level].fetch_add(1, Ordering::Relaxed) + 1;
                if rows >= groups.len() * WAYS && level + 1 < LEVELS {
                    // Whoever loses this race finds the level already moved on.
                    let _ = self.current.compare_exchange(
                        level,
                        level + 1,
                        Ordering::Relaxed,
                        Ordering::Relaxed,
                    );
                }
                // A free slot, or the one the hash's top bits pick (not the bits that chose
                // the group).
                let free = tags.iter().position(|tag| *tag == 0);
                &group[free.unwrap_or((hash >> 62) as usize)]
            }
        };
        // The node before the tag: a reader that sees this tag sees this node or a later one.
        slot.node.store(node, Ordering::Release);
        slot.tag.store(hash, Ordering::Release);
        allocated
    }

    /// Bytes of the levels allocated so far.
    pub(crate) fn allocated_bytes(&self) -> usize {
        (0..LEVELS)
            .filter(|&level| self.levels[level].get().is_some())
            .map(|level| groups_of(level) * size_of::<Group<T>>())
            .sum()
    }

    /// The node last recorded for the row hashing to `hash`, if a slot still speaks for it.
    #[inline]
    pub(crate) fn lookup(&self, hash: u64) -> Option<*mut T> {
        let newest = self.current.load(Ordering::Relaxed);
        for level in (0..=newest).rev() {
            let Some(groups) = self.levels[level].get() else {
                continue;
            };
            for slot in &group_of(groups, hash).0 {
                if slot.tag.load(Ordering::Acquire) == hash {
                    let node = slot.node.load(Ordering::Acquire);
                    if !node.is_null() {
                        return Some(node);
                    }
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recorded_row_is_found_and_an_unrecorded_one_is_not() {
        let hints = RowHints::<u32>::default();
        let mut nodes: Vec<u32> = (0..10_000).collect();
        let ptrs: Vec<*mut u32> = nodes.iter_mut().map(|n| n as *mut u32).collect();
        // Hashes spread like `row_hash`'s; 10 000 rows fill levels 0 to 2 and start level 3.
        let hash = |i: u64| (i + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let allocated: usize = ptrs
            .iter()
            .enumerate()
            .map(|(i, ptr)| hints.record(hash(i as u64), *ptr))
            .sum();
        // Levels of 1 024, 4 096 and 16 384 slots (10 000 rows moved past the second).
        assert_eq!(allocated, (1024 + 4096 + 16_384) * 16);
        assert_eq!(hints.allocated_bytes(), allocated);
        assert!(hints.current.load(Ordering::Relaxed) >= 2, "levels grow");
        let found = (0..ptrs.len())
            .filter(|&i| hints.lookup(hash(i as u64)) == Some(ptrs[i]))
            .count();
        // Collisions overwrite some hints; most rows keep theirs.
        assert!(
            found > ptrs.len() * 9 / 10,
            "{found} of {} found",
            ptrs.len()
        );
        for (i, ptr) in ptrs.iter().enumerate() {
            if let Some(node) = hints.lookup(hash(i as u64)) {
                assert_eq!(node, *ptr, "a slot that speaks for a row holds its node");
            }
        }
        assert_eq!(hints.lookup(hash(20_000)), None);
        // A newer hint for a row replaces the older one where the newest level holds it.
        hints.record(hash(3), ptrs[7]);
        assert_eq!(hints.lookup(hash(3)), Some(ptrs[7]));
    }
}
