//! Opening a region: its manifest and store files, then the WAL's unflushed edits.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use bytes::Bytes;
use keel_cell::escape_bytes;
use keel_fs::FileSystem;
use keel_memstore::{MemStore, MemStoreOptions};
use keel_mvcc::{Mvcc, RowLockOptions, RowLocks};
use keel_storefile::StoreFileReader;
use keel_wal::{ReplayOptions, Wal};
use parking_lot::{Mutex, RwLock};

use super::{
    BlockReads, CachedSource, Counters, FILE_IDS, FamilyOptions, Region, Store, TracedDirect,
    WriteOrder, file_name_of, now_ms,
};
use crate::error::{RegionError, io};
use crate::limits::{MemoryAccount, RegionLimits};
use crate::manifest::{Manifest, hex};

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
                    memstore: MemStore::new(MemStoreOptions::default()),
                    files: RwLock::new(Vec::new()),
                },
            );
        }
        remove_unlisted_files(&*fs, &manifest, &stores);
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
                Arc::clone(&store.source),
            )?;
            max_seq = max_seq.max(reader.info().max_sequence_id);
            store.files.write().push(Arc::new(reader));
        }
        let mut flushed = HashMap::new();
        flushed.insert(id, manifest.flushed);
        let mut replayed_bytes = 0;
        for entry in wal.replay(ReplayOptions {
            flushed,
            ..ReplayOptions::default()
        })? {
            let entry = entry?;
            if entry.region != id {
                continue;
            }
            max_seq = max_seq.max(entry.sequence_id);
            replayed_bytes += crate::limits::charge(&entry.cells);
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
            compacting: Mutex::new(()),
            order: WriteOrder::default(),
            default_durability: keel_wal::Durability::SyncWal,
            limits: RegionLimits::default(),
            account: {
                let account = MemoryAccount::unlimited();
                account.charge(replayed_bytes);
                account
            },
            active_bytes: AtomicU64::new(replayed_bytes),
            snapshot_bytes: Mutex::new(None),
            flush_requested: AtomicBool::new(false),
            last_server_ts: std::sync::atomic::AtomicI64::new(0),
            flush_cause: crate::trace::Cause::default(),
            compaction_queued: std::sync::atomic::AtomicU8::new(0),
            flush_delayed_since: Mutex::new(None),
            opened_ms: now_ms(),
            counters: Counters::default(),
        })
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
