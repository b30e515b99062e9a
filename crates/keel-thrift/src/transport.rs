//! Telling a connection's transport and protocol from its first bytes, and framing.
//!
//! Buffered (unframed) messages start with their protocol's header byte: `0x80` (strict
//! binary) or `0x82` (compact). Anything else is taken as a frame: a 4-byte big-endian length,
//! then a message that again starts with `0x80` or `0x82`. The old unversioned binary header
//! is not detected on a buffered connection (it would look like a frame); no current client
//! sends it.

use crate::error::{Result, ThriftError};

/// How messages are delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// Back to back; a message's end is found by decoding it.
    Buffered,
    /// Each message behind a 4-byte big-endian length.
    Framed,
}

/// How values are encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// The binary protocol.
    Binary,
    /// The compact protocol.
    Compact,
}

fn protocol_of(byte: u8) -> Option<Protocol> {
    match byte {
        0x80 => Some(Protocol::Binary),
        0x82 => Some(Protocol::Compact),
        _ => None,
    }
}

/// The transport and protocol a connection uses, from the first bytes it sent: `Ok(None)`
/// until enough have arrived (one byte for a buffered connection, five for a framed one).
pub fn detect(first: &[u8]) -> Result<Option<(Transport, Protocol)>> {
    let Some(&byte) = first.first() else {
        return Ok(None);
    };
    if let Some(protocol) = protocol_of(byte) {
        return Ok(Some((Transport::Buffered, protocol)));
    }
    let Some(&inner) = first.get(4) else {
        return Ok(None);
    };
    match protocol_of(inner) {
        Some(protocol) => Ok(Some((Transport::Framed, protocol))),
        None => Err(ThriftError::BadHeader {
            offset: 0,
            header: u32::from_be_bytes([first[0], first[1], first[2], first[3]]),
        }),
    }
}

/// A frame's length from its 4-byte prefix; longer than `max_frame` (or negative) is an error,
/// so a reader never allocates for a length it will not accept.
pub fn frame_len(prefix: [u8; 4], max_frame: usize) -> Result<usize> {
    let len = i32::from_be_bytes(prefix);
    usize::try_from(len)
        .ok()
        .filter(|&l| l <= max_frame)
        .ok_or(ThriftError::TooLarge {
            offset: 0,
            what: "frame",
            size: i64::from(len),
            limit: max_frame,
        })
}

/// `payload` behind its 4-byte length prefix.
pub fn frame(payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload.len() + 4);
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    out.extend_from_slice(payload);
    out
}
