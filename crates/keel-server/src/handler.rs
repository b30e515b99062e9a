//! The `Hbase` service's semantics on keel-region, as Apache's `ThriftHBaseServiceHandler`
//! behaves (`docs/server.md` lists each method's rules): one
//! [`Call`] in, one [`Reply`] or [`HbaseError`] out. Transport-free, so every rule is tested
//! without a socket.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use keel_cell::{Cell, LATEST_TIMESTAMP, escape_bytes};
use keel_region::matcher::{ReadQuery, TimeRange};
use keel_region::{
    BloomType, Compression, Durability, Engine, FamilyOptions, Filter, RegionError, RegionInfo,
    Scan, Table,
};
use keel_thrift::hbase::{
    BatchMutation, Call, ColumnDescriptor, HbaseError, Mutation, Reply, TAppend, TCell, TColumn,
    TIncrement, TRegionInfo, TRowResult, TScan,
};

use crate::columns::{self, ColumnSpec};
use crate::scanners::{ScannerLimits, Scanners};

/// The handler's limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HandlerOptions {
    /// `hbase.client.scanner.timeout.period`: an open scanner unused this long is closed and
    /// its resources freed (60 s).
    pub scanner_lease: Duration,
    /// Open scanners at most; opening one more is an `IOError`.
    pub max_open_scanners: usize,
    /// Open scanners per connection at most (a client that never closes its scanners cannot
    /// take them all).
    pub max_scanners_per_connection: usize,
    /// The port reported in `TRegionInfo`.
    pub port: i32,
    /// `hbase.server.scanner.max.result.size`: the most bytes of cells one `scannerGetList`
    /// returns, whatever the row count asked (at least one row), and the most a `getRows` may
    /// gather before it is refused (100 MiB).
    pub max_result_size: u64,
}

impl Default for HandlerOptions {
    fn default() -> HandlerOptions {
        HandlerOptions {
            scanner_lease: Duration::from_secs(60),
            max_open_scanners: 10_000,
            max_scanners_per_connection: 100,
            port: 9090,
            max_result_size: 100 << 20,
        }
    }
}

/// Executes calls against a [`Engine`].
pub struct Handler {
    server: Arc<Engine>,
    options: HandlerOptions,
    scanners: Arc<Scanners>,
}

impl std::fmt::Debug for Handler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handler")
            .field("options", &self.options)
            .field("open_scanners", &self.scanners.len())
            .finish_non_exhaustive()
    }
}

fn io(message: impl Into<String>) -> HbaseError {
    HbaseError::Io {
        message: message.into(),
        can_retry: false,
    }
}

fn illegal(message: impl Into<String>) -> HbaseError {
    HbaseError::IllegalArgument(message.into())
}

/// A region error as the gateway reports it: an `IOError` (retryable when the region is busy,
/// as HBase's `RegionTooBusyException` is).
fn from_region(e: RegionError) -> HbaseError {
    let can_retry = matches!(
        e,
        RegionError::RegionTooBusy { .. } | RegionError::MemoryFull { .. }
    );
    HbaseError::Io {
        message: e.to_string(),
        can_retry,
    }
}

fn text(bytes: &Bytes, what: &str) -> Result<String, HbaseError> {
    String::from_utf8(bytes.to_vec()).map_err(|_| illegal(format!("{what} is not UTF-8")))
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Read columns: `None` (absent or empty list) means all.
fn read_columns(columns: &Option<Vec<Bytes>>) -> Option<Vec<(Bytes, Option<Bytes>)>> {
    let columns = columns.as_ref().filter(|c| !c.is_empty())?;
    Some(
        columns
            .iter()
            .map(|c| {
                let ColumnSpec { family, qualifier } = columns::parse(c);
                (family, qualifier)
            })
            .collect(),
    )
}

/// What a row's cells weigh against `max_result_size`: their keys and values, as HBase's
/// result size counts them.
fn result_size(cells: &[Cell]) -> u64 {
    cells
        .iter()
        .map(|c| {
            (c.row().len() + c.family().len() + c.qualifier().len() + c.value().len() + 16) as u64
        })
        .sum()
}

/// `*Ts` reads see [0, ts): the upper bound is exclusive.
fn time_range(timestamp: Option<i64>) -> TimeRange {
    match timestamp {
        Some(ts) => TimeRange { min: 0, max: ts },
        None => TimeRange::default(),
    }
}

fn row_result(row: Bytes, cells: &[Cell], sorted: bool) -> TRowResult {
    let pairs: Vec<(Bytes, TCell)> = cells
        .iter()
        .map(|c| {
            (
                columns::name(c.family(), c.qualifier()),
                TCell {
                    value: c.value_bytes(),
                    timestamp: c.timestamp(),
                },
            )
        })
        .collect();
    if sorted {
        TRowResult {
            row,
            columns: None,
            sorted_columns: Some(
                pairs
                    .into_iter()
                    .map(|(column_name, cell)| TColumn { column_name, cell })
                    .collect(),
            ),
        }
    } else {
        TRowResult {
            row,
            columns: Some(pairs),
            sorted_columns: None,
        }
    }
}

/// A region's name as HBase writes it: `<table>,<start key>,<id>.<md5 hex of what precedes>.`
/// (`RegionInfo.createRegionName`).
fn region_name(table: &str, region: &RegionInfo) -> Bytes {
    use md5::{Digest, Md5};
    let mut name = format!("{table},").into_bytes();
    name.extend_from_slice(&region.start_key);
    name.extend_from_slice(format!(",{}", region.id).as_bytes());
    let encoded: String = Md5::digest(&name)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    name.extend_from_slice(format!(".{encoded}.").as_bytes());
    Bytes::from(name)
}

/// `table,row,99999999999999` (a meta row, as `getRegionInfo` takes): the table and the row.
/// The row may hold commas; the last comma starts the id part. A bare table name is its
/// first row.
fn parse_meta_row(meta_row: &[u8]) -> Option<(&[u8], &[u8])> {
    let Some(first) = meta_row.iter().position(|&b| b == b',') else {
        return Some((meta_row, &[]));
    };
    let last = meta_row.iter().rposition(|&b| b == b',')?;
    let row = if last > first {
        &meta_row[first + 1..last]
    } else {
        &meta_row[first + 1..]
    };
    Some((&meta_row[..first], row))
}

/// A filter string in HBase's filter language.
fn parse_filter(filter: &[u8]) -> Result<Filter, HbaseError> {
    Filter::parse(filter).map_err(|e| illegal(e.to_string()))
}

impl Handler {
    /// A handler over `server`.
    /// A handler over `server`. A timer closes scanners whose lease ran out.
    pub fn new(server: Arc<Engine>, options: HandlerOptions) -> Handler {
        let scanners = Scanners::new(ScannerLimits {
            lease: options.scanner_lease,
            max_open: options.max_open_scanners,
            max_per_connection: options.max_scanners_per_connection,
        });
        Scanners::start_lease_timer(&scanners);
        Handler {
            server,
            options,
            scanners,
        }
    }

    /// Scanners open now (after closing those whose lease ran out).
    pub fn open_scanners(&self) -> usize {
        self.scanners.expire();
        self.scanners.len()
    }

    fn table(&self, name: &Bytes) -> Result<Table, HbaseError> {
        let name = text(name, "the table name")?;
        self.server.table(&name).map_err(from_region)
    }

    /// Executes one call (as an embedded caller: connection 0).
    pub fn handle(&self, call: Call) -> Result<Reply, HbaseError> {
        self.handle_on(0, call)
    }

    /// Closes every scanner `connection` opened (it went away) and returns how many; one a
    /// call is reading from right now is dropped when that call is done.
    pub fn close_connection(&self, connection: u64) -> usize {
        self.scanners.close_connection(connection)
    }

    /// Executes one call made on `connection` (scanners are counted and closed per connection).
    pub fn handle_on(&self, connection: u64, call: Call) -> Result<Reply, HbaseError> {
        // The call's span: the parent of the region's own (exported with `keel.otlp.endpoint`).
        let _span =
            tracing::info_span!("thrift.call", method = call.method(), connection).entered();
        match call {
            Call::GetTableNames => Ok(Reply::Names(
                self.server
                    .list_tables()
                    .into_iter()
                    .map(Bytes::from)
                    .collect(),
            )),
            Call::CreateTable { table, families } => self.create_table(&table, &families),
            Call::DeleteTable { table } => {
                let name = text(&table, "the table name")?;
                self.server.delete_table(&name).map_err(from_region)?;
                Ok(Reply::Void)
            }
            Call::EnableTable { table } => {
                let name = text(&table, "the table name")?;
                self.server.enable_table(&name).map_err(from_region)?;
                Ok(Reply::Void)
            }
            Call::DisableTable { table } => {
                let name = text(&table, "the table name")?;
                self.server.disable_table(&name).map_err(from_region)?;
                Ok(Reply::Void)
            }
            Call::IsTableEnabled { table } => {
                let name = text(&table, "the table name")?;
                Ok(Reply::Bool(
                    self.server.is_table_enabled(&name).map_err(from_region)?,
                ))
            }
            Call::Compact { table, major } => self.compact(&table, major),
            Call::GetColumnDescriptors { table } => self.column_descriptors(&table),
            Call::GetTableRegions { table } => self.table_regions(&table),
            Call::GetRows {
                table,
                rows,
                columns,
                timestamp,
            } => self.get_rows(&table, rows, &columns, timestamp),
            Call::GetVersions {
                table,
                row,
                column,
                timestamp,
                versions,
            } => self.get_versions(&table, &row, &column, timestamp, versions),
            Call::MutateRows {
                table,
                batches,
                timestamp,
            } => self.mutate_rows(&table, batches, timestamp),
            Call::AtomicIncrement {
                table,
                row,
                column,
                amount,
            } => self
                .increment(&table, &row, &column, amount)
                .map(Reply::I64),
            Call::ScannerOpen { table, scan } => self.open_scanner(connection, &table, scan),
            Call::ScannerGet { id, rows } => self.scanner_get(connection, id, rows),
            Call::ScannerClose { id } => {
                self.scanners.close(connection, id)?;
                Ok(Reply::Void)
            }
            Call::IncrementRows { increments } => {
                for TIncrement {
                    table,
                    row,
                    column,
                    amount,
                } in increments
                {
                    self.increment(&table, &row, &column, amount)?;
                }
                Ok(Reply::Void)
            }
            Call::Append { append } => self.append(append),
            Call::DeleteAll {
                table,
                row,
                column,
                timestamp,
            } => self.delete_all(&table, row, column, timestamp),
            Call::CheckAndPut {
                table,
                row,
                column,
                value,
                mutation,
            } => self.check_and_put(&table, &row, &column, value.as_ref(), mutation),
            Call::GetRowOrBefore { table, row, family } => self.row_or_before(&table, row, &family),
            Call::GetRegionInfo { row } => self.region_info(&row),
            // TThriftServerType.ONE: this is the Thrift1 gateway.
            Call::GetThriftServerType => Ok(Reply::I32(1)),
            Call::MutateRow {
                table,
                row,
                mutations,
                timestamp,
            } => self.mutate_row(&table, row, mutations, timestamp),
            Call::GetTableNamesWithIsTableEnabled => {
                let mut tables = Vec::new();
                for name in self.server.list_tables() {
                    let enabled = self.server.is_table_enabled(&name).map_err(from_region)?;
                    tables.push((Bytes::from(name), enabled));
                }
                Ok(Reply::EnabledTables(tables))
            }
            Call::GetClusterId => Ok(Reply::Text(Bytes::copy_from_slice(
                self.server.cluster_id().as_bytes(),
            ))),
            Call::Grant { info } | Call::Revoke { info } => Err(io(format!(
                "access control is not enabled: Keel has no users or permissions, so the \
                 permission {:?} for user {:?} cannot be granted or revoked",
                info.actions, info.username
            ))),
        }
    }

    /// Executes one call made on `connection` with the operation attributes it carried.
    /// HBase hands attributes to the operation, where the server acts on the ones it knows;
    /// Keel acts on those that mean something here and refuses the rest by name, rather
    /// than drop them unseen:
    /// - `_operation.attributes.id` (the operation's id, for logs): recorded with the call;
    /// - `_isolationlevel_`: READ_COMMITTED (`0x01`) is what every Keel read does;
    ///   READ_UNCOMMITTED is refused (reads never see writes in flight).
    pub fn handle_request(
        &self,
        connection: u64,
        call: Call,
        attributes: &[(Bytes, Bytes)],
    ) -> Result<Reply, HbaseError> {
        for (name, value) in attributes {
            match &name[..] {
                b"_operation.attributes.id" => {
                    tracing::debug!(
                        method = call.method(),
                        id = %escape_bytes(value),
                        "call with an operation id"
                    );
                }
                b"_isolationlevel_" if value[..] == [1] => {}
                b"_isolationlevel_" => {
                    return Err(io(format!(
                        "isolation level {} is not supported: Keel reads only committed data \
                         (READ_COMMITTED)",
                        escape_bytes(value)
                    )));
                }
                other => {
                    return Err(io(format!(
                        "operation attribute {:?} is not supported by Keel (no coprocessors, \
                         visibility labels or ACLs act on it); the call was not executed",
                        escape_bytes(other)
                    )));
                }
            }
        }
        self.handle_on(connection, call)
    }

    fn create_table(
        &self,
        table: &Bytes,
        families: &[ColumnDescriptor],
    ) -> Result<Reply, HbaseError> {
        let name = text(table, "the table name")?;
        // Refused before a family is even built: the request may name millions.
        let max = self.server.max_families_per_table();
        if families.len() > max {
            return Err(illegal(
                RegionError::TooManyFamilies {
                    table: name,
                    count: families.len(),
                    max,
                }
                .to_string(),
            ));
        }
        let mut options = Vec::with_capacity(families.len());
        for d in families {
            let family = columns::parse(&d.name).family;
            if family.is_empty() {
                return Err(illegal("a column family needs a name"));
            }
            // A copy: the schema lives on, and a slice would pin the whole request buffer.
            let mut f = FamilyOptions::new(Bytes::copy_from_slice(&family));
            f.rules.max_versions = u32::try_from(d.max_versions.max(1)).unwrap_or(1);
            // HBase treats a TTL of 0 or less (happybase sends -1) and the IDL's default
            // i32::MAX as "forever".
            if d.time_to_live > 0 && d.time_to_live != i32::MAX {
                f.rules.ttl_ms = Some(i64::from(d.time_to_live) * 1000);
            }
            f.in_memory = d.in_memory;
            f.files.compression = match d.compression.to_ascii_uppercase().as_str() {
                "NONE" | "" => Compression::None,
                "LZ4" => Compression::Lz4,
                other => {
                    return Err(illegal(format!(
                        "compression {other} is not available for family {}: NONE or LZ4",
                        escape_bytes(&family)
                    )));
                }
            };
            f.files.bloom = match d.bloom_filter_type.to_ascii_uppercase().as_str() {
                "ROWCOL" => BloomType::RowCol,
                "NONE" => BloomType::None,
                _ => BloomType::Row,
            };
            options.push(f);
        }
        match self.server.create_table(&name, options) {
            Ok(_) => Ok(Reply::Void),
            Err(RegionError::TableExists(t)) => Err(HbaseError::AlreadyExists(t)),
            Err(
                e @ (RegionError::BadName(_)
                | RegionError::NoFamilies(_)
                | RegionError::TooManyFamilies { .. }
                | RegionError::DuplicateFamily { .. }
                | RegionError::FileTooLarge { .. }),
            ) => Err(illegal(e.to_string())),
            Err(e) => Err(from_region(e)),
        }
    }

    fn column_descriptors(&self, table: &Bytes) -> Result<Reply, HbaseError> {
        let name = text(table, "the table name")?;
        let families = self.server.table_families(&name).map_err(from_region)?;
        Ok(Reply::Families(
            families
                .into_iter()
                .map(|f| {
                    let key = columns::name(&f.name, b"");
                    let descriptor = ColumnDescriptor {
                        name: key.clone(),
                        max_versions: i32::try_from(f.rules.max_versions).unwrap_or(i32::MAX),
                        compression: match f.files.compression {
                            Compression::None => "NONE",
                            Compression::Lz4 => "LZ4",
                        }
                        .to_string(),
                        in_memory: f.in_memory,
                        bloom_filter_type: match f.files.bloom {
                            BloomType::None => "NONE",
                            BloomType::Row => "ROW",
                            BloomType::RowCol => "ROWCOL",
                        }
                        .to_string(),
                        block_cache_enabled: true,
                        time_to_live: f
                            .rules
                            .ttl_ms
                            .map_or(i32::MAX, |ms| i32::try_from(ms / 1000).unwrap_or(i32::MAX)),
                        ..ColumnDescriptor::default()
                    };
                    (key, descriptor)
                })
                .collect(),
        ))
    }

    /// A region as `hbase:meta` describes it, named as HBase names regions.
    fn describe_region(&self, t: &Table, region: &RegionInfo) -> TRegionInfo {
        TRegionInfo {
            start_key: region.start_key.clone(),
            end_key: region.end_key.clone(),
            id: region.id as i64,
            name: region_name(t.name(), region),
            version: 1,
            server_name: Bytes::from_static(b"localhost"),
            port: self.options.port,
        }
    }

    fn table_regions(&self, table: &Bytes) -> Result<Reply, HbaseError> {
        // A name that cannot be a table's is an error (HBase's `TableName.valueOf` throws);
        // an unknown table has no regions (an empty list, not an error).
        let name = text(table, "the table name")?;
        keel_region::names::TableName::new(&name).map_err(|e| illegal(e.to_string()))?;
        match self.server.table(&name) {
            Ok(t) => Ok(Reply::Regions(
                t.region_infos()
                    .iter()
                    .map(|r| self.describe_region(&t, r))
                    .collect(),
            )),
            Err(_) => Ok(Reply::Regions(Vec::new())),
        }
    }

    /// `getRegionInfo(metaRow)`: HBase reverse-scans `hbase:meta` from `table,row,…`: the
    /// region of the named table holding `row`.
    fn region_info(&self, meta_row: &Bytes) -> Result<Reply, HbaseError> {
        let missing = || {
            io(format!(
                "Cannot find row in hbase:meta, row={}",
                escape_bytes(meta_row)
            ))
        };
        let (table, row) = parse_meta_row(meta_row).ok_or_else(missing)?;
        let t = self
            .table(&Bytes::copy_from_slice(table))
            .map_err(|_| missing())?;
        let regions = t.region_infos();
        let region = regions
            .iter()
            .rev()
            .find(|r| r.start_key[..] <= *row)
            .ok_or_else(missing)?;
        Ok(Reply::Region(self.describe_region(&t, region)))
    }

    /// `compact` / `majorCompact` of a table, or of one region by its name (HBase accepts
    /// either, `tableNameOrRegionName`).
    fn compact(&self, name: &Bytes, major: bool) -> Result<Reply, HbaseError> {
        if let Ok(table) = std::str::from_utf8(name)
            && self.server.table(table).is_ok()
        {
            self.server
                .request_compaction(table, major)
                .map_err(from_region)?;
            return Ok(Reply::Void);
        }
        // A region name: `table,start,id.encoded.` (or without the encoded part).
        let table = name.split(|&b| b == b',').next().unwrap_or_default();
        let t = self.table(&Bytes::copy_from_slice(table))?;
        let region = t
            .region_infos()
            .into_iter()
            .find(|r| {
                let full = region_name(t.name(), r);
                full == *name || full[..full.len() - 34] == name[..]
            })
            .ok_or_else(|| io(format!("no table or region named {}", escape_bytes(name))))?;
        self.server
            .request_region_compaction(t.name(), region.id, major)
            .map_err(from_region)?;
        Ok(Reply::Void)
    }

    /// `deleteAll(Ts)` / `deleteAllRow(Ts)`: the same deletes `mutateRowsTs` makes, for one
    /// column or family, or for every family of the table.
    fn delete_all(
        &self,
        table: &Bytes,
        row: Bytes,
        column: Option<Bytes>,
        timestamp: Option<i64>,
    ) -> Result<Reply, HbaseError> {
        let columns = match column {
            Some(column) => vec![column],
            None => {
                let name = text(table, "the table name")?;
                let families = self.server.table_families(&name).map_err(from_region)?;
                families.into_iter().map(|f| f.name).collect()
            }
        };
        let mutations = columns
            .into_iter()
            .map(|column| Mutation {
                is_delete: true,
                column,
                ..Mutation::default()
            })
            .collect();
        self.mutate_rows(table, vec![BatchMutation { row, mutations }], timestamp)
    }

    /// `checkAndPut`: as HBase's `checkAndMutate`, an expected value that is absent or empty
    /// matches a column with no value or an empty one; otherwise the latest value must equal it.
    fn check_and_put(
        &self,
        table: &Bytes,
        row: &Bytes,
        column: &Bytes,
        expected: Option<&Bytes>,
        mutation: Mutation,
    ) -> Result<Reply, HbaseError> {
        let t = self.table(table)?;
        let put = columns::parse(&mutation.column);
        let put_qualifier = put
            .qualifier
            .ok_or_else(|| illegal("checkAndPut's put needs family:qualifier"))?;
        let cell = Cell::put(
            row.clone(),
            put.family,
            put_qualifier,
            LATEST_TIMESTAMP,
            mutation.value.unwrap_or_default(),
        )
        .map_err(|e| illegal(e.to_string()))?;
        let durability = if mutation.write_to_wal {
            Durability::UseDefault
        } else {
            Durability::SkipWal
        };
        let ColumnSpec { family, qualifier } = columns::parse(column);
        let expected = expected.filter(|v| !v.is_empty());
        let applied = t
            .check_and_mutate(
                row,
                &family,
                &qualifier.unwrap_or_default(),
                |current| match (expected, current.filter(|v| !v.is_empty())) {
                    (None, None) => true,
                    (Some(want), Some(have)) => want == have,
                    _ => false,
                },
                vec![cell],
                durability,
            )
            .map_err(from_region)?;
        Ok(Reply::Bool(applied))
    }

    /// `getRowOrBefore`: the family's cells in the last row at or before `row` (a reversed
    /// scan from it, as Apache's handler does); none when no row is.
    fn row_or_before(
        &self,
        table: &Bytes,
        row: Bytes,
        family: &Bytes,
    ) -> Result<Reply, HbaseError> {
        let t = self.table(table)?;
        let family = columns::parse(family).family;
        let scan = Scan {
            start_row: row,
            reversed: true,
            limit: Some(1),
            query: ReadQuery {
                columns: Some(vec![(family, None)]),
                ..ReadQuery::latest(0, now_ms())
            },
            ..Scan::all(now_ms())
        };
        let rows = t.scan(&scan).map_err(from_region)?;
        Ok(Reply::Cells(
            rows.first()
                .into_iter()
                .flatten()
                .map(|c| TCell {
                    value: c.value_bytes(),
                    timestamp: c.timestamp(),
                })
                .collect(),
        ))
    }

    fn get_rows(
        &self,
        table: &Bytes,
        rows: Vec<Bytes>,
        columns: &Option<Vec<Bytes>>,
        timestamp: Option<i64>,
    ) -> Result<Reply, HbaseError> {
        let t = self.table(table)?;
        let query = ReadQuery {
            columns: read_columns(columns),
            time_range: time_range(timestamp),
            ..ReadQuery::latest(0, now_ms())
        };
        let mut out = Vec::new();
        let mut size = 0u64;
        for row in rows {
            let cells = t.get(&row, &query).map_err(from_region)?;
            // Missing rows are skipped; found ones keep the request's order.
            if !cells.is_empty() {
                size += result_size(&cells);
                if size > self.options.max_result_size {
                    // HBase's multi-get answers the same way (its MultiActionResultTooLarge).
                    return Err(io(format!(
                        "MultiActionResultTooLarge: the rows asked for hold more than hbase.server.scanner.max.result.size ({} bytes); ask for fewer rows at a time",
                        self.options.max_result_size
                    )));
                }
                out.push(row_result(row, &cells, false));
            }
        }
        Ok(Reply::Rows(out))
    }

    fn get_versions(
        &self,
        table: &Bytes,
        row: &Bytes,
        column: &Bytes,
        timestamp: Option<i64>,
        versions: i32,
    ) -> Result<Reply, HbaseError> {
        let t = self.table(table)?;
        let ColumnSpec { family, qualifier } = columns::parse(column);
        let query = ReadQuery {
            columns: Some(vec![(family, Some(qualifier.unwrap_or_default()))]),
            time_range: time_range(timestamp),
            max_versions: u32::try_from(versions.max(1)).unwrap_or(1),
            ..ReadQuery::latest(0, now_ms())
        };
        let cells = t.get(row, &query).map_err(from_region)?;
        // Newest first (the family's version limit applies too, in the read).
        Ok(Reply::Cells(
            cells
                .iter()
                .map(|c| TCell {
                    value: c.value_bytes(),
                    timestamp: c.timestamp(),
                })
                .collect(),
        ))
    }

    fn mutate_rows(
        &self,
        table: &Bytes,
        batches: Vec<keel_thrift::hbase::BatchMutation>,
        timestamp: Option<i64>,
    ) -> Result<Reply, HbaseError> {
        let t = self.table(table)?;
        let ts = timestamp.unwrap_or(LATEST_TIMESTAMP);
        let mut puts: Vec<(Vec<Cell>, Durability)> = Vec::new();
        let mut deletes: Vec<(Vec<Cell>, Durability)> = Vec::new();
        for batch in batches {
            let (mut row_puts, mut row_deletes) = (Vec::new(), Vec::new());
            let mut durability = Durability::SkipWal;
            for m in batch.mutations {
                if m.write_to_wal {
                    durability = Durability::UseDefault;
                }
                let ColumnSpec { family, qualifier } = columns::parse(&m.column);
                let cell = if m.is_delete {
                    match qualifier {
                        Some(q) => Cell::delete_column(batch.row.clone(), family, q, ts),
                        None => Cell::delete_family(batch.row.clone(), family, ts),
                    }
                } else {
                    // Apache's handler: "Invalid famAndQf provided." (mutateRow skips instead).
                    let q = qualifier.ok_or_else(|| {
                        illegal(format!(
                            "Invalid famAndQf provided: a put needs family:qualifier, not {}",
                            String::from_utf8_lossy(&m.column)
                        ))
                    })?;
                    Cell::put(
                        batch.row.clone(),
                        family,
                        q,
                        ts,
                        m.value.unwrap_or_default(),
                    )
                };
                let cell = cell.map_err(|e| illegal(e.to_string()))?;
                if m.is_delete {
                    row_deletes.push(cell);
                } else {
                    row_puts.push(cell);
                }
            }
            // A row whose mutations all skip the WAL skips it; otherwise the server's default.
            if !row_puts.is_empty() {
                puts.push((row_puts, durability));
            }
            if !row_deletes.is_empty() {
                deletes.push((row_deletes, durability));
            }
        }
        // All puts of the call first, then all deletes (Apache's handler does the same).
        for operations in [puts, deletes] {
            if operations.is_empty() {
                continue;
            }
            for status in t.batch(operations) {
                status.map_err(from_region)?;
            }
        }
        Ok(Reply::Void)
    }

    fn increment(
        &self,
        table: &Bytes,
        row: &Bytes,
        column: &Bytes,
        amount: i64,
    ) -> Result<i64, HbaseError> {
        let t = self.table(table)?;
        let ColumnSpec { family, qualifier } = columns::parse(column);
        let qualifier = qualifier.ok_or_else(|| illegal("an increment needs family:qualifier"))?;
        t.increment(row, &family, &qualifier, amount)
            .map_err(from_region)
    }

    /// `append`: every column of the row at once (one row lock, one WAL entry), answering
    /// with the cells stored.
    fn append(&self, append: TAppend) -> Result<Reply, HbaseError> {
        let t = self.table(&append.table)?;
        if append.columns.len() != append.values.len() {
            return Err(illegal("append needs one value per column"));
        }
        let mut columns = Vec::with_capacity(append.columns.len());
        for (column, value) in append.columns.iter().zip(&append.values) {
            let ColumnSpec { family, qualifier } = columns::parse(column);
            let qualifier = qualifier.ok_or_else(|| illegal("an append needs family:qualifier"))?;
            columns.push((family, qualifier, value.clone()));
        }
        let cells = t
            .append_columns(&append.row, &columns, Durability::UseDefault)
            .map_err(from_region)?;
        Ok(Reply::Cells(
            cells
                .iter()
                .map(|c| TCell {
                    value: c.value_bytes(),
                    timestamp: c.timestamp(),
                })
                .collect(),
        ))
    }

    /// `mutateRow(Ts)`, as Apache's handler: the row's deletes are applied first, then its puts
    /// (two writes, not one); a put without a qualifier is skipped with a warning; the WAL is
    /// skipped only if the last mutation asks so.
    fn mutate_row(
        &self,
        table: &Bytes,
        row: Bytes,
        mutations: Vec<Mutation>,
        timestamp: Option<i64>,
    ) -> Result<Reply, HbaseError> {
        let t = self.table(table)?;
        let ts = timestamp.unwrap_or(LATEST_TIMESTAMP);
        let durability = match mutations.last() {
            Some(m) if !m.write_to_wal => Durability::SkipWal,
            _ => Durability::UseDefault,
        };
        let (mut puts, mut deletes) = (Vec::new(), Vec::new());
        for m in mutations {
            let ColumnSpec { family, qualifier } = columns::parse(&m.column);
            let cell = if m.is_delete {
                match qualifier {
                    Some(q) => Cell::delete_column(row.clone(), family, q, ts),
                    None => Cell::delete_family(row.clone(), family, ts),
                }
            } else {
                let Some(q) = qualifier else {
                    tracing::warn!(
                        column = %escape_bytes(&m.column),
                        "mutateRow: a put without a qualifier is skipped, as HBase does"
                    );
                    continue;
                };
                Cell::put(row.clone(), family, q, ts, m.value.unwrap_or_default())
            };
            let cell = cell.map_err(|e| illegal(e.to_string()))?;
            if m.is_delete {
                deletes.push(cell);
            } else {
                puts.push(cell);
            }
        }
        for cells in [deletes, puts] {
            if !cells.is_empty() {
                t.mutate(cells, durability).map_err(from_region)?;
            }
        }
        Ok(Reply::Void)
    }

    fn open_scanner(
        &self,
        connection: u64,
        table: &Bytes,
        scan: TScan,
    ) -> Result<Reply, HbaseError> {
        self.scanners.check_room(connection)?;
        let t = self.table(table)?;
        let reversed = scan.reversed.unwrap_or(false);
        let region_scan = Scan {
            start_row: scan.start_row.unwrap_or_default(),
            stop_row: scan.stop_row.unwrap_or_default(),
            query: ReadQuery {
                columns: read_columns(&scan.columns),
                time_range: time_range(scan.timestamp),
                ..ReadQuery::latest(0, now_ms())
            },
            batch: scan
                .batch_size
                .and_then(|b| usize::try_from(b).ok())
                .filter(|&b| b > 0),
            reversed,
            filter: scan
                .filter_string
                .as_deref()
                .filter(|f| !f.is_empty())
                .map(parse_filter)
                .transpose()?,
            ..Scan::all(now_ms())
        };
        let scanner = t.scanner(&region_scan).map_err(from_region)?;
        let id = self
            .scanners
            .insert(connection, scanner, scan.sort_columns.unwrap_or(false));
        Ok(Reply::I32(id))
    }

    fn scanner_get(&self, connection: u64, id: i32, rows: i32) -> Result<Reply, HbaseError> {
        // Lent out while it reads, so other scanners are not held up behind this one.
        let mut lent = self.scanners.lend(connection, id)?;
        let mut out = Vec::new();
        let mut failure = None;
        // The client's row count, and HBase's byte bound on one answer (at least one row).
        let mut size = 0u64;
        // One buffer for every row of the answer: each is converted, then cleared.
        let mut cells = Vec::new();
        for _ in 0..rows.max(1) {
            if size >= self.options.max_result_size {
                break;
            }
            cells.clear();
            match lent.scanner.next_into(&mut cells) {
                Ok(0) => break,
                Ok(_) => {
                    size += result_size(&cells);
                    let row = cells.first().map(|c| c.row_bytes()).unwrap_or_default();
                    out.push(row_result(row, &cells, lent.sort_columns));
                }
                Err(e) => {
                    failure = Some(from_region(e));
                    break;
                }
            }
        }
        self.scanners.give_back(id, lent);
        match failure {
            Some(e) => Err(e),
            None => Ok(Reply::Rows(out)),
        }
    }
}
