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

    /// Which of the calls above this filter answers otherwise than `FilterBase` does: fixed
    /// for its life, asked once. A list or scanner leaves out the calls a filter does not
    /// hook (a row count's two filters hook one call of five between them, and a list asked
    /// each of them each call, per row); debug builds make them anyway and check the default
    /// answer. The default, every hook, is always right.
    fn hooks(&self) -> Hooks {
        Hooks::ALL
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

/// The per-row and per-cell calls of [`Active`] a filter answers itself ([`Active::hooks`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Hooks(u8);

impl Hooks {
    /// None: every call answered as `FilterBase` does.
    pub(crate) const NONE: Hooks = Hooks(0);
    /// `filter_row_key` may drop a row or note it.
    pub(crate) const ROW_KEY: Hooks = Hooks(1);
    /// `filter_cell` may answer other than `Include`, or note the cell.
    pub(crate) const CELL: Hooks = Hooks(1 << 1);
    /// `filter_row_cells` may edit a row, or `filter_row` drop it or note it.
    pub(crate) const ROW: Hooks = Hooks(1 << 2);
    /// `reset` forgets something.
    pub(crate) const RESET: Hooks = Hooks(1 << 3);
    /// `filter_all_remaining` may answer true.
    pub(crate) const END: Hooks = Hooks(1 << 4);
    /// Every call.
    pub(crate) const ALL: Hooks = Hooks((1 << 5) - 1);

    /// Whether every hook of `other` is in `self`.
    #[inline]
    pub(crate) fn has(self, other: Hooks) -> bool {
        self.0 & other.0 == other.0
    }
}

impl std::ops::BitOr for Hooks {
    type Output = Hooks;

    fn bitor(self, other: Hooks) -> Hooks {
        Hooks(self.0 | other.0)
    }
}

/// `call()`, made only if `hooks` has `hook`; otherwise `FilterBase`'s answer, false (debug
/// builds make the call anyway and check that it answers so).
#[inline]
fn hooked(hooks: Hooks, hook: Hooks, call: impl FnOnce() -> bool) -> bool {
    if hooks.has(hook) {
        return call();
    }
    let answered = cfg!(debug_assertions) && call();
    debug_assert!(
        !answered,
        "a filter answered a call it does not hook: {hook:?}"
    );
    false
}

/// `filter.filter_all_remaining()`, asked only of a filter that hooks it (`hooks`, the
/// filter's [`Active::hooks`] asked once).
#[inline]
pub(crate) fn ends_scan(filter: &dyn Active, hooks: Hooks) -> bool {
    hooked(hooks, Hooks::END, || filter.filter_all_remaining())
}

/// `filter.filter_row_key(row)`, called only on a filter that hooks it.
#[inline]
pub(crate) fn drops_row_key(filter: &mut dyn Active, hooks: Hooks, row: &[u8]) -> bool {
    hooked(hooks, Hooks::ROW_KEY, || filter.filter_row_key(row))
}

/// `filter.filter_row()`, called only on a filter that hooks it.
#[inline]
pub(crate) fn drops_row(filter: &mut dyn Active, hooks: Hooks) -> bool {
    hooked(hooks, Hooks::ROW, || filter.filter_row())
}

/// `filter.reset()`, called only on a filter that hooks it.
#[inline]
pub(crate) fn reset(filter: &mut dyn Active, hooks: Hooks) {
    if hooks.has(Hooks::RESET) {
        filter.reset();
    }
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
