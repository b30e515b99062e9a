//! What a reader taking a row's cells in one call does with each cell: the vocabulary shared by
//! every sorted source that hands out a row at a time (store files, memstores, their merge).

use crate::Cell;

/// What a reader taking a row's cells in one call does with each cell it is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Take {
    /// Move the cell into the results and go on with the row.
    Keep,
    /// Drop the cell and go on with the row.
    Pass,
    /// Leave the cell where it is (it is then the source's next cell) and return: the reader
    /// handles it by itself (a seek, typically).
    Stop,
}

/// The decision a row reader makes about a cell, given the results kept so far.
pub type Decide<'d> = dyn FnMut(&Cell, &[Cell]) -> Take + 'd;
