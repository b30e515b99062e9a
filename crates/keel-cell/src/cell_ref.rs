//! [`CellRef`]: a cell borrowed from the bytes it is encoded in (a store-file block), so a
//! reader can look at every cell of a block without building a [`Cell`]: no `Bytes` per field,
//! no reference-count traffic on the shared block, nothing to drop.

use std::cmp::Ordering;

use bytes::Bytes;

use crate::cell::Cell;
use crate::cell_type::CellType;
use crate::codec::layout;
use crate::error::DecodeError;
use crate::key::{CellKey, KeyParts};
use crate::limits::CellLimits;

/// A cell's fields borrowed from where they lie. [`CellRef::decode`] checks exactly what
/// [`Cell::decode`] checks; [`CellRef::to_cell`] makes an owned copy, and
/// [`CellRef::slice_cell`] an owned cell that shares the buffer it was decoded from.
///
/// ```
/// use bytes::{Bytes, BytesMut};
/// use keel_cell::{Cell, CellLimits, CellRef};
///
/// let cell = Cell::put("row", "cf", "q", 7, "value")?;
/// let mut buf = BytesMut::new();
/// cell.encode(&mut buf);
/// let (borrowed, end) = CellRef::decode(&buf, 0, &CellLimits::UNLIMITED)?;
/// assert_eq!((borrowed.row(), borrowed.value(), end), (&b"row"[..], &b"value"[..], buf.len()));
/// assert_eq!(borrowed.to_cell(), cell);
/// assert_eq!(cell.borrowed(), borrowed);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CellRef<'a> {
    /// Row, family and qualifier, back to back (as a [`CellKey`] holds them).
    pub(crate) coords: &'a [u8],
    pub(crate) row_len: usize,
    pub(crate) family_len: usize,
    pub(crate) timestamp: i64,
    pub(crate) cell_type: CellType,
    pub(crate) sequence_id: u64,
    pub(crate) value: &'a [u8],
}

impl<'a> CellRef<'a> {
    /// Decodes one cell starting at `offset` in `buf`, checking it against `limits`. Returns the
    /// borrowed cell and the offset just past it.
    pub fn decode(
        buf: &'a [u8],
        offset: usize,
        limits: &CellLimits,
    ) -> Result<(CellRef<'a>, usize), DecodeError> {
        let at = layout(buf, offset, limits)?;
        let cell = CellRef {
            coords: &buf[at.row.start..at.qualifier.end],
            row_len: at.row.len(),
            family_len: at.family.len(),
            timestamp: at.timestamp,
            cell_type: at.cell_type,
            sequence_id: at.sequence_id,
            value: &buf[at.value],
        };
        Ok((cell, at.end))
    }

    /// The row.
    pub fn row(&self) -> &'a [u8] {
        &self.coords[..self.row_len]
    }

    /// The column family.
    pub fn family(&self) -> &'a [u8] {
        &self.coords[self.row_len..self.row_len + self.family_len]
    }

    /// The qualifier.
    pub fn qualifier(&self) -> &'a [u8] {
        &self.coords[self.row_len + self.family_len..]
    }

    /// The timestamp.
    pub fn timestamp(&self) -> i64 {
        self.timestamp
    }

    /// The type.
    pub fn cell_type(&self) -> CellType {
        self.cell_type
    }

    /// The sequence id.
    pub fn sequence_id(&self) -> u64 {
        self.sequence_id
    }

    /// The value.
    pub fn value(&self) -> &'a [u8] {
        self.value
    }

    /// The key's fields, for comparisons.
    pub fn key_parts(&self) -> KeyParts<'a> {
        KeyParts {
            row: self.row(),
            family: self.family(),
            qualifier: self.qualifier(),
            timestamp: self.timestamp,
            type_code: self.cell_type.code(),
            sequence_id: self.sequence_id,
        }
    }

    /// How this cell's key compares with `key`, in [`CellKey`]'s order.
    pub fn cmp_key(&self, key: &CellKey) -> Ordering {
        self.key_parts().cmp_key(key)
    }

    /// An owned copy of the cell.
    pub fn to_cell(&self) -> Cell {
        Cell {
            key: self.key_with(Bytes::copy_from_slice(self.coords)),
            value: Bytes::copy_from_slice(self.value),
        }
    }

    /// An owned cell whose fields share `buf`, which must be the buffer this cell borrows from
    /// (as [`Bytes::slice_ref`] requires; it panics otherwise).
    pub fn slice_cell(&self, buf: &Bytes) -> Cell {
        Cell {
            key: self.key_with(buf.slice_ref(self.coords)),
            value: buf.slice_ref(self.value),
        }
    }

    /// This cell's key with `coords` (holding the same bytes as `self.coords`) as its storage.
    fn key_with(&self, coords: Bytes) -> CellKey {
        CellKey::from_coords(
            coords,
            self.row_len,
            self.family_len,
            self.timestamp,
            self.cell_type,
            self.sequence_id,
        )
    }
}
