//! `FilterList` (`FilterListWithAND`, `FilterListWithOR`, as HBase 2.x merges their return
//! codes), `SkipFilter` and `WhileMatchFilter`.

use std::cmp::Ordering;

use keel_cell::{Cell, CellKey};

use super::running::{Active, before_hint, hint_order};
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
        List {
            op,
            filters,
            included: vec![false; n],
            transformers,
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
            if filter.filter_all_remaining() {
                return NextRow;
            }
            let local = filter.filter_cell(cell);
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
            if self.filters[i].filter_all_remaining() {
                continue;
            }
            let local = match self.answer_from_previous(i, cell) {
                Some(code) => code,
                None => self.filters[i].filter_cell(cell),
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
                for f in &mut self.filters {
                    if f.filter_all_remaining() || f.filter_row_key(row) {
                        drop = true;
                    }
                }
                drop
            }
            ListOp::One => {
                let mut drop = true;
                for f in &mut self.filters {
                    if !f.filter_all_remaining() && !f.filter_row_key(row) {
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
        for f in &mut self.filters {
            f.filter_row_cells(cells);
        }
    }

    fn filter_row(&mut self) -> bool {
        if self.filters.is_empty() {
            return false;
        }
        match self.op {
            ListOp::All => self.filters.iter_mut().any(|f| f.filter_row()),
            ListOp::One => self.filters.iter_mut().all(|f| f.filter_row()),
        }
    }

    fn filter_all_remaining(&self) -> bool {
        if self.filters.is_empty() {
            return false;
        }
        match self.op {
            ListOp::All => self.filters.iter().any(|f| f.filter_all_remaining()),
            ListOp::One => self.filters.iter().all(|f| f.filter_all_remaining()),
        }
    }

    fn hint(&self, cell: &Cell) -> Option<CellKey> {
        match self.op {
            // The furthest of the hinting filters' hints.
            ListOp::All => self
                .hinting
                .iter()
                .filter(|&&i| !self.filters[i].filter_all_remaining())
                .filter_map(|&i| self.filters[i].hint(cell))
                .max_by(|a, b| hint_order(a, b, self.reversed)),
            // The nearest; none if any filter still running has none.
            ListOp::One => {
                let mut nearest: Option<CellKey> = None;
                for f in self.filters.iter().filter(|f| !f.filter_all_remaining()) {
                    let hint = f.hint(cell)?;
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
        for f in &mut self.filters {
            f.reset();
        }
        self.included.fill(false);
        self.previous.fill(None);
        self.hinting.clear();
    }
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

    fn reset(&mut self) {
        self.inner.reset();
    }
}
