//! The on-disk format, byte by byte (all integers little-endian).
//!
//! A WAL is a directory of segment files. Every record has a *log sequence number* (LSN), its
//! position in the whole WAL counting from 1, one per record, never reused; a segment is named
//! after the LSN of its first record, `{first lsn:020}.wal`, so segments sort by name, and replay
//! checks that each segment starts where the previous one ended (a missing segment is an error).
//! LSNs order records within one WAL; the *sequence ids* inside entries are per region (the
//! region's MVCC write numbers) and only increase per region.
//!
//! A segment starts with a 24-byte header:
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 8 | magic `KEEL-WAL` |
//! | 8 | 4 | format version (1) |
//! | 12 | 8 | LSN of the first record (must match the file name) |
//! | 20 | 4 | CRC-32 (IEEE, crc32fast) of bytes 0..20 |
//!
//! Records follow back to back:
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 4 | payload length `n` (1 ..= max entry size) |
//! | 4 | 4 | CRC-32 of the 4 length bytes followed by the payload |
//! | 8 | n | payload: an entry |
//!
//! An entry payload: region id (u64), sequence id (u64), write time in ms (i64), then a
//! keel-cell batch (`keel_cell::encode_batch`). A length of zero ends the data: everything after
//! it must be zero (space preallocated and never written).

use bytes::{BufMut, Bytes};
use keel_cell::{
    BATCH_HEADER_LEN, CELL_HEADER_LEN, Cell, CellLimits, DecodeError, decode_batch, encode_batch,
    encoded_batch_len,
};

/// The segment magic.
pub const MAGIC: [u8; 8] = *b"KEEL-WAL";
/// The format version this code writes and reads.
pub const FORMAT_VERSION: u32 = 1;
/// Bytes of the segment header.
pub const HEADER_LEN: usize = 24;
/// Bytes of a record's frame (length + CRC) before the payload.
pub const RECORD_HEADER_LEN: usize = 8;
/// Bytes of an entry's fixed part before the cell batch.
pub const ENTRY_HEADER_LEN: usize = 24;
/// File-name suffix of a segment.
pub const SEGMENT_SUFFIX: &str = ".wal";

/// One logged edit: a batch of cells of one region at one sequence id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WalEntry {
    /// The region the edit belongs to.
    pub region: u64,
    /// The edit's sequence id (the region's MVCC write number), strictly increasing per region.
    pub sequence_id: u64,
    /// When the edit was made, in milliseconds since the epoch.
    pub write_time_ms: i64,
    /// The cells, each carrying `sequence_id`.
    pub cells: Vec<Cell>,
}

impl WalEntry {
    /// Bytes of the entry's payload.
    pub fn encoded_len(&self) -> usize {
        ENTRY_HEADER_LEN + encoded_batch_len(&self.cells)
    }

    /// Appends the payload to `out`.
    pub fn encode(&self, out: &mut impl BufMut) {
        out.put_u64_le(self.region);
        out.put_u64_le(self.sequence_id);
        out.put_i64_le(self.write_time_ms);
        encode_batch(&self.cells, out);
    }

    /// Decodes a payload; the cells slice `payload`.
    pub fn decode(payload: &Bytes) -> Result<WalEntry, DecodeError> {
        if payload.len() < ENTRY_HEADER_LEN {
            return Err(DecodeError::Truncated {
                what: "wal entry header",
                offset: 0,
                needed: ENTRY_HEADER_LEN,
                available: payload.len(),
            });
        }
        let word = |at: usize| {
            let mut le = [0u8; 8];
            le.copy_from_slice(&payload[at..at + 8]);
            le
        };
        let cells = decode_batch(&payload.slice(ENTRY_HEADER_LEN..), &CellLimits::UNLIMITED)?;
        Ok(WalEntry {
            region: u64::from_le_bytes(word(0)),
            sequence_id: u64::from_le_bytes(word(8)),
            write_time_ms: i64::from_le_bytes(word(16)),
            cells,
        })
    }
}

/// The header of the segment whose first record has LSN `first_lsn`.
pub fn encode_header(first_lsn: u64) -> [u8; HEADER_LEN] {
    let mut header = [0u8; HEADER_LEN];
    header[..8].copy_from_slice(&MAGIC);
    header[8..12].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
    header[12..20].copy_from_slice(&first_lsn.to_le_bytes());
    let crc = crc32fast::hash(&header[..20]);
    header[20..24].copy_from_slice(&crc.to_le_bytes());
    header
}

/// Frames `payload` as a record: length, CRC of length + payload, payload.
pub fn encode_record(payload: &[u8], out: &mut Vec<u8>) {
    let len = u32::try_from(payload.len())
        .unwrap_or(u32::MAX)
        .to_le_bytes();
    out.extend_from_slice(&len);
    out.extend_from_slice(&record_crc(len, payload).to_le_bytes());
    out.extend_from_slice(payload);
}

/// Appends `entry` to `out` as one record, encoded in place (no intermediate payload): the same
/// bytes as [`encode_record`] of the entry's encoding.
pub(crate) fn encode_entry_record(entry: &WalEntry, out: &mut Vec<u8>) {
    let start = out.len();
    out.extend_from_slice(&[0; RECORD_HEADER_LEN]);
    entry.encode(out);
    let len = u32::try_from(out.len() - start - RECORD_HEADER_LEN)
        .unwrap_or(u32::MAX)
        .to_le_bytes();
    let crc = record_crc(len, &out[start + RECORD_HEADER_LEN..]);
    out[start..start + 4].copy_from_slice(&len);
    out[start + 4..start + RECORD_HEADER_LEN].copy_from_slice(&crc.to_le_bytes());
}

/// Rewrites the sequence id of the entry framed in `record` (one record, as
/// [`encode_entry_record`] wrote it): the entry's and every cell's, then the record's CRC. For a
/// log that hands out sequence ids in log order, after the entry was encoded outside its lock.
/// The record is Keel's own encoding, so the walk trusts its lengths; a record it cannot walk is
/// left as it was (and `debug_assert`s).
pub(crate) fn set_record_sequence(record: &mut [u8], sequence_id: u64) {
    let patched = patch_sequence(record, sequence_id);
    debug_assert!(patched.is_some(), "a record this log encoded must walk");
}

fn patch_sequence(record: &mut [u8], sequence_id: u64) -> Option<()> {
    let seq = sequence_id.to_le_bytes();
    let payload = record.get_mut(RECORD_HEADER_LEN..)?;
    payload.get_mut(8..16)?.copy_from_slice(&seq);
    let batch = payload.get_mut(ENTRY_HEADER_LEN..)?;
    // The batch header: a version byte, then the cell count.
    let count = u32::from_le_bytes(batch.get(1..BATCH_HEADER_LEN)?.try_into().ok()?);
    let mut pos = BATCH_HEADER_LEN;
    for _ in 0..count {
        let header = batch.get_mut(pos..pos + CELL_HEADER_LEN)?;
        let row = u16::from_le_bytes([header[0], header[1]]) as usize;
        let family = header[2] as usize;
        let qualifier = u32::from_le_bytes(header[4..8].try_into().ok()?) as usize;
        let value = u32::from_le_bytes(header[8..12].try_into().ok()?) as usize;
        // The cell's sequence id (keel-cell's codec: header bytes 20..28).
        header[20..28].copy_from_slice(&seq);
        pos = pos
            .checked_add(CELL_HEADER_LEN + row + family)?
            .checked_add(qualifier)?
            .checked_add(value)?;
    }
    let len: [u8; 4] = record.get(..4)?.try_into().ok()?;
    let crc = record_crc(len, record.get(RECORD_HEADER_LEN..)?);
    record
        .get_mut(4..RECORD_HEADER_LEN)?
        .copy_from_slice(&crc.to_le_bytes());
    Some(())
}

/// The CRC a record stores: over its length bytes and its payload.
pub(crate) fn record_crc(len: [u8; 4], payload: &[u8]) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&len);
    hasher.update(payload);
    hasher.finalize()
}

/// The file name of the segment whose first record has LSN `first_lsn`.
pub fn segment_name(first_lsn: u64) -> String {
    format!("{first_lsn:020}{SEGMENT_SUFFIX}")
}

/// The first LSN a segment file name encodes, or `None` for other files.
pub fn parse_segment_name(name: &str) -> Option<u64> {
    let digits = name.strip_suffix(SEGMENT_SUFFIX)?;
    if digits.len() != 20 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_encoded_in_place_is_the_framed_payload() {
        let cells = (0..3)
            .map(|i| {
                Cell::builder(format!("row{i}"), "f")
                    .qualifier("q")
                    .timestamp(i)
                    .sequence_id(7)
                    .value(vec![i as u8; 10 * i as usize])
                    .build()
                    .expect("test setup")
            })
            .collect();
        let entry = WalEntry {
            region: 3,
            sequence_id: 7,
            write_time_ms: 1_700_000_000_000,
            cells,
        };
        let mut payload = Vec::new();
        entry.encode(&mut payload);
        let mut framed = vec![0xAA];
        encode_record(&payload, &mut framed);
        let mut in_place = vec![0xAA];
        encode_entry_record(&entry, &mut in_place);
        assert_eq!(in_place, framed);
        assert_eq!(in_place.len(), 1 + RECORD_HEADER_LEN + entry.encoded_len());
    }
}
