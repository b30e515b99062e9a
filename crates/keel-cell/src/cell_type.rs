//! The kind of a cell: a put or one of the four delete markers, with HBase's type codes.

use crate::error::CellError;

/// What a cell does, with HBase's `KeyValue.Type` codes.
///
/// The codes matter beyond the wire: cells with equal coordinates sort by code *descending*, so a
/// delete marker sorts before a put with the same timestamp and masks it on a scan.
/// [`CellType::Minimum`] and [`CellType::Maximum`] only appear in seek keys, never in stored cells.
///
/// Four bytes wide although every code fits in one: [`CellKey`](crate::CellKey)'s fields then
/// fill its 64 bytes with no padding, so a key or a cell moves as four aligned 16-byte copies.
/// With a one-byte type the compiler copied 61 bytes in overlapping pieces, and the load of a
/// just-moved cell waited on a failed store forward (half of the store-file scanner's own time
/// in a ten-column scan).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u32)]
pub enum CellType {
    /// Lowest code; used by "last on row/column" seek keys.
    Minimum = 0,
    /// A value.
    Put = 4,
    /// Masks exactly the version of one column with an equal timestamp.
    Delete = 8,
    /// Masks the version with an equal timestamp in every column of a family.
    DeleteFamilyVersion = 10,
    /// Masks every version of one column with a timestamp at or below its own.
    DeleteColumn = 12,
    /// Masks every version of every column of a family at or below its timestamp.
    DeleteFamily = 14,
    /// Highest code; used by "first on row/column" seek keys.
    Maximum = 255,
}

impl CellType {
    /// HBase's one-byte code for this type.
    pub const fn code(self) -> u8 {
        self as u8
    }

    /// The type with HBase code `code`, or `None` for a code HBase does not define.
    pub const fn from_code(code: u8) -> Option<CellType> {
        match code {
            0 => Some(CellType::Minimum),
            4 => Some(CellType::Put),
            8 => Some(CellType::Delete),
            10 => Some(CellType::DeleteFamilyVersion),
            12 => Some(CellType::DeleteColumn),
            14 => Some(CellType::DeleteFamily),
            255 => Some(CellType::Maximum),
            _ => None,
        }
    }

    /// True for the four delete markers.
    pub const fn is_delete(self) -> bool {
        matches!(
            self,
            CellType::Delete
                | CellType::DeleteFamilyVersion
                | CellType::DeleteColumn
                | CellType::DeleteFamily
        )
    }

    /// True for types a stored cell may have (everything but the two seek-key bounds).
    pub const fn is_storable(self) -> bool {
        !matches!(self, CellType::Minimum | CellType::Maximum)
    }
}

impl TryFrom<u8> for CellType {
    type Error = CellError;

    fn try_from(code: u8) -> Result<Self, Self::Error> {
        CellType::from_code(code).ok_or(CellError::UnknownType { code })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_match_hbase() {
        let expected = [
            (CellType::Minimum, 0),
            (CellType::Put, 4),
            (CellType::Delete, 8),
            (CellType::DeleteFamilyVersion, 10),
            (CellType::DeleteColumn, 12),
            (CellType::DeleteFamily, 14),
            (CellType::Maximum, 255),
        ];
        for (ty, code) in expected {
            assert_eq!(ty.code(), code);
            assert_eq!(CellType::try_from(code).unwrap(), ty);
        }
        let defined: Vec<u8> = expected.iter().map(|(_, c)| *c).collect();
        for code in 0..=255u8 {
            if !defined.contains(&code) {
                assert_eq!(
                    CellType::try_from(code),
                    Err(CellError::UnknownType { code })
                );
            }
        }
    }

    #[test]
    fn delete_and_storable_classification() {
        assert!(!CellType::Put.is_delete());
        assert!(CellType::DeleteFamily.is_delete());
        assert!(CellType::Put.is_storable());
        assert!(!CellType::Minimum.is_storable());
        assert!(!CellType::Maximum.is_storable());
    }
}
