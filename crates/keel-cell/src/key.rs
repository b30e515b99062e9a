//! Cell coordinates and HBase's `CellComparator` order over them, including seek keys.

use std::cmp::Ordering;
use std::fmt;

use bytes::Bytes;

use crate::cell_type::CellType;
use crate::error::{CellError, escape_bytes};
use crate::limits::{check_family_len, check_row_len};

/// HBase's `HConstants.LATEST_TIMESTAMP`: "no timestamp given; the server picks now".
pub const LATEST_TIMESTAMP: i64 = i64::MAX;

/// The coordinates of a cell: everything but its value.
///
/// `Ord` is exactly HBase's `CellComparatorImpl`: row ascending (unsigned bytes), family ascending,
/// qualifier ascending, timestamp *descending*, type code *descending*, sequence id *descending*.
/// A "last on row" key (empty family and qualifier, type [`CellType::Minimum`]) sorts after every
/// other key on its row. Keys are also used as seek targets: see [`CellKey::first_on_row`] and
/// friends, which are the only way to get the bound types and empty family a stored cell forbids.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct CellKey {
    pub(crate) row: Bytes,
    pub(crate) family: Bytes,
    pub(crate) qualifier: Bytes,
    pub(crate) timestamp: i64,
    pub(crate) cell_type: CellType,
    pub(crate) sequence_id: u64,
}

impl CellKey {
    /// A key with any coordinates (seek keys included). Checks only the format limits on row and
    /// family length; the stricter rules for stored cells live in [`crate::CellBuilder`].
    pub fn new(
        row: impl Into<Bytes>,
        family: impl Into<Bytes>,
        qualifier: impl Into<Bytes>,
        timestamp: i64,
        cell_type: CellType,
    ) -> Result<CellKey, CellError> {
        let row = row.into();
        let family = family.into();
        check_row_len(&row)?;
        check_family_len(&row, &family)?;
        Ok(CellKey {
            row,
            family,
            qualifier: qualifier.into(),
            timestamp,
            cell_type,
            sequence_id: 0,
        })
    }

    /// The smallest key on `row`: sorts before every cell of the row (HBase `createFirstOnRow`).
    pub fn first_on_row(row: impl Into<Bytes>) -> CellKey {
        CellKey::bound(
            row.into(),
            Bytes::new(),
            Bytes::new(),
            LATEST_TIMESTAMP,
            CellType::Maximum,
        )
    }

    /// The largest key on `row`: sorts after every cell of the row (HBase `createLastOnRow`).
    pub fn last_on_row(row: impl Into<Bytes>) -> CellKey {
        CellKey::bound(
            row.into(),
            Bytes::new(),
            Bytes::new(),
            i64::MIN,
            CellType::Minimum,
        )
    }

    /// Sorts before every version of one column (HBase `createFirstOnRowCol`).
    pub fn first_on_column(
        row: impl Into<Bytes>,
        family: impl Into<Bytes>,
        qualifier: impl Into<Bytes>,
    ) -> CellKey {
        let (row, family, qualifier) = (row.into(), family.into(), qualifier.into());
        CellKey::bound(row, family, qualifier, LATEST_TIMESTAMP, CellType::Maximum)
    }

    /// Sorts after every version of one column (HBase `createLastOnRowCol`).
    pub fn last_on_column(
        row: impl Into<Bytes>,
        family: impl Into<Bytes>,
        qualifier: impl Into<Bytes>,
    ) -> CellKey {
        let (row, family, qualifier) = (row.into(), family.into(), qualifier.into());
        CellKey::bound(row, family, qualifier, i64::MIN, CellType::Minimum)
    }

    /// Seek keys skip the length checks: they are compared, never stored.
    fn bound(
        row: Bytes,
        family: Bytes,
        qualifier: Bytes,
        timestamp: i64,
        cell_type: CellType,
    ) -> CellKey {
        CellKey {
            row,
            family,
            qualifier,
            timestamp,
            cell_type,
            sequence_id: u64::MAX,
        }
    }

    /// The row.
    pub fn row(&self) -> &Bytes {
        &self.row
    }

    /// The column family.
    pub fn family(&self) -> &Bytes {
        &self.family
    }

    /// The column qualifier.
    pub fn qualifier(&self) -> &Bytes {
        &self.qualifier
    }

    /// Milliseconds since the epoch, or [`LATEST_TIMESTAMP`].
    pub fn timestamp(&self) -> i64 {
        self.timestamp
    }

    /// Put or one of the delete markers (or a bound, for seek keys).
    pub fn cell_type(&self) -> CellType {
        self.cell_type
    }

    /// The MVCC write number of the edit (0 until the region assigns one).
    pub fn sequence_id(&self) -> u64 {
        self.sequence_id
    }

    /// Sets the sequence id, as the region does when it applies an edit.
    pub fn set_sequence_id(&mut self, sequence_id: u64) {
        self.sequence_id = sequence_id;
    }

    /// Sets the timestamp, as the region does to replace [`LATEST_TIMESTAMP`] with now.
    pub fn set_timestamp(&mut self, timestamp: i64) {
        self.timestamp = timestamp;
    }

    /// This key with its row, family and qualifier taken from other memory holding the same
    /// bytes: lets a store move a key into memory it owns (keel-memstore's MSLAB chunks).
    /// Returns `None`, changing nothing, if any of the three differs from this key's.
    pub fn with_storage(&self, row: Bytes, family: Bytes, qualifier: Bytes) -> Option<CellKey> {
        if row != self.row || family != self.family || qualifier != self.qualifier {
            return None;
        }
        Some(CellKey {
            row,
            family,
            qualifier,
            ..self.clone()
        })
    }

    /// The key's fields, borrowed.
    #[inline]
    fn parts(&self) -> KeyParts<'_> {
        KeyParts {
            row: &self.row,
            family: &self.family,
            qualifier: &self.qualifier,
            timestamp: self.timestamp,
            type_code: self.cell_type.code(),
            sequence_id: self.sequence_id,
        }
    }

    /// Compares as [`Ord`] does but ignores sequence ids (HBase `compareWithoutMvcc`-style use:
    /// "same coordinates?").
    pub fn cmp_ignoring_sequence_id(&self, other: &CellKey) -> Ordering {
        compare_parts(&self.parts(), &other.parts(), false)
    }
}

/// A key's fields borrowed from wherever they are encoded (a store file's index entry), so
/// that it can be compared with a [`CellKey`] without building one: a binary search of an
/// index block otherwise copied three byte strings out of every entry it probed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyParts<'a> {
    /// The row.
    pub row: &'a [u8],
    /// The family.
    pub family: &'a [u8],
    /// The qualifier.
    pub qualifier: &'a [u8],
    /// The timestamp.
    pub timestamp: i64,
    /// The type's code ([`CellType::code`]).
    pub type_code: u8,
    /// The sequence id.
    pub sequence_id: u64,
}

impl KeyParts<'_> {
    /// How these fields compare with `key` in `CellKey`'s order (exactly as a `CellKey` with
    /// these fields would).
    #[inline]
    pub fn cmp_key(&self, key: &CellKey) -> Ordering {
        compare_parts(self, &key.parts(), true)
    }

    /// True if this is a "last on row" key, which sorts after every other key on its row.
    #[inline]
    fn is_last_on_row(&self) -> bool {
        self.family.is_empty()
            && self.qualifier.is_empty()
            && self.type_code == CellType::Minimum.code()
    }
}

/// `CellKey`'s order over borrowed fields. A "last on row" key beats any other of its row
/// (HBase's special case); between two of them the ordinary fields decide, which keeps the
/// order total and consistent with `Eq`.
#[inline]
fn compare_parts(a: &KeyParts<'_>, b: &KeyParts<'_>, with_sequence_id: bool) -> Ordering {
    compare_bytes(a.row, b.row).then_with(|| {
        match (a.is_last_on_row(), b.is_last_on_row()) {
            (true, false) => return Ordering::Greater,
            (false, true) => return Ordering::Less,
            _ => {}
        }
        compare_bytes(a.family, b.family)
            .then_with(|| compare_bytes(a.qualifier, b.qualifier))
            .then_with(|| b.timestamp.cmp(&a.timestamp))
            .then_with(|| b.type_code.cmp(&a.type_code))
            .then_with(|| {
                if with_sequence_id {
                    b.sequence_id.cmp(&a.sequence_id)
                } else {
                    Ordering::Equal
                }
            })
    })
}

impl Ord for CellKey {
    fn cmp(&self, other: &CellKey) -> Ordering {
        compare_parts(&self.parts(), &other.parts(), true)
    }
}

impl PartialOrd for CellKey {
    fn partial_cmp(&self, other: &CellKey) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Debug for CellKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}/{}:{}/{}/{:?}/seq={}",
            escape_bytes(&self.row),
            escape_bytes(&self.family),
            escape_bytes(&self.qualifier),
            self.timestamp,
            self.cell_type,
            self.sequence_id
        )
    }
}

/// Compares byte strings as `[u8]` does (lexicographic over unsigned bytes, a prefix first),
/// deciding on the first eight bytes inline when both have them. Keys that differ early (most
/// row keys of a table, whose common prefix is short) then cost two loads and a compare instead
/// of a `memcmp` call; a profile of gets walking a block put a third of their time in `memcmp`.
#[inline]
pub fn compare_bytes(a: &[u8], b: &[u8]) -> Ordering {
    if let (Some(x), Some(y)) = (a.first_chunk::<8>(), b.first_chunk::<8>()) {
        let (x, y) = (u64::from_be_bytes(*x), u64::from_be_bytes(*y));
        if x != y {
            return x.cmp(&y);
        }
        return a[8..].cmp(&b[8..]);
    }
    a.cmp(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(
        row: &'static str,
        fam: &'static str,
        qual: &'static str,
        ts: i64,
        ty: CellType,
    ) -> CellKey {
        CellKey::new(row, fam, qual, ts, ty).unwrap()
    }

    #[test]
    fn rows_compare_as_unsigned_bytes() {
        let low = CellKey::new(vec![0x01], "f", "q", 1, CellType::Put).unwrap();
        let high = CellKey::new(vec![0xFF], "f", "q", 1, CellType::Put).unwrap();
        assert!(low < high, "0xFF must sort after 0x01 (unsigned)");
        assert!(key("a", "f", "q", 1, CellType::Put) < key("ab", "f", "q", 1, CellType::Put));
    }

    #[test]
    fn newer_timestamps_and_deletes_sort_first() {
        let newer = key("r", "f", "q", 10, CellType::Put);
        let older = key("r", "f", "q", 5, CellType::Put);
        assert!(newer < older);
        let delete = key("r", "f", "q", 5, CellType::Delete);
        assert!(
            delete < older,
            "a delete sorts before a put with the same timestamp"
        );
        let family_delete = key("r", "f", "q", 5, CellType::DeleteFamily);
        assert!(family_delete < delete);
    }

    #[test]
    fn higher_sequence_id_sorts_first() {
        let mut a = key("r", "f", "q", 5, CellType::Put);
        let mut b = a.clone();
        a.set_sequence_id(7);
        b.set_sequence_id(3);
        assert!(a < b);
        assert_eq!(a.cmp_ignoring_sequence_id(&b), Ordering::Equal);
    }

    #[test]
    fn seek_keys_bracket_a_row_and_a_column() {
        let cells = [
            key("r", "a", "", 1, CellType::Put),
            key("r", "a", "q", LATEST_TIMESTAMP, CellType::DeleteFamily),
            key("r", "z", "zz", i64::MIN, CellType::Put),
        ];
        for cell in &cells {
            assert!(CellKey::first_on_row("r") < *cell, "{cell:?}");
            assert!(CellKey::last_on_row("r") > *cell, "{cell:?}");
            assert!(CellKey::last_on_row("q") < *cell);
            assert!(CellKey::first_on_row("s") > *cell);
        }
        let col_first = CellKey::first_on_column("r", "a", "q");
        let col_last = CellKey::last_on_column("r", "a", "q");
        let version = key("r", "a", "q", 0, CellType::Put);
        assert!(col_first < version && version < col_last);
        assert!(col_last < key("r", "a", "qq", LATEST_TIMESTAMP, CellType::DeleteFamily));
        assert!(CellKey::last_on_row("r") < CellKey::first_on_row("r\0"));
    }

    #[test]
    fn new_checks_format_limits() {
        let long_row = vec![b'r'; crate::MAX_ROW_LEN + 1];
        assert!(matches!(
            CellKey::new(long_row, "f", "", 0, CellType::Put),
            Err(CellError::RowTooLong {
                len: 32_768,
                max: 32_767,
                ..
            })
        ));
        let long_family = vec![b'f'; crate::MAX_FAMILY_LEN + 1];
        assert!(matches!(
            CellKey::new("r", long_family, "", 0, CellType::Put),
            Err(CellError::FamilyTooLong {
                len: 128,
                max: 127,
                ..
            })
        ));
    }

    #[test]
    fn with_storage_moves_bytes_but_refuses_different_ones() {
        let mut k = key("row", "f", "q", 3, CellType::Put);
        k.set_sequence_id(8);
        let storage = Bytes::from_static(b"rowfq");
        let moved = k
            .with_storage(
                storage.slice(0..3),
                storage.slice(3..4),
                storage.slice(4..5),
            )
            .expect("same bytes");
        assert_eq!(moved, k);
        assert_eq!(moved.sequence_id(), 8);
        assert_eq!(moved.row().as_ptr(), storage.as_ptr());
        assert_eq!(
            k.with_storage(
                storage.slice(0..3),
                storage.slice(3..4),
                storage.slice(3..4)
            ),
            None
        );
    }

    #[test]
    fn debug_is_readable() {
        let k = key("r\x01", "f", "q", 3, CellType::Put);
        assert_eq!(format!("{k:?}"), "\"r\\x01\"/\"f\":\"q\"/3/Put/seq=0");
    }
}
