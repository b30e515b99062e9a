//! A store file seen through a row range: HBase's half-file reader, for the references a
//! region split leaves. A daughter region refers to each of its parent's files with the range
//! of rows it owns, and reads only those rows of it, without the file being rewritten; a later
//! compaction writes the daughter's own files and drops the references.

use bytes::Bytes;
use keel_cell::{Cell, CellKey, Decide};

use crate::error::Result;
use crate::merge::KeyValueScanner;

/// Rows `[start, end)`; an empty bound is open (empty start: from the first row; empty end: to
/// the last).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RowRange {
    /// The first row (inclusive).
    pub start: Bytes,
    /// The row after the last (exclusive).
    pub end: Bytes,
}

impl RowRange {
    /// Whether `row` lies in the range.
    pub fn contains(&self, row: &[u8]) -> bool {
        *row >= self.start[..] && (self.end.is_empty() || *row < self.end[..])
    }

    /// The range's first key.
    fn start_key(&self) -> CellKey {
        CellKey::first_on_row(self.start.clone())
    }
}

/// A scanner that shows only the cells of `inner` whose rows lie in `range`.
pub struct RangeScanner<S> {
    inner: S,
    range: RowRange,
    /// Positioned before the range's start (a backward seek went past it): nothing to show.
    below: bool,
}

impl<S> std::fmt::Debug for RangeScanner<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RangeScanner")
            .field("range", &self.range)
            .field("below", &self.below)
            .finish_non_exhaustive()
    }
}

impl<S: KeyValueScanner> RangeScanner<S> {
    /// `inner` seen through `range`.
    pub fn new(inner: S, range: RowRange) -> RangeScanner<S> {
        RangeScanner {
            inner,
            range,
            below: false,
        }
    }

    fn clamp<'k>(&self, key: &'k CellKey) -> std::borrow::Cow<'k, CellKey> {
        if key.row()[..] < self.range.start[..] {
            std::borrow::Cow::Owned(self.range.start_key())
        } else {
            std::borrow::Cow::Borrowed(key)
        }
    }
}

impl<S: KeyValueScanner> KeyValueScanner for RangeScanner<S> {
    fn peek(&self) -> Option<&Cell> {
        if self.below {
            return None;
        }
        self.inner.peek().filter(|c| self.range.contains(c.row()))
    }

    fn next(&mut self) -> Result<Option<Cell>> {
        if self.peek().is_none() {
            return Ok(None);
        }
        self.inner.next()
    }

    fn next_into(&mut self, out: &mut Vec<Cell>) -> Result<()> {
        if self.peek().is_none() {
            return Ok(());
        }
        self.inner.next_into(out)
    }

    fn skip(&mut self) -> Result<()> {
        if self.peek().is_none() {
            return Ok(());
        }
        self.inner.skip()
    }

    /// A row is in the range whole or not at all: the inner scanner takes one that is.
    fn take_row(&mut self, row: &[u8], out: &mut Vec<Cell>, decide: &mut Decide<'_>) -> Result<()> {
        if self.below || !self.range.contains(row) {
            return Ok(());
        }
        self.inner.take_row(row, out, decide)
    }

    fn seek(&mut self, key: &CellKey) -> Result<()> {
        self.below = false;
        let key = self.clamp(key);
        self.inner.seek(&key)
    }

    fn reseek(&mut self, key: &CellKey) -> Result<()> {
        if self.below {
            return Ok(());
        }
        let key = self.clamp(key);
        self.inner.reseek(&key)
    }

    fn seek_before_row(&mut self, row: Option<&[u8]>) -> Result<()> {
        // Rows at or past the end are not here: the last row before min(row, end).
        let bound: Option<&[u8]> = match (row, self.range.end.is_empty()) {
            (Some(row), false) => Some(row.min(&self.range.end[..])),
            (Some(row), true) => Some(row),
            (None, false) => Some(&self.range.end[..]),
            (None, true) => None,
        };
        let bound = bound.map(<[u8]>::to_vec);
        self.inner.seek_before_row(bound.as_deref())?;
        self.below = self
            .inner
            .peek()
            .is_some_and(|c| c.row()[..] < self.range.start[..]);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::merge::VecScanner;

    fn cells(rows: &[&str]) -> Vec<Cell> {
        rows.iter()
            .map(|r| Cell::put(r.to_string(), "f", "q", 1, "v").expect("cell"))
            .collect()
    }

    fn range(start: &str, end: &str) -> RowRange {
        RowRange {
            start: Bytes::copy_from_slice(start.as_bytes()),
            end: Bytes::copy_from_slice(end.as_bytes()),
        }
    }

    fn drain(s: &mut impl KeyValueScanner) -> Vec<String> {
        let mut out = Vec::new();
        while let Some(c) = s.next().expect("next") {
            out.push(String::from_utf8_lossy(c.row()).into_owned());
        }
        out
    }

    #[test]
    fn only_the_rows_in_range_forward_and_backward() {
        let all = cells(&["a", "b", "c", "d", "e"]);
        for (r, want) in [
            (range("b", "d"), vec!["b", "c"]),
            (range("", "c"), vec!["a", "b"]),
            (range("c", ""), vec!["c", "d", "e"]),
            (range("bb", "bc"), vec![]),
        ] {
            let mut s = RangeScanner::new(VecScanner::new(all.clone()), r.clone());
            s.seek(&CellKey::first_on_row(Bytes::new())).expect("seek");
            assert_eq!(drain(&mut s), want, "{r:?}");
            // Backward, row by row from the end.
            let mut s = RangeScanner::new(VecScanner::new(all.clone()), r.clone());
            s.seek_before_row(None).expect("seek");
            let mut back = Vec::new();
            while let Some(c) = s.peek() {
                let row = c.row_bytes();
                back.push(String::from_utf8_lossy(&row).into_owned());
                s.seek_before_row(Some(&row)).expect("seek");
            }
            let mut expected = want.clone();
            expected.reverse();
            assert_eq!(back, expected, "{r:?} backward");
        }
    }
}
