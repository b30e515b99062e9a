//! The k-way merge the region reads and compacts through: any number of sorted scanners (store
//! files, memstore segments) behind one, ordered by their current cell with ties going to the
//! newer source (HBase's `KeyValueHeap`).

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use keel_cell::{Cell, CellKey};

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
            Some(row) => self.cells.partition_point(|c| &c.row()[..] < row),
        };
        self.pos = last_row_start(&self.cells, end).unwrap_or(self.cells.len());
        Ok(())
    }
}

struct Head {
    key: CellKey,
    source: usize,
}

impl PartialEq for Head {
    fn eq(&self, other: &Head) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Head {}
impl PartialOrd for Head {
    fn partial_cmp(&self, other: &Head) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Head {
    /// Max-heap order: the smallest key is "greatest"; on equal keys the newer (higher) source.
    fn cmp(&self, other: &Head) -> Ordering {
        other
            .key
            .cmp(&self.key)
            .then(self.source.cmp(&other.source))
    }
}

/// Merges scanners; sources are listed oldest first, and on equal keys a later source's cell
/// comes first.
pub struct MergeScanner<'a> {
    sources: Vec<Box<dyn KeyValueScanner + 'a>>,
    heap: BinaryHeap<Head>,
}

impl std::fmt::Debug for MergeScanner<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MergeScanner")
            .field("sources", &self.sources.len())
            .field("live", &self.heap.len())
            .finish()
    }
}

impl<'a> MergeScanner<'a> {
    /// Merges `sources` (oldest first), each sought to `start`.
    pub fn new(
        sources: Vec<Box<dyn KeyValueScanner + 'a>>,
        start: &CellKey,
    ) -> Result<MergeScanner<'a>> {
        let mut merge = MergeScanner {
            sources,
            heap: BinaryHeap::new(),
        };
        merge.seek(start)?;
        Ok(merge)
    }

    fn push(&mut self, source: usize) {
        if let Some(cell) = self.sources[source].peek() {
            self.heap.push(Head {
                key: cell.key().clone(),
                source,
            });
        }
    }
}

impl KeyValueScanner for MergeScanner<'_> {
    fn peek(&self) -> Option<&Cell> {
        self.heap.peek().and_then(|h| self.sources[h.source].peek())
    }

    fn next(&mut self) -> Result<Option<Cell>> {
        let Some(head) = self.heap.pop() else {
            return Ok(None);
        };
        let cell = self.sources[head.source].next()?;
        self.push(head.source);
        Ok(cell)
    }

    fn seek(&mut self, key: &CellKey) -> Result<()> {
        self.heap.clear();
        for source in 0..self.sources.len() {
            self.sources[source].seek(key)?;
            self.push(source);
        }
        Ok(())
    }

    /// Only the sources standing before `key` move (each by its own reseek); the rest, and
    /// the heap's order among them, stay as they are.
    fn reseek(&mut self, key: &CellKey) -> Result<()> {
        while self.heap.peek().is_some_and(|head| &head.key < key) {
            let Some(head) = self.heap.pop() else { break };
            self.sources[head.source].reseek(key)?;
            self.push(head.source);
        }
        Ok(())
    }

    /// Each source finds its own last row before `row`; the greatest of those is the merge's,
    /// and the sources that stopped at an earlier row move forward to it (they then stand past
    /// it, as a forward merge from that row wants).
    fn seek_before_row(&mut self, row: Option<&[u8]>) -> Result<()> {
        self.heap.clear();
        let mut best: Option<bytes::Bytes> = None;
        for source in &mut self.sources {
            source.seek_before_row(row)?;
            if let Some(cell) = source.peek()
                && best.as_ref().is_none_or(|b| cell.row() > b)
            {
                best = Some(cell.row().clone());
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
            self.push(source);
        }
        Ok(())
    }
}
