//! Filters: HBase's `Filter` contract, every filter HBase's filter language registers, filter
//! lists and the SKIP / WHILE wrappers, applied inside the region scanner so that a filter that
//! can say where the next interesting cell is (a row prefix, a column range) makes the scan
//! seek there instead of reading and dropping everything in between.
//!
//! A [`Filter`] is a value: cloneable, comparable, `Send`, built in Rust
//! (`Filter::Prefix("user".into())`) or parsed from HBase's filter language
//! ([`Filter::parse`], the strings happybase passes); [`Filter::to_filter_string`] prints one
//! back. A scan or get runs a fresh instance of it, so the same
//! filter can serve many reads at once.
//!
//! The contract, per row, as HBase's region scanner applies it:
//! 1. `filter_row_key(row)`: true drops the row unread;
//! 2. each cell that survives the read's own rules (deletes, time range, columns, versions)
//!    goes to `filter_cell`, whose [`ReturnCode`] includes or drops it and says how far the scan
//!    may skip (the next column, the rest of this family in the row, or to a hint);
//! 3. included cells go through `transform` (KeyOnlyFilter empties values);
//! 4. the assembled row goes to `filter_row_cells` and `filter_row` (true drops it);
//! 5. `reset` before the next row; `filter_all_remaining` ends the scan.

mod compare;
mod leaf;
mod list;
mod parse;
mod print;
mod running;

use bytes::Bytes;

pub use compare::{Comparator, CompareOp, Regex};
pub(crate) use running::{Active, Hooks, drops_row, drops_row_key, ends_scan, is_row_hint, reset};

/// What a filter says about one cell (HBase `Filter.ReturnCode`), from the smallest step to
/// the largest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReturnCode {
    /// Keep the cell.
    Include,
    /// Drop the cell; read the next.
    Skip,
    /// Keep the cell; skip the older versions of its column.
    IncludeAndNextCol,
    /// Drop the cell and the rest of its column.
    NextCol,
    /// Keep the cell; skip the rest of its family in this row.
    IncludeAndSeekNextRow,
    /// Drop the cell and the rest of its family in this row (HBase: the next row of this store).
    NextRow,
    /// Drop the cell; continue at the filter's hint.
    SeekNextUsingHint,
}

impl ReturnCode {
    /// Whether the cell is kept.
    pub fn includes(self) -> bool {
        matches!(
            self,
            ReturnCode::Include | ReturnCode::IncludeAndNextCol | ReturnCode::IncludeAndSeekNextRow
        )
    }
}

/// How a [`Filter::List`] combines its filters (HBase `FilterList.Operator`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ListOp {
    /// `MUST_PASS_ALL` (`AND`): a cell passes if every filter passes it; the largest step wins.
    All,
    /// `MUST_PASS_ONE` (`OR`): a cell passes if any filter passes it; the smallest step wins.
    One,
}

/// The column a value filter tests, and how (HBase `SingleColumnValueFilter`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnTest {
    /// The column's family.
    pub family: Bytes,
    /// The column's qualifier.
    pub qualifier: Bytes,
    /// How the value must compare.
    pub op: CompareOp,
    /// What it is compared with.
    pub comparator: Comparator,
    /// Drop rows without the column (default false).
    pub filter_if_missing: bool,
    /// Test only the column's latest version (default true).
    pub latest_only: bool,
}

/// A filter: every filter HBase's filter language (`ParseFilter`) registers, lists of them, and
/// the SKIP and WHILE wrappers. Each variant names the HBase class it follows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Filter {
    /// `KeyOnlyFilter`: every cell, its value emptied (or, with `len_as_value`, replaced by its
    /// length as a 4-byte big-endian integer).
    KeyOnly {
        /// Replace each value with its length instead of nothing.
        len_as_value: bool,
    },
    /// `FirstKeyOnlyFilter`: the first cell of each row.
    FirstKeyOnly,
    /// `PrefixFilter`: rows starting with the prefix (seeking to the first; ending the scan
    /// after the last).
    Prefix(Bytes),
    /// `ColumnPrefixFilter`: columns whose qualifier starts with the prefix (seeking to them).
    ColumnPrefix(Bytes),
    /// `MultipleColumnPrefixFilter`: columns whose qualifier starts with any of the prefixes.
    MultipleColumnPrefix(Vec<Bytes>),
    /// `ColumnCountGetFilter`: the first n columns of a row; the scan ends at the first row
    /// that has more.
    ColumnCountGet(u32),
    /// `PageFilter`: at most n rows (per region scanner, as in HBase).
    Page(u64),
    /// `ColumnPaginationFilter`: per row, `limit` columns after the first `offset`.
    ColumnPagination {
        /// Columns returned per row.
        limit: u32,
        /// Columns skipped first.
        offset: u32,
    },
    /// `InclusiveStopFilter`: rows up to and including this one (down to it, reversed).
    InclusiveStop(Bytes),
    /// `TimestampsFilter`: only cells with one of these timestamps.
    Timestamps {
        /// The timestamps (any order; kept sorted).
        timestamps: Vec<i64>,
        /// Seek to the next wanted timestamp instead of reading every version in between.
        can_hint: bool,
    },
    /// `RowFilter`: rows whose key passes the comparison.
    Row(CompareOp, Comparator),
    /// `FamilyFilter`: families that pass (a failing family is skipped for the row).
    Family(CompareOp, Comparator),
    /// `QualifierFilter`: cells whose qualifier passes.
    Qualifier(CompareOp, Comparator),
    /// `ValueFilter`: cells whose value passes.
    Value(CompareOp, Comparator),
    /// `ColumnRangeFilter`: qualifiers between two bounds (`None`: unbounded).
    ColumnRange {
        /// Lower bound.
        min: Option<Bytes>,
        /// Whether the lower bound is included.
        min_inclusive: bool,
        /// Upper bound.
        max: Option<Bytes>,
        /// Whether the upper bound is included.
        max_inclusive: bool,
    },
    /// `SingleColumnValueFilter`: whole rows, kept when one column's value passes.
    SingleColumnValue(ColumnTest),
    /// `SingleColumnValueExcludeFilter`: as `SingleColumnValue`, without the tested column.
    SingleColumnValueExclude(ColumnTest),
    /// `DependentColumnFilter`: the cells whose timestamp matches a version of a reference
    /// column (that passes the comparison, if one is given); the reference column itself is
    /// dropped with `drop`.
    DependentColumn {
        /// The reference column's family.
        family: Bytes,
        /// The reference column's qualifier.
        qualifier: Bytes,
        /// Leave the reference column out.
        drop: bool,
        /// The reference column's versions that count (all, without one).
        compare: Option<(CompareOp, Comparator)>,
    },
    /// `ColumnValueFilter`: only the cells of one column whose value passes.
    ColumnValue {
        /// The column's family.
        family: Bytes,
        /// The column's qualifier.
        qualifier: Bytes,
        /// How the value must compare.
        op: CompareOp,
        /// What it is compared with.
        comparator: Comparator,
    },
    /// `SkipFilter` (`SKIP f`): drops every row in which `f` did not include every cell.
    Skip(Box<Filter>),
    /// `WhileMatchFilter` (`WHILE f`): ends the scan at the first row or cell `f` rejects.
    WhileMatch(Box<Filter>),
    /// `FilterList`: filters combined (`AND`, `OR`).
    List(ListOp, Vec<Filter>),
}

/// Why a filter could not be built or parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FilterError {
    /// The filter string is malformed at a byte position.
    #[error("filter string, at byte {position}: {message}")]
    Syntax {
        /// Where, counting from 0.
        position: usize,
        /// What is wrong there (HBase's wording where it has one).
        message: String,
    },
    /// A `regexstring:` pattern that does not compile.
    #[error("regexstring pattern {pattern:?}: {reason}")]
    BadRegex {
        /// The pattern.
        pattern: String,
        /// The engine's reason.
        reason: String,
    },
    /// A filter built with an argument it cannot take.
    #[error("{filter}: {message}")]
    Invalid {
        /// Which filter.
        filter: &'static str,
        /// What is wrong.
        message: String,
    },
}

impl Filter {
    /// Parses HBase's filter language (`ParseFilter`): see the module docs of the parser for
    /// the grammar. Errors name the byte where the string went wrong.
    pub fn parse(text: &[u8]) -> Result<Filter, FilterError> {
        parse::parse(text)
    }

    /// The filter in HBase's filter language; [`Filter::parse`] reads it back to an equal
    /// filter.
    pub fn to_filter_string(&self) -> Vec<u8> {
        print::print(self)
    }

    /// A fresh instance for one scan or get (filters keep state per row and per scan).
    pub(crate) fn instantiate(&self, reversed: bool) -> Box<dyn Active> {
        running::instantiate(self, reversed)
    }

    /// Every filter in a list with operator `op`.
    pub fn all(filters: Vec<Filter>) -> Filter {
        Filter::List(ListOp::All, filters)
    }

    /// Any filter in a list.
    pub fn any(filters: Vec<Filter>) -> Filter {
        Filter::List(ListOp::One, filters)
    }
}

impl std::fmt::Display for Filter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&String::from_utf8_lossy(&self.to_filter_string()))
    }
}
