//! [`Region`]: one region's stores (a memstore and committed store files per family), its MVCC
//! and row locks, the HBASE-15158 write path, gets, flush and WAL replay.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use keel_cell::{Cell, CellKey, LATEST_TIMESTAMP, escape_bytes};
use keel_fs::FileSystem;
use keel_memstore::{MemStore, MemStoreOptions, MemStoreScanner};
use keel_mvcc::{LockMode, Mvcc, RowLockOptions, RowLocks};
use keel_storefile::{
    DirectSource, KeyValueScanner, MergeScanner, StoreFileReader, StoreFileWriter, WriterOptions,
};
use keel_wal::{Durability, ReplayOptions, Wal, WalEntry};
use parking_lot::{Mutex, RwLock};

use crate::error::{RegionError, io};
use crate::manifest::{Manifest, hex};
use crate::matcher::{FamilyRules, Matcher, ReadQuery};

/// One column family's settings.
#[derive(Debug, Clone, PartialEq)]
pub struct FamilyOptions {
    /// The family name.
    pub name: Bytes,
    /// Versions, min versions and TTL.
    pub rules: FamilyRules,
    /// Block size, encoding, compression and bloom filter of its store files.
    pub files: WriterOptions,
}

impl FamilyOptions {
    /// A family with HBase's defaults (1 version, no TTL, 64 KiB blocks, ROW bloom).
    pub fn new(name: impl Into<Bytes>) -> FamilyOptions {
        FamilyOptions {
            name: name.into(),
            rules: FamilyRules::default(),
            files: WriterOptions::default(),
        }
    }
}

/// Where one write's time went (the HBASE-15158 stages).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriteTimings {
    /// Waiting for the row locks.
    pub lock_wait: Duration,
    /// MVCC begin and WAL enqueue (in sequence order).
    pub wal_append: Duration,
    /// Waiting for the WAL to reach the asked durability.
    pub sync_wait: Duration,
    /// Inserting into the memstores.
    pub memstore: Duration,
    /// Completing the MVCC entry and waiting for it to become visible.
    pub mvcc_wait: Duration,
}

struct Store {
    rules: FamilyRules,
    files_options: WriterOptions,
    dir: PathBuf,
    memstore: MemStore,
    files: RwLock<Vec<Arc<StoreFileReader>>>,
}

/// One region of one table.
pub struct Region {
    id: u64,
    fs: Arc<dyn FileSystem>,
    dir: PathBuf,
    wal: Arc<Wal>,
    mvcc: Mvcc,
    locks: RowLocks,
    /// Writers hold it shared from MVCC begin to memstore insert; a flush takes it exclusively
    /// to snapshot, so every edit up to the flush's sequence id is in the snapshot.
    updates: RwLock<()>,
    stores: BTreeMap<Bytes, Store>,
    manifest: Mutex<Manifest>,
    flushing: Mutex<()>,
    next_file_id: AtomicU64,
}

impl std::fmt::Debug for Region {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Region")
            .field("id", &self.id)
            .field("dir", &self.dir)
            .field(
                "families",
                &self
                    .stores
                    .keys()
                    .map(|k| escape_bytes(k))
                    .collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Ids for the block source keys of store files opened in this process.
static FILE_IDS: AtomicU64 = AtomicU64::new(1);

impl Region {
    /// Opens region `id` in `dir` with `families`: loads the manifest and its store files, then
    /// replays the WAL's entries for this region above the manifest's flushed sequence id into
    /// the memstores, and moves MVCC past everything found.
    pub fn open(
        fs: Arc<dyn FileSystem>,
        dir: &Path,
        wal: Arc<Wal>,
        id: u64,
        families: Vec<FamilyOptions>,
    ) -> Result<Region, RegionError> {
        fs.create_dir_all(dir)
            .map_err(|e| io("create directory", dir, e))?;
        let manifest = Manifest::load(&*fs, dir)?;
        let mut stores = BTreeMap::new();
        for family in families {
            let family_dir = dir.join(hex(&family.name));
            fs.create_dir_all(&family_dir)
                .map_err(|e| io("create directory", &family_dir, e))?;
            stores.insert(
                family.name.clone(),
                Store {
                    rules: family.rules,
                    files_options: family.files,
                    dir: family_dir,
                    memstore: MemStore::new(MemStoreOptions::default()),
                    files: RwLock::new(Vec::new()),
                },
            );
        }
        let mut max_seq = manifest.flushed;
        for (family, name) in &manifest.files {
            let store = stores
                .get(family)
                .ok_or_else(|| RegionError::NoSuchFamily {
                    family: escape_bytes(family),
                    region: id,
                })?;
            let reader = StoreFileReader::open(
                &*fs,
                &store.dir.join(name),
                FILE_IDS.fetch_add(1, Ordering::Relaxed),
                Arc::new(DirectSource),
            )?;
            max_seq = max_seq.max(reader.info().max_sequence_id);
            store.files.write().push(Arc::new(reader));
        }
        let mut flushed = HashMap::new();
        flushed.insert(id, manifest.flushed);
        for entry in wal.replay(ReplayOptions {
            flushed,
            ..ReplayOptions::default()
        })? {
            let entry = entry?;
            if entry.region != id {
                continue;
            }
            max_seq = max_seq.max(entry.sequence_id);
            for cell in entry.cells {
                let store = stores
                    .get(cell.family())
                    .ok_or_else(|| RegionError::NoSuchFamily {
                        family: escape_bytes(cell.family()),
                        region: id,
                    })?;
                store.memstore.add([cell]);
            }
        }
        let mvcc = Mvcc::new();
        mvcc.advance_to(max_seq)?;
        Ok(Region {
            id,
            fs,
            dir: dir.to_path_buf(),
            wal,
            mvcc,
            locks: RowLocks::new(RowLockOptions::default()),
            updates: RwLock::new(()),
            stores,
            next_file_id: AtomicU64::new(manifest.next_file.max(1)),
            manifest: Mutex::new(manifest),
            flushing: Mutex::new(()),
        })
    }

    /// The region's id (its key in the WAL).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Applies `cells` (puts and delete markers, any rows) atomically at `durability`, on the
    /// HBASE-15158 path: row locks (shared, sorted) → server timestamps for cells that carry
    /// `LATEST_TIMESTAMP` → MVCC begin and WAL enqueue with the write number as sequence id →
    /// WAL durability wait → memstore insert → MVCC complete and wait → unlock. A WAL failure
    /// returns before the memstore is touched, so there is nothing to roll back.
    pub fn mutate(
        &self,
        mut cells: Vec<Cell>,
        durability: Durability,
    ) -> Result<WriteTimings, RegionError> {
        for cell in &cells {
            if !self.stores.contains_key(cell.family()) {
                return Err(RegionError::NoSuchFamily {
                    family: escape_bytes(cell.family()),
                    region: self.id,
                });
            }
        }
        let mut timings = WriteTimings::default();
        let started = Instant::now();
        let rows: BTreeSet<Bytes> = cells.iter().map(|c| c.row().clone()).collect();
        let _rows = self.locks.lock_rows(rows, LockMode::Shared, None)?;
        timings.lock_wait = started.elapsed();
        // Timestamps only once the locks are held: a later write to a row never gets an
        // earlier server timestamp.
        let now = now_ms();
        for cell in &mut cells {
            if cell.timestamp() == LATEST_TIMESTAMP {
                cell.set_timestamp(now);
            }
        }
        let _updates = self.updates.read();
        let step = Instant::now();
        let (entry, pending) = self.mvcc.begin_with(|write_number| {
            for cell in &mut cells {
                cell.set_sequence_id(write_number);
            }
            let wal_entry = WalEntry {
                region: self.id,
                sequence_id: write_number,
                write_time_ms: now,
                cells: cells.clone(),
            };
            self.wal.enqueue(&wal_entry, durability)
        });
        timings.wal_append = step.elapsed();
        // On error the MVCC entry completes itself when dropped; nothing reached the memstore.
        let step = Instant::now();
        pending?.wait()?;
        timings.sync_wait = step.elapsed();
        let step = Instant::now();
        for cell in cells {
            if let Some(store) = self.stores.get(cell.family()) {
                store.memstore.add([cell]);
            }
        }
        timings.memstore = step.elapsed();
        let step = Instant::now();
        self.mvcc.complete_and_wait(entry);
        timings.mvcc_wait = step.elapsed();
        Ok(timings)
    }

    /// The cells of `row` that `query` selects (its read point is replaced by the region's
    /// current one), merged from every store's memstore and the store files that may hold the
    /// row, in `CellComparator` order.
    pub fn get(&self, row: &[u8], query: &ReadQuery) -> Result<Vec<Cell>, RegionError> {
        let read_point = self.mvcc.read_point();
        let query = ReadQuery {
            read_point,
            ..query.clone()
        };
        let row = Bytes::copy_from_slice(row);
        let first = CellKey::first_on_row(row.clone());
        let last = CellKey::last_on_row(row.clone());
        let families: HashMap<Bytes, FamilyRules> = self
            .stores
            .iter()
            .map(|(name, store)| (name.clone(), store.rules))
            .collect();
        let mut matcher = Matcher::new(query.clone(), families);
        let mut out = Vec::new();
        for (name, store) in &self.stores {
            let wanted = query
                .columns
                .as_ref()
                .is_none_or(|columns| columns.iter().any(|(f, _)| f == name));
            if !wanted {
                continue;
            }
            let files: Vec<Arc<StoreFileReader>> = store
                .files
                .read()
                .iter()
                .filter(|f| f.may_contain_row(&row))
                .cloned()
                .collect();
            let mut sources: Vec<Box<dyn KeyValueScanner + '_>> = files
                .iter()
                .map(|f| Box::new(f.scanner()) as Box<dyn KeyValueScanner>)
                .collect();
            sources.push(Box::new(MemSource(
                store
                    .memstore
                    .scanner(first.clone()..=last.clone(), read_point),
            )));
            let mut merge = MergeScanner::new(sources, &first)?;
            while let Some(cell) = merge.next()? {
                if cell.row() != &row {
                    break;
                }
                if matcher.admit(&cell) {
                    out.push(cell);
                }
            }
        }
        Ok(out)
    }

    /// Writes every memstore to a new store file per family and commits them in one manifest
    /// update, then lets the WAL drop what they hold. Returns the flushed sequence id.
    pub fn flush(&self) -> Result<u64, RegionError> {
        let _one_at_a_time = self.flushing.lock();
        let (snapshots, flush_seq) = {
            let _exclusive = self.updates.write();
            let snapshots: Vec<_> = self
                .stores
                .iter()
                .map(|(name, store)| (name.clone(), store.memstore.snapshot()))
                .collect();
            (snapshots, self.mvcc.write_point())
        };
        let mut written = Vec::new();
        for (name, snapshot) in &snapshots {
            let store = &self.stores[name];
            if snapshot.size().cell_count == 0 {
                continue;
            }
            let number = self.next_file_id.fetch_add(1, Ordering::Relaxed);
            let file_name = format!("{number:020}.ksf");
            let path = store.dir.join(&file_name);
            let mut writer =
                StoreFileWriter::create(Arc::clone(&self.fs), &path, store.files_options.clone())?;
            for cell in snapshot.scanner() {
                writer.append(&cell)?;
            }
            writer.finish()?;
            written.push((name.clone(), file_name, path));
        }
        let mut manifest = self.manifest.lock();
        let mut next = manifest.clone();
        next.flushed = next.flushed.max(flush_seq);
        next.next_file = self.next_file_id.load(Ordering::Relaxed);
        for (name, file_name, _) in &written {
            next.files.push((name.clone(), file_name.clone()));
        }
        next.store(&*self.fs, &self.dir)?;
        *manifest = next;
        drop(manifest);
        for (name, _, path) in written {
            let reader = StoreFileReader::open(
                &*self.fs,
                &path,
                FILE_IDS.fetch_add(1, Ordering::Relaxed),
                Arc::new(DirectSource),
            )?;
            self.stores[&name].files.write().push(Arc::new(reader));
        }
        for (name, snapshot) in snapshots {
            // The snapshot's cells are in the new files now (or it was empty).
            let _ = self.stores[&name].memstore.clear_snapshot(snapshot.id());
        }
        self.wal.mark_flushed(self.id, flush_seq)?;
        Ok(flush_seq)
    }

    /// Bytes held in memstores (what a flush would write).
    pub fn memstore_size(&self) -> u64 {
        self.stores
            .values()
            .map(|s| {
                let size = s.memstore.size();
                size.data_bytes + size.overhead_bytes
            })
            .sum()
    }

    /// Committed store files per family.
    pub fn store_file_count(&self) -> usize {
        self.stores.values().map(|s| s.files.read().len()).sum()
    }
}

/// A memstore scanner as a merge source.
struct MemSource(MemStoreScanner);

impl KeyValueScanner for MemSource {
    fn peek(&self) -> Option<&Cell> {
        self.0.peek()
    }
    fn next(&mut self) -> keel_storefile::Result<Option<Cell>> {
        Ok(Iterator::next(&mut self.0))
    }
    fn seek(&mut self, key: &CellKey) -> keel_storefile::Result<()> {
        self.0.seek(key);
        Ok(())
    }
}
