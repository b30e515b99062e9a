//! Keel's cell data model, shared by every other Keel crate.
//!
//! A [`Cell`] is HBase's `KeyValue`: row, column family, qualifier, timestamp, [`CellType`],
//! sequence id (the MVCC write number of the edit) and value. This crate defines:
//!
//! - the order cells sort in, exactly HBase's `CellComparator` ([`CellKey`]'s `Ord`), with the
//!   seek keys a scanner needs ([`CellKey::first_on_row`], [`CellKey::last_on_row`], …);
//! - the limits every cell obeys ([`MAX_ROW_LEN`], [`MAX_FAMILY_LEN`], [`CellLimits`]), checked
//!   when a cell is built and again when one is decoded;
//! - [`BlockKey`], the identity of a stored block (file id, offset), which the store-file reader
//!   and the block cache share;
//! - one explicit little-endian encoding for a cell ([`Cell::encode`], [`Cell::decode`]) and for
//!   a batch of cells ([`encode_batch`], [`decode_batch`]), used by WAL entries and store-file
//!   blocks. Decoding is zero-copy and returns a [`DecodeError`] naming the offset of any
//!   malformed input; it never panics.
//!
//! What this crate is not: it applies no delete or version semantics (keel-region does) and it
//! keeps no cells (keel-memstore and keel-storefile do).
//!
//! ```
//! use keel_cell::{Cell, CellLimits, decode_batch, encode_batch};
//!
//! let cells = vec![
//!     Cell::put("row1", "f", "a", 2, "new")?,
//!     Cell::put("row1", "f", "a", 1, "old")?,
//! ];
//! assert!(cells[0] < cells[1], "newer versions sort first");
//!
//! let mut buf = Vec::new();
//! encode_batch(&cells, &mut buf);
//! let decoded = decode_batch(&buf.into(), &CellLimits::default())?;
//! assert_eq!(decoded, cells);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod block;
mod cell;
mod cell_ref;
mod cell_type;
mod codec;
mod error;
mod key;
mod limits;
mod shared_copy;
mod take;

pub use block::BlockKey;
pub use cell::{Cell, CellBuilder};
pub use cell_ref::CellRef;
pub use cell_type::CellType;
pub use codec::{
    BATCH_FORMAT_VERSION, BATCH_HEADER_LEN, CELL_HEADER_LEN, decode_batch, encode_batch,
    encoded_batch_len,
};
pub use error::{CellError, DecodeError, escape_bytes};
pub use key::{CellKey, KeyParts, LATEST_TIMESTAMP, compare_bytes, same_bytes};
pub use limits::{CellLimits, MAX_ENCODED_CELL_LEN, MAX_FAMILY_LEN, MAX_ROW_LEN};
pub use shared_copy::{INLINE_COPY_MAX, shared_copy};
pub use take::{Decide, RunRule, Take};

/// The crate README's example, compiled and run as a doctest.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
