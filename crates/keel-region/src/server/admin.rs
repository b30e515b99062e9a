//! Table operations: create, disable, enable, delete, and a table's durability. Each is
//! crash-atomic with the catalog as its one commit point — a crash at any write or sync leaves
//! the state before or the state after, never a mix:
//! - **create**: the region's directories are made and synced, then the catalog names the
//!   table. A crash before the commit leaves an unnamed directory, removed at the next open.
//! - **disable**: the region closes (writes stop, a final flush), then the catalog says
//!   disabled. A crash before the commit finds the table enabled, every edit in store files.
//! - **enable**: the region opens (replaying what the WAL holds for it), then the catalog says
//!   enabled. A crash before the commit finds the table disabled, as it was.
//! - **delete**: the catalog forgets the table, then its directory goes (synced). A crash in
//!   between leaves an unnamed directory, removed at the next open; a table created later under
//!   the same name gets a new region id and an empty directory, so deleted rows never return.
//!
//! The catalog's lock makes table operations one at a time; the table map is locked only to
//! swap an entry, so replay, flush and file removal never hold up reads and writes of other
//! tables.

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;

use keel_fs::FileSystem;

use super::{Engine, Hosted, LiveRegions, Serving, State, Table, region_id_of};
use crate::catalog::{Catalog, RegionEntry, TableEntry};
use crate::error::{RegionError, io};
use crate::names::{TableName, check_family_name};
use crate::region::{Durability, FamilyOptions};
use crate::trace::event;

/// A table's own settings, beyond its families.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TableOptions {
    /// HBase's table `DURABILITY`: what `UseDefault` writes to it get (`UseDefault`: the
    /// server's `default_durability`).
    pub durability: Durability,
    /// Split keys for a pre-split table (HBase's `createTable(desc, splitKeys)`): the table
    /// starts as one region per range between them. Empty: one region, or the split keys
    /// [`super::EngineOptions::table_split_keys`] names for this table.
    pub split_keys: Vec<bytes::Bytes>,
}

impl State {
    /// Creates an enabled table. Its name must follow HBase's rules ([`crate::names`]), and
    /// so must every family's; at least one family, at most
    /// [`super::EngineOptions::max_families_per_table`], none named twice. The table is in the
    /// catalog, durably, before it is served.
    pub(crate) fn create_table_with(
        &self,
        name: &str,
        families: Vec<FamilyOptions>,
        options: TableOptions,
    ) -> Result<Table, RegionError> {
        let name = TableName::new(name)?;
        self.check_families(&name, &families)?;
        let split_keys = if options.split_keys.is_empty() {
            self.options
                .table_split_keys
                .get(name.as_str())
                .cloned()
                .unwrap_or_default()
        } else {
            options.split_keys.clone()
        };
        check_split_keys(&name, &split_keys)?;
        let mut catalog = self.catalog.lock();
        if catalog.tables.iter().any(|t| t.name == name.as_str()) {
            return Err(RegionError::TableExists(name.to_string()));
        }
        let mut next = catalog.clone();
        let mut bounds = vec![bytes::Bytes::new()];
        bounds.extend(split_keys);
        bounds.push(bytes::Bytes::new());
        let regions: Vec<RegionEntry> = bounds
            .windows(2)
            .map(|w| {
                let id = next.next_region;
                next.next_region += 1;
                RegionEntry {
                    id,
                    start_key: w[0].clone(),
                    end_key: w[1].clone(),
                }
            })
            .collect();
        let entry = TableEntry {
            name: name.to_string(),
            enabled: true,
            durability: options.durability,
            regions,
            families,
        };
        next.tables.push(entry.clone());
        for id in entry.region_ids() {
            let dir = self.region_dir(id);
            // An unnamed directory under this id can only be a leftover of a create that failed.
            if self.fs.exists(&dir).map_err(|e| io("stat", &dir, e))? {
                remove_tree(&*self.fs, &dir).map_err(|e| io("remove leftover", &dir, e))?;
            }
        }
        let discard = |server: &State| {
            for id in entry.region_ids() {
                let _ = server.wal.close_region(id);
                server.discard_region_dir(id);
            }
        };
        let regions = match self.open_table(&entry) {
            Ok(regions) => regions,
            Err(e) => {
                discard(self);
                return Err(e);
            }
        };
        if let Err(e) = next.store(&*self.fs, &self.dir) {
            drop(regions);
            discard(self);
            return Err(e);
        }
        *catalog = next;
        let live = LiveRegions::new(regions);
        self.tables.write().insert(
            entry.name.clone(),
            Hosted {
                entry,
                serving: Serving::Open(Arc::clone(&live)),
            },
        );
        Ok(Table {
            name: name.to_string(),
            live,
        })
    }

    fn check_families(
        &self,
        table: &TableName,
        families: &[FamilyOptions],
    ) -> Result<(), RegionError> {
        if families.is_empty() {
            return Err(RegionError::NoFamilies(table.to_string()));
        }
        let max = self.options.max_families_per_table;
        if families.len() > max {
            return Err(RegionError::TooManyFamilies {
                table: table.to_string(),
                count: families.len(),
                max,
            });
        }
        let mut seen = HashSet::with_capacity(families.len());
        for family in families {
            check_family_name(&family.name)?;
            if !seen.insert(&family.name) {
                return Err(RegionError::DuplicateFamily {
                    table: table.to_string(),
                    family: keel_cell::escape_bytes(&family.name),
                });
            }
        }
        Ok(())
    }

    /// Stops serving a table (HBase requires this before deleting it); persisted. Its region
    /// closes first: new writes are refused, writes in flight finish, everything is flushed, and
    /// the WAL lets go of its edits. A table whose region failed to open is simply marked
    /// disabled (its unflushed edits stay in the WAL for when it opens again).
    pub(crate) fn disable_table(&self, name: &str) -> Result<(), RegionError> {
        let mut catalog = self.catalog.lock();
        let regions: Vec<Arc<crate::region::Region>> = match &self.hosted(name)?.serving {
            Serving::Disabled => return Ok(()),
            Serving::Open(live) => live.get().all().cloned().collect(),
            Serving::FailedOpen(_) => Vec::new(),
        };
        for (i, region) in regions.iter().enumerate() {
            if let Err(e) = region.close() {
                for closed in &regions[..i] {
                    closed.reopen()?;
                }
                return Err(e);
            }
        }
        if let Err(e) = commit_enabled(&mut catalog, &*self.fs, &self.dir, name, false) {
            for region in &regions {
                region.reopen()?;
            }
            return Err(e);
        }
        if let Some(hosted) = self.tables.write().get_mut(name) {
            hosted.entry.enabled = false;
            hosted.serving = Serving::Disabled;
        }
        Ok(())
    }

    /// Serves a disabled table again (or retries a table whose regions failed to open);
    /// persisted. The regions open, replaying what the WAL holds for them, before the catalog
    /// says enabled.
    pub(crate) fn enable_table(&self, name: &str) -> Result<(), RegionError> {
        let mut catalog = self.catalog.lock();
        let entry = {
            let hosted = self.hosted(name)?;
            if matches!(hosted.serving, Serving::Open(_)) {
                return Ok(());
            }
            hosted.entry.clone()
        };
        let regions = self.open_table(&entry)?;
        if let Err(e) = commit_enabled(&mut catalog, &*self.fs, &self.dir, name, true) {
            // They may hold replayed edits: flushed and closed, so nothing is lost.
            for region in regions.all() {
                let _ = region.close();
            }
            return Err(e);
        }
        if let Some(hosted) = self.tables.write().get_mut(name) {
            hosted.entry.enabled = true;
            hosted.serving = Serving::Open(LiveRegions::new(regions));
        }
        Ok(())
    }

    /// Deletes a disabled table and its files. The catalog forgets it first; then its regions'
    /// directories are removed (and the removals synced). A removal that fails leaves a
    /// directory the next open removes.
    pub(crate) fn delete_table(&self, name: &str) -> Result<(), RegionError> {
        let mut catalog = self.catalog.lock();
        let region_ids: Vec<u64> = {
            let hosted = self.hosted(name)?;
            if hosted.entry.enabled {
                return Err(RegionError::TableEnabled(name.to_string()));
            }
            hosted.entry.region_ids().collect()
        };
        let mut next = catalog.clone();
        next.tables.retain(|t| t.name != name);
        next.store(&*self.fs, &self.dir)?;
        *catalog = next;
        self.tables.write().remove(name);
        for region_id in region_ids {
            // Its edits are garbage now, even those it never flushed.
            if let Err(e) = self.wal.close_region(region_id) {
                event!(WARN, region = region_id, error = %e, "closing a deleted region to the WAL failed");
                let _ = e;
            }
            self.discard_region_dir(region_id);
        }
        Ok(())
    }

    /// Sets a table's durability (HBase's table `DURABILITY`), persisted in the catalog and in
    /// force for its next write. An override in [`super::EngineOptions::table_durability`]
    /// still wins while the server runs with it.
    pub(crate) fn set_table_durability(
        &self,
        name: &str,
        durability: Durability,
    ) -> Result<(), RegionError> {
        let mut catalog = self.catalog.lock();
        self.hosted(name)?;
        let mut next = catalog.clone();
        if let Some(t) = next.tables.iter_mut().find(|t| t.name == name) {
            t.durability = durability;
        }
        next.store(&*self.fs, &self.dir)?;
        *catalog = next;
        let mut tables = self.tables.write();
        if let Some(hosted) = tables.get_mut(name) {
            hosted.entry.durability = durability;
            let effective = self.effective_durability(&hosted.entry);
            for region in hosted.regions() {
                region.set_default_durability(effective);
            }
        }
        Ok(())
    }

    /// A table's entry as served now (under a short read lock).
    fn hosted(&self, name: &str) -> Result<HostedView, RegionError> {
        let tables = self.tables.read();
        let hosted = tables
            .get(name)
            .ok_or_else(|| RegionError::NoSuchTable(name.to_string()))?;
        Ok(HostedView {
            entry: hosted.entry.clone(),
            serving: match &hosted.serving {
                Serving::Open(live) => Serving::Open(Arc::clone(live)),
                Serving::Disabled => Serving::Disabled,
                Serving::FailedOpen(reason) => Serving::FailedOpen(reason.clone()),
            },
        })
    }

    /// Removes a region's directory and syncs its removal; a failure is logged and left to the
    /// next open's orphan cleanup.
    pub(crate) fn discard_region_dir(&self, region_id: u64) {
        let dir = self.region_dir(region_id);
        let data = self.dir.join("data");
        let removed = remove_tree(&*self.fs, &dir).and_then(|()| self.fs.sync_dir(&data));
        if let Err(e) = removed {
            event!(WARN, dir = %dir.display(), error = %e, "removing a region's directory failed; the next open removes it");
            let _ = e;
        }
    }

    /// Removes every region directory in `data/` that the catalog does not name and no named
    /// region refers to: what a create, delete, split or merge interrupted by a crash left, and
    /// the closed regions of a split or merge once their successors' compactions have rewritten
    /// every reference (HBase's `CatalogJanitor`). Anything else there is left alone.
    pub(crate) fn remove_orphans(&self, catalog: &Catalog) {
        let data = self.dir.join("data");
        let Ok(entries) = self.fs.list(&data) else {
            return;
        };
        let mut named: HashSet<u64> = catalog
            .tables
            .iter()
            .flat_map(TableEntry::region_ids)
            .collect();
        // Files a named region still reads keep their region's directory (its manifest, as
        // committed, says which).
        let referenced: Vec<u64> = named
            .iter()
            .filter_map(|&id| crate::manifest::Manifest::load(&*self.fs, &self.region_dir(id)).ok())
            .flat_map(|m| m.refs.into_iter().map(|r| r.parent))
            .collect();
        named.extend(referenced);
        for path in entries {
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            match region_id_of(&name) {
                Some(id) if !named.contains(&id) => {
                    event!(INFO, dir = %path.display(), "removing a region directory no table names");
                    self.discard_region_dir(id);
                }
                Some(_) => {}
                None => {
                    event!(WARN, path = %path.display(), "not a region directory; left alone");
                }
            }
        }
    }
}

/// A copy of a table's entry and serving state, taken under a short read lock.
struct HostedView {
    entry: TableEntry,
    serving: Serving,
}

impl Engine {
    /// Creates an enabled table with `families` and HBase's table defaults; see
    /// [`Engine::create_table_with`].
    pub fn create_table(
        &self,
        name: &str,
        families: Vec<FamilyOptions>,
    ) -> Result<Table, RegionError> {
        self.state
            .create_table_with(name, families, TableOptions::default())
    }

    /// Creates an enabled table. Its name must follow HBase's rules ([`crate::names`]), and
    /// so must every family's; at least one family, at most
    /// [`super::EngineOptions::max_families_per_table`], none named twice. The table is in the
    /// catalog, durably, before it is served. With split keys ([`TableOptions::split_keys`],
    /// or [`super::EngineOptions::table_split_keys`] for its name) it starts as several
    /// regions.
    pub fn create_table_with(
        &self,
        name: &str,
        families: Vec<FamilyOptions>,
        options: TableOptions,
    ) -> Result<Table, RegionError> {
        self.state.create_table_with(name, families, options)
    }

    /// Stops serving a table (HBase requires this before deleting it); persisted. Its regions
    /// close first: new writes are refused, writes in flight finish, everything is flushed, and
    /// the WAL lets go of their edits. A table whose regions failed to open is simply marked
    /// disabled (its unflushed edits stay in the WAL for when it opens again).
    pub fn disable_table(&self, name: &str) -> Result<(), RegionError> {
        self.state.disable_table(name)
    }

    /// Serves a disabled table again (or retries a table whose regions failed to open);
    /// persisted. The regions open, replaying what the WAL holds for them, before the catalog
    /// says enabled.
    pub fn enable_table(&self, name: &str) -> Result<(), RegionError> {
        self.state.enable_table(name)
    }

    /// Deletes a disabled table and its files. The catalog forgets it first; then its regions'
    /// directories are removed (and the removals synced). A removal that fails leaves a
    /// directory the next open removes.
    pub fn delete_table(&self, name: &str) -> Result<(), RegionError> {
        self.state.delete_table(name)
    }

    /// Sets a table's durability (HBase's table `DURABILITY`), persisted in the catalog and in
    /// force for its next write. An override in [`super::EngineOptions::table_durability`]
    /// still wins while the server runs with it.
    pub fn set_table_durability(
        &self,
        name: &str,
        durability: Durability,
    ) -> Result<(), RegionError> {
        self.state.set_table_durability(name, durability)
    }
}

/// Split keys must be non-empty, distinct and in order (HBase's `createTable` checks the same).
fn check_split_keys(table: &TableName, keys: &[bytes::Bytes]) -> Result<(), RegionError> {
    let bad = |why: &str| {
        Err(RegionError::BadSplitKeys {
            table: table.to_string(),
            why: why.to_string(),
        })
    };
    if keys.iter().any(bytes::Bytes::is_empty) {
        return bad("a split key is empty");
    }
    if keys.windows(2).any(|w| w[0] >= w[1]) {
        return bad("split keys must be distinct and in ascending order");
    }
    if keys.len() > MAX_PRESPLIT_REGIONS {
        return bad(&format!(
            "{} split keys: at most {MAX_PRESPLIT_REGIONS} regions at creation",
            keys.len()
        ));
    }
    Ok(())
}

/// The most regions a table may be created with (each is a directory, memstores and a WAL
/// claim; a request naming a million must not be attempted).
pub(crate) const MAX_PRESPLIT_REGIONS: usize = 1024;

/// Commits `enabled` for table `name` to the catalog.
fn commit_enabled(
    catalog: &mut Catalog,
    fs: &dyn FileSystem,
    dir: &Path,
    name: &str,
    enabled: bool,
) -> Result<(), RegionError> {
    let mut next = catalog.clone();
    if let Some(t) = next.tables.iter_mut().find(|t| t.name == name) {
        t.enabled = enabled;
    }
    next.store(fs, dir)?;
    *catalog = next;
    Ok(())
}

/// Removes `dir` and everything under it. Only ever given a region directory, whose path the
/// server built from an id.
pub(super) fn remove_tree(fs: &dyn FileSystem, dir: &Path) -> std::io::Result<()> {
    for entry in fs.list(dir)? {
        if fs.remove(&entry).is_err() {
            // A directory (a family's); a file that cannot be removed fails the listing below.
            remove_tree(fs, &entry)?;
        }
    }
    fs.remove_dir(dir)
}
