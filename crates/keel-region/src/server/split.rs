//! Splitting a region in two and merging two adjacent regions in one, as crash-safe steps with
//! the catalog as the commit point (HBase's `SplitTableRegionProcedure` and
//! `MergeTableRegionsProcedure`, whose `UPDATE_META` step is the point of no return):
//! 1. the region(s) close: writes stop, everything is flushed, the WAL lets go;
//! 2. the new regions' directories are made, each with a manifest that *refers* to the closed
//!    regions' files, clipped to its rows (HBase's reference files: nothing is rewritten), its
//!    flushed sequence id and file numbers past theirs — all synced;
//! 3. the catalog is written with the new regions in place of the old: the commit;
//! 4. the new regions open and take over routing; compactions rewrite their references later.
//!
//! A crash before step 3 reopens to the old regions (their files are complete; the new
//! directories are unnamed and removed at open); at or after it, to the new ones (their
//! manifests were synced first). Never both, never neither, and every acknowledged write is in
//! a flushed file. A closed region's directory stays while a region still refers to its files;
//! the janitor ([`State::remove_orphans`]) removes it once none does.

use std::sync::Arc;

use bytes::Bytes;

use super::admin::remove_tree;
use super::table::{LiveRegions, RegionInfo, TableRegions};
use super::{Hosted, Serving, State};
use crate::catalog::{RegionEntry, TableEntry};
use crate::error::{RegionError, io};
use crate::manifest::Manifest;
use crate::region::{Region, merged_manifest};
use crate::trace::event;

impl State {
    /// The table's live regions and its entry, for a split or merge.
    fn open_table_for_change(
        &self,
        table: &str,
    ) -> Result<(TableEntry, Arc<LiveRegions>), RegionError> {
        let tables = self.tables.read();
        let hosted = tables
            .get(table)
            .ok_or_else(|| RegionError::NoSuchTable(table.to_string()))?;
        match &hosted.serving {
            Serving::Open(live) => Ok((hosted.entry.clone(), Arc::clone(live))),
            Serving::Disabled => Err(RegionError::TableDisabled(table.to_string())),
            Serving::FailedOpen(reason) => Err(RegionError::FailedOpen {
                table: table.to_string(),
                reason: reason.clone(),
            }),
        }
    }

    /// Splits region `region_id` of `table` at row `at` (or at its split point, the mid row of
    /// its largest file). Returns the two new regions.
    pub(crate) fn split_region(
        &self,
        table: &str,
        region_id: u64,
        at: Option<Bytes>,
    ) -> Result<[RegionInfo; 2], RegionError> {
        let mut catalog = self.catalog.lock();
        let (entry, live) = self.open_table_for_change(table)?;
        let regions = live.get();
        let index = regions
            .regions
            .iter()
            .position(|(e, _)| e.id == region_id)
            .ok_or_else(|| refused(table, region_id, "no such region"))?;
        let (parent_entry, parent) = regions.regions[index].clone();
        if parent.has_references() {
            return Err(refused(
                table,
                region_id,
                "it still reads its parent's files (a compaction rewrites them first)",
            ));
        }
        let split = match at {
            Some(row) => row,
            None => parent
                .split_point()?
                .ok_or_else(|| refused(table, region_id, "it has no row to split at"))?,
        };
        let inside = split > parent_entry.start_key
            && (parent_entry.end_key.is_empty() || split < parent_entry.end_key);
        if !inside {
            return Err(refused(
                table,
                region_id,
                "the split row is not strictly inside the region",
            ));
        }
        let mut next = catalog.clone();
        let daughters = [
            RegionEntry {
                id: next.next_region,
                start_key: parent_entry.start_key.clone(),
                end_key: split.clone(),
            },
            RegionEntry {
                id: next.next_region + 1,
                start_key: split,
                end_key: parent_entry.end_key.clone(),
            },
        ];
        next.next_region += 2;
        let t = next
            .tables
            .iter_mut()
            .find(|t| t.name == table)
            .ok_or_else(|| RegionError::NoSuchTable(table.to_string()))?;
        t.regions.splice(index..=index, daughters.iter().cloned());
        let new_entry = t.clone();

        live.set_changing(true);
        let result = self.replace_regions(
            &entry,
            &new_entry,
            &live,
            &[(parent_entry, parent)],
            &daughters,
            |daughter| {
                Ok(regions.regions[index]
                    .1
                    .manifest_for(&daughter.start_key, &daughter.end_key))
            },
            &mut next,
        );
        live.set_changing(false);
        result?;
        *catalog = next;
        event!(INFO, table = %table, parent = region_id, "region split");
        Ok(daughters.map(|d| RegionInfo {
            id: d.id,
            start_key: d.start_key,
            end_key: d.end_key,
        }))
    }

    /// Merges two adjacent regions of `table` into one. Returns it.
    pub(crate) fn merge_regions(
        &self,
        table: &str,
        a: u64,
        b: u64,
    ) -> Result<RegionInfo, RegionError> {
        let mut catalog = self.catalog.lock();
        let (entry, live) = self.open_table_for_change(table)?;
        let regions = live.get();
        let first = regions
            .regions
            .iter()
            .position(|(e, _)| e.id == a || e.id == b)
            .ok_or_else(|| refused(table, a, "no such region"))?;
        let second = first + 1;
        let adjacent = regions.regions.get(second).is_some_and(|(e, _)| {
            let ids = [regions.regions[first].0.id, e.id];
            ids.contains(&a) && ids.contains(&b) && a != b
        });
        if !adjacent {
            return Err(refused(table, a, "the two regions are not adjacent"));
        }
        let olds = [
            regions.regions[first].clone(),
            regions.regions[second].clone(),
        ];
        if olds.iter().any(|(_, r)| r.has_references()) {
            return Err(refused(
                table,
                a,
                "a region still reads its parent's files (a compaction rewrites them first)",
            ));
        }
        let mut next = catalog.clone();
        let merged = RegionEntry {
            id: next.next_region,
            start_key: olds[0].0.start_key.clone(),
            end_key: olds[1].0.end_key.clone(),
        };
        next.next_region += 1;
        let t = next
            .tables
            .iter_mut()
            .find(|t| t.name == table)
            .ok_or_else(|| RegionError::NoSuchTable(table.to_string()))?;
        t.regions
            .splice(first..=second, std::iter::once(merged.clone()));
        let new_entry = t.clone();
        live.set_changing(true);
        let result = self.replace_regions(
            &entry,
            &new_entry,
            &live,
            &olds,
            std::slice::from_ref(&merged),
            |m| {
                Ok(merged_manifest(
                    olds[0].1.manifest_for(&m.start_key, &m.end_key),
                    olds[1].1.manifest_for(&m.start_key, &m.end_key),
                ))
            },
            &mut next,
        );
        live.set_changing(false);
        result?;
        *catalog = next;
        event!(INFO, table = %table, a = a, b = b, "regions merged");
        Ok(RegionInfo {
            id: merged.id,
            start_key: merged.start_key,
            end_key: merged.end_key,
        })
    }

    /// The shared steps of a split or merge: close `olds`, write the new regions' directories
    /// and manifests, commit `next` (the catalog with `new_entry`), open the new regions and
    /// route to them. Before the commit any failure puts the old regions back as they were.
    #[expect(clippy::too_many_arguments, reason = "one procedure's parts, named")]
    fn replace_regions(
        &self,
        entry: &TableEntry,
        new_entry: &TableEntry,
        live: &Arc<LiveRegions>,
        olds: &[(RegionEntry, Arc<Region>)],
        news: &[RegionEntry],
        manifest: impl Fn(&RegionEntry) -> Result<Manifest, RegionError>,
        next: &mut crate::catalog::Catalog,
    ) -> Result<(), RegionError> {
        let _ = entry;
        // 1. Close: writes stop, everything flushed, the WAL let go.
        let mut closed: Vec<Arc<Region>> = Vec::new();
        for (_, region) in olds {
            if let Err(e) = region.close() {
                for r in &closed {
                    let _ = r.reopen();
                }
                return Err(e);
            }
            closed.push(Arc::clone(region));
        }
        let undo = |state: &State| {
            for n in news {
                state.discard_region_dir(n.id);
            }
            for r in &closed {
                let _ = r.reopen();
            }
        };
        // 2. The new regions' directories and manifests, synced.
        for n in news {
            let written = (|| {
                let dir = self.region_dir(n.id);
                if self.fs.exists(&dir).map_err(|e| io("stat", &dir, e))? {
                    remove_tree(&*self.fs, &dir).map_err(|e| io("remove leftover", &dir, e))?;
                }
                self.fs
                    .create_dir_durable(&dir)
                    .map_err(|e| io("create directory", &dir, e))?;
                manifest(n)?.store(&*self.fs, &dir)
            })();
            if let Err(e) = written {
                undo(self);
                return Err(e);
            }
        }
        // 3. The commit.
        if let Err(e) = next.store(&*self.fs, &self.dir) {
            undo(self);
            return Err(e);
        }
        // 4. Open the new regions and route to them. (A failure here leaves the table's
        // regions in the catalog, as committed: the table is failed until it opens.)
        let mut opened = Vec::with_capacity(news.len());
        for n in news {
            let opening = self.load_region(new_entry, n.id).and_then(|region| {
                region.finish_open()?;
                Ok(region)
            });
            match opening {
                Ok(region) => opened.push((n.clone(), Arc::new(region))),
                Err(e) => {
                    let reason =
                        format!("region {} failed to open after a split or merge: {e}", n.id);
                    let mut tables = self.tables.write();
                    tables.insert(
                        new_entry.name.clone(),
                        Hosted {
                            entry: new_entry.clone(),
                            serving: self.failed(new_entry, reason),
                        },
                    );
                    return Err(e);
                }
            }
        }
        let current = live.get();
        let old_ids: Vec<u64> = olds.iter().map(|(e, _)| e.id).collect();
        let mut list = Vec::with_capacity(current.regions.len() + 1);
        let mut placed = false;
        for (e, r) in &current.regions {
            if old_ids.contains(&e.id) {
                if !placed {
                    list.append(&mut opened);
                    placed = true;
                }
            } else {
                list.push((e.clone(), Arc::clone(r)));
            }
        }
        live.set(Arc::new(TableRegions { regions: list }));
        if let Some(hosted) = self.tables.write().get_mut(&new_entry.name) {
            hosted.entry = new_entry.clone();
        }
        Ok(())
    }
}

fn refused(table: &str, region: u64, why: &str) -> RegionError {
    RegionError::SplitRefused {
        table: table.to_string(),
        region,
        why: why.to_string(),
    }
}
