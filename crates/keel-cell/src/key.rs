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
/// other key on its row. Keys are also used as seek keys: see [`CellKey::first_on_row`] and
/// friends, which are the only way to get the bound types and empty family a stored cell forbids.
///
/// The row, family and qualifier lie back to back in one [`Bytes`] (as they do in the encoding
/// and in a memstore chunk), so a key decoded from a block or copied into a chunk slices it once:
/// cloning or dropping a key counts one reference, not three, and a key is 64 bytes, not 112.
/// A cell's key keeps the cell's value after them in the same [`Bytes`] (see [`crate::Cell`]);
/// the key's own equality, hash and order never look past the qualifier.
#[derive(Clone)]
pub struct CellKey {
    /// Row, family and qualifier, back to back; in a cell's key, its value follows.
    storage: Bytes,
    pub(crate) row_len: u32,
    pub(crate) family_len: u32,
    /// Row, family and qualifier together: where the coordinates end in `storage`.
    pub(crate) coords_len: u32,
    pub(crate) timestamp: i64,
    pub(crate) cell_type: CellType,
    pub(crate) sequence_id: u64,
}

/// A length as the key stores it. Stored keys are far below `u32::MAX` (their rows and families
/// are checked against [`crate::MAX_ROW_LEN`] and [`MAX_FAMILY_LEN`](crate::MAX_FAMILY_LEN));
/// a seek key over 4 GiB cannot arrive through any bounded request, and would only compare as
/// its first 4 GiB.
fn len32(len: usize) -> u32 {
    u32::try_from(len).unwrap_or(u32::MAX)
}

/// `row ‖ family ‖ qualifier`, sharing the one part that is not empty when the others are (a
/// row's seek keys build no buffer).
fn join_coords(row: Bytes, family: &[u8], qualifier: &[u8]) -> Bytes {
    if family.is_empty() && qualifier.is_empty() {
        return row;
    }
    let mut coords = Vec::with_capacity(row.len() + family.len() + qualifier.len());
    coords.extend_from_slice(&row);
    coords.extend_from_slice(family);
    coords.extend_from_slice(qualifier);
    Bytes::from(coords)
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
        let qualifier = qualifier.into();
        Ok(CellKey::joined(
            row, &family, &qualifier, timestamp, cell_type, 0,
        ))
    }

    /// A key from its parts, copied into one buffer (no checks).
    pub(crate) fn joined(
        row: Bytes,
        family: &[u8],
        qualifier: &[u8],
        timestamp: i64,
        cell_type: CellType,
        sequence_id: u64,
    ) -> CellKey {
        let (row_len, family_len) = (len32(row.len()), len32(family.len()));
        let coords = join_coords(row, family, qualifier);
        CellKey {
            coords_len: len32(coords.len()),
            storage: coords,
            row_len,
            family_len,
            timestamp,
            cell_type,
            sequence_id,
        }
    }

    /// A key whose row, family and qualifier are the first `coords_len` bytes of `storage`
    /// split at `row_len` and `row_len + family_len`; any bytes after them are a cell's value
    /// (no checks: the decoders check the fields first).
    pub(crate) fn in_storage(
        storage: Bytes,
        [row_len, family_len, coords_len]: [usize; 3],
        timestamp: i64,
        cell_type: CellType,
        sequence_id: u64,
    ) -> CellKey {
        debug_assert!(row_len + family_len <= coords_len && coords_len <= storage.len());
        CellKey {
            storage,
            row_len: len32(row_len),
            family_len: len32(family_len),
            coords_len: len32(coords_len),
            timestamp,
            cell_type,
            sequence_id,
        }
    }

    /// The bytes after the coordinates in this key's storage (a cell's value; none in a key
    /// made on its own).
    #[inline]
    pub(crate) fn trailing(&self) -> &[u8] {
        &self.storage[self.coords_len as usize..]
    }

    /// The value of the cell this key was taken from ([`crate::Cell::into_key`]), which its
    /// buffer holds after the coordinates; empty for a key made on its own. Borrowed: for a
    /// store that keeps cells as keys and reads them without cloning.
    #[inline]
    pub fn cell_value(&self) -> &[u8] {
        self.trailing()
    }

    /// Cuts the storage short after the coordinates (a cell's value is then empty).
    pub(crate) fn drop_trailing(&mut self) {
        self.storage.truncate(self.coords_len as usize);
    }

    /// [`CellKey::trailing`] as [`Bytes`] sharing the storage (nothing counted when empty).
    pub(crate) fn trailing_bytes(&self) -> Bytes {
        if self.storage.len() == self.coords_len as usize {
            return Bytes::new();
        }
        self.storage.slice(self.coords_len as usize..)
    }

    /// The whole storage: the coordinates, then any trailing bytes.
    pub(crate) fn storage(&self) -> &Bytes {
        &self.storage
    }

    /// This key with `storage` in place of its own, which must hold the same coordinates at
    /// its start (checked by the caller).
    pub(crate) fn moved_to(&self, storage: Bytes) -> CellKey {
        CellKey {
            storage,
            ..self.clone()
        }
    }

    /// The smallest key on `row`: sorts before every cell of the row (HBase `createFirstOnRow`).
    pub fn first_on_row(row: impl Into<Bytes>) -> CellKey {
        CellKey::bound(row.into(), &[], &[], LATEST_TIMESTAMP, CellType::Maximum)
    }

    /// The largest key on `row`: sorts after every cell of the row (HBase `createLastOnRow`).
    pub fn last_on_row(row: impl Into<Bytes>) -> CellKey {
        CellKey::bound(row.into(), &[], &[], i64::MIN, CellType::Minimum)
    }

    /// Sorts before every version of one column (HBase `createFirstOnRowCol`).
    pub fn first_on_column(
        row: impl Into<Bytes>,
        family: impl AsRef<[u8]>,
        qualifier: impl AsRef<[u8]>,
    ) -> CellKey {
        CellKey::bound(
            row.into(),
            family.as_ref(),
            qualifier.as_ref(),
            LATEST_TIMESTAMP,
            CellType::Maximum,
        )
    }

    /// Sorts after every version of one column (HBase `createLastOnRowCol`).
    pub fn last_on_column(
        row: impl Into<Bytes>,
        family: impl AsRef<[u8]>,
        qualifier: impl AsRef<[u8]>,
    ) -> CellKey {
        CellKey::bound(
            row.into(),
            family.as_ref(),
            qualifier.as_ref(),
            i64::MIN,
            CellType::Minimum,
        )
    }

    /// Sorts after every cell of `family` in `row` and before every cell of a later family
    /// there: the first key of the family `family ‖ 0`, the least name above `family` (a skip
    /// of the rest of a family, HBase's `createLastOnRowFamily` seek). Built in one buffer.
    pub fn past_family(row: &[u8], family: &[u8]) -> CellKey {
        let mut coords = Vec::with_capacity(row.len() + family.len() + 1);
        coords.extend_from_slice(row);
        coords.extend_from_slice(family);
        coords.push(0);
        CellKey {
            coords_len: len32(coords.len()),
            storage: Bytes::from(coords),
            row_len: len32(row.len()),
            family_len: len32(family.len() + 1),
            timestamp: LATEST_TIMESTAMP,
            cell_type: CellType::Maximum,
            sequence_id: u64::MAX,
        }
    }

    /// Seek keys skip the length checks: they are compared, never stored.
    fn bound(
        row: Bytes,
        family: &[u8],
        qualifier: &[u8],
        timestamp: i64,
        cell_type: CellType,
    ) -> CellKey {
        CellKey::joined(row, family, qualifier, timestamp, cell_type, u64::MAX)
    }

    /// The row.
    #[inline]
    pub fn row(&self) -> &[u8] {
        &self.storage[..self.row_len as usize]
    }

    /// The column family.
    #[inline]
    pub fn family(&self) -> &[u8] {
        &self.storage[self.row_len as usize..self.qualifier_start()]
    }

    /// The column qualifier.
    #[inline]
    pub fn qualifier(&self) -> &[u8] {
        &self.storage[self.qualifier_start()..self.coords_len as usize]
    }

    #[inline]
    fn qualifier_start(&self) -> usize {
        self.row_len as usize + self.family_len as usize
    }

    /// The row as [`Bytes`] sharing the key's buffer (a reference count, no copy).
    pub fn row_bytes(&self) -> Bytes {
        self.storage.slice(..self.row_len as usize)
    }

    /// The column family as [`Bytes`] sharing the key's buffer.
    pub fn family_bytes(&self) -> Bytes {
        self.storage
            .slice(self.row_len as usize..self.qualifier_start())
    }

    /// The column qualifier as [`Bytes`] sharing the key's buffer.
    pub fn qualifier_bytes(&self) -> Bytes {
        self.storage
            .slice(self.qualifier_start()..self.coords_len as usize)
    }

    /// The row, family and qualifier back to back; their lengths are `row().len()`,
    /// `family().len()` and `qualifier().len()`.
    #[inline]
    pub fn coordinates(&self) -> &[u8] {
        &self.storage[..self.coords_len as usize]
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

    /// Whether `other` has this key's row, family and qualifier (HBase's
    /// `CellUtil.matchingRowColumn`): one comparison of the joined bytes and two of lengths.
    #[inline]
    pub fn same_column(&self, other: &CellKey) -> bool {
        self.row_len == other.row_len
            && self.family_len == other.family_len
            && same_bytes(self.coordinates(), other.coordinates())
    }

    /// The key's fields, borrowed.
    #[inline]
    fn parts(&self) -> KeyParts<'_> {
        KeyParts {
            row: self.row(),
            family: self.family(),
            qualifier: self.qualifier(),
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

impl PartialEq for CellKey {
    fn eq(&self, other: &CellKey) -> bool {
        self.same_column(other)
            && self.timestamp == other.timestamp
            && self.cell_type == other.cell_type
            && self.sequence_id == other.sequence_id
    }
}

impl Eq for CellKey {}

impl std::hash::Hash for CellKey {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.coordinates().hash(state);
        self.row_len.hash(state);
        self.family_len.hash(state);
        self.timestamp.hash(state);
        self.cell_type.hash(state);
        self.sequence_id.hash(state);
    }
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
            escape_bytes(self.row()),
            escape_bytes(self.family()),
            escape_bytes(self.qualifier()),
            self.timestamp,
            self.cell_type,
            self.sequence_id
        )
    }
}

/// Compares byte strings as `[u8]` does (lexicographic over unsigned bytes, a prefix first),
/// eight bytes at a time as big-endian numbers, with no call to `memcmp`. Row keys are short
/// and neighbouring rows share most of their bytes (YCSB's `user…` keys share 8 to 16), so the
/// merge of a scan compared them past the first eight bytes at nearly every cell: a `memcmp`
/// call per comparison, a tenth of a ten-column scan.
///
/// What is left past the last whole eight bytes is compared as one more window that overlaps
/// the bytes already found equal (and a string under eight bytes as two overlapping halves),
/// not byte by byte: a qualifier like `field3` ended every column comparison of a ten-column
/// row in a six-step loop.
#[inline]
pub fn compare_bytes(a: &[u8], b: &[u8]) -> Ordering {
    let common = a.len().min(b.len());
    compare_same_len(&a[..common], &b[..common]).then(a.len().cmp(&b.len()))
}

/// [`compare_bytes`] for two strings of one length.
#[inline]
fn compare_same_len(a: &[u8], b: &[u8]) -> Ordering {
    debug_assert_eq!(a.len(), b.len());
    let len = a.len();
    if len >= 8 {
        let (a_chunks, _) = a.as_chunks::<8>();
        let (b_chunks, _) = b.as_chunks::<8>();
        for (x, y) in a_chunks.iter().zip(b_chunks) {
            // Tested as numbers: `!=` on the arrays stayed a call (`spec_eq`), 4% of a
            // ten-column get.
            if u64::from_ne_bytes(*x) != u64::from_ne_bytes(*y) {
                return u64::from_be_bytes(*x).cmp(&u64::from_be_bytes(*y));
            }
        }
        if len.is_multiple_of(8) {
            return Ordering::Equal;
        }
        // The last eight bytes: those before the tail are equal, so the first difference in
        // this window is the tail's, and the window orders the strings.
        return last_u64(a).cmp(&last_u64(b));
    }
    if len >= 4 {
        // The first four bytes, then the last four (overlapping them when `len` < 8): as one
        // number, the first half decides unless it is equal.
        let halves = |s: &[u8]| {
            let [first, last] = ends::<4>(s).map(u32::from_be_bytes);
            (u64::from(first) << 32) | u64::from(last)
        };
        return halves(a).cmp(&halves(b));
    }
    if len >= 2 {
        let halves = |s: &[u8]| {
            let [first, last] = ends::<2>(s).map(u16::from_be_bytes);
            (u32::from(first) << 16) | u32::from(last)
        };
        return halves(a).cmp(&halves(b));
    }
    a.first().cmp(&b.first())
}

/// The first and the last `N` bytes of `s` (at least `N` long; they overlap when it is
/// shorter than `2 * N`).
#[inline]
fn ends<const N: usize>(s: &[u8]) -> [[u8; N]; 2] {
    [s.first_chunk::<N>(), s.last_chunk::<N>()].map(|c| c.copied().unwrap_or([0; N]))
}

/// The last eight bytes of `s` (at least eight long) as a big-endian number.
#[inline]
fn last_u64(s: &[u8]) -> u64 {
    u64::from_be_bytes(s.last_chunk::<8>().copied().unwrap_or_default())
}

/// `a == b` for byte strings, compared as [`compare_bytes`] compares them (no `memcmp` call): the
/// scanners ask "same row?" of nearly every cell, and rows are short.
///
/// Equality needs no order, so each window is tested as a native-endian number, with no byte
/// swap: short enough to stay inline at every "same row?", where the ordering comparison had
/// become a call (and `==` on byte arrays is one too).
#[inline(always)]
pub fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let len = a.len();
    if len >= 8 {
        let (a_chunks, _) = a.as_chunks::<8>();
        let (b_chunks, _) = b.as_chunks::<8>();
        // Chunk by chunk as numbers: `==` on the chunk slices would call `memcmp`.
        let word = |c: &[u8; 8]| u64::from_ne_bytes(*c);
        return a_chunks
            .iter()
            .zip(b_chunks)
            .all(|(x, y)| word(x) == word(y))
            && a.last_chunk::<8>().map(word) == b.last_chunk::<8>().map(word);
    }
    if len >= 4 {
        let word = |c: &[u8; 4]| u32::from_ne_bytes(*c);
        return a.first_chunk::<4>().map(word) == b.first_chunk::<4>().map(word)
            && a.last_chunk::<4>().map(word) == b.last_chunk::<4>().map(word);
    }
    if len >= 2 {
        let word = |c: &[u8; 2]| u16::from_ne_bytes(*c);
        return a.first_chunk::<2>().map(word) == b.first_chunk::<2>().map(word)
            && a.last_chunk::<2>().map(word) == b.last_chunk::<2>().map(word);
    }
    a.first() == b.first()
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
    fn same_column_needs_the_same_split() {
        let k = key("row", "fam", "q", 3, CellType::Put);
        assert!(k.same_column(&key("row", "fam", "q", 9, CellType::Delete)));
        assert!(!k.same_column(&key("ro", "wfam", "q", 3, CellType::Put)));
        assert!(!k.same_column(&key("row", "fa", "mq", 3, CellType::Put)));
        assert!(!k.same_column(&key("row", "fam", "r", 3, CellType::Put)));
        assert!(same_bytes(b"user0000000012", b"user0000000012"));
        assert!(!same_bytes(b"user0000000012", b"user0000000013"));
        assert!(!same_bytes(b"user", b"user0"));
    }

    #[test]
    fn parts_split_where_they_were_joined() {
        let k = key("row", "fam", "", 3, CellType::Put);
        assert_eq!(
            (k.row(), k.family(), k.qualifier()),
            (&b"row"[..], &b"fam"[..], &b""[..])
        );
        assert_eq!(k.row_bytes(), "row");
        assert_eq!(k.family_bytes(), "fam");
        assert_eq!(k.coordinates(), b"rowfam");
        // Equal coordinates split differently are different keys.
        assert_ne!(k, key("ro", "wfam", "", 3, CellType::Put));
        assert_ne!(k, key("row", "fa", "m", 3, CellType::Put));
        let seek = CellKey::first_on_row("row");
        assert_eq!((seek.row(), seek.family()), (&b"row"[..], &b""[..]));
    }

    #[test]
    fn debug_is_readable() {
        let k = key("r\x01", "f", "q", 3, CellType::Put);
        assert_eq!(format!("{k:?}"), "\"r\\x01\"/\"f\":\"q\"/3/Put/seq=0");
    }
}
