//! The filters that look at cells themselves, each as HBase's class of the same name does
//! (the class is named on each type).

use std::collections::{BTreeSet, HashSet};

use bytes::Bytes;
use keel_cell::{Cell, CellKey, CellType};

use super::running::{Active, Hooks};
use super::{ColumnTest, Comparator, CompareOp, Filter, ReturnCode};

pub(super) fn instantiate(filter: &Filter, reversed: bool) -> Box<dyn Active> {
    match filter.clone() {
        Filter::KeyOnly { len_as_value } => Box::new(KeyOnly { len_as_value }),
        Filter::FirstKeyOnly => Box::new(FirstKeyOnly { found: false }),
        Filter::Prefix(prefix) => Box::new(Prefix {
            prefix,
            reversed,
            passed: false,
            drop_row: true,
            provide_hint: false,
        }),
        Filter::ColumnPrefix(prefix) => Box::new(ColumnPrefix { prefix }),
        Filter::MultipleColumnPrefix(prefixes) => Box::new(MultipleColumnPrefix {
            prefixes: prefixes.into_iter().collect(),
        }),
        Filter::ColumnCountGet(limit) => Box::new(ColumnCountGet { limit, count: 0 }),
        Filter::Page(size) => Box::new(Page { size, accepted: 0 }),
        Filter::ColumnPagination { limit, offset } => Box::new(ColumnPagination {
            limit,
            offset,
            count: 0,
        }),
        Filter::InclusiveStop(stop) => Box::new(InclusiveStop {
            stop,
            reversed,
            done: false,
        }),
        Filter::Timestamps {
            timestamps,
            can_hint,
        } => Box::new(Timestamps {
            timestamps: timestamps.into_iter().collect(),
            can_hint,
        }),
        Filter::Row(op, comparator) => Box::new(RowCompare {
            op,
            comparator,
            drop_row: false,
        }),
        Filter::Family(op, comparator) => Box::new(FamilyCompare { op, comparator }),
        Filter::Qualifier(op, comparator) => Box::new(QualifierCompare { op, comparator }),
        Filter::Value(op, comparator) => Box::new(ValueCompare { op, comparator }),
        Filter::ColumnRange {
            min,
            min_inclusive,
            max,
            max_inclusive,
        } => Box::new(ColumnRange {
            min,
            min_inclusive,
            max,
            max_inclusive,
        }),
        Filter::SingleColumnValue(test) => Box::new(SingleColumnValue {
            test,
            exclude: false,
            found: false,
            matched: false,
        }),
        Filter::SingleColumnValueExclude(test) => Box::new(SingleColumnValue {
            test,
            exclude: true,
            found: false,
            matched: false,
        }),
        Filter::DependentColumn {
            family,
            qualifier,
            drop,
            compare,
        } => Box::new(DependentColumn {
            family,
            qualifier,
            drop,
            compare,
            stamps: HashSet::new(),
        }),
        Filter::ColumnValue {
            family,
            qualifier,
            op,
            comparator,
        } => Box::new(ColumnValue {
            family,
            qualifier,
            op,
            comparator,
            found: false,
        }),
        Filter::Skip(_) | Filter::WhileMatch(_) | Filter::List(..) => {
            unreachable!("wrappers and lists are built by `running::instantiate`")
        }
    }
}

/// `KeyOnlyFilter`.
#[derive(Debug)]
struct KeyOnly {
    len_as_value: bool,
}

impl Active for KeyOnly {
    fn transforms(&self) -> bool {
        true
    }

    fn transform(&self, cell: Cell) -> Cell {
        let value = if self.len_as_value {
            Bytes::copy_from_slice(&(cell.value().len() as u32).to_be_bytes())
        } else {
            Bytes::new()
        };
        // The key keeps the value after it in its buffer: an empty value cuts it short there
        // (no copy, no reference counted), a length is joined in a new one.
        Cell::from_parts(cell.into_key(), value)
    }

    fn hooks(&self) -> Hooks {
        Hooks::NONE
    }
}

/// `FirstKeyOnlyFilter`: the flag spans the row's families.
#[derive(Debug)]
struct FirstKeyOnly {
    found: bool,
}

impl Active for FirstKeyOnly {
    fn filter_cell(&mut self, _cell: &Cell) -> ReturnCode {
        if self.found {
            return ReturnCode::NextRow;
        }
        self.found = true;
        ReturnCode::Include
    }

    fn drops_rest_of_row(&self) -> bool {
        self.found
    }

    fn reset(&mut self) {
        self.found = false;
    }

    fn hooks(&self) -> Hooks {
        Hooks::CELL | Hooks::RESET
    }
}

/// `PrefixFilter` (current master's, with its hint): a row before the prefix is answered with a
/// hint to the prefix's first row, so the scan seeks there; the first row past it ends the
/// scan.
#[derive(Debug)]
struct Prefix {
    prefix: Bytes,
    reversed: bool,
    passed: bool,
    drop_row: bool,
    provide_hint: bool,
}

impl Active for Prefix {
    fn filter_row_key(&mut self, row: &[u8]) -> bool {
        if self.passed {
            return true;
        }
        let head = &row[..row.len().min(self.prefix.len())];
        // A row shorter than the prefix and equal to its start sorts before it.
        let cmp = head
            .cmp(&self.prefix[..head.len()])
            .then(head.len().cmp(&self.prefix.len()));
        if (!self.reversed && cmp.is_gt()) || (self.reversed && cmp.is_lt()) {
            self.passed = true;
            return true;
        }
        self.drop_row = cmp.is_ne();
        self.provide_hint = (!self.reversed && cmp.is_lt()) || (self.reversed && cmp.is_gt());
        false
    }

    fn filter_cell(&mut self, _cell: &Cell) -> ReturnCode {
        if self.provide_hint {
            ReturnCode::SeekNextUsingHint
        } else if self.drop_row {
            ReturnCode::NextRow
        } else {
            ReturnCode::Include
        }
    }

    fn has_filter_row(&self) -> bool {
        false
    }

    fn passes_rest_of_row(&self) -> bool {
        // A row with the prefix (a hint is only ever given for a row without it).
        !self.passed && !self.drop_row
    }

    fn filter_row(&mut self) -> bool {
        self.drop_row
    }

    fn filter_all_remaining(&self) -> bool {
        self.passed
    }

    fn hint(&self, _cell: &Cell) -> Option<CellKey> {
        if self.reversed {
            // Reversed, the scan continues at the last row before this one: the first row
            // after every row with the prefix.
            crate::scan::prefix_end(&self.prefix).map(CellKey::first_on_row)
        } else {
            Some(CellKey::first_on_row(self.prefix.clone()))
        }
    }

    fn reset(&mut self) {
        self.drop_row = true;
        self.provide_hint = false;
    }

    fn hooks(&self) -> Hooks {
        Hooks::ROW_KEY | Hooks::CELL | Hooks::ROW | Hooks::RESET | Hooks::END
    }
}

/// Compares the first `len` bytes of `qualifier` with the first `len` of `prefix` (HBase
/// `compareQualifierPart`).
fn compare_part(qualifier: &[u8], prefix: &[u8], len: usize) -> std::cmp::Ordering {
    qualifier[..len].cmp(&prefix[..len])
}

fn column_hint(cell: &Cell, qualifier: Bytes) -> CellKey {
    CellKey::first_on_column(cell.row_bytes(), cell.family(), qualifier)
}

/// `ColumnPrefixFilter`.
#[derive(Debug)]
struct ColumnPrefix {
    prefix: Bytes,
}

impl Active for ColumnPrefix {
    fn filter_cell(&mut self, cell: &Cell) -> ReturnCode {
        let qualifier = cell.qualifier();
        if qualifier.len() < self.prefix.len() {
            if compare_part(qualifier, &self.prefix, qualifier.len()).is_le() {
                ReturnCode::SeekNextUsingHint
            } else {
                ReturnCode::NextRow
            }
        } else {
            match compare_part(qualifier, &self.prefix, self.prefix.len()) {
                std::cmp::Ordering::Less => ReturnCode::SeekNextUsingHint,
                std::cmp::Ordering::Greater => ReturnCode::NextRow,
                std::cmp::Ordering::Equal => ReturnCode::Include,
            }
        }
    }

    fn hint(&self, cell: &Cell) -> Option<CellKey> {
        Some(column_hint(cell, self.prefix.clone()))
    }

    fn hooks(&self) -> Hooks {
        Hooks::CELL
    }
}

/// `MultipleColumnPrefixFilter`.
#[derive(Debug)]
struct MultipleColumnPrefix {
    prefixes: BTreeSet<Bytes>,
}

impl MultipleColumnPrefix {
    /// The prefix to seek to from `qualifier`, if the qualifier matches none.
    fn next_prefix(&self, qualifier: &[u8]) -> Result<(), Option<Bytes>> {
        let at_or_before = (
            std::ops::Bound::Unbounded,
            std::ops::Bound::Included(qualifier),
        );
        match self.prefixes.range::<[u8], _>(at_or_before).next_back() {
            Some(largest) if qualifier.starts_with(largest) => Ok(()),
            Some(largest) => Err(self
                .prefixes
                .range((
                    std::ops::Bound::Excluded(largest.clone()),
                    std::ops::Bound::Unbounded,
                ))
                .next()
                .cloned()),
            None => Err(self.prefixes.first().cloned()),
        }
    }
}

impl Active for MultipleColumnPrefix {
    fn filter_cell(&mut self, cell: &Cell) -> ReturnCode {
        if self.prefixes.is_empty() {
            return ReturnCode::Include;
        }
        match self.next_prefix(cell.qualifier()) {
            Ok(()) => ReturnCode::Include,
            Err(None) => ReturnCode::NextRow,
            Err(Some(_)) => ReturnCode::SeekNextUsingHint,
        }
    }

    fn hint(&self, cell: &Cell) -> Option<CellKey> {
        match self.next_prefix(cell.qualifier()) {
            Err(Some(prefix)) => Some(column_hint(cell, prefix)),
            _ => None,
        }
    }

    fn hooks(&self) -> Hooks {
        Hooks::CELL
    }
}

/// `ColumnCountGetFilter`: the count is per row, but the first row with more columns than the
/// limit ends the scan.
#[derive(Debug)]
struct ColumnCountGet {
    limit: u32,
    count: u32,
}

impl Active for ColumnCountGet {
    fn filter_cell(&mut self, _cell: &Cell) -> ReturnCode {
        self.count = self.count.saturating_add(1);
        if self.filter_all_remaining() {
            ReturnCode::NextCol
        } else {
            ReturnCode::IncludeAndNextCol
        }
    }

    fn filter_all_remaining(&self) -> bool {
        self.count > self.limit
    }

    fn reset(&mut self) {
        self.count = 0;
    }

    fn hooks(&self) -> Hooks {
        Hooks::CELL | Hooks::RESET | Hooks::END
    }
}

/// `PageFilter`.
#[derive(Debug)]
struct Page {
    size: u64,
    accepted: u64,
}

impl Active for Page {
    fn has_filter_row(&self) -> bool {
        true
    }

    fn filter_row(&mut self) -> bool {
        self.accepted += 1;
        self.accepted > self.size
    }

    fn filter_all_remaining(&self) -> bool {
        self.accepted >= self.size
    }

    fn hooks(&self) -> Hooks {
        Hooks::ROW | Hooks::END
    }
}

/// `ColumnPaginationFilter` (the limit-and-offset form the filter language has).
#[derive(Debug)]
struct ColumnPagination {
    limit: u32,
    offset: u32,
    count: u64,
}

impl Active for ColumnPagination {
    fn filter_cell(&mut self, _cell: &Cell) -> ReturnCode {
        if self.count >= u64::from(self.offset) + u64::from(self.limit) {
            return ReturnCode::NextRow;
        }
        let code = if self.count < u64::from(self.offset) {
            ReturnCode::NextCol
        } else {
            ReturnCode::IncludeAndNextCol
        };
        self.count += 1;
        code
    }

    fn reset(&mut self) {
        self.count = 0;
    }

    fn hooks(&self) -> Hooks {
        Hooks::CELL | Hooks::RESET
    }
}

/// `InclusiveStopFilter`.
#[derive(Debug)]
struct InclusiveStop {
    stop: Bytes,
    reversed: bool,
    done: bool,
}

impl Active for InclusiveStop {
    fn filter_row_key(&mut self, row: &[u8]) -> bool {
        if self.done {
            return true;
        }
        let cmp = row.cmp(&self.stop[..]);
        self.done = if self.reversed {
            cmp.is_lt()
        } else {
            cmp.is_gt()
        };
        self.done
    }

    fn filter_cell(&mut self, _cell: &Cell) -> ReturnCode {
        if self.done {
            ReturnCode::NextRow
        } else {
            ReturnCode::Include
        }
    }

    fn filter_all_remaining(&self) -> bool {
        self.done
    }

    fn hooks(&self) -> Hooks {
        Hooks::ROW_KEY | Hooks::CELL | Hooks::END
    }
}

/// `TimestampsFilter`.
#[derive(Debug)]
struct Timestamps {
    timestamps: BTreeSet<i64>,
    can_hint: bool,
}

impl Active for Timestamps {
    fn filter_cell(&mut self, cell: &Cell) -> ReturnCode {
        let ts = cell.timestamp();
        if self.timestamps.contains(&ts) {
            ReturnCode::Include
        } else if self.timestamps.first().is_none_or(|&min| ts < min) {
            ReturnCode::NextCol
        } else if self.can_hint {
            ReturnCode::SeekNextUsingHint
        } else {
            ReturnCode::Skip
        }
    }

    fn hint(&self, cell: &Cell) -> Option<CellKey> {
        // Versions run newest first: the next wanted one is the largest listed below this.
        let next = *self.timestamps.range(..cell.timestamp()).next_back()?;
        CellKey::new(
            cell.row_bytes(),
            cell.family_bytes(),
            cell.qualifier_bytes(),
            next,
            CellType::Maximum,
        )
        .ok()
    }

    fn hooks(&self) -> Hooks {
        Hooks::CELL
    }
}

/// `RowFilter`.
#[derive(Debug)]
struct RowCompare {
    op: CompareOp,
    comparator: Comparator,
    drop_row: bool,
}

impl Active for RowCompare {
    fn filter_row_key(&mut self, row: &[u8]) -> bool {
        if !self.comparator.test(self.op, row) {
            self.drop_row = true;
        }
        self.drop_row
    }

    fn filter_cell(&mut self, _cell: &Cell) -> ReturnCode {
        if self.drop_row {
            ReturnCode::NextRow
        } else {
            ReturnCode::Include
        }
    }

    fn filter_row(&mut self) -> bool {
        self.drop_row
    }

    fn reset(&mut self) {
        self.drop_row = false;
    }

    fn hooks(&self) -> Hooks {
        Hooks::ROW_KEY | Hooks::CELL | Hooks::ROW | Hooks::RESET
    }
}

/// `FamilyFilter`: a failing family is skipped for the row.
#[derive(Debug)]
struct FamilyCompare {
    op: CompareOp,
    comparator: Comparator,
}

impl Active for FamilyCompare {
    fn filter_cell(&mut self, cell: &Cell) -> ReturnCode {
        if !cell.family().is_empty() && !self.comparator.test(self.op, cell.family()) {
            ReturnCode::NextRow
        } else {
            ReturnCode::Include
        }
    }

    fn hooks(&self) -> Hooks {
        Hooks::CELL
    }
}

/// `QualifierFilter`.
#[derive(Debug)]
struct QualifierCompare {
    op: CompareOp,
    comparator: Comparator,
}

impl Active for QualifierCompare {
    fn filter_cell(&mut self, cell: &Cell) -> ReturnCode {
        if !cell.qualifier().is_empty() && !self.comparator.test(self.op, cell.qualifier()) {
            ReturnCode::Skip
        } else {
            ReturnCode::Include
        }
    }

    fn hooks(&self) -> Hooks {
        Hooks::CELL
    }
}

/// `ValueFilter`.
#[derive(Debug)]
struct ValueCompare {
    op: CompareOp,
    comparator: Comparator,
}

impl Active for ValueCompare {
    fn filter_cell(&mut self, cell: &Cell) -> ReturnCode {
        if self.comparator.test(self.op, cell.value()) {
            ReturnCode::Include
        } else {
            ReturnCode::Skip
        }
    }

    fn hooks(&self) -> Hooks {
        Hooks::CELL
    }
}

/// `ColumnRangeFilter`.
#[derive(Debug)]
struct ColumnRange {
    min: Option<Bytes>,
    min_inclusive: bool,
    max: Option<Bytes>,
    max_inclusive: bool,
}

impl Active for ColumnRange {
    fn filter_cell(&mut self, cell: &Cell) -> ReturnCode {
        let qualifier = cell.qualifier();
        if let Some(min) = &self.min {
            let cmp = qualifier.cmp(&min[..]);
            if cmp.is_lt() {
                return ReturnCode::SeekNextUsingHint;
            }
            if cmp.is_eq() && !self.min_inclusive {
                return ReturnCode::NextCol;
            }
        }
        let Some(max) = &self.max else {
            return ReturnCode::Include;
        };
        let cmp = qualifier.cmp(&max[..]);
        if cmp.is_lt() || (cmp.is_eq() && self.max_inclusive) {
            ReturnCode::Include
        } else {
            ReturnCode::NextRow
        }
    }

    fn hint(&self, cell: &Cell) -> Option<CellKey> {
        self.min.clone().map(|min| column_hint(cell, min))
    }

    fn hooks(&self) -> Hooks {
        Hooks::CELL
    }
}

fn is_column(cell: &Cell, family: &[u8], qualifier: &[u8]) -> bool {
    cell.family() == family && cell.qualifier() == qualifier
}

/// `SingleColumnValueFilter` and (with `exclude`) `SingleColumnValueExcludeFilter`.
#[derive(Debug)]
struct SingleColumnValue {
    test: ColumnTest,
    exclude: bool,
    found: bool,
    matched: bool,
}

impl Active for SingleColumnValue {
    fn filter_cell(&mut self, cell: &Cell) -> ReturnCode {
        if self.matched {
            return ReturnCode::Include;
        }
        if self.test.latest_only && self.found {
            return ReturnCode::NextRow;
        }
        if !is_column(cell, &self.test.family, &self.test.qualifier) {
            return ReturnCode::Include;
        }
        self.found = true;
        if !self.test.comparator.test(self.test.op, cell.value()) {
            return if self.test.latest_only {
                ReturnCode::NextRow
            } else {
                ReturnCode::Include
            };
        }
        self.matched = true;
        ReturnCode::Include
    }

    fn has_filter_row(&self) -> bool {
        true
    }

    fn filter_row_cells(&mut self, cells: &mut Vec<Cell>) {
        if self.exclude {
            cells.retain(|c| !is_column(c, &self.test.family, &self.test.qualifier));
        }
    }

    fn filter_row(&mut self) -> bool {
        if self.found {
            !self.matched
        } else {
            self.test.filter_if_missing
        }
    }

    fn reset(&mut self) {
        self.found = false;
        self.matched = false;
    }

    fn hooks(&self) -> Hooks {
        Hooks::CELL | Hooks::ROW | Hooks::RESET
    }
}

/// `DependentColumnFilter`.
#[derive(Debug)]
struct DependentColumn {
    family: Bytes,
    qualifier: Bytes,
    drop: bool,
    compare: Option<(CompareOp, Comparator)>,
    stamps: HashSet<i64>,
}

impl Active for DependentColumn {
    fn filter_cell(&mut self, cell: &Cell) -> ReturnCode {
        if !is_column(cell, &self.family, &self.qualifier) {
            // Kept for now; `filter_row_cells` decides.
            return ReturnCode::Include;
        }
        if let Some((op, comparator)) = &self.compare
            && !comparator.test(*op, cell.value())
        {
            return ReturnCode::Skip;
        }
        self.stamps.insert(cell.timestamp());
        if self.drop {
            ReturnCode::Skip
        } else {
            ReturnCode::Include
        }
    }

    fn has_filter_row(&self) -> bool {
        true
    }

    fn filter_row_cells(&mut self, cells: &mut Vec<Cell>) {
        cells.retain(|c| self.stamps.contains(&c.timestamp()));
    }

    fn reset(&mut self) {
        self.stamps.clear();
    }

    fn hooks(&self) -> Hooks {
        Hooks::CELL | Hooks::ROW | Hooks::RESET
    }
}

/// `ColumnValueFilter`.
#[derive(Debug)]
struct ColumnValue {
    family: Bytes,
    qualifier: Bytes,
    op: CompareOp,
    comparator: Comparator,
    found: bool,
}

impl Active for ColumnValue {
    fn filter_cell(&mut self, cell: &Cell) -> ReturnCode {
        if !is_column(cell, &self.family, &self.qualifier) {
            return if self.found {
                ReturnCode::NextRow
            } else {
                ReturnCode::NextCol
            };
        }
        self.found = true;
        if self.comparator.test(self.op, cell.value()) {
            ReturnCode::Include
        } else {
            ReturnCode::Skip
        }
    }

    fn reset(&mut self) {
        self.found = false;
    }

    fn hooks(&self) -> Hooks {
        Hooks::CELL | Hooks::RESET
    }
}
