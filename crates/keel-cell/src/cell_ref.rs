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
    pub(crate) row: &'a [u8],
    pub(crate) family: &'a [u8],
    pub(crate) qualifier: &'a [u8],
    pub(crate) timestamp: i64,
    pub(crate) cell_type: CellType,
    pub(crate) sequence_id: u64,
    pub(crate) value: &'a [u8],
}

impl<'a> CellRef<'a> {
    /// Decodes one cell starting at `offset` in `buf`, checking it against `limits`. Returns the
    /// borrowed cell and the offset just past it.
    #[inline]
    pub fn decode(
        buf: &'a [u8],
        offset: usize,
        limits: &CellLimits,
    ) -> Result<(CellRef<'a>, usize), DecodeError> {
        let at = layout(buf, offset, limits)?;
        let cell = CellRef {
            row: &buf[at.row],
            family: &buf[at.family],
            qualifier: &buf[at.qualifier],
            timestamp: at.timestamp,
            cell_type: at.cell_type,
            sequence_id: at.sequence_id,
            value: &buf[at.value],
        };
        Ok((cell, at.end))
    }

    /// The row.
    pub fn row(&self) -> &'a [u8] {
        self.row
    }

    /// The column family.
    pub fn family(&self) -> &'a [u8] {
        self.family
    }

    /// The qualifier.
    pub fn qualifier(&self) -> &'a [u8] {
        self.qualifier
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
        Cell::joined(
            [self.row, self.family, self.qualifier, self.value],
            self.timestamp,
            self.cell_type,
            self.sequence_id,
        )
    }

    /// An owned cell whose fields share `buf`, which must be the buffer this cell borrows from
    /// (as [`Bytes::slice_ref`] requires; it panics otherwise).
    pub fn slice_cell(&self, buf: &Bytes) -> Cell {
        match self.storage_in(buf) {
            Some(storage) => self.cell_in(storage),
            None => self.to_cell(),
        }
    }

    /// The row, family, qualifier and value as one slice of `buf`: they lie back to back
    /// there, as both ways of making a `CellRef` (decoding, [`Cell::borrowed`]) leave them;
    /// `None` if they somehow do not (the caller copies). Panics, as [`Bytes::slice_ref`]
    /// would, if they do not lie in `buf`.
    fn storage_in(&self, buf: &Bytes) -> Option<Bytes> {
        let at = |part: &[u8]| part.as_ptr() as usize;
        let back_to_back = at(self.family) == at(self.row) + self.row.len()
            && at(self.qualifier) == at(self.family) + self.family.len()
            && at(self.value) == at(self.qualifier) + self.qualifier.len();
        if !back_to_back {
            return None;
        }
        let len = self.row.len() + self.family.len() + self.qualifier.len() + self.value.len();
        let start = at(self.row)
            .checked_sub(at(buf))
            .filter(|start| start + len <= buf.len())
            .expect("CellRef::slice_cell: the cell does not lie in `buf`");
        Some(buf.slice(start..start + len))
    }

    /// This cell with `storage` (holding its row, family, qualifier and value back to back)
    /// as its bytes.
    fn cell_in(&self, storage: Bytes) -> Cell {
        let (row, family) = (self.row.len(), self.family.len());
        Cell {
            key: CellKey::in_storage(
                storage,
                [row, family, row + family + self.qualifier.len()],
                self.timestamp,
                self.cell_type,
                self.sequence_id,
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use bytes::{Bytes, BytesMut};

    use crate::{Cell, CellLimits, CellRef};

    #[test]
    fn slice_cell_shares_the_buffer_and_copies_parts_that_are_apart() {
        let cell = Cell::put("row", "f", "qual", 7, "value").unwrap();
        let mut buf = BytesMut::new();
        cell.encode(&mut buf);
        let buf: Bytes = buf.freeze();
        let (view, _) = CellRef::decode(&buf, 0, &CellLimits::UNLIMITED).unwrap();
        let shared = view.slice_cell(&buf);
        assert_eq!(shared, cell);
        let inside = buf.as_ptr_range();
        assert!(inside.contains(&shared.row().as_ptr()));
        assert!(inside.contains(&shared.qualifier().as_ptr()));

        assert!(inside.contains(&shared.value().as_ptr()));

        // Parts that do not lie back to back (no decoder makes these) are copied.
        let apart = CellRef {
            qualifier: &buf[buf.len() - 5..buf.len() - 4],
            ..view
        };
        let copied = apart.slice_cell(&buf);
        assert_eq!(copied.qualifier(), &buf[buf.len() - 5..buf.len() - 4]);
        assert_eq!((copied.row(), copied.family()), (&b"row"[..], &b"f"[..]));
        assert!(!inside.contains(&copied.row().as_ptr()));
    }
}
