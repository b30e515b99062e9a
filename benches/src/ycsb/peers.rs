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

struct FjallDb {
    keyspace: fjall::Keyspace,
    partition: fjall::PartitionHandle,
    mode: fjall::PersistMode,
}

impl FjallDb {
    fn write(&self, key: &str, values: &Record) -> Status {
        let written = self
            .partition
            .insert(key.as_bytes(), encode_record(values).as_ref())
            .and_then(|()| self.keyspace.persist(self.mode));
        if written.is_ok() {
            Status::Ok
        } else {
            Status::Error
        }
    }
}

impl Db for FjallDb {
    fn read(&mut self, _table: &str, key: &str, _fields: Option<&[String]>) -> Status {
        match self.partition.get(key.as_bytes()) {
            Ok(Some(value)) if decode_record(&value).is_some() => Status::Ok,
            Ok(Some(_)) => Status::Error,
            Ok(None) => Status::NotFound,
            Err(_) => Status::Error,
        }
    }

    fn scan(
        &mut self,
        _table: &str,
        start: &str,
        count: usize,
        _fields: Option<&[String]>,
    ) -> Status {
        let mut seen = 0;
        for item in self.partition.range(start.as_bytes().to_vec()..) {
            if item.is_err() {
                return Status::Error;
            }
            seen += 1;
            if seen >= count {
                break;
            }
        }
        Status::Ok
    }

    fn update(&mut self, _table: &str, key: &str, values: &Record) -> Status {
        // Read, merge, write, as YCSB's key-value bindings do.
        let current = match self.partition.get(key.as_bytes()) {
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

impl Target for Fjall {
    fn connect(&self) -> Result<Box<dyn Db>, String> {
        Ok(Box::new(FjallDb {
            keyspace: self.keyspace.clone(),
            partition: self.partition.clone(),
            mode: match self.durability {
                PeerDurability::Sync => fjall::PersistMode::Buffer,
                PeerDurability::Fsync => fjall::PersistMode::SyncData,
            },
        }))
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

impl RocksDbDb {
    fn write(&self, key: &str, values: &Record) -> Status {
        match self
            .db
            .put_opt(key.as_bytes(), encode_record(values).as_ref(), &self.write)
        {
            Ok(()) => Status::Ok,
            Err(_) => Status::Error,
        }
    }
}

impl Db for RocksDbDb {
    fn read(&mut self, _table: &str, key: &str, _fields: Option<&[String]>) -> Status {
        match self.db.get(key.as_bytes()) {
            Ok(Some(value)) if decode_record(&value).is_some() => Status::Ok,
            Ok(Some(_)) => Status::Error,
            Ok(None) => Status::NotFound,
            Err(_) => Status::Error,
        }
    }

    fn scan(
        &mut self,
        _table: &str,
        start: &str,
        count: usize,
        _fields: Option<&[String]>,
    ) -> Status {
        let mode = rocksdb::IteratorMode::From(start.as_bytes(), rocksdb::Direction::Forward);
        for item in self.db.iterator(mode).take(count) {
            if item.is_err() {
                return Status::Error;
            }
        }
        Status::Ok
    }

    fn update(&mut self, _table: &str, key: &str, values: &Record) -> Status {
        let current = match self.db.get(key.as_bytes()) {
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

impl Target for RocksDb {
    fn connect(&self) -> Result<Box<dyn Db>, String> {
        let mut write = rocksdb::WriteOptions::default();
        write.set_sync(self.durability == PeerDurability::Fsync);
        Ok(Box::new(RocksDbDb {
            db: std::sync::Arc::clone(&self.db),
            write,
        }))
    }

    fn describe(&self) -> String {
        format!("RocksDB {:?} (one value per record)", self.durability)
    }
}
