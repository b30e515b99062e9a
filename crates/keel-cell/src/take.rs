//! What a reader taking a row's cells in one call does with each cell: the vocabulary shared by
//! every sorted source that hands out a row at a time (store files, memstores, their merge).

use crate::{Cell, CellType, same_bytes};

/// What a reader taking a row's cells in one call does with each cell it is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Take {
    /// Move the cell into the results and go on with the row.
    Keep,
    /// [`Take::Keep`], and the reader would keep each following cell of the row that
    /// continues the run ([`RunRule::continues`]) without deciding it: a source that can tell
    /// so for less than asking (a flat memstore segment records which cells are the next
    /// column of the cell before them and reads none of their bytes; a store file tests the
    /// cells it decodes anyway) moves them into the results unasked, and shows the reader the
    /// first cell that does not continue. Any other source treats it as `Keep`. The reader
    /// learns of the cells kept so from the results having grown by more than the one it
    /// kept.
    KeepRun(RunRule),
    /// Drop the cell and go on with the row.
    Pass,
    /// Leave the cell where it is (it is then the source's next cell) and return: the reader
    /// handles it by itself (a seek, typically).
    Stop,
}

/// The decision a row reader makes about a cell, given the results kept so far.
pub type Decide<'d> = dyn FnMut(&Cell, &[Cell]) -> Take + 'd;

/// What a reader that wants one version of every column, with nothing in the row able to hide
/// a later column (no family delete marker seen, no column list), keeps of the cells after
/// one it kept: each that is the next column's newest version, a visible put in its time
/// range (HBase's scan query matcher reaches the same answer one cell at a time).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunRule {
    /// The reader's read point: a cell with a larger sequence id is not visible to it.
    pub read_point: u64,
    /// The first timestamp the reader keeps.
    pub min_ts: i64,
    /// The first timestamp past those the reader keeps (`[min_ts, max_ts)`).
    pub max_ts: i64,
}

impl RunRule {
    /// Whether `cell`, of the row of `last` and sorted right after it, continues the run
    /// `last` ends: [`RunRule::continues_next_column`] and of `last`'s family and another
    /// qualifier (cells come sorted, so a later one; never the empty qualifier, where a
    /// family's markers live, which sorts first in its family).
    #[inline]
    pub fn continues(&self, cell: &Cell, last: &Cell) -> bool {
        self.continues_next_column(cell)
            && same_bytes(cell.family(), last.family())
            && !same_bytes(cell.qualifier(), last.qualifier())
    }

    /// [`RunRule::continues`] for a cell its source knows to be of the row and family of the
    /// cell before it and another qualifier: a visible put in the time range. Reads only the
    /// cell's key fields, none of its bytes.
    #[inline]
    pub fn continues_next_column(&self, cell: &Cell) -> bool {
        let ts = cell.timestamp();
        cell.cell_type() == CellType::Put
            && cell.sequence_id() <= self.read_point
            && ts >= self.min_ts
            && ts < self.max_ts
    }
}

#[cfg(test)]
mod tests {
    use super::RunRule;
    use crate::Cell;

    fn put(family: &'static str, qualifier: &'static str, ts: i64, seq: u64) -> Cell {
        let mut cell = Cell::put("r", family, qualifier, ts, "v").unwrap();
        cell.set_sequence_id(seq);
        cell
    }

    #[test]
    fn a_run_is_the_next_columns_visible_puts_in_the_time_range() {
        let rule = RunRule {
            read_point: 10,
            min_ts: 5,
            max_ts: 50,
        };
        let last = put("f", "a", 7, 3);
        assert!(rule.continues(&put("f", "b", 7, 10), &last));
        assert!(!rule.continues(&put("f", "a", 6, 3), &last), "same column");
        assert!(
            !rule.continues(&put("g", "b", 7, 3), &last),
            "another family"
        );
        assert!(!rule.continues(&put("f", "b", 7, 11), &last), "not visible");
        assert!(
            !rule.continues(&put("f", "b", 50, 3), &last),
            "past the range"
        );
        assert!(
            !rule.continues(&put("f", "b", 4, 3), &last),
            "before the range"
        );
        let marker = Cell::delete_column("r", "f", "b", 7).unwrap();
        assert!(!rule.continues(&marker, &last), "a delete marker");
    }
}
