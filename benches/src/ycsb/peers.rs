//! Peers: other embedded engines behind the same [`Target`] interface, so a user can see Keel
//! beside what they would otherwise pick. Records are one value per key (YCSB's key-value
//! bindings; compare with Keel's `--layout cell`), and durability matches Keel's levels
//! ([`WriteMode`]). fjall, sled and redb are pure Rust and always built; RocksDB's C++ takes
//! minutes to build, so it needs the `peers` feature.
//!
//! Every engine runs on its defaults except the cache, which is the same 256 MiB as Keel's
//! block cache:
//! - fjall 3: one keyspace; after each write `Database::persist(PersistMode::Buffer)` (sync) or
//!   `PersistMode::SyncData` (fsync).
//! - sled 0.34: nothing after a write at sync: sled buffers writes in its own memory and writes
//!   them out every 500 ms, which is weaker than Keel's sync (shown, and counted as the issue
//!   that asked for this comparison counts it); `Db::flush` after each write at fsync, which is
//!   `sync_file_range`, weaker than `fdatasync`, so sled is not counted at fsync.
//! - redb 4: every commit is `Durability::Immediate` (fsynced) at both levels: redb has no
//!   level between "lost at a crash" and fsync, so it meets sync by exceeding it.
//! - RocksDB (the `rocksdb` crate 0.25, RocksDB 11): default `Options` with a 256 MiB LRU block
//!   cache; default `WriteOptions` (the WAL written, not synced) at sync, `set_sync(true)` at
//!   fsync.
//!
//! Increments are atomic in every engine: sled's `update_and_fetch`, one redb write
//! transaction (redb has one writer at a time), and a striped lock around get and put for
//! fjall and RocksDB, as an application without a merge operator would write it.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::db::{Db, Record, Status, Target};
use super::targets::{decode_record, encode_record, merge};

/// The cache every peer gets: Keel's default block cache size.
pub const CACHE_BYTES: u64 = 256 << 20;

/// How durable an acknowledged write is, in Keel's terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteMode {
    /// Bulk loading: as cheap as the engine allows; [`KeyValue::settle`] makes it durable.
    Load,
    /// Written to the OS (Keel `SyncWal`).
    Sync,
    /// `fdatasync`ed (Keel `FsyncWal`).
    Fsync,
}

/// The peers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeerKind {
    /// fjall 3.
    Fjall,
    /// sled 0.34.
    Sled,
    /// redb 4.
    Redb,
    /// RocksDB (needs the `peers` feature).
    RocksDb,
}

impl PeerKind {
    /// The peers this build has.
    pub fn built() -> Vec<PeerKind> {
        let mut all = vec![PeerKind::Fjall, PeerKind::Sled, PeerKind::Redb];
        if cfg!(feature = "peers") {
            all.push(PeerKind::RocksDb);
        }
        all
    }

    /// Its name in reports.
    pub fn name(self) -> &'static str {
        match self {
            PeerKind::Fjall => "fjall",
            PeerKind::Sled => "sled",
            PeerKind::Redb => "redb",
            PeerKind::RocksDb => "RocksDB",
        }
    }

    /// Whether an acknowledged write at `mode` is as durable as Keel's at that level.
    pub fn meets(self, mode: WriteMode) -> bool {
        !(self == PeerKind::Sled && mode == WriteMode::Fsync)
    }
}

/// What a key-value engine offers the YCSB operations and the increment test.
pub trait KeyValue: Send + Sync {
    /// The value of `key`, if any.
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, String>;
    /// Writes `value` at `key`, acknowledged at `mode`.
    fn put(&self, key: &[u8], value: &[u8], mode: WriteMode) -> Result<(), String>;
    /// Reads up to `count` entries from `start` on; returns how many there were.
    fn scan(&self, start: &[u8], count: usize) -> Result<usize, String>;
    /// Adds one to the big-endian u64 at `key` atomically; returns the new value.
    fn increment(&self, key: &[u8], mode: WriteMode) -> Result<u64, String>;
    /// Makes everything written at [`WriteMode::Load`] durable.
    fn settle(&self) -> Result<(), String>;
}

/// Opens (creating) `kind` in `dir`.
pub fn open(kind: PeerKind, dir: &Path) -> Result<Arc<dyn KeyValue>, String> {
    Ok(match kind {
        PeerKind::Fjall => Arc::new(FjallKv::open(dir)?),
        PeerKind::Sled => Arc::new(SledKv::open(dir)?),
        PeerKind::Redb => Arc::new(RedbKv::open(dir)?),
        PeerKind::RocksDb => open_rocksdb(dir)?,
    })
}

/// A peer as a YCSB [`Target`]: one value per record, written at `mode`.
pub struct Peer {
    kind: PeerKind,
    kv: Arc<dyn KeyValue>,
    mode: WriteMode,
}

impl std::fmt::Debug for Peer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Peer")
            .field("kind", &self.kind)
            .field("mode", &self.mode)
            .finish_non_exhaustive()
    }
}

impl Peer {
    /// `kv` (opened by [`open`]) writing at `mode`.
    pub fn new(kind: PeerKind, kv: Arc<dyn KeyValue>, mode: WriteMode) -> Peer {
        Peer { kind, kv, mode }
    }
}

impl Target for Peer {
    fn connect(&self) -> Result<Box<dyn Db>, String> {
        Ok(Box::new(OneValuePerRecord {
            kv: Arc::clone(&self.kv),
            mode: self.mode,
        }))
    }

    fn describe(&self) -> String {
        format!(
            "{} {:?} (one value per record)",
            self.kind.name(),
            self.mode
        )
    }
}

/// YCSB's key-value binding: a record is one encoded value, an update reads, merges and
/// writes it.
struct OneValuePerRecord {
    kv: Arc<dyn KeyValue>,
    mode: WriteMode,
}

impl OneValuePerRecord {
    fn write(&self, key: &str, values: &Record) -> Status {
        match self
            .kv
            .put(key.as_bytes(), &encode_record(values), self.mode)
        {
            Ok(()) => Status::Ok,
            Err(_) => Status::Error,
        }
    }
}

impl Db for OneValuePerRecord {
    fn read(&mut self, _table: &str, key: &str, _fields: Option<&[String]>) -> Status {
        match self.kv.get(key.as_bytes()) {
            Ok(Some(value)) if decode_record(&value).is_some() => Status::Ok,
            Ok(Some(_)) | Err(_) => Status::Error,
            Ok(None) => Status::NotFound,
        }
    }

    fn scan(
        &mut self,
        _table: &str,
        start: &str,
        count: usize,
        _fields: Option<&[String]>,
    ) -> Status {
        match self.kv.scan(start.as_bytes(), count) {
            Ok(_) => Status::Ok,
            Err(_) => Status::Error,
        }
    }

    fn update(&mut self, _table: &str, key: &str, values: &Record) -> Status {
        let current = match self.kv.get(key.as_bytes()) {
            Ok(Some(value)) => decode_record(&value).unwrap_or_default(),
            Ok(None) => Vec::new(),
            Err(_) => return Status::Error,
        };
        self.write(key, &merge(current, values))
    }

    fn insert(&mut self, _table: &str, key: &str, values: &Record) -> Status {
        self.write(key, values)
    }
}

fn counter(value: Option<&[u8]>) -> u64 {
    value
        .and_then(|v| v.try_into().ok())
        .map_or(0, u64::from_be_bytes)
}

/// Row locks for engines without an atomic read-modify-write: a key's stripe is held around
/// its get and put.
struct Stripes(Vec<Mutex<()>>);

impl Stripes {
    fn new() -> Stripes {
        Stripes((0..1024).map(|_| Mutex::new(())).collect())
    }

    fn of(&self, key: &[u8]) -> &Mutex<()> {
        let hash = key.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
            (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
        });
        &self.0[(hash % self.0.len() as u64) as usize]
    }
}

struct FjallKv {
    db: fjall::Database,
    keyspace: fjall::Keyspace,
    stripes: Stripes,
}

impl FjallKv {
    fn open(dir: &Path) -> Result<FjallKv, String> {
        let db = fjall::Database::builder(dir)
            .cache_size(CACHE_BYTES)
            .open()
            .map_err(|e| format!("fjall: opening {}: {e}", dir.display()))?;
        let keyspace = db
            .keyspace("usertable", fjall::KeyspaceCreateOptions::default)
            .map_err(|e| format!("fjall: keyspace: {e}"))?;
        Ok(FjallKv {
            db,
            keyspace,
            stripes: Stripes::new(),
        })
    }

    fn persist(&self, mode: WriteMode) -> Result<(), String> {
        let mode = match mode {
            WriteMode::Load => return Ok(()),
            WriteMode::Sync => fjall::PersistMode::Buffer,
            WriteMode::Fsync => fjall::PersistMode::SyncData,
        };
        self.db.persist(mode).map_err(|e| e.to_string())
    }
}

impl KeyValue for FjallKv {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, String> {
        self.keyspace
            .get(key)
            .map(|v| v.map(|v| v.to_vec()))
            .map_err(|e| e.to_string())
    }

    fn put(&self, key: &[u8], value: &[u8], mode: WriteMode) -> Result<(), String> {
        self.keyspace
            .insert(key, value)
            .map_err(|e| e.to_string())?;
        self.persist(mode)
    }

    fn scan(&self, start: &[u8], count: usize) -> Result<usize, String> {
        let mut n = 0;
        for item in self.keyspace.range(start.to_vec()..).take(count) {
            item.into_inner().map_err(|e| e.to_string())?;
            n += 1;
        }
        Ok(n)
    }

    fn increment(&self, key: &[u8], mode: WriteMode) -> Result<u64, String> {
        let value = {
            let _row = self.stripes.of(key).lock();
            let value = counter(self.get(key)?.as_deref()) + 1;
            self.keyspace
                .insert(key, value.to_be_bytes())
                .map_err(|e| e.to_string())?;
            value
        };
        self.persist(mode)?;
        Ok(value)
    }

    fn settle(&self) -> Result<(), String> {
        self.persist(WriteMode::Fsync)
    }
}

/// How long opening a sled database waits for a lock its last closed handle still holds.
const SLED_LOCK_WAIT: Duration = Duration::from_secs(5);

struct SledKv {
    db: sled::Db,
}

impl SledKv {
    /// Opens the database, waiting up to [`SLED_LOCK_WAIT`] for the file lock: dropping a
    /// `sled::Db` returns before sled's background flusher lets go of the lock, so reopening a
    /// directory right after closing it can find the lock still held (sled issue 1289).
    fn open(dir: &Path) -> Result<SledKv, String> {
        let deadline = Instant::now() + SLED_LOCK_WAIT;
        loop {
            let opened = sled::Config::new()
                .path(dir)
                .cache_capacity(CACHE_BYTES)
                .open();
            match opened {
                Ok(db) => return Ok(SledKv { db }),
                // sled reports the held lock as an `Other` I/O error with this message.
                Err(sled::Error::Io(e))
                    if e.to_string().starts_with("could not acquire lock")
                        && Instant::now() < deadline =>
                {
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => return Err(format!("sled: opening {}: {e}", dir.display())),
            }
        }
    }

    fn persist(&self, mode: WriteMode) -> Result<(), String> {
        if mode == WriteMode::Fsync {
            self.db.flush().map_err(|e| e.to_string())?;
        }
        Ok(())
    }
}

impl KeyValue for SledKv {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, String> {
        self.db
            .get(key)
            .map(|v| v.map(|v| v.to_vec()))
            .map_err(|e| e.to_string())
    }

    fn put(&self, key: &[u8], value: &[u8], mode: WriteMode) -> Result<(), String> {
        self.db.insert(key, value).map_err(|e| e.to_string())?;
        self.persist(mode)
    }

    fn scan(&self, start: &[u8], count: usize) -> Result<usize, String> {
        let mut n = 0;
        for item in self.db.range(start..).take(count) {
            item.map_err(|e| e.to_string())?;
            n += 1;
        }
        Ok(n)
    }

    fn increment(&self, key: &[u8], mode: WriteMode) -> Result<u64, String> {
        let value = self
            .db
            .update_and_fetch(key, |old| Some((counter(old) + 1).to_be_bytes().to_vec()))
            .map_err(|e| e.to_string())?;
        self.persist(mode)?;
        Ok(counter(value.as_deref()))
    }

    fn settle(&self) -> Result<(), String> {
        self.persist(WriteMode::Fsync)
    }
}

const REDB_TABLE: redb::TableDefinition<'static, &[u8], &[u8]> =
    redb::TableDefinition::new("usertable");

struct RedbKv {
    db: redb::Database,
}

impl RedbKv {
    fn open(dir: &Path) -> Result<RedbKv, String> {
        let path = dir.join("redb");
        let db = redb::Builder::new()
            .set_cache_size(CACHE_BYTES as usize)
            .create(&path)
            .map_err(|e| format!("redb: creating {}: {e}", path.display()))?;
        // The table exists before the first reader looks for it.
        let tx = db.begin_write().map_err(|e| e.to_string())?;
        tx.open_table(REDB_TABLE).map_err(|e| e.to_string())?;
        tx.commit().map_err(|e| e.to_string())?;
        Ok(RedbKv { db })
    }

    /// Runs `write` in one write transaction, committed at `mode`.
    fn write<T>(
        &self,
        mode: WriteMode,
        write: impl FnOnce(&mut redb::Table<'_, &[u8], &[u8]>) -> Result<T, redb::StorageError>,
    ) -> Result<T, String> {
        let mut tx = self.db.begin_write().map_err(|e| e.to_string())?;
        if mode == WriteMode::Load {
            tx.set_durability(redb::Durability::None)
                .map_err(|e| e.to_string())?;
        }
        let out = {
            let mut table = tx.open_table(REDB_TABLE).map_err(|e| e.to_string())?;
            write(&mut table).map_err(|e| e.to_string())?
        };
        tx.commit().map_err(|e| e.to_string())?;
        Ok(out)
    }
}

impl KeyValue for RedbKv {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, String> {
        use redb::ReadableDatabase;
        let tx = self.db.begin_read().map_err(|e| e.to_string())?;
        let table = tx.open_table(REDB_TABLE).map_err(|e| e.to_string())?;
        let value = table.get(key).map_err(|e| e.to_string())?;
        Ok(value.map(|v| v.value().to_vec()))
    }

    fn put(&self, key: &[u8], value: &[u8], mode: WriteMode) -> Result<(), String> {
        self.write(mode, |table| table.insert(key, value).map(drop))
    }

    fn scan(&self, start: &[u8], count: usize) -> Result<usize, String> {
        use redb::ReadableDatabase;
        let tx = self.db.begin_read().map_err(|e| e.to_string())?;
        let table = tx.open_table(REDB_TABLE).map_err(|e| e.to_string())?;
        let mut n = 0;
        for item in table.range(start..).map_err(|e| e.to_string())?.take(count) {
            let (k, v) = item.map_err(|e| e.to_string())?;
            std::hint::black_box((k.value().len(), v.value().len()));
            n += 1;
        }
        Ok(n)
    }

    fn increment(&self, key: &[u8], mode: WriteMode) -> Result<u64, String> {
        use redb::ReadableTable;
        self.write(mode, |table| {
            let value = counter(table.get(key)?.map(|v| v.value().to_vec()).as_deref()) + 1;
            table.insert(key, &value.to_be_bytes()[..])?;
            Ok(value)
        })
    }

    fn settle(&self) -> Result<(), String> {
        // An empty commit at `Immediate` makes every earlier `None` commit durable.
        self.write(WriteMode::Fsync, |_| Ok(()))
    }
}

#[cfg(feature = "peers")]
fn open_rocksdb(dir: &Path) -> Result<Arc<dyn KeyValue>, String> {
    let mut options = rocksdb::Options::default();
    options.create_if_missing(true);
    let mut table = rocksdb::BlockBasedOptions::default();
    table.set_block_cache(&rocksdb::Cache::new_lru_cache(CACHE_BYTES as usize));
    options.set_block_based_table_factory(&table);
    let db = rocksdb::DB::open(&options, dir)
        .map_err(|e| format!("rocksdb: opening {}: {e}", dir.display()))?;
    Ok(Arc::new(RocksKv {
        db,
        stripes: Stripes::new(),
    }))
}

#[cfg(not(feature = "peers"))]
fn open_rocksdb(_: &Path) -> Result<Arc<dyn KeyValue>, String> {
    Err("RocksDB needs keel-bench's peers feature (its C++ takes minutes to build)".into())
}

#[cfg(feature = "peers")]
struct RocksKv {
    db: rocksdb::DB,
    stripes: Stripes,
}

#[cfg(feature = "peers")]
impl RocksKv {
    fn options(mode: WriteMode) -> rocksdb::WriteOptions {
        let mut write = rocksdb::WriteOptions::default();
        write.set_sync(mode == WriteMode::Fsync);
        write
    }
}

#[cfg(feature = "peers")]
impl KeyValue for RocksKv {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, String> {
        self.db.get(key).map_err(|e| e.to_string())
    }

    fn put(&self, key: &[u8], value: &[u8], mode: WriteMode) -> Result<(), String> {
        self.db
            .put_opt(key, value, &Self::options(mode))
            .map_err(|e| e.to_string())
    }

    fn scan(&self, start: &[u8], count: usize) -> Result<usize, String> {
        let mode = rocksdb::IteratorMode::From(start, rocksdb::Direction::Forward);
        let mut n = 0;
        for item in self.db.iterator(mode).take(count) {
            item.map_err(|e| e.to_string())?;
            n += 1;
        }
        Ok(n)
    }

    fn increment(&self, key: &[u8], mode: WriteMode) -> Result<u64, String> {
        let _row = self.stripes.of(key).lock();
        let value = counter(self.get(key)?.as_deref()) + 1;
        self.db
            .put_opt(key, value.to_be_bytes(), &Self::options(mode))
            .map_err(|e| e.to_string())?;
        Ok(value)
    }

    fn settle(&self) -> Result<(), String> {
        self.db.flush_wal(true).map_err(|e| e.to_string())
    }
}
