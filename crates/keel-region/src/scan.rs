//! Scans: rows of a range (or prefix) with HBase's semantics, through one consistent set of
//! sources — memstore segments and store files taken at the start, at one read point, so a flush
//! during the scan changes nothing it returns.

use std::collections::VecDeque;

use bytes::Bytes;
use keel_cell::{Cell, CellKey};
use keel_storefile::{KeyValueScanner, MergeScanner};

use crate::error::RegionError;
use crate::matcher::{Matcher, ReadQuery};

/// A comparison for [`ColumnValueFilter`] (HBase `CompareOperator`), of the column's value
/// against the operand, bytewise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompareOp {
    /// value < operand
    Less,
    /// value ≤ operand
    LessOrEqual,
    /// value = operand
    Equal,
    /// value ≠ operand
    NotEqual,
    /// value ≥ operand
    GreaterOrEqual,
    /// value > operand
    Greater,
}

impl CompareOp {
    /// Whether `value` compares to `operand` as this operator says.
    pub fn test(self, value: &[u8], operand: &[u8]) -> bool {
        let ord = value.cmp(operand);
        match self {
            CompareOp::Less => ord.is_lt(),
            CompareOp::LessOrEqual => ord.is_le(),
            CompareOp::Equal => ord.is_eq(),
            CompareOp::NotEqual => ord.is_ne(),
            CompareOp::GreaterOrEqual => ord.is_ge(),
            CompareOp::Greater => ord.is_gt(),
        }
    }
}

/// HBase's `SingleColumnValueFilter`: keep a row only if its latest value of one column passes
/// a comparison; a row without the column is kept unless `filter_if_missing`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnValueFilter {
    /// The column's family.
    pub family: Bytes,
    /// The column's qualifier.
    pub qualifier: Bytes,
    /// The comparison.
    pub op: CompareOp,
    /// The operand.
    pub value: Bytes,
    /// Drop rows that lack the column.
    pub filter_if_missing: bool,
}

impl ColumnValueFilter {
    /// Whether the row (its selected cells) passes. The column must be among the selected ones
    /// for the filter to see it, as in HBase.
    pub fn keeps(&self, row: &[Cell]) -> bool {
        let latest = row
            .iter()
            .find(|c| c.family() == &self.family && c.qualifier() == &self.qualifier);
        match latest {
            Some(cell) => self.op.test(cell.value(), &self.value),
            None => !self.filter_if_missing,
        }
    }
}

/// What to scan. Rows run from `start_row` (inclusive; empty is the first row) to `stop_row`
/// (exclusive; empty is past the last); with `reversed`, from `start_row` (inclusive; empty is
/// the last row) down to `stop_row` (exclusive), as HBase's reversed scans.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scan {
    /// First row (last, when reversed).
    pub start_row: Bytes,
    /// Row where the scan stops, not included.
    pub stop_row: Bytes,
    /// Only rows starting with this.
    pub prefix: Option<Bytes>,
    /// Columns, time range and versions (its read point is the region's at the scan's start).
    pub query: ReadQuery,
    /// Most rows returned.
    pub limit: Option<usize>,
    /// Most cells per result: a wider row comes back as several results (HBase `setBatch`).
    pub batch: Option<usize>,
    /// Rows in descending order.
    pub reversed: bool,
    /// Keep only rows that pass.
    pub filter: Option<ColumnValueFilter>,
}

impl Scan {
    /// Every row, latest version of every column.
    pub fn all(now_ms: i64) -> Scan {
        Scan {
            start_row: Bytes::new(),
            stop_row: Bytes::new(),
            prefix: None,
            query: ReadQuery::latest(0, now_ms),
            limit: None,
            batch: None,
            reversed: false,
            filter: None,
        }
    }

    /// The key a forward scan starts at.
    pub(crate) fn first_key(&self) -> CellKey {
        let from = match &self.prefix {
            Some(prefix) if prefix > &self.start_row => prefix,
            _ => &self.start_row,
        };
        CellKey::first_on_row(from.clone())
    }

    /// The row a reversed scan starts just below (exclusive; `None`: from the last row): past
    /// `start_row` (inclusive) and past every row with the prefix.
    pub(crate) fn reversed_upper(&self) -> Option<Bytes> {
        let after_start = (!self.start_row.is_empty()).then(|| {
            let mut upper = self.start_row.to_vec();
            upper.push(0);
            Bytes::from(upper)
        });
        let after_prefix = self.prefix.as_ref().and_then(|p| prefix_end(p));
        match (after_start, after_prefix) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Whether the scan, now at `row` (moving up, or down when reversed), has gone past every
    /// row it can return.
    pub(crate) fn past_end(&self, row: &[u8]) -> bool {
        if let Some(prefix) = &self.prefix
            && !row.starts_with(prefix)
            && if self.reversed {
                row < &prefix[..]
            } else {
                row > &prefix[..]
            }
        {
            return true;
        }
        if self.stop_row.is_empty() {
            return false;
        }
        if self.reversed {
            row <= &self.stop_row[..]
        } else {
            row >= &self.stop_row[..]
        }
    }

    /// Whether `row` is in the scan (iteration has not passed the end yet).
    pub(crate) fn includes(&self, row: &[u8]) -> bool {
        let prefixed = self.prefix.as_ref().is_none_or(|p| row.starts_with(p));
        let after_start = if self.reversed {
            self.start_row.is_empty() || row <= &self.start_row[..]
        } else {
            row >= &self.start_row[..]
        };
        prefixed && after_start
    }
}

/// The first row after every row that starts with `prefix`, if there is one (a prefix of
/// 0xFF bytes only has none).
fn prefix_end(prefix: &[u8]) -> Option<Bytes> {
    let keep = prefix.iter().rposition(|&b| b != 0xFF)?;
    let mut end = prefix[..=keep].to_vec();
    end[keep] += 1;
    Some(Bytes::from(end))
}

/// A scan in progress ([`crate::Region::scanner`]): an iterator of results, each the selected
/// cells of one row (or a batch of them). It reads one row at a time from the merge of every
/// source — forwards, or, reversed, each row forwards and then the row before it
/// (`KeyValueScanner::seek_before_row`, HBase's `seekToPreviousRow`) — so neither direction
/// holds more than the row it is on.
pub struct RegionScanner {
    merge: MergeScanner<'static>,
    matcher: Matcher,
    skip: ColumnSkip,
    scan: Scan,
    ready: VecDeque<Vec<Cell>>,
    rows: usize,
    done: bool,
}

/// Skipping a finished column's older versions (HBase's `trySkipToNextColumn`). When the
/// matcher has all the versions it wants of a column, the rest of that column is skipped in
/// every source at once with a seek — but only if the next cell is still in that column. With
/// one version per column (the common case) the next cell is already the next column, and the
/// seek, which re-positions every source, would be pure cost.
///
/// The empty-qualifier column is never skipped: family delete markers live there, and one with
/// an older timestamp sorts after that column's puts and must still be seen.
#[derive(Debug, Default)]
pub(crate) struct ColumnSkip {
    done: Option<Finished>,
}

/// Where the finished column's coordinates are.
#[derive(Debug)]
enum Finished {
    /// In the last cell the caller kept: no copy of its key needed (every returned column's
    /// last version is this case, so it is the common one, and it saves three reference-count
    /// round trips on the cell's shared block).
    Kept,
    /// (row, family, qualifier) of a finished column whose last cell was not kept.
    Dropped(Bytes, Bytes, Bytes),
}

impl ColumnSkip {
    /// Notes that `cell`'s column has all the versions the read wants; `kept`: the caller
    /// keeps `cell` as the last of its results (it is then passed back to
    /// [`ColumnSkip::still_in_column`] as `last_kept`).
    pub(crate) fn column_done(&mut self, cell: &Cell, kept: bool) {
        if cell.qualifier().is_empty() {
            return;
        }
        self.done = Some(if kept {
            Finished::Kept
        } else {
            Finished::Dropped(
                cell.row().clone(),
                cell.family().clone(),
                cell.qualifier().clone(),
            )
        });
    }

    /// True if `next` is an older version of the finished column: `merge` has then been moved
    /// past that column, and `next` is to be dropped and the next cell read instead.
    /// `last_kept` is the caller's last kept cell (`None` once its results were handed on,
    /// when `next` is always of another row).
    pub(crate) fn still_in_column(
        &mut self,
        next: &Cell,
        last_kept: Option<&Cell>,
        merge: &mut MergeScanner<'_>,
    ) -> Result<bool, RegionError> {
        let done = self.done.take();
        let (row, family, qualifier) = match &done {
            None => return Ok(false),
            Some(Finished::Dropped(row, family, qualifier)) => (row, family, qualifier),
            Some(Finished::Kept) => match last_kept {
                Some(cell) => (cell.row(), cell.family(), cell.qualifier()),
                None => return Ok(false),
            },
        };
        if next.row() != row || next.family() != family || next.qualifier() != qualifier {
            return Ok(false);
        }
        merge.seek(&CellKey::last_on_column(
            row.clone(),
            family.clone(),
            qualifier.clone(),
        ))?;
        Ok(true)
    }
}

impl std::fmt::Debug for RegionScanner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegionScanner")
            .field("scan", &self.scan)
            .field("rows", &self.rows)
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

impl RegionScanner {
    /// A scan over `merge` (already positioned for a forward scan).
    pub(crate) fn new(
        mut merge: MergeScanner<'static>,
        matcher: Matcher,
        scan: Scan,
    ) -> Result<RegionScanner, RegionError> {
        if scan.reversed {
            merge.seek_before_row(scan.reversed_upper().as_deref())?;
        }
        Ok(RegionScanner {
            merge,
            matcher,
            skip: ColumnSkip::default(),
            scan,
            ready: VecDeque::new(),
            rows: 0,
            done: false,
        })
    }

    /// The next row the scan takes (stepping over rows it does not include), or `None` at its
    /// end.
    fn next_row_key(&mut self) -> Result<Option<Bytes>, RegionError> {
        loop {
            let Some(cell) = self.merge.peek() else {
                return Ok(None);
            };
            let row = cell.row().clone();
            if self.scan.past_end(&row) {
                return Ok(None);
            }
            if self.scan.includes(&row) {
                return Ok(Some(row));
            }
            self.leave_row(&row)?;
        }
    }

    /// Moves to the row after `row` in the scan's direction.
    fn leave_row(&mut self, row: &Bytes) -> Result<(), RegionError> {
        if self.scan.reversed {
            self.merge.seek_before_row(Some(row))?;
        } else if self.merge.peek().is_some_and(|c| c.row() == row) {
            self.merge.seek(&CellKey::last_on_row(row.clone()))?;
        }
        Ok(())
    }

    /// The cells of `row` the read selects: the row's cells in `CellComparator` order, through
    /// the matcher, skipping the older versions of finished columns with a seek.
    fn read_row(&mut self, row: &Bytes) -> Result<Vec<Cell>, RegionError> {
        let mut out: Vec<Cell> = Vec::new();
        while self.merge.peek().is_some_and(|c| c.row() == row) {
            let Some(cell) = self.merge.next()? else {
                break;
            };
            if self
                .skip
                .still_in_column(&cell, out.last(), &mut self.merge)?
            {
                continue;
            }
            let admitted = self.matcher.admit(&cell);
            if self.matcher.column_done() {
                self.skip.column_done(&cell, admitted);
            }
            if admitted {
                out.push(cell);
            }
        }
        Ok(out)
    }

    /// The next non-empty row that passes the filter, in the scan's order.
    fn next_row(&mut self) -> Result<Option<Vec<Cell>>, RegionError> {
        loop {
            let Some(row) = self.next_row_key()? else {
                return Ok(None);
            };
            let cells = self.read_row(&row)?;
            self.leave_row(&row)?;
            if let Some(kept) = self.kept(cells) {
                return Ok(Some(kept));
            }
        }
    }

    fn kept(&self, row: Vec<Cell>) -> Option<Vec<Cell>> {
        let keep = !row.is_empty() && self.scan.filter.as_ref().is_none_or(|f| f.keeps(&row));
        keep.then_some(row)
    }

    fn fill(&mut self) -> Result<(), RegionError> {
        match self.next_row()? {
            None => self.done = true,
            Some(row) => {
                self.rows += 1;
                match self.scan.batch {
                    Some(batch) if batch > 0 => {
                        self.ready.extend(row.chunks(batch).map(<[Cell]>::to_vec));
                    }
                    _ => self.ready.push_back(row),
                }
                if self.scan.limit.is_some_and(|limit| self.rows >= limit) {
                    self.done = true;
                }
            }
        }
        Ok(())
    }
}

impl Iterator for RegionScanner {
    type Item = Result<Vec<Cell>, RegionError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(result) = self.ready.pop_front() {
                return Some(Ok(result));
            }
            if self.done {
                return None;
            }
            if let Err(e) = self.fill() {
                self.done = true;
                return Some(Err(e));
            }
        }
    }
}
