//! The `Hbase.thrift` structs (field ids and defaults as Apache's IDL), each readable and
//! writable with either protocol. Unknown fields, and known ids with an unexpected type, are
//! skipped, as generated Thrift code does.

use super::PREALLOCATE;
use bytes::Bytes;

use crate::error::Result;
use crate::protocol::{Decoder, Encoder};
use crate::types::{FieldHeader, TType};

/// A struct on the wire.
pub trait ThriftStruct: Sized {
    /// Writes it (struct begin to STOP).
    fn write(&self, e: &mut dyn Encoder);
    /// Reads it.
    fn read(d: &mut dyn Decoder) -> Result<Self>;
}

/// Reads a struct's fields, calling `field` for each; it returns false for fields it does not
/// take, which are skipped.
pub(crate) fn read_fields(
    d: &mut dyn Decoder,
    mut field: impl FnMut(&mut dyn Decoder, FieldHeader) -> Result<bool>,
) -> Result<()> {
    d.read_struct_begin()?;
    while let Some(header) = d.read_field_begin()? {
        if !field(d, header)? {
            d.skip(header.ttype)?;
        }
    }
    d.read_struct_end()
}

pub(crate) fn read_list<T>(
    d: &mut dyn Decoder,
    mut item: impl FnMut(&mut dyn Decoder) -> Result<T>,
) -> Result<Vec<T>> {
    let (_, len) = d.read_list_begin()?;
    let mut out = Vec::with_capacity(len.min(PREALLOCATE));
    for _ in 0..len {
        out.push(item(d)?);
    }
    d.read_container_end();
    Ok(out)
}

pub(crate) fn write_binaries(e: &mut dyn Encoder, items: &[Bytes]) {
    e.write_list_begin(TType::Binary, items.len());
    for item in items {
        e.write_binary(item);
    }
}

pub(crate) fn write_structs<T: ThriftStruct>(e: &mut dyn Encoder, items: &[T]) {
    e.write_list_begin(TType::Struct, items.len());
    for item in items {
        item.write(e);
    }
}

fn binary_field(e: &mut dyn Encoder, id: i16, value: &[u8]) {
    e.write_field_begin(TType::Binary, id);
    e.write_binary(value);
}

/// `TCell`: a value and its timestamp.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TCell {
    /// 1: the value.
    pub value: Bytes,
    /// 2: its timestamp.
    pub timestamp: i64,
}

impl ThriftStruct for TCell {
    fn write(&self, e: &mut dyn Encoder) {
        e.write_struct_begin();
        binary_field(e, 1, &self.value);
        e.write_field_begin(TType::I64, 2);
        e.write_i64(self.timestamp);
        e.write_struct_end();
    }

    fn read(d: &mut dyn Decoder) -> Result<TCell> {
        let mut cell = TCell::default();
        read_fields(d, |d, f| {
            match (f.id, f.ttype) {
                (1, TType::Binary) => cell.value = d.read_binary()?,
                (2, TType::I64) => cell.timestamp = d.read_i64()?,
                _ => return Ok(false),
            }
            Ok(true)
        })?;
        Ok(cell)
    }
}

/// `ColumnDescriptor`: a column family's settings (defaults as Apache's IDL).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnDescriptor {
    /// 1: the family name with a trailing colon (`"cf:"`).
    pub name: Bytes,
    /// 2: versions kept (3).
    pub max_versions: i32,
    /// 3: compression ("NONE").
    pub compression: String,
    /// 4: in memory (false).
    pub in_memory: bool,
    /// 5: bloom filter type ("NONE").
    pub bloom_filter_type: String,
    /// 6: unused by HBase.
    pub bloom_filter_vector_size: i32,
    /// 7: unused by HBase.
    pub bloom_filter_nb_hashes: i32,
    /// 8: block cache enabled (false).
    pub block_cache_enabled: bool,
    /// 9: time to live in seconds (`i32::MAX`; happybase sends -1; ≤ 0 means none).
    pub time_to_live: i32,
}

impl Default for ColumnDescriptor {
    fn default() -> ColumnDescriptor {
        ColumnDescriptor {
            name: Bytes::new(),
            max_versions: 3,
            compression: "NONE".to_string(),
            in_memory: false,
            bloom_filter_type: "NONE".to_string(),
            bloom_filter_vector_size: 0,
            bloom_filter_nb_hashes: 0,
            block_cache_enabled: false,
            time_to_live: i32::MAX,
        }
    }
}

impl ThriftStruct for ColumnDescriptor {
    fn write(&self, e: &mut dyn Encoder) {
        e.write_struct_begin();
        binary_field(e, 1, &self.name);
        e.write_field_begin(TType::I32, 2);
        e.write_i32(self.max_versions);
        binary_field(e, 3, self.compression.as_bytes());
        e.write_field_begin(TType::Bool, 4);
        e.write_bool(self.in_memory);
        binary_field(e, 5, self.bloom_filter_type.as_bytes());
        e.write_field_begin(TType::I32, 6);
        e.write_i32(self.bloom_filter_vector_size);
        e.write_field_begin(TType::I32, 7);
        e.write_i32(self.bloom_filter_nb_hashes);
        e.write_field_begin(TType::Bool, 8);
        e.write_bool(self.block_cache_enabled);
        e.write_field_begin(TType::I32, 9);
        e.write_i32(self.time_to_live);
        e.write_struct_end();
    }

    fn read(d: &mut dyn Decoder) -> Result<ColumnDescriptor> {
        let mut c = ColumnDescriptor::default();
        read_fields(d, |d, f| {
            match (f.id, f.ttype) {
                (1, TType::Binary) => c.name = d.read_binary()?,
                (2, TType::I32) => c.max_versions = d.read_i32()?,
                (3, TType::Binary) => c.compression = d.read_string()?,
                (4, TType::Bool) => c.in_memory = d.read_bool()?,
                (5, TType::Binary) => c.bloom_filter_type = d.read_string()?,
                (6, TType::I32) => c.bloom_filter_vector_size = d.read_i32()?,
                (7, TType::I32) => c.bloom_filter_nb_hashes = d.read_i32()?,
                (8, TType::Bool) => c.block_cache_enabled = d.read_bool()?,
                (9, TType::I32) => c.time_to_live = d.read_i32()?,
                _ => return Ok(false),
            }
            Ok(true)
        })?;
        Ok(c)
    }
}

/// `TRegionInfo`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TRegionInfo {
    /// 1: first row (inclusive; empty = unbounded).
    pub start_key: Bytes,
    /// 2: end row (exclusive; empty = unbounded).
    pub end_key: Bytes,
    /// 3: the region id.
    pub id: i64,
    /// 4: the region name.
    pub name: Bytes,
    /// 5: the format version.
    pub version: i8,
    /// 6: the serving host.
    pub server_name: Bytes,
    /// 7: the serving port.
    pub port: i32,
}

impl ThriftStruct for TRegionInfo {
    fn write(&self, e: &mut dyn Encoder) {
        e.write_struct_begin();
        binary_field(e, 1, &self.start_key);
        binary_field(e, 2, &self.end_key);
        e.write_field_begin(TType::I64, 3);
        e.write_i64(self.id);
        binary_field(e, 4, &self.name);
        e.write_field_begin(TType::I8, 5);
        e.write_i8(self.version);
        binary_field(e, 6, &self.server_name);
        e.write_field_begin(TType::I32, 7);
        e.write_i32(self.port);
        e.write_struct_end();
    }

    fn read(d: &mut dyn Decoder) -> Result<TRegionInfo> {
        let mut r = TRegionInfo::default();
        read_fields(d, |d, f| {
            match (f.id, f.ttype) {
                (1, TType::Binary) => r.start_key = d.read_binary()?,
                (2, TType::Binary) => r.end_key = d.read_binary()?,
                (3, TType::I64) => r.id = d.read_i64()?,
                (4, TType::Binary) => r.name = d.read_binary()?,
                (5, TType::I8) => r.version = d.read_i8()?,
                (6, TType::Binary) => r.server_name = d.read_binary()?,
                (7, TType::I32) => r.port = d.read_i32()?,
                _ => return Ok(false),
            }
            Ok(true)
        })?;
        Ok(r)
    }
}

/// `Mutation`: a put (with a value) or a delete of one column or family.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mutation {
    /// 1: a delete (false).
    pub is_delete: bool,
    /// 2: `fam:qual`, `fam:` or (deletes only) `fam`.
    pub column: Bytes,
    /// 3: the value (puts).
    pub value: Option<Bytes>,
    /// 4: log it (true); false skips the WAL.
    pub write_to_wal: bool,
}

impl Default for Mutation {
    fn default() -> Mutation {
        Mutation {
            is_delete: false,
            column: Bytes::new(),
            value: None,
            write_to_wal: true,
        }
    }
}

impl ThriftStruct for Mutation {
    fn write(&self, e: &mut dyn Encoder) {
        e.write_struct_begin();
        e.write_field_begin(TType::Bool, 1);
        e.write_bool(self.is_delete);
        binary_field(e, 2, &self.column);
        if let Some(value) = &self.value {
            binary_field(e, 3, value);
        }
        e.write_field_begin(TType::Bool, 4);
        e.write_bool(self.write_to_wal);
        e.write_struct_end();
    }

    fn read(d: &mut dyn Decoder) -> Result<Mutation> {
        let mut m = Mutation::default();
        read_fields(d, |d, f| {
            match (f.id, f.ttype) {
                (1, TType::Bool) => m.is_delete = d.read_bool()?,
                (2, TType::Binary) => m.column = d.read_binary()?,
                (3, TType::Binary) => m.value = Some(d.read_binary()?),
                (4, TType::Bool) => m.write_to_wal = d.read_bool()?,
                _ => return Ok(false),
            }
            Ok(true)
        })?;
        Ok(m)
    }
}

/// `BatchMutation`: the mutations of one row.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BatchMutation {
    /// 1: the row.
    pub row: Bytes,
    /// 2: its mutations.
    pub mutations: Vec<Mutation>,
}

impl ThriftStruct for BatchMutation {
    fn write(&self, e: &mut dyn Encoder) {
        e.write_struct_begin();
        binary_field(e, 1, &self.row);
        e.write_field_begin(TType::List, 2);
        write_structs(e, &self.mutations);
        e.write_struct_end();
    }

    fn read(d: &mut dyn Decoder) -> Result<BatchMutation> {
        let mut b = BatchMutation::default();
        read_fields(d, |d, f| {
            match (f.id, f.ttype) {
                (1, TType::Binary) => b.row = d.read_binary()?,
                (2, TType::List) => b.mutations = read_list(d, Mutation::read)?,
                _ => return Ok(false),
            }
            Ok(true)
        })?;
        Ok(b)
    }
}

/// `TColumn`: a column name and its cell (a row result's sorted form).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TColumn {
    /// 1: `fam:qual`.
    pub column_name: Bytes,
    /// 2: the cell.
    pub cell: TCell,
}

impl ThriftStruct for TColumn {
    fn write(&self, e: &mut dyn Encoder) {
        e.write_struct_begin();
        binary_field(e, 1, &self.column_name);
        e.write_field_begin(TType::Struct, 2);
        self.cell.write(e);
        e.write_struct_end();
    }

    fn read(d: &mut dyn Decoder) -> Result<TColumn> {
        let mut c = TColumn::default();
        read_fields(d, |d, f| {
            match (f.id, f.ttype) {
                (1, TType::Binary) => c.column_name = d.read_binary()?,
                (2, TType::Struct) => c.cell = TCell::read(d)?,
                _ => return Ok(false),
            }
            Ok(true)
        })?;
        Ok(c)
    }
}

/// `TRowResult`: a row's cells, as a map keyed `fam:qual` or (with `sortColumns`) a sorted list.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TRowResult {
    /// 1: the row.
    pub row: Bytes,
    /// 2: column → cell, in the order written (a map on the wire).
    pub columns: Option<Vec<(Bytes, TCell)>>,
    /// 3: the columns in order.
    pub sorted_columns: Option<Vec<TColumn>>,
}

impl ThriftStruct for TRowResult {
    fn write(&self, e: &mut dyn Encoder) {
        e.write_struct_begin();
        binary_field(e, 1, &self.row);
        if let Some(columns) = &self.columns {
            e.write_field_begin(TType::Map, 2);
            e.write_map_begin(TType::Binary, TType::Struct, columns.len());
            for (name, cell) in columns {
                e.write_binary(name);
                cell.write(e);
            }
        }
        if let Some(sorted) = &self.sorted_columns {
            e.write_field_begin(TType::List, 3);
            write_structs(e, sorted);
        }
        e.write_struct_end();
    }

    fn read(d: &mut dyn Decoder) -> Result<TRowResult> {
        let mut r = TRowResult::default();
        read_fields(d, |d, f| {
            match (f.id, f.ttype) {
                (1, TType::Binary) => r.row = d.read_binary()?,
                (2, TType::Map) => {
                    let (_, _, len) = d.read_map_begin()?;
                    let mut columns = Vec::with_capacity(len.min(PREALLOCATE));
                    for _ in 0..len {
                        columns.push((d.read_binary()?, TCell::read(d)?));
                    }
                    d.read_container_end();
                    r.columns = Some(columns);
                }
                (3, TType::List) => r.sorted_columns = Some(read_list(d, TColumn::read)?),
                _ => return Ok(false),
            }
            Ok(true)
        })?;
        Ok(r)
    }
}

/// `TScan`: what `scannerOpenWithScan` scans. Every field optional.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TScan {
    /// 1: first row (forward: inclusive; reversed: where to start, inclusive).
    pub start_row: Option<Bytes>,
    /// 2: stop row (exclusive).
    pub stop_row: Option<Bytes>,
    /// 3: only cells older than this (the range is [0, ts)).
    pub timestamp: Option<i64>,
    /// 4: columns (`fam:qual` or `fam`); absent = all.
    pub columns: Option<Vec<Bytes>>,
    /// 5: rows per round trip.
    pub caching: Option<i32>,
    /// 6: a filter in HBase's filter language.
    pub filter_string: Option<Bytes>,
    /// 7: cells per result.
    pub batch_size: Option<i32>,
    /// 8: fill `sorted_columns` instead of `columns`.
    pub sort_columns: Option<bool>,
    /// 9: scan backwards.
    pub reversed: Option<bool>,
    /// 10: cache the blocks read (Apache's IDL only).
    pub cache_blocks: Option<bool>,
}

impl ThriftStruct for TScan {
    fn write(&self, e: &mut dyn Encoder) {
        e.write_struct_begin();
        if let Some(v) = &self.start_row {
            binary_field(e, 1, v);
        }
        if let Some(v) = &self.stop_row {
            binary_field(e, 2, v);
        }
        if let Some(v) = self.timestamp {
            e.write_field_begin(TType::I64, 3);
            e.write_i64(v);
        }
        if let Some(v) = &self.columns {
            e.write_field_begin(TType::List, 4);
            write_binaries(e, v);
        }
        if let Some(v) = self.caching {
            e.write_field_begin(TType::I32, 5);
            e.write_i32(v);
        }
        if let Some(v) = &self.filter_string {
            binary_field(e, 6, v);
        }
        if let Some(v) = self.batch_size {
            e.write_field_begin(TType::I32, 7);
            e.write_i32(v);
        }
        for (id, value) in [
            (8, self.sort_columns),
            (9, self.reversed),
            (10, self.cache_blocks),
        ] {
            if let Some(v) = value {
                e.write_field_begin(TType::Bool, id);
                e.write_bool(v);
            }
        }
        e.write_struct_end();
    }

    fn read(d: &mut dyn Decoder) -> Result<TScan> {
        let mut s = TScan::default();
        read_fields(d, |d, f| {
            match (f.id, f.ttype) {
                (1, TType::Binary) => s.start_row = Some(d.read_binary()?),
                (2, TType::Binary) => s.stop_row = Some(d.read_binary()?),
                (3, TType::I64) => s.timestamp = Some(d.read_i64()?),
                (4, TType::List) => s.columns = Some(read_list(d, |d| d.read_binary())?),
                (5, TType::I32) => s.caching = Some(d.read_i32()?),
                (6, TType::Binary) => s.filter_string = Some(d.read_binary()?),
                (7, TType::I32) => s.batch_size = Some(d.read_i32()?),
                (8, TType::Bool) => s.sort_columns = Some(d.read_bool()?),
                (9, TType::Bool) => s.reversed = Some(d.read_bool()?),
                (10, TType::Bool) => s.cache_blocks = Some(d.read_bool()?),
                _ => return Ok(false),
            }
            Ok(true)
        })?;
        Ok(s)
    }
}

/// `TIncrement`: add `amount` to one counter.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TIncrement {
    /// 1: the table.
    pub table: Bytes,
    /// 2: the row.
    pub row: Bytes,
    /// 3: `fam:qual`.
    pub column: Bytes,
    /// 4: the amount (the IDL spells it `ammount`).
    pub amount: i64,
}

impl ThriftStruct for TIncrement {
    fn write(&self, e: &mut dyn Encoder) {
        e.write_struct_begin();
        binary_field(e, 1, &self.table);
        binary_field(e, 2, &self.row);
        binary_field(e, 3, &self.column);
        e.write_field_begin(TType::I64, 4);
        e.write_i64(self.amount);
        e.write_struct_end();
    }

    fn read(d: &mut dyn Decoder) -> Result<TIncrement> {
        let mut i = TIncrement::default();
        read_fields(d, |d, f| {
            match (f.id, f.ttype) {
                (1, TType::Binary) => i.table = d.read_binary()?,
                (2, TType::Binary) => i.row = d.read_binary()?,
                (3, TType::Binary) => i.column = d.read_binary()?,
                (4, TType::I64) => i.amount = d.read_i64()?,
                _ => return Ok(false),
            }
            Ok(true)
        })?;
        Ok(i)
    }
}

/// `TAppend`: append each value to its column.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TAppend {
    /// 1: the table.
    pub table: Bytes,
    /// 2: the row.
    pub row: Bytes,
    /// 3: the columns.
    pub columns: Vec<Bytes>,
    /// 4: the values, one per column.
    pub values: Vec<Bytes>,
}

impl ThriftStruct for TAppend {
    fn write(&self, e: &mut dyn Encoder) {
        e.write_struct_begin();
        binary_field(e, 1, &self.table);
        binary_field(e, 2, &self.row);
        e.write_field_begin(TType::List, 3);
        write_binaries(e, &self.columns);
        e.write_field_begin(TType::List, 4);
        write_binaries(e, &self.values);
        e.write_struct_end();
    }

    fn read(d: &mut dyn Decoder) -> Result<TAppend> {
        let mut a = TAppend::default();
        read_fields(d, |d, f| {
            match (f.id, f.ttype) {
                (1, TType::Binary) => a.table = d.read_binary()?,
                (2, TType::Binary) => a.row = d.read_binary()?,
                (3, TType::List) => a.columns = read_list(d, |d| d.read_binary())?,
                (4, TType::List) => a.values = read_list(d, |d| d.read_binary())?,
                _ => return Ok(false),
            }
            Ok(true)
        })?;
        Ok(a)
    }
}

/// `TAccessControlEntity`: a permission to grant or revoke (`grant`, `revoke`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TAccessControlEntity {
    /// 1: the user.
    pub username: String,
    /// 2: `TPermissionScope`: 0 table, 1 namespace.
    pub scope: i32,
    /// 4: the actions (`R`, `W`, `X`, `C`, `A` letters).
    pub actions: String,
    /// 5: the table, for table scope.
    pub table_name: Option<Bytes>,
    /// 6: the namespace, for namespace scope.
    pub ns_name: Option<String>,
}

impl ThriftStruct for TAccessControlEntity {
    fn write(&self, e: &mut dyn Encoder) {
        e.write_struct_begin();
        e.write_field_begin(TType::Binary, 1);
        e.write_string(&self.username);
        e.write_field_begin(TType::I32, 2);
        e.write_i32(self.scope);
        e.write_field_begin(TType::Binary, 4);
        e.write_string(&self.actions);
        if let Some(table) = &self.table_name {
            binary_field(e, 5, table);
        }
        if let Some(ns) = &self.ns_name {
            e.write_field_begin(TType::Binary, 6);
            e.write_string(ns);
        }
        e.write_struct_end();
    }

    fn read(d: &mut dyn Decoder) -> Result<TAccessControlEntity> {
        let mut a = TAccessControlEntity::default();
        read_fields(d, |d, f| {
            match (f.id, f.ttype) {
                (1, TType::Binary) => a.username = d.read_string()?,
                (2, TType::I32) => a.scope = d.read_i32()?,
                (4, TType::Binary) => a.actions = d.read_string()?,
                (5, TType::Binary) => a.table_name = Some(d.read_binary()?),
                (6, TType::Binary) => a.ns_name = Some(d.read_string()?),
                _ => return Ok(false),
            }
            Ok(true)
        })?;
        Ok(a)
    }
}
