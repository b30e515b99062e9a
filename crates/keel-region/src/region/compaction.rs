//! Compaction of a region's store files: selection (HBase's exploring policy, or every file for
//! a major compaction), the merge — lossless for a minor compaction, through the matcher's
//! rules when every file of the family is in it — paced by the throughput throttle, and the
//! atomic commit through the manifest.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use bytes::Bytes;
use keel_cell::{CellKey, CellType};
use keel_storefile::{KeyValueScanner, MergeScanner, StoreFileReader, StoreFileWriter};

use super::{FILE_IDS, Region, Store, now_ms};
use crate::compaction_policy::CompactionPolicy;
use crate::error::RegionError;
use crate::limits::{CompactionThroughput, Throttle};
use crate::matcher::{Matcher, ReadQuery};

/// What one compaction did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CompactionOutcome {
    /// Store files that went away.
    pub files_removed: usize,
    /// Families whose every file was rewritten (deleted, expired and excess versions dropped).
    pub major_families: usize,
    /// Bytes of the files read.
    pub bytes_read: u64,
    /// Bytes of the files written.
    pub bytes_written: u64,
    /// Time the throttle made it sleep.
    pub throttled: Duration,
}

impl Region {
    /// Merges store files: per family, the files `policy` selects — or, with `major`, all of
    /// them — are rewritten as one, committed through the manifest like a flush, and the old
    /// files removed. Returns how many files went away. Unthrottled; the server's background
    /// compactions pace themselves (`EngineOptions::compaction_throughput`).
    ///
    /// A compaction of only some of a family's files keeps every cell (the other files' cells
    /// may need its markers). One that takes every file — a major compaction, or a selection
    /// that happens to cover them all, as in HBase — keeps only what a read could still return:
    /// the family's versions, unexpired cells (or its min versions), no delete markers and
    /// nothing they mask (`KEEP_DELETED_CELLS` false) — except markers with a timestamp at or
    /// above the oldest in the family's memstore, which may still mask a put written after
    /// them and are kept. As in HBase, a put written after the compaction with a timestamp
    /// older than a dropped marker is visible. No open read loses a version by it: it
    /// first waits until every write already in a store file is visible, so every new read sees
    /// what it applied, and gets and scans already open keep the files they started with (open
    /// handles), so only reads that start after the commit see the rewritten file.
    pub fn compact(&self, policy: &CompactionPolicy, major: bool) -> Result<usize, RegionError> {
        let unlimited = Throttle::new(CompactionThroughput::UNLIMITED);
        Ok(self
            .compact_throttled(policy, major, &unlimited)?
            .files_removed)
    }

    pub(crate) fn compact_throttled(
        &self,
        policy: &CompactionPolicy,
        major: bool,
        throttle: &Throttle,
    ) -> Result<CompactionOutcome, RegionError> {
        let _span = crate::trace::span!(INFO, "region.compact", region = self.id, major);
        let _one_at_a_time = self.compacting.lock();
        let cancelled = || RegionError::CompactionCancelled(self.id);
        if !self.is_open() {
            return Err(cancelled());
        }
        // Flushed files may hold writes whose MVCC entry has not completed; a compaction that
        // applies their markers must not run ahead of readers that cannot see them yet.
        self.mvcc.await_all();
        let mut outcome = CompactionOutcome::default();
        let mut run = throttle.start();
        for (name, store) in &self.stores {
            let files: Vec<Arc<StoreFileReader>> = store.files.read().clone();
            let window = if major {
                // A major compaction rewrites even a single file: it may hold markers to purge.
                if files.is_empty() {
                    continue;
                }
                0..files.len()
            } else {
                let sizes: Vec<u64> = files.iter().map(|f| f.info().file_len).collect();
                match policy.select(&sizes, false) {
                    Some(selection) => selection.files,
                    None => continue,
                }
            };
            let all_files = window.len() == files.len();
            let chosen = &files[window.clone()];
            let number = self.next_file_id.fetch_add(1, Ordering::Relaxed);
            let file_name = format!("{number:020}.ksf");
            let path = store.dir.join(&file_name);
            let mut options = store.files_options.clone();
            options.major_compaction = all_files;
            let mut writer = StoreFileWriter::create(Arc::clone(&self.fs), &path, options)?;
            let sources: Vec<Box<dyn KeyValueScanner>> = chosen
                .iter()
                .map(StoreFileReader::compaction_scanner)
                .collect();
            let mut merge = MergeScanner::new(sources, &CellKey::first_on_row(Bytes::new()))?;
            let mut keep = all_files.then(|| {
                let query = ReadQuery {
                    read_point: u64::MAX,
                    max_versions: u32::MAX,
                    ..ReadQuery::latest(u64::MAX, now_ms())
                };
                let mut families = HashMap::new();
                families.insert(name.clone(), store.rules);
                Matcher::new(query, families)
            });
            // Markers that could still mask a put already in the memstore stay (HBase drops
            // them, and such a put would reappear); markers older than everything there go.
            let memstore_oldest = store.memstore.size().min_timestamp;
            let mut written = 0u64;
            // Each cell is written from where it lies in its source, then passed over: never
            // moved out of the merge or counted (`KeyValueScanner::skip`).
            while let Some(cell) = merge.peek() {
                if !self.is_open() {
                    // The region is closing: nothing is committed; the next open removes the
                    // unfinished file.
                    return Err(cancelled());
                }
                let admitted = keep.as_mut().is_none_or(|matcher| matcher.admit(cell));
                let marker_kept = all_files
                    && cell.cell_type() != CellType::Put
                    && cell.timestamp() >= memstore_oldest;
                if admitted || marker_kept {
                    writer.append(cell)?;
                    written += 1;
                    let bytes = crate::limits::charge(std::slice::from_ref(cell));
                    merge.skip()?;
                    outcome.throttled += run
                        .wrote(bytes, || self.compaction_pressure(policy))
                        .map_err(|_| cancelled())?;
                } else {
                    merge.skip()?;
                }
            }
            outcome.bytes_read += chosen.iter().map(|f| f.info().file_len).sum::<u64>();
            let new_file = if written == 0 {
                // Everything was deleted: the family's files simply go (a file needs a cell).
                // The unfinished `.tmp` is removed on the next open.
                drop(writer);
                None
            } else {
                writer.finish()?;
                Some((file_name, path))
            };
            outcome.bytes_written +=
                self.commit_compaction(name, store, &files, window, new_file)?;
            outcome.files_removed += chosen.len();
            outcome.major_families += usize::from(all_files);
        }
        if major {
            let mut manifest = self.manifest.lock();
            let mut next = manifest.clone();
            next.last_major_ms = now_ms();
            next.store(&*self.fs, &self.dir)?;
            *manifest = next;
        }
        self.counters.record_compaction(&outcome, major);
        Ok(outcome)
    }

    /// Replaces `files[window]` of a family with the new file (or with nothing) in the
    /// manifest, then in the live list, then removes the old files. Returns the new file's
    /// length.
    fn commit_compaction(
        &self,
        name: &Bytes,
        store: &Store,
        files: &[Arc<StoreFileReader>],
        window: std::ops::Range<usize>,
        new_file: Option<(String, PathBuf)>,
    ) -> Result<u64, RegionError> {
        let chosen = &files[window.clone()];
        let old_paths: Vec<&std::path::Path> = chosen.iter().map(|f| f.path()).collect();
        {
            let mut manifest = self.manifest.lock();
            let mut next = manifest.clone();
            let own = |family: &Bytes, file: &String| {
                family == name && old_paths.contains(&store.dir.join(file).as_path())
            };
            let position = next
                .files
                .iter()
                .position(|(family, file)| own(family, file))
                .unwrap_or(next.files.len());
            next.files.retain(|(family, file)| !own(family, file));
            // References compacted away are dropped from the manifest; the parent's file stays
            // for the janitor (another region may still read it).
            next.refs.retain(|r| {
                !(r.family == name && old_paths.contains(&r.path(&self.dir).as_path()))
            });
            if let Some((file_name, _)) = &new_file {
                next.files.insert(
                    position.min(next.files.len()),
                    (name.clone(), file_name.clone()),
                );
            }
            next.next_file = self.next_file_id.load(Ordering::Relaxed);
            next.store(&*self.fs, &self.dir)?;
            *manifest = next;
        }
        let replacement = match new_file {
            Some((_, path)) => vec![Arc::new(StoreFileReader::open(
                &*self.fs,
                &path,
                FILE_IDS.fetch_add(1, Ordering::Relaxed),
                Arc::clone(&store.source),
            )?)],
            None => Vec::new(),
        };
        let written = replacement.first().map_or(0, |f| f.info().file_len);
        store.files.write().splice(window, replacement);
        for old in chosen.iter().filter(|f| f.range().is_none()) {
            // Committed without them; open readers keep their handles. A failed removal
            // leaves an unlisted file, which the next open removes. (A reference's file is
            // its parent's, not this region's to remove.)
            let _ = self.fs.remove(old.path());
        }
        Ok(written)
    }

    /// Whether some family holds enough store files for `policy` to consider a compaction.
    pub fn needs_compaction(&self, policy: &CompactionPolicy) -> bool {
        self.stores
            .values()
            .any(|s| s.files.read().len() >= policy.min_files.max(2))
    }

    /// Bytes a compaction would read now: the files `policy` selects per family, or all of
    /// them for a major one (the server's small/large pool split).
    pub fn compaction_input_size(&self, policy: &CompactionPolicy, major: bool) -> u64 {
        self.stores
            .values()
            .map(|store| {
                let sizes: Vec<u64> = store
                    .files
                    .read()
                    .iter()
                    .map(|f| f.info().file_len)
                    .collect();
                if major {
                    sizes.iter().sum()
                } else {
                    policy
                        .select(&sizes, false)
                        .map_or(0, |s| sizes[s.files].iter().sum())
                }
            })
            .sum()
    }

    /// HBase's compaction pressure: how close the fullest family is to `blocking_files`, from
    /// 0 at `min_files` to 1 at the blocking count (and above 1 beyond it).
    pub fn compaction_pressure(&self, policy: &CompactionPolicy) -> f64 {
        let most = self
            .stores
            .values()
            .map(|s| s.files.read().len())
            .max()
            .unwrap_or(0);
        let span = policy
            .blocking_files
            .saturating_sub(policy.min_files)
            .max(1);
        (most as f64 - policy.min_files as f64) / span as f64
    }

    /// Whether the periodic major compaction is due at `now_ms`: `period` (HBase
    /// `hbase.hregion.majorcompaction`, 7 days) ± `jitter` × period (0.5), a fixed offset per
    /// region so regions do not all compact at once, since the last one. A region whose every
    /// family has at most one file, already the output of a major compaction, is skipped.
    pub fn major_compaction_due(&self, period: Duration, jitter: f64, now_ms: i64) -> bool {
        if period.is_zero() {
            return false;
        }
        let settled = self.stores.values().all(|s| {
            let files = s.files.read();
            files.len() <= 1 && files.iter().all(|f| f.info().major_compaction)
        });
        if settled {
            return false;
        }
        // A deterministic offset in [-jitter, +jitter] from the region id (splitmix64).
        let mut x = self.id.wrapping_add(0x9E37_79B9_7F4A_7C15);
        x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        x ^= x >> 31;
        let unit = (x >> 11) as f64 / (1u64 << 53) as f64;
        let offset = (unit * 2.0 - 1.0) * jitter.clamp(0.0, 1.0);
        let due_after = period.as_millis() as f64 * (1.0 + offset);
        let last = self.manifest.lock().last_major_ms;
        let since = if last == 0 { self.opened_ms } else { last };
        (now_ms - since) as f64 >= due_after
    }
}
