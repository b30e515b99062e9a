//! [`StoreFileScanner`]: `seek`, forward-only `reseek` that skips whole blocks through the
//! index, `peek` and `next`, walking data blocks through a cursor over the index levels.

use std::cmp::Ordering;
use std::ops::ControlFlow;

use bytes::Bytes;
use keel_cell::{Cell, CellKey, CellRef, Decide, RunRule, Take, compare_bytes, same_bytes};

use crate::encoding::{decode_into_at, decode_push_at, decode_ref_at};
use crate::error::Result;
use crate::index::{BlockAt, IndexBlock};
use crate::merge::KeyValueScanner;
use crate::reader::{DataBlock, StoreFileReader};
use crate::row_starts::{self, cell_row_at};

/// The reader a scanner reads: borrowed, or shared so the scanner can outlive its caller.
#[derive(Debug)]
enum ReaderRef<'a> {
    Borrowed(&'a StoreFileReader),
    Shared(std::sync::Arc<StoreFileReader>),
}

impl std::ops::Deref for ReaderRef<'_> {
    type Target = StoreFileReader;
    fn deref(&self) -> &StoreFileReader {
        match self {
            ReaderRef::Borrowed(reader) => reader,
            ReaderRef::Shared(reader) => reader,
        }
    }
}

/// A scanner's index path, one entry per level. Inline up to three levels (a root and two
/// below it index ~10^7 data blocks), so positioning a scanner allocates nothing: a get opens
/// one per store file that may hold its row.
type IndexPath = smallvec::SmallVec<[(Option<IndexBlock>, usize); 3]>;

/// A position in one store file. Unpositioned until the first `seek` (or `next`, which starts
/// at the first cell).
#[derive(Debug)]
pub struct StoreFileScanner<'a> {
    reader: ReaderRef<'a>,
    /// One (index block, entry) per index level, root first; the last entry is the data block.
    /// The root is `None`: it is the reader's, borrowed when needed (every reader of the file
    /// shares its bytes, and cloning them is a reference count on one contended line).
    path: IndexPath,
    /// The current data block: its cells (plain encoding) and row starts.
    block: DataBlock,
    block_offset: u64,
    /// Byte position of the cell after `current` in `block`.
    pos: usize,
    /// How far into `block` the walk has asked for its bytes ([`PREFETCH_AHEAD`]).
    prefetched: usize,
    current: Option<Cell>,
    /// Where the block's last recorded row start's row lies in it, once a reseek asked
    /// (`None` until then): a reseek to an earlier row stays in the block without reading the
    /// index.
    last_row: Option<Option<std::ops::Range<usize>>>,
    started: bool,
    /// When set, the scanner ends rather than enter a block whose keys all sort after this.
    limit: Option<CellKey>,
    /// Data blocks it loads are given to the reader's source (false: a compaction's pass).
    keep_blocks: bool,
}

impl<'a> StoreFileScanner<'a> {
    pub(crate) fn new(reader: &'a StoreFileReader) -> StoreFileScanner<'a> {
        StoreFileScanner::with(ReaderRef::Borrowed(reader))
    }

    pub(crate) fn shared(reader: std::sync::Arc<StoreFileReader>) -> StoreFileScanner<'static> {
        StoreFileScanner::with(ReaderRef::Shared(reader))
    }

    fn with(reader: ReaderRef<'a>) -> StoreFileScanner<'a> {
        StoreFileScanner {
            reader,
            path: IndexPath::new(),
            block: DataBlock::default(),
            block_offset: 0,
            pos: 0,
            prefetched: 0,
            current: None,
            last_row: None,
            started: false,
            limit: None,
            keep_blocks: true,
        }
    }

    /// With `false`, the data blocks this scanner loads are not given to the reader's block
    /// source: a block the source holds is used, any other is read for this scanner alone (a
    /// compaction passes over its files once; HBase's compaction scanners do not cache).
    pub fn set_keep_blocks(&mut self, keep: bool) {
        self.keep_blocks = keep;
    }

    /// Ends the scan before any block whose keys all sort after `key` (a get of one row sets
    /// the row's last key, so it never reads the block after the row just to see it ended).
    pub fn set_limit(&mut self, key: CellKey) {
        self.limit = Some(key);
    }

    /// Positions at the first cell ≥ `key` (anywhere in the file).
    pub fn seek(&mut self, key: &CellKey) -> Result<()> {
        self.started = true;
        self.descend(key)?;
        self.advance_to(key)
    }

    /// Moves forward to the first cell ≥ `key`; never moves back. Blocks between here and the
    /// target are skipped through the index, not read.
    pub fn reseek(&mut self, key: &CellKey) -> Result<()> {
        if !self.started {
            return self.seek(key);
        }
        match &self.current {
            None => return Ok(()),
            Some(cell) if cell.key() >= key => return Ok(()),
            Some(_) => {}
        }
        if self.before_next_block(key)? {
            return self.advance_to(key);
        }
        let target = self.target_block(key)?;
        if target.offset > self.block_offset {
            self.descend(key)?;
        }
        self.advance_to(key)
    }

    /// Positions at the first cell of the last row before `row` (strictly), or of the file's
    /// last row with `None`; exhausted if there is none. The block that may hold `row`'s first
    /// cell is walked (by cell headers) for the last row before it; if it has none, the block
    /// before it, and so on back through the index.
    pub fn seek_before_row(&mut self, row: Option<&[u8]>) -> Result<()> {
        self.started = true;
        let Some(row) = row else {
            let last = self.reader.info().last_key.row_bytes();
            return self.seek(&CellKey::first_on_row(last));
        };
        if self.reader.info().first_key.row() >= row {
            self.current = None;
            self.path.clear();
            self.block = DataBlock::default();
            self.last_row = None;
            self.pos = 0;
            self.prefetched = 0;
            return Ok(());
        }
        self.descend(&CellKey::first_on_row(Bytes::copy_from_slice(row)))?;
        let found = loop {
            if let Some(found) = last_row_before(self.block.cells(), row) {
                break found;
            }
            if !self.prev_block()? {
                self.current = None;
                return Ok(());
            }
        };
        self.seek(&CellKey::first_on_row(found))
    }

    /// The cell `next` would return.
    pub fn peek(&self) -> Option<&Cell> {
        self.current.as_ref()
    }

    /// Returns the current cell and moves past it.
    #[expect(
        clippy::should_implement_trait,
        reason = "fallible: reading a block can fail, so it returns Result<Option<Cell>>"
    )]
    pub fn next(&mut self) -> Result<Option<Cell>> {
        if !self.started {
            self.started = true;
            self.descend(&CellKey::first_on_row(
                self.reader.info().first_key.row_bytes(),
            ))?;
            self.load_next()?;
        }
        let cell = self.current.take();
        if cell.is_some() {
            self.load_next()?;
        }
        Ok(cell)
    }

    /// Visits the cells from the scanner's position on, each borrowed from its block — no
    /// `Cell` built, no reference count touched — until `visit` breaks or the file ends (an
    /// unstarted scanner starts at the first cell). Afterwards the scanner stands where `next`
    /// would have left it after returning each visited cell. The form for a reader that looks
    /// at every cell (a full scan, a copy, a checksum), where building cells was most of a
    /// scan's cost.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use std::ops::ControlFlow;
    /// # use keel_cell::Cell;
    /// # use keel_fs::{FileSystem, StdFs};
    /// # use keel_storefile::{DirectSource, StoreFileReader, StoreFileWriter, WriterOptions};
    /// # let dir = tempfile::tempdir()?;
    /// # let fs: Arc<dyn FileSystem> = Arc::new(StdFs);
    /// # let path = dir.path().join("f");
    /// let mut writer = StoreFileWriter::create(Arc::clone(&fs), &path, WriterOptions::default())?;
    /// for row in ["a", "b", "c"] {
    ///     writer.append(&Cell::put(row, "cf", "q", 1, "v")?)?;
    /// }
    /// writer.finish()?;
    /// let reader = StoreFileReader::open(&*fs, &path, 1, Arc::new(DirectSource))?;
    /// let mut scanner = reader.scanner();
    /// let mut rows = Vec::new();
    /// scanner.for_each_ref(|cell| {
    ///     rows.push(cell.row().to_vec());
    ///     if cell.row() == b"b" { ControlFlow::Break(()) } else { ControlFlow::Continue(()) }
    /// })?;
    /// assert_eq!(rows, [b"a".to_vec(), b"b".to_vec()]);
    /// assert_eq!(&scanner.next()?.expect("c")
    ///     .row()[..], b"c");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn for_each_ref(
        &mut self,
        mut visit: impl FnMut(CellRef<'_>) -> ControlFlow<()>,
    ) -> Result<()> {
        if !self.started {
            self.started = true;
            self.descend(&CellKey::first_on_row(
                self.reader.info().first_key.row_bytes(),
            ))?;
        } else {
            // A started scanner holds its next cell built (`peek`); an empty one has ended.
            let Some(cell) = self.current.take() else {
                return Ok(());
            };
            if visit(cell.borrowed()).is_break() {
                return self.load_next();
            }
        }
        loop {
            while self.pos < self.block.cells_end {
                let (cell, next) = decode_ref_at(
                    self.reader.path_ref(),
                    self.block_offset,
                    self.block.cells(),
                    self.pos,
                )?;
                self.pos = next;
                if visit(cell).is_break() {
                    return self.load_next();
                }
            }
            if !self.next_block()? {
                self.current = None;
                return Ok(());
            }
        }
    }

    /// The index block at `level` of the cursor (the reader's root at level 0).
    fn level(&self, level: usize) -> &IndexBlock {
        self.path[level].0.as_ref().unwrap_or(&self.reader.root)
    }

    /// Whether `key` sorts before the first key of the block after the current one, as the
    /// current leaf index block has it: a reseek to such a key stays in this block, with no
    /// index lookup (HBase's `nextIndexedKey`). Compared in place, with no key built.
    fn before_next_block(&mut self, key: &CellKey) -> Result<bool> {
        let Some(&(_, i)) = self.path.last() else {
            return Ok(false);
        };
        // A key of a row before one this block holds: no index entry decoded (a count's
        // family skips reseek once a row, and that decode was a quarter of each).
        let block = &self.block;
        let last_row = self.last_row.get_or_insert_with(|| {
            row_starts::last_recorded_row(block.cells(), block.row_starts())
        });
        if let Some(last_row) = last_row
            && keel_cell::compare_bytes(key.row(), &block.cells()[last_row.clone()]).is_lt()
        {
            return Ok(true);
        }
        let leaf = self.level(self.path.len() - 1);
        Ok(i + 1 < leaf.len()
            && leaf.compare_entry(self.reader.path_ref(), i + 1, key)? == Ordering::Greater)
    }

    /// Walks the index from the root to the data block that may hold the first cell ≥ `key`,
    /// and loads that block (positioned before its first cell).
    fn descend(&mut self, key: &CellKey) -> Result<()> {
        let path = self.reader.path_ref();
        let levels = self.reader.index_levels() as usize;
        self.path.clear();
        let mut below: Option<IndexBlock> = None;
        for level in 0..levels {
            let block = below.as_ref().unwrap_or(&self.reader.root);
            let i = block.search(path, key)?;
            let child = if level + 1 < levels {
                let at = block.block_at(path, i)?;
                Some(self.reader.index_block(at, level + 2 == levels)?)
            } else {
                None
            };
            self.path.push((std::mem::replace(&mut below, child), i));
        }
        self.load_block()
    }

    /// The data block that may hold the first cell ≥ `key`.
    fn target_block(&self, key: &CellKey) -> Result<BlockAt> {
        let path = self.reader.path_ref();
        let levels = self.reader.index_levels() as usize;
        let mut below: Option<IndexBlock> = None;
        for level in 0..levels {
            let block = below.as_ref().unwrap_or(&self.reader.root);
            let i = block.search(path, key)?;
            let at = block.block_at(path, i)?;
            if level + 1 == levels {
                return Ok(at);
            }
            below = Some(self.reader.index_block(at, level + 2 == levels)?);
        }
        unreachable!("a file has at least one index level")
    }

    fn load_block(&mut self) -> Result<()> {
        let path = self.reader.path_ref();
        let &(_, i) = self
            .path
            .last()
            .ok_or_else(|| crate::error::corrupt(path, 0, "no index"))?;
        let at = self.level(self.path.len() - 1).block_at(path, i)?;
        self.block = self.reader.data_block(at, self.keep_blocks)?;
        self.last_row = None;
        self.block_offset = at.offset;
        self.pos = 0;
        self.prefetched = 0;
        self.current = None;
        Ok(())
    }

    /// Moves the index cursor to the next data block; false at the end of the file (or of
    /// the limit).
    fn next_block(&mut self) -> Result<bool> {
        let path = self.reader.path_ref();
        let mut level = self.path.len();
        loop {
            if level == 0 {
                return Ok(false);
            }
            level -= 1;
            let (block, i) = (self.level(level), self.path[level].1);
            if i + 1 < block.len() {
                // The next sub-tree's separator bounds every key in it from below.
                if let Some(limit) = &self.limit
                    && block.compare_entry(path, i + 1, limit)? == Ordering::Greater
                {
                    return Ok(false);
                }
                self.path[level].1 += 1;
                break;
            }
        }
        let levels = self.path.len();
        for below in level + 1..levels {
            let at = self
                .level(below - 1)
                .block_at(path, self.path[below - 1].1)?;
            let child = self.reader.index_block(at, below + 1 == levels)?;
            self.path[below] = (Some(child), 0);
        }
        self.load_block()?;
        Ok(true)
    }

    /// Moves the index cursor to the previous data block; false at the start of the file.
    fn prev_block(&mut self) -> Result<bool> {
        let path = self.reader.path_ref();
        let mut level = self.path.len();
        loop {
            if level == 0 {
                return Ok(false);
            }
            level -= 1;
            if self.path[level].1 > 0 {
                self.path[level].1 -= 1;
                break;
            }
        }
        let levels = self.path.len();
        for below in level + 1..levels {
            let at = self
                .level(below - 1)
                .block_at(path, self.path[below - 1].1)?;
            let child = self.reader.index_block(at, below + 1 == levels)?;
            let last = child.len().saturating_sub(1);
            self.path[below] = (Some(child), last);
        }
        self.load_block()?;
        Ok(true)
    }

    /// Decodes the next cell into `current`, crossing into later blocks as needed.
    fn load_next(&mut self) -> Result<()> {
        loop {
            if self.pos < self.block.cells_end {
                // Built in place (`current` is `None` here: `next` took it).
                let next = decode_into_at(
                    self.reader.path_ref(),
                    self.block_offset,
                    &self.block.bytes,
                    self.pos,
                    &mut self.current,
                )?;
                // Decoded from the whole cached block, so that its fields share the one
                // `Bytes`: a cell running into the row starts is damage all the same.
                if let Err(e) = self.move_past(next) {
                    self.current = None;
                    return Err(e);
                }
                return Ok(());
            }
            if !self.next_block()? {
                self.current = None;
                return Ok(());
            }
        }
    }

    /// A walk reads on through the block: the bytes a few cells past `pos` start loading now,
    /// so the next cells' headers are not each a wait for memory. Every line up to there is
    /// asked for: a ten-column cell spans two or three lines, and asking for one line a cell
    /// left the lines between to be waited for.
    #[inline]
    fn prefetch_ahead(&mut self) {
        let ahead = (self.pos + PREFETCH_AHEAD).min(self.block.cells_end);
        let mut line = self.prefetched.max(self.pos);
        while line < ahead {
            keel_sync::prefetch(&self.block.bytes[line..]);
            line += CACHE_LINE;
        }
        self.prefetched = self.prefetched.max(line);
    }

    /// Decodes the cell at `pos` onto the end of `out` and moves `pos` past it (crossing no
    /// block: the caller checks that one is left).
    fn push_next(&mut self, out: &mut Vec<Cell>) -> Result<()> {
        let next = decode_push_at(
            self.reader.path_ref(),
            self.block_offset,
            &self.block.bytes,
            self.pos,
            out,
        )?;
        self.move_past(next).inspect_err(|_| drop(out.pop()))
    }

    /// Moves `pos` to `next`, the end of the cell just decoded at `pos`, or reports that cell
    /// as running past the block's cells (into the row starts or beyond).
    fn move_past(&mut self, next: usize) -> Result<()> {
        if next > self.block.cells_end {
            return Err(crate::error::corrupt(
                self.reader.path_ref(),
                self.block_offset,
                format!("cell at byte {} runs past the block's cells", self.pos),
            ));
        }
        self.pos = next;
        self.prefetch_ahead();
        Ok(())
    }

    fn advance_to(&mut self, key: &CellKey) -> Result<()> {
        // Cells of earlier rows are stepped over by their headers alone: decoding them would
        // build (and drop) a `Cell` for every cell of the block before the row — for a get,
        // most of the block, and every one a reference-count round trip on the shared block.
        if self
            .current
            .as_ref()
            .is_none_or(|c| keel_cell::compare_bytes(c.row(), key.row()).is_lt())
        {
            self.current = None;
            // Whole rows first, by the block's row starts; then cell by cell.
            let (cells, starts) = (self.block.cells(), self.block.row_starts());
            if let Some(start) = row_starts::seek_start(cells, starts, key.row())
                && start > self.pos
            {
                self.pos = start;
            }
            while let Some(next) = row_before(self.block.cells(), self.pos, key.row()) {
                self.pos = next;
            }
            self.load_next()?;
        }
        // Within the row, the rest of the current column or family, when all of it lies before
        // `key`, is stepped over by headers too: a get's column skip and a scan's family skip
        // land here, and decoding each older version built and dropped a `Cell` apiece.
        if let Some(cell) = &self.current
            && let Some(scope) = Scope::before(cell.key(), key)
        {
            let cells = self.block.cells();
            let mut pos = self.pos;
            while let Some(next) = scope.same_at(cells, pos, cell) {
                pos = next;
            }
            if pos != self.pos {
                self.pos = pos;
                self.load_next()?;
            }
        }
        while let Some(cell) = &self.current {
            if cell.key() >= key {
                break;
            }
            self.load_next()?;
        }
        Ok(())
    }
}

/// How much of a row around a cell lies wholly before a reseek's key: cells sharing the cell's
/// column, its family, or its row, that can be stepped over by their headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    Column,
    Family,
    Row,
}

impl Scope {
    /// The scope of `current`'s row that sorts before `key` as a whole, if any. Rows compare
    /// first, then families, then qualifiers, so a key in a later family of the row is after
    /// all of `current`'s family, and one in a later column after all of `current`'s column;
    /// a key at the end of `current`'s own column (HBase's `createLastOnRowCol`: the lowest
    /// timestamp and the lowest type, which no stored cell has) is after all of that column.
    fn before(current: &CellKey, key: &CellKey) -> Option<Scope> {
        // Compared inline (`compare_bytes`, no `memcmp` call): a row count's family skip asks
        // this at every row, and `same_at` of every cell it steps over.
        if !same_bytes(current.row(), key.row()) {
            return None;
        }
        // HBase's `createLastOnRow` (no family, no qualifier, the lowest timestamp and type):
        // after every cell of the row. A stored cell always has a family.
        if key.family().is_empty()
            && key.qualifier().is_empty()
            && key.timestamp() == i64::MIN
            && key.cell_type() == keel_cell::CellType::Minimum
        {
            return Some(Scope::Row);
        }
        match compare_bytes(key.family(), current.family()) {
            Ordering::Greater => Some(Scope::Family),
            Ordering::Less => None,
            Ordering::Equal => match compare_bytes(key.qualifier(), current.qualifier()) {
                Ordering::Greater => Some(Scope::Column),
                Ordering::Equal
                    if key.timestamp() == i64::MIN
                        && key.cell_type() == keel_cell::CellType::Minimum =>
                {
                    Some(Scope::Column)
                }
                _ => None,
            },
        }
    }

    /// If the cell encoded at `pos` shares this scope with `current`, where the next cell
    /// starts; otherwise (or on a damaged header, which the decoding walk then reports) `None`.
    fn same_at(self, block: &[u8], pos: usize, current: &Cell) -> Option<usize> {
        let (at, end) = row_starts::cell_coordinates_at(block, pos)?;
        let same = same_bytes(&block[at.row], current.row())
            && (self == Scope::Row
                || same_bytes(&block[at.family], current.family())
                    && (self == Scope::Family
                        || same_bytes(&block[at.qualifier], current.qualifier())));
        same.then_some(end)
    }
}

/// How far past the cell it has just decoded a block's walk asks for the block's bytes: about
/// three ten-column YCSB cells.
const PREFETCH_AHEAD: usize = 512;

/// The step between prefetches of a block's bytes.
const CACHE_LINE: usize = 64;

/// If the cell encoded at `pos` is well-formed and of a row before `row`, where the next cell
/// starts; otherwise `None` (and the caller decodes it, reporting any damage).
fn row_before(block: &[u8], pos: usize, row: &[u8]) -> Option<usize> {
    let (this, end) = cell_row_at(block, pos)?;
    keel_cell::compare_bytes(&block[this], row)
        .is_lt()
        .then_some(end)
}

/// The last row before `row` among the cells of a (plain) block, walked by their headers alone;
/// `None` if the block's first cell is already at or after `row`, or the block is damaged (the
/// caller's later decode reports that).
fn last_row_before(block: &[u8], row: &[u8]) -> Option<Bytes> {
    let mut pos: usize = 0;
    let mut last: Option<std::ops::Range<usize>> = None;
    while let Some((this, end)) = cell_row_at(block, pos) {
        if keel_cell::compare_bytes(&block[this.clone()], row).is_ge() {
            break;
        }
        last = Some(this);
        pos = end;
    }
    last.map(|range| Bytes::copy_from_slice(&block[range]))
}

/// The run a take opens: the rule of a [`Take::KeepRun`], none after any other take.
#[inline]
fn run_of(take: Take) -> Option<RunRule> {
    match take {
        Take::KeepRun(rule) => Some(rule),
        _ => None,
    }
}

impl KeyValueScanner for StoreFileScanner<'_> {
    fn peek(&self) -> Option<&Cell> {
        self.current.as_ref()
    }

    fn next(&mut self) -> Result<Option<Cell>> {
        StoreFileScanner::next(self)
    }

    fn next_into(&mut self, out: &mut Vec<Cell>) -> Result<()> {
        if !self.started {
            return self.next().map(|cell| out.extend(cell));
        }
        if let Some(cell) = self.current.take() {
            out.push(cell);
            self.load_next()?;
        }
        Ok(())
    }

    fn skip(&mut self) -> Result<()> {
        if !self.started {
            return self.next().map(drop);
        }
        if self.current.take().is_some() {
            self.load_next()?;
        }
        Ok(())
    }

    fn keep_and_reseek(&mut self, out: &mut Vec<Cell>, key: &CellKey) -> Result<()> {
        if !self.started {
            self.next_into(out)?;
            return StoreFileScanner::reseek(self, key);
        }
        let Some(cell) = self.current.take() else {
            return Ok(());
        };
        // The cells after the kept one that share the scope the reseek leaves (its column,
        // family or row) are stepped over by their headers, as `advance_to` does after a
        // decoded cell; the first cell past them is the first decoded.
        if let Some(scope) = Scope::before(cell.key(), key) {
            let cells = self.block.cells();
            let mut pos = self.pos;
            while let Some(next) = scope.same_at(cells, pos, &cell) {
                pos = next;
            }
            self.pos = pos;
        }
        out.push(cell);
        self.load_next()?;
        StoreFileScanner::reseek(self, key)
    }

    /// [`KeyValueScanner::keep_and_reseek`] to the end of the kept cell's row, without the key
    /// when the walk over the row's other cells ends in a later row (only a row that goes on in
    /// the next block needs the reseek).
    fn keep_and_leave_row(&mut self, out: &mut Vec<Cell>) -> Result<()> {
        if !self.started {
            // Not yet positioned: the file's first cell is the one kept.
            let before = out.len();
            self.next_into(out)?;
            let Some(kept) = out.get(before) else {
                return Ok(());
            };
            let key = CellKey::last_on_row(kept.row_bytes());
            return StoreFileScanner::reseek(self, &key);
        }
        let Some(cell) = self.current.take() else {
            return Ok(());
        };
        let cells = self.block.cells();
        let mut pos = self.pos;
        while let Some(next) = Scope::Row.same_at(cells, pos, &cell) {
            pos = next;
        }
        self.pos = pos;
        out.push(cell);
        self.load_next()?;
        let kept = out.last().expect("pushed above");
        if self
            .current
            .as_ref()
            .is_some_and(|next| same_bytes(next.row(), kept.row()))
        {
            let key = CellKey::last_on_row(kept.row_bytes());
            return StoreFileScanner::reseek(self, &key);
        }
        Ok(())
    }

    /// The row's cells straight from the block, each decided where it was decoded: the current
    /// cell (decoded before the call, or as a block's first) in `current`, the rest of the
    /// block's part of the row at the end of `out`, where a kept cell stays (a passed one is
    /// popped, and the one the walk ends at goes back to `current`). Moving each kept cell from
    /// `current` into `out` read its 64 bytes back in other widths than they were written in
    /// and waited for them; building it in `out` made a ten-column scan about a tenth faster.
    /// After a [`Take::KeepRun`], a cell that continues the run ([`RunRule::continues`]) is
    /// kept without asking the reader.
    fn take_row(&mut self, row: &[u8], out: &mut Vec<Cell>, decide: &mut Decide<'_>) -> Result<()> {
        // After a `Take::KeepRun`, the reader's rule: each cell that continues the run is kept
        // without asking the reader (it was decoded anyway; the call and the reader's own
        // bookkeeping per cell were a fifth of a ten-column scan).
        let mut run: Option<RunRule> = None;
        loop {
            let Some(cell) = &self.current else {
                return Ok(());
            };
            if !same_bytes(cell.row(), row) {
                return Ok(());
            }
            let take = match (run, out.last()) {
                (Some(rule), Some(last)) if rule.continues(cell, last) => Take::KeepRun(rule),
                _ => decide(cell, out),
            };
            run = run_of(take);
            match take {
                Take::Keep | Take::KeepRun(_) => out.extend(self.current.take()),
                Take::Pass => self.current = None,
                Take::Stop => return Ok(()),
            }
            while self.pos < self.block.cells_end {
                self.push_next(out)?;
                let (kept, last) = out.split_at(out.len() - 1);
                let cell = &last[0];
                let take = if !same_bytes(cell.row(), row) {
                    Take::Stop
                } else if let (Some(rule), Some(prev)) = (run, kept.last())
                    && rule.continues(cell, prev)
                {
                    continue;
                } else {
                    decide(cell, kept)
                };
                run = run_of(take);
                match take {
                    Take::Keep | Take::KeepRun(_) => {}
                    Take::Pass => drop(out.pop()),
                    Take::Stop => {
                        self.current = out.pop();
                        return Ok(());
                    }
                }
            }
            self.load_next()?;
        }
    }

    fn seek(&mut self, key: &CellKey) -> Result<()> {
        StoreFileScanner::seek(self, key)
    }

    fn reseek(&mut self, key: &CellKey) -> Result<()> {
        StoreFileScanner::reseek(self, key)
    }

    fn seek_before_row(&mut self, row: Option<&[u8]>) -> Result<()> {
        StoreFileScanner::seek_before_row(self, row)
    }
}
