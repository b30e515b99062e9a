//! The stores a workload can drive: `embedded` (direct keel-region calls, HBase's "embedded
//! mode") and `thrift` (keel-thrift's client against a running `keel serve`, as YCSB's HBase
//! binding talks to a region server). Each YCSB field is a column of family `columnfamily`
//! (`family`), as YCSB's HBase binding stores it, or — `Layout::Cell` — the whole record is one
//! cell, as key-value peers such as RocksDB store it (an update then reads, merges and writes
//! the record, as YCSB's RocksDB binding does).

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};
use keel_cell::{Cell, LATEST_TIMESTAMP};
use keel_region::matcher::ReadQuery;
use keel_region::{Durability, Engine, FamilyOptions, Scan, Table};
use keel_thrift::Client;
use keel_thrift::hbase::{BatchMutation, Call, ColumnDescriptor, Mutation, Reply, TScan};
use keel_thrift::transport::{Protocol, Transport};

use super::db::{Db, Record, Status, Target};

/// How a record is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// One column per field (YCSB's HBase binding).
    Columns,
    /// One cell per record, the fields serialized in it (like the key-value peers).
    Cell,
}

/// The column a whole record lives in with [`Layout::Cell`].
const RECORD: &str = "record";

/// Serializes a record as (u32 name length, name, u32 value length, value)…
pub fn encode_record(record: &Record) -> Bytes {
    let mut out = BytesMut::new();
    for (name, value) in record {
        out.put_u32(name.len() as u32);
        out.put_slice(name.as_bytes());
        out.put_u32(value.len() as u32);
        out.put_slice(value);
    }
    out.freeze()
}

/// The inverse of [`encode_record`] (`None` if malformed).
pub fn decode_record(mut bytes: &[u8]) -> Option<Record> {
    let mut out = Vec::new();
    let take = |bytes: &mut &[u8]| -> Option<Vec<u8>> {
        let len = u32::from_be_bytes(bytes.get(..4)?.try_into().ok()?) as usize;
        let item = bytes.get(4..4 + len)?.to_vec();
        *bytes = &bytes[4 + len..];
        Some(item)
    };
    while !bytes.is_empty() {
        let name = String::from_utf8(take(&mut bytes)?).ok()?;
        let value = Bytes::from(take(&mut bytes)?);
        out.push((name, value));
    }
    Some(out)
}

/// `current` with `update`'s fields written over it (an update of a one-value record).
pub(crate) fn merge(mut current: Record, update: &Record) -> Record {
    for (name, value) in update {
        match current.iter_mut().find(|(n, _)| n == name) {
            Some(slot) => slot.1 = value.clone(),
            None => current.push((name.clone(), value.clone())),
        }
    }
    current
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Keel embedded: direct keel-region calls.
#[derive(Debug, Clone)]
pub struct Embedded {
    table: Table,
    family: Bytes,
    layout: Layout,
    durability: Durability,
}

impl Embedded {
    /// Opens (creating if needed) `table` with one family in `store`.
    pub fn new(
        store: &Arc<Engine>,
        table: &str,
        family: &str,
        layout: Layout,
    ) -> Result<Embedded, String> {
        let t = match store.table(table) {
            Ok(t) => t,
            Err(_) => store
                .create_table(table, vec![FamilyOptions::new(family.to_string())])
                .map_err(|e| format!("creating {table}: {e}"))?,
        };
        Ok(Embedded {
            table: t,
            family: Bytes::copy_from_slice(family.as_bytes()),
            layout,
            durability: Durability::UseDefault,
        })
    }

    /// The same table, its writes at `durability` instead of the store's default.
    pub fn with_durability(mut self, durability: Durability) -> Embedded {
        self.durability = durability;
        self
    }
}

struct EmbeddedDb {
    table: Table,
    family: Bytes,
    layout: Layout,
    durability: Durability,
    /// A scan's rows are read into this one buffer, each dropped as the next comes (as the
    /// peers' adapters step through their iterators), so a scan allocates nothing per row.
    rows: Vec<Cell>,
}

impl EmbeddedDb {
    fn query(&self, fields: Option<&[String]>) -> ReadQuery {
        let columns = match self.layout {
            Layout::Cell => Some(vec![(
                self.family.clone(),
                Some(Bytes::from_static(RECORD.as_bytes())),
            )]),
            Layout::Columns => fields.map(|f| {
                f.iter()
                    .map(|name| {
                        (
                            self.family.clone(),
                            Some(Bytes::copy_from_slice(name.as_bytes())),
                        )
                    })
                    .collect()
            }),
        };
        ReadQuery {
            columns,
            ..ReadQuery::latest(0, now_ms())
        }
    }

    fn write(&self, key: &str, values: &Record) -> Status {
        let row = Bytes::copy_from_slice(key.as_bytes());
        let cells: Result<Vec<Cell>, _> = match self.layout {
            Layout::Columns => values
                .iter()
                .map(|(name, value)| {
                    Cell::put(
                        row.clone(),
                        self.family.clone(),
                        Bytes::copy_from_slice(name.as_bytes()),
                        LATEST_TIMESTAMP,
                        value.clone(),
                    )
                })
                .collect(),
            Layout::Cell => Cell::put(
                row,
                self.family.clone(),
                RECORD,
                LATEST_TIMESTAMP,
                encode_record(values),
            )
            .map(|c| vec![c]),
        };
        match cells.map(|cells| self.table.mutate(cells, self.durability)) {
            Ok(Ok(_)) => Status::Ok,
            _ => Status::Error,
        }
    }
}

impl Db for EmbeddedDb {
    fn read(&mut self, _table: &str, key: &str, fields: Option<&[String]>) -> Status {
        match self.table.get(key.as_bytes(), &self.query(fields)) {
            Ok(cells) if cells.is_empty() => Status::NotFound,
            Ok(_) => Status::Ok,
            Err(_) => Status::Error,
        }
    }

    fn scan(
        &mut self,
        _table: &str,
        start: &str,
        count: usize,
        fields: Option<&[String]>,
    ) -> Status {
        let scan = Scan {
            start_row: Bytes::copy_from_slice(start.as_bytes()),
            limit: Some(count),
            query: self.query(fields),
            ..Scan::all(now_ms())
        };
        let rows = &mut self.rows;
        let read = self.table.scanner(&scan).and_then(|mut scanner| {
            loop {
                rows.clear();
                if scanner.next_into(rows)? == 0 {
                    return Ok(());
                }
            }
        });
        match read {
            Ok(()) => Status::Ok,
            Err(_) => Status::Error,
        }
    }

    fn update(&mut self, _table: &str, key: &str, values: &Record) -> Status {
        match self.layout {
            Layout::Columns => self.write(key, values),
            Layout::Cell => {
                let current = match self.table.get(key.as_bytes(), &self.query(None)) {
                    Ok(cells) => cells
                        .first()
                        .and_then(|c| decode_record(c.value()))
                        .unwrap_or_default(),
                    Err(_) => return Status::Error,
                };
                self.write(key, &merge(current, values))
            }
        }
    }

    fn insert(&mut self, _table: &str, key: &str, values: &Record) -> Status {
        self.write(key, values)
    }
}

impl Target for Embedded {
    fn connect(&self) -> Result<Box<dyn Db>, String> {
        Ok(Box::new(EmbeddedDb {
            table: self.table.clone(),
            family: self.family.clone(),
            layout: self.layout,
            durability: self.durability,
            rows: Vec::new(),
        }))
    }

    fn describe(&self) -> String {
        format!("embedded keel-region, {:?} layout", self.layout)
    }
}

/// A running `keel serve`, through keel-thrift's client (framed binary).
#[derive(Debug)]
pub struct Thrift {
    address: SocketAddr,
    family: String,
    layout: Layout,
}

impl Thrift {
    /// Connects once to create `table` with `family` if it is missing.
    pub fn new(
        address: SocketAddr,
        table: &str,
        family: &str,
        layout: Layout,
    ) -> Result<Thrift, String> {
        let mut admin = Client::connect(address, Transport::Framed, Protocol::Binary)
            .map_err(|e| format!("connecting to {address}: {e}"))?;
        let names = match admin.call(&Call::GetTableNames) {
            Ok(Reply::Names(names)) => names,
            other => return Err(format!("getTableNames: {other:?}")),
        };
        if !names.iter().any(|n| n == table.as_bytes()) {
            admin
                .call(&Call::CreateTable {
                    table: Bytes::copy_from_slice(table.as_bytes()),
                    families: vec![ColumnDescriptor {
                        name: Bytes::from(format!("{family}:")),
                        max_versions: 1,
                        ..ColumnDescriptor::default()
                    }],
                })
                .map_err(|e| format!("creating {table}: {e}"))?;
        }
        Ok(Thrift {
            address,
            family: family.to_string(),
            layout,
        })
    }
}

struct ThriftDb {
    client: Client,
    family: String,
    layout: Layout,
}

impl ThriftDb {
    fn columns(&self, fields: Option<&[String]>) -> Option<Vec<Bytes>> {
        match self.layout {
            Layout::Cell => Some(vec![Bytes::from(format!("{}:{RECORD}", self.family))]),
            Layout::Columns => fields.map(|f| {
                f.iter()
                    .map(|n| Bytes::from(format!("{}:{n}", self.family)))
                    .collect()
            }),
        }
    }

    fn get(
        &mut self,
        table: &str,
        key: &str,
        fields: Option<&[String]>,
    ) -> Result<Option<Record>, ()> {
        let reply = self.client.call(&Call::GetRows {
            table: Bytes::copy_from_slice(table.as_bytes()),
            rows: vec![Bytes::copy_from_slice(key.as_bytes())],
            columns: self.columns(fields),
            timestamp: None,
        });
        match reply {
            Ok(Reply::Rows(rows)) => Ok(rows.into_iter().next().map(|r| {
                r.columns
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(name, cell)| (String::from_utf8_lossy(&name).into_owned(), cell.value))
                    .collect()
            })),
            _ => Err(()),
        }
    }

    fn write(&mut self, table: &str, key: &str, values: &Record) -> Status {
        let mutations = match self.layout {
            Layout::Columns => values
                .iter()
                .map(|(name, value)| Mutation {
                    column: Bytes::from(format!("{}:{name}", self.family)),
                    value: Some(value.clone()),
                    ..Mutation::default()
                })
                .collect(),
            Layout::Cell => vec![Mutation {
                column: Bytes::from(format!("{}:{RECORD}", self.family)),
                value: Some(encode_record(values)),
                ..Mutation::default()
            }],
        };
        match self.client.call(&Call::MutateRows {
            table: Bytes::copy_from_slice(table.as_bytes()),
            batches: vec![BatchMutation {
                row: Bytes::copy_from_slice(key.as_bytes()),
                mutations,
            }],
            timestamp: None,
        }) {
            Ok(_) => Status::Ok,
            Err(_) => Status::Error,
        }
    }
}

impl Db for ThriftDb {
    fn read(&mut self, table: &str, key: &str, fields: Option<&[String]>) -> Status {
        match self.get(table, key, fields) {
            Ok(Some(_)) => Status::Ok,
            Ok(None) => Status::NotFound,
            Err(()) => Status::Error,
        }
    }

    fn scan(
        &mut self,
        table: &str,
        start: &str,
        count: usize,
        fields: Option<&[String]>,
    ) -> Status {
        let rows = i32::try_from(count).unwrap_or(i32::MAX);
        let open = self.client.call(&Call::ScannerOpen {
            table: Bytes::copy_from_slice(table.as_bytes()),
            scan: TScan {
                start_row: Some(Bytes::copy_from_slice(start.as_bytes())),
                columns: self.columns(fields),
                caching: Some(rows),
                ..TScan::default()
            },
        });
        let Ok(Reply::I32(id)) = open else {
            return Status::Error;
        };
        let got = self.client.call(&Call::ScannerGet { id, rows });
        let closed = self.client.call(&Call::ScannerClose { id });
        match (got, closed) {
            (Ok(_), Ok(_)) => Status::Ok,
            _ => Status::Error,
        }
    }

    fn update(&mut self, table: &str, key: &str, values: &Record) -> Status {
        match self.layout {
            Layout::Columns => self.write(table, key, values),
            Layout::Cell => {
                let current = match self.get(table, key, None) {
                    Ok(Some(cols)) => cols
                        .first()
                        .and_then(|(_, v)| decode_record(v))
                        .unwrap_or_default(),
                    Ok(None) => Vec::new(),
                    Err(()) => return Status::Error,
                };
                self.write(table, key, &merge(current, values))
            }
        }
    }

    fn insert(&mut self, table: &str, key: &str, values: &Record) -> Status {
        self.write(table, key, values)
    }
}

impl Target for Thrift {
    fn connect(&self) -> Result<Box<dyn Db>, String> {
        let client = Client::connect(self.address, Transport::Framed, Protocol::Binary)
            .map_err(|e| format!("connecting to {}: {e}", self.address))?;
        Ok(Box::new(ThriftDb {
            client,
            family: self.family.clone(),
            layout: self.layout,
        }))
    }

    fn describe(&self) -> String {
        format!(
            "keel serve at {} (Thrift1, framed binary), {:?} layout",
            self.address, self.layout
        )
    }
}
