//! The k-way merge the region reads and compacts through: any number of sorted scanners (store
//! files, memstore segments) behind one, ordered by their current cell with ties going to the
//! newer source (HBase's `KeyValueHeap`).

use std::cmp::Ordering;

use keel_cell::{Cell, CellKey, Decide, Take, same_bytes};

use crate::error::Result;

/// A sorted source of cells that can be positioned.
///
/// `Send`, so a scan can be parked between calls and resumed on another thread (a server's
/// scanner ids).
pub trait KeyValueScanner: Send {
    /// The cell `next` would return; `None` when exhausted or not yet positioned.
    fn peek(&self) -> Option<&Cell>;
    /// Returns the current cell and advances.
    fn next(&mut self) -> Result<Option<Cell>>;
    /// Appends the current cell (if any) to `out` and advances: [`KeyValueScanner::next`]
    /// for a reader that decides on the [`peek`](KeyValueScanner::peek)ed cell and keeps it.
    /// A source that holds its current cell moves it into `out` once; through `next` a
    /// 64-byte cell was copied out of each layer of a merge's return values, a tenth of a
    /// scan of many-column rows.
    fn next_into(&mut self, out: &mut Vec<Cell>) -> Result<()> {
        if let Some(cell) = self.next()? {
            out.push(cell);
        }
        Ok(())
    }
    /// Drops the current cell (if any) and advances: [`KeyValueScanner::next`] for a cell
    /// the reader decided, on the peeked cell, not to keep.
    fn skip(&mut self) -> Result<()> {
        self.next().map(drop)
    }
    /// [`next_into`](KeyValueScanner::next_into), then [`reseek`](KeyValueScanner::reseek) to
    /// `key` (after the current cell): a reader that keeps a cell and leaves its row or family
    /// at once (a row count's `FirstKeyOnlyFilter`). A store file steps from the kept cell
    /// over the cells the reseek passes by their headers, without decoding the next one only
    /// to step past it.
    fn keep_and_reseek(&mut self, out: &mut Vec<Cell>, key: &CellKey) -> Result<()> {
        self.next_into(out)?;
        // Exhausted stays exhausted: a merge never reseeks a source it has dropped, and the
        // default `reseek` of one with no current cell seeks, which may move it back.
        if self.peek().is_none() {
            return Ok(());
        }
        self.reseek(key)
    }
    /// [`keep_and_reseek`](KeyValueScanner::keep_and_reseek) to the end of the kept cell's row
    /// (`CellKey::last_on_row`): a reader that keeps a cell and leaves its row at once (a row
    /// count). A store file whose walk over the row's other cells already ended in a later row
    /// builds no key and checks none, and a merge then reseeks only if another source still
    /// stands in the row.
    fn keep_and_leave_row(&mut self, out: &mut Vec<Cell>) -> Result<()> {
        let Some(cell) = self.peek() else {
            return Ok(());
        };
        let key = CellKey::last_on_row(cell.row_bytes());
        self.keep_and_reseek(out, &key)
    }
    /// Walks the cells of `row` from the current one, showing each to `decide` (with the
    /// results kept so far) and keeping or dropping it as told, until a cell of another row,
    /// the end, or [`Take::Stop`] (that cell is left in place). The loop of
    /// [`peek`](KeyValueScanner::peek), [`next_into`](KeyValueScanner::next_into) and
    /// [`skip`](KeyValueScanner::skip) a row reader would write, in one call: a merge hands the
    /// whole row to the one source that holds it, and a store file walks its block without a
    /// virtual call or a merge step per cell (the ten-column row read cell by cell paid both
    /// ten times). A source may decode the cell after the row into `out` to look at it and
    /// take it back off (a store file does, within a block): a caller sizing `out` for the row
    /// leaves one slot more, or the last look moves every cell already taken.
    fn take_row(&mut self, row: &[u8], out: &mut Vec<Cell>, decide: &mut Decide<'_>) -> Result<()> {
        while let Some(cell) = self.peek() {
            if !same_bytes(cell.row(), row) {
                break;
            }
            let take = decide(cell, out);
            if !apply(self, take, out)? {
                break;
            }
        }
        Ok(())
    }

    /// Positions at the first cell ≥ `key`.
    fn seek(&mut self, key: &CellKey) -> Result<()>;
    /// Moves forward to the first cell ≥ `key`, never back (HBase's `reseek`): a scanner
    /// already there does nothing, and one that can step within what it holds (a store file's
    /// current block) does so instead of starting over. The default seeks unless the current
    /// cell is already at or past `key`.
    fn reseek(&mut self, key: &CellKey) -> Result<()> {
        match self.peek() {
            Some(cell) if cell.key() >= key => Ok(()),
            _ => self.seek(key),
        }
    }
    /// Positions at the first cell of the last row before `row` (strictly), or of the last row
    /// of all with `None`; exhausted if there is none. A reversed scan reads a row forward from
    /// there, then asks for the row before it (HBase's `seekToPreviousRow`).
    fn seek_before_row(&mut self, row: Option<&[u8]>) -> Result<()>;
}

/// Does what `take` says with `scanner`'s current cell: keeps it (moved into `out`), passes
/// it, or leaves it and answers `false` (a [`Take::Stop`]).
fn apply<S: KeyValueScanner + ?Sized>(
    scanner: &mut S,
    take: Take,
    out: &mut Vec<Cell>,
) -> Result<bool> {
    match take {
        Take::Keep | Take::KeepRun(_) => scanner.next_into(out)?,
        Take::Pass => scanner.skip()?,
        Take::Stop => return Ok(false),
    }
    Ok(true)
}

/// The row of the cell before `cells[end]`-ish: the last row of `cells[..end]`, in a sorted
/// slice, with the index of its first cell.
fn last_row_start(cells: &[Cell], end: usize) -> Option<usize> {
    let last = cells[..end].last()?;
    Some(cells[..end].partition_point(|c| c.row() < last.row()))
}

/// A scanner over cells already in memory and sorted (tests, and adapters for memstore
/// snapshots).
#[derive(Debug, Clone)]
pub struct VecScanner {
    cells: Vec<Cell>,
    pos: usize,
}

impl VecScanner {
    /// Wraps `cells`, which must be sorted by key.
    pub fn new(cells: Vec<Cell>) -> VecScanner {
        VecScanner {
            pos: cells.len(),
            cells,
        }
    }
}

impl KeyValueScanner for VecScanner {
    fn peek(&self) -> Option<&Cell> {
        self.cells.get(self.pos)
    }
    fn next(&mut self) -> Result<Option<Cell>> {
        let cell = self.cells.get(self.pos).cloned();
        self.pos += usize::from(cell.is_some());
        Ok(cell)
    }
    fn seek(&mut self, key: &CellKey) -> Result<()> {
        self.pos = self.cells.partition_point(|c| c.key() < key);
        Ok(())
    }
    fn seek_before_row(&mut self, row: Option<&[u8]>) -> Result<()> {
        let end = match row {
            None => self.cells.len(),
            Some(row) => self.cells.partition_point(|c| c.row() < row),
        };
        self.pos = last_row_start(&self.cells, end).unwrap_or(self.cells.len());
        Ok(())
    }
}

/// Merges scanners; sources are listed oldest first, and on equal keys a later source's cell
/// comes first.
///
/// The source whose cell comes next is kept out of the heap (HBase's `KeyValueHeap.current`):
/// taking a cell compares that source's next cell with the heap's top once and touches the
/// heap only when another source now comes first. A row's cells mostly come from one source,
/// so most steps cost one key comparison, where a heap of owned keys cost a pop, a push and a
/// clone of the key (three reference counts on the shared block) for every cell. The heap holds
/// source indices and compares the sources' own current cells: nothing is copied into it.
pub struct MergeScanner<'a> {
    sources: Vec<Box<dyn KeyValueScanner + 'a>>,
    /// The source whose current cell comes first; `None` when every source is exhausted.
    current: Option<usize>,
    /// The other sources that hold a cell: a binary min-heap by [`comes_before`].
    heap: Vec<usize>,
}

impl std::fmt::Debug for MergeScanner<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MergeScanner")
            .field("sources", &self.sources.len())
            .field(
                "live",
                &(self.heap.len() + usize::from(self.current.is_some())),
            )
            .finish()
    }
}

type Sources<'s, 'a> = &'s [Box<dyn KeyValueScanner + 'a>];

/// Whether source `a`'s current cell comes before source `b`'s: the smaller key, and on equal
/// keys the later (newer) source. An exhausted source comes after every other.
fn comes_before(sources: Sources<'_, '_>, a: usize, b: usize) -> bool {
    match (sources[a].peek(), sources[b].peek()) {
        (Some(x), Some(y)) => match x.key().cmp(y.key()) {
            Ordering::Less => true,
            Ordering::Greater => false,
            Ordering::Equal => a > b,
        },
        (Some(_), None) => true,
        (None, _) => false,
    }
}

fn sift_up(sources: Sources<'_, '_>, heap: &mut [usize], mut i: usize) {
    while i > 0 {
        let parent = (i - 1) / 2;
        if !comes_before(sources, heap[i], heap[parent]) {
            break;
        }
        heap.swap(i, parent);
        i = parent;
    }
}

fn sift_down(sources: Sources<'_, '_>, heap: &mut [usize], mut i: usize) {
    loop {
        let left = 2 * i + 1;
        if left >= heap.len() {
            break;
        }
        let right = left + 1;
        let child = if right < heap.len() && comes_before(sources, heap[right], heap[left]) {
            right
        } else {
            left
        };
        if !comes_before(sources, heap[child], heap[i]) {
            break;
        }
        heap.swap(i, child);
        i = child;
    }
}

impl<'a> MergeScanner<'a> {
    /// Merges `sources` (oldest first), each sought to `start`.
    pub fn new(
        sources: Vec<Box<dyn KeyValueScanner + 'a>>,
        start: &CellKey,
    ) -> Result<MergeScanner<'a>> {
        let mut merge = MergeScanner {
            heap: Vec::with_capacity(sources.len()),
            sources,
            current: None,
        };
        merge.seek(start)?;
        Ok(merge)
    }

    /// Adds `source` to the merge if it holds a cell (it must be in neither `current` nor
    /// the heap).
    fn add(&mut self, source: usize) {
        if self.sources[source].peek().is_none() {
            return;
        }
        let source = match self.current {
            None => {
                self.current = Some(source);
                return;
            }
            Some(current) if comes_before(&self.sources, source, current) => {
                self.current = Some(source);
                current
            }
            Some(_) => source,
        };
        self.heap.push(source);
        let last = self.heap.len() - 1;
        sift_up(&self.sources, &mut self.heap, last);
    }

    /// The heap's first source, taken out of it.
    fn pop(&mut self) -> Option<usize> {
        if self.heap.is_empty() {
            return None;
        }
        let first = self.heap.swap_remove(0);
        sift_down(&self.sources, &mut self.heap, 0);
        Some(first)
    }

    /// After `current` moved forward: it stays current while it still comes first, gives way
    /// to the heap's top when that comes first now, and leaves the merge when exhausted.
    fn settle(&mut self) {
        let Some(current) = self.current else {
            return;
        };
        if self.sources[current].peek().is_none() {
            self.current = self.pop();
            return;
        }
        if let Some(&top) = self.heap.first()
            && comes_before(&self.sources, top, current)
        {
            self.heap[0] = current;
            sift_down(&self.sources, &mut self.heap, 0);
            self.current = Some(top);
        }
    }

    fn clear(&mut self) {
        self.current = None;
        self.heap.clear();
    }
}

impl KeyValueScanner for MergeScanner<'_> {
    fn peek(&self) -> Option<&Cell> {
        self.current.and_then(|c| self.sources[c].peek())
    }

    fn next(&mut self) -> Result<Option<Cell>> {
        let Some(current) = self.current else {
            return Ok(None);
        };
        let cell = self.sources[current].next()?;
        self.settle();
        Ok(cell)
    }

    fn next_into(&mut self, out: &mut Vec<Cell>) -> Result<()> {
        let Some(current) = self.current else {
            return Ok(());
        };
        self.sources[current].next_into(out)?;
        self.settle();
        Ok(())
    }

    fn skip(&mut self) -> Result<()> {
        let Some(current) = self.current else {
            return Ok(());
        };
        self.sources[current].skip()?;
        self.settle();
        Ok(())
    }

    fn keep_and_reseek(&mut self, out: &mut Vec<Cell>, key: &CellKey) -> Result<()> {
        let Some(current) = self.current else {
            return Ok(());
        };
        self.sources[current].keep_and_reseek(out, key)?;
        self.settle();
        self.reseek(key)
    }

    fn keep_and_leave_row(&mut self, out: &mut Vec<Cell>) -> Result<()> {
        let Some(current) = self.current else {
            return Ok(());
        };
        self.sources[current].keep_and_leave_row(out)?;
        self.settle();
        // The source that kept the cell has left its row; the others stand after it in the
        // merge's order, so only if the first of them is still in the row is there a reseek.
        let Some(kept) = out.last() else {
            return Ok(());
        };
        if self
            .peek()
            .is_some_and(|next| same_bytes(next.row(), kept.row()))
        {
            let key = CellKey::last_on_row(kept.row_bytes());
            return self.reseek(&key);
        }
        Ok(())
    }

    /// While another source also holds cells of `row`, cell by cell through the merge; once
    /// the current source alone does (the other sources' first cells are of later rows, the
    /// common case: a row lives in one store file), that source takes the rest of the row.
    fn take_row(&mut self, row: &[u8], out: &mut Vec<Cell>, decide: &mut Decide<'_>) -> Result<()> {
        while let Some(current) = self.current {
            let Some(cell) = self.sources[current].peek() else {
                break;
            };
            if !same_bytes(cell.row(), row) {
                break;
            }
            let alone = self.heap.first().is_none_or(|&top| {
                self.sources[top]
                    .peek()
                    .is_none_or(|c| !same_bytes(c.row(), row))
            });
            if alone {
                self.sources[current].take_row(row, out, decide)?;
                self.settle();
                break;
            }
            let take = decide(cell, out);
            if !apply(self, take, out)? {
                break;
            }
        }
        Ok(())
    }

    fn seek(&mut self, key: &CellKey) -> Result<()> {
        self.clear();
        for source in 0..self.sources.len() {
            self.sources[source].seek(key)?;
            self.add(source);
        }
        Ok(())
    }

    /// Reseeks only the sources whose current cell is before `key`, the first one first: once
    /// the first cell is at or past `key`, every source's is.
    fn reseek(&mut self, key: &CellKey) -> Result<()> {
        while let Some(current) = self.current {
            if self.sources[current]
                .peek()
                .is_some_and(|cell| cell.key() >= key)
            {
                break;
            }
            self.sources[current].reseek(key)?;
            self.settle();
        }
        Ok(())
    }

    /// Each source finds its own last row before `row`; the greatest of those is the merge's,
    /// and the sources that stopped at an earlier row move forward to it (they then stand past
    /// it, as a forward merge from that row wants).
    fn seek_before_row(&mut self, row: Option<&[u8]>) -> Result<()> {
        self.clear();
        let mut best: Option<bytes::Bytes> = None;
        for source in &mut self.sources {
            source.seek_before_row(row)?;
            if let Some(cell) = source.peek()
                && best.as_ref().is_none_or(|b| cell.row() > b)
            {
                best = Some(cell.row_bytes());
            }
        }
        let Some(best) = best else {
            return Ok(());
        };
        let first = CellKey::first_on_row(best);
        for source in 0..self.sources.len() {
            if self.sources[source]
                .peek()
                .is_some_and(|c| c.row() < first.row())
            {
                self.sources[source].seek(&first)?;
            }
            self.add(source);
        }
        Ok(())
    }
}
