//! Size limits on cells: the hard format limits and the configurable maximum cell size.

use crate::error::{CellError, escape_bytes};

/// Longest row, in bytes (HBase stores the row length as a signed 16-bit integer).
pub const MAX_ROW_LEN: usize = i16::MAX as usize;

/// Longest column family name, in bytes (HBase stores it as a signed 8-bit integer).
pub const MAX_FAMILY_LEN: usize = i8::MAX as usize;

/// Largest encoded cell the format can represent: qualifier and value lengths are 32-bit.
pub const MAX_ENCODED_CELL_LEN: usize = u32::MAX as usize;

/// Policy limits applied when a cell is built or decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CellLimits {
    /// Largest encoded cell accepted, in bytes ([`crate::Cell::encoded_len`]). HBase key
    /// `hbase.server.keyvalue.maxsize`, default 10 MiB; `0` means no policy limit (as in HBase),
    /// leaving only [`MAX_ENCODED_CELL_LEN`].
    pub max_cell_size: usize,
}

impl Default for CellLimits {
    fn default() -> Self {
        CellLimits {
            max_cell_size: 10 * 1024 * 1024,
        }
    }
}

impl CellLimits {
    /// No policy limit: only the format's own limits apply.
    pub const UNLIMITED: CellLimits = CellLimits { max_cell_size: 0 };

    /// The effective maximum encoded cell size.
    #[inline]
    pub fn effective_max(&self) -> usize {
        if self.max_cell_size == 0 {
            MAX_ENCODED_CELL_LEN
        } else {
            self.max_cell_size.min(MAX_ENCODED_CELL_LEN)
        }
    }

    pub(crate) fn check_size(&self, row: &[u8], size: usize) -> Result<(), CellError> {
        let max = self.effective_max();
        if size > max {
            return Err(CellError::CellTooLarge {
                size,
                max,
                row: escape_bytes(row),
            });
        }
        Ok(())
    }
}

pub(crate) fn check_row_len(row: &[u8]) -> Result<(), CellError> {
    if row.len() > MAX_ROW_LEN {
        return Err(CellError::RowTooLong {
            len: row.len(),
            max: MAX_ROW_LEN,
            row: escape_bytes(row),
        });
    }
    Ok(())
}

pub(crate) fn check_family_len(row: &[u8], family: &[u8]) -> Result<(), CellError> {
    if family.len() > MAX_FAMILY_LEN {
        return Err(CellError::FamilyTooLong {
            len: family.len(),
            max: MAX_FAMILY_LEN,
            row: escape_bytes(row),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_matches_hbase_and_zero_means_format_limit() {
        assert_eq!(CellLimits::default().max_cell_size, 10_485_760);
        assert_eq!(CellLimits::UNLIMITED.effective_max(), MAX_ENCODED_CELL_LEN);
        assert_eq!(CellLimits { max_cell_size: 100 }.effective_max(), 100);
        assert_eq!(
            CellLimits {
                max_cell_size: usize::MAX
            }
            .effective_max(),
            MAX_ENCODED_CELL_LEN
        );
    }

    #[test]
    fn size_check_names_the_row() {
        let err = CellLimits { max_cell_size: 10 }
            .check_size(b"big", 11)
            .unwrap_err();
        assert_eq!(
            err,
            CellError::CellTooLarge {
                size: 11,
                max: 10,
                row: "\"big\"".to_string()
            }
        );
        assert_eq!(
            err.to_string(),
            "cell of 11 bytes exceeds the maximum cell size of 10 bytes (row \"big\")"
        );
    }
}
