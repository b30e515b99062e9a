//! Data block payloads. `NONE`: cells back to back in keel-cell's encoding, decoded in place.
//! `DIFF`: per cell, varint(shared prefix with the previous key image), varint(rest of the key
//! image), varint(value length), the rest, the value; the key image is row length, row, family
//! length, family, qualifier length, qualifier, timestamp, type, sequence id, so that cells of one
//! row and column share most of it. Reading transcodes a DIFF block to the NONE form once, so the
//! cache holds blocks ready to scan.

use std::path::Path;

use bytes::{BufMut, Bytes};
use keel_cell::{CELL_HEADER_LEN, Cell, CellLimits, CellRef};

use crate::error::Result;
use crate::format::{Cursor, Encoding, put_varint};

/// Appends `cell` to a data block payload being built in `encoding`; `prev_image` carries the
/// previous key image between calls (DIFF only).
pub(crate) fn encode_cell(
    encoding: Encoding,
    cell: &Cell,
    prev_image: &mut Vec<u8>,
    out: &mut Vec<u8>,
) {
    match encoding {
        Encoding::None => cell.encode(out),
        Encoding::Diff => {
            let mut image = Vec::with_capacity(cell.encoded_len());
            key_image(cell, &mut image);
            let shared = prev_image
                .iter()
                .zip(&image)
                .take_while(|(a, b)| a == b)
                .count();
            put_varint(out, shared as u64);
            put_varint(out, (image.len() - shared) as u64);
            put_varint(out, cell.value().len() as u64);
            out.put_slice(&image[shared..]);
            out.put_slice(cell.value());
            *prev_image = image;
        }
    }
}

fn key_image(cell: &Cell, out: &mut Vec<u8>) {
    out.put_u16_le(cell.row().len() as u16);
    out.put_slice(cell.row());
    out.put_u8(cell.family().len() as u8);
    out.put_slice(cell.family());
    out.put_u32_le(cell.qualifier().len() as u32);
    out.put_slice(cell.qualifier());
    out.put_i64_le(cell.timestamp());
    out.put_u8(cell.cell_type().code());
    out.put_u64_le(cell.sequence_id());
}

/// Turns a block payload of `encoding` into the NONE form.
pub(crate) fn to_plain(
    path: &Path,
    offset: u64,
    encoding: Encoding,
    payload: Bytes,
) -> Result<Bytes> {
    match encoding {
        Encoding::None => Ok(payload),
        Encoding::Diff => {
            let mut c = Cursor::new(&payload, path, offset);
            let mut out = Vec::with_capacity(payload.len() * 2);
            let mut image: Vec<u8> = Vec::new();
            while !c.is_done() {
                let shared = c.varint()? as usize;
                let rest = c.varint()? as usize;
                let value_len = c.varint()? as usize;
                if shared > image.len() {
                    return Err(c.fail("DIFF prefix longer than the previous key"));
                }
                image.truncate(shared);
                image.extend_from_slice(c.take(rest)?);
                let value = c.take(value_len)?;
                plain_from_image(&image, value, &mut out).map_err(|what| c.fail(what))?;
            }
            Ok(Bytes::from(out))
        }
    }
}

/// Writes the NONE encoding of the cell whose key image is `image`.
fn plain_from_image(
    image: &[u8],
    value: &[u8],
    out: &mut Vec<u8>,
) -> std::result::Result<(), &'static str> {
    let mut at = 0;
    let mut take = |n: usize| -> std::result::Result<&[u8], &'static str> {
        let end = at + n;
        if end > image.len() {
            return Err("DIFF key image cut short");
        }
        let s = &image[at..end];
        at = end;
        Ok(s)
    };
    let row_len = u16::from_le_bytes(take(2)?.try_into().map_err(|_| "row length")?) as usize;
    let row = take(row_len)?;
    let fam_len = take(1)?[0] as usize;
    let family = take(fam_len)?;
    let q_len = u32::from_le_bytes(take(4)?.try_into().map_err(|_| "qualifier length")?) as usize;
    let qualifier = take(q_len)?;
    let ts = take(8)?;
    let code = take(1)?[0];
    let seq = take(8)?;
    if at != image.len() {
        return Err("DIFF key image has trailing bytes");
    }
    out.reserve(CELL_HEADER_LEN + row_len + fam_len + q_len + value.len());
    out.put_u16_le(row_len as u16);
    out.put_u8(fam_len as u8);
    out.put_u8(code);
    out.put_u32_le(q_len as u32);
    out.put_u32_le(value.len() as u32);
    out.put_slice(ts);
    out.put_slice(seq);
    out.put_slice(row);
    out.put_slice(family);
    out.put_slice(qualifier);
    out.put_slice(value);
    Ok(())
}

/// Decodes the cell at `pos` of a plain block into `slot` (see [`Cell::decode_into`]; the cell
/// slices the block); returns the offset after the cell.
#[inline]
pub(crate) fn decode_into_at(
    path: &Path,
    offset: u64,
    block: &Bytes,
    pos: usize,
    slot: &mut Option<Cell>,
) -> Result<usize> {
    Cell::decode_into(block, pos, &CellLimits::UNLIMITED, slot).map_err(|e| {
        crate::error::corrupt(
            path,
            offset,
            format!("cell at byte {pos} of the block: {e}"),
        )
    })
}

/// [`decode_into_at`] onto the end of `out` (see [`Cell::decode_push`]).
#[inline]
pub(crate) fn decode_push_at(
    path: &Path,
    offset: u64,
    block: &Bytes,
    pos: usize,
    out: &mut Vec<Cell>,
) -> Result<usize> {
    Cell::decode_push(block, pos, &CellLimits::UNLIMITED, out).map_err(|e| {
        crate::error::corrupt(
            path,
            offset,
            format!("cell at byte {pos} of the block: {e}"),
        )
    })
}

/// [`decode_into_at`], borrowed: the cell's fields point into `block`.
#[inline]
pub(crate) fn decode_ref_at<'b>(
    path: &Path,
    offset: u64,
    block: &'b [u8],
    pos: usize,
) -> Result<(CellRef<'b>, usize)> {
    CellRef::decode(block, pos, &CellLimits::UNLIMITED).map_err(|e| {
        crate::error::corrupt(
            path,
            offset,
            format!("cell at byte {pos} of the block: {e}"),
        )
    })
}
