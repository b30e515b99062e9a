//! The byte layout shared by the writer and the reader: block framing with CRC32 chunk
//! checksums, the fixed trailer, little-endian readers that fail instead of panicking, and the
//! key encoding used by index entries and file info. `docs/storefile.md` draws it byte by byte.

use std::path::Path;

use bytes::{BufMut, Bytes};
use keel_cell::{CellKey, CellType};

use crate::error::{Result, corrupt};

/// The format version written into the trailer.
pub const FORMAT_VERSION: u32 = 1;

/// Bytes of a block header.
pub(crate) const BLOCK_HEADER_LEN: usize = 24;

/// Bytes of the trailer at the end of every file.
pub(crate) const TRAILER_LEN: usize = 64;

pub(crate) const TRAILER_MAGIC: &[u8; 8] = b"KSFTRAIL";

/// The most a block may decompress to: far above any real block, low enough that a corrupt
/// size can never make the reader allocate gigabytes.
pub(crate) const MAX_BLOCK_LEN: usize = 64 << 20;

/// Block kinds, each with its 8-byte magic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BlockKind {
    Data,
    LeafIndex,
    IntermediateIndex,
    RootIndex,
    Bloom,
    FileInfo,
}

impl BlockKind {
    pub(crate) fn magic(self) -> &'static [u8; 8] {
        match self {
            BlockKind::Data => b"KDATABLK",
            BlockKind::LeafIndex => b"KIDXLEAF",
            BlockKind::IntermediateIndex => b"KIDXINTR",
            BlockKind::RootIndex => b"KIDXROOT",
            BlockKind::Bloom => b"KBLOOMBK",
            BlockKind::FileInfo => b"KFILEINF",
        }
    }
}

/// Payload codecs, as stored in the block header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Compression {
    /// Stored as is (HBase `COMPRESSION => NONE`, the default).
    #[default]
    None,
    /// LZ4 block compression (HBase `COMPRESSION => LZ4`).
    Lz4,
}

/// Data block encodings (HBase `DATA_BLOCK_ENCODING`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Encoding {
    /// Cells back to back in keel-cell's encoding (HBase `NONE`, the default).
    #[default]
    None,
    /// Each key stored as the length of the prefix it shares with the previous key plus the rest
    /// (HBase `PREFIX`/`DIFF`: rows, families and often qualifiers repeat from cell to cell).
    Diff,
}

impl Compression {
    fn code(self) -> u8 {
        match self {
            Compression::None => 0,
            Compression::Lz4 => 1,
        }
    }
    fn from_code(code: u8) -> Option<Compression> {
        match code {
            0 => Some(Compression::None),
            1 => Some(Compression::Lz4),
            _ => None,
        }
    }
}

impl Encoding {
    pub(crate) fn code(self) -> u8 {
        match self {
            Encoding::None => 0,
            Encoding::Diff => 1,
        }
    }
    pub(crate) fn from_code(code: u8) -> Option<Encoding> {
        match code {
            0 => Some(Encoding::None),
            1 => Some(Encoding::Diff),
            _ => None,
        }
    }
}

const CHECKSUM_CRC32: u8 = 1;

/// Frames `payload` (uncompressed) as a block: header, payload (compressed if asked and worth
/// it), one CRC32 per `bytes_per_checksum` chunk of header + payload.
pub(crate) fn frame_block(
    kind: BlockKind,
    payload: &[u8],
    encoding: Encoding,
    compression: Compression,
    bytes_per_checksum: u32,
    out: &mut Vec<u8>,
) {
    let compressed;
    let (stored, compression) = match compression {
        Compression::Lz4 => {
            compressed = lz4_flex::block::compress(payload);
            if compressed.len() < payload.len() {
                (&compressed[..], Compression::Lz4)
            } else {
                (payload, Compression::None)
            }
        }
        Compression::None => (payload, Compression::None),
    };
    let start = out.len();
    out.put_slice(kind.magic());
    out.put_u32_le(stored.len() as u32);
    out.put_u32_le(payload.len() as u32);
    out.put_u8(compression.code());
    out.put_u8(encoding.code());
    out.put_u8(CHECKSUM_CRC32);
    out.put_u8(0);
    out.put_u32_le(bytes_per_checksum);
    out.put_slice(stored);
    let end = out.len();
    let chunk = bytes_per_checksum.max(1) as usize;
    let mut at = start;
    while at < end {
        let stop = (at + chunk).min(end);
        let crc = crc32fast::hash(&out[at..stop]);
        out.put_u32_le(crc);
        at = stop;
    }
}

/// Total on-disk length of a block whose stored payload is `stored` bytes.
pub(crate) fn framed_len(stored: usize, bytes_per_checksum: u32) -> usize {
    let body = BLOCK_HEADER_LEN + stored;
    let chunk = bytes_per_checksum.max(1) as usize;
    body + body.div_ceil(chunk) * 4
}

/// A verified, decompressed block.
#[derive(Debug, Clone)]
pub(crate) struct RawBlock {
    pub(crate) encoding: Encoding,
    pub(crate) payload: Bytes,
}

/// Parses the header of a block at `offset`, whose first bytes are `head`; returns the block's
/// whole on-disk length.
pub(crate) fn block_len(path: &Path, offset: u64, head: &[u8]) -> Result<usize> {
    if head.len() < BLOCK_HEADER_LEN {
        return Err(corrupt(path, offset, "block header cut short"));
    }
    let stored = le_u32(&head[8..12]) as usize;
    let per = le_u32(&head[20..24]);
    if stored > MAX_BLOCK_LEN || per == 0 {
        return Err(corrupt(
            path,
            offset,
            format!("implausible block header (stored {stored}, bytes per checksum {per})"),
        ));
    }
    Ok(framed_len(stored, per))
}

/// Verifies and unpacks a whole on-disk block of the expected kind.
pub(crate) fn open_block(
    path: &Path,
    offset: u64,
    kind: BlockKind,
    block: Vec<u8>,
) -> Result<RawBlock> {
    let bytes = &block[..];
    let total = block_len(path, offset, bytes)?;
    if bytes.len() != total {
        return Err(corrupt(
            path,
            offset,
            format!("block is {} bytes, its header says {total}", bytes.len()),
        ));
    }
    let stored = le_u32(&bytes[8..12]) as usize;
    let per = le_u32(&bytes[20..24]) as usize;
    let body_end = BLOCK_HEADER_LEN + stored;
    let mut at = 0;
    let mut sum_at = body_end;
    while at < body_end {
        let stop = (at + per).min(body_end);
        let expected = le_u32(&bytes[sum_at..sum_at + 4]);
        let actual = crc32fast::hash(&bytes[at..stop]);
        if expected != actual {
            return Err(corrupt(
                path,
                offset + at as u64,
                format!("checksum mismatch: stored {expected:#010x}, computed {actual:#010x}"),
            ));
        }
        at = stop;
        sum_at += 4;
    }
    if &bytes[0..8] != kind.magic() {
        return Err(corrupt(
            path,
            offset,
            format!(
                "expected a {kind:?} block, found magic {:?}",
                escape(&bytes[0..8])
            ),
        ));
    }
    let uncompressed = le_u32(&bytes[12..16]) as usize;
    let compression = Compression::from_code(bytes[16])
        .ok_or_else(|| corrupt(path, offset, format!("unknown compression {}", bytes[16])))?;
    let encoding = Encoding::from_code(bytes[17])
        .ok_or_else(|| corrupt(path, offset, format!("unknown encoding {}", bytes[17])))?;
    if bytes[18] != CHECKSUM_CRC32 {
        return Err(corrupt(
            path,
            offset,
            format!("unknown checksum type {}", bytes[18]),
        ));
    }
    if uncompressed > MAX_BLOCK_LEN {
        return Err(corrupt(
            path,
            offset,
            format!("block claims {uncompressed} bytes"),
        ));
    }
    let stored_bytes = &bytes[BLOCK_HEADER_LEN..body_end];
    let payload = match compression {
        Compression::None => {
            if stored != uncompressed {
                return Err(corrupt(path, offset, "uncompressed block with two sizes"));
            }
            // The read buffer becomes the payload: no copy.
            Bytes::from(block).slice(BLOCK_HEADER_LEN..body_end)
        }
        Compression::Lz4 => {
            let out = lz4_flex::block::decompress(stored_bytes, uncompressed)
                .map_err(|e| corrupt(path, offset, format!("LZ4: {e}")))?;
            if out.len() != uncompressed {
                return Err(corrupt(
                    path,
                    offset,
                    "LZ4 block decompressed to the wrong size",
                ));
            }
            Bytes::from(out)
        }
    };
    Ok(RawBlock { encoding, payload })
}

fn escape(bytes: &[u8]) -> String {
    keel_cell::escape_bytes(bytes)
}

pub(crate) fn le_u32(b: &[u8]) -> u32 {
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

pub(crate) fn le_u64(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    u64::from_le_bytes(a)
}

/// The fixed trailer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Trailer {
    pub(crate) index_levels: u32,
    pub(crate) root_index_offset: u64,
    pub(crate) file_info_offset: u64,
    /// End of the data blocks (start of the index and meta section).
    pub(crate) data_end: u64,
    pub(crate) entry_count: u64,
    pub(crate) data_blocks: u32,
}

impl Trailer {
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.put_slice(TRAILER_MAGIC);
        out.put_u32_le(FORMAT_VERSION);
        out.put_u32_le(self.index_levels);
        out.put_u64_le(self.root_index_offset);
        out.put_u64_le(self.file_info_offset);
        out.put_u64_le(self.data_end);
        out.put_u64_le(self.entry_count);
        out.put_u32_le(self.data_blocks);
        out.put_u64_le(0); // reserved
        let crc = crc32fast::hash(&out[start..]);
        out.put_u32_le(crc);
        debug_assert_eq!(out.len() - start, TRAILER_LEN);
    }

    pub(crate) fn decode(path: &Path, offset: u64, b: &[u8]) -> Result<Trailer> {
        if b.len() != TRAILER_LEN || &b[0..8] != TRAILER_MAGIC {
            return Err(corrupt(path, offset, "no store-file trailer (bad magic)"));
        }
        let crc = le_u32(&b[60..64]);
        if crc != crc32fast::hash(&b[..60]) {
            return Err(corrupt(path, offset, "trailer checksum mismatch"));
        }
        let version = le_u32(&b[8..12]);
        if version != FORMAT_VERSION {
            return Err(crate::StoreFileError::Version {
                path: path.to_path_buf(),
                found: version,
                supported: FORMAT_VERSION,
            });
        }
        let t = Trailer {
            index_levels: le_u32(&b[12..16]),
            root_index_offset: le_u64(&b[16..24]),
            file_info_offset: le_u64(&b[24..32]),
            data_end: le_u64(&b[32..40]),
            entry_count: le_u64(&b[40..48]),
            data_blocks: le_u32(&b[48..52]),
        };
        let ordered = t.data_end <= t.root_index_offset
            && t.root_index_offset < t.file_info_offset
            && t.file_info_offset < offset
            && (1..=8).contains(&t.index_levels);
        if !ordered {
            return Err(corrupt(
                path,
                offset,
                format!("trailer offsets out of order: {t:?}"),
            ));
        }
        Ok(t)
    }
}

/// A cursor over bytes whose every read is checked.
pub(crate) struct Cursor<'a> {
    pub(crate) buf: &'a [u8],
    pub(crate) pos: usize,
    path: &'a Path,
    base: u64,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(buf: &'a [u8], path: &'a Path, base: u64) -> Cursor<'a> {
        Cursor {
            buf,
            pos: 0,
            path,
            base,
        }
    }

    pub(crate) fn is_done(&self) -> bool {
        self.pos >= self.buf.len()
    }

    pub(crate) fn fail(&self, what: &str) -> crate::StoreFileError {
        corrupt(
            self.path,
            self.base,
            format!("{what} at byte {} of the block", self.pos),
        )
    }

    pub(crate) fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.buf.len());
        match end {
            Some(end) => {
                let s = &self.buf[self.pos..end];
                self.pos = end;
                Ok(s)
            }
            None => Err(self.fail("truncated field")),
        }
    }

    pub(crate) fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }
    pub(crate) fn u16(&mut self) -> Result<u16> {
        let b = self.take(2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }
    pub(crate) fn u32(&mut self) -> Result<u32> {
        Ok(le_u32(self.take(4)?))
    }
    pub(crate) fn u64(&mut self) -> Result<u64> {
        Ok(le_u64(self.take(8)?))
    }
    pub(crate) fn varint(&mut self) -> Result<u64> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.u8()?;
            value |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(self.fail("varint too long"))
    }
}

pub(crate) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Key encoding for index entries and file info: row (u16 len), family (u8 len), qualifier (u32
/// len), timestamp, type code, sequence id. Seek keys (any type code) are allowed.
pub(crate) fn put_key(out: &mut Vec<u8>, key: &CellKey) {
    out.put_u16_le(key.row().len() as u16);
    out.put_slice(key.row());
    out.put_u8(key.family().len() as u8);
    out.put_slice(key.family());
    out.put_u32_le(key.qualifier().len() as u32);
    out.put_slice(key.qualifier());
    out.put_i64_le(key.timestamp());
    out.put_u8(key.cell_type().code());
    out.put_u64_le(key.sequence_id());
}

pub(crate) fn get_key(c: &mut Cursor<'_>) -> Result<CellKey> {
    let row_len = c.u16()? as usize;
    let row = Bytes::copy_from_slice(c.take(row_len)?);
    let fam_len = c.u8()? as usize;
    let family = Bytes::copy_from_slice(c.take(fam_len)?);
    let q_len = c.u32()? as usize;
    let qualifier = Bytes::copy_from_slice(c.take(q_len)?);
    let ts = c.u64()? as i64;
    let code = c.u8()?;
    let seq = c.u64()?;
    let ty = CellType::from_code(code).ok_or_else(|| c.fail("unknown cell type"))?;
    let mut key =
        CellKey::new(row, family, qualifier, ts, ty).map_err(|e| c.fail(&e.to_string()))?;
    key.set_sequence_id(seq);
    Ok(key)
}
