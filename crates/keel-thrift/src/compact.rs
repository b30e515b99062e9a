//! The compact protocol: zigzag varints for integers and lengths, field ids as deltas packed
//! with the type into one byte where they fit, booleans folded into their field's header,
//! short list headers, little-endian doubles. Messages start with `0x82`, then the version (1)
//! and type in one byte.

use bytes::Bytes;

use crate::error::{Result, ThriftError};
use crate::protocol::{Cursor, Decoder, Encoder};
use crate::types::{FieldHeader, Limits, MessageHeader, MessageType, TType};

const PROTOCOL_ID: u8 = 0x82;
const VERSION: u8 = 1;
const VERSION_MASK: u8 = 0x1f;

const TRUE: u8 = 1;
const FALSE: u8 = 2;

fn compact_id(ttype: TType) -> u8 {
    match ttype {
        TType::Bool => TRUE,
        TType::I8 => 3,
        TType::I16 => 4,
        TType::I32 => 5,
        TType::I64 => 6,
        TType::Double => 7,
        TType::Binary => 8,
        TType::List => 9,
        TType::Set => 10,
        TType::Map => 11,
        TType::Struct => 12,
    }
}

pub(crate) fn from_compact_id(id: u8) -> Option<TType> {
    Some(match id {
        TRUE | FALSE => TType::Bool,
        3 => TType::I8,
        4 => TType::I16,
        5 => TType::I32,
        6 => TType::I64,
        7 => TType::Double,
        8 => TType::Binary,
        9 => TType::List,
        10 => TType::Set,
        11 => TType::Map,
        12 => TType::Struct,
        _ => return None,
    })
}

fn zigzag(n: i64) -> u64 {
    ((n << 1) ^ (n >> 63)) as u64
}

fn unzigzag(n: u64) -> i64 {
    ((n >> 1) as i64) ^ -((n & 1) as i64)
}

/// Decodes the compact protocol from a buffer.
#[derive(Debug, Clone)]
pub struct CompactDecoder {
    cursor: Cursor,
    /// The last field id read in each open struct.
    last_ids: Vec<i16>,
    last_id: i16,
    /// A boolean field's value, carried in its header.
    pending_bool: Option<bool>,
}

impl CompactDecoder {
    /// A decoder over `buf` with `limits`.
    pub fn new(buf: Bytes, limits: Limits) -> CompactDecoder {
        CompactDecoder::with_cursor(Cursor::new(buf, limits))
    }

    fn with_cursor(cursor: Cursor) -> CompactDecoder {
        CompactDecoder {
            cursor,
            last_ids: Vec::new(),
            last_id: 0,
            pending_bool: None,
        }
    }

    /// A decoder over a message held in several buffers, in order (a request read into a chain
    /// of pooled buffers): decoded where it lies, a value straddling two buffers copied.
    pub fn from_parts(parts: Vec<Bytes>, limits: Limits) -> CompactDecoder {
        CompactDecoder::with_cursor(Cursor::over(parts, limits))
    }

    fn varint(&mut self, max_bytes: usize) -> Result<u64> {
        let offset = self.cursor.pos;
        let mut value = 0u64;
        for i in 0..max_bytes {
            let byte = self.cursor.byte()?;
            value |= u64::from(byte & 0x7f) << (7 * i);
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(ThriftError::BadVarint { offset })
    }

    fn ttype(&self, id: u8, offset: usize) -> Result<TType> {
        from_compact_id(id).ok_or(ThriftError::UnknownType { offset, id })
    }

    fn list_header(&mut self, what: &'static str) -> Result<(TType, usize)> {
        let offset = self.cursor.pos;
        let header = self.cursor.byte()?;
        let element = self.ttype(header & 0x0f, offset)?;
        let short = header >> 4;
        let len = if short == 0x0f {
            self.varint(5)? as i64
        } else {
            i64::from(short)
        };
        let len = i64::from(i32::try_from(len).map_err(|_| ThriftError::TooLarge {
            offset,
            what,
            size: len,
            limit: i32::MAX as usize,
        })?);
        Ok((element, self.cursor.container_len(what, len, element)?))
    }
}

impl Decoder for CompactDecoder {
    fn read_message_begin(&mut self) -> Result<MessageHeader> {
        let offset = self.cursor.pos;
        let protocol = self.cursor.byte()?;
        let version_and_type = self.cursor.byte()?;
        let kind = MessageType::from_id(version_and_type >> 5);
        let (PROTOCOL_ID, VERSION, Some(kind)) = (protocol, version_and_type & VERSION_MASK, kind)
        else {
            return Err(ThriftError::BadHeader {
                offset,
                header: (u32::from(protocol) << 8) | u32::from(version_and_type),
            });
        };
        let seqid = self.varint(5)? as u32 as i32;
        let name = self.read_string()?;
        Ok(MessageHeader { name, kind, seqid })
    }

    fn read_struct_begin(&mut self) -> Result<()> {
        self.cursor.enter_struct()?;
        self.last_ids.push(self.last_id);
        self.last_id = 0;
        Ok(())
    }

    fn read_struct_end(&mut self) -> Result<()> {
        self.cursor.leave();
        self.last_id = self.last_ids.pop().unwrap_or(0);
        Ok(())
    }

    fn read_field_begin(&mut self) -> Result<Option<FieldHeader>> {
        let offset = self.cursor.pos;
        let header = self.cursor.byte()?;
        if header == 0 {
            return Ok(None);
        }
        let type_id = header & 0x0f;
        let ttype = self.ttype(type_id, offset)?;
        let delta = header >> 4;
        let id = if delta == 0 {
            self.read_i16()?
        } else {
            self.last_id.wrapping_add(i16::from(delta))
        };
        self.last_id = id;
        if ttype == TType::Bool {
            self.pending_bool = Some(type_id == TRUE);
        }
        Ok(Some(FieldHeader { ttype, id }))
    }

    fn read_bool(&mut self) -> Result<bool> {
        if let Some(value) = self.pending_bool.take() {
            return Ok(value);
        }
        Ok(self.cursor.byte()? == TRUE)
    }

    fn read_i8(&mut self) -> Result<i8> {
        Ok(self.cursor.byte()? as i8)
    }

    fn read_i16(&mut self) -> Result<i16> {
        Ok(unzigzag(self.varint(3)?) as i16)
    }

    fn read_i32(&mut self) -> Result<i32> {
        Ok(unzigzag(self.varint(5)?) as i32)
    }

    fn read_i64(&mut self) -> Result<i64> {
        Ok(unzigzag(self.varint(10)?))
    }

    fn read_double(&mut self) -> Result<f64> {
        Ok(f64::from_bits(u64::from_le_bytes(self.cursor.array()?)))
    }

    fn read_binary(&mut self) -> Result<Bytes> {
        let offset = self.cursor.pos;
        let len = self.varint(5)?;
        let len = i64::try_from(len).map_err(|_| ThriftError::TooLarge {
            offset,
            what: "string",
            size: i64::MAX,
            limit: self.cursor.limits.max_string,
        })?;
        self.cursor.binary(len)
    }

    fn read_list_begin(&mut self) -> Result<(TType, usize)> {
        self.list_header("list")
    }

    fn read_set_begin(&mut self) -> Result<(TType, usize)> {
        self.list_header("set")
    }

    fn read_map_begin(&mut self) -> Result<(TType, TType, usize)> {
        let offset = self.cursor.pos;
        let len = self.varint(5)? as i64;
        if len == 0 {
            // An empty map carries no types.
            self.cursor.enter()?;
            return Ok((TType::Binary, TType::Binary, 0));
        }
        let types = self.cursor.byte()?;
        let key = self.ttype(types >> 4, offset)?;
        let value = self.ttype(types & 0x0f, offset)?;
        let len = self.cursor.container_len("map", len, TType::Binary)?;
        Ok((key, value, len))
    }

    fn read_container_end(&mut self) {
        self.cursor.leave();
    }

    fn position(&self) -> usize {
        self.cursor.pos
    }

    fn decoded(&self) -> usize {
        self.cursor.decoded
    }
}

/// Encodes the compact protocol.
#[derive(Debug, Clone, Default)]
pub struct CompactEncoder {
    out: Vec<u8>,
    last_ids: Vec<i16>,
    last_id: i16,
    /// A boolean field whose header waits for its value.
    pending_bool_field: Option<i16>,
}

impl CompactEncoder {
    /// An empty encoder.
    pub fn new() -> CompactEncoder {
        CompactEncoder::default()
    }

    fn varint(&mut self, mut n: u64) {
        while n >= 0x80 {
            self.out.push((n as u8) | 0x80);
            n >>= 7;
        }
        self.out.push(n as u8);
    }

    fn field_header(&mut self, type_id: u8, id: i16) {
        let delta = i32::from(id) - i32::from(self.last_id);
        if (1..=15).contains(&delta) {
            self.out.push(((delta as u8) << 4) | type_id);
        } else {
            self.out.push(type_id);
            self.write_i16(id);
        }
        self.last_id = id;
    }

    fn list_header(&mut self, element: TType, len: usize) {
        let id = compact_id(element);
        if len < 15 {
            self.out.push(((len as u8) << 4) | id);
        } else {
            self.out.push(0xf0 | id);
            self.varint(len as u64);
        }
    }
}

impl Encoder for CompactEncoder {
    fn write_message_begin(&mut self, header: &MessageHeader) {
        self.out.push(PROTOCOL_ID);
        self.out.push((header.kind.id() << 5) | VERSION);
        self.varint(u64::from(header.seqid as u32));
        self.write_string(&header.name);
    }

    fn write_struct_begin(&mut self) {
        self.last_ids.push(self.last_id);
        self.last_id = 0;
    }

    fn write_struct_end(&mut self) {
        self.out.push(0);
        self.last_id = self.last_ids.pop().unwrap_or(0);
    }

    fn write_field_begin(&mut self, ttype: TType, id: i16) {
        if ttype == TType::Bool {
            // The header carries the value: written by `write_bool`.
            self.pending_bool_field = Some(id);
        } else {
            self.field_header(compact_id(ttype), id);
        }
    }

    fn write_bool(&mut self, value: bool) {
        let id = if value { TRUE } else { FALSE };
        match self.pending_bool_field.take() {
            Some(field) => self.field_header(id, field),
            None => self.out.push(id),
        }
    }

    fn write_i8(&mut self, value: i8) {
        self.out.push(value as u8);
    }

    fn write_i16(&mut self, value: i16) {
        self.varint(zigzag(i64::from(value)) & 0xffff_ffff);
    }

    fn write_i32(&mut self, value: i32) {
        self.varint(zigzag(i64::from(value)));
    }

    fn write_i64(&mut self, value: i64) {
        self.varint(zigzag(value));
    }

    fn write_double(&mut self, value: f64) {
        self.out.extend_from_slice(&value.to_bits().to_le_bytes());
    }

    fn write_binary(&mut self, value: &[u8]) {
        self.varint(value.len() as u64);
        self.out.extend_from_slice(value);
    }

    fn write_list_begin(&mut self, element: TType, len: usize) {
        self.list_header(element, len);
    }

    fn write_set_begin(&mut self, element: TType, len: usize) {
        self.list_header(element, len);
    }

    fn write_map_begin(&mut self, key: TType, value: TType, len: usize) {
        self.varint(len as u64);
        if len > 0 {
            self.out.push((compact_id(key) << 4) | compact_id(value));
        }
    }

    fn bytes(&self) -> &[u8] {
        &self.out
    }

    fn take(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.out)
    }
}
