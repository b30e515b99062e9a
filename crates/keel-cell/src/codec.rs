//! The explicit little-endian binary encoding of a cell and of a batch of cells.
//!
//! Cell (all integers little-endian):
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 2 | row length (u16, ≤ 32 767) |
//! | 2 | 1 | family length (u8, ≤ 127) |
//! | 3 | 1 | type code |
//! | 4 | 4 | qualifier length (u32) |
//! | 8 | 4 | value length (u32) |
//! | 12 | 8 | timestamp (i64) |
//! | 20 | 8 | sequence id (u64) |
//! | 28 | … | row, family, qualifier, value |
//!
//! Batch: a version byte ([`BATCH_FORMAT_VERSION`]), a cell count (u32), then the cells back to
//! back. Checksums are the container's job (WAL entry, store-file block). Decoding slices the
//! input [`Bytes`] instead of copying and never panics: every malformed input is a
//! [`DecodeError`] naming the offset.

use std::ops::Range;

use bytes::{BufMut, Bytes};

use crate::cell::Cell;
use crate::cell_type::CellType;
use crate::error::{CellError, DecodeError};
use crate::key::CellKey;
use crate::limits::CellLimits;

/// Bytes of the fixed part of an encoded cell.
pub const CELL_HEADER_LEN: usize = 28;

/// Bytes of a batch header: version byte and cell count.
pub const BATCH_HEADER_LEN: usize = 5;

/// The batch format version this code writes and reads.
pub const BATCH_FORMAT_VERSION: u8 = 1;

/// The smallest valid encoded cell: a header, a one-byte row and a one-byte family.
const MIN_ENCODED_CELL_LEN: usize = CELL_HEADER_LEN + 2;

impl Cell {
    /// Bytes this cell takes when encoded; also the size checked against
    /// [`CellLimits::max_cell_size`].
    pub fn encoded_len(&self) -> usize {
        CELL_HEADER_LEN + self.key.storage().len()
    }

    /// Appends the encoded cell to `out`.
    ///
    /// A `Cell` always fits the format (its constructors check), so this cannot fail; `out` must
    /// be able to grow (a `Vec<u8>` or `BytesMut`) or have room for [`Cell::encoded_len`] bytes.
    pub fn encode(&self, out: &mut impl BufMut) {
        let key = &self.key;
        let storage = key.storage();
        let (row_len, family_len, coords_len) = (key.row_len, key.family_len, key.coords_len);
        // The casts cannot truncate: construction and decoding both enforce these bounds. The
        // lengths come from the key's fields, not from slicing its parts: the bounds checks of
        // four slices were a sixth of encoding a one-kilobyte cell.
        let mut header = [0u8; CELL_HEADER_LEN];
        header[0..2].copy_from_slice(&(row_len as u16).to_le_bytes());
        header[2] = family_len as u8;
        header[3] = key.cell_type.code();
        header[4..8].copy_from_slice(&(coords_len - row_len - family_len).to_le_bytes());
        header[8..12]
            .copy_from_slice(&((storage.len() - coords_len as usize) as u32).to_le_bytes());
        header[12..20].copy_from_slice(&key.timestamp.to_le_bytes());
        header[20..28].copy_from_slice(&key.sequence_id.to_le_bytes());
        out.put_slice(&header);
        // Row, family, qualifier and value, back to back as the cell holds them.
        out.put_slice(storage);
    }

    /// Decodes one cell starting at `offset` in `buf`, checking it against `limits`. Returns the
    /// cell (whose fields slice `buf`) and the offset just past it.
    #[inline]
    pub fn decode(
        buf: &Bytes,
        offset: usize,
        limits: &CellLimits,
    ) -> Result<(Cell, usize), DecodeError> {
        let mut reader = Reader { buf, pos: offset };
        let cell = reader.cell(limits)?;
        Ok((cell, reader.pos))
    }

    /// [`Cell::decode`] into `slot` (which it replaces), returning the offset just past the
    /// cell; on an error `slot` is left as it was. For a scanner that keeps its current cell
    /// in place: the cell is built where it stays, not returned through a `Result` and a tuple
    /// and copied from each (64 bytes moved in pieces that the next read of them waited for).
    #[inline]
    pub fn decode_into(
        buf: &Bytes,
        offset: usize,
        limits: &CellLimits,
        slot: &mut Option<Cell>,
    ) -> Result<usize, DecodeError> {
        let at = layout(buf, offset, limits)?;
        *slot = Some(at.slice_cell(buf, offset)?);
        Ok(at.end)
    }

    /// [`Cell::decode`] onto the end of `out`, returning the offset just past the cell; on an
    /// error `out` is left as it was. For a reader that decides on a cell after decoding it
    /// and mostly keeps it: a kept cell stays where it was built (the caller pops one it
    /// drops), instead of being moved from a slot into its results.
    #[inline]
    pub fn decode_push(
        buf: &Bytes,
        offset: usize,
        limits: &CellLimits,
        out: &mut Vec<Cell>,
    ) -> Result<usize, DecodeError> {
        let at = layout(buf, offset, limits)?;
        out.push(at.slice_cell(buf, offset)?);
        Ok(at.end)
    }
}

/// Bytes [`encode_batch`] writes for `cells`.
pub fn encoded_batch_len(cells: &[Cell]) -> usize {
    BATCH_HEADER_LEN + cells.iter().map(Cell::encoded_len).sum::<usize>()
}

/// Appends `cells` as one batch to `out`.
///
/// # Panics
/// If `cells` holds more than `u32::MAX` cells (over 120 GiB of encoded cells).
pub fn encode_batch(cells: &[Cell], out: &mut impl BufMut) {
    let count = u32::try_from(cells.len()).unwrap_or_else(|_| {
        panic!(
            "a cell batch holds at most u32::MAX cells, got {}",
            cells.len()
        )
    });
    out.put_u8(BATCH_FORMAT_VERSION);
    out.put_u32_le(count);
    for cell in cells {
        cell.encode(out);
    }
}

/// Decodes a batch that must fill `buf` exactly; the cells slice `buf`.
pub fn decode_batch(buf: &Bytes, limits: &CellLimits) -> Result<Vec<Cell>, DecodeError> {
    let mut reader = Reader { buf, pos: 0 };
    let version_offset = reader.pos;
    let version = reader.array::<1>("batch version")?[0];
    if version != BATCH_FORMAT_VERSION {
        return Err(DecodeError::UnsupportedVersion {
            version,
            offset: version_offset,
        });
    }
    let count_offset = reader.pos;
    let count = u32::from_le_bytes(reader.array::<4>("batch cell count")?);
    let available = reader.remaining();
    let max_possible = available / MIN_ENCODED_CELL_LEN;
    if count as usize > max_possible {
        return Err(DecodeError::ImpossibleCount {
            count,
            offset: count_offset,
            available,
        });
    }
    let mut cells = Vec::with_capacity(count as usize);
    for _ in 0..count {
        cells.push(reader.cell(limits)?);
    }
    if reader.remaining() > 0 {
        return Err(DecodeError::TrailingBytes {
            offset: reader.pos,
            len: reader.remaining(),
        });
    }
    Ok(cells)
}

/// A cursor over untrusted bytes; every read is bounds-checked and reports its offset.
struct Reader<'a> {
    buf: &'a Bytes,
    pos: usize,
}

impl Reader<'_> {
    fn remaining(&self) -> usize {
        self.buf.len().saturating_sub(self.pos)
    }

    fn check(&self, what: &'static str, needed: usize) -> Result<(), DecodeError> {
        let available = self.remaining();
        if needed > available {
            return Err(DecodeError::Truncated {
                what,
                offset: self.pos,
                needed,
                available,
            });
        }
        Ok(())
    }

    fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], DecodeError> {
        self.check(what, N)?;
        let mut out = [0u8; N];
        out.copy_from_slice(&self.buf[self.pos..self.pos + N]);
        self.pos += N;
        Ok(out)
    }

    #[inline]
    fn cell(&mut self, limits: &CellLimits) -> Result<Cell, DecodeError> {
        let at = layout(self.buf, self.pos, limits)?;
        let cell = at.slice_cell(self.buf, self.pos)?;
        self.pos = at.end;
        Ok(cell)
    }
}

/// Where one encoded cell's fields lie, with its fixed fields: parsed and checked once, then
/// sliced out of `Bytes` (a [`Cell`]) or borrowed (a [`crate::CellRef`]).
pub(crate) struct Layout {
    pub(crate) row: Range<usize>,
    pub(crate) family: Range<usize>,
    pub(crate) qualifier: Range<usize>,
    pub(crate) value: Range<usize>,
    pub(crate) timestamp: i64,
    pub(crate) cell_type: CellType,
    pub(crate) sequence_id: u64,
    /// Just past the cell.
    pub(crate) end: usize,
}

impl Layout {
    /// The cell these ranges describe, one slice of `buf` (the buffer they were parsed from):
    /// the row, family, qualifier and value lie back to back there. `offset` is where the cell
    /// starts, for the error.
    ///
    /// The bytes are never empty (`layout` refused an empty row), and the test saying so is
    /// there for the compiler: it removes `Bytes::slice`'s empty-range path, whose merge with
    /// the shared path kept each new cell in memory and had pushing it onto a reader's results
    /// read back, in 16-byte loads, fields just written in 8-byte stores (a stall on every cell
    /// a scan decodes).
    #[inline]
    pub(crate) fn slice_cell(&self, buf: &Bytes, offset: usize) -> Result<Cell, DecodeError> {
        let (start, end) = (self.row.start, self.value.end);
        if end <= start {
            return Err(DecodeError::InvalidCell {
                offset,
                source: CellError::EmptyRow,
            });
        }
        let key = CellKey::in_storage(
            buf.slice(start..end),
            [
                self.row.len(),
                self.family.len(),
                self.qualifier.end - self.row.start,
            ],
            self.timestamp,
            self.cell_type,
            self.sequence_id,
        );
        Ok(Cell { key })
    }
}

/// Parses and checks the cell encoded at `start` in `buf` (untrusted: every length is checked
/// against what is there before it is used). Always inlined: out of line, it returned its
/// `Layout` through memory, and the caller read the timestamp and sequence id back in one
/// 16-byte load from two 8-byte stores, a stall on every cell decoded.
#[inline(always)]
pub(crate) fn layout(buf: &[u8], start: usize, limits: &CellLimits) -> Result<Layout, DecodeError> {
    let available = buf.len().saturating_sub(start);
    let truncated = |what, offset: usize, needed| DecodeError::Truncated {
        what,
        offset,
        needed,
        available: buf.len().saturating_sub(offset),
    };
    if available < CELL_HEADER_LEN {
        return Err(truncated("cell header", start, CELL_HEADER_LEN));
    }
    let mut header = [0u8; CELL_HEADER_LEN];
    header.copy_from_slice(&buf[start..start + CELL_HEADER_LEN]);
    let row_len = usize::from(u16::from_le_bytes(field(&header, 0)));
    let [family_len] = field::<1>(&header, 2);
    let [code] = field::<1>(&header, 3);
    let qualifier_len = u32::from_le_bytes(field(&header, 4)) as usize;
    let value_len = u32::from_le_bytes(field(&header, 8)) as usize;
    let timestamp = i64::from_le_bytes(field(&header, 12));
    let sequence_id = u64::from_le_bytes(field(&header, 20));
    // A known code in line; the error (a `CellError` in a `Result`) built only for an unknown one.
    let Some(cell_type) = CellType::from_code(code) else {
        return Err(DecodeError::InvalidCell {
            offset: start,
            source: CellError::UnknownType { code },
        });
    };
    let mut pos = start + CELL_HEADER_LEN;
    let mut take = |what, len: usize| {
        if buf.len() - pos < len {
            return Err(truncated(what, pos, len));
        }
        let range = pos..pos + len;
        pos += len;
        Ok(range)
    };
    let row = take("row", row_len)?;
    let family = take("family", usize::from(family_len))?;
    let qualifier = take("qualifier", qualifier_len)?;
    let value = take("value", value_len)?;
    let end = value.end;
    Cell::validate_fields(
        &buf[row.clone()],
        &buf[family.clone()],
        qualifier_len,
        cell_type,
        value_len,
        limits,
    )
    .map_err(|source: CellError| DecodeError::InvalidCell {
        offset: start,
        source,
    })?;
    Ok(Layout {
        row,
        family,
        qualifier,
        value,
        timestamp,
        cell_type,
        sequence_id,
        end,
    })
}

/// A fixed-position field of the cell header (positions are constants, so this cannot go out of
/// bounds).
fn field<const N: usize>(header: &[u8; CELL_HEADER_LEN], at: usize) -> [u8; N] {
    let mut out = [0u8; N];
    out.copy_from_slice(&header[at..at + N]);
    out
}
