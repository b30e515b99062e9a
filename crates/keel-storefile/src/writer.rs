//! [`StoreFileWriter`]: sorted cells in, an immutable store file out, under a temporary name
//! until it is complete and synced.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use keel_cell::{Cell, CellKey, CellType, escape_bytes};
use keel_fs::{FileRef, FileSystem};

use crate::bloom::{BloomBuilder, BloomType, hash};
use crate::encoding::encode_cell;
use crate::error::{Result, StoreFileError, io};
use crate::format::{BlockKind, Compression, Encoding, Trailer, frame_block};
use crate::index::{IndexEntry, encode_index_block, separator};
use crate::info::FileInfo;

/// How a file is written. Defaults are HBase's column-family defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct WriterOptions {
    /// Target uncompressed data block size (family `BLOCKSIZE`, 65 536): a block closes once it
    /// reaches this, so blocks end a little over it.
    pub block_size: usize,
    /// Data block encoding (`DATA_BLOCK_ENCODING`, default NONE).
    pub encoding: Encoding,
    /// Block compression (`COMPRESSION`, default NONE).
    pub compression: Compression,
    /// General bloom filter (`BLOOMFILTER`, default ROW).
    pub bloom: BloomType,
    /// Bloom false-positive rate (`io.storefile.bloom.error.rate`, 0.01).
    pub bloom_error_rate: f64,
    /// Bytes covered by each CRC32 (`hbase.hstore.bytes.per.checksum`, 16 384).
    pub bytes_per_checksum: u32,
    /// Target index block size (`hfile.index.block.max.size`, 128 KiB); at least 16 entries
    /// per block (`hfile.index.block.min.entries`).
    pub index_block_size: usize,
    /// Mark the file as written by a major compaction.
    pub major_compaction: bool,
}

impl Default for WriterOptions {
    fn default() -> WriterOptions {
        WriterOptions {
            block_size: 64 * 1024,
            encoding: Encoding::None,
            compression: Compression::None,
            bloom: BloomType::Row,
            bloom_error_rate: 0.01,
            bytes_per_checksum: 16 * 1024,
            index_block_size: 128 * 1024,
            major_compaction: false,
        }
    }
}

/// Writes one store file. Cells must arrive in `CellComparator` order with no duplicate keys.
#[derive(Debug)]
pub struct StoreFileWriter {
    fs: Arc<dyn FileSystem>,
    path: PathBuf,
    tmp: PathBuf,
    file: FileRef,
    options: WriterOptions,
    /// Framed blocks not yet handed to the file.
    out: Vec<u8>,
    /// Offset in the file where `out` begins.
    out_offset: u64,
    block: Vec<u8>,
    block_first: Option<CellKey>,
    prev_image: Vec<u8>,
    last_key: Option<CellKey>,
    prev_block_last: Option<CellKey>,
    first_key: Option<CellKey>,
    leaves: Vec<IndexEntry>,
    bloom: BloomBuilder,
    delete_bloom: BloomBuilder,
    entries: u64,
    key_bytes: u64,
    value_bytes: u64,
    max_sequence_id: u64,
    timestamps: (i64, i64),
    delete_family_count: u64,
    finished: bool,
}

impl StoreFileWriter {
    /// Starts writing `path` (as `<path>.tmp` until [`StoreFileWriter::finish`]).
    pub fn create(
        fs: Arc<dyn FileSystem>,
        path: &Path,
        options: WriterOptions,
    ) -> Result<StoreFileWriter> {
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(".tmp");
        let tmp = PathBuf::from(tmp);
        let file = fs.create(&tmp).map_err(|e| io("create", &tmp, e))?;
        Ok(StoreFileWriter {
            fs,
            path: path.to_path_buf(),
            tmp,
            file,
            options,
            out: Vec::with_capacity(1 << 20),
            out_offset: 0,
            block: Vec::new(),
            block_first: None,
            prev_image: Vec::new(),
            last_key: None,
            prev_block_last: None,
            first_key: None,
            leaves: Vec::new(),
            bloom: BloomBuilder::default(),
            delete_bloom: BloomBuilder::default(),
            entries: 0,
            key_bytes: 0,
            value_bytes: 0,
            max_sequence_id: 0,
            timestamps: (i64::MAX, i64::MIN),
            delete_family_count: 0,
            finished: false,
        })
    }

    /// Appends the next cell; refuses one that does not sort after the previous.
    pub fn append(&mut self, cell: &Cell) -> Result<()> {
        if let Some(last) = &self.last_key
            && cell.key() <= last
        {
            return Err(StoreFileError::OutOfOrder {
                path: self.path.clone(),
                previous: describe(last),
                next: describe(cell.key()),
            });
        }
        // A block closes after the cell that fills it, so a block is at most one cell over
        // `block_size`; both must stay within what a reader accepts.
        let limit = crate::format::MAX_BLOCK_LEN / 2;
        if cell.encoded_len() > limit || self.options.block_size > limit {
            return Err(StoreFileError::CellTooLarge {
                path: self.path.clone(),
                row: escape_bytes(cell.row()),
                size: cell.encoded_len(),
                limit,
            });
        }
        if self.block_first.is_none() {
            self.block_first = Some(cell.key().clone());
        }
        if self.first_key.is_none() {
            self.first_key = Some(cell.key().clone());
        }
        encode_cell(
            self.options.encoding,
            cell,
            &mut self.prev_image,
            &mut self.block,
        );
        match self.options.bloom {
            BloomType::None => {}
            BloomType::Row => self.bloom.add(hash(&[cell.row()])),
            BloomType::RowCol => {
                self.bloom
                    .add(hash(&[cell.row(), cell.family(), cell.qualifier()]))
            }
        }
        if matches!(
            cell.cell_type(),
            CellType::DeleteFamily | CellType::DeleteFamilyVersion
        ) {
            self.delete_bloom.add(hash(&[cell.row()]));
            self.delete_family_count += 1;
        }
        self.entries += 1;
        self.key_bytes += (cell.encoded_len() - cell.value().len()) as u64;
        self.value_bytes += cell.value().len() as u64;
        self.max_sequence_id = self.max_sequence_id.max(cell.sequence_id());
        self.timestamps.0 = self.timestamps.0.min(cell.timestamp());
        self.timestamps.1 = self.timestamps.1.max(cell.timestamp());
        self.last_key = Some(cell.key().clone());
        if self.block.len() >= self.options.block_size {
            self.close_block()?;
        }
        Ok(())
    }

    /// Cells appended so far.
    pub fn entries(&self) -> u64 {
        self.entries
    }

    fn offset(&self) -> u64 {
        self.out_offset + self.out.len() as u64
    }

    fn close_block(&mut self) -> Result<()> {
        let Some(first) = self.block_first.take() else {
            return Ok(());
        };
        let key = match &self.prev_block_last {
            Some(prev) => separator(prev, &first),
            None => first,
        };
        let offset = self.offset();
        let payload = std::mem::take(&mut self.block);
        self.write_block(BlockKind::Data, &payload, self.options.encoding)?;
        let len = (self.offset() - offset) as u32;
        self.leaves.push(IndexEntry { key, offset, len });
        self.prev_block_last = self.last_key.clone();
        self.prev_image.clear();
        self.block = payload;
        self.block.clear();
        Ok(())
    }

    fn write_block(&mut self, kind: BlockKind, payload: &[u8], encoding: Encoding) -> Result<()> {
        frame_block(
            kind,
            payload,
            encoding,
            self.options.compression,
            self.options.bytes_per_checksum,
            &mut self.out,
        );
        if self.out.len() >= 1 << 20 {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        if !self.out.is_empty() {
            self.file
                .append(&self.out)
                .map_err(|e| io("write", &self.tmp, e))?;
            self.out_offset += self.out.len() as u64;
            self.out.clear();
        }
        Ok(())
    }

    /// Writes the index, bloom filters, file info and trailer, syncs, and renames the file to its
    /// real name (then syncs the directory). Returns the file info.
    pub fn finish(mut self) -> Result<FileInfo> {
        self.close_block()?;
        let (Some(first_key), Some(last_key)) = (self.first_key.clone(), self.last_key.clone())
        else {
            return Err(StoreFileError::Empty {
                path: self.path.clone(),
            });
        };
        let data_end = self.offset();
        let data_blocks = self.leaves.len() as u32;
        // Index levels below the root, bottom up, until the entries fit one block.
        let per_block = self.index_fanout();
        let mut level = std::mem::take(&mut self.leaves);
        let mut levels = 1u32;
        while level.len() > per_block {
            let kind = if levels == 1 {
                BlockKind::LeafIndex
            } else {
                BlockKind::IntermediateIndex
            };
            let mut parents = Vec::with_capacity(level.len() / per_block + 1);
            for chunk in level.chunks(per_block) {
                let offset = self.offset();
                self.write_block(kind, &encode_index_block(chunk), Encoding::None)?;
                let len = (self.offset() - offset) as u32;
                parents.push(IndexEntry {
                    key: chunk[0].key.clone(),
                    offset,
                    len,
                });
            }
            level = parents;
            levels += 1;
        }
        let mut row_bloom_offset = 0;
        let bloom = std::mem::take(&mut self.bloom);
        if self.options.bloom != BloomType::None && !bloom.is_empty() {
            row_bloom_offset = self.offset();
            let payload = bloom.finish(self.options.bloom_error_rate);
            self.write_block(BlockKind::Bloom, &payload, Encoding::None)?;
        }
        let mut delete_bloom_offset = 0;
        let delete_bloom = std::mem::take(&mut self.delete_bloom);
        if !delete_bloom.is_empty() {
            delete_bloom_offset = self.offset();
            let payload = delete_bloom.finish(self.options.bloom_error_rate);
            self.write_block(BlockKind::Bloom, &payload, Encoding::None)?;
        }
        let root_index_offset = self.offset();
        self.write_block(
            BlockKind::RootIndex,
            &encode_index_block(&level),
            Encoding::None,
        )?;
        let file_info_offset = self.offset();
        let entries = self.entries.max(1);
        let mut info = FileInfo {
            first_key,
            last_key,
            max_sequence_id: self.max_sequence_id,
            timestamp_range: self.timestamps,
            entry_count: self.entries,
            avg_key_len: (self.key_bytes / entries) as u32,
            avg_value_len: (self.value_bytes / entries) as u32,
            major_compaction: self.options.major_compaction,
            bloom_type: self.options.bloom,
            encoding: self.options.encoding,
            compression: self.options.compression,
            delete_family_count: self.delete_family_count,
            data_blocks,
            index_levels: levels,
            file_len: 0,
            row_bloom_offset,
            delete_bloom_offset,
        };
        self.write_block(BlockKind::FileInfo, &info.encode(), Encoding::None)?;
        Trailer {
            index_levels: levels,
            root_index_offset,
            file_info_offset,
            data_end,
            entry_count: self.entries,
            data_blocks,
        }
        .encode(&mut self.out);
        info.file_len = self.offset();
        self.flush()?;
        self.file
            .sync_data()
            .map_err(|e| io("sync", &self.tmp, e))?;
        self.fs
            .rename(&self.tmp, &self.path)
            .map_err(|e| io("rename", &self.tmp, e))?;
        self.finished = true;
        if let Some(dir) = self.path.parent() {
            self.fs.sync_dir(dir).map_err(|e| io("sync_dir", dir, e))?;
        }
        Ok(info)
    }

    /// Entries per index block: the target size over the average entry, at least 16.
    fn index_fanout(&self) -> usize {
        let entry = self
            .leaves
            .iter()
            .take(64)
            .map(|e| 27 + e.key.row().len() + e.key.family().len() + e.key.qualifier().len() + 16)
            .sum::<usize>()
            / self.leaves.len().clamp(1, 64);
        (self.options.index_block_size / entry.max(1)).max(16)
    }
}

impl Drop for StoreFileWriter {
    fn drop(&mut self) {
        if !self.finished {
            // An abandoned file never appears under its real name; its temporary goes too.
            let _ = self.fs.remove(&self.tmp);
        }
    }
}

fn describe(key: &CellKey) -> String {
    format!(
        "{}/{}:{}/{}/{:?}/{}",
        escape_bytes(key.row()),
        escape_bytes(key.family()),
        escape_bytes(key.qualifier()),
        key.timestamp(),
        key.cell_type(),
        key.sequence_id()
    )
}
