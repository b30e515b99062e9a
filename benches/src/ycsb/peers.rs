//! Peers (cargo feature `peers`, left out of default builds and CI): other embedded engines
//! behind the same [`Target`] interface, so a user can see Keel beside what they would otherwise
//! pick. Records are one value per key (YCSB's key-value bindings; compare with Keel's
//! `--layout cell`), and durability matches Keel's levels:
//! - `sync` (Keel's `SyncWal`, its default: acknowledged once written to the OS);
//! - `fsync` (Keel's `FsyncWal`: acknowledged once `fdatasync`ed).
//!
//! fjall: `Config::new(dir)` with its defaults (its recommended settings: LZ4, background
//! flush and compaction workers), one partition per table; after each write
//! `Keyspace::persist(PersistMode::Buffer)` (sync) or `PersistMode::SyncData` (fsync).

use std::path::Path;

use super::db::{Db, Record, Status, Target};
use super::targets::{decode_record, encode_record, merge};

/// How durable an acknowledged write is, in Keel's terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeerDurability {
    /// Written to the OS (Keel `SyncWal`).
    Sync,
    /// `fdatasync`ed (Keel `FsyncWal`).
    Fsync,
}

/// fjall, one partition per YCSB table.
pub struct Fjall {
    keyspace: fjall::Keyspace,
    partition: fjall::PartitionHandle,
    durability: PeerDurability,
}

impl std::fmt::Debug for Fjall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fjall")
            .field("durability", &self.durability)
            .finish_non_exhaustive()
    }
}

impl Fjall {
    /// Opens (creating) a keyspace in `dir` with a partition for `table`.
    pub fn open(dir: &Path, table: &str, durability: PeerDurability) -> Result<Fjall, String> {
        let keyspace = fjall::Config::new(dir)
            .open()
            .map_err(|e| format!("fjall: opening {}: {e}", dir.display()))?;
        let partition = keyspace
            .open_partition(table, fjall::PartitionCreateOptions::default())
            .map_err(|e| format!("fjall: partition {table}: {e}"))?;
        Ok(Fjall {
            keyspace,
            partition,
            durability,
        })
    }
}

/// What a key-value engine offers the YCSB operations: one value per key.
trait KeyValue: Send {
    /// The value of `key`, if any.
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, ()>;
    /// Writes `value` at `key`, at the engine's matched durability.
    fn put(&self, key: &[u8], value: &[u8]) -> Result<(), ()>;
    /// Reads up to `count` entries from `start` on.
    fn scan(&self, start: &[u8], count: usize) -> Result<(), ()>;
}

/// YCSB's key-value binding over any [`KeyValue`]: a record is one encoded value, an update
/// reads, merges and writes it.
struct OneValuePerRecord<K>(K);

impl<K: KeyValue> OneValuePerRecord<K> {
    fn write(&self, key: &str, values: &Record) -> Status {
        match self.0.put(key.as_bytes(), &encode_record(values)) {
            Ok(()) => Status::Ok,
            Err(()) => Status::Error,
        }
    }
}

impl<K: KeyValue> Db for OneValuePerRecord<K> {
    fn read(&mut self, _table: &str, key: &str, _fields: Option<&[String]>) -> Status {
        match self.0.get(key.as_bytes()) {
            Ok(Some(value)) if decode_record(&value).is_some() => Status::Ok,
            Ok(Some(_)) | Err(()) => Status::Error,
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
        match self.0.scan(start.as_bytes(), count) {
            Ok(()) => Status::Ok,
            Err(()) => Status::Error,
        }
    }

    fn update(&mut self, _table: &str, key: &str, values: &Record) -> Status {
        let current = match self.0.get(key.as_bytes()) {
            Ok(Some(value)) => decode_record(&value).unwrap_or_default(),
            Ok(None) => Vec::new(),
            Err(()) => return Status::Error,
        };
        self.write(key, &merge(current, values))
    }

    fn insert(&mut self, _table: &str, key: &str, values: &Record) -> Status {
        self.write(key, values)
    }
}

struct FjallDb {
    keyspace: fjall::Keyspace,
    partition: fjall::PartitionHandle,
    mode: fjall::PersistMode,
}

impl KeyValue for FjallDb {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, ()> {
        self.partition
            .get(key)
            .map(|v| v.map(|v| v.to_vec()))
            .map_err(|_| ())
    }

    fn put(&self, key: &[u8], value: &[u8]) -> Result<(), ()> {
        self.partition
            .insert(key, value)
            .and_then(|()| self.keyspace.persist(self.mode))
            .map_err(|_| ())
    }

    fn scan(&self, start: &[u8], count: usize) -> Result<(), ()> {
        for item in self.partition.range(start.to_vec()..).take(count) {
            item.map_err(|_| ())?;
        }
        Ok(())
    }
}

impl Target for Fjall {
    fn connect(&self) -> Result<Box<dyn Db>, String> {
        Ok(Box::new(OneValuePerRecord(FjallDb {
            keyspace: self.keyspace.clone(),
            partition: self.partition.clone(),
            mode: match self.durability {
                PeerDurability::Sync => fjall::PersistMode::Buffer,
                PeerDurability::Fsync => fjall::PersistMode::SyncData,
            },
        })))
    }

    fn describe(&self) -> String {
        format!("fjall {:?} (one value per record)", self.durability)
    }
}

/// RocksDB (the `rocksdb` crate), one key per record in the default column family, with the
/// crate's default options plus `create_if_missing`; `sync` writes with RocksDB's default
/// `WriteOptions` (the WAL written to the OS, no fsync), `fsync` with `set_sync(true)`.
pub struct RocksDb {
    db: std::sync::Arc<rocksdb::DB>,
    durability: PeerDurability,
}

impl std::fmt::Debug for RocksDb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RocksDb")
            .field("durability", &self.durability)
            .finish_non_exhaustive()
    }
}

impl RocksDb {
    /// Opens (creating) a database in `dir`.
    pub fn open(dir: &Path, durability: PeerDurability) -> Result<RocksDb, String> {
        let mut options = rocksdb::Options::default();
        options.create_if_missing(true);
        let db = rocksdb::DB::open(&options, dir)
            .map_err(|e| format!("rocksdb: opening {}: {e}", dir.display()))?;
        Ok(RocksDb {
            db: std::sync::Arc::new(db),
            durability,
        })
    }
}

struct RocksDbDb {
    db: std::sync::Arc<rocksdb::DB>,
    write: rocksdb::WriteOptions,
}

impl KeyValue for RocksDbDb {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, ()> {
        self.db.get(key).map_err(|_| ())
    }

    fn put(&self, key: &[u8], value: &[u8]) -> Result<(), ()> {
        self.db.put_opt(key, value, &self.write).map_err(|_| ())
    }

    fn scan(&self, start: &[u8], count: usize) -> Result<(), ()> {
        let mode = rocksdb::IteratorMode::From(start, rocksdb::Direction::Forward);
        for item in self.db.iterator(mode).take(count) {
            item.map_err(|_| ())?;
        }
        Ok(())
    }
}

impl Target for RocksDb {
    fn connect(&self) -> Result<Box<dyn Db>, String> {
        let mut write = rocksdb::WriteOptions::default();
        write.set_sync(self.durability == PeerDurability::Fsync);
        Ok(Box::new(OneValuePerRecord(RocksDbDb {
            db: std::sync::Arc::clone(&self.db),
            write,
        })))
    }

    fn describe(&self) -> String {
        format!("RocksDB {:?} (one value per record)", self.durability)
    }
}
