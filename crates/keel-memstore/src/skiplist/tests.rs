//! The arena skip list against a `BTreeMap`, alone and under concurrent writers.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use proptest::prelude::*;

use super::{Entry, MAX_HEIGHT, SkipList, next};

/// The live entries, in order, as the memstore's walks see them.
fn live(list: &SkipList<u32>) -> Vec<(u32, u64)> {
    let mut out = Vec::new();
    let mut at = list.front();
    while let Some(entry) = at {
        if !entry.is_removed() {
            out.push((*entry.key(), entry.value()));
        }
        at = entry.next();
    }
    out
}

/// Checks every level's links: each level is in key order (strictly above the bottom, where
/// a replacement sits beside the node it replaced), and a node `h` high is linked into every
/// level below `h`, at each in the bottom level's order; so an insert that linked a node at
/// the wrong place of any level fails here.
fn check_levels<K: Ord + std::fmt::Debug>(list: &SkipList<K>) {
    let mut bottom = Vec::new();
    let mut at = list.front();
    while let Some(entry) = at {
        bottom.push(entry.node);
        at = entry.next();
    }
    // SAFETY: only ever given published nodes of `list`, whose heights never change.
    let height =
        |node: std::ptr::NonNull<super::Node<K>>| unsafe { usize::from((*node.as_ptr()).height) };
    let key = |node| Entry::new(node).key();
    for level in 0..MAX_HEIGHT {
        let expected: Vec<_> = bottom
            .iter()
            .copied()
            .filter(|&n| height(n) > level)
            .collect();
        let mut linked = Vec::new();
        let mut at = std::ptr::NonNull::new(list.head[level].load(Ordering::Acquire));
        while let Some(node) = at {
            assert!(
                height(node) > level,
                "a node {} high at level {level}",
                height(node)
            );
            linked.push(node);
            // SAFETY: `level < height(node)`, checked above.
            at = std::ptr::NonNull::new(unsafe { next(node, level) });
        }
        assert_eq!(
            linked, expected,
            "level {level} links other nodes than the bottom's"
        );
        for pair in linked.windows(2) {
            let (a, b) = (key(pair[0]), key(pair[1]));
            if level == 0 {
                assert!(a <= b, "level 0: {a:?} before {b:?}");
            } else {
                assert!(a < b, "level {level}: {a:?} before {b:?}");
            }
        }
    }
}

/// Every node's recorded run end (see `SkipList::insert_hinted`) sorts after it and is of its
/// run, so every node between them is too.
fn check_runs<K: Ord + std::fmt::Debug>(list: &SkipList<K>, same_run: impl Fn(&K, &K) -> bool) {
    let mut at = list.front();
    while let Some(entry) = at {
        if let Some(end) = entry.run_end() {
            let (from, to) = (entry.key(), end.key());
            assert!(from < to, "a run's end {to:?} before its node {from:?}");
            assert!(
                same_run(from, to),
                "{from:?}'s run ends at {to:?}, of another run"
            );
        }
        at = entry.next();
    }
}

fn first_live<K>(mut at: Option<Entry<'_, K>>) -> Option<Entry<'_, K>> {
    while let Some(entry) = at {
        if !entry.is_removed() {
            return Some(entry);
        }
        at = entry.next();
    }
    None
}

#[derive(Clone, Debug)]
enum Op {
    Insert(u32, u64),
    Remove(u32),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u32..64, any::<u64>()).prop_map(|(k, v)| Op::Insert(k, v)),
        1 => (0u32..64).prop_map(Op::Remove),
    ]
}

/// `cases` cases, or `miri_cases` under Miri, which interprets every case hundreds of times
/// slower (a few cases still walk each path) and isolates the test from the file system, where
/// proptest keeps its failures.
fn config(cases: u32, miri_cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases: if cfg!(miri) { miri_cases } else { cases },
        failure_persistence: if cfg!(miri) {
            None
        } else {
            ProptestConfig::default().failure_persistence
        },
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config(256, 4))]

    #[test]
    fn matches_a_btreemap(ops in prop::collection::vec(op(), 0..300), probe in 0u32..70) {
        let list = SkipList::new();
        let mut oracle = BTreeMap::new();
        for op in ops {
            match op {
                Op::Insert(k, v) => prop_assert_eq!(list.insert(k, v), oracle.insert(k, v)),
                Op::Remove(k) => prop_assert_eq!(list.remove(&k), oracle.remove(&k)),
            }
            prop_assert_eq!(list.len(), oracle.len());
        }
        let expected: Vec<(u32, u64)> = oracle.iter().map(|(k, v)| (*k, *v)).collect();
        prop_assert_eq!(live(&list), expected);
        let at = first_live(list.lower_bound(&probe)).map(|e| (*e.key(), e.value()));
        prop_assert_eq!(at, oracle.range(probe..).next().map(|(k, v)| (*k, *v)));
        // The last node below the probe, removed or not: its key is below, and no live key
        // lies between it and the probe.
        let below = list.last_below(Some(&probe)).map(|e| *e.key());
        if let Some(below) = below {
            prop_assert!(below < probe);
            prop_assert!(oracle.range(below + 1..probe).next().is_none());
        } else {
            prop_assert!(oracle.range(..probe).next().is_none());
        }
        let last = list.last_below(None).map(|e| *e.key());
        prop_assert!(last >= oracle.keys().next_back().copied());
    }
}

/// A finger search from each start (a node picked by index, a probe `ahead` past its key)
/// lands on the node the search from the top finds.
fn finger_searches_land_as_from_the_top(
    list: &SkipList<u32>,
    starts: &[(prop::sample::Index, u32)],
) -> Result<(), TestCaseError> {
    let mut nodes = Vec::new();
    let mut at = list.front();
    while let Some(entry) = at {
        nodes.push(entry);
        at = entry.next();
    }
    for (index, ahead) in starts {
        let start = *index.get(&nodes);
        let probe = start.key() + ahead;
        let finger = list.lower_bound_after(start, |k: &u32| k.cmp(&probe));
        let top = list.lower_bound(&probe);
        prop_assert_eq!(
            finger.map(|e| e.node),
            top.map(|e| e.node),
            "{} to {}",
            start.key(),
            probe
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(64, 2))]

    /// A finger search from any node lands on the node a search from the top finds, on lists
    /// tall enough to climb (removed nodes included, as both count them).
    #[test]
    fn a_finger_search_lands_where_a_search_from_the_top_does(
        keys in prop::collection::vec(0u32..4000, 1..1500),
        removed in prop::collection::vec(0u32..4000, 0..50),
        starts in prop::collection::vec((any::<prop::sample::Index>(), 1u32..600), 1..40),
    ) {
        let list = SkipList::new();
        for (i, key) in keys.iter().enumerate() {
            list.insert(*key, i as u64);
        }
        for key in removed {
            list.remove(&key);
        }
        finger_searches_land_as_from_the_top(&list, &starts)?;
    }
}

proptest! {
    #![proptest_config(config(64, 2))]

    /// Hinted inserts and searches against the plain ones. Keys are grouped in eights (a
    /// "row"); the hash of a group is its number modulo `slots_apart`, so with few distinct
    /// hashes groups overwrite each other's hints (and hint at nodes far from, or after, the
    /// searched key): a search must land where the search from the top does whatever the hint.
    /// Keys also come in runs of `run_width` (a column's versions; wider than a row too, so
    /// that runs span rows and hints lie inside them): a finger search from any node, which
    /// jumps to run ends, must land where the search from the top does too.
    #[test]
    fn a_hinted_search_lands_where_a_search_from_the_top_does(
        keys in prop::collection::vec(0u32..4000, 1..1500),
        removed in prop::collection::vec(0u32..4000, 0..50),
        probes in prop::collection::vec(0u32..4100, 1..60),
        slots_apart in prop_oneof![Just(1u64), Just(3), Just(u64::MAX)],
        run_width in prop_oneof![Just(1u32), Just(4), Just(64)],
        starts in prop::collection::vec((any::<prop::sample::Index>(), 1u32..600), 1..40),
    ) {
        let hash = |key: u32| (u64::from(key / 8) % slots_apart).wrapping_add(1);
        let before_group = |a: &u32, b: &u32| a / 8 != b / 8;
        let same_run = |a: &u32, b: &u32| a / run_width == b / run_width;
        let list = SkipList::new();
        let mut oracle = BTreeMap::new();
        for (i, key) in keys.iter().enumerate() {
            let (replaced, _) =
                list.insert_hinted(*key, i as u64, hash(*key), true, before_group, same_run);
            prop_assert_eq!(replaced, oracle.insert(*key, i as u64));
        }
        for key in removed {
            prop_assert_eq!(list.remove(&key), oracle.remove(&key));
        }
        let expected: Vec<(u32, u64)> = oracle.iter().map(|(k, v)| (*k, *v)).collect();
        prop_assert_eq!(live(&list), expected);
        check_levels(&list);
        check_runs(&list, same_run);
        for probe in probes {
            let hinted = list.lower_bound_hinted(hash(probe), |k: &u32| k.cmp(&probe));
            let top = list.lower_bound(&probe);
            prop_assert_eq!(hinted.map(|e| e.node), top.map(|e| e.node), "to {}", probe);
        }
        finger_searches_land_as_from_the_top(&list, &starts)?;
    }
}

/// A search for a row's start from its hint compares a few keys, where the search from the top
/// of a list of 100 000 compares dozens: the hint is what makes a get's positioning cheap.
#[test]
fn a_hinted_search_for_a_rows_start_compares_a_few_keys() {
    let list = SkipList::new();
    // Rows of four keys, inserted in a scrambled order, so that rows' first nodes arrive
    // after other rows went in around them.
    let rows = if cfg!(miri) { 200u32 } else { 25_000 };
    for i in 0..rows * 4 {
        let key = (i.wrapping_mul(2_654_435_761) % (rows * 4)) * 2 + 2;
        list.insert_hinted(
            key,
            0,
            u64::from(key / 8) + 1,
            true,
            |a: &u32, b: &u32| a / 8 != b / 8,
            |_: &u32, _: &u32| false,
        );
    }
    let compared = AtomicUsize::new(0);
    let count = |target: u32| {
        let compared = &compared;
        move |k: &u32| {
            compared.fetch_add(1, Ordering::Relaxed);
            k.cmp(&target)
        }
    };
    let (mut hinted, mut from_top) = (0, 0);
    let sample = rows.min(1000);
    for row in 0..sample {
        let start = row * 8;
        compared.store(0, Ordering::Relaxed);
        let found = list.lower_bound_hinted(u64::from(row) + 1, count(start));
        hinted += compared.load(Ordering::Relaxed);
        compared.store(0, Ordering::Relaxed);
        let top = list.lower_bound_by(count(start));
        from_top += compared.load(Ordering::Relaxed);
        assert_eq!(found.map(|e| e.node), top.map(|e| e.node));
    }
    let (hinted, from_top) = (
        hinted as f64 / f64::from(sample),
        from_top as f64 / f64::from(sample),
    );
    // Measured: 6.7 hinted, 24.9 from the top (rows inserted after a hint was recorded lie
    // between it and its row: the finger search steps over them).
    assert!(hinted < 10.0, "{hinted} comparisons a hinted search");
    if !cfg!(miri) {
        assert!(
            from_top > 3.0 * hinted,
            "{from_top} from the top, {hinted} hinted"
        );
    }
}

/// A key that counts how often it is compared (on this thread).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Compared(u32);

thread_local! {
    static COMPARISONS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

impl PartialOrd for Compared {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Compared {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        COMPARISONS.with(|c| c.set(c.get() + 1));
        self.0.cmp(&other.0)
    }
}

/// A new version of a row whose hint is recorded goes in from the hint: a few comparisons,
/// where an insert searched from the top of a list of 100 000 compares dozens. (Each row's
/// keys count down, as a memstore row's versions do: the newest sorts first.)
#[test]
fn an_insert_into_a_hinted_row_starts_at_the_hint() {
    let rows: u32 = if cfg!(miri) { 100 } else { 25_000 };
    let versions = 4;
    let key = |row: u32, version: u32| Compared(row * 64 + 63 - version);
    let before_group = |a: &Compared, b: &Compared| a.0 / 64 != b.0 / 64;
    let hash = |k: &Compared| u64::from(k.0 / 64) + 1;
    let no_runs = |_: &Compared, _: &Compared| false;
    let (hinted, plain) = (SkipList::new(), SkipList::new());
    for version in 0..versions {
        for i in 0..rows {
            let row = i.wrapping_mul(2_654_435_761) % rows;
            let k = key(row, version);
            hinted.insert_hinted(k, 0, hash(&k), true, before_group, no_runs);
            plain.insert(k, 0);
        }
    }
    let count = |insert: &dyn Fn(Compared)| {
        let sample = rows.min(1000);
        let before = COMPARISONS.with(std::cell::Cell::get);
        for row in 0..sample {
            insert(key(row * (rows / sample), versions));
        }
        (COMPARISONS.with(std::cell::Cell::get) - before) as f64 / f64::from(sample)
    };
    let from_hint = count(&|k| {
        hinted.insert_hinted(k, 0, hash(&k), true, before_group, no_runs);
    });
    let from_top = count(&|k| {
        plain.insert(k, 0);
    });
    check_levels(&hinted);
    assert_eq!(
        live_keys(&hinted),
        live_keys(&plain),
        "both lists hold the same keys"
    );
    // Measured: 8.7–9.7 from the hint, 29.5–32.5 from the top (a fifth of inserts are taller
    // than the node the climb reaches, and search their upper levels from the top).
    assert!(
        from_hint < 12.0,
        "{from_hint} comparisons an insert from the hint"
    );
    if !cfg!(miri) {
        assert!(
            from_top > 2.0 * from_hint,
            "{from_top} from the top, {from_hint} from the hint"
        );
    }
}

/// A finger search past a hot column (a reseek once a read is done with the column) jumps to
/// the end of the column's run from any of its versions: a few comparisons, where climbing
/// over hundreds of versions compares a dozen or more keys, each a cache miss in a memstore.
#[test]
fn a_search_past_a_hot_column_jumps_to_the_runs_end() {
    let (rows, hot_rows, versions): (u32, u32, u32) = if cfg!(miri) {
        (40, 4, 40)
    } else {
        (5_000, 50, 400)
    };
    // Row, column (eight), version: newer versions sort first, as in a memstore.
    let key = |row: u32, column: u32, version: u32| {
        Compared((row << 16) | (column << 11) | (2047 - version))
    };
    let before_group = |a: &Compared, b: &Compared| a.0 >> 16 != b.0 >> 16;
    let hash = |k: &Compared| u64::from(k.0 >> 16) + 1;
    let same_column = |a: &Compared, b: &Compared| a.0 >> 11 == b.0 >> 11;
    let no_runs = |_: &Compared, _: &Compared| false;
    let (runs, plain) = (SkipList::new(), SkipList::new());
    let insert = |k: Compared| {
        runs.insert_hinted(k, 0, hash(&k), true, before_group, same_column);
        plain.insert_hinted(k, 0, hash(&k), true, before_group, no_runs);
    };
    for i in 0..rows {
        // Every row, scrambled (7 919 is a prime that divides neither row count).
        let row = i * 7_919 % rows;
        for column in 0..8 {
            insert(key(row, column, 0));
        }
    }
    for version in 1..versions {
        for row in 0..hot_rows {
            insert(key(row, 3, version));
        }
    }
    check_runs(&runs, same_column);
    let count = |list: &SkipList<Compared>, version: u32| {
        let mut compared = 0;
        for row in 0..hot_rows {
            let from = list.lower_bound(&key(row, 3, version)).expect("a version");
            let past = Compared((row << 16) | (4 << 11));
            let before = COMPARISONS.with(std::cell::Cell::get);
            let found = list.lower_bound_after(from, |k: &Compared| k.cmp(&past));
            compared += COMPARISONS.with(std::cell::Cell::get) - before;
            assert_eq!(found.map(|e| *e.key()), Some(key(row, 4, 0)));
        }
        compared as f64 / f64::from(hot_rows)
    };
    // From the newest version (a read's first step past the column) and from the third (the
    // scanner's reseek after passing two versions where they lie).
    for version in [versions - 1, versions - 3] {
        let (jumping, climbing) = (count(&runs, version), count(&plain, version));
        // Measured: 3.2 jumping, 29.4 climbing, from either version.
        assert!(
            jumping < 6.0,
            "{jumping} comparisons past a run from its version {version}"
        );
        if !cfg!(miri) {
            assert!(
                climbing > 2.0 * jumping,
                "{climbing} climbing, {jumping} jumping"
            );
        }
    }
}

fn live_keys<K: Copy + Ord>(list: &SkipList<K>) -> Vec<K> {
    let mut out = Vec::new();
    let mut at = list.front();
    while let Some(entry) = at {
        if !entry.is_removed() {
            out.push(*entry.key());
        }
        at = entry.next();
    }
    out
}

#[test]
fn a_replacement_hides_the_old_node_and_keeps_the_count() {
    let list = SkipList::new();
    assert_eq!(list.insert(5, 1), None);
    assert_eq!(list.insert(3, 0), None);
    assert_eq!(list.insert(5, 2), Some(1));
    assert_eq!(list.insert(5, 3), Some(2));
    assert_eq!(list.len(), 2);
    assert_eq!(live(&list), vec![(3, 0), (5, 3)]);
    assert_eq!(list.remove(&5), Some(3));
    assert_eq!(list.remove(&5), None, "already removed");
    assert_eq!(list.insert(5, 4), None, "a removed key counts as absent");
    assert_eq!(live(&list), vec![(3, 0), (5, 4)]);
    assert_eq!(list.len(), 2);
}

#[test]
fn searches_on_an_empty_list_find_nothing() {
    let list = SkipList::<u32>::new();
    assert!(list.front().is_none());
    assert!(list.lower_bound(&0).is_none());
    assert!(list.last_below(None).is_none());
    assert!(list.last_below(Some(&7)).is_none());
    assert_eq!(list.len(), 0);
}

/// A key that counts its drops.
#[derive(Debug)]
struct Counted(u32, Arc<AtomicUsize>);

impl PartialEq for Counted {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}
impl Eq for Counted {}
impl PartialOrd for Counted {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Counted {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.cmp(&other.0)
    }
}
impl Drop for Counted {
    fn drop(&mut self) {
        self.1.fetch_add(1, Ordering::Relaxed);
    }
}

#[test]
fn every_key_is_dropped_once_with_the_list_and_no_sooner() {
    let drops = Arc::new(AtomicUsize::new(0));
    let list = SkipList::new();
    for k in [9, 2, 7, 2, 4, 9, 9] {
        list.insert(Counted(k, drops.clone()), 0);
    }
    list.remove(&Counted(4, drops.clone()));
    // The probe given to `remove` was dropped by the call; nothing the list holds was.
    assert_eq!(drops.load(Ordering::Relaxed), 1);
    drop(list);
    assert_eq!(drops.load(Ordering::Relaxed), 1 + 7);
}

#[test]
fn the_arena_grows_by_doubling_blocks() {
    let list = SkipList::new();
    for k in 0..2_000u32 {
        list.insert(k, u64::from(k));
    }
    let blocks = list.arena.lock().blocks.len();
    let bytes = list.arena.lock().block_bytes();
    // 2 000 nodes of 40 bytes and up fill some 100 KiB: a handful of blocks, not thousands.
    assert!((3..=10).contains(&blocks), "{blocks} blocks");
    assert!(bytes < 1 << 20, "{bytes} bytes");
    assert_eq!(live(&list).len(), 2_000);
}

/// Writers insert overlapping keys (each thread its own values, so the survivor of a key is
/// one thread's last write of it) while a reader checks that every walk is sorted.
#[test]
fn concurrent_writers_leave_one_live_node_per_key_in_order() {
    let threads: u64 = if cfg!(miri) { 2 } else { 4 };
    let per_thread: u32 = if cfg!(miri) { 40 } else { 20_000 };
    let keys = per_thread / 2;
    for round in 0..if cfg!(miri) { 1 } else { 5 } {
        let list = Arc::new(SkipList::<u32>::new());
        let done = Arc::new(AtomicUsize::new(0));
        let reader = {
            let (list, done) = (list.clone(), done.clone());
            std::thread::spawn(move || {
                let mut walks = 0;
                while done.load(Ordering::Acquire) < threads as usize || walks == 0 {
                    let mut previous = None;
                    let mut at = list.front();
                    while let Some(entry) = at {
                        assert!(previous <= Some(*entry.key()), "walk out of order");
                        previous = Some(*entry.key());
                        at = entry.next();
                    }
                    walks += 1;
                }
            })
        };
        let writers: Vec<_> = (0..threads)
            .map(|t| {
                let (list, done) = (list.clone(), done.clone());
                std::thread::spawn(move || {
                    for i in 0..per_thread {
                        // Keys collide across threads and within one.
                        let key = (i.wrapping_mul(2_654_435_761) ^ round) % keys;
                        list.insert(key, t);
                    }
                    done.fetch_add(1, Ordering::Release);
                })
            })
            .collect();
        for writer in writers {
            writer.join().expect("writer");
        }
        reader.join().expect("reader");
        let entries = live(&list);
        assert_eq!(entries.len(), list.len());
        assert!(
            entries.windows(2).all(|w| w[0].0 < w[1].0),
            "one live node per key"
        );
        let distinct: std::collections::BTreeSet<u32> = (0..per_thread)
            .map(|i| (i.wrapping_mul(2_654_435_761) ^ round) % keys)
            .collect();
        assert_eq!(entries.len(), distinct.len());
        assert!(entries.iter().all(|(_, v)| *v < threads));
        for (key, _) in &entries {
            let found = first_live(list.lower_bound(key)).map(|e| *e.key());
            assert_eq!(found, Some(*key), "searches find every key");
        }
    }
}

/// Writers add new versions to shared rows through the rows' hints (each row's keys count
/// down, so most inserts land first in their row, right after the hint, where other writers'
/// nodes are going in too); every level stays linked in order and every key is found.
#[test]
fn concurrent_hinted_inserts_keep_every_level_in_order() {
    let threads: u32 = if cfg!(miri) { 2 } else { 4 };
    let per_thread: u32 = if cfg!(miri) { 40 } else { 20_000 };
    let rows: u32 = if cfg!(miri) { 4 } else { 64 };
    let before_group = |a: &u32, b: &u32| a >> 20 != b >> 20;
    // Runs of 1 024 keys: a row's versions fall into a few hot runs, which the writers grow
    // at their fronts concurrently.
    let same_run = |a: &u32, b: &u32| a >> 10 == b >> 10;
    // Eight rounds: a lost upper-level link (see `climb`) showed in one round in twenty.
    for round in 0..if cfg!(miri) { 1 } else { 8 } {
        let list = Arc::new(SkipList::<u32>::new());
        let writers: Vec<_> = (0..threads)
            .map(|t| {
                let list = list.clone();
                std::thread::spawn(move || {
                    for i in 0..per_thread {
                        let row = (i.wrapping_mul(2_654_435_761) ^ round ^ t) % rows;
                        // Distinct per thread and insert; newer versions sort first.
                        let key = (row << 20) | ((1 << 20) - 1 - (i * threads + t) % (1 << 20));
                        list.insert_hinted(
                            key,
                            u64::from(t),
                            u64::from(row) + 1,
                            true,
                            before_group,
                            same_run,
                        );
                    }
                })
            })
            .collect();
        for writer in writers {
            writer.join().expect("writer");
        }
        check_levels(&list);
        check_runs(&list, same_run);
        let keys = live_keys(&list);
        assert_eq!(keys.len(), (threads * per_thread) as usize);
        assert_eq!(list.len(), keys.len());
        for key in keys.iter().step_by(97) {
            assert_eq!(list.lower_bound(key).map(|e| *e.key()), Some(*key));
            // Past the key's run, from the key: jumping to the run's end lands right.
            let past = (key | ((1 << 10) - 1)) + 1;
            let entry = list.lower_bound(key).expect("found above");
            let after = list.lower_bound_after(entry, |k: &u32| k.cmp(&past));
            assert_eq!(
                after.map(|e| *e.key()),
                list.lower_bound(&past).map(|e| *e.key())
            );
        }
    }
}

/// Threads insert the same keys in the same order from one start, so first inserts of a key
/// race each other (the case where the loser must become a replacement).
#[test]
fn racing_first_inserts_of_one_key_leave_one_live_node() {
    let threads = if cfg!(miri) { 2 } else { 4 };
    let keys: u32 = if cfg!(miri) { 30 } else { 50_000 };
    let list = Arc::new(SkipList::<u32>::new());
    let start = Arc::new(std::sync::Barrier::new(threads));
    let writers: Vec<_> = (0..threads as u64)
        .map(|t| {
            let (list, start) = (list.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                let mut replaced = 0;
                for key in 0..keys {
                    replaced +=
                        usize::from(list.insert(key.wrapping_mul(2_654_435_761), t).is_some());
                }
                replaced
            })
        })
        .collect();
    let replaced: usize = writers.into_iter().map(|w| w.join().expect("writer")).sum();
    let entries = live(&list);
    assert!(
        entries.windows(2).all(|w| w[0].0 < w[1].0),
        "one live node per key"
    );
    assert_eq!(entries.len(), keys as usize);
    assert_eq!(list.len(), keys as usize);
    assert_eq!(
        replaced,
        (threads - 1) * keys as usize,
        "every insert but one per key replaced"
    );
}
