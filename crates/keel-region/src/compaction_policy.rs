//! Which store files a minor compaction takes: HBase's `ExploringCompactionPolicy` (on its
//! `RatioBasedCompactionPolicy` base), as a pure function of the files' sizes, oldest first.
//!
//! Every contiguous window of `min_files..=max_files` files is a candidate. A window qualifies
//! if its total is under `min_size` (small files are always worth merging) or if no file in it
//! is larger than `ratio` × the sum of the others (so a compaction never rewrites one big file
//! to absorb a few small ones). The best window removes the most files, then costs the fewest
//! bytes. When the store holds `blocking_files` or more ("might be stuck"), the best is the one
//! that removes the most files per byte (replacing the current best only if better by 5%), and
//! if nothing qualifies the cheapest window is taken anyway. A selection of every file is major.

use std::ops::Range;

/// The policy's settings (HBase `hbase.hstore.compaction.*`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CompactionPolicy {
    /// `hbase.hstore.compaction.min` (`compactionThreshold`): 3 files at least.
    pub min_files: usize,
    /// `hbase.hstore.compaction.max`: 10 files at most.
    pub max_files: usize,
    /// `hbase.hstore.compaction.ratio`: 1.2.
    pub ratio: f64,
    /// `hbase.hstore.compaction.ratio.offpeak`: 5.0.
    pub off_peak_ratio: f64,
    /// `hbase.hstore.compaction.min.size`: windows under 128 MiB always qualify.
    pub min_size: u64,
    /// `hbase.hstore.compaction.max.size`: windows over this never do (unbounded by default).
    pub max_size: u64,
    /// `hbase.hstore.blockingStoreFiles`: 16; at this many files the store "might be stuck".
    pub blocking_files: usize,
}

impl Default for CompactionPolicy {
    fn default() -> CompactionPolicy {
        CompactionPolicy {
            min_files: 3,
            max_files: 10,
            ratio: 1.2,
            off_peak_ratio: 5.0,
            min_size: 128 << 20,
            max_size: u64::MAX,
            blocking_files: 16,
        }
    }
}

/// A chosen set of files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    /// Indices (into the sizes given, oldest first) of the contiguous files to compact.
    pub files: Range<usize>,
    /// The selection covers every file: a major compaction.
    pub major: bool,
}

impl CompactionPolicy {
    /// Chooses files to compact from `sizes` (bytes, oldest first), or `None`. `off_peak` uses
    /// the off-peak ratio.
    pub fn select(&self, sizes: &[u64], off_peak: bool) -> Option<Selection> {
        let ratio = if off_peak {
            self.off_peak_ratio
        } else {
            self.ratio
        };
        let min_files = self.min_files.max(2);
        let might_be_stuck = sizes.len() >= self.blocking_files;
        let mut best: Option<(Range<usize>, u64)> = None;
        let mut smallest: Option<(Range<usize>, u64)> = None;
        for start in 0..sizes.len() {
            for end in (start + min_files)..=sizes.len() {
                let window = start..end;
                if window.len() > self.max_files {
                    break;
                }
                let total: u64 = sizes[window.clone()].iter().sum();
                if total > self.max_size {
                    continue;
                }
                if might_be_stuck && smallest.as_ref().is_none_or(|(_, s)| total < *s) {
                    smallest = Some((window.clone(), total));
                }
                if total >= self.min_size && !in_ratio(&sizes[window.clone()], total, ratio) {
                    continue;
                }
                let better = match &best {
                    None => true,
                    Some((current, current_total)) => is_better(
                        current.len(),
                        *current_total,
                        window.len(),
                        total,
                        might_be_stuck,
                    ),
                };
                if better {
                    best = Some((window, total));
                }
            }
        }
        let (files, _) = best.or(if might_be_stuck { smallest } else { None })?;
        let major = files.len() == sizes.len();
        Some(Selection { files, major })
    }
}

/// No file is larger than `ratio` × the sum of the others.
fn in_ratio(window: &[u64], total: u64, ratio: f64) -> bool {
    window.len() < 2
        || window
            .iter()
            .all(|&size| size as f64 <= (total - size) as f64 * ratio)
}

/// HBase's `isBetterSelection`.
fn is_better(
    best_files: usize,
    best_size: u64,
    files: usize,
    size: u64,
    might_be_stuck: bool,
) -> bool {
    if might_be_stuck && best_size > 0 && size > 0 {
        // The most files removed per byte, replacing the current best only if 5% better.
        let threshold = best_files as f64 / best_size as f64 * 1.05;
        return threshold < files as f64 / size as f64;
    }
    files > best_files || (files == best_files && size < best_size)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The HBase book's ratio examples (`hbase.hstore.compaction.min.size` = 10 bytes, max 5
    /// files, ratio 1.0), through the exploring policy.
    fn book() -> CompactionPolicy {
        CompactionPolicy {
            min_files: 3,
            max_files: 5,
            ratio: 1.0,
            min_size: 10,
            max_size: 1000,
            ..CompactionPolicy::default()
        }
    }

    #[test]
    fn the_hbase_book_examples() {
        // 100, 50, 23, 12, 12: only the newest three are in ratio (23 ≤ 12 + 12).
        assert_eq!(
            book().select(&[100, 50, 23, 12, 12], false),
            Some(Selection {
                files: 2..5,
                major: false
            })
        );
        // 100, 25, 12, 12: no window of three is in ratio (25 > 12 + 12): nothing.
        assert_eq!(book().select(&[100, 25, 12, 12], false), None);
        // 7, 6, 5, 4, 3, 2, 1: every five-file window qualifies; the exploring policy prefers the
        // cheapest (the ratio-based one took the oldest five, 7..3).
        assert_eq!(
            book().select(&[7, 6, 5, 4, 3, 2, 1], false),
            Some(Selection {
                files: 2..7,
                major: false
            })
        );
    }

    #[test]
    fn small_windows_always_qualify_and_a_full_selection_is_major() {
        let policy = CompactionPolicy::default();
        let mib = 1 << 20;
        // Under 128 MiB in total: always eligible, however lopsided.
        assert_eq!(
            policy.select(&[100 * mib, mib, mib], false),
            Some(Selection {
                files: 0..3,
                major: true
            })
        );
        // Fewer than min_files: nothing.
        assert_eq!(policy.select(&[mib, mib], false), None);
        // Large and lopsided: out of ratio at 1.2, in ratio off-peak at 5.0.
        let sizes = [1000 * mib, 300 * mib, 300 * mib];
        assert_eq!(policy.select(&sizes, false), None);
        assert_eq!(
            policy.select(&sizes, true),
            Some(Selection {
                files: 0..3,
                major: true
            })
        );
    }

    #[test]
    fn at_most_max_files_and_the_most_files_win() {
        let policy = CompactionPolicy::default();
        let sizes = vec![1 << 20; 14];
        let chosen = policy.select(&sizes, false).unwrap();
        assert_eq!(chosen.files.len(), 10);
        assert!(!chosen.major);
        assert_eq!(chosen.files, 0..10, "equal candidates: the first found");
    }

    #[test]
    fn a_stuck_store_takes_the_cheapest_window_when_nothing_qualifies() {
        let policy = CompactionPolicy {
            blocking_files: 4,
            min_size: 1,
            ..CompactionPolicy::default()
        };
        // Each file 10× the next: no window is in ratio; stuck at 4 files, so the cheapest goes.
        let sizes = [100_000, 10_000, 1_000, 100];
        assert_eq!(
            policy.select(&sizes, false),
            Some(Selection {
                files: 1..4,
                major: false
            })
        );
        let relaxed = CompactionPolicy {
            blocking_files: 16,
            ..policy
        };
        assert_eq!(relaxed.select(&sizes, false), None);
    }

    #[test]
    fn every_selection_obeys_the_rules() {
        // Exhaustive over small stores: contiguous, within the file bounds, and in ratio or small.
        let policy = CompactionPolicy {
            min_size: 40,
            ratio: 1.2,
            blocking_files: 100,
            ..CompactionPolicy::default()
        };
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..2000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let n = (state % 12) as usize;
            let sizes: Vec<u64> = (0..n).map(|i| (state >> (i * 5)) % 60 + 1).collect();
            if let Some(sel) = policy.select(&sizes, false) {
                let window = &sizes[sel.files.clone()];
                let total: u64 = window.iter().sum();
                assert!(window.len() >= policy.min_files && window.len() <= policy.max_files);
                assert!(
                    total < policy.min_size || in_ratio(window, total, policy.ratio),
                    "{sizes:?} → {sel:?}"
                );
                assert_eq!(sel.major, sel.files.len() == sizes.len());
            } else {
                // Nothing chosen: no qualifying window exists.
                for start in 0..n {
                    for end in start + 3..=n.min(start + 10) {
                        let w = &sizes[start..end];
                        let t: u64 = w.iter().sum();
                        assert!(
                            t >= policy.min_size && !in_ratio(w, t, policy.ratio),
                            "{sizes:?} missed {start}..{end}"
                        );
                    }
                }
            }
        }
    }
}
