//! Opening a region: its manifest and store files, then the WAL's unflushed edits.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};

use bytes::Bytes;
use keel_cell::Cell;
use keel_fs::FileSystem;
use keel_memstore::{
    ChunkPool, DEFAULT_CHUNK_SIZE, DEFAULT_POOLED_CHUNKS, MemStore, MemStoreOptions,
};
use keel_mvcc::{Mvcc, RowLockOptions, RowLocks};
use keel_storefile::StoreFileReader;
use keel_sync::{Mutex, RwLock};
use keel_wal::{ReplayOptions, Wal, WalEntry};

use super::{
    BlockReads, CachedSource, Counters, Durability, FILE_IDS, FamilyOptions, OPEN, Region, Store,
    TracedDirect, WriteOrder, durability_code, file_name_of, now_ms,
};
use crate::error::{RegionError, io};
use crate::limits::{MemoryAccount, RegionLimits};
use crate::manifest::{Manifest, hex};
use crate::trace::event;

impl Region {
    /// Opens region `id` in `dir` with `families`: loads the manifest and its store files, then
    /// replays the WAL's entries for this region above the manifest's flushed sequence id into
    /// the memstores, moves MVCC past everything found, and declares the region to the WAL
    /// ([`Wal::open_region`]).
    ///
    /// A store file the manifest lists for a family the region does not have, and a logged
    /// edit of such a family, are skipped with a warning and counted
    /// ([`super::RegionStats::skipped_files`], [`super::RegionStats::skipped_replay_cells`]), as HBase does:
    /// they never stop the region from opening.
    pub fn open(
        fs: Arc<dyn FileSystem>,
        dir: &Path,
        wal: Arc<Wal>,
        id: u64,
        families: Vec<FamilyOptions>,
    ) -> Result<Region, RegionError> {
        Region::open_with(fs, dir, wal, id, families, BlockReads::Direct)
    }

    /// [`Region::open`], with store-file blocks read as `reads` says.
    pub fn open_with(
        fs: Arc<dyn FileSystem>,
        dir: &Path,
        wal: Arc<Wal>,
        id: u64,
        families: Vec<FamilyOptions>,
        reads: BlockReads,
    ) -> Result<Region, RegionError> {
        // One chunk pool for the region's stores (a server shares one among all its regions).
        let chunks = Arc::new(ChunkPool::new(DEFAULT_CHUNK_SIZE, DEFAULT_POOLED_CHUNKS));
        let region = Region::load(fs, dir, wal, id, families, reads, chunks)?;
        if region.needs_replay() {
            let mut flushed = HashMap::new();
            flushed.insert(id, region.flushed_sequence());
            for entry in region.wal.replay(ReplayOptions {
                flushed,
                ..ReplayOptions::default()
            })? {
                let entry = entry?;
                if entry.region == id {
                    region.replay_entry(entry);
                }
            }
        }
        region.finish_open()?;
        Ok(region)
    }

    /// The first step of opening: the region's directories, manifest and store files, without
    /// replay and without declaring it to the WAL. [`Region::replay_entry`] and
    /// [`Region::finish_open`] are the others (a server replays the log once for every region).
    pub(crate) fn load(
        fs: Arc<dyn FileSystem>,
        dir: &Path,
        wal: Arc<Wal>,
        id: u64,
        families: Vec<FamilyOptions>,
        reads: BlockReads,
        chunks: Arc<ChunkPool>,
    ) -> Result<Region, RegionError> {
        fs.create_dir_durable(dir)
            .map_err(|e| io("create directory", dir, e))?;
        let manifest = Manifest::load(&*fs, dir)?;
        let mut stores = BTreeMap::new();
        for family in families {
            let family_dir = dir.join(hex(&family.name));
            fs.create_dir_durable(&family_dir)
                .map_err(|e| io("create directory", &family_dir, e))?;
            let source: Arc<dyn keel_storefile::BlockSource> = match &reads {
                BlockReads::Direct => Arc::new(TracedDirect),
                BlockReads::Cached(cache) => Arc::new(CachedSource {
                    cache: Arc::clone(cache),
                    in_memory: family.in_memory,
                }),
            };
            stores.insert(
                family.name.clone(),
                Store {
                    source,
                    rules: family.rules,
                    files_options: family.files,
                    dir: family_dir,
                    memstore: MemStore::with_pool(MemStoreOptions::default(), Arc::clone(&chunks)),
                    files: RwLock::new(Vec::new()),
                },
            );
        }
        remove_unlisted_files(&*fs, &manifest, &stores);
        let counters = Counters::default();
        let mut max_seq = manifest.flushed;
        // A parent region's files first: they are older than any file of the region's own.
        for reference in &manifest.refs {
            let Some(store) = stores.get(&reference.family) else {
                counters.skipped_files.fetch_add(1, Ordering::Relaxed);
                continue;
            };
            let reader = StoreFileReader::open(
                &*fs,
                &reference.path(dir),
                FILE_IDS.fetch_add(1, Ordering::Relaxed),
                Arc::clone(&store.source),
            )?
            .with_range(keel_storefile::RowRange {
                start: reference.start.clone(),
                end: reference.end.clone(),
            });
            max_seq = max_seq.max(reader.info().max_sequence_id);
            store.files.write().push(Arc::new(reader));
        }
        for (family, name) in &manifest.files {
            let Some(store) = stores.get(family) else {
                // A family the table no longer has: its files are left where they are.
                event!(
                    WARN,
                    region = id,
                    family = %keel_cell::escape_bytes(family),
                    file = %name,
                    "the manifest lists a store file of a family the region does not have: skipped"
                );
                counters.skipped_files.fetch_add(1, Ordering::Relaxed);
                continue;
            };
            let reader = StoreFileReader::open(
                &*fs,
                &store.dir.join(name),
                FILE_IDS.fetch_add(1, Ordering::Relaxed),
                Arc::clone(&store.source),
            )?;
            max_seq = max_seq.max(reader.info().max_sequence_id);
            store.files.write().push(Arc::new(reader));
        }
        Ok(Region {
            id,
            fs,
            dir: dir.to_path_buf(),
            wal,
            mvcc: Mvcc::new(),
            applying: super::apply::ApplyQueue::default(),
            locks: RowLocks::new(RowLockOptions::default()),
            updates: RwLock::new(()),
            family_rules: Arc::new(
                stores
                    .iter()
                    .map(|(name, store)| (name.clone(), store.rules))
                    .collect(),
            ),
            stores,
            next_file_id: AtomicU64::new(manifest.next_file.max(1)),
            manifest: Mutex::new(manifest),
            flushing: Mutex::new(()),
            compacting: Mutex::new(()),
            order: WriteOrder::default(),
            rmw_queues: super::combine::RmwQueues::default(),
            read_modify_writes: super::ReadModifyWrites::default(),
            default_durability: AtomicU8::new(durability_code(Durability::SyncWal)),
            state: AtomicU8::new(OPEN),
            limits: RegionLimits::default(),
            account: MemoryAccount::unlimited(),
            active_bytes: AtomicU64::new(0),
            snapshot_bytes: Mutex::new(None),
            flush_requested: AtomicBool::new(false),
            flatten_requested: AtomicBool::new(false),
            last_server_ts: std::sync::atomic::AtomicI64::new(0),
            get_cells_hint: std::sync::atomic::AtomicUsize::new(0),
            flush_cause: crate::trace::Cause::default(),
            compaction_queued: std::sync::atomic::AtomicU8::new(0),
            flush_delayed_since: Mutex::new(None),
            opened_ms: now_ms(),
            loaded_sequence: AtomicU64::new(max_seq),
            counters,
        })
    }

    /// Every edit at or below this sequence id is in a committed store file.
    pub(crate) fn flushed_sequence(&self) -> u64 {
        self.manifest.lock().flushed
    }

    /// Whether the WAL may hold edits of this region above its flushed point (a region whose
    /// every logged edit is flushed, or that never logged one, skips the replay).
    pub(crate) fn needs_replay(&self) -> bool {
        self.wal
            .last_sequence_id(self.id)
            .is_some_and(|last| last > self.flushed_sequence())
    }

    /// Applies one logged edit of this region while it opens: its cells go to the memstores,
    /// charged as writes are. Cells of a family the region does not have are skipped with a
    /// warning and counted; they never stop the region from opening (HBase does the same).
    pub(crate) fn replay_entry(&self, entry: WalEntry) {
        self.loaded_sequence
            .fetch_max(entry.sequence_id, Ordering::Relaxed);
        let (known, unknown): (Vec<Cell>, Vec<Cell>) = entry
            .cells
            .into_iter()
            .partition(|c| self.stores.contains_key(c.family()));
        if let Some(first) = unknown.first() {
            event!(
                WARN,
                region = self.id,
                sequence_id = entry.sequence_id,
                family = %keel_cell::escape_bytes(first.family()),
                cells = unknown.len(),
                "WAL replay skipped cells of a family the region does not have"
            );
            let _ = first;
            self.counters
                .skipped_replay_cells
                .fetch_add(unknown.len() as u64, Ordering::Relaxed);
        }
        let charged = crate::limits::charge(&known);
        for cell in known {
            if let Some(store) = self.stores.get(cell.family()) {
                store.memstore.add([cell]);
            }
        }
        self.active_bytes.fetch_add(charged, Ordering::Relaxed);
        self.account.charge(charged);
    }

    /// The last step of opening: MVCC moves past every sequence id loaded or replayed, so new
    /// writes continue above them, and the region declares its flushed point to the WAL.
    pub(crate) fn finish_open(&self) -> Result<(), RegionError> {
        self.mvcc
            .advance_to(self.loaded_sequence.load(Ordering::Relaxed))?;
        self.wal.open_region(self.id, self.flushed_sequence())?;
        Ok(())
    }
}

/// Store files in a family's directory that the manifest does not list are what a flush or
/// compaction that never committed left (or an old file whose removal failed): removed on open.
fn remove_unlisted_files(
    fs: &dyn FileSystem,
    manifest: &Manifest,
    stores: &BTreeMap<Bytes, Store>,
) {
    for (family, store) in stores {
        let Ok(entries) = fs.list(&store.dir) else {
            continue;
        };
        for path in entries {
            let name = file_name_of(&path);
            let listed = manifest
                .files
                .iter()
                .any(|(f, n)| f == family && *n == name);
            if !listed && (name.ends_with(".ksf") || name.ends_with(".ksf.tmp")) {
                let _ = fs.remove(&path);
            }
        }
    }
}
