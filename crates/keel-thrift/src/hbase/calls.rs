//! The `Hbase` service's calls and replies: a decoded request becomes a [`Call`] (the methods
//! happybase and aiohappybase use, and their close relatives, folded into one variant each), a
//! reply is a [`Reply`] or an [`HbaseError`], and an unknown method is answered with a
//! `TApplicationException`. Both directions, so the same code serves the server and the client.

use super::PREALLOCATE;
use bytes::Bytes;

use super::structs::{
    BatchMutation, ColumnDescriptor, Mutation, TAccessControlEntity, TAppend, TIncrement, TScan,
    ThriftStruct, read_fields, write_binaries, write_structs,
};
use crate::error::{Result, ThriftError};
use crate::protocol::{Decoder, Encoder};
use crate::types::{MessageHeader, MessageType, TType};

/// A request, whichever of its method's variants it came as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Call {
    /// `getTableNames`.
    GetTableNames,
    /// `createTable`.
    CreateTable {
        /// The table.
        table: Bytes,
        /// Its families.
        families: Vec<ColumnDescriptor>,
    },
    /// `deleteTable`.
    DeleteTable {
        /// The table.
        table: Bytes,
    },
    /// `enableTable`.
    EnableTable {
        /// The table.
        table: Bytes,
    },
    /// `disableTable`.
    DisableTable {
        /// The table.
        table: Bytes,
    },
    /// `isTableEnabled`.
    IsTableEnabled {
        /// The table.
        table: Bytes,
    },
    /// `compact` / `majorCompact`.
    Compact {
        /// The table (or region) name.
        table: Bytes,
        /// `majorCompact`.
        major: bool,
    },
    /// `getColumnDescriptors`.
    GetColumnDescriptors {
        /// The table.
        table: Bytes,
    },
    /// `getTableRegions`.
    GetTableRegions {
        /// The table.
        table: Bytes,
    },
    /// `getRow`, `getRowTs`, `getRowWithColumns(Ts)`, `getRows`, `getRowsTs`,
    /// `getRowsWithColumns(Ts)`.
    GetRows {
        /// The table.
        table: Bytes,
        /// The rows, in request order.
        rows: Vec<Bytes>,
        /// The columns (`None`: all).
        columns: Option<Vec<Bytes>>,
        /// Only cells older than this (`*Ts`: the range is [0, ts)).
        timestamp: Option<i64>,
    },
    /// `getVer` / `getVerTs`, and `get` (one version).
    GetVersions {
        /// The table.
        table: Bytes,
        /// The row.
        row: Bytes,
        /// `fam:qual`.
        column: Bytes,
        /// Only cells older than this.
        timestamp: Option<i64>,
        /// At most this many.
        versions: i32,
    },
    /// `mutateRows(Ts)` / `mutateRow(Ts)`.
    MutateRows {
        /// The table.
        table: Bytes,
        /// Per row, its mutations.
        batches: Vec<BatchMutation>,
        /// The timestamp of every mutation (`None`: the server's clock).
        timestamp: Option<i64>,
    },
    /// `atomicIncrement`.
    AtomicIncrement {
        /// The table.
        table: Bytes,
        /// The row.
        row: Bytes,
        /// `fam:qual`.
        column: Bytes,
        /// The amount.
        amount: i64,
    },
    /// `scannerOpenWithScan`, and the older `scannerOpen`, `scannerOpenTs`,
    /// `scannerOpenWithStop(Ts)` and `scannerOpenWithPrefix` as the `TScan` they amount to (a
    /// prefix becomes the range [prefix, the first row after every row with the prefix)).
    ScannerOpen {
        /// The table.
        table: Bytes,
        /// What to scan.
        scan: TScan,
    },
    /// `scannerGetList` / `scannerGet` (one row).
    ScannerGet {
        /// The scanner.
        id: i32,
        /// At most this many rows.
        rows: i32,
    },
    /// `scannerClose`.
    ScannerClose {
        /// The scanner.
        id: i32,
    },
    /// `incrementRows` / `increment`.
    IncrementRows {
        /// The increments.
        increments: Vec<TIncrement>,
    },
    /// `append`.
    Append {
        /// The append.
        append: TAppend,
    },
    /// `deleteAll(Ts)` (one column, or a whole family when it has no colon) and
    /// `deleteAllRow(Ts)` (the whole row).
    DeleteAll {
        /// The table.
        table: Bytes,
        /// The row.
        row: Bytes,
        /// `fam:qual` or `fam`; `None`: every family of the row.
        column: Option<Bytes>,
        /// Cells at or before this go (`None`: the server's clock).
        timestamp: Option<i64>,
    },
    /// `checkAndPut`: applies `mutation` (a put) if the latest value of `column` equals
    /// `value`, or, when `value` is `None`, if the column has no value.
    CheckAndPut {
        /// The table.
        table: Bytes,
        /// The row (checked and written).
        row: Bytes,
        /// The column checked, `fam:qual`.
        column: Bytes,
        /// The expected value (`None`: expect none).
        value: Option<Bytes>,
        /// The put.
        mutation: Mutation,
    },
    /// `getRowOrBefore`: the cells of `family` in the last row at or before `row`.
    GetRowOrBefore {
        /// The table.
        table: Bytes,
        /// The row searched from.
        row: Bytes,
        /// The family returned.
        family: Bytes,
    },
    /// `getRegionInfo`: the region holding a `hbase:meta`-style row key
    /// (`table,startKey,regionId`).
    GetRegionInfo {
        /// The meta row.
        row: Bytes,
    },
    /// `getThriftServerType`: always `ONE` (1), this being the Thrift1 gateway.
    GetThriftServerType,
    /// `mutateRow`, `mutateRowTs`: one row's mutations. Unlike `mutateRows`, Apache's handler
    /// applies the row's deletes before its puts, and skips a put without a qualifier.
    MutateRow {
        /// The table.
        table: Bytes,
        /// The row.
        row: Bytes,
        /// Its mutations.
        mutations: Vec<Mutation>,
        /// `mutateRowTs`'s timestamp.
        timestamp: Option<i64>,
    },
    /// `getTableNamesWithIsTableEnabled`: every table with whether it is enabled.
    GetTableNamesWithIsTableEnabled,
    /// `getClusterId`.
    GetClusterId,
    /// `grant`: give a user a permission.
    Grant {
        /// The permission.
        info: TAccessControlEntity,
    },
    /// `revoke`: take a permission back.
    Revoke {
        /// The permission.
        info: TAccessControlEntity,
    },
}

/// A decoded request: its header, its call, and the operation attributes it carried (the
/// `attributes` map of the methods that have one; empty for the rest).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The message header.
    pub header: MessageHeader,
    /// The call.
    pub call: Call,
    /// Operation attributes, name → value, in the order sent.
    pub attributes: Vec<(Bytes, Bytes)>,
}

/// Which of the service's exceptions a method declares (its `throws` clause in `Hbase.thrift`):
/// a generated client knows only those, and reports anything else in the result struct as
/// "missing result".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Declared {
    /// `1: IOError io`.
    pub io: bool,
    /// `2: IllegalArgument ia`.
    pub illegal_argument: bool,
    /// `3: AlreadyExists exist`.
    pub already_exists: bool,
}

/// The exceptions `method` declares, from current master's `Hbase.thrift` (and 1.x's for
/// `getRowOrBefore`, gone from it).
pub fn declared_exceptions(method: &str) -> Declared {
    let (io, illegal_argument, already_exists) = match method {
        "createTable" => (true, true, true),
        "mutateRow" | "mutateRowTs" | "mutateRows" | "mutateRowsTs" | "atomicIncrement"
        | "checkAndPut" | "scannerGet" | "scannerGetList" | "scannerClose" => (true, true, false),
        "getThriftServerType" | "getClusterId" => (false, false, false),
        _ => (true, false, false),
    };
    Declared {
        io,
        illegal_argument,
        already_exists,
    }
}

/// Why a request could not become a [`Call`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    /// The bytes are not a well-formed message (or not all of one yet).
    #[error(transparent)]
    Wire(#[from] ThriftError),
    /// A method this service does not have; its arguments were skipped, so the reply can be a
    /// `TApplicationException` and the connection stays usable.
    #[error("unknown method {}", .0.name)]
    UnknownMethod(MessageHeader),
    /// A well-formed header whose arguments would decode to more memory than
    /// `Limits::max_decoded` allows. On a framed connection the frame's end is known, so the
    /// reply can be an error for this call and the connection stays usable.
    #[error("{}: {error}", header.name)]
    Oversized {
        /// The call's header.
        header: MessageHeader,
        /// The limit it broke.
        error: ThriftError,
    },
}

/// The arguments of any method, gathered by field id before the method's shape is applied.
#[derive(Default)]
struct Args {
    binaries: [Option<Bytes>; 8],
    binary_lists: [Option<Vec<Bytes>>; 8],
    i64s: [Option<i64>; 8],
    i32s: [Option<i32>; 8],
    descriptors: Vec<ColumnDescriptor>,
    batches: Vec<BatchMutation>,
    mutations: Vec<Mutation>,
    mutation: Option<Mutation>,
    increments: Vec<TIncrement>,
    scan: Option<TScan>,
    append: Option<TAppend>,
    access: Option<TAccessControlEntity>,
    attributes: Vec<(Bytes, Bytes)>,
}

impl Args {
    fn bin(&mut self, id: usize) -> Bytes {
        self.binaries[id].take().unwrap_or_default()
    }
}

const METHODS: &[&str] = &[
    "getTableNames",
    "createTable",
    "deleteTable",
    "enableTable",
    "disableTable",
    "isTableEnabled",
    "compact",
    "majorCompact",
    "getColumnDescriptors",
    "getTableRegions",
    "getRow",
    "getRowTs",
    "getRowWithColumns",
    "getRowWithColumnsTs",
    "getRows",
    "getRowsTs",
    "getRowsWithColumns",
    "getRowsWithColumnsTs",
    "getVer",
    "getVerTs",
    "mutateRow",
    "mutateRowTs",
    "mutateRows",
    "mutateRowsTs",
    "atomicIncrement",
    "scannerOpenWithScan",
    "scannerGet",
    "scannerGetList",
    "scannerClose",
    "increment",
    "incrementRows",
    "append",
    "get",
    "deleteAll",
    "deleteAllTs",
    "deleteAllRow",
    "deleteAllRowTs",
    "scannerOpen",
    "scannerOpenTs",
    "scannerOpenWithStop",
    "scannerOpenWithStopTs",
    "scannerOpenWithPrefix",
    "checkAndPut",
    "getRowOrBefore",
    "getRegionInfo",
    "getThriftServerType",
    "getTableNamesWithIsTableEnabled",
    "getClusterId",
    "grant",
    "revoke",
];

fn read_args(d: &mut dyn Decoder, method: &str) -> Result<Args> {
    let mut args = Args::default();
    read_fields(d, |d, f| {
        let Ok(id) = usize::try_from(f.id) else {
            return Ok(false);
        };
        if id >= 8 {
            return Ok(false);
        }
        match f.ttype {
            TType::Binary => args.binaries[id] = Some(d.read_binary()?),
            TType::I64 => args.i64s[id] = Some(d.read_i64()?),
            TType::I32 => args.i32s[id] = Some(d.read_i32()?),
            TType::Struct => match method {
                "scannerOpenWithScan" => args.scan = Some(TScan::read(d)?),
                "increment" => args.increments.push(TIncrement::read(d)?),
                "append" => args.append = Some(TAppend::read(d)?),
                "checkAndPut" => args.mutation = Some(Mutation::read(d)?),
                "grant" | "revoke" => args.access = Some(TAccessControlEntity::read(d)?),
                _ => return Ok(false),
            },
            // The only map argument any method has: its operation attributes.
            TType::Map => {
                let (key, value, len) = d.read_map_begin()?;
                if key == TType::Binary && value == TType::Binary {
                    for _ in 0..len {
                        let name = d.read_binary()?;
                        let value = d.read_binary()?;
                        args.attributes.push((name, value));
                    }
                } else {
                    for _ in 0..len {
                        d.skip(key)?;
                        d.skip(value)?;
                    }
                }
                d.read_container_end();
            }
            TType::List => {
                let (element, len) = d.read_list_begin()?;
                match (element, method) {
                    (TType::Binary, _) => {
                        let mut items = Vec::with_capacity(len.min(PREALLOCATE));
                        for _ in 0..len {
                            items.push(d.read_binary()?);
                        }
                        args.binary_lists[id] = Some(items);
                    }
                    (TType::Struct, "createTable") => {
                        for _ in 0..len {
                            args.descriptors.push(ColumnDescriptor::read(d)?);
                        }
                    }
                    (TType::Struct, "mutateRows" | "mutateRowsTs") => {
                        for _ in 0..len {
                            args.batches.push(BatchMutation::read(d)?);
                        }
                    }
                    (TType::Struct, "mutateRow" | "mutateRowTs") => {
                        for _ in 0..len {
                            args.mutations.push(Mutation::read(d)?);
                        }
                    }
                    (TType::Struct, "incrementRows") => {
                        for _ in 0..len {
                            args.increments.push(TIncrement::read(d)?);
                        }
                    }
                    _ => {
                        for _ in 0..len {
                            d.skip(element)?;
                        }
                    }
                }
                d.read_container_end();
            }
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    Ok(args)
}

/// Reads one request: its header and call, without its operation attributes (a client-side
/// or test reader; a server uses [`decode_request`], so that no attribute goes unnoticed).
pub fn decode_call(d: &mut dyn Decoder) -> std::result::Result<(MessageHeader, Call), CallError> {
    decode_request(d).map(|r| (r.header, r.call))
}

/// Reads one request: its header, arguments and operation attributes. An unknown method's
/// arguments are skipped and reported as [`CallError::UnknownMethod`]; a oneway or reply
/// message is malformed here.
pub fn decode_request(d: &mut dyn Decoder) -> std::result::Result<Request, CallError> {
    let header = d.read_message_begin()?;
    if header.kind != MessageType::Call {
        return Err(ThriftError::Invalid {
            offset: 0,
            what: format!("a {:?} message where a call was expected", header.kind),
        }
        .into());
    }
    let method = header.name.as_str();
    if !METHODS.contains(&method) {
        d.skip(TType::Struct)?;
        return Err(CallError::UnknownMethod(header));
    }
    let mut a = match read_args(d, method) {
        Ok(a) => a,
        Err(
            error @ ThriftError::TooLarge {
                what: "decoded message",
                ..
            },
        ) => return Err(CallError::Oversized { header, error }),
        Err(e) => return Err(e.into()),
    };
    let call = match method {
        "getTableNames" => Call::GetTableNames,
        "createTable" => Call::CreateTable {
            table: a.bin(1),
            families: std::mem::take(&mut a.descriptors),
        },
        "deleteTable" => Call::DeleteTable { table: a.bin(1) },
        "enableTable" => Call::EnableTable { table: a.bin(1) },
        "disableTable" => Call::DisableTable { table: a.bin(1) },
        "isTableEnabled" => Call::IsTableEnabled { table: a.bin(1) },
        "compact" | "majorCompact" => Call::Compact {
            table: a.bin(1),
            major: method == "majorCompact",
        },
        "getColumnDescriptors" => Call::GetColumnDescriptors { table: a.bin(1) },
        "getTableRegions" => Call::GetTableRegions { table: a.bin(1) },
        "getRow"
        | "getRowTs"
        | "getRowWithColumns"
        | "getRowWithColumnsTs"
        | "getRows"
        | "getRowsTs"
        | "getRowsWithColumns"
        | "getRowsWithColumnsTs" => {
            // Field 2 is one row (`getRow*`) or a list of rows (`getRows*`); then the columns
            // (`*WithColumns`), then the timestamp (`*Ts`).
            let with_columns = method.contains("WithColumns");
            let ts_id = if with_columns { 4 } else { 3 };
            let rows = if method.starts_with("getRows") {
                a.binary_lists[2].take().unwrap_or_default()
            } else {
                vec![a.bin(2)]
            };
            Call::GetRows {
                table: a.bin(1),
                rows,
                columns: if with_columns {
                    a.binary_lists[3].take()
                } else {
                    None
                },
                timestamp: if method.ends_with("Ts") {
                    a.i64s[ts_id]
                } else {
                    None
                },
            }
        }
        "get" => Call::GetVersions {
            table: a.bin(1),
            row: a.bin(2),
            column: a.bin(3),
            timestamp: None,
            versions: 1,
        },
        "getVer" | "getVerTs" => {
            let ts = method == "getVerTs";
            Call::GetVersions {
                table: a.bin(1),
                row: a.bin(2),
                column: a.bin(3),
                timestamp: if ts { a.i64s[4] } else { None },
                versions: a.i32s[if ts { 5 } else { 4 }].unwrap_or(1),
            }
        }
        "mutateRow" | "mutateRowTs" => Call::MutateRow {
            table: a.bin(1),
            row: a.bin(2),
            mutations: std::mem::take(&mut a.mutations),
            timestamp: if method == "mutateRowTs" {
                a.i64s[4]
            } else {
                None
            },
        },
        "mutateRows" | "mutateRowsTs" => Call::MutateRows {
            table: a.bin(1),
            batches: std::mem::take(&mut a.batches),
            timestamp: if method == "mutateRowsTs" {
                a.i64s[3]
            } else {
                None
            },
        },
        "atomicIncrement" => Call::AtomicIncrement {
            table: a.bin(1),
            row: a.bin(2),
            column: a.bin(3),
            amount: a.i64s[4].unwrap_or(0),
        },
        "scannerOpenWithScan" => Call::ScannerOpen {
            table: a.bin(1),
            scan: a.scan.take().unwrap_or_default(),
        },
        "scannerOpen"
        | "scannerOpenTs"
        | "scannerOpenWithStop"
        | "scannerOpenWithStopTs"
        | "scannerOpenWithPrefix" => older_scanner_open(method, &mut a),
        "scannerGet" => Call::ScannerGet {
            id: a.i32s[1].unwrap_or(-1),
            rows: 1,
        },
        "scannerGetList" => Call::ScannerGet {
            id: a.i32s[1].unwrap_or(-1),
            rows: a.i32s[2].unwrap_or(1),
        },
        "scannerClose" => Call::ScannerClose {
            id: a.i32s[1].unwrap_or(-1),
        },
        "increment" | "incrementRows" => Call::IncrementRows {
            increments: std::mem::take(&mut a.increments),
        },
        "append" => Call::Append {
            append: a.append.take().unwrap_or_default(),
        },
        "deleteAll" | "deleteAllTs" => Call::DeleteAll {
            table: a.bin(1),
            row: a.bin(2),
            column: Some(a.bin(3)),
            timestamp: if method == "deleteAllTs" {
                a.i64s[4]
            } else {
                None
            },
        },
        "deleteAllRow" | "deleteAllRowTs" => Call::DeleteAll {
            table: a.bin(1),
            row: a.bin(2),
            column: None,
            timestamp: if method == "deleteAllRowTs" {
                a.i64s[3]
            } else {
                None
            },
        },
        "checkAndPut" => Call::CheckAndPut {
            table: a.bin(1),
            row: a.bin(2),
            column: a.bin(3),
            // Field 4 is unused in the IDL; the expected value is field 5.
            value: a.binaries[5].take(),
            mutation: a.mutation.take().unwrap_or_default(),
        },
        "getRowOrBefore" => Call::GetRowOrBefore {
            table: a.bin(1),
            row: a.bin(2),
            family: a.bin(3),
        },
        "getRegionInfo" => Call::GetRegionInfo { row: a.bin(1) },
        "getTableNamesWithIsTableEnabled" => Call::GetTableNamesWithIsTableEnabled,
        "getClusterId" => Call::GetClusterId,
        "grant" => Call::Grant {
            info: a.access.take().unwrap_or_default(),
        },
        "revoke" => Call::Revoke {
            info: a.access.take().unwrap_or_default(),
        },
        _ => Call::GetThriftServerType,
    };
    Ok(Request {
        header,
        call,
        attributes: std::mem::take(&mut a.attributes),
    })
}

/// The first row after every row that starts with `prefix` (empty: there is none, scan to
/// the end), so a prefix scan is a range scan.
pub fn prefix_stop_row(prefix: &[u8]) -> Bytes {
    let mut stop = prefix.to_vec();
    while let Some(last) = stop.pop() {
        if last < u8::MAX {
            stop.push(last + 1);
            return Bytes::from(stop);
        }
    }
    Bytes::new()
}

/// `scannerOpen(table, start, columns)`, `scannerOpenTs(…, columns, ts)`,
/// `scannerOpenWithStop(table, start, stop, columns)`, `scannerOpenWithStopTs(…, columns, ts)`
/// and `scannerOpenWithPrefix(table, prefix, columns)` as a `TScan` (unsorted columns, as
/// Apache's handler opens them).
fn older_scanner_open(method: &str, a: &mut Args) -> Call {
    let with_stop = method.starts_with("scannerOpenWithStop");
    let columns_id = if with_stop { 4 } else { 3 };
    let start = a.bin(2);
    let stop_row = if with_stop {
        Some(a.bin(3))
    } else if method == "scannerOpenWithPrefix" {
        Some(prefix_stop_row(&start)).filter(|s| !s.is_empty())
    } else {
        None
    };
    Call::ScannerOpen {
        table: a.bin(1),
        scan: TScan {
            start_row: Some(start),
            stop_row,
            timestamp: if method.ends_with("Ts") {
                a.i64s[columns_id + 1]
            } else {
                None
            },
            columns: a.binary_lists[columns_id].take(),
            ..TScan::default()
        },
    }
}

fn binary_arg(e: &mut dyn Encoder, id: i16, value: &[u8]) {
    e.write_field_begin(TType::Binary, id);
    e.write_binary(value);
}

/// The `*Ts` variants' timestamp as field `id`, if there is one; returns the next field id.
fn optional_timestamp(e: &mut dyn Encoder, id: i16, timestamp: Option<i64>) -> i16 {
    match timestamp {
        Some(ts) => {
            e.write_field_begin(TType::I64, id);
            e.write_i64(ts);
            id + 1
        }
        None => id,
    }
}

fn write_attributes(e: &mut dyn Encoder, id: i16, attributes: &[(Bytes, Bytes)]) {
    e.write_field_begin(TType::Map, id);
    e.write_map_begin(TType::Binary, TType::Binary, attributes.len());
    for (name, value) in attributes {
        e.write_binary(name);
        e.write_binary(value);
    }
}

impl Call {
    /// The method this call is sent as (the variant with the most arguments where a call
    /// folds several).
    pub fn method(&self) -> &'static str {
        match self {
            Call::GetTableNames => "getTableNames",
            Call::CreateTable { .. } => "createTable",
            Call::DeleteTable { .. } => "deleteTable",
            Call::EnableTable { .. } => "enableTable",
            Call::DisableTable { .. } => "disableTable",
            Call::IsTableEnabled { .. } => "isTableEnabled",
            Call::Compact { major: false, .. } => "compact",
            Call::Compact { major: true, .. } => "majorCompact",
            Call::GetColumnDescriptors { .. } => "getColumnDescriptors",
            Call::GetTableRegions { .. } => "getTableRegions",
            Call::GetRows {
                columns: None,
                timestamp: None,
                ..
            } => "getRows",
            Call::GetRows {
                columns: None,
                timestamp: Some(_),
                ..
            } => "getRowsTs",
            Call::GetRows {
                timestamp: None, ..
            } => "getRowsWithColumns",
            Call::GetRows { .. } => "getRowsWithColumnsTs",
            Call::GetVersions {
                timestamp: None, ..
            } => "getVer",
            Call::GetVersions { .. } => "getVerTs",
            Call::MutateRows {
                timestamp: None, ..
            } => "mutateRows",
            Call::MutateRows { .. } => "mutateRowsTs",
            Call::AtomicIncrement { .. } => "atomicIncrement",
            Call::ScannerOpen { .. } => "scannerOpenWithScan",
            Call::ScannerGet { .. } => "scannerGetList",
            Call::ScannerClose { .. } => "scannerClose",
            Call::IncrementRows { .. } => "incrementRows",
            Call::Append { .. } => "append",
            Call::DeleteAll {
                column: Some(_),
                timestamp: None,
                ..
            } => "deleteAll",
            Call::DeleteAll {
                column: Some(_), ..
            } => "deleteAllTs",
            Call::DeleteAll {
                timestamp: None, ..
            } => "deleteAllRow",
            Call::DeleteAll { .. } => "deleteAllRowTs",
            Call::CheckAndPut { .. } => "checkAndPut",
            Call::GetRowOrBefore { .. } => "getRowOrBefore",
            Call::GetRegionInfo { .. } => "getRegionInfo",
            Call::GetThriftServerType => "getThriftServerType",
            Call::MutateRow {
                timestamp: None, ..
            } => "mutateRow",
            Call::MutateRow { .. } => "mutateRowTs",
            Call::GetTableNamesWithIsTableEnabled => "getTableNamesWithIsTableEnabled",
            Call::GetClusterId => "getClusterId",
            Call::Grant { .. } => "grant",
            Call::Revoke { .. } => "revoke",
        }
    }

    /// Writes the call as a request message (attributes sent empty, as happybase does).
    pub fn encode(&self, e: &mut dyn Encoder, seqid: i32) {
        self.encode_with(e, seqid, &[]);
    }

    /// Writes the call with operation attributes (sent where the method has an attributes
    /// argument; the others have none to send them in).
    pub fn encode_with(&self, e: &mut dyn Encoder, seqid: i32, attributes: &[(Bytes, Bytes)]) {
        let attributes_arg = |e: &mut dyn Encoder, id: i16| write_attributes(e, id, attributes);
        e.write_message_begin(&MessageHeader {
            name: self.method().to_string(),
            kind: MessageType::Call,
            seqid,
        });
        e.write_struct_begin();
        match self {
            Call::GetTableNames => {}
            Call::CreateTable { table, families } => {
                binary_arg(e, 1, table);
                e.write_field_begin(TType::List, 2);
                write_structs(e, families);
            }
            Call::DeleteTable { table }
            | Call::EnableTable { table }
            | Call::DisableTable { table }
            | Call::IsTableEnabled { table }
            | Call::Compact { table, .. }
            | Call::GetColumnDescriptors { table }
            | Call::GetTableRegions { table } => binary_arg(e, 1, table),
            Call::GetRows {
                table,
                rows,
                columns,
                timestamp,
            } => {
                binary_arg(e, 1, table);
                e.write_field_begin(TType::List, 2);
                write_binaries(e, rows);
                let mut next = 3;
                if let Some(columns) = columns {
                    e.write_field_begin(TType::List, next);
                    write_binaries(e, columns);
                    next += 1;
                }
                next = optional_timestamp(e, next, *timestamp);
                attributes_arg(e, next);
            }
            Call::GetVersions {
                table,
                row,
                column,
                timestamp,
                versions,
            } => {
                binary_arg(e, 1, table);
                binary_arg(e, 2, row);
                binary_arg(e, 3, column);
                let mut next = 4;
                next = optional_timestamp(e, next, *timestamp);
                e.write_field_begin(TType::I32, next);
                e.write_i32(*versions);
                attributes_arg(e, next + 1);
            }
            Call::MutateRows {
                table,
                batches,
                timestamp,
            } => {
                binary_arg(e, 1, table);
                e.write_field_begin(TType::List, 2);
                write_structs(e, batches);
                let mut next = 3;
                next = optional_timestamp(e, next, *timestamp);
                attributes_arg(e, next);
            }
            Call::AtomicIncrement {
                table,
                row,
                column,
                amount,
            } => {
                binary_arg(e, 1, table);
                binary_arg(e, 2, row);
                binary_arg(e, 3, column);
                e.write_field_begin(TType::I64, 4);
                e.write_i64(*amount);
            }
            Call::ScannerOpen { table, scan } => {
                binary_arg(e, 1, table);
                e.write_field_begin(TType::Struct, 2);
                scan.write(e);
                attributes_arg(e, 3);
            }
            Call::ScannerGet { id, rows } => {
                e.write_field_begin(TType::I32, 1);
                e.write_i32(*id);
                e.write_field_begin(TType::I32, 2);
                e.write_i32(*rows);
            }
            Call::ScannerClose { id } => {
                e.write_field_begin(TType::I32, 1);
                e.write_i32(*id);
            }
            Call::IncrementRows { increments } => {
                e.write_field_begin(TType::List, 1);
                write_structs(e, increments);
            }
            Call::Append { append } => {
                e.write_field_begin(TType::Struct, 1);
                append.write(e);
            }
            Call::DeleteAll {
                table,
                row,
                column,
                timestamp,
            } => {
                binary_arg(e, 1, table);
                binary_arg(e, 2, row);
                let mut next = 3;
                if let Some(column) = column {
                    binary_arg(e, next, column);
                    next += 1;
                }
                next = optional_timestamp(e, next, *timestamp);
                attributes_arg(e, next);
            }
            Call::CheckAndPut {
                table,
                row,
                column,
                value,
                mutation,
            } => {
                binary_arg(e, 1, table);
                binary_arg(e, 2, row);
                binary_arg(e, 3, column);
                if let Some(value) = value {
                    binary_arg(e, 5, value);
                }
                e.write_field_begin(TType::Struct, 6);
                mutation.write(e);
                attributes_arg(e, 7);
            }
            Call::GetRowOrBefore { table, row, family } => {
                binary_arg(e, 1, table);
                binary_arg(e, 2, row);
                binary_arg(e, 3, family);
            }
            Call::GetRegionInfo { row } => binary_arg(e, 1, row),
            Call::GetThriftServerType
            | Call::GetTableNamesWithIsTableEnabled
            | Call::GetClusterId => {}
            Call::MutateRow {
                table,
                row,
                mutations,
                timestamp,
            } => {
                binary_arg(e, 1, table);
                binary_arg(e, 2, row);
                e.write_field_begin(TType::List, 3);
                write_structs(e, mutations);
                let next = optional_timestamp(e, 4, *timestamp);
                attributes_arg(e, next);
            }
            Call::Grant { info } | Call::Revoke { info } => {
                e.write_field_begin(TType::Struct, 1);
                info.write(e);
            }
        }
        e.write_struct_end();
    }
}
