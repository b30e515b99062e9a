//! [`RegionServer`]: the embedded store's front door — one WAL shared by every region, a
//! persisted table catalog, and [`Table`] handles. One region per table for now; the catalog
//! records each table's region id so that splitting can come without a format change.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use keel_cell::Cell;
use keel_fs::{FileSystem, StdFs};
use keel_wal::{Wal, WalOptions};
use parking_lot::{Mutex, RwLock};

use crate::catalog::{Catalog, TableEntry};
use crate::error::{RegionError, io};
use crate::matcher::ReadQuery;
use crate::region::{BlockReads, Durability, FamilyOptions, Region, WriteOrder, WriteTimings};
use keel_blockcache::{BlockCache, CacheStats, LruBlockCache, LruOptions};

/// How a [`RegionServer`] runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerOptions {
    /// What `Durability::UseDefault` means on this server (HBase's default: `SYNC_WAL`).
    pub default_durability: Durability,
    /// The write path's order (HBASE-15158's by default).
    pub write_order: WriteOrder,
    /// The shared WAL's settings.
    pub wal: WalOptions,
    /// `hbase.hregion.memstore.flush.size`: a region whose memstores pass this is flushed by the
    /// server's flusher (128 MiB).
    pub flush_size: u64,
    /// `hbase.hstore.flusher.count`: flusher threads (2); thread k looks after every k-th table.
    pub flusher_threads: usize,
    /// How often the flusher looks at every region (it also flushes the regions the WAL names
    /// when it holds too many segments, HBase's `hbase.regionserver.maxlogs`).
    pub flush_check_interval: std::time::Duration,
    /// Bytes of the LRU block cache every region reads store files through; 0 reads files
    /// directly. HBase sizes it as `hfile.block.cache.size` (0.4) of the heap; Keel has no heap
    /// to take a share of, so 256 MiB.
    pub block_cache_bytes: u64,
}

impl Default for ServerOptions {
    fn default() -> ServerOptions {
        ServerOptions {
            default_durability: Durability::SyncWal,
            write_order: WriteOrder::Reordered,
            wal: WalOptions::default(),
            block_cache_bytes: 256 << 20,
            flush_size: 128 << 20,
            flusher_threads: 2,
            flush_check_interval: std::time::Duration::from_millis(100),
        }
    }
}

struct Hosted {
    entry: TableEntry,
    region: Option<Arc<Region>>,
}

/// An embedded store serving tables from one directory.
pub struct RegionServer {
    fs: Arc<dyn FileSystem>,
    dir: PathBuf,
    options: ServerOptions,
    wal: Arc<Wal>,
    reads: BlockReads,
    tables: Arc<RwLock<BTreeMap<String, Hosted>>>,
    catalog: Mutex<Catalog>,
    flusher: Mutex<Option<Flusher>>,
    flush_failures: Arc<std::sync::atomic::AtomicU64>,
}

/// The background threads that flush regions past their flush size or named by the WAL.
struct Flusher {
    stop: Arc<std::sync::atomic::AtomicBool>,
    handles: Vec<std::thread::JoinHandle<()>>,
}

impl Flusher {
    fn start(
        threads: usize,
        tables: std::sync::Weak<RwLock<BTreeMap<String, Hosted>>>,
        wal: std::sync::Weak<Wal>,
        flush_size: u64,
        interval: std::time::Duration,
        failures: Arc<std::sync::atomic::AtomicU64>,
    ) -> std::io::Result<Flusher> {
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let threads = threads.max(1);
        let mut flusher = Flusher {
            stop: Arc::clone(&stop),
            handles: Vec::with_capacity(threads),
        };
        for k in 0..threads {
            let share = Share {
                k,
                threads,
                tables: tables.clone(),
                wal: wal.clone(),
                flush_size,
                interval,
                failures: Arc::clone(&failures),
                stopped: Arc::clone(&stop),
            };
            match share.spawn() {
                Ok(handle) => flusher.handles.push(handle),
                Err(e) => {
                    flusher.stop();
                    return Err(e);
                }
            }
        }
        Ok(flusher)
    }

    fn stop(self) {
        self.stop.store(true, std::sync::atomic::Ordering::Release);
        for handle in &self.handles {
            handle.thread().unpark();
        }
        for handle in self.handles {
            let _ = handle.join();
        }
    }
}

/// One flusher thread's share: every `threads`-th table from the `k`-th.
struct Share {
    k: usize,
    threads: usize,
    tables: std::sync::Weak<RwLock<BTreeMap<String, Hosted>>>,
    wal: std::sync::Weak<Wal>,
    flush_size: u64,
    interval: std::time::Duration,
    failures: Arc<std::sync::atomic::AtomicU64>,
    stopped: Arc<std::sync::atomic::AtomicBool>,
}

impl Share {
    fn spawn(self) -> std::io::Result<std::thread::JoinHandle<()>> {
        use std::sync::atomic::Ordering;
        let Share {
            k,
            threads,
            tables,
            wal,
            flush_size,
            interval,
            failures,
            stopped,
        } = self;
        std::thread::Builder::new()
            .name(format!("keel-region-flusher-{k}"))
            .spawn(move || {
                while !stopped.load(Ordering::Acquire) {
                    std::thread::park_timeout(interval);
                    // A dropped server (without close) ends the thread here.
                    let (Some(tables), Some(wal)) = (tables.upgrade(), wal.upgrade()) else {
                        return;
                    };
                    let wanted: Vec<u64> = wal.regions_to_flush();
                    let regions: Vec<Arc<Region>> = tables
                        .read()
                        .values()
                        .enumerate()
                        .filter(|(i, _)| i % threads == k)
                        .filter_map(|(_, h)| h.region.clone())
                        .collect();
                    drop((tables, wal));
                    for region in regions {
                        if stopped.load(Ordering::Acquire) {
                            return;
                        }
                        let due =
                            region.memstore_size() >= flush_size || wanted.contains(&region.id());
                        if due && region.flush().is_err() {
                            failures.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            })
    }
}

impl std::fmt::Debug for RegionServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegionServer")
            .field("dir", &self.dir)
            .field("tables", &self.list_tables())
            .finish_non_exhaustive()
    }
}

/// A table's handle: reads and writes go to its region.
#[derive(Debug, Clone)]
pub struct Table {
    name: String,
    region: Arc<Region>,
}

fn valid_table_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 255
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.')
}

impl RegionServer {
    /// Opens (creating if needed) the store in `dir` on the local file system.
    pub fn open(
        dir: impl AsRef<Path>,
        options: ServerOptions,
    ) -> Result<RegionServer, RegionError> {
        RegionServer::open_on(Arc::new(StdFs), dir.as_ref(), options)
    }

    /// Opens the store in `dir` on `fs`: reads the catalog, opens the WAL, and opens every
    /// enabled table's region (replaying its unflushed edits).
    pub fn open_on(
        fs: Arc<dyn FileSystem>,
        dir: &Path,
        options: ServerOptions,
    ) -> Result<RegionServer, RegionError> {
        fs.create_dir_all(dir)
            .map_err(|e| io("create directory", dir, e))?;
        let catalog = Catalog::load(&*fs, dir)?;
        let wal = Arc::new(Wal::open(
            Arc::clone(&fs),
            &dir.join("wal"),
            options.wal.clone(),
        )?);
        let reads = if options.block_cache_bytes == 0 {
            BlockReads::Direct
        } else {
            BlockReads::Cached(Arc::new(LruBlockCache::new(LruOptions {
                capacity_bytes: options.block_cache_bytes,
                ..LruOptions::default()
            })))
        };
        let server = RegionServer {
            fs,
            dir: dir.to_path_buf(),
            options,
            wal,
            reads,
            tables: Arc::new(RwLock::new(BTreeMap::new())),
            catalog: Mutex::new(catalog.clone()),
            flusher: Mutex::new(None),
            flush_failures: Arc::new(std::sync::atomic::AtomicU64::new(0)),
        };
        for entry in catalog.tables {
            let region = if entry.enabled {
                Some(server.open_region(&entry)?)
            } else {
                None
            };
            server
                .tables
                .write()
                .insert(entry.name.clone(), Hosted { entry, region });
        }
        let flusher = Flusher::start(
            server.options.flusher_threads,
            Arc::downgrade(&server.tables),
            Arc::downgrade(&server.wal),
            server.options.flush_size,
            server.options.flush_check_interval,
            Arc::clone(&server.flush_failures),
        )
        .map_err(|e| io("start flusher", dir, e))?;
        *server.flusher.lock() = Some(flusher);
        Ok(server)
    }

    /// Background flushes that failed (the region stays as it was and is tried again).
    pub fn flush_failures(&self) -> u64 {
        self.flush_failures
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    fn open_region(&self, entry: &TableEntry) -> Result<Arc<Region>, RegionError> {
        let dir = self.dir.join("data").join(&entry.name);
        let region = Region::open_with(
            Arc::clone(&self.fs),
            &dir,
            Arc::clone(&self.wal),
            entry.region_id,
            entry.families.clone(),
            self.reads.clone(),
        )?;
        Ok(Arc::new(
            region
                .with_write_order(self.options.write_order)
                .with_default_durability(self.options.default_durability),
        ))
    }

    /// Creates an enabled table with `families`; its description is persisted before it is
    /// served.
    pub fn create_table(
        &self,
        name: &str,
        families: Vec<FamilyOptions>,
    ) -> Result<Table, RegionError> {
        if !valid_table_name(name) {
            return Err(RegionError::BadTableName(name.to_string()));
        }
        if families.is_empty() {
            return Err(RegionError::NoFamilies(name.to_string()));
        }
        let mut tables = self.tables.write();
        if tables.contains_key(name) {
            return Err(RegionError::TableExists(name.to_string()));
        }
        let mut catalog = self.catalog.lock();
        let entry = TableEntry {
            name: name.to_string(),
            region_id: catalog.next_region,
            enabled: true,
            start_key: Bytes::new(),
            end_key: Bytes::new(),
            families,
        };
        let mut next = catalog.clone();
        next.next_region += 1;
        next.tables.push(entry.clone());
        next.store(&*self.fs, &self.dir)?;
        *catalog = next;
        let region = self.open_region(&entry)?;
        tables.insert(
            name.to_string(),
            Hosted {
                entry,
                region: Some(Arc::clone(&region)),
            },
        );
        Ok(self.handle(name, region))
    }

    /// Stops serving a table (HBase requires this before deleting it); persisted.
    pub fn disable_table(&self, name: &str) -> Result<(), RegionError> {
        self.set_enabled(name, false)
    }

    /// Serves a disabled table again; persisted.
    pub fn enable_table(&self, name: &str) -> Result<(), RegionError> {
        self.set_enabled(name, true)
    }

    fn set_enabled(&self, name: &str, enabled: bool) -> Result<(), RegionError> {
        let mut tables = self.tables.write();
        let hosted = tables
            .get_mut(name)
            .ok_or_else(|| RegionError::NoSuchTable(name.to_string()))?;
        if hosted.entry.enabled == enabled {
            return Ok(());
        }
        if !enabled && let Some(region) = &hosted.region {
            // Everything in memory goes to store files, so the WAL can let go of it.
            region.flush()?;
        }
        let mut catalog = self.catalog.lock();
        let mut next = catalog.clone();
        if let Some(t) = next.tables.iter_mut().find(|t| t.name == name) {
            t.enabled = enabled;
        }
        next.store(&*self.fs, &self.dir)?;
        *catalog = next;
        hosted.entry.enabled = enabled;
        hosted.region = if enabled {
            Some(self.open_region(&hosted.entry)?)
        } else {
            None
        };
        Ok(())
    }

    /// Deletes a disabled table and its files.
    pub fn delete_table(&self, name: &str) -> Result<(), RegionError> {
        let mut tables = self.tables.write();
        let hosted = tables
            .get(name)
            .ok_or_else(|| RegionError::NoSuchTable(name.to_string()))?;
        if hosted.entry.enabled {
            return Err(RegionError::TableEnabled(name.to_string()));
        }
        let mut catalog = self.catalog.lock();
        let mut next = catalog.clone();
        next.tables.retain(|t| t.name != name);
        next.store(&*self.fs, &self.dir)?;
        *catalog = next;
        tables.remove(name);
        // The catalog no longer names it; its files are garbage now, removed best effort.
        remove_tree(&*self.fs, &self.dir.join("data").join(name));
        Ok(())
    }

    /// The shared block cache's counters (`None` when reads go straight to files).
    pub fn block_cache_stats(&self) -> Option<CacheStats> {
        match &self.reads {
            BlockReads::Direct => None,
            BlockReads::Cached(cache) => Some(cache.stats()),
        }
    }

    /// Every table, sorted by name.
    pub fn list_tables(&self) -> Vec<String> {
        self.tables.read().keys().cloned().collect()
    }

    /// A handle on an enabled table.
    pub fn table(&self, name: &str) -> Result<Table, RegionError> {
        let tables = self.tables.read();
        let hosted = tables
            .get(name)
            .ok_or_else(|| RegionError::NoSuchTable(name.to_string()))?;
        let region = hosted
            .region
            .clone()
            .ok_or_else(|| RegionError::TableDisabled(name.to_string()))?;
        Ok(self.handle(name, region))
    }

    fn handle(&self, name: &str, region: Arc<Region>) -> Table {
        Table {
            name: name.to_string(),
            region,
        }
    }

    /// Flushes every table and closes the WAL. Handles still held keep their regions alive
    /// but can no longer write.
    pub fn close(self) -> Result<(), RegionError> {
        if let Some(flusher) = self.flusher.lock().take() {
            flusher.stop();
        }
        let regions: Vec<Arc<Region>> = self
            .tables
            .read()
            .values()
            .filter_map(|h| h.region.clone())
            .collect();
        for region in &regions {
            region.flush()?;
        }
        drop(regions);
        self.tables.write().clear();
        // If a Table handle still holds the WAL through its region, it closes when that goes.
        if let Ok(wal) = Arc::try_unwrap(self.wal) {
            wal.close()?;
        }
        Ok(())
    }
}

fn remove_tree(fs: &dyn FileSystem, dir: &Path) {
    if let Ok(entries) = fs.list(dir) {
        for entry in entries {
            if fs.remove(&entry).is_err() {
                remove_tree(fs, &entry);
            }
        }
    }
    let _ = fs.remove(dir);
}

impl Table {
    /// The table's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The table's region (all of it, for now).
    pub fn region(&self) -> &Region {
        &self.region
    }

    /// Puts one value at the server's time, at the default durability.
    pub fn put(
        &self,
        row: &[u8],
        family: &[u8],
        qualifier: &[u8],
        value: &[u8],
    ) -> Result<WriteTimings, RegionError> {
        let cell = Cell::put(
            Bytes::copy_from_slice(row),
            Bytes::copy_from_slice(family),
            Bytes::copy_from_slice(qualifier),
            keel_cell::LATEST_TIMESTAMP,
            Bytes::copy_from_slice(value),
        )
        .map_err(|e| RegionError::BadCell(e.to_string()))?;
        self.mutate(vec![cell], Durability::UseDefault)
    }

    /// Applies puts and deletes atomically at `durability` (`UseDefault`: the server's).
    pub fn mutate(
        &self,
        cells: Vec<Cell>,
        durability: Durability,
    ) -> Result<WriteTimings, RegionError> {
        self.region.mutate(cells, durability)
    }

    /// The row's cells that `query` selects.
    pub fn get(&self, row: &[u8], query: &ReadQuery) -> Result<Vec<Cell>, RegionError> {
        self.region.get(row, query)
    }

    /// The rows `scan` selects.
    pub fn scan(&self, scan: &crate::scan::Scan) -> Result<Vec<Vec<Cell>>, RegionError> {
        self.region.scan(scan)
    }

    /// The latest value of one column, if any.
    pub fn get_value(
        &self,
        row: &[u8],
        family: &[u8],
        qualifier: &[u8],
    ) -> Result<Option<Bytes>, RegionError> {
        Ok(self
            .region
            .latest(row, family, qualifier)?
            .map(|c| c.value().clone()))
    }

    /// Adds `delta` to a counter and returns the new value, at the default durability.
    pub fn increment(
        &self,
        row: &[u8],
        family: &[u8],
        qualifier: &[u8],
        delta: i64,
    ) -> Result<i64, RegionError> {
        Ok(self
            .region
            .increment(row, family, qualifier, delta, Durability::UseDefault)?
            .0)
    }

    /// Merges the store files HBase's exploring policy selects (losslessly); returns how many
    /// files went away.
    pub fn compact(&self) -> Result<usize, RegionError> {
        self.region.compact(
            &crate::compaction_policy::CompactionPolicy::default(),
            false,
        )
    }

    /// Rewrites all of the table's store files as one per family, dropping deleted, expired and
    /// excess versions and delete markers; returns how many files went away.
    pub fn major_compact(&self) -> Result<usize, RegionError> {
        self.region
            .compact(&crate::compaction_policy::CompactionPolicy::default(), true)
    }

    /// Writes the table's memstores to store files.
    pub fn flush(&self) -> Result<u64, RegionError> {
        self.region.flush()
    }
}
