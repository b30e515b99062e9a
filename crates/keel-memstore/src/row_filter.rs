//! Which rows a segment holds cells of: a Bloom filter that grows with the segment, so a get of
//! a row the segment never saw skips the segment without searching its skip list.
//!
//! Why: a get searches every segment's skip list for its row. Once a region has flushed, most
//! rows a read asks for live only in store files, and with one cell per column a skip list of a
//! million cells costs a cache miss per level: on YCSB C with ten columns per record the search
//! was a third of a get. A store file answers "not here" with its row Bloom filter; a segment
//! now does too.
//!
//! The filter is a series of levels, each four times the bits of the one before, filled in
//! turn: a level takes rows until it holds its capacity (16 bits per row), then inserts go to
//! the next. A query checks every level. A level is blocked: a row's four bits lie in one 64-bit
//! word, so checking a level is one load. Nothing is ever cleared (a removed cell's row stays:
//! a false positive, never a false negative), and levels are allocated only when reached, so an
//! idle segment costs nothing and a segment of `n` rows 2.7 to 8 bytes per row (2.7 when its
//! newest level is full, more just after that level was allocated whole).
//!
//! Ordering: a writer sets the bits (release) before it inserts the cell, and the cell becomes
//! visible to a read only through the region's read point (MVCC, sequentially consistent),
//! which it publishes after the insert. A reader that can see the cell therefore sees the bits.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// Words (of 64 bits) in the first level: 4 KiB, 2 048 rows.
const FIRST_LEVEL_WORDS: usize = 512;
/// Each level has this many times the words of the one before.
const GROWTH: usize = 4;
/// Levels at most: the last holds 512 × 4⁹ words (1 GiB) and is never reached by a memstore of
/// HBase's sizes; if it were, it would keep taking rows with a rising false-positive rate.
const LEVELS: usize = 10;
/// Rows a word takes before its level counts as full (16 bits per row).
const ROWS_PER_WORD: u64 = 4;

#[derive(Debug, Default)]
pub(crate) struct RowFilter {
    levels: [OnceLock<Box<[AtomicU64]>>; LEVELS],
    /// Rows inserted into each level (duplicates within a level are not counted).
    counts: [AtomicU64; LEVELS],
    /// The level inserts go to.
    current: AtomicUsize,
}

fn words_of(level: usize) -> usize {
    FIRST_LEVEL_WORDS * GROWTH.pow(level as u32)
}

/// The word a row's bits are in, and the bits.
#[inline]
fn probe(hash: u64, words: usize) -> (usize, u64) {
    let word = (hash as usize) & (words - 1);
    let mut bits = 0;
    for i in 0..4 {
        bits |= 1u64 << ((hash >> (32 + 6 * i)) & 63);
    }
    (word, bits)
}

/// A fast 64-bit hash of a row (a multiply-rotate over eight bytes at a time, then murmur's
/// finaliser): the filter needs spread, not resistance to chosen keys, and a row is hashed on
/// every insert and every get.
#[inline]
pub(crate) fn row_hash(row: &[u8]) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut h = (row.len() as u64).wrapping_mul(K);
    let mut chunks = row.chunks_exact(8);
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        h = (h ^ u64::from_le_bytes(word))
            .wrapping_mul(K)
            .rotate_left(31);
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut word = [0u8; 8];
        word[..rest.len()].copy_from_slice(rest);
        h = (h ^ u64::from_le_bytes(word))
            .wrapping_mul(K)
            .rotate_left(31);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xFF51_AFD7_ED55_8CCD);
    h ^= h >> 33;
    h = h.wrapping_mul(0xC4CE_B9FE_1A85_EC53);
    h ^ (h >> 33)
}

impl RowFilter {
    fn level(&self, level: usize) -> &[AtomicU64] {
        self.levels[level].get_or_init(|| (0..words_of(level)).map(|_| AtomicU64::new(0)).collect())
    }

    /// Records that the segment holds a cell of the row with hash `hash` (from [`row_hash`]).
    /// Call before the cell goes into the skip list. True when the level taking rows already
    /// held the row (or a row whose bits it shares): whether a hint for the row may exist.
    pub(crate) fn insert(&self, hash: u64) -> bool {
        let level = self.current.load(Ordering::Acquire);
        let words = self.level(level);
        let (word, bits) = probe(hash, words.len());
        if words[word].load(Ordering::Relaxed) & bits == bits {
            return true;
        }
        words[word].fetch_or(bits, Ordering::Release);
        let count = self.counts[level].fetch_add(1, Ordering::Relaxed) + 1;
        if count >= words.len() as u64 * ROWS_PER_WORD && level + 1 < LEVELS {
            // Whoever fills the level moves inserts on; a racing filler finds it moved.
            let _ = self.current.compare_exchange(
                level,
                level + 1,
                Ordering::AcqRel,
                Ordering::Relaxed,
            );
        }
        false
    }

    /// False only if no cell of the row with hash `hash` was ever inserted.
    pub(crate) fn may_contain(&self, hash: u64) -> bool {
        // Levels are allocated in order, so the allocated ones are a prefix.
        self.levels.iter().map_while(OnceLock::get).any(|words| {
            let (word, bits) = probe(hash, words.len());
            words[word].load(Ordering::Acquire) & bits == bits
        })
    }

    /// Bytes the allocated levels take.
    #[cfg(test)]
    pub(crate) fn allocated_bytes(&self) -> usize {
        self.levels
            .iter()
            .map_while(OnceLock::get)
            .map(|words| words.len() * 8)
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_false_negatives_and_few_false_positives_as_it_grows() {
        let filter = RowFilter::default();
        assert_eq!(filter.allocated_bytes(), 0, "an idle segment costs nothing");
        let rows = 200_000u64;
        for i in 0..rows {
            filter.insert(row_hash(format!("user{i:012}").as_bytes()));
        }
        for i in 0..rows {
            assert!(filter.may_contain(row_hash(format!("user{i:012}").as_bytes())));
        }
        let false_positives = (0..100_000u64)
            .filter(|i| filter.may_contain(row_hash(format!("other{i:011}").as_bytes())))
            .count();
        assert!(
            false_positives < 3_000,
            "{false_positives} false positives in 100 000"
        );
        let per_row = filter.allocated_bytes() as f64 / rows as f64;
        // 200 000 rows just overflowed the 174 080 the first four levels take, so the fifth
        // (1 MiB) is allocated whole: the worst case is about 8 bytes per row.
        assert!(per_row < 8.0, "{per_row} bytes per row");
    }

    #[test]
    fn duplicates_do_not_fill_a_level() {
        let filter = RowFilter::default();
        assert!(!filter.insert(row_hash(b"hot")), "a new row is new");
        for _ in 0..100_000 {
            assert!(
                filter.insert(row_hash(b"hot")),
                "a row inserted before is seen"
            );
        }
        assert_eq!(filter.current.load(Ordering::Relaxed), 0);
        assert!(filter.may_contain(row_hash(b"hot")));
        assert!(!filter.may_contain(row_hash(b"cold")));
    }

    #[test]
    fn concurrent_inserts_are_all_found() {
        let filter = std::sync::Arc::new(RowFilter::default());
        let threads: Vec<_> = (0..4u64)
            .map(|t| {
                let filter = std::sync::Arc::clone(&filter);
                std::thread::spawn(move || {
                    for i in 0..20_000u64 {
                        filter.insert(row_hash(&(t * 1_000_000 + i).to_be_bytes()));
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().expect("inserter");
        }
        for t in 0..4u64 {
            for i in 0..20_000u64 {
                assert!(filter.may_contain(row_hash(&(t * 1_000_000 + i).to_be_bytes())));
            }
        }
    }
}
