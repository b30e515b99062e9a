//! HBase's read-side cell semantics as a streaming filter (`ScanQueryMatcher` with its delete
//! and column trackers, for user reads): fed the merged, sorted cells of memstore and store
//! files, it admits exactly the cells a Get or Scan returns.
//!
//! Rules, per row and family (HBase's `ScanQueryMatcher` and its delete and column trackers):
//! - a cell whose sequence id is above the read point does not exist for this read (delete
//!   markers included);
//! - `Delete` masks the one version with an equal timestamp; `DeleteColumn` every version of its
//!   column with a timestamp ≤ its own; `DeleteFamily` every column's versions with timestamp ≤ its
//!   own; `DeleteFamilyVersion` every column's version with an equal timestamp — regardless of
//!   which was written first; markers older than the time range are ignored (they could only
//!   mask cells outside it); markers are never returned;
//! - of two puts with one timestamp in a column, the one with the higher sequence id wins (it
//!   sorts first) and the other is hidden;
//! - versions newer than the time range are skipped without counting; the first version older
//!   than it ends the column; at most `min(query, family)` max versions are returned; a version
//!   older than the family TTL is returned only while fewer than `min_versions` have been.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use bytes::Bytes;
use keel_cell::{Cell, CellType, RunRule, same_bytes};

/// Per-family rules (HBase column-family attributes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FamilyRules {
    /// `VERSIONS`: most versions kept and returned per column (HBase default 1).
    pub max_versions: u32,
    /// `MIN_VERSIONS`: versions returned even when older than the TTL (default 0).
    pub min_versions: u32,
    /// `TTL` in milliseconds; `None` is FOREVER (the default).
    pub ttl_ms: Option<i64>,
}

impl Default for FamilyRules {
    fn default() -> FamilyRules {
        FamilyRules {
            max_versions: 1,
            min_versions: 0,
            ttl_ms: None,
        }
    }
}

/// A half-open timestamp range `[min, max)` (HBase `TimeRange`); the default is all time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeRange {
    /// Inclusive lower bound.
    pub min: i64,
    /// Exclusive upper bound.
    pub max: i64,
}

impl Default for TimeRange {
    fn default() -> TimeRange {
        TimeRange {
            min: 0,
            max: i64::MAX,
        }
    }
}

impl TimeRange {
    /// Whether `ts` lies in the range.
    pub fn contains(&self, ts: i64) -> bool {
        ts >= self.min && ts < self.max
    }
}

/// What a read asks for, beyond which rows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadQuery {
    /// Sequence ids above this are invisible (the MVCC read point captured at the read's start).
    pub read_point: u64,
    /// Timestamps to return.
    pub time_range: TimeRange,
    /// Versions per column asked for (HBase Get/Scan `readVersions`, default 1); the family's
    /// `max_versions` caps it.
    pub max_versions: u32,
    /// "Now" for TTL, in milliseconds since the epoch.
    pub now_ms: i64,
    /// Columns to return: `None` is every column; otherwise (family, qualifier) pairs, where a
    /// `None` qualifier means the whole family.
    pub columns: Option<Vec<(Bytes, Option<Bytes>)>>,
}

impl ReadQuery {
    /// A query for the latest version of everything visible at `read_point`.
    pub fn latest(read_point: u64, now_ms: i64) -> ReadQuery {
        ReadQuery {
            read_point,
            time_range: TimeRange::default(),
            max_versions: 1,
            now_ms,
            columns: None,
        }
    }

    fn wants(&self, family: &[u8], qualifier: &[u8]) -> bool {
        match &self.columns {
            None => true,
            Some(columns) => columns
                .iter()
                .any(|(f, q)| f == family && q.as_ref().is_none_or(|q| q == qualifier)),
        }
    }
}

/// The row, family and qualifier a [`Matcher`] is at, back to back in one buffer: a get builds a
/// matcher per call, and three buffers were three allocations of every get.
#[derive(Debug, Default)]
struct Place {
    bytes: Vec<u8>,
    row_len: usize,
    family_len: usize,
}

impl Place {
    #[inline]
    fn row(&self) -> &[u8] {
        &self.bytes[..self.row_len]
    }

    #[inline]
    fn family(&self) -> &[u8] {
        &self.bytes[self.row_len..self.row_len + self.family_len]
    }

    #[inline]
    fn column(&self) -> &[u8] {
        &self.bytes[self.row_len + self.family_len..]
    }

    /// A new (row, family), its column empty.
    fn set_group(&mut self, row: &[u8], family: &[u8]) {
        self.bytes.clear();
        // Room for a qualifier too, so that the first column does not grow the buffer again.
        self.bytes.reserve(row.len() + family.len() + 32);
        self.bytes.extend_from_slice(row);
        self.bytes.extend_from_slice(family);
        self.row_len = row.len();
        self.family_len = family.len();
    }

    /// A new column of the same (row, family).
    #[inline]
    fn set_column(&mut self, qualifier: &[u8]) {
        self.bytes.truncate(self.row_len + self.family_len);
        self.bytes.extend_from_slice(qualifier);
    }
}

/// The streaming filter. Feed it cells in `CellComparator` order (a merge of every source).
#[derive(Debug)]
pub struct Matcher<'a> {
    /// Borrowed by a get, which ends before its caller's query does: a clone would copy the
    /// column list and count a reference on each name, lines every reader of them shares.
    query: Cow<'a, ReadQuery>,
    /// The read point in force (a get's replaces its query's).
    read_point: u64,
    families: Cow<'a, Arc<HashMap<Bytes, FamilyRules>>>,
    /// The (row, family) the trackers below describe, when `in_group`, and the qualifier, when
    /// `in_column`: copied into a buffer the matcher reuses, not shared with the cell (cloning
    /// a `Bytes` is a reference count on the block every reader of it shares).
    place: Place,
    in_group: bool,
    family_delete_ts: Option<i64>,
    family_version_deletes: HashSet<i64>,
    rules: FamilyRules,
    /// `min(query, family)` max versions: how many versions of a column the read returns.
    max_versions: u32,
    in_column: bool,
    column_delete_ts: Option<i64>,
    version_deletes: HashSet<i64>,
    last_ts: Option<i64>,
    counted: u32,
    column_done: bool,
}

impl Matcher<'static> {
    /// A matcher for `query`, with `families`' rules (a family not listed gets the defaults).
    pub fn new(query: ReadQuery, families: HashMap<Bytes, FamilyRules>) -> Matcher<'static> {
        Matcher::with_rules(query, Arc::new(families))
    }

    /// [`Matcher::new`] with rules shared with other matchers (a region builds them once).
    pub fn with_rules(
        query: ReadQuery,
        families: Arc<HashMap<Bytes, FamilyRules>>,
    ) -> Matcher<'static> {
        let read_point = query.read_point;
        Matcher::build(Cow::Owned(query), read_point, Cow::Owned(families))
    }
}

impl<'a> Matcher<'a> {
    /// [`Matcher::with_rules`] borrowing the query and the rules, at `read_point` instead of
    /// the query's: for a read that ends before both (a get).
    pub fn borrowing(
        query: &'a ReadQuery,
        read_point: u64,
        families: &'a Arc<HashMap<Bytes, FamilyRules>>,
    ) -> Matcher<'a> {
        Matcher::build(Cow::Borrowed(query), read_point, Cow::Borrowed(families))
    }

    fn build(
        query: Cow<'a, ReadQuery>,
        read_point: u64,
        families: Cow<'a, Arc<HashMap<Bytes, FamilyRules>>>,
    ) -> Matcher<'a> {
        Matcher {
            query,
            read_point,
            families,
            place: Place::default(),
            in_group: false,
            family_delete_ts: None,
            family_version_deletes: HashSet::new(),
            rules: FamilyRules::default(),
            max_versions: 0,
            in_column: false,
            column_delete_ts: None,
            version_deletes: HashSet::new(),
            last_ts: None,
            counted: 0,
            column_done: false,
        }
    }

    /// True if `cell` belongs in the read's result.
    #[inline]
    pub fn admit(&mut self, cell: &Cell) -> bool {
        if self.admit_new_column(cell) {
            return true;
        }
        self.admit_any(cell)
    }

    /// The common cell of a plain read, decided without the general path: a visible put that
    /// starts a new column of the (row, family) the matcher is in, while nothing can hide it
    /// (no family marker seen, no column list, no TTL, its timestamp in the range, at least
    /// one version wanted). It is admitted, and its column is done when one version is wanted
    /// — what [`Matcher::admit_any`] decides for it, set the same way. False: not such a cell,
    /// nothing changed. The general path, called for every cell, cost a ten-column scan about
    /// a quarter of its time (its entry alone saved and restored six registers per cell).
    #[inline]
    fn admit_new_column(&mut self, cell: &Cell) -> bool {
        let ts = cell.timestamp();
        let plain = self.in_column
            && cell.cell_type() == CellType::Put
            && cell.sequence_id() <= self.read_point
            && self.max_versions > 0
            && self.family_delete_ts.is_none()
            && self.family_version_deletes.is_empty()
            && self.rules.ttl_ms.is_none()
            && self.query.columns.is_none()
            && self.query.time_range.contains(ts);
        if !plain
            || same_bytes(self.place.column(), cell.qualifier())
            || !same_bytes(self.place.family(), cell.family())
            || !same_bytes(self.place.row(), cell.row())
        {
            return false;
        }
        self.start_column_with(cell);
        true
    }

    /// The column trackers as [`Matcher::admit_any`] leaves them after admitting `cell` as the
    /// first version of a new column of the current (row, family).
    #[inline]
    fn start_column_with(&mut self, cell: &Cell) {
        self.place.set_column(cell.qualifier());
        self.column_delete_ts = None;
        if !self.version_deletes.is_empty() {
            self.version_deletes.clear();
        }
        self.last_ts = Some(cell.timestamp());
        self.counted = 1;
        self.column_done = self.max_versions == 1;
    }

    /// Whether the cells after the one just admitted may be decided as a run
    /// ([`Matcher::continues_run`]): the read wants one version of every column and nothing
    /// in the current (row, family) can hide a later column's put (no family marker seen, no
    /// TTL, no column list).
    #[inline]
    pub(crate) fn run_open(&self) -> bool {
        self.in_column
            && self.max_versions == 1
            && self.family_delete_ts.is_none()
            && self.family_version_deletes.is_empty()
            && self.rules.ttl_ms.is_none()
            && self.query.columns.is_none()
    }

    /// Whether `cell`, of the row of `last`, is admitted as the next column after `last`, the
    /// last cell admitted, while [`Matcher::run_open`] holds: a visible put in the time range,
    /// of `last`'s family and a later qualifier (cells come sorted, so another qualifier is a
    /// later one; so never the empty qualifier, where a family's markers live, which sorts
    /// first in its family). Changes
    /// nothing: the state admitting it would leave is [`Matcher::catch_up`]'s, set once for
    /// the run's last cell. A ten-column row decided one cell at a time through
    /// [`Matcher::admit`] compared each cell's row, family and column with the trackers' and
    /// copied its qualifier, to learn what sorting already says.
    #[inline]
    pub(crate) fn continues_run(&self, cell: &Cell, last: &Cell) -> bool {
        self.run_rule().continues(cell, last)
    }

    /// The rule of [`Matcher::continues_run`], for a source to apply to the cells after one
    /// the reader keeps ([`keel_cell::Take::KeepRun`]).
    #[inline]
    pub(crate) fn run_rule(&self) -> RunRule {
        RunRule {
            read_point: self.read_point,
            min_ts: self.query.time_range.min,
            max_ts: self.query.time_range.max,
        }
    }

    /// Sets the trackers as admitting every cell of a run through [`Matcher::admit`] would
    /// have, given `last`, the run's last cell (the others changed nothing that `last` does
    /// not set again).
    #[inline]
    pub(crate) fn catch_up(&mut self, last: &Cell) {
        self.start_column_with(last);
    }

    /// [`Matcher::admit`] for any cell.
    fn admit_any(&mut self, cell: &Cell) -> bool {
        // Entered even when invisible: the trackers must describe the cell's column, whose
        // `column_done` the caller reads next. Left describing the previous row's finished
        // column, an invisible newest version (a write still in flight) made a scan skip the
        // visible versions below it.
        self.enter(cell);
        if cell.sequence_id() > self.read_point {
            return false;
        }
        let ts = cell.timestamp();
        match cell.cell_type() {
            CellType::Put => {}
            kind => {
                // HBase tracks markers that are within or after the time range only.
                if ts >= self.query.time_range.min {
                    match kind {
                        CellType::DeleteFamily => {
                            self.family_delete_ts =
                                Some(self.family_delete_ts.map_or(ts, |t| t.max(ts)));
                        }
                        CellType::DeleteFamilyVersion => {
                            self.family_version_deletes.insert(ts);
                        }
                        CellType::DeleteColumn => {
                            self.column_delete_ts =
                                Some(self.column_delete_ts.map_or(ts, |t| t.max(ts)));
                        }
                        CellType::Delete => {
                            self.version_deletes.insert(ts);
                        }
                        // Seek-only types never reach a store; nothing to track.
                        CellType::Put | CellType::Minimum | CellType::Maximum => {}
                    }
                }
                return false;
            }
        }
        if self.column_done || !self.query.wants(cell.family(), cell.qualifier()) {
            return false;
        }
        // The sets are asked only when they hold a marker: a lookup is a call even in an empty
        // set, and nearly every row has no marker at all.
        let masked = self.family_delete_ts.is_some_and(|t| ts <= t)
            || (!self.family_version_deletes.is_empty()
                && self.family_version_deletes.contains(&ts))
            || self.column_delete_ts.is_some_and(|t| ts <= t)
            || (!self.version_deletes.is_empty() && self.version_deletes.contains(&ts));
        if masked {
            return false;
        }
        let range = self.query.time_range;
        if ts >= range.max {
            return false;
        }
        if ts < range.min {
            self.column_done = true;
            return false;
        }
        if self.last_ts == Some(ts) {
            return false; // an older put with the same timestamp
        }
        self.last_ts = Some(ts);
        self.counted += 1;
        let max = self.max_versions;
        if self.counted > max {
            self.column_done = true;
            return false;
        }
        let expired = self
            .rules
            .ttl_ms
            .is_some_and(|ttl| ts < self.query.now_ms.saturating_sub(ttl));
        if expired && self.counted > self.rules.min_versions {
            self.column_done = true;
            return false;
        }
        if self.counted == max {
            // Nothing older in this column can be returned (HBase's INCLUDE_AND_SEEK_NEXT_COL).
            self.column_done = true;
        }
        true
    }

    /// True once nothing more of the current column can be admitted: the caller may seek its
    /// sources past the column (HBase's `SEEK_NEXT_COL`) instead of feeding every older version
    /// — unless the column is the empty qualifier, which also holds the family's delete markers.
    pub fn column_done(&self) -> bool {
        self.column_done
    }

    /// `family`'s rules. A table has a few families: they are compared one by one, not
    /// hashed (a get's matcher starts afresh, so every get paid a SipHash of the family name
    /// and a `memcmp` here).
    fn rules_of(&self, family: &[u8]) -> FamilyRules {
        const COMPARED_UP_TO: usize = 8;
        let found = if self.families.len() <= COMPARED_UP_TO {
            self.families
                .iter()
                .find(|(name, _)| same_bytes(name, family))
                .map(|(_, rules)| rules)
        } else {
            self.families.get(family)
        };
        found.copied().unwrap_or_default()
    }

    /// Resets the trackers when `cell` starts a new (row, family) or a new column.
    fn enter(&mut self, cell: &Cell) {
        let same_group = self.in_group
            && same_bytes(self.place.row(), cell.row())
            && same_bytes(self.place.family(), cell.family());
        if !same_group {
            // The rules are the family's: looked up (a SipHash of its name) only when the
            // family changes, not at every row of a scan of one family.
            let same_family = self.in_group && same_bytes(self.place.family(), cell.family());
            self.in_group = true;
            self.place.set_group(cell.row(), cell.family());
            if !same_family {
                self.rules = self.rules_of(cell.family());
                self.max_versions = self.query.max_versions.min(self.rules.max_versions);
            }
            self.family_delete_ts = None;
            if !self.family_version_deletes.is_empty() {
                self.family_version_deletes.clear();
            }
            self.in_column = false;
        }
        if !self.in_column || !same_bytes(self.place.column(), cell.qualifier()) {
            self.in_column = true;
            self.place.set_column(cell.qualifier());
            self.column_delete_ts = None;
            if !self.version_deletes.is_empty() {
                self.version_deletes.clear();
            }
            self.last_ts = None;
            self.counted = 0;
            self.column_done = false;
        }
    }
}
