//! File info: what a reader learns about a file without reading its data (HBase `FileInfo`).

use std::path::Path;

use bytes::BufMut;
use keel_cell::CellKey;

use crate::bloom::BloomType;
use crate::error::Result;
use crate::format::{Compression, Cursor, Encoding, get_key, put_key};

/// Facts about a store file, written at the end and loaded at open.
#[derive(Debug, Clone, PartialEq)]
pub struct FileInfo {
    /// The first cell's key (`hfile.FIRSTKEY`).
    pub first_key: CellKey,
    /// The last cell's key (`hfile.LASTKEY`).
    pub last_key: CellKey,
    /// Highest sequence id of any cell (`MAX_SEQ_ID_KEY`).
    pub max_sequence_id: u64,
    /// Lowest and highest cell timestamp (`TIMERANGE`).
    pub timestamp_range: (i64, i64),
    /// Number of cells.
    pub entry_count: u64,
    /// Average encoded key length (`hfile.AVG_KEY_LEN`).
    pub avg_key_len: u32,
    /// Average value length (`hfile.AVG_VALUE_LEN`).
    pub avg_value_len: u32,
    /// Written by a major compaction (`MAJOR_COMPACTION_KEY`).
    pub major_compaction: bool,
    /// The general bloom filter's type (`BLOOM_FILTER_TYPE`).
    pub bloom_type: BloomType,
    /// Data block encoding.
    pub encoding: Encoding,
    /// Block compression.
    pub compression: Compression,
    /// Number of DeleteFamily / DeleteFamilyVersion markers (`DELETE_FAMILY_COUNT`).
    pub delete_family_count: u64,
    /// Number of data blocks.
    pub data_blocks: u32,
    /// Levels of the block index, root included.
    pub index_levels: u32,
    /// File length in bytes.
    pub file_len: u64,
    pub(crate) row_bloom_offset: u64,
    pub(crate) delete_bloom_offset: u64,
}

impl FileInfo {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        put_key(&mut out, &self.first_key);
        put_key(&mut out, &self.last_key);
        out.put_u64_le(self.max_sequence_id);
        out.put_i64_le(self.timestamp_range.0);
        out.put_i64_le(self.timestamp_range.1);
        out.put_u64_le(self.entry_count);
        out.put_u32_le(self.avg_key_len);
        out.put_u32_le(self.avg_value_len);
        out.put_u8(u8::from(self.major_compaction));
        out.put_u8(self.bloom_type.code());
        out.put_u8(self.encoding.code());
        out.put_u8(match self.compression {
            Compression::None => 0,
            Compression::Lz4 => 1,
        });
        out.put_u64_le(self.delete_family_count);
        out.put_u64_le(self.row_bloom_offset);
        out.put_u64_le(self.delete_bloom_offset);
        out
    }

    pub(crate) fn decode(
        path: &Path,
        offset: u64,
        payload: &[u8],
        trailer: &crate::format::Trailer,
        file_len: u64,
    ) -> Result<FileInfo> {
        let mut c = Cursor::new(payload, path, offset);
        let first_key = get_key(&mut c)?;
        let last_key = get_key(&mut c)?;
        let max_sequence_id = c.u64()?;
        let min_ts = c.u64()? as i64;
        let max_ts = c.u64()? as i64;
        let entry_count = c.u64()?;
        let avg_key_len = c.u32()?;
        let avg_value_len = c.u32()?;
        let major = c.u8()?;
        let bloom_type = BloomType::from_code(c.u8()?).ok_or_else(|| c.fail("bloom type"))?;
        let encoding = Encoding::from_code(c.u8()?).ok_or_else(|| c.fail("encoding"))?;
        let compression = match c.u8()? {
            0 => Compression::None,
            1 => Compression::Lz4,
            _ => return Err(c.fail("compression")),
        };
        let delete_family_count = c.u64()?;
        let row_bloom_offset = c.u64()?;
        let delete_bloom_offset = c.u64()?;
        if !c.is_done() || major > 1 || entry_count != trailer.entry_count || first_key > last_key {
            return Err(c.fail("file info disagrees with itself or the trailer"));
        }
        for bloom in [row_bloom_offset, delete_bloom_offset] {
            if bloom != 0 && !(trailer.data_end..trailer.root_index_offset).contains(&bloom) {
                return Err(c.fail("bloom offset outside the meta section"));
            }
        }
        Ok(FileInfo {
            first_key,
            last_key,
            max_sequence_id,
            timestamp_range: (min_ts, max_ts),
            entry_count,
            avg_key_len,
            avg_value_len,
            major_compaction: major == 1,
            bloom_type,
            encoding,
            compression,
            delete_family_count,
            data_blocks: trailer.data_blocks,
            index_levels: trailer.index_levels,
            file_len,
            row_bloom_offset,
            delete_bloom_offset,
        })
    }
}
