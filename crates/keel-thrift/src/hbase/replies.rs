//! The `Hbase` service's replies: a [`Reply`] value or one of the declared exceptions
//! ([`HbaseError`]) in a result struct, and `TApplicationException` for what the service does not
//! know. Written by the server, read by the client.

use super::PREALLOCATE;
use bytes::Bytes;

use super::structs::{
    ColumnDescriptor, TCell, TRegionInfo, TRowResult, ThriftStruct, read_fields, read_list,
    write_binaries, write_structs,
};
use crate::error::Result;
use crate::protocol::{Decoder, Encoder};
use crate::types::{MessageHeader, MessageType, TType};

/// A successful reply's value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// Nothing (`void` methods).
    Void,
    /// `isTableEnabled`.
    Bool(bool),
    /// A scanner id.
    I32(i32),
    /// A counter's new value.
    I64(i64),
    /// Table names.
    Names(Vec<Bytes>),
    /// `getColumnDescriptors`: `"cf:"` → descriptor.
    Families(Vec<(Bytes, ColumnDescriptor)>),
    /// `getTableRegions`.
    Regions(Vec<TRegionInfo>),
    /// `getRegionInfo`.
    Region(TRegionInfo),
    /// Row results.
    Rows(Vec<TRowResult>),
    /// Cells (`get`, `getVer*`, `getRowOrBefore`, `append`).
    Cells(Vec<TCell>),
    /// `getTableNamesWithIsTableEnabled`: table → enabled.
    EnabledTables(Vec<(Bytes, bool)>),
    /// A string (`getClusterId`).
    Text(Bytes),
}

/// The exceptions the `Hbase` service declares (field ids 1, 2 and 3 of every result struct).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HbaseError {
    /// `IOError`.
    #[error("IOError: {message}")]
    Io {
        /// What failed.
        message: String,
        /// Whether a retry may succeed (Apache's IDL only).
        can_retry: bool,
    },
    /// `IllegalArgument`.
    #[error("IllegalArgument: {0}")]
    IllegalArgument(String),
    /// `AlreadyExists`.
    #[error("AlreadyExists: {0}")]
    AlreadyExists(String),
}

/// `TApplicationException`'s `UNKNOWN_METHOD`.
pub const UNKNOWN_METHOD: i32 = 1;
/// `TApplicationException`'s `INTERNAL_ERROR`.
pub const INTERNAL_ERROR: i32 = 6;

/// Writes the reply to method `name`: the result struct with field 0 (the value) or the
/// exception's field (1 IOError, 2 IllegalArgument, 3 AlreadyExists).
pub fn encode_reply(
    e: &mut dyn Encoder,
    name: &str,
    seqid: i32,
    result: &std::result::Result<Reply, HbaseError>,
) {
    // An exception the method does not declare would be a field its client does not know
    // ("missing result"): it goes as the nearest declared one, or, as libthrift answers an
    // unchecked exception, as a `TApplicationException` — with the message, which libthrift
    // drops.
    if let Err(error) = result {
        let declared = super::calls::declared_exceptions(name);
        let fits = match error {
            HbaseError::Io { .. } => declared.io,
            HbaseError::IllegalArgument(_) => declared.illegal_argument,
            HbaseError::AlreadyExists(_) => declared.already_exists,
        };
        if !fits {
            match error {
                HbaseError::AlreadyExists(message) if declared.io => {
                    let as_io = Err(HbaseError::Io {
                        message: message.clone(),
                        can_retry: false,
                    });
                    return encode_reply(e, name, seqid, &as_io);
                }
                _ => {
                    return encode_application_exception(
                        e,
                        name,
                        seqid,
                        &error.to_string(),
                        INTERNAL_ERROR,
                    );
                }
            }
        }
    }
    e.write_message_begin(&MessageHeader {
        name: name.to_string(),
        kind: MessageType::Reply,
        seqid,
    });
    e.write_struct_begin();
    match result {
        Ok(reply) => write_success(e, reply),
        Err(error) => {
            let (id, message, can_retry) = match error {
                HbaseError::Io { message, can_retry } => (1, message, Some(*can_retry)),
                HbaseError::IllegalArgument(message) => (2, message, None),
                HbaseError::AlreadyExists(message) => (3, message, None),
            };
            e.write_field_begin(TType::Struct, id);
            e.write_struct_begin();
            e.write_field_begin(TType::Binary, 1);
            e.write_string(message);
            if let Some(can_retry) = can_retry {
                e.write_field_begin(TType::Bool, 2);
                e.write_bool(can_retry);
            }
            e.write_struct_end();
        }
    }
    e.write_struct_end();
}

fn write_success(e: &mut dyn Encoder, reply: &Reply) {
    match reply {
        Reply::Void => {}
        Reply::Bool(v) => {
            e.write_field_begin(TType::Bool, 0);
            e.write_bool(*v);
        }
        Reply::I32(v) => {
            e.write_field_begin(TType::I32, 0);
            e.write_i32(*v);
        }
        Reply::I64(v) => {
            e.write_field_begin(TType::I64, 0);
            e.write_i64(*v);
        }
        Reply::Names(names) => {
            e.write_field_begin(TType::List, 0);
            write_binaries(e, names);
        }
        Reply::Families(families) => {
            e.write_field_begin(TType::Map, 0);
            e.write_map_begin(TType::Binary, TType::Struct, families.len());
            for (name, descriptor) in families {
                e.write_binary(name);
                descriptor.write(e);
            }
        }
        Reply::Region(region) => {
            e.write_field_begin(TType::Struct, 0);
            region.write(e);
        }
        Reply::Regions(items) => {
            e.write_field_begin(TType::List, 0);
            write_structs(e, items);
        }
        Reply::Rows(items) => {
            e.write_field_begin(TType::List, 0);
            write_structs(e, items);
        }
        Reply::Cells(items) => {
            e.write_field_begin(TType::List, 0);
            write_structs(e, items);
        }
        Reply::EnabledTables(tables) => {
            e.write_field_begin(TType::Map, 0);
            e.write_map_begin(TType::Binary, TType::Bool, tables.len());
            for (name, enabled) in tables {
                e.write_binary(name);
                e.write_bool(*enabled);
            }
        }
        Reply::Text(text) => {
            e.write_field_begin(TType::Binary, 0);
            e.write_binary(text);
        }
    }
}

/// Writes a `TApplicationException` reply (an unknown method, an internal error).
pub fn encode_application_exception(
    e: &mut dyn Encoder,
    name: &str,
    seqid: i32,
    message: &str,
    kind: i32,
) {
    e.write_message_begin(&MessageHeader {
        name: name.to_string(),
        kind: MessageType::Exception,
        seqid,
    });
    e.write_struct_begin();
    e.write_field_begin(TType::Binary, 1);
    e.write_string(message);
    e.write_field_begin(TType::I32, 2);
    e.write_i32(kind);
    e.write_struct_end();
}

/// What a reply said: its header and the value or declared exception; a
/// `TApplicationException` is `Err((message, kind))`.
pub type DecodedReply = (
    MessageHeader,
    std::result::Result<std::result::Result<Reply, HbaseError>, (String, i32)>,
);

/// Reads a reply (the client side). The value's shape comes from the method named in the
/// reply's header.
pub fn decode_reply(d: &mut dyn Decoder) -> Result<DecodedReply> {
    let header = d.read_message_begin()?;
    if header.kind == MessageType::Exception {
        let (mut message, mut kind) = (String::new(), 0);
        read_fields(d, |d, f| {
            match (f.id, f.ttype) {
                (1, TType::Binary) => message = d.read_string()?,
                (2, TType::I32) => kind = d.read_i32()?,
                _ => return Ok(false),
            }
            Ok(true)
        })?;
        return Ok((header, Err((message, kind))));
    }
    let name = header.name.clone();
    let mut outcome: std::result::Result<Reply, HbaseError> = Ok(Reply::Void);
    read_fields(d, |d, f| {
        match (f.id, f.ttype) {
            (0, TType::Bool) => outcome = Ok(Reply::Bool(d.read_bool()?)),
            (0, TType::I32) => outcome = Ok(Reply::I32(d.read_i32()?)),
            (0, TType::I64) => outcome = Ok(Reply::I64(d.read_i64()?)),
            (0, TType::Map) if name == "getTableNamesWithIsTableEnabled" => {
                let (_, _, len) = d.read_map_begin()?;
                let mut tables = Vec::with_capacity(len.min(PREALLOCATE));
                for _ in 0..len {
                    tables.push((d.read_binary()?, d.read_bool()?));
                }
                d.read_container_end();
                outcome = Ok(Reply::EnabledTables(tables));
            }
            (0, TType::Map) => {
                let (_, _, len) = d.read_map_begin()?;
                let mut families = Vec::with_capacity(len.min(PREALLOCATE));
                for _ in 0..len {
                    families.push((d.read_binary()?, ColumnDescriptor::read(d)?));
                }
                d.read_container_end();
                outcome = Ok(Reply::Families(families));
            }
            (0, TType::Binary) => outcome = Ok(Reply::Text(d.read_binary()?)),
            (0, TType::List) => {
                outcome = Ok(match name.as_str() {
                    "getTableNames" => Reply::Names(read_list(d, |d| d.read_binary())?),
                    "getTableRegions" => Reply::Regions(read_list(d, TRegionInfo::read)?),
                    "get" | "getVer" | "getVerTs" | "getRowOrBefore" | "append" => {
                        Reply::Cells(read_list(d, TCell::read)?)
                    }
                    _ => Reply::Rows(read_list(d, TRowResult::read)?),
                });
            }
            (0, TType::Struct) => outcome = Ok(Reply::Region(TRegionInfo::read(d)?)),
            (1..=3, TType::Struct) => {
                let (mut message, mut can_retry) = (String::new(), false);
                read_fields(d, |d, g| {
                    match (g.id, g.ttype) {
                        (1, TType::Binary) => message = d.read_string()?,
                        (2, TType::Bool) => can_retry = d.read_bool()?,
                        _ => return Ok(false),
                    }
                    Ok(true)
                })?;
                outcome = Err(match f.id {
                    1 => HbaseError::Io { message, can_retry },
                    2 => HbaseError::IllegalArgument(message),
                    _ => HbaseError::AlreadyExists(message),
                });
            }
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    Ok((header, Ok(outcome)))
}
