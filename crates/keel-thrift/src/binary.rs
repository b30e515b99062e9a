//! The binary protocol: big-endian fixed-width integers, `i32`-length-prefixed strings and
//! containers, a one-byte type and an `i16` id per field. Messages start with the strict
//! header (`0x8001` version, then the type); the old unversioned header is read too.

use bytes::Bytes;

use crate::error::{Result, ThriftError};
use crate::protocol::{Cursor, Decoder, Encoder};
use crate::types::{FieldHeader, Limits, MessageHeader, MessageType, TType};

const VERSION_1: u32 = 0x8001_0000;
const VERSION_MASK: u32 = 0xffff_0000;

/// Decodes the binary protocol from a buffer.
#[derive(Debug, Clone)]
pub struct BinaryDecoder {
    cursor: Cursor,
}

impl BinaryDecoder {
    /// A decoder over `buf` with `limits`.
    pub fn new(buf: Bytes, limits: Limits) -> BinaryDecoder {
        BinaryDecoder::with_cursor(Cursor::new(buf, limits))
    }

    fn with_cursor(cursor: Cursor) -> BinaryDecoder {
        BinaryDecoder { cursor }
    }

    /// A decoder over a message held in several buffers, in order (a request read into a chain
    /// of pooled buffers): decoded where it lies, a value straddling two buffers copied.
    pub fn from_parts(parts: Vec<Bytes>, limits: Limits) -> BinaryDecoder {
        BinaryDecoder::with_cursor(Cursor::over(parts, limits))
    }

    fn ttype(&mut self, id: u8) -> Result<TType> {
        TType::from_binary_id(id).ok_or(ThriftError::UnknownType {
            offset: self.cursor.pos - 1,
            id,
        })
    }
}

impl Decoder for BinaryDecoder {
    fn read_message_begin(&mut self) -> Result<MessageHeader> {
        let offset = self.cursor.pos;
        let header = self.read_i32()?;
        if header < 0 {
            let bits = header as u32;
            let kind = MessageType::from_id((bits & 0xff) as u8);
            let (VERSION_1, Some(kind)) = (bits & VERSION_MASK, kind) else {
                return Err(ThriftError::BadHeader {
                    offset,
                    header: bits,
                });
            };
            let name = self.read_string()?;
            let seqid = self.read_i32()?;
            return Ok(MessageHeader { name, kind, seqid });
        }
        // The old unversioned header: the name's length came first.
        let name = self.cursor.binary(i64::from(header))?;
        let name = String::from_utf8(name.to_vec()).map_err(|_| ThriftError::NotUtf8 { offset })?;
        let kind_id = self.cursor.byte()?;
        let kind = MessageType::from_id(kind_id).ok_or(ThriftError::BadHeader {
            offset,
            header: u32::from(kind_id),
        })?;
        let seqid = self.read_i32()?;
        Ok(MessageHeader { name, kind, seqid })
    }

    fn read_struct_begin(&mut self) -> Result<()> {
        self.cursor.enter_struct()
    }

    fn read_struct_end(&mut self) -> Result<()> {
        self.cursor.leave();
        Ok(())
    }

    fn read_field_begin(&mut self) -> Result<Option<FieldHeader>> {
        let id = self.cursor.byte()?;
        if id == 0 {
            return Ok(None);
        }
        let ttype = self.ttype(id)?;
        let id = self.read_i16()?;
        Ok(Some(FieldHeader { ttype, id }))
    }

    fn read_bool(&mut self) -> Result<bool> {
        Ok(self.cursor.byte()? != 0)
    }

    fn read_i8(&mut self) -> Result<i8> {
        Ok(self.cursor.byte()? as i8)
    }

    fn read_i16(&mut self) -> Result<i16> {
        Ok(i16::from_be_bytes(self.cursor.array()?))
    }

    fn read_i32(&mut self) -> Result<i32> {
        Ok(i32::from_be_bytes(self.cursor.array()?))
    }

    fn read_i64(&mut self) -> Result<i64> {
        Ok(i64::from_be_bytes(self.cursor.array()?))
    }

    fn read_double(&mut self) -> Result<f64> {
        Ok(f64::from_bits(u64::from_be_bytes(self.cursor.array()?)))
    }

    fn read_binary(&mut self) -> Result<Bytes> {
        let len = self.read_i32()?;
        self.cursor.binary(i64::from(len))
    }

    fn read_list_begin(&mut self) -> Result<(TType, usize)> {
        let id = self.cursor.byte()?;
        let element = self.ttype(id)?;
        let len = self.read_i32()?;
        Ok((
            element,
            self.cursor.container_len("list", i64::from(len), element)?,
        ))
    }

    fn read_set_begin(&mut self) -> Result<(TType, usize)> {
        let id = self.cursor.byte()?;
        let element = self.ttype(id)?;
        let len = self.read_i32()?;
        Ok((
            element,
            self.cursor.container_len("set", i64::from(len), element)?,
        ))
    }

    fn read_map_begin(&mut self) -> Result<(TType, TType, usize)> {
        let key_id = self.cursor.byte()?;
        let key = self.ttype(key_id)?;
        let value_id = self.cursor.byte()?;
        let value = self.ttype(value_id)?;
        let len = self.read_i32()?;
        // Each entry is a key and a value: at least one byte, counted conservatively.
        let len = self
            .cursor
            .container_len("map", i64::from(len), TType::Binary)?;
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

/// Encodes the binary protocol (strict header).
#[derive(Debug, Clone, Default)]
pub struct BinaryEncoder {
    out: Vec<u8>,
}

impl BinaryEncoder {
    /// An empty encoder.
    pub fn new() -> BinaryEncoder {
        BinaryEncoder::default()
    }
}

/// A container length as the wire's `i32` (longer containers cannot be encoded; they cannot be
/// built from a decoded message either).
fn wire_len(len: usize) -> i32 {
    i32::try_from(len).unwrap_or(i32::MAX)
}

impl Encoder for BinaryEncoder {
    fn write_message_begin(&mut self, header: &MessageHeader) {
        self.write_i32((VERSION_1 | u32::from(header.kind.id())) as i32);
        self.write_string(&header.name);
        self.write_i32(header.seqid);
    }

    fn write_struct_begin(&mut self) {}

    fn write_struct_end(&mut self) {
        self.out.push(0);
    }

    fn write_field_begin(&mut self, ttype: TType, id: i16) {
        self.out.push(ttype.binary_id());
        self.write_i16(id);
    }

    fn write_bool(&mut self, value: bool) {
        self.out.push(u8::from(value));
    }

    fn write_i8(&mut self, value: i8) {
        self.out.push(value as u8);
    }

    fn write_i16(&mut self, value: i16) {
        self.out.extend_from_slice(&value.to_be_bytes());
    }

    fn write_i32(&mut self, value: i32) {
        self.out.extend_from_slice(&value.to_be_bytes());
    }

    fn write_i64(&mut self, value: i64) {
        self.out.extend_from_slice(&value.to_be_bytes());
    }

    fn write_double(&mut self, value: f64) {
        self.out.extend_from_slice(&value.to_bits().to_be_bytes());
    }

    fn write_binary(&mut self, value: &[u8]) {
        self.write_i32(wire_len(value.len()));
        self.out.extend_from_slice(value);
    }

    fn write_list_begin(&mut self, element: TType, len: usize) {
        self.out.push(element.binary_id());
        self.write_i32(wire_len(len));
    }

    fn write_set_begin(&mut self, element: TType, len: usize) {
        self.write_list_begin(element, len);
    }

    fn write_map_begin(&mut self, key: TType, value: TType, len: usize) {
        self.out.push(key.binary_id());
        self.out.push(value.binary_id());
        self.write_i32(wire_len(len));
    }

    fn bytes(&self) -> &[u8] {
        &self.out
    }

    fn take(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.out)
    }
}
