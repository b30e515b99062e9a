//! Comparisons: HBase's `CompareOperator` and the four comparators the filter language names
//! (`binary`, `binaryprefix`, `regexstring`, `substring`), with HBase's reading of them.
//!
//! A comparator compares its operand with a cell's bytes (`comparator.compareTo(cell)` in
//! HBase), and the operator then reads as "cell op operand": `RowFilter(<, 'binary:m')` keeps
//! rows that sort before `m` (`CompareFilter.compareRow` and friends).

use std::cmp::Ordering;
use std::fmt;

use bytes::Bytes;

use super::FilterError;

/// HBase's `CompareOperator`: how a cell's bytes must compare with the operand to pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CompareOp {
    /// cell < operand (`<`)
    Less,
    /// cell ≤ operand (`<=`)
    LessOrEqual,
    /// cell = operand (`=`)
    Equal,
    /// cell ≠ operand (`!=`)
    NotEqual,
    /// cell ≥ operand (`>=`)
    GreaterOrEqual,
    /// cell > operand (`>`)
    Greater,
    /// Never passes (HBase `NO_OP`; the filter language has no symbol for it).
    NoOp,
}

impl CompareOp {
    /// The operator's symbol in the filter language (`None` for [`CompareOp::NoOp`]).
    pub fn symbol(self) -> Option<&'static str> {
        Some(match self {
            CompareOp::Less => "<",
            CompareOp::LessOrEqual => "<=",
            CompareOp::Equal => "=",
            CompareOp::NotEqual => "!=",
            CompareOp::GreaterOrEqual => ">=",
            CompareOp::Greater => ">",
            CompareOp::NoOp => return None,
        })
    }

    /// Whether a comparator result (`operand.compareTo(cell)`) passes: HBase's
    /// `CompareFilter.compare`, negated (it answers "exclude?").
    pub(crate) fn passes(self, operand_vs_cell: Ordering) -> bool {
        match self {
            CompareOp::Less => operand_vs_cell.is_gt(),
            CompareOp::LessOrEqual => operand_vs_cell.is_ge(),
            CompareOp::Equal => operand_vs_cell.is_eq(),
            CompareOp::NotEqual => operand_vs_cell.is_ne(),
            CompareOp::GreaterOrEqual => operand_vs_cell.is_le(),
            CompareOp::Greater => operand_vs_cell.is_lt(),
            CompareOp::NoOp => false,
        }
    }
}

/// What a cell's bytes are compared with (HBase's `ByteArrayComparable`s of the filter
/// language).
#[derive(Clone)]
pub enum Comparator {
    /// `binary:…` (`BinaryComparator`): unsigned lexicographic order over all the bytes.
    Binary(Bytes),
    /// `binaryprefix:…` (`BinaryPrefixComparator`): the operand against the cell's first
    /// min(|operand|, |cell|) bytes.
    BinaryPrefix(Bytes),
    /// `regexstring:…` (`RegexStringComparator`): equal when the pattern is found anywhere in
    /// the cell (decoded as UTF-8, lossily), with `.` matching newlines as Java's `DOTALL`.
    Regex(Regex),
    /// `substring:…` (`SubstringComparator`): equal when the cell, lower-cased, contains the
    /// operand, lower-cased.
    Substring(String),
}

impl Comparator {
    /// A regex comparator for `pattern`. Patterns run on Rust's `regex` engine, in time linear
    /// in the cell (a client's pattern cannot make a scan exponential, as Java's backtracking
    /// can); Java features it lacks (look-around, back-references) are an error here.
    pub fn regex(pattern: &str) -> Result<Comparator, FilterError> {
        Regex::new(pattern).map(Comparator::Regex)
    }

    /// A substring comparator (the operand is lower-cased, as HBase does when it is built).
    pub fn substring(operand: &str) -> Comparator {
        Comparator::Substring(operand.to_lowercase())
    }

    /// `operand.compareTo(cell)`, as HBase's comparator computes it.
    pub(crate) fn compare(&self, cell: &[u8]) -> Ordering {
        match self {
            Comparator::Binary(operand) => operand[..].cmp(cell),
            Comparator::BinaryPrefix(operand) => {
                let len = operand.len().min(cell.len());
                operand[..].cmp(&cell[..len])
            }
            Comparator::Regex(regex) => {
                if regex.compiled.is_match(&String::from_utf8_lossy(cell)) {
                    Ordering::Equal
                } else {
                    Ordering::Greater
                }
            }
            Comparator::Substring(operand) => {
                if String::from_utf8_lossy(cell)
                    .to_lowercase()
                    .contains(operand.as_str())
                {
                    Ordering::Equal
                } else {
                    Ordering::Greater
                }
            }
        }
    }

    /// Whether `cell` passes `op` against this comparator.
    pub fn test(&self, op: CompareOp, cell: &[u8]) -> bool {
        op.passes(self.compare(cell))
    }

    /// The comparator's type name in the filter language.
    pub fn type_name(&self) -> &'static str {
        match self {
            Comparator::Binary(_) => "binary",
            Comparator::BinaryPrefix(_) => "binaryprefix",
            Comparator::Regex(_) => "regexstring",
            Comparator::Substring(_) => "substring",
        }
    }

    /// The operand as the filter language writes it (after `type:`).
    pub fn operand(&self) -> &[u8] {
        match self {
            Comparator::Binary(b) | Comparator::BinaryPrefix(b) => b,
            Comparator::Regex(r) => r.pattern.as_bytes(),
            Comparator::Substring(s) => s.as_bytes(),
        }
    }

    /// Only `=` and `!=` mean anything for a regex or substring comparator (HBase's parser
    /// refuses the others).
    pub(crate) fn is_equality_only(&self) -> bool {
        matches!(self, Comparator::Regex(_) | Comparator::Substring(_))
    }
}

impl PartialEq for Comparator {
    fn eq(&self, other: &Comparator) -> bool {
        self.type_name() == other.type_name() && self.operand() == other.operand()
    }
}

impl Eq for Comparator {}

impl fmt::Debug for Comparator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}",
            self.type_name(),
            keel_cell::escape_bytes(self.operand())
        )
    }
}

/// A compiled `regexstring` pattern and its source.
#[derive(Clone)]
pub struct Regex {
    pattern: String,
    compiled: regex::Regex,
}

impl fmt::Debug for Regex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Regex({:?})", self.pattern)
    }
}

impl Regex {
    fn new(pattern: &str) -> Result<Regex, FilterError> {
        let compiled = regex::RegexBuilder::new(pattern)
            .dot_matches_new_line(true)
            // A client's pattern: bounded in what it may compile to.
            .size_limit(1 << 20)
            .build()
            .map_err(|e| FilterError::BadRegex {
                pattern: pattern.to_string(),
                reason: e.to_string(),
            })?;
        Ok(Regex {
            pattern: pattern.to_string(),
            compiled,
        })
    }

    /// The pattern as written.
    pub fn pattern(&self) -> &str {
        &self.pattern
    }
}
