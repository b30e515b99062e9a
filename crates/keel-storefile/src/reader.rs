//! [`StoreFileReader`]: opens a file by reading its trailer, root index, file info and bloom
//! filters; gets rows through the bloom filter and the index; hands out scanners.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use keel_cell::{Cell, CellKey};
use keel_fs::{FileRef, FileSystem};
use keel_sync::StripedCounter;

use crate::bloom::{Bloom, BloomType, hash};
use crate::encoding::to_plain;
use crate::error::{Result, corrupt, io};
use crate::format::{BLOCK_HEADER_LEN, BlockKind, MAX_BLOCK_LEN, TRAILER_LEN, Trailer, open_block};
use crate::index::{BlockAt, IndexBlock};
use crate::info::FileInfo;
use crate::merge::KeyValueScanner;
use crate::range::{RangeScanner, RowRange};
use crate::scanner::StoreFileScanner;
use crate::source::{BlockKey, BlockSource};

/// Counters of what a reader touched (through its block source, cached or not).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadStats {
    /// Data blocks requested.
    pub data_blocks: u64,
    /// Leaf and intermediate index blocks requested (the root is loaded at open).
    pub index_blocks: u64,
    /// Gets answered "absent" by the bloom filter without touching the index or data.
    pub bloom_negatives: u64,
}

/// Striped: every reader of the file counts a block per get, and one atomic would be a cache
/// line that all of them pull between cores.
#[derive(Debug, Default)]
struct Counters {
    data_blocks: StripedCounter,
    index_blocks: StripedCounter,
    bloom_negatives: StripedCounter,
}

/// An open store file. Shareable between threads; scanners borrow it.
#[derive(Debug)]
pub struct StoreFileReader {
    path: PathBuf,
    file: FileRef,
    file_id: u64,
    source: Arc<dyn BlockSource>,
    trailer: Trailer,
    pub(crate) root: IndexBlock,
    info: FileInfo,
    row_bloom: Option<Bloom>,
    delete_bloom: Option<Bloom>,
    counters: Counters,
    /// The rows this reader shows (a split's reference to half of its parent's file); `None`:
    /// all of them.
    range: Option<RowRange>,
}

impl StoreFileReader {
    /// Opens `path`, validating the trailer, version, root index, file info and bloom filters.
    /// `file_id` keys this file's blocks in `source`.
    pub fn open(
        fs: &dyn FileSystem,
        path: &Path,
        file_id: u64,
        source: Arc<dyn BlockSource>,
    ) -> Result<StoreFileReader> {
        let file = fs.open(path).map_err(|e| io("open", path, e))?;
        let len = file.len().map_err(|e| io("stat", path, e))?;
        if len < TRAILER_LEN as u64 {
            return Err(corrupt(
                path,
                0,
                format!("{len} bytes is too short for a store file"),
            ));
        }
        let trailer_at = len - TRAILER_LEN as u64;
        let mut tail = vec![0u8; TRAILER_LEN];
        file.read_exact_at(&mut tail, trailer_at)
            .map_err(|e| io("read", path, e))?;
        let trailer = Trailer::decode(path, trailer_at, &tail)?;
        let read = |offset: u64, end: u64, kind: BlockKind| -> Result<Bytes> {
            let n = usize::try_from(end - offset).unwrap_or(usize::MAX);
            if n > MAX_BLOCK_LEN + (MAX_BLOCK_LEN / 1024) {
                return Err(corrupt(path, offset, "block too long"));
            }
            let mut buf = vec![0u8; n];
            file.read_exact_at(&mut buf, offset)
                .map_err(|e| io("read", path, e))?;
            Ok(open_block(path, offset, kind, buf)?.payload)
        };
        let root_payload = read(
            trailer.root_index_offset,
            trailer.file_info_offset,
            BlockKind::RootIndex,
        )?;
        let root = IndexBlock::parse(path, trailer.root_index_offset, root_payload)?
            .with_row_prefixes(path)?;
        let info_payload = read(trailer.file_info_offset, trailer_at, BlockKind::FileInfo)?;
        let info = FileInfo::decode(path, trailer.file_info_offset, &info_payload, &trailer, len)?;
        let mut reader = StoreFileReader {
            path: path.to_path_buf(),
            file,
            file_id,
            source,
            trailer,
            root,
            info,
            row_bloom: None,
            delete_bloom: None,
            counters: Counters::default(),
            range: None,
        };
        let load = |offset: u64| -> Result<Option<Bloom>> {
            if offset == 0 {
                return Ok(None);
            }
            let payload = reader.read_block_at(offset, BlockKind::Bloom)?;
            Bloom::parse(path, offset, payload).map(Some)
        };
        let row_bloom = load(reader.info.row_bloom_offset)?;
        let delete_bloom = load(reader.info.delete_bloom_offset)?;
        reader.row_bloom = row_bloom;
        reader.delete_bloom = delete_bloom;
        Ok(reader)
    }

    /// The same reader showing only the rows of `range` (HBase's half-file reader over a
    /// reference): its scanners ([`StoreFileReader::range_scanner`]), gets and row checks see
    /// nothing outside it. [`StoreFileReader::info`] still describes the whole file.
    pub fn with_range(mut self, range: RowRange) -> StoreFileReader {
        self.range = Some(range);
        self
    }

    /// The rows this reader shows, if it shows only some.
    pub fn range(&self) -> Option<&RowRange> {
        self.range.as_ref()
    }

    /// A scanner over the rows this reader shows, holding the reader (see
    /// [`StoreFileReader::shared_scanner`]): the whole file, or its range.
    pub fn range_scanner(self: &std::sync::Arc<Self>) -> Box<dyn KeyValueScanner> {
        self.range_scanner_of(self.shared_scanner())
    }

    /// [`StoreFileReader::range_scanner`] for a read that passes over the file once (a
    /// compaction): it takes the data blocks its source holds and reads the others without
    /// giving them to the source ([`BlockSource::kept`]), so a cache keeps the blocks reads
    /// come back to.
    pub fn compaction_scanner(self: &std::sync::Arc<Self>) -> Box<dyn KeyValueScanner> {
        let mut scanner = self.shared_scanner();
        scanner.set_keep_blocks(false);
        self.range_scanner_of(scanner)
    }

    fn range_scanner_of<'a>(&self, scanner: StoreFileScanner<'a>) -> Box<dyn KeyValueScanner + 'a> {
        match &self.range {
            None => Box::new(scanner),
            Some(range) => Box::new(RangeScanner::new(scanner, range.clone())),
        }
    }

    /// [`StoreFileReader::range_scanner`] for a read of `row` alone (a get), borrowing the
    /// reader: no reference count taken on it (which every reader of the file shares), for a
    /// read that ends before the borrow does. It ends before any block whose keys all sort
    /// after the row ([`StoreFileScanner::set_limit`]), so a row that ends its block does not
    /// make it read the next block to see the row end.
    pub fn borrowed_row_scanner(&self, row: &Bytes) -> Box<dyn KeyValueScanner + '_> {
        let mut scanner = self.scanner();
        scanner.set_limit(CellKey::last_on_row(row.clone()));
        self.range_scanner_of(scanner)
    }

    /// A row near the middle of the rows this reader shows, for splitting a region: the
    /// row of the middle index entry (HBase's mid-key), or of the middle cell when the file is
    /// one block or that row does not split. `None` when no row splits what it shows in two.
    ///
    /// An index entry holds a separator (the shortest row prefix after the block before), not
    /// necessarily a row the file has: under a range it may sort before every row shown, or
    /// after every one, and a split there would leave a daughter empty. So a candidate must
    /// have a shown row before it and one at or after it.
    pub fn mid_row(&self) -> Result<Option<Bytes>> {
        let path = self.path_ref();
        let in_range = |row: &Bytes| self.range.as_ref().is_none_or(|r| r.contains(row));
        let (Some(first), Some(last)) = (self.first_shown_row()?, self.last_shown_row()?) else {
            return Ok(None);
        };
        let splits = |row: &Bytes| first < *row && *row <= last;
        if self.root.len() >= 2 && self.trailer.index_levels == 1 {
            let row = self.root.entry(path, self.root.len() / 2)?.key.row_bytes();
            if in_range(&row) && splits(&row) {
                return Ok(Some(row));
            }
        }
        Ok(self.walk_to_middle()?.filter(splits))
    }

    /// A borrowed scanner over the rows this reader shows.
    fn shown_scanner(&self) -> Box<dyn KeyValueScanner + '_> {
        let scanner = self.scanner();
        match &self.range {
            None => Box::new(scanner),
            Some(range) => Box::new(RangeScanner::new(scanner, range.clone())),
        }
    }

    fn first_shown_row(&self) -> Result<Option<Bytes>> {
        let mut s = self.shown_scanner();
        s.seek(&CellKey::first_on_row(Bytes::new()))?;
        Ok(s.peek().map(|c| c.row_bytes()))
    }

    fn last_shown_row(&self) -> Result<Option<Bytes>> {
        let mut s = self.shown_scanner();
        s.seek_before_row(None)?;
        Ok(s.peek().map(|c| c.row_bytes()))
    }

    /// The row of the middle shown cell (one pass to count, one to walk: splits are rare).
    fn walk_to_middle(&self) -> Result<Option<Bytes>> {
        let mut s = self.shown_scanner();
        s.seek(&CellKey::first_on_row(Bytes::new()))?;
        let mut count = 0u64;
        while s.next()?.is_some() {
            count += 1;
        }
        let mut s = self.shown_scanner();
        s.seek(&CellKey::first_on_row(Bytes::new()))?;
        for _ in 0..count / 2 {
            s.next()?;
        }
        Ok(s.peek().map(|c| c.row_bytes()))
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The id its blocks are cached under.
    pub fn file_id(&self) -> u64 {
        self.file_id
    }

    /// What the file says about itself.
    pub fn info(&self) -> &FileInfo {
        &self.info
    }

    /// What this reader has touched so far.
    pub fn stats(&self) -> ReadStats {
        ReadStats {
            data_blocks: self.counters.data_blocks.sum(),
            index_blocks: self.counters.index_blocks.sum(),
            bloom_negatives: self.counters.bloom_negatives.sum(),
        }
    }

    /// False if the file certainly holds no cell of `row` (row bloom, or key range).
    pub fn may_contain_row(&self, row: &[u8]) -> bool {
        if row < self.info.first_key.row() || row > self.info.last_key.row() {
            return false;
        }
        if self.range.as_ref().is_some_and(|r| !r.contains(row)) {
            return false;
        }
        match (&self.row_bloom, self.info.bloom_type) {
            (Some(bloom), BloomType::Row) => bloom.may_contain(hash(&[row])),
            _ => true,
        }
    }

    /// False if the file certainly holds no cell of this row and column (ROWCOL bloom, else
    /// [`StoreFileReader::may_contain_row`]).
    pub fn may_contain_column(&self, row: &[u8], family: &[u8], qualifier: &[u8]) -> bool {
        match (&self.row_bloom, self.info.bloom_type) {
            (Some(bloom), BloomType::RowCol) => {
                self.may_contain_row(row) && bloom.may_contain(hash(&[row, family, qualifier]))
            }
            _ => self.may_contain_row(row),
        }
    }

    /// False if the file certainly holds no DeleteFamily marker for `row`.
    pub fn may_have_delete_family(&self, row: &[u8]) -> bool {
        match &self.delete_bloom {
            Some(bloom) => bloom.may_contain(hash(&[row])),
            None => false,
        }
    }

    /// Keys the row (or row-column) bloom filter was built from, if the file has one.
    pub fn bloom_keys(&self) -> Option<u64> {
        self.row_bloom.as_ref().map(Bloom::keys)
    }

    /// Every cell of `row` in this file, in order. Asks the bloom filter first: a negative
    /// answer touches no index or data block.
    pub fn get(&self, row: &[u8]) -> Result<Vec<Cell>> {
        if !self.may_contain_row(row) {
            self.counters.bloom_negatives.add(1);
            return Ok(Vec::new());
        }
        let mut scanner = self.scanner();
        let row = keel_cell::shared_copy(row);
        scanner.set_limit(CellKey::last_on_row(row.clone()));
        scanner.seek(&CellKey::first_on_row(row.clone()))?;
        let mut cells = Vec::new();
        while let Some(cell) = scanner.peek() {
            if cell.row() != row {
                break;
            }
            if let Some(cell) = scanner.next()? {
                cells.push(cell);
            }
        }
        Ok(cells)
    }

    /// A scanner over the whole file, positioned before the first cell.
    pub fn scanner(&self) -> StoreFileScanner<'_> {
        StoreFileScanner::new(self)
    }

    /// A scanner that holds the reader itself, so it can outlive the caller's borrow (a
    /// region's streaming scan keeps its files this way while flushes replace the file list).
    pub fn shared_scanner(self: &std::sync::Arc<Self>) -> StoreFileScanner<'static> {
        StoreFileScanner::shared(std::sync::Arc::clone(self))
    }

    pub(crate) fn index_levels(&self) -> u32 {
        self.trailer.index_levels
    }

    pub(crate) fn path_ref(&self) -> &Path {
        &self.path
    }

    /// A data block's cells, in the plain encoding, and their row starts
    /// ([`crate::row_starts`]), through the block source, which holds them together. With
    /// `keep` false, a block the source does not hold is read for this call alone, not given
    /// to the source ([`BlockSource::kept`]), and has no row starts.
    pub(crate) fn data_block(&self, entry: BlockAt, keep: bool) -> Result<DataBlock> {
        self.counters.data_blocks.add(1);
        self.check_range(entry, 0, self.trailer.data_end)?;
        let key = BlockKey {
            file_id: self.file_id,
            offset: entry.offset,
        };
        let keeping = self.source.keeps_blocks();
        if !keep {
            return match keeping.then(|| self.source.kept(key)).flatten() {
                Some(block) => self.indexed_block(block, entry),
                None => {
                    let raw = self.read_block_with_room(entry, BlockKind::Data, 0)?;
                    to_plain(&self.path, entry.offset, raw.encoding, raw.payload)
                        .map(DataBlock::without_row_starts)
                }
            };
        }
        let indexed = keeping;
        let block = self.source.get_or_load(key, &mut || {
            // Read with room for the row starts after the cells: an unencoded, uncompressed
            // block (the default) then gets them appended in place, not copied into a second
            // buffer (a copy and fresh pages, at every block a cache loads).
            let room = if indexed {
                crate::row_starts::max_len(entry.len as usize)
            } else {
                0
            };
            let raw = self.read_block_with_room(entry, BlockKind::Data, room)?;
            let plain = to_plain(&self.path, entry.offset, raw.encoding, raw.payload)?;
            Ok(if indexed {
                crate::row_starts::with_row_starts(plain)
            } else {
                plain
            })
        })?;
        if !indexed {
            return Ok(DataBlock::without_row_starts(block));
        }
        self.indexed_block(block, entry)
    }

    /// A data block as a keeping source holds it: its cells, then their row starts.
    fn indexed_block(&self, block: Bytes, entry: BlockAt) -> Result<DataBlock> {
        let row_starts = crate::row_starts::bounds(&block).ok_or_else(|| {
            corrupt(
                &self.path,
                entry.offset,
                "a cached data block without its row starts",
            )
        })?;
        Ok(DataBlock {
            bytes: block,
            cells_end: row_starts.start,
            row_starts,
        })
    }

    /// An index block below the root, through the block source.
    pub(crate) fn index_block(&self, entry: BlockAt, leaf: bool) -> Result<IndexBlock> {
        self.counters.index_blocks.add(1);
        self.check_range(entry, self.trailer.data_end, self.trailer.root_index_offset)?;
        let kind = if leaf {
            BlockKind::LeafIndex
        } else {
            BlockKind::IntermediateIndex
        };
        let key = BlockKey {
            file_id: self.file_id,
            offset: entry.offset,
        };
        let payload = self
            .source
            .get_or_load(key, &mut || Ok(self.read_block(entry, kind)?.payload))?;
        IndexBlock::parse(&self.path, entry.offset, payload)
    }

    fn check_range(&self, entry: BlockAt, start: u64, end: u64) -> Result<()> {
        let stop = entry.offset.checked_add(u64::from(entry.len));
        if entry.offset < start
            || stop.is_none_or(|s| s > end)
            || (entry.len as usize) < BLOCK_HEADER_LEN
        {
            return Err(corrupt(
                &self.path,
                entry.offset,
                format!("index entry points outside its section: {entry:?}"),
            ));
        }
        Ok(())
    }

    fn read_block(&self, entry: BlockAt, kind: BlockKind) -> Result<crate::format::RawBlock> {
        self.read_block_with_room(entry, kind, 0)
    }

    /// [`StoreFileReader::read_block`] into a buffer with `room` bytes to spare after the block
    /// (an uncompressed payload keeps them, past its checksums).
    fn read_block_with_room(
        &self,
        entry: BlockAt,
        kind: BlockKind,
        room: usize,
    ) -> Result<crate::format::RawBlock> {
        let len = entry.len as usize;
        let mut buf = Vec::with_capacity(len.saturating_add(room));
        self.file
            .read_exact_at_appending(&mut buf, len, entry.offset)
            .map_err(|e| io("read", &self.path, e))?;
        open_block(&self.path, entry.offset, kind, buf)
    }

    /// Reads a block whose length is known only from its header (bloom blocks).
    fn read_block_at(&self, offset: u64, kind: BlockKind) -> Result<Bytes> {
        let mut head = [0u8; BLOCK_HEADER_LEN];
        self.file
            .read_exact_at(&mut head, offset)
            .map_err(|e| io("read", &self.path, e))?;
        let len = crate::format::block_len(&self.path, offset, &head)?;
        let entry = BlockAt {
            offset,
            len: len as u32,
        };
        self.check_range(entry, self.trailer.data_end, self.trailer.root_index_offset)?;
        Ok(self.read_block(entry, kind)?.payload)
    }
}

/// A data block as the block source holds it: its cells (`..cells_end`), then, when the source
/// keeps blocks, the row starts computed when it was loaded ([`crate::row_starts`]).
#[derive(Debug, Clone, Default)]
pub(crate) struct DataBlock {
    pub(crate) bytes: Bytes,
    pub(crate) cells_end: usize,
    pub(crate) row_starts: std::ops::Range<usize>,
}

impl DataBlock {
    /// A block of cells alone, as a source that keeps nothing gives it.
    fn without_row_starts(bytes: Bytes) -> DataBlock {
        DataBlock {
            cells_end: bytes.len(),
            bytes,
            row_starts: 0..0,
        }
    }

    /// The block's cells.
    pub(crate) fn cells(&self) -> &[u8] {
        &self.bytes[..self.cells_end]
    }

    /// Its row starts (empty when the source keeps no blocks).
    pub(crate) fn row_starts(&self) -> &[u8] {
        &self.bytes[self.row_starts.clone()]
    }
}
