//! What a scan asks for ([`Scan`]): a range of rows or a prefix, in either direction, the
//! read's columns, time range and versions, a row limit, a batch size and a filter.

use bytes::Bytes;
use keel_cell::{CellKey, compare_bytes};

use crate::filter::Filter;
use crate::matcher::ReadQuery;

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
    /// HBase's filter, applied inside the scan (see [`crate::filter`]).
    pub filter: Option<Filter>,
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
        // `compare_bytes`, not slice order: asked once per row, and a slice comparison is a
        // `memcmp` call (rows share most of their bytes with their neighbours).
        let order = compare_bytes(row, &self.stop_row);
        if self.reversed {
            order.is_le()
        } else {
            order.is_ge()
        }
    }

    /// Whether `row` is in the scan (iteration has not passed the end yet).
    pub(crate) fn includes(&self, row: &[u8]) -> bool {
        let prefixed = self.prefix.as_ref().is_none_or(|p| row.starts_with(p));
        let after_start = if self.reversed {
            self.start_row.is_empty() || compare_bytes(row, &self.start_row).is_le()
        } else {
            compare_bytes(row, &self.start_row).is_ge()
        };
        prefixed && after_start
    }
}

/// The first row after every row that starts with `prefix`, if there is one (a prefix of
/// 0xFF bytes only has none).
pub(crate) fn prefix_end(prefix: &[u8]) -> Option<Bytes> {
    let keep = prefix.iter().rposition(|&b| b != 0xFF)?;
    let mut end = prefix[..=keep].to_vec();
    end[keep] += 1;
    Some(Bytes::from(end))
}

/// `results` collected into one `Vec`, sized at once for a scan with a row limit (YCSB's scans
/// name one; growing the list from empty moved every row already in it, five times for fifty).
pub(crate) fn collect_rows(
    scan: &Scan,
    results: impl Iterator<Item = Result<Vec<keel_cell::Cell>, crate::error::RegionError>>,
) -> Result<Vec<Vec<keel_cell::Cell>>, crate::error::RegionError> {
    let mut rows = Vec::with_capacity(scan.limit.unwrap_or(0).min(1024));
    for result in results {
        rows.push(result?);
    }
    Ok(rows)
}
