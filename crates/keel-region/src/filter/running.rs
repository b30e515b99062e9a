//! A filter at work in one scan: the [`Active`] trait (HBase's `Filter` methods, with their
//! defaults from `FilterBase`), and building a running instance from a [`Filter`] value.

use std::cmp::Ordering;

use keel_cell::{Cell, CellKey};

use super::leaf;
use super::list::{List, SkipRows, WhileMatch};
use super::{Filter, ReturnCode};

/// One running filter. Every method has HBase's `FilterBase` default.
pub(crate) trait Active: Send + std::fmt::Debug {
    /// True drops the row (called once per row, before any of its cells).
    fn filter_row_key(&mut self, _row: &[u8]) -> bool {
        false
    }

    /// What to do with one cell (one that passed the read's own rules).
    fn filter_cell(&mut self, _cell: &Cell) -> ReturnCode {
        ReturnCode::Include
    }

    /// An included cell, changed (KeyOnlyFilter).
    fn transform(&self, cell: Cell) -> Cell {
        cell
    }

    /// Whether [`Active::transform`] may change a cell: fixed for the filter's life (a scanner
    /// asks once, and leaves the cells of a filter that never changes them where they are).
    fn transforms(&self) -> bool {
        false
    }

    /// Whether this filter's next `filter_cell` in the current row will answer `NextRow`
    /// whatever the cell (of any family), with no other effect: `FirstKeyOnlyFilter` once it
    /// has included a cell. The scanner then leaves the family right after the cell it included,
    /// as if the answer had been `IncludeAndSeekNextRow`, instead of reading (decoding, matching)
    /// the next cell only to be told so. Called after an including `filter_cell`.
    fn drops_rest_of_row(&self) -> bool {
        false
    }

    /// Whether, after `filter_row_key` let the current row through, `filter_cell` will answer
    /// `Include` to every cell of the row, changing nothing, and `filter_all_remaining` keep its
    /// answer until the next row: `PrefixFilter` on a row with its prefix. The scanner then
    /// reads the row as an unfiltered scan does (`filter_row_cells`, `filter_row` and `reset`
    /// still run at its end).
    fn passes_rest_of_row(&self) -> bool {
        false
    }

    /// Whether `filter_row_cells` / `filter_row` decide on whole rows: fixed for the filter's
    /// life (a scanner asks once).
    fn has_filter_row(&self) -> bool {
        false
    }

    /// Edits the assembled row.
    fn filter_row_cells(&mut self, _cells: &mut Vec<Cell>) {}

    /// True drops the assembled row.
    fn filter_row(&mut self) -> bool {
        false
    }

    /// True ends the scan.
    fn filter_all_remaining(&self) -> bool {
        false
    }

    /// Where to continue after a `SeekNextUsingHint` for `cell`: a key in `cell`'s row (a
    /// column), or a row-level key (`CellKey::first_on_row`): forward, that row; reversed, the
    /// rows before it (see [`hint_order`]).
    fn hint(&self, _cell: &Cell) -> Option<CellKey> {
        None
    }

    /// Forgets the row (called between rows).
    fn reset(&mut self) {}
}

/// Whether a hint is row-level (it names a row, not a position in one).
pub(crate) fn is_row_hint(hint: &CellKey) -> bool {
    hint.family().is_empty()
}

/// Two hints in the scan's order (`Less`: `a` comes first, skipping less). Forward, key
/// order. Reversed, rows run downwards and a row-level hint stands for the rows below its row,
/// while a column hint is a position inside its row, read forwards.
pub(crate) fn hint_order(a: &CellKey, b: &CellKey, reversed: bool) -> Ordering {
    if !reversed {
        return a.cmp(b);
    }
    b.row()
        .cmp(a.row())
        .then_with(|| is_row_hint(a).cmp(&is_row_hint(b)))
        .then_with(|| a.cmp(b))
}

/// Whether `cell` comes before `hint` in the scan's order (the scan has not reached it yet).
pub(crate) fn before_hint(cell: &Cell, hint: &CellKey, reversed: bool) -> bool {
    if !reversed {
        return cell.key() < hint;
    }
    if is_row_hint(hint) {
        cell.row() >= hint.row()
    } else {
        cell.row() > hint.row() || (cell.row() == hint.row() && cell.key() < hint)
    }
}

pub(super) fn instantiate(filter: &Filter, reversed: bool) -> Box<dyn Active> {
    match filter {
        Filter::List(op, filters) => Box::new(List::new(
            *op,
            filters.iter().map(|f| instantiate(f, reversed)).collect(),
            reversed,
        )),
        Filter::Skip(inner) => Box::new(SkipRows::new(instantiate(inner, reversed))),
        Filter::WhileMatch(inner) => Box::new(WhileMatch::new(instantiate(inner, reversed))),
        leaf => leaf::instantiate(leaf, reversed),
    }
}
