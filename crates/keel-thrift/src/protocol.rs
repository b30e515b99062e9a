//! The protocol interface: a [`Decoder`] reads one message from a buffer already in memory (a
//! frame, or what a buffered connection has received so far), an [`Encoder`] appends one to a
//! `Vec<u8>`. Struct codecs are written once against these traits and work with both protocols.

use bytes::Bytes;

use crate::error::{Result, ThriftError};
use crate::types::{FieldHeader, Limits, MessageHeader, TType};

/// Reads Thrift values in order. Running out of bytes is [`ThriftError::Incomplete`].
pub trait Decoder {
    /// The message header: method, kind, sequence id.
    fn read_message_begin(&mut self) -> Result<MessageHeader>;
    /// Enters a struct (counts towards the depth limit).
    fn read_struct_begin(&mut self) -> Result<()>;
    /// Leaves a struct.
    fn read_struct_end(&mut self) -> Result<()>;
    /// The next field's header, or `None` at the struct's end (STOP).
    fn read_field_begin(&mut self) -> Result<Option<FieldHeader>>;
    /// A `bool`.
    fn read_bool(&mut self) -> Result<bool>;
    /// An `i8`.
    fn read_i8(&mut self) -> Result<i8>;
    /// An `i16`.
    fn read_i16(&mut self) -> Result<i16>;
    /// An `i32`.
    fn read_i32(&mut self) -> Result<i32>;
    /// An `i64`.
    fn read_i64(&mut self) -> Result<i64>;
    /// A `double`.
    fn read_double(&mut self) -> Result<f64>;
    /// A `binary`: a slice of the buffer, not a copy.
    fn read_binary(&mut self) -> Result<Bytes>;
    /// A list header: element type and count (enters it, for the depth limit).
    fn read_list_begin(&mut self) -> Result<(TType, usize)>;
    /// A set header, as a list's.
    fn read_set_begin(&mut self) -> Result<(TType, usize)>;
    /// A map header: key type, value type, count.
    fn read_map_begin(&mut self) -> Result<(TType, TType, usize)>;
    /// Leaves a list, set or map.
    fn read_container_end(&mut self);
    /// Bytes consumed so far.
    fn position(&self) -> usize;
    /// The estimated memory of what has been decoded so far (bounded by
    /// `Limits::max_decoded`): what a server charges a request, not its wire size.
    fn decoded(&self) -> usize;

    /// A `string`: UTF-8 checked.
    fn read_string(&mut self) -> Result<String> {
        let offset = self.position();
        let bytes = self.read_binary()?;
        String::from_utf8(bytes.to_vec()).map_err(|_| ThriftError::NotUtf8 { offset })
    }

    /// Reads and discards one value of type `ttype` (an unknown field), within the limits.
    fn skip(&mut self, ttype: TType) -> Result<()> {
        match ttype {
            TType::Bool => self.read_bool().map(drop),
            TType::I8 => self.read_i8().map(drop),
            TType::I16 => self.read_i16().map(drop),
            TType::I32 => self.read_i32().map(drop),
            TType::I64 => self.read_i64().map(drop),
            TType::Double => self.read_double().map(drop),
            TType::Binary => self.read_binary().map(drop),
            TType::Struct => {
                self.read_struct_begin()?;
                while let Some(field) = self.read_field_begin()? {
                    self.skip(field.ttype)?;
                }
                self.read_struct_end()
            }
            TType::List | TType::Set => {
                let (element, len) = if ttype == TType::List {
                    self.read_list_begin()?
                } else {
                    self.read_set_begin()?
                };
                for _ in 0..len {
                    self.skip(element)?;
                }
                self.read_container_end();
                Ok(())
            }
            TType::Map => {
                let (key, value, len) = self.read_map_begin()?;
                for _ in 0..len {
                    self.skip(key)?;
                    self.skip(value)?;
                }
                self.read_container_end();
                Ok(())
            }
        }
    }
}

/// Writes Thrift values in order into a growing buffer.
pub trait Encoder {
    /// The message header.
    fn write_message_begin(&mut self, header: &MessageHeader);
    /// Starts a struct.
    fn write_struct_begin(&mut self);
    /// Ends a struct (writes STOP).
    fn write_struct_end(&mut self);
    /// A field's header; its value follows.
    fn write_field_begin(&mut self, ttype: TType, id: i16);
    /// A `bool`.
    fn write_bool(&mut self, value: bool);
    /// An `i8`.
    fn write_i8(&mut self, value: i8);
    /// An `i16`.
    fn write_i16(&mut self, value: i16);
    /// An `i32`.
    fn write_i32(&mut self, value: i32);
    /// An `i64`.
    fn write_i64(&mut self, value: i64);
    /// A `double`.
    fn write_double(&mut self, value: f64);
    /// A `binary` (or a `string`'s bytes).
    fn write_binary(&mut self, value: &[u8]);
    /// A list header.
    fn write_list_begin(&mut self, element: TType, len: usize);
    /// A set header.
    fn write_set_begin(&mut self, element: TType, len: usize);
    /// A map header.
    fn write_map_begin(&mut self, key: TType, value: TType, len: usize);
    /// What has been written.
    fn bytes(&self) -> &[u8];
    /// Takes the written bytes, leaving the encoder empty.
    fn take(&mut self) -> Vec<u8>;

    /// A `string`.
    fn write_string(&mut self, value: &str) {
        self.write_binary(value.as_bytes());
    }
}

/// The byte cursor both decoders share: bounds, the incomplete/too-large distinction, depth,
/// and the decoded-size charge. It reads one contiguous buffer or a chain of them (HBase's
/// `MultiByteBuff`: a request read into several pooled buffers is decoded where it lies); a
/// value that straddles two buffers is the only thing ever copied.
#[derive(Debug, Clone)]
pub(crate) struct Cursor {
    /// The message's bytes, in order; at least one part (possibly empty).
    parts: Vec<Bytes>,
    /// The part `pos` is in, and the offset in it.
    part: usize,
    offset: usize,
    /// Every part's bytes together.
    len: usize,
    pub(crate) pos: usize,
    pub(crate) limits: Limits,
    depth: usize,
    /// The estimated memory of what has been decoded so far.
    pub(crate) decoded: usize,
}

/// What one decoded struct is charged against `Limits::max_decoded`, besides its fields.
pub const DECODED_STRUCT_COST: usize = 64;
/// What one element of a list, set or map is charged (its slot in the collection), charged
/// for every element when the container's header is read, before any is allocated.
pub const DECODED_ELEMENT_COST: usize = 32;
/// What one string or binary value is charged (its handle; its bytes are a slice of the
/// request, already counted as the request's own size).
pub const DECODED_BINARY_COST: usize = 32;

impl Cursor {
    pub(crate) fn new(buf: Bytes, limits: Limits) -> Cursor {
        Cursor::over(vec![buf], limits)
    }

    pub(crate) fn over(mut parts: Vec<Bytes>, limits: Limits) -> Cursor {
        parts.retain(|p| !p.is_empty());
        if parts.is_empty() {
            parts.push(Bytes::new());
        }
        Cursor {
            len: parts.iter().map(Bytes::len).sum(),
            parts,
            part: 0,
            offset: 0,
            pos: 0,
            limits,
            depth: 0,
            decoded: 0,
        }
    }

    /// Charges `bytes` of decoded memory, or fails past `Limits::max_decoded`.
    pub(crate) fn charge(&mut self, bytes: usize) -> Result<()> {
        self.decoded = self.decoded.saturating_add(bytes);
        if self.decoded > self.limits.max_decoded {
            return Err(ThriftError::TooLarge {
                offset: self.pos,
                what: "decoded message",
                size: i64::try_from(self.decoded).unwrap_or(i64::MAX),
                limit: self.limits.max_decoded,
            });
        }
        Ok(())
    }

    /// Enters a struct: the depth limit, and its charge.
    pub(crate) fn enter_struct(&mut self) -> Result<()> {
        self.enter()?;
        self.charge(DECODED_STRUCT_COST)
    }

    pub(crate) fn remaining(&self) -> usize {
        self.len - self.pos
    }

    /// Fails as incomplete unless `n` more bytes are there.
    fn need(&self, n: usize) -> Result<()> {
        if n > self.remaining() {
            return Err(ThriftError::Incomplete {
                offset: self.pos,
                needed: n - self.remaining(),
            });
        }
        Ok(())
    }

    /// Moves `n` bytes on (already checked to be there).
    fn advance(&mut self, mut n: usize) {
        self.pos += n;
        while n > 0 {
            let left = self.parts[self.part].len() - self.offset;
            if n < left {
                self.offset += n;
                return;
            }
            n -= left;
            if self.part + 1 < self.parts.len() {
                self.part += 1;
                self.offset = 0;
            } else {
                self.offset += left;
            }
        }
        // At a part's end with more parts after it: stand at the next one's start.
        if self.offset == self.parts[self.part].len() && self.part + 1 < self.parts.len() {
            self.part += 1;
            self.offset = 0;
        }
    }

    /// The next `n` bytes when they lie in the current part.
    fn contiguous(&self, n: usize) -> Option<&[u8]> {
        self.parts[self.part].get(self.offset..self.offset + n)
    }

    /// Copies the next `out.len()` bytes (already checked to be there) across parts.
    fn copy_into(&mut self, out: &mut [u8]) {
        let mut done = 0;
        while done < out.len() {
            let part = &self.parts[self.part][self.offset..];
            let take = part.len().min(out.len() - done);
            out[done..done + take].copy_from_slice(&part[..take]);
            done += take;
            self.advance(take);
        }
    }

    pub(crate) fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        self.need(N)?;
        let mut out = [0u8; N];
        match self.contiguous(N) {
            Some(bytes) => {
                out.copy_from_slice(bytes);
                self.advance(N);
            }
            None => self.copy_into(&mut out),
        }
        Ok(out)
    }

    pub(crate) fn byte(&mut self) -> Result<u8> {
        Ok(self.array::<1>()?[0])
    }

    /// A binary value of `len` bytes (already checked non-negative): a slice of its part,
    /// copied only if it straddles two.
    pub(crate) fn binary(&mut self, len: i64) -> Result<Bytes> {
        let offset = self.pos;
        let limit = self.limits.max_string;
        let len =
            usize::try_from(len)
                .ok()
                .filter(|&l| l <= limit)
                .ok_or(ThriftError::TooLarge {
                    offset,
                    what: "string",
                    size: len,
                    limit,
                })?;
        self.need(len)?;
        self.charge(DECODED_BINARY_COST)?;
        let value = if self.contiguous(len).is_some() {
            let value = self.parts[self.part].slice(self.offset..self.offset + len);
            self.advance(len);
            value
        } else {
            let mut value = vec![0u8; len];
            self.copy_into(&mut value);
            Bytes::from(value)
        };
        Ok(value)
    }

    /// A container length: non-negative, within the limit, and no more elements than the
    /// bytes left could hold — so no allocation is ever sized by a lie. (Too many elements for
    /// the bytes *so far* is reported as incomplete: a buffered connection may have more.)
    pub(crate) fn container_len(
        &mut self,
        what: &'static str,
        len: i64,
        element: TType,
    ) -> Result<usize> {
        let offset = self.pos;
        let limit = self.limits.max_container;
        let len =
            usize::try_from(len)
                .ok()
                .filter(|&l| l <= limit)
                .ok_or(ThriftError::TooLarge {
                    offset,
                    what,
                    size: len,
                    limit,
                })?;
        let needed = len.saturating_mul(element.min_wire_len());
        if needed > self.remaining() {
            return Err(ThriftError::Incomplete {
                offset,
                needed: needed - self.remaining(),
            });
        }
        self.enter()?;
        self.charge(len.saturating_mul(DECODED_ELEMENT_COST))?;
        Ok(len)
    }

    pub(crate) fn enter(&mut self) -> Result<()> {
        if self.depth >= self.limits.max_depth {
            return Err(ThriftError::TooDeep {
                offset: self.pos,
                limit: self.limits.max_depth,
            });
        }
        self.depth += 1;
        Ok(())
    }

    pub(crate) fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }
}
