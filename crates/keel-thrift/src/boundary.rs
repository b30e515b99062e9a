//! Where a message ends on a buffered (unframed) connection, found as its bytes arrive.
//!
//! A buffered message carries no length: its end is where its argument struct closes. Decoding
//! the whole message again each time a few more bytes arrive costs time quadratic in its size
//! (a client sending a 16 MiB request 1 KiB at a time would have the server walk 128 GiB), so a
//! server instead feeds each newly read chunk to a [`MessageBoundary`], which walks the message's
//! structure once, token by token, and remembers where it stopped. It keeps no values: a stack
//! of what comes next, and at most one token's bytes (16) split across two reads. String and
//! binary payloads are skipped by length without being looked at. The decoder proper then runs
//! once, over the complete message.
//!
//! The walk applies the decoder's structural limits (string length, container length, nesting
//! depth, known type ids), so a message it accepts the decoder will not reject for shape; it
//! does not bound the message's total size, which the caller does (it holds the bytes).

use crate::error::{Result, ThriftError};
use crate::transport::Protocol;
use crate::types::{Limits, TType};

/// The longest token: a 10-byte varint, a compact list header with its varint, a binary map
/// header (6) — all fit.
const MAX_TOKEN: usize = 16;

/// What the walk expects next (the top of its stack).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// The message header's leading bytes (binary: the version word; compact: protocol id
    /// and version/type byte).
    Header,
    /// The method name's length (binary i32, compact varint); its bytes are skipped.
    NameLength,
    /// The sequence id (binary i32, compact varint).
    Seqid,
    /// Payload bytes to pass over.
    Skip(u64),
    /// One value of this type.
    Value(TType),
    /// The next field header (or stop) of an open struct.
    Fields { last_id: i16 },
    /// `left` more elements of an open list or set.
    Elements { ttype: TType, left: u64 },
    /// `left` more entries of an open map.
    Entries { key: TType, value: TType, left: u64 },
}

/// Finds message boundaries in a byte stream fed in arbitrary pieces, in time linear in the
/// bytes fed.
///
/// ```
/// use keel_thrift::transport::Protocol;
/// use keel_thrift::{BinaryEncoder, Encoder, Limits, MessageBoundary, MessageHeader, MessageType};
///
/// let mut out = BinaryEncoder::new();
/// out.write_message_begin(&MessageHeader { name: "getTableNames".into(), kind: MessageType::Call, seqid: 0 });
/// out.write_struct_begin();
/// out.write_struct_end();
/// let message = out.take();
///
/// let mut boundary = MessageBoundary::new(Protocol::Binary, Limits::default());
/// assert_eq!(boundary.feed(&message[..7])?, None); // not yet
/// let mut rest = message[7..].to_vec();
/// rest.extend_from_slice(b"\x80next message");
/// // The message ends this many bytes into the second piece.
/// assert_eq!(boundary.feed(&rest)?, Some(message.len() - 7));
/// # Ok::<(), keel_thrift::ThriftError>(())
/// ```
#[derive(Debug, Clone)]
pub struct MessageBoundary {
    protocol: Protocol,
    limits: Limits,
    stack: Vec<Expect>,
    /// Open structs and containers.
    depth: usize,
    /// Whether the current message's header has begun (the stack is empty before and after).
    started: bool,
    /// A token's first bytes, when a read ended inside it.
    partial: Vec<u8>,
    /// Bytes of the current message walked so far (for error offsets).
    offset: usize,
}

/// One token read: how many bytes it took.
type Token = Option<usize>;

impl MessageBoundary {
    /// A walk over messages in `protocol`, refusing what `limits` would.
    pub fn new(protocol: Protocol, limits: Limits) -> MessageBoundary {
        MessageBoundary {
            protocol,
            limits,
            stack: Vec::new(),
            depth: 0,
            started: false,
            partial: Vec::with_capacity(MAX_TOKEN),
            offset: 0,
        }
    }

    /// Bytes of the current message walked so far (0 between messages).
    pub fn consumed(&self) -> usize {
        self.offset
    }

    /// Walks `bytes`, the next bytes of the stream. `Some(n)`: the current message ends `n`
    /// bytes into them (the walk is then ready for the next message, starting at byte `n`);
    /// `None`: every byte was taken and the message goes on. An error means the stream is not
    /// a well-formed message within the limits; the walk must not be fed again.
    pub fn feed(&mut self, bytes: &[u8]) -> Result<Option<usize>> {
        if !self.started {
            self.started = true;
            self.stack.push(Expect::Header);
        }
        let mut pos = 0;
        loop {
            let Some(top) = self.stack.last_mut() else {
                self.started = false;
                self.offset = 0;
                return Ok(Some(pos));
            };
            if let Expect::Skip(left) = top {
                let take = (*left).min((bytes.len() - pos) as u64);
                *left -= take;
                pos += take as usize;
                self.offset += take as usize;
                if *left > 0 {
                    return Ok(None);
                }
                self.stack.pop();
                continue;
            }
            if self.partial.is_empty() {
                match self.token(&bytes[pos..])? {
                    Some(used) => {
                        pos += used;
                        self.offset += used;
                    }
                    None => {
                        debug_assert!(bytes.len() - pos < MAX_TOKEN);
                        self.partial.extend_from_slice(&bytes[pos..]);
                        return Ok(None);
                    }
                }
            } else {
                // The token began in an earlier piece: complete it from this one.
                let held = self.partial.len();
                let add = (MAX_TOKEN - held).min(bytes.len() - pos);
                let mut window = [0u8; MAX_TOKEN];
                window[..held].copy_from_slice(&self.partial);
                window[held..held + add].copy_from_slice(&bytes[pos..pos + add]);
                match self.token(&window[..held + add])? {
                    Some(used) => {
                        // The held bytes alone did not make the token, so it takes some new ones.
                        debug_assert!(used > held);
                        pos += used - held;
                        self.offset += used;
                        self.partial.clear();
                    }
                    None => {
                        debug_assert_eq!(pos + add, bytes.len());
                        self.partial.extend_from_slice(&bytes[pos..pos + add]);
                        return Ok(None);
                    }
                }
            }
        }
    }

    /// Reads the token the stack's top expects from the start of `input` and moves the walk
    /// on; `None` (nothing changed) if `input` ends inside it.
    fn token(&mut self, input: &[u8]) -> Result<Token> {
        let top = *self.stack.last().expect("called with a non-empty stack");
        match (top, self.protocol) {
            (Expect::Header, Protocol::Binary) => {
                let Some(word) = fixed::<4>(input) else {
                    return Ok(None);
                };
                let bits = u32::from_be_bytes(word);
                // Strict binary: version 1 in the high half, a known kind in the low byte.
                if bits & 0xffff_0000 != 0x8001_0000 || !(1..=4).contains(&(bits & 0xff)) {
                    return Err(ThriftError::BadHeader {
                        offset: self.offset,
                        header: bits,
                    });
                }
                self.replace(&[
                    Expect::Value(TType::Struct),
                    Expect::Seqid,
                    Expect::NameLength,
                ]);
                Ok(Some(4))
            }
            (Expect::Header, Protocol::Compact) => {
                let Some([id, version]) = fixed::<2>(input) else {
                    return Ok(None);
                };
                if id != 0x82 || version & 0x1f != 1 || !(1..=4).contains(&(version >> 5)) {
                    return Err(ThriftError::BadHeader {
                        offset: self.offset,
                        header: u32::from_be_bytes([0, 0, id, version]),
                    });
                }
                self.replace(&[
                    Expect::Value(TType::Struct),
                    Expect::NameLength,
                    Expect::Seqid,
                ]);
                Ok(Some(2))
            }
            (Expect::NameLength, _) => {
                let Some((len, used)) = self.length(input)? else {
                    return Ok(None);
                };
                let len = self.string_len(len, "method name")?;
                self.replace(&[Expect::Skip(len)]);
                Ok(Some(used))
            }
            (Expect::Seqid, _) => {
                let Some(used) = self.integer(input, 4)? else {
                    return Ok(None);
                };
                self.stack.pop();
                Ok(Some(used))
            }
            (Expect::Skip(_), _) => unreachable!("skips are walked by `feed`"),
            (Expect::Value(ttype), _) => self.value(ttype, input),
            (Expect::Fields { last_id }, _) => self.field(last_id, input),
            (Expect::Elements { ttype, left }, _) => {
                if left == 0 {
                    self.close();
                } else {
                    self.replace(&[
                        Expect::Elements {
                            ttype,
                            left: left - 1,
                        },
                        Expect::Value(ttype),
                    ]);
                }
                Ok(Some(0))
            }
            (Expect::Entries { key, value, left }, _) => {
                if left == 0 {
                    self.close();
                } else {
                    self.replace(&[
                        Expect::Entries {
                            key,
                            value,
                            left: left - 1,
                        },
                        Expect::Value(value),
                        Expect::Value(key),
                    ]);
                }
                Ok(Some(0))
            }
        }
    }

    /// One value's token (its whole encoding for a scalar, its header for the rest).
    fn value(&mut self, ttype: TType, input: &[u8]) -> Result<Token> {
        let compact = self.protocol == Protocol::Compact;
        let used = match ttype {
            TType::Bool | TType::I8 => fixed::<1>(input).map(|_| 1),
            TType::Double => fixed::<8>(input).map(|_| 8),
            TType::I16 => self.integer(input, 2)?,
            TType::I32 => self.integer(input, 4)?,
            TType::I64 => self.integer(input, 8)?,
            TType::Binary => {
                let Some((len, used)) = self.length(input)? else {
                    return Ok(None);
                };
                let len = self.string_len(len, "string")?;
                self.replace(&[Expect::Skip(len)]);
                return Ok(Some(used));
            }
            TType::Struct => {
                self.open()?;
                self.replace(&[Expect::Fields { last_id: 0 }]);
                return Ok(Some(0));
            }
            TType::List | TType::Set if compact => {
                let Some(&header) = input.first() else {
                    return Ok(None);
                };
                let element = self.compact_type(header & 0x0f)?;
                let (count, used) = if header >> 4 == 0x0f {
                    let Some((count, used)) = varint(&input[1..], 5, self.offset)? else {
                        return Ok(None);
                    };
                    (count, used + 1)
                } else {
                    (u64::from(header >> 4), 1)
                };
                self.open_container(count, "list")?;
                self.replace(&[Expect::Elements {
                    ttype: element,
                    left: count,
                }]);
                return Ok(Some(used));
            }
            TType::List | TType::Set => {
                let Some(header) = fixed::<5>(input) else {
                    return Ok(None);
                };
                let element = self.binary_type(header[0])?;
                let count = i32::from_be_bytes([header[1], header[2], header[3], header[4]]);
                let count = self.signed_count(count, "list")?;
                self.open_container(count, "list")?;
                self.replace(&[Expect::Elements {
                    ttype: element,
                    left: count,
                }]);
                return Ok(Some(5));
            }
            TType::Map if compact => {
                let Some((count, mut used)) = varint(input, 5, self.offset)? else {
                    return Ok(None);
                };
                let (mut key, mut value) = (TType::I8, TType::I8);
                if count > 0 {
                    let Some(&types) = input.get(used) else {
                        return Ok(None);
                    };
                    key = self.compact_type(types >> 4)?;
                    value = self.compact_type(types & 0x0f)?;
                    used += 1;
                }
                self.open_container(count, "map")?;
                self.replace(&[Expect::Entries {
                    key,
                    value,
                    left: count,
                }]);
                return Ok(Some(used));
            }
            TType::Map => {
                let Some(header) = fixed::<6>(input) else {
                    return Ok(None);
                };
                let key = self.binary_type(header[0])?;
                let value = self.binary_type(header[1])?;
                let count = i32::from_be_bytes([header[2], header[3], header[4], header[5]]);
                let count = self.signed_count(count, "map")?;
                self.open_container(count, "map")?;
                self.replace(&[Expect::Entries {
                    key,
                    value,
                    left: count,
                }]);
                return Ok(Some(6));
            }
        };
        if used.is_some() {
            self.stack.pop();
        }
        Ok(used)
    }

    /// A field header, or the stop that closes the struct.
    fn field(&mut self, last_id: i16, input: &[u8]) -> Result<Token> {
        let Some(&first) = input.first() else {
            return Ok(None);
        };
        if first == 0 {
            self.close();
            return Ok(Some(1));
        }
        match self.protocol {
            Protocol::Binary => {
                let ttype = self.binary_type(first)?;
                if input.len() < 3 {
                    return Ok(None);
                }
                self.replace(&[Expect::Fields { last_id }, Expect::Value(ttype)]);
                Ok(Some(3))
            }
            Protocol::Compact => {
                let type_id = first & 0x0f;
                let ttype = self.compact_type(type_id)?;
                let delta = first >> 4;
                let (id, used) = if delta == 0 {
                    let Some((id, used)) = varint(&input[1..], 3, self.offset)? else {
                        return Ok(None);
                    };
                    (unzigzag(id) as i16, used + 1)
                } else {
                    (last_id.wrapping_add(i16::from(delta)), 1)
                };
                // A boolean field's value is its header's type id: nothing follows.
                if ttype == TType::Bool {
                    self.replace(&[Expect::Fields { last_id: id }]);
                } else {
                    self.replace(&[Expect::Fields { last_id: id }, Expect::Value(ttype)]);
                }
                Ok(Some(used))
            }
        }
    }

    /// Replaces the stack's top with `next`, the last of which is walked first.
    fn replace(&mut self, next: &[Expect]) {
        self.stack.pop();
        self.stack.extend_from_slice(next);
    }

    /// Enters a struct or container, within the depth limit.
    fn open(&mut self) -> Result<()> {
        if self.depth >= self.limits.max_depth {
            return Err(ThriftError::TooDeep {
                offset: self.offset,
                limit: self.limits.max_depth,
            });
        }
        self.depth += 1;
        Ok(())
    }

    fn open_container(&mut self, count: u64, what: &'static str) -> Result<()> {
        if count > self.limits.max_container as u64 {
            return Err(ThriftError::TooLarge {
                offset: self.offset,
                what,
                size: i64::try_from(count).unwrap_or(i64::MAX),
                limit: self.limits.max_container,
            });
        }
        self.open()
    }

    /// Leaves the struct or container on top of the stack.
    fn close(&mut self) {
        self.stack.pop();
        self.depth -= 1;
    }

    /// An integer of `width` bytes (binary: fixed, big-endian; compact: a varint of at most
    /// the bytes a value that wide can need).
    fn integer(&self, input: &[u8], width: usize) -> Result<Token> {
        match self.protocol {
            Protocol::Binary => Ok((input.len() >= width).then_some(width)),
            Protocol::Compact => {
                let max = (width * 8).div_ceil(7);
                Ok(varint(input, max, self.offset)?.map(|(_, used)| used))
            }
        }
    }

    /// A string or name length: binary i32 (may be negative, refused later), compact varint.
    fn length(&self, input: &[u8]) -> Result<Option<(i64, usize)>> {
        match self.protocol {
            Protocol::Binary => {
                Ok(fixed::<4>(input).map(|b| (i64::from(i32::from_be_bytes(b)), 4)))
            }
            Protocol::Compact => {
                Ok(varint(input, 5, self.offset)?.map(|(n, used)| (n as i64, used)))
            }
        }
    }

    fn string_len(&self, len: i64, what: &'static str) -> Result<u64> {
        match u64::try_from(len) {
            Ok(n) if n <= self.limits.max_string as u64 => Ok(n),
            _ => Err(ThriftError::TooLarge {
                offset: self.offset,
                what,
                size: len,
                limit: self.limits.max_string,
            }),
        }
    }

    fn signed_count(&self, count: i32, what: &'static str) -> Result<u64> {
        u64::try_from(count).map_err(|_| ThriftError::TooLarge {
            offset: self.offset,
            what,
            size: i64::from(count),
            limit: self.limits.max_container,
        })
    }

    fn binary_type(&self, id: u8) -> Result<TType> {
        TType::from_binary_id(id).ok_or(ThriftError::UnknownType {
            offset: self.offset,
            id,
        })
    }

    fn compact_type(&self, id: u8) -> Result<TType> {
        crate::compact::from_compact_id(id).ok_or(ThriftError::UnknownType {
            offset: self.offset,
            id,
        })
    }
}

fn fixed<const N: usize>(input: &[u8]) -> Option<[u8; N]> {
    input.get(..N).map(|b| b.try_into().expect("N bytes"))
}

/// A varint of at most `max` bytes: `None` if `input` ends inside it.
fn varint(input: &[u8], max: usize, offset: usize) -> Result<Option<(u64, usize)>> {
    let mut value = 0u64;
    for i in 0..max {
        let Some(&byte) = input.get(i) else {
            return Ok(None);
        };
        value |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Ok(Some((value, i + 1)));
        }
    }
    Err(ThriftError::BadVarint { offset })
}

fn unzigzag(n: u64) -> i64 {
    ((n >> 1) as i64) ^ -((n & 1) as i64)
}
