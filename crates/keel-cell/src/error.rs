//! Typed errors for building and decoding cells.

use crate::cell_type::CellType;

/// A cell that breaks a limit or a rule of the data model.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CellError {
    /// A stored cell must have a non-empty row (HBase rejects an empty row too).
    #[error("row is empty")]
    EmptyRow,
    /// The row is longer than the format allows (its length is stored as an i16 in HBase).
    #[error("row of {len} bytes exceeds the maximum of {max} bytes (row {row})")]
    RowTooLong {
        /// Length of the offending row.
        len: usize,
        /// The limit, [`crate::MAX_ROW_LEN`].
        max: usize,
        /// The start of the row, escaped for printing.
        row: String,
    },
    /// A stored cell must name a column family.
    #[error("family is empty (row {row})")]
    EmptyFamily {
        /// The row, escaped for printing.
        row: String,
    },
    /// The family is longer than the format allows (its length is stored as an i8 in HBase).
    #[error("family of {len} bytes exceeds the maximum of {max} bytes (row {row})")]
    FamilyTooLong {
        /// Length of the offending family.
        len: usize,
        /// The limit, [`crate::MAX_FAMILY_LEN`].
        max: usize,
        /// The row, escaped for printing.
        row: String,
    },
    /// The encoded cell is larger than the configured maximum cell size.
    #[error("cell of {size} bytes exceeds the maximum cell size of {max} bytes (row {row})")]
    CellTooLarge {
        /// Encoded size of the cell.
        size: usize,
        /// The limit in force (see [`crate::CellLimits`]).
        max: usize,
        /// The row, escaped for printing.
        row: String,
    },
    /// A type code HBase does not define.
    #[error("unknown cell type code {code}")]
    UnknownType {
        /// The code that was read.
        code: u8,
    },
    /// `Minimum` and `Maximum` exist only in seek keys; a stored cell cannot have them.
    #[error("cell type {cell_type:?} is only valid in seek keys (row {row})")]
    NotStorable {
        /// The offending type.
        cell_type: CellType,
        /// The row, escaped for printing.
        row: String,
    },
}

/// Why a byte sequence is not a valid encoded cell or cell batch. Every variant names the byte
/// offset (from the start of the buffer handed to the decoder) where the problem was found.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The buffer ends before `what` is complete.
    #[error("truncated {what} at offset {offset}: needs {needed} bytes, {available} available")]
    Truncated {
        /// The part being read ("cell header", "row", "value", …).
        what: &'static str,
        /// Where that part starts.
        offset: usize,
        /// Bytes that part needs.
        needed: usize,
        /// Bytes left in the buffer from `offset`.
        available: usize,
    },
    /// The batch header names a format version this code does not read.
    #[error("unsupported cell batch version {version} at offset {offset}")]
    UnsupportedVersion {
        /// The version byte read.
        version: u8,
        /// Its offset.
        offset: usize,
    },
    /// The batch claims more cells than its remaining bytes could possibly hold.
    #[error("cell batch at offset {offset} claims {count} cells but only {available} bytes follow")]
    ImpossibleCount {
        /// The claimed count.
        count: u32,
        /// Offset of the count field.
        offset: usize,
        /// Bytes after the count field.
        available: usize,
    },
    /// The bytes decode, but the cell they describe breaks a limit or rule.
    #[error("invalid cell at offset {offset}: {source}")]
    InvalidCell {
        /// Offset of the cell's header.
        offset: usize,
        /// The rule it breaks.
        source: CellError,
    },
    /// Bytes remain after the last cell of a batch.
    #[error("{len} trailing bytes after the cell batch at offset {offset}")]
    TrailingBytes {
        /// Offset of the first trailing byte.
        offset: usize,
        /// How many bytes trail.
        len: usize,
    },
}

/// Renders bytes (a row, a family) for an error or log message the way HBase's
/// `Bytes.toStringBinary` does: quoted, printable ASCII as is, everything else as `\xNN`, cut after
/// 64 bytes so a huge row cannot flood a log.
///
/// ```
/// assert_eq!(keel_cell::escape_bytes(b"row\x01"), "\"row\\x01\"");
/// ```
pub fn escape_bytes(bytes: &[u8]) -> String {
    const SHOWN: usize = 64;
    let mut out = String::with_capacity(bytes.len().min(SHOWN) + 2);
    out.push('"');
    for &b in bytes.iter().take(SHOWN) {
        if b.is_ascii_graphic() || b == b' ' {
            if b == b'"' || b == b'\\' {
                out.push('\\');
            }
            out.push(b as char);
        } else {
            out.push_str(&format!("\\x{b:02X}"));
        }
    }
    out.push('"');
    if bytes.len() > SHOWN {
        out.push_str(&format!("… ({} bytes)", bytes.len()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_shows_printable_and_hex() {
        assert_eq!(escape_bytes(b"row-1"), "\"row-1\"");
        assert_eq!(escape_bytes(&[0, 255, b'a']), "\"\\x00\\xFFa\"");
        assert_eq!(escape_bytes(b"a\"b\\"), "\"a\\\"b\\\\\"");
        let long = vec![b'x'; 100];
        let shown = escape_bytes(&long);
        assert!(shown.ends_with("… (100 bytes)"), "{shown}");
        assert_eq!(shown.matches('x').count(), 64);
    }
}
