//! What a region gives a split or a merge: its split point, whether it still reads a parent's
//! files, and the manifest a daughter (or a merged region) starts from — references to this
//! region's files, clipped to the daughter's rows, so nothing is rewritten on the way.

use std::sync::atomic::Ordering;

use bytes::Bytes;

use super::Region;
use crate::error::RegionError;
use crate::manifest::{FileRef, Manifest};

impl Region {
    /// Whether the region still reads files of a parent region (a split's or merge's
    /// references, until a compaction rewrites them). Such a region cannot split or merge
    /// again yet (HBase's rule).
    pub fn has_references(&self) -> bool {
        !self.manifest.lock().refs.is_empty()
    }

    /// The bytes of the region's largest store (its families' store files), what HBase's split
    /// policy compares with its threshold.
    pub fn largest_store_bytes(&self) -> u64 {
        self.stores
            .values()
            .map(|s| {
                s.files
                    .read()
                    .iter()
                    .map(|f| f.info().file_len)
                    .sum::<u64>()
            })
            .max()
            .unwrap_or(0)
    }

    /// Where HBase would split the region: the mid row of the largest file of its largest
    /// store (`StoreUtils.getSplitPoint`). `None` when it has references, no files, or a mid row
    /// that would leave a daughter empty.
    pub fn split_point(&self) -> Result<Option<Bytes>, RegionError> {
        if self.has_references() {
            return Ok(None);
        }
        let largest_store = self.stores.values().max_by_key(|s| {
            s.files
                .read()
                .iter()
                .map(|f| f.info().file_len)
                .sum::<u64>()
        });
        let Some(store) = largest_store else {
            return Ok(None);
        };
        let largest_file = store
            .files
            .read()
            .iter()
            .max_by_key(|f| f.info().file_len)
            .cloned();
        match largest_file {
            Some(file) => Ok(file.mid_row()?),
            None => Ok(None),
        }
    }

    /// The manifest of a region that takes this one's rows in `[start, end)` (a split's
    /// daughter, or a merge's result): a reference to each of this region's files that may
    /// hold such rows, the sequence id this region is flushed to (so the new region's edits
    /// come after every one of its), and file numbers past this region's (so a file of its own
    /// can never take a referenced file's name).
    pub(crate) fn manifest_for(&self, start: &Bytes, end: &Bytes) -> Manifest {
        let manifest = self.manifest.lock();
        let mut refs = Vec::new();
        for (family, name) in &manifest.files {
            let Some(store) = self.stores.get(family) else {
                continue;
            };
            let path = store.dir.join(name);
            let Some(file) = store
                .files
                .read()
                .iter()
                .find(|f| f.path() == path)
                .cloned()
            else {
                continue;
            };
            let info = file.info();
            let (first, last) = (info.first_key.row(), info.last_key.row());
            let overlaps = (end.is_empty() || first < end) && last >= start;
            if overlaps {
                refs.push(FileRef {
                    family: family.clone(),
                    parent: self.id,
                    name: name.clone(),
                    start: start.clone(),
                    end: end.clone(),
                });
            }
        }
        Manifest {
            flushed: manifest.flushed,
            next_file: self.next_file_id.load(Ordering::Relaxed),
            last_major_ms: 0,
            files: Vec::new(),
            refs,
        }
    }
}

/// Merges two regions' manifests for the region that replaces them (the flushed point and file
/// numbers of the later of the two).
pub(crate) fn merged_manifest(a: Manifest, b: Manifest) -> Manifest {
    let mut refs = a.refs;
    refs.extend(b.refs);
    Manifest {
        flushed: a.flushed.max(b.flushed),
        next_file: a.next_file.max(b.next_file),
        last_major_ms: 0,
        files: Vec::new(),
        refs,
    }
}
