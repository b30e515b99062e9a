//! The cell: coordinates plus value, with validating constructors.

use std::cmp::Ordering;
use std::fmt;

use bytes::Bytes;

use crate::cell_ref::CellRef;
use crate::cell_type::CellType;
use crate::codec::CELL_HEADER_LEN;
use crate::error::{CellError, escape_bytes};
use crate::key::{CellKey, LATEST_TIMESTAMP};
use crate::limits::{CellLimits, check_family_len, check_row_len};
use crate::{MAX_FAMILY_LEN, MAX_ROW_LEN};

/// One versioned value (or delete marker) of one column of one row.
///
/// The row, family, qualifier and value lie back to back in one [`Bytes`] (as they do in the
/// encoding and in a memstore chunk), so a cell decoded from a shared buffer (a WAL entry, a
/// store-file block) is one slice of it, and cloning or dropping a cell counts one reference. A
/// `Cell` always satisfies the data model's rules: a
/// non-empty row of at most [`crate::MAX_ROW_LEN`] bytes, a non-empty family of at most
/// [`crate::MAX_FAMILY_LEN`] bytes, a storable type, and an encoded size within the
/// [`CellLimits`] it was built or decoded with.
///
/// `Ord` is HBase's `CellComparator` on the key ([`CellKey`]), with the value as a final
/// tie-break so that the order stays consistent with `Eq`.
#[derive(Clone)]
pub struct Cell {
    /// The key, whose storage holds the value after the coordinates (and nothing else).
    pub(crate) key: CellKey,
}

impl Cell {
    /// A put, checked against the default [`CellLimits`].
    ///
    /// ```
    /// let cell = keel_cell::Cell::put("row1", "f", "q", 1_700_000_000_000, "value")?;
    /// assert_eq!(cell.value(), b"value");
    /// # Ok::<(), keel_cell::CellError>(())
    /// ```
    pub fn put(
        row: impl Into<Bytes>,
        family: impl Into<Bytes>,
        qualifier: impl Into<Bytes>,
        timestamp: i64,
        value: impl Into<Bytes>,
    ) -> Result<Cell, CellError> {
        Cell::builder(row, family)
            .qualifier(qualifier)
            .timestamp(timestamp)
            .value(value)
            .build()
    }

    /// A `Delete` marker: masks the one version of the column with this exact timestamp.
    pub fn delete(
        row: impl Into<Bytes>,
        family: impl Into<Bytes>,
        qualifier: impl Into<Bytes>,
        timestamp: i64,
    ) -> Result<Cell, CellError> {
        Cell::marker(row, family, qualifier, timestamp, CellType::Delete)
    }

    /// A `DeleteColumn` marker: masks every version of the column at or below `timestamp`.
    pub fn delete_column(
        row: impl Into<Bytes>,
        family: impl Into<Bytes>,
        qualifier: impl Into<Bytes>,
        timestamp: i64,
    ) -> Result<Cell, CellError> {
        Cell::marker(row, family, qualifier, timestamp, CellType::DeleteColumn)
    }

    /// A `DeleteFamily` marker: masks every column of the family at or below `timestamp`.
    pub fn delete_family(
        row: impl Into<Bytes>,
        family: impl Into<Bytes>,
        timestamp: i64,
    ) -> Result<Cell, CellError> {
        Cell::marker(row, family, Bytes::new(), timestamp, CellType::DeleteFamily)
    }

    /// A `DeleteFamilyVersion` marker: masks the version at exactly `timestamp` in every column.
    pub fn delete_family_version(
        row: impl Into<Bytes>,
        family: impl Into<Bytes>,
        timestamp: i64,
    ) -> Result<Cell, CellError> {
        Cell::marker(
            row,
            family,
            Bytes::new(),
            timestamp,
            CellType::DeleteFamilyVersion,
        )
    }

    fn marker(
        row: impl Into<Bytes>,
        family: impl Into<Bytes>,
        qualifier: impl Into<Bytes>,
        timestamp: i64,
        cell_type: CellType,
    ) -> Result<Cell, CellError> {
        let builder = Cell::builder(row, family)
            .qualifier(qualifier)
            .timestamp(timestamp);
        builder.cell_type(cell_type).build()
    }

    /// A builder for any cell; defaults: empty qualifier, [`LATEST_TIMESTAMP`], `Put`, empty
    /// value, sequence id 0, default [`CellLimits`].
    pub fn builder(row: impl Into<Bytes>, family: impl Into<Bytes>) -> CellBuilder {
        CellBuilder {
            row: row.into(),
            family: family.into(),
            qualifier: Bytes::new(),
            timestamp: LATEST_TIMESTAMP,
            cell_type: CellType::Put,
            sequence_id: 0,
            value: Bytes::new(),
            limits: CellLimits::default(),
        }
    }

    /// Checks every rule a stored cell must satisfy, over borrowed fields: shared by the builder
    /// and the decoders (which check a cell before slicing it), so both accept exactly the same
    /// cells.
    ///
    /// A valid cell is passed inline on one test of every rule; only a cell that breaks one
    /// goes on to [`Cell::find_invalid_field`], out of line, for the error that names it (the
    /// error-building path in line cost the decoders a call and a large `Result` per cell).
    #[inline]
    pub(crate) fn validate_fields(
        row: &[u8],
        family: &[u8],
        qualifier_len: usize,
        cell_type: CellType,
        value_len: usize,
        limits: &CellLimits,
    ) -> Result<(), CellError> {
        let valid = !row.is_empty()
            && row.len() <= MAX_ROW_LEN
            && !family.is_empty()
            && family.len() <= MAX_FAMILY_LEN
            && cell_type.is_storable()
            && encoded_size(row, family, qualifier_len, value_len) <= limits.effective_max();
        if valid {
            return Ok(());
        }
        Cell::find_invalid_field(row, family, qualifier_len, cell_type, value_len, limits)
    }

    /// The rule a cell [`Cell::validate_fields`] refused breaks, as its error.
    #[cold]
    #[inline(never)]
    fn find_invalid_field(
        row: &[u8],
        family: &[u8],
        qualifier_len: usize,
        cell_type: CellType,
        value_len: usize,
        limits: &CellLimits,
    ) -> Result<(), CellError> {
        if row.is_empty() {
            return Err(CellError::EmptyRow);
        }
        check_row_len(row)?;
        if family.is_empty() {
            return Err(CellError::EmptyFamily {
                row: escape_bytes(row),
            });
        }
        check_family_len(row, family)?;
        if !cell_type.is_storable() {
            return Err(CellError::NotStorable {
                cell_type,
                row: escape_bytes(row),
            });
        }
        limits.check_size(row, encoded_size(row, family, qualifier_len, value_len))
    }

    /// This cell's fields borrowed: the form the borrowed read paths compare and hand out.
    pub fn borrowed(&self) -> CellRef<'_> {
        CellRef {
            row: self.key.row(),
            family: self.key.family(),
            qualifier: self.key.qualifier(),
            timestamp: self.key.timestamp,
            cell_type: self.key.cell_type,
            sequence_id: self.key.sequence_id,
            value: self.value(),
        }
    }

    /// The coordinates.
    pub fn key(&self) -> &CellKey {
        &self.key
    }

    /// The row.
    #[inline]
    pub fn row(&self) -> &[u8] {
        self.key.row()
    }

    /// The column family.
    #[inline]
    pub fn family(&self) -> &[u8] {
        self.key.family()
    }

    /// The column qualifier.
    #[inline]
    pub fn qualifier(&self) -> &[u8] {
        self.key.qualifier()
    }

    /// The row as [`Bytes`] sharing the cell's buffer ([`CellKey::row_bytes`]).
    pub fn row_bytes(&self) -> Bytes {
        self.key.row_bytes()
    }

    /// The column family as [`Bytes`] sharing the cell's buffer.
    pub fn family_bytes(&self) -> Bytes {
        self.key.family_bytes()
    }

    /// The column qualifier as [`Bytes`] sharing the cell's buffer.
    pub fn qualifier_bytes(&self) -> Bytes {
        self.key.qualifier_bytes()
    }

    /// Milliseconds since the epoch, or [`LATEST_TIMESTAMP`] until the region assigns one.
    pub fn timestamp(&self) -> i64 {
        self.key.timestamp
    }

    /// Put or one of the delete markers.
    pub fn cell_type(&self) -> CellType {
        self.key.cell_type
    }

    /// The MVCC write number of the edit (0 until the region assigns one).
    pub fn sequence_id(&self) -> u64 {
        self.key.sequence_id
    }

    /// The value (empty for delete markers).
    #[inline]
    pub fn value(&self) -> &[u8] {
        self.key.trailing()
    }

    /// The value as [`Bytes`] sharing the cell's buffer (a reference count, no copy).
    pub fn value_bytes(&self) -> Bytes {
        self.key.trailing_bytes()
    }

    /// This cell with its bytes taken from `storage`, which must hold a copy of its row,
    /// family, qualifier and value back to back (what [`Cell::coordinates_and_value`] gives):
    /// lets a store move a cell into memory it owns (keel-memstore's MSLAB chunks). Returns
    /// `None`, changing nothing, if `storage` does not start with the cell's row, family and
    /// qualifier or is not as long as they and the value together. (The value's bytes are not
    /// compared: that would read every value twice on a store's insert path.)
    pub fn with_storage(&self, storage: Bytes) -> Option<Cell> {
        let coords = self.key.coordinates();
        let fits = storage.len() == self.key.storage().len()
            && storage.get(..coords.len()) == Some(coords);
        debug_assert!(!fits || storage[coords.len()..] == *self.value());
        fits.then(|| Cell {
            key: self.key.moved_to(storage),
        })
    }

    /// The row, family and qualifier back to back, and the value: the two parts a store copies
    /// to make a [`Cell::with_storage`] buffer.
    #[inline]
    pub fn coordinates_and_value(&self) -> [&[u8]; 2] {
        [self.key.coordinates(), self.value()]
    }

    /// Sets the sequence id, as the region does when it applies the edit.
    pub fn set_sequence_id(&mut self, sequence_id: u64) {
        self.key.sequence_id = sequence_id;
    }

    /// Sets the timestamp, as the region does to replace [`LATEST_TIMESTAMP`] with now.
    pub fn set_timestamp(&mut self, timestamp: i64) {
        self.key.timestamp = timestamp;
    }

    /// Splits the cell into its key and value (the key keeps the cell's buffer, value
    /// included: [`Cell::from_parts`] joins them again without a copy).
    pub fn into_parts(self) -> (CellKey, Bytes) {
        let value = self.key.trailing_bytes();
        (self.key, value)
    }

    /// The key, keeping the cell's value in its buffer after the coordinates (invisible to
    /// the key's equality, hash and order): [`Cell::from_key`] gives the cell back, with no
    /// reference counted. For a store that keeps cells as keys (keel-memstore's skip list).
    pub fn into_key(self) -> CellKey {
        self.key
    }

    /// The cell whose key this is ([`Cell::into_key`]): its value is the bytes its buffer
    /// holds after the coordinates, empty for a key made on its own. `None` for a key no cell
    /// may have: a seek key's bound type, or an empty row or family.
    #[inline]
    pub fn from_key(key: CellKey) -> Option<Cell> {
        let storable = key.cell_type.is_storable()
            && !key.row().is_empty()
            && !key.family().is_empty()
            && key.row().len() <= crate::MAX_ROW_LEN
            && key.family().len() <= crate::MAX_FAMILY_LEN;
        storable.then_some(Cell { key })
    }

    /// Joins a key and a value, the inverse of [`Cell::into_parts`]. The two are copied into
    /// one buffer unless they already lie there back to back (a pair from `into_parts`). The
    /// key's limits were checked when it was made; the value's length is not checked again.
    pub fn from_parts(mut key: CellKey, value: Bytes) -> Cell {
        if value.is_empty() {
            // The coordinates alone: the buffer is cut short, not copied (a key-only read).
            key.drop_trailing();
            return Cell { key };
        }
        let trailing = key.trailing();
        let joined = trailing.as_ptr() == value.as_ptr() && trailing.len() == value.len();
        if joined || (trailing.is_empty() && value.is_empty()) {
            return Cell { key };
        }
        Cell::joined(
            [key.row(), key.family(), key.qualifier(), &value],
            key.timestamp,
            key.cell_type,
            key.sequence_id,
        )
    }

    /// A cell whose row, family, qualifier and value are copied back to back into one new
    /// buffer (no checks: every caller's fields were checked, or came from a cell).
    pub(crate) fn joined(
        [row, family, qualifier, value]: [&[u8]; 4],
        timestamp: i64,
        cell_type: CellType,
        sequence_id: u64,
    ) -> Cell {
        let coords_len = row.len() + family.len() + qualifier.len();
        let mut storage = Vec::with_capacity(coords_len + value.len());
        for part in [row, family, qualifier, value] {
            storage.extend_from_slice(part);
        }
        let key = CellKey::in_storage(
            Bytes::from(storage),
            [row.len(), family.len(), coords_len],
            timestamp,
            cell_type,
            sequence_id,
        );
        Cell { key }
    }
}

impl PartialEq for Cell {
    fn eq(&self, other: &Cell) -> bool {
        self.key == other.key && self.value() == other.value()
    }
}

impl Eq for Cell {}

impl std::hash::Hash for Cell {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.key.hash(state);
        self.value().hash(state);
    }
}

impl Ord for Cell {
    fn cmp(&self, other: &Cell) -> Ordering {
        self.key
            .cmp(&other.key)
            .then_with(|| self.value().cmp(other.value()))
    }
}

impl PartialOrd for Cell {
    fn partial_cmp(&self, other: &Cell) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Debug for Cell {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?} = {}", self.key, escape_bytes(self.value()))
    }
}

/// Builds a [`Cell`] field by field; [`CellBuilder::build`] checks every rule.
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct CellBuilder {
    row: Bytes,
    family: Bytes,
    qualifier: Bytes,
    timestamp: i64,
    cell_type: CellType,
    sequence_id: u64,
    value: Bytes,
    limits: CellLimits,
}

impl CellBuilder {
    /// Sets the qualifier (default empty).
    pub fn qualifier(mut self, qualifier: impl Into<Bytes>) -> Self {
        self.qualifier = qualifier.into();
        self
    }

    /// Sets the timestamp (default [`LATEST_TIMESTAMP`]).
    pub fn timestamp(mut self, timestamp: i64) -> Self {
        self.timestamp = timestamp;
        self
    }

    /// Sets the type (default `Put`).
    pub fn cell_type(mut self, cell_type: CellType) -> Self {
        self.cell_type = cell_type;
        self
    }

    /// Sets the sequence id (default 0).
    pub fn sequence_id(mut self, sequence_id: u64) -> Self {
        self.sequence_id = sequence_id;
        self
    }

    /// Sets the value (default empty).
    pub fn value(mut self, value: impl Into<Bytes>) -> Self {
        self.value = value.into();
        self
    }

    /// Sets the limits checked by [`CellBuilder::build`] (default [`CellLimits::default`]).
    pub fn limits(mut self, limits: CellLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Checks every rule and returns the cell, or the first rule it breaks.
    pub fn build(self) -> Result<Cell, CellError> {
        Cell::validate_fields(
            &self.row,
            &self.family,
            self.qualifier.len(),
            self.cell_type,
            self.value.len(),
            &self.limits,
        )?;
        Ok(Cell::joined(
            [&self.row, &self.family, &self.qualifier, &self.value],
            self.timestamp,
            self.cell_type,
            self.sequence_id,
        ))
    }
}

/// The bytes a cell with these fields takes encoded (saturating: a sum past `usize::MAX` is
/// too large either way).
#[inline]
fn encoded_size(row: &[u8], family: &[u8], qualifier_len: usize, value_len: usize) -> usize {
    CELL_HEADER_LEN
        .saturating_add(row.len())
        .saturating_add(family.len())
        .saturating_add(qualifier_len)
        .saturating_add(value_len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{MAX_FAMILY_LEN, MAX_ROW_LEN};

    #[test]
    fn shortcuts_set_type_and_fields() {
        let put = Cell::put("r", "f", "q", 5, "v").unwrap();
        assert_eq!(
            (put.row(), put.family(), put.qualifier()),
            (&b"r"[..], &b"f"[..], &b"q"[..])
        );
        assert_eq!(
            (put.timestamp(), put.cell_type(), put.sequence_id()),
            (5, CellType::Put, 0)
        );
        assert_eq!(
            Cell::delete("r", "f", "q", 5).unwrap().cell_type(),
            CellType::Delete
        );
        let col = Cell::delete_column("r", "f", "q", 5).unwrap();
        assert_eq!(col.cell_type(), CellType::DeleteColumn);
        let fam = Cell::delete_family("r", "f", 5).unwrap();
        assert_eq!(
            (fam.cell_type(), fam.qualifier().len()),
            (CellType::DeleteFamily, 0)
        );
        let famv = Cell::delete_family_version("r", "f", 5).unwrap();
        assert_eq!(famv.cell_type(), CellType::DeleteFamilyVersion);
        assert!(famv.value().is_empty());
    }

    #[test]
    fn builder_defaults_and_setters() {
        let cell = Cell::builder("r", "f").build().unwrap();
        assert_eq!(cell.timestamp(), LATEST_TIMESTAMP);
        assert_eq!(cell.cell_type(), CellType::Put);
        let mut cell = Cell::builder("r", "f")
            .sequence_id(9)
            .value("v")
            .build()
            .unwrap();
        assert_eq!(cell.sequence_id(), 9);
        cell.set_sequence_id(11);
        cell.set_timestamp(12);
        let (key, value) = cell.into_parts();
        assert_eq!(
            (key.sequence_id(), key.timestamp(), value.as_ref()),
            (11, 12, &b"v"[..])
        );
        let rejoined = Cell::from_parts(key.clone(), value.clone());
        assert_eq!(rejoined.into_parts(), (key, value));
    }

    #[test]
    fn every_construction_rule_is_checked() {
        assert_eq!(Cell::put("", "f", "q", 1, "v"), Err(CellError::EmptyRow));
        assert!(matches!(
            Cell::put("r", "", "q", 1, "v"),
            Err(CellError::EmptyFamily { .. })
        ));
        let row_at_limit = vec![b'r'; MAX_ROW_LEN];
        assert!(Cell::put(row_at_limit, "f", "q", 1, "v").is_ok());
        let row_over = vec![b'r'; MAX_ROW_LEN + 1];
        assert!(matches!(
            Cell::put(row_over, "f", "", 1, ""),
            Err(CellError::RowTooLong { .. })
        ));
        let family_at_limit = vec![b'f'; MAX_FAMILY_LEN];
        assert!(Cell::put("r", family_at_limit, "q", 1, "v").is_ok());
        let family_over = vec![b'f'; MAX_FAMILY_LEN + 1];
        assert!(matches!(
            Cell::put("r", family_over, "", 1, ""),
            Err(CellError::FamilyTooLong { .. })
        ));
        for bound in [CellType::Minimum, CellType::Maximum] {
            let err = Cell::builder("r", "f")
                .cell_type(bound)
                .build()
                .unwrap_err();
            assert!(matches!(err, CellError::NotStorable { cell_type, .. } if cell_type == bound));
        }
    }

    #[test]
    fn size_limit_counts_the_encoded_cell() {
        // Header + "r" + "f" + "q" + 7-byte value = 38 bytes.
        let exact = CellLimits {
            max_cell_size: CELL_HEADER_LEN + 3 + 7,
        };
        let ok = Cell::builder("r", "f")
            .qualifier("q")
            .value("1234567")
            .limits(exact)
            .build();
        assert_eq!(ok.unwrap().value().len(), 7);
        let err = Cell::builder("r", "f")
            .qualifier("q")
            .value("12345678")
            .limits(exact)
            .build()
            .unwrap_err();
        assert!(matches!(
            err,
            CellError::CellTooLarge {
                size: 39,
                max: 38,
                ..
            }
        ));
        let default_max = CellLimits::default().max_cell_size;
        let big = vec![0u8; default_max];
        assert!(matches!(
            Cell::put("r", "f", "", 0, big),
            Err(CellError::CellTooLarge { .. })
        ));
    }

    #[test]
    #[cfg(target_pointer_width = "64")]
    fn a_cell_is_one_bytes_handle_and_its_fixed_fields() {
        // The scanners move cells by value at every step: the size is a cost (docs/cell.md).
        assert_eq!(size_of::<CellKey>(), 64);
        assert_eq!(size_of::<Cell>(), 64);
    }

    #[test]
    fn with_storage_moves_bytes_but_refuses_other_ones() {
        let cell = Cell::builder("row", "f")
            .qualifier("q")
            .timestamp(3)
            .sequence_id(8)
            .value("value")
            .build()
            .unwrap();
        let storage = Bytes::from_static(b"xrowfqvalue");
        let moved = cell.with_storage(storage.slice(1..)).expect("same bytes");
        assert_eq!(moved, cell);
        assert_eq!(moved.sequence_id(), 8);
        assert_eq!(moved.row().as_ptr(), storage[1..].as_ptr());
        assert_eq!(moved.value().as_ptr(), storage[6..].as_ptr());
        assert_eq!(
            (
                moved.row(),
                moved.family(),
                moved.qualifier(),
                moved.value()
            ),
            (&b"row"[..], &b"f"[..], &b"q"[..], &b"value"[..])
        );
        assert_eq!(cell.with_storage(storage.slice(..10)), None, "too short");
        assert_eq!(
            cell.with_storage(Bytes::from_static(b"rowfrvalue")),
            None,
            "another qualifier"
        );
    }

    #[test]
    fn a_key_taken_from_a_cell_gives_the_cell_back_and_ignores_its_value() {
        let cell = Cell::put("row", "f", "q", 3, "value").unwrap();
        let other = Cell::put("row", "f", "q", 3, "other").unwrap();
        assert_ne!(cell, other, "cells differ by value");
        assert_eq!(cell.key(), other.key(), "their keys do not");
        let hash = |key: &CellKey| {
            use std::hash::{BuildHasher, RandomState};
            let state = RandomState::new();
            (state.hash_one(key), state.hash_one(key.clone()))
        };
        let (a, b) = hash(cell.key());
        assert_eq!(a, b);
        let key = cell.clone().into_key();
        assert_eq!(key.cell_value(), b"value");
        assert_eq!(Cell::from_key(key.clone()), Some(cell.clone()));
        let fresh = CellKey::new("row", "f", "q", 3, CellType::Put).unwrap();
        assert_eq!(fresh, key);
        assert!(fresh.cell_value().is_empty());
        let empty = Cell::from_key(fresh).expect("a storable key");
        assert!(empty.value().is_empty());
        for seek in [
            CellKey::first_on_row("row"),
            CellKey::first_on_column("row", "f", "q"),
        ] {
            assert_eq!(Cell::from_key(seek), None, "a seek key is no cell's");
        }
        // `into_parts` and `from_parts` rejoin without a copy; other pairs are copied.
        let (key, value) = cell.clone().into_parts();
        let rejoined = Cell::from_parts(key.clone(), value);
        assert_eq!(rejoined.row().as_ptr(), cell.row().as_ptr());
        let copied = Cell::from_parts(key, Bytes::from_static(b"new"));
        assert_eq!(copied.value(), b"new");
        assert_eq!(copied.key(), cell.key());
        assert_ne!(copied.row().as_ptr(), cell.row().as_ptr());
        // An empty value keeps the key's buffer, cut short after the coordinates (a key-only
        // read), whether or not the value was joined there.
        for key in [cell.clone().into_key(), cell.clone().into_parts().0] {
            let bare = Cell::from_parts(key, Bytes::new());
            assert!(bare.value().is_empty());
            assert_eq!(bare.key(), cell.key());
            assert_eq!(bare.row().as_ptr(), cell.row().as_ptr());
            assert_eq!(bare.encoded_len(), cell.encoded_len() - cell.value().len());
        }
    }

    #[test]
    fn order_uses_value_only_as_tie_break() {
        let a = Cell::put("r", "f", "q", 5, "a").unwrap();
        let b = Cell::put("r", "f", "q", 5, "b").unwrap();
        let newer = Cell::put("r", "f", "q", 6, "z").unwrap();
        assert!(a < b);
        assert!(newer < a);
        assert_eq!(format!("{a:?}"), "\"r\"/\"f\":\"q\"/5/Put/seq=0 = \"a\"");
    }
}
