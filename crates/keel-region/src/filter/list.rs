//! `FilterList` (`FilterListWithAND`, `FilterListWithOR`, as HBase 2.x merges their return
//! codes), `SkipFilter` and `WhileMatchFilter`.

use std::cmp::Ordering;

use keel_cell::{Cell, CellKey};

use super::running::{
    Active, Hooks, before_hint, drops_row, drops_row_key, ends_scan, hint_order, reset,
};
use super::{ListOp, ReturnCode};

use ReturnCode::{
    Include, IncludeAndNextCol as InclNextCol, IncludeAndSeekNextRow as InclNextRow, NextCol,
    NextRow, SeekNextUsingHint as Hint, Skip,
};

/// A list of running filters.
#[derive(Debug)]
pub(super) struct List {
    op: ListOp,
    filters: Vec<Box<dyn Active>>,
    /// Which filters included the last cell (its transform chains through them, in order).
    included: Vec<bool>,
    /// The filters that may change a cell (`Active::transforms`, fixed): only they are asked to.
    transformers: Vec<usize>,
    /// Each filter's `Active::hooks` (fixed): a call a filter does not hook is left out.
    hooks: Vec<Hooks>,
    /// The list's own, from its filters'.
    list_hooks: Hooks,
    /// OR: each filter's last cell and code, to answer for it without asking again while the
    /// scan is still inside the step it asked for (HBASE-17678).
    previous: Vec<Option<(Cell, ReturnCode)>>,
    /// AND: the filters whose code for the last cell was a hint.
    hinting: Vec<usize>,
    /// The scan runs backwards (hints compare in its order).
    reversed: bool,
}

impl List {
    pub(super) fn new(op: ListOp, filters: Vec<Box<dyn Active>>, reversed: bool) -> List {
        let n = filters.len();
        let transformers = (0..n).filter(|&i| filters[i].transforms()).collect();
        let hooks: Vec<Hooks> = filters.iter().map(|f| f.hooks()).collect();
        List {
            list_hooks: list_hooks(op, &hooks),
            op,
            filters,
            included: vec![false; n],
            transformers,
            hooks,
            previous: vec![None; n],
            hinting: Vec::new(),
            reversed,
        }
    }

    fn filter_cell_all(&mut self, cell: &Cell) -> ReturnCode {
        let mut rc = Include;
        self.hinting.clear();
        self.included.fill(false);
        for (i, filter) in self.filters.iter_mut().enumerate() {
            let hooks = self.hooks[i];
            if ends_scan(filter.as_ref(), hooks) {
                return NextRow;
            }
            let local = cell_code(filter.as_mut(), hooks, cell);
            rc = merge_all(rc, local);
            if local.includes() {
                self.included[i] = true;
            }
            if local == Hint {
                self.hinting.push(i);
            }
            // HBASE-20565: once the merged code drops the cell, later filters never see it.
            if !rc.includes() {
                break;
            }
        }
        if self.hinting.is_empty() { rc } else { Hint }
    }

    fn filter_cell_one(&mut self, cell: &Cell) -> ReturnCode {
        let mut rc: Option<ReturnCode> = None;
        for i in 0..self.filters.len() {
            self.included[i] = false;
            if self.ended(i) {
                continue;
            }
            let local = match self.answer_from_previous(i, cell) {
                Some(code) => code,
                None => cell_code(self.filters[i].as_mut(), self.hooks[i], cell),
            };
            self.previous[i] = match local {
                Include | Skip => None,
                code => Some((cell.clone(), code)),
            };
            rc = Some(match rc {
                None => local,
                Some(rc) => merge_one(rc, local),
            });
            if local.includes() {
                self.included[i] = true;
            }
        }
        rc.unwrap_or(Skip)
    }

    /// Whether filter `i` has ended the scan.
    fn ended(&self, i: usize) -> bool {
        ends_scan(self.filters[i].as_ref(), self.hooks[i])
    }

    /// What filter `i` would say about `cell` given what it said about its previous cell, if
    /// that settles it (the scan has not yet left the column, family or hint it asked to skip).
    fn answer_from_previous(&self, i: usize, cell: &Cell) -> Option<ReturnCode> {
        let (previous, code) = self.previous[i].as_ref()?;
        match code {
            Include | Skip => None,
            Hint => {
                let hint = self.filters[i].hint(previous)?;
                before_hint(cell, &hint, self.reversed).then_some(Hint)
            }
            NextCol | InclNextCol => (previous.family() == cell.family()
                && previous.qualifier() == cell.qualifier())
            .then_some(NextCol),
            NextRow | InclNextRow => (previous.family() == cell.family()).then_some(NextRow),
        }
    }
}

impl Active for List {
    fn filter_row_key(&mut self, row: &[u8]) -> bool {
        if self.filters.is_empty() {
            return false;
        }
        // Every filter is asked (some note the row change there), whatever the answer.
        match self.op {
            ListOp::All => {
                let mut drop = false;
                for (f, &hooks) in self.filters.iter_mut().zip(&self.hooks) {
                    if ends_scan(f.as_ref(), hooks) || drops_row_key(f.as_mut(), hooks, row) {
                        drop = true;
                    }
                }
                drop
            }
            ListOp::One => {
                let mut drop = true;
                for (f, &hooks) in self.filters.iter_mut().zip(&self.hooks) {
                    if !ends_scan(f.as_ref(), hooks) && !drops_row_key(f.as_mut(), hooks, row) {
                        drop = false;
                    }
                }
                drop
            }
        }
    }

    fn filter_cell(&mut self, cell: &Cell) -> ReturnCode {
        if self.filters.is_empty() {
            return Include;
        }
        match self.op {
            ListOp::All => self.filter_cell_all(cell),
            ListOp::One => self.filter_cell_one(cell),
        }
    }

    fn transform(&self, cell: Cell) -> Cell {
        if let [only] = self.transformers[..] {
            // The common list (a row count's): one filter that changes cells, called directly.
            return if self.included[only] {
                self.filters[only].transform(cell)
            } else {
                cell
            };
        }
        self.transformers
            .iter()
            .filter(|&&i| self.included[i])
            .fold(cell, |cell, &i| self.filters[i].transform(cell))
    }

    fn has_filter_row(&self) -> bool {
        self.filters.iter().any(|f| f.has_filter_row())
    }

    /// AND asks its filters in order and stops at the first that drops a cell, so its first
    /// filter's `NextRow` is the list's, and no later filter sees the cell. OR asks every filter
    /// and keeps what any includes: not predicted.
    fn drops_rest_of_row(&self) -> bool {
        self.op == ListOp::All && self.filters.first().is_some_and(|f| f.drops_rest_of_row())
    }

    fn transforms(&self) -> bool {
        !self.transformers.is_empty()
    }

    /// AND and OR alike include a cell that every filter includes, and each filter that
    /// passes the row minds nothing of being asked or not.
    fn passes_rest_of_row(&self) -> bool {
        !self.filters.is_empty() && self.filters.iter().all(|f| f.passes_rest_of_row())
    }

    fn filter_row_cells(&mut self, cells: &mut Vec<Cell>) {
        for (f, hooks) in self.filters.iter_mut().zip(&self.hooks) {
            if hooks.has(Hooks::ROW) {
                f.filter_row_cells(cells);
            }
        }
    }

    fn filter_row(&mut self) -> bool {
        if self.filters.is_empty() {
            return false;
        }
        let mut filters = self.filters.iter_mut().zip(&self.hooks);
        match self.op {
            ListOp::All => filters.any(|(f, &hooks)| drops_row(f.as_mut(), hooks)),
            ListOp::One => filters.all(|(f, &hooks)| drops_row(f.as_mut(), hooks)),
        }
    }

    fn filter_all_remaining(&self) -> bool {
        if !self.list_hooks.has(Hooks::END) {
            return false;
        }
        match self.op {
            ListOp::All => (0..self.filters.len()).any(|i| self.ended(i)),
            ListOp::One => (0..self.filters.len()).all(|i| self.ended(i)),
        }
    }

    fn hooks(&self) -> Hooks {
        self.list_hooks
    }

    fn hint(&self, cell: &Cell) -> Option<CellKey> {
        match self.op {
            // The furthest of the hinting filters' hints.
            ListOp::All => self
                .hinting
                .iter()
                .filter(|&&i| !self.ended(i))
                .filter_map(|&i| self.filters[i].hint(cell))
                .max_by(|a, b| hint_order(a, b, self.reversed)),
            // The nearest; none if any filter still running has none.
            ListOp::One => {
                let mut nearest: Option<CellKey> = None;
                for i in (0..self.filters.len()).filter(|&i| !self.ended(i)) {
                    let hint = self.filters[i].hint(cell)?;
                    if nearest
                        .as_ref()
                        .is_none_or(|n| hint_order(&hint, n, self.reversed) == Ordering::Less)
                    {
                        nearest = Some(hint);
                    }
                }
                nearest
            }
        }
    }

    fn reset(&mut self) {
        for (f, &hooks) in self.filters.iter_mut().zip(&self.hooks) {
            reset(f.as_mut(), hooks);
        }
        // `included` and `hinting` are rewritten by the next `filter_cell` before they are
        // read; only OR's previous answers outlive it.
        if self.op == ListOp::One {
            self.previous.fill(None);
        }
    }
}

/// A list's hooks from its filters': a call is hooked if a filter hooks it, or if its
/// answer depends on whether a filter has ended (an ended filter drops a row key and a cell
/// in AND, and is left out in OR); OR always resets (its filters' previous answers).
fn list_hooks(op: ListOp, hooks: &[Hooks]) -> Hooks {
    if hooks.is_empty() {
        return Hooks::NONE;
    }
    let any = |h: Hooks| hooks.iter().any(|f| f.has(h));
    let mut list = Hooks::NONE;
    for (hook, needed) in [
        (Hooks::ROW_KEY, any(Hooks::ROW_KEY) || any(Hooks::END)),
        (Hooks::CELL, any(Hooks::CELL) || any(Hooks::END)),
        (Hooks::ROW, any(Hooks::ROW)),
        (Hooks::RESET, any(Hooks::RESET) || op == ListOp::One),
        (
            Hooks::END,
            match op {
                ListOp::All => any(Hooks::END),
                ListOp::One => hooks.iter().all(|f| f.has(Hooks::END)),
            },
        ),
    ] {
        if needed {
            list = list | hook;
        }
    }
    list
}

/// `filter.filter_cell(cell)`, asked only of a filter that hooks it (`Include` otherwise).
fn cell_code(filter: &mut dyn Active, hooks: Hooks, cell: &Cell) -> ReturnCode {
    if hooks.has(Hooks::CELL) {
        return filter.filter_cell(cell);
    }
    debug_assert_eq!(
        filter.filter_cell(cell),
        Include,
        "a filter answered a cell without hooking the call: {filter:?}"
    );
    Include
}

/// `FilterListWithAND.mergeReturnCode`: the larger step.
fn merge_all(rc: ReturnCode, local: ReturnCode) -> ReturnCode {
    if rc == Hint {
        return Hint;
    }
    match (local, rc) {
        (Hint, _) => Hint,
        (Include, rc) => rc,
        (InclNextCol, Include | InclNextCol) => InclNextCol,
        (InclNextCol, InclNextRow) => InclNextRow,
        (InclNextCol, Skip | NextCol) => NextCol,
        (InclNextCol, NextRow) => NextRow,
        (InclNextRow, Include | InclNextCol | InclNextRow) => InclNextRow,
        (InclNextRow, Skip | NextCol | NextRow) => NextRow,
        (Skip, Include | Skip) => Skip,
        (Skip, InclNextCol | NextCol) => NextCol,
        (Skip, InclNextRow | NextRow) => NextRow,
        (NextCol, Include | InclNextCol | Skip | NextCol) => NextCol,
        (NextCol, InclNextRow | NextRow) => NextRow,
        (NextRow, _) => NextRow,
        (_, Hint) => Hint,
    }
}

/// `FilterListWithOR.mergeReturnCode`: the smaller step; a hint beside anything else becomes
/// an include or a skip.
fn merge_one(rc: ReturnCode, local: ReturnCode) -> ReturnCode {
    match (local, rc) {
        (Include, _) => Include,
        (InclNextCol, Include | Skip | Hint) => Include,
        (InclNextCol, InclNextCol | InclNextRow | NextCol | NextRow) => InclNextCol,
        (InclNextRow, Include | Skip | Hint) => Include,
        (InclNextRow, InclNextCol | NextCol) => InclNextCol,
        (InclNextRow, InclNextRow | NextRow) => InclNextRow,
        (Skip, Include | InclNextCol | InclNextRow) => Include,
        (Skip, Skip | NextCol | NextRow | Hint) => Skip,
        (NextCol, Include) => Include,
        (NextCol, NextCol | NextRow) => NextCol,
        (NextCol, InclNextCol | InclNextRow) => InclNextCol,
        (NextCol, Skip | Hint) => Skip,
        (NextRow, Include) => Include,
        (NextRow, InclNextCol) => InclNextCol,
        (NextRow, InclNextRow) => InclNextRow,
        (NextRow, Skip | Hint) => Skip,
        (NextRow, NextCol) => NextCol,
        (NextRow, NextRow) => NextRow,
        (Hint, Include | InclNextCol | InclNextRow) => Include,
        (Hint, Skip | NextCol | NextRow) => Skip,
        (Hint, Hint) => Hint,
    }
}

/// `SkipFilter`: a row is dropped if the inner filter said anything but a plain include for
/// any of its cells.
#[derive(Debug)]
pub(super) struct SkipRows {
    inner: Box<dyn Active>,
    drop_row: bool,
}

impl SkipRows {
    pub(super) fn new(inner: Box<dyn Active>) -> SkipRows {
        SkipRows {
            inner,
            drop_row: false,
        }
    }
}

impl Active for SkipRows {
    fn filter_cell(&mut self, cell: &Cell) -> ReturnCode {
        let code = self.inner.filter_cell(cell);
        self.drop_row |= code != Include;
        code
    }

    fn transform(&self, cell: Cell) -> Cell {
        self.inner.transform(cell)
    }

    fn transforms(&self) -> bool {
        self.inner.transforms()
    }

    fn has_filter_row(&self) -> bool {
        true
    }

    fn filter_row(&mut self) -> bool {
        self.drop_row
    }

    fn reset(&mut self) {
        self.inner.reset();
        self.drop_row = false;
    }
}

/// `WhileMatchFilter`: the scan ends at the first row key, cell or row the inner filter
/// rejects.
#[derive(Debug)]
pub(super) struct WhileMatch {
    inner: Box<dyn Active>,
    done: bool,
}

impl WhileMatch {
    pub(super) fn new(inner: Box<dyn Active>) -> WhileMatch {
        WhileMatch { inner, done: false }
    }
}

impl Active for WhileMatch {
    fn filter_row_key(&mut self, row: &[u8]) -> bool {
        if self.filter_all_remaining() {
            return true;
        }
        let drop = self.inner.filter_row_key(row);
        self.done |= drop;
        drop
    }

    fn filter_cell(&mut self, cell: &Cell) -> ReturnCode {
        let code = self.inner.filter_cell(cell);
        self.done |= code != Include;
        code
    }

    fn transform(&self, cell: Cell) -> Cell {
        self.inner.transform(cell)
    }

    fn transforms(&self) -> bool {
        self.inner.transforms()
    }

    fn has_filter_row(&self) -> bool {
        true
    }

    fn filter_row(&mut self) -> bool {
        let drop = self.inner.filter_row();
        self.done |= drop;
        drop
    }

    fn filter_all_remaining(&self) -> bool {
        self.done || self.inner.filter_all_remaining()
    }

    fn hooks(&self) -> Hooks {
        Hooks::ALL
    }

    fn reset(&mut self) {
        self.inner.reset();
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Filter, ListOp};
    use super::Hooks;

    fn hooks(filter: &Filter) -> Hooks {
        filter.instantiate(false).hooks()
    }

    #[test]
    fn a_row_count_hooks_only_the_cell_and_the_reset() {
        let count = Filter::parse(b"FirstKeyOnlyFilter() AND KeyOnlyFilter()").expect("parse");
        assert_eq!(hooks(&count), Hooks::CELL | Hooks::RESET);
        assert_eq!(hooks(&Filter::List(ListOp::All, vec![])), Hooks::NONE);
    }

    #[test]
    fn a_list_hooks_what_its_filters_hook_and_or_always_resets() {
        let page_with_key_only = |op| {
            Filter::List(
                op,
                vec![
                    Filter::Page(3),
                    Filter::KeyOnly {
                        len_as_value: false,
                    },
                ],
            )
        };
        // An ended filter drops row keys and cells in AND: those calls are hooked too.
        assert_eq!(
            hooks(&page_with_key_only(ListOp::All)),
            Hooks::ROW_KEY | Hooks::CELL | Hooks::ROW | Hooks::END
        );
        // OR ends only when every filter may end.
        assert_eq!(
            hooks(&page_with_key_only(ListOp::One)),
            Hooks::ROW_KEY | Hooks::CELL | Hooks::ROW | Hooks::RESET
        );
        let pages = Filter::any(vec![Filter::Page(3), Filter::Page(4)]);
        assert!(hooks(&pages).has(Hooks::END));
        // Wrappers hook every call.
        let skip = Filter::Skip(Box::new(Filter::KeyOnly {
            len_as_value: false,
        }));
        assert_eq!(hooks(&skip), Hooks::ALL);
    }
}
