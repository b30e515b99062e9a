//! Keel's Thrift wire format, written here rather than taken from the `thrift` crate so a
//! server can decode straight out of its pooled request buffers, bound every allocation by the
//! bytes it actually holds, and feed calls into its own executor.
//!
//! - [`Decoder`] / [`Encoder`]: one message at a time over an in-memory buffer, implemented by
//!   the binary protocol ([`BinaryDecoder`], [`BinaryEncoder`]: strict header, big-endian) and
//!   the compact protocol ([`CompactDecoder`], [`CompactEncoder`]). Struct codecs are written
//!   once against the traits. Unknown fields are skipped with [`Decoder::skip`].
//! - Limits ([`Limits`]): string length, container length, nesting depth, and the decoded
//!   message's estimated memory (`max_decoded`, charged as it is decoded and, for a container,
//!   for every element when its header is read); a container may not declare more elements than
//!   the bytes left could hold, so nothing is ever allocated for a lie. Running out of bytes is [`ThriftError::Incomplete`] (on a buffered connection: read
//!   more and decode again); every other error is a malformed message. No input makes a
//!   decoder panic.
//! - [`hbase`]: the `Hbase` service's structs, calls and replies (what happybase sends and
//!   expects), for server and client.
//! - [`Client`]: a blocking `Hbase` client on the same codec (buffered or framed, binary or
//!   compact).
//! - [`MessageBoundary`]: where a message ends on a buffered (unframed) connection, found as
//!   its bytes arrive, in time linear in them (the decoder then runs once, on the whole message).
//! - [`transport`]: buffered or framed, binary or compact, told from a connection's first
//!   bytes; frame lengths checked against a maximum before anything is read.
//!
//! ```
//! use keel_thrift::{BinaryDecoder, BinaryEncoder, Decoder, Encoder, Limits, MessageHeader,
//!     MessageType, TType};
//!
//! let mut out = BinaryEncoder::new();
//! out.write_message_begin(&MessageHeader { name: "getTableNames".into(), kind: MessageType::Call, seqid: 0 });
//! out.write_struct_begin();
//! out.write_field_begin(TType::Binary, 1);
//! out.write_string("ignored by a server that does not know field 1");
//! out.write_struct_end();
//!
//! let mut input = BinaryDecoder::new(out.take().into(), Limits::default());
//! let header = input.read_message_begin()?;
//! assert_eq!((header.name.as_str(), header.kind), ("getTableNames", MessageType::Call));
//! input.read_struct_begin()?;
//! while let Some(field) = input.read_field_begin()? {
//!     input.skip(field.ttype)?;
//! }
//! input.read_struct_end()?;
//! # Ok::<(), keel_thrift::ThriftError>(())
//! ```

#![warn(missing_docs)]

mod binary;
mod boundary;
mod client;
mod compact;
mod error;
pub mod hbase;
mod protocol;
pub mod transport;
mod types;

pub use binary::{BinaryDecoder, BinaryEncoder};
pub use boundary::MessageBoundary;
pub use client::{Client, ClientError};
pub use compact::{CompactDecoder, CompactEncoder};
pub use error::{Result, ThriftError};
pub use protocol::{
    DECODED_BINARY_COST, DECODED_ELEMENT_COST, DECODED_STRUCT_COST, Decoder, Encoder,
};
pub use types::{FieldHeader, Limits, MessageHeader, MessageType, TType};

/// The crate README's example, compiled and run as a doctest.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
