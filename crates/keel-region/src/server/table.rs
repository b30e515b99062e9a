//! [`Table`]: a table's regions behind one handle. Gets, mutations and read-modify-writes go to
//! the region whose key range holds their row; scans run region after region in the scan's
//! direction ([`TableScanner`]), each region read by its own [`RegionScanner`], so a table that
//! is several regions reads as one.

use std::sync::Arc;

use bytes::Bytes;
use keel_cell::Cell;

use crate::catalog::RegionEntry;
use crate::error::RegionError;
use crate::filter::Filter;
use crate::matcher::ReadQuery;
use crate::region::{Durability, Region, WriteTimings};
use crate::scan::Scan;
use crate::scanner::RegionScanner;

/// One region of a table, as a caller sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegionInfo {
    /// The region's id (its directory and its key in the WAL).
    pub id: u64,
    /// Its first row (inclusive; empty: the table's first row).
    pub start_key: Bytes,
    /// The row after it (exclusive; empty: past the table's last row).
    pub end_key: Bytes,
}

/// A table's open regions in key order, contiguous.
#[derive(Debug, Clone)]
pub(crate) struct TableRegions {
    pub(crate) regions: Vec<(RegionEntry, Arc<Region>)>,
}

/// A table's regions as served now, swapped whole when a split or merge commits, so that every
/// handle (and every scan in progress) follows the table's current shape.
#[derive(Debug)]
pub(crate) struct LiveRegions {
    /// Read by every call on the table: striped, so calls on different cores do not share a
    /// lock word and a reference count.
    current: keel_sync::ReadMostly<TableRegions>,
    /// A split or merge has closed some of the regions and not yet opened their successors.
    changing: std::sync::atomic::AtomicBool,
}

impl LiveRegions {
    pub(crate) fn new(regions: Arc<TableRegions>) -> Arc<LiveRegions> {
        Arc::new(LiveRegions {
            current: keel_sync::ReadMostly::new(TableRegions::clone(&regions)),
            changing: std::sync::atomic::AtomicBool::new(false),
        })
    }

    pub(crate) fn get(&self) -> Arc<TableRegions> {
        self.current.load()
    }

    pub(crate) fn set(&self, regions: Arc<TableRegions>) {
        self.current.store(TableRegions::clone(&regions));
    }

    pub(crate) fn set_changing(&self, changing: bool) {
        self.changing
            .store(changing, std::sync::atomic::Ordering::Release);
    }

    fn changing(&self) -> bool {
        self.changing.load(std::sync::atomic::Ordering::Acquire)
    }
}

/// How long a call waits for a split or merge of its region to finish before giving up.
const CHANGE_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// A call's allowance of [`CHANGE_WAIT`], counted from its first wait: the clock is read only
/// when a call finds its region closed by a split (reading it at every call was 1% of a get).
#[derive(Default)]
struct ChangeWait(Option<std::time::Instant>);

impl ChangeWait {
    /// Whether the call may wait for the change a little more.
    fn may_wait(&mut self) -> bool {
        let now = std::time::Instant::now();
        now < *self.0.get_or_insert(now + CHANGE_WAIT)
    }
}

impl TableRegions {
    /// The index of the region holding `row`.
    pub(crate) fn locate(&self, row: &[u8]) -> usize {
        // `compare_bytes`, not slice `<=`: the slice order is a `memcmp` call even for the
        // first region's empty start key, 2% of a ten-column get's time in YCSB C.
        self.regions
            .partition_point(|(entry, _)| keel_cell::compare_bytes(&entry.start_key, row).is_le())
            .saturating_sub(1)
    }

    pub(crate) fn region_for(&self, row: &[u8]) -> &Arc<Region> {
        &self.regions[self.locate(row)].1
    }

    pub(crate) fn all(&self) -> impl Iterator<Item = &Arc<Region>> {
        self.regions.iter().map(|(_, r)| r)
    }
}

/// One region's share of a batch: the operations' positions in the batch, and the operations.
type RegionShare = (Vec<usize>, Vec<(Vec<Cell>, Durability)>);

/// A table's handle: reads and writes go to its regions. It follows splits and merges: a call
/// that meets a region closed by one waits for its successors and goes there.
#[derive(Debug, Clone)]
pub struct Table {
    pub(crate) name: String,
    pub(crate) live: Arc<LiveRegions>,
}

impl Table {
    /// The table's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The table's regions as they are now.
    fn now(&self) -> Arc<TableRegions> {
        self.live.get()
    }

    /// Runs `op` on the current regions; if it meets a region that a split or merge closed
    /// (`RegionClosed`, refused before anything was done), waits for the new regions and runs
    /// it again on them.
    fn following<T>(
        &self,
        mut op: impl FnMut(&TableRegions) -> Result<T, RegionError>,
    ) -> Result<T, RegionError> {
        let mut wait = ChangeWait::default();
        loop {
            let regions = self.now();
            match op(&regions) {
                Err(RegionError::RegionClosed { .. })
                    if (self.live.changing() || !Arc::ptr_eq(&regions, &self.now()))
                        && wait.may_wait() =>
                {
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
                other => return other,
            }
        }
    }

    /// The table's first region (the whole table unless it has several: see
    /// [`Table::regions`]).
    pub fn region(&self) -> Arc<Region> {
        Arc::clone(&self.now().regions[0].1)
    }

    /// The region holding `row` now.
    pub fn region_for(&self, row: &[u8]) -> Arc<Region> {
        Arc::clone(self.now().region_for(row))
    }

    /// Every region, in key order.
    pub fn regions(&self) -> Vec<Arc<Region>> {
        self.now().all().cloned().collect()
    }

    /// Every region's id and key range, in key order.
    pub fn region_infos(&self) -> Vec<RegionInfo> {
        self.now()
            .regions
            .iter()
            .map(|(e, _)| RegionInfo {
                id: e.id,
                start_key: e.start_key.clone(),
                end_key: e.end_key.clone(),
            })
            .collect()
    }

    /// Puts one value at the server's time, at the default durability.
    pub fn put(
        &self,
        row: &[u8],
        family: &[u8],
        qualifier: &[u8],
        value: &[u8],
    ) -> Result<WriteTimings, RegionError> {
        let cell = Cell::put(
            Bytes::copy_from_slice(row),
            Bytes::copy_from_slice(family),
            Bytes::copy_from_slice(qualifier),
            keel_cell::LATEST_TIMESTAMP,
            Bytes::copy_from_slice(value),
        )
        .map_err(|e| RegionError::BadCell(e.to_string()))?;
        self.mutate(vec![cell], Durability::UseDefault)
    }

    /// Applies puts and deletes at `durability` (`UseDefault`: the table's default). Atomic
    /// when every cell's row is in one region (a row always is); cells in several regions are
    /// applied region by region, in key order, as HBase applies a multi-region batch — a
    /// failure in one leaves the regions before it written.
    pub fn mutate(
        &self,
        cells: Vec<Cell>,
        durability: Durability,
    ) -> Result<WriteTimings, RegionError> {
        if cells.is_empty() {
            return self.region().mutate(cells, durability);
        }
        // Each region's share goes once: a share refused by a closed region is routed again,
        // from the cells kept here (one clone per attempt; a one-row write is one share).
        let mut remaining = cells;
        let mut timings = WriteTimings::default();
        while !remaining.is_empty() {
            let first_row = remaining[0].row_bytes();
            remaining = self.following(|regions| {
                let home = regions.locate(&first_row);
                let (share, rest): (Vec<Cell>, Vec<Cell>) = remaining
                    .iter()
                    .cloned()
                    .partition(|c| regions.locate(c.row()) == home);
                timings = regions.regions[home].1.mutate(share, durability)?;
                Ok(rest)
            })?;
        }
        Ok(timings)
    }

    /// Applies operations (each one row's cells) in the regions of their rows, each region's
    /// share as one [`Region::batch`]; one status per operation, in order. An operation whose
    /// cells lie in two regions is refused.
    pub fn batch(&self, operations: Vec<(Vec<Cell>, Durability)>) -> Vec<Result<(), RegionError>> {
        let n = operations.len();
        let mut statuses: Vec<Option<Result<(), RegionError>>> = (0..n).map(|_| None).collect();
        let mut pending: Vec<(usize, (Vec<Cell>, Durability))> =
            operations.into_iter().enumerate().collect();
        let mut wait = ChangeWait::default();
        while !pending.is_empty() {
            let regions = self.now();
            let mut groups: std::collections::BTreeMap<usize, RegionShare> = Default::default();
            for (i, (cells, durability)) in std::mem::take(&mut pending) {
                let Some(first) = cells.first() else {
                    statuses[i] = Some(Err(RegionError::BadCell(
                        "an operation with no cells".to_string(),
                    )));
                    continue;
                };
                let home = regions.locate(first.row());
                if cells.iter().any(|c| regions.locate(c.row()) != home) {
                    statuses[i] = Some(Err(RegionError::BadCell(
                        "one operation's rows lie in two regions".to_string(),
                    )));
                    continue;
                }
                let group = groups.entry(home).or_default();
                group.0.push(i);
                group.1.push((cells, durability));
            }
            for (index, (positions, ops)) in groups {
                let retry = ops.clone();
                let results = regions.regions[index].1.batch(ops);
                for ((i, result), op) in positions.into_iter().zip(results).zip(retry) {
                    let follow = matches!(result, Err(RegionError::RegionClosed { .. }))
                        && (self.live.changing() || !Arc::ptr_eq(&regions, &self.now()))
                        && wait.may_wait();
                    if follow {
                        pending.push((i, op));
                    } else {
                        statuses[i] = Some(result);
                    }
                }
            }
            if !pending.is_empty() {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        }
        statuses
            .into_iter()
            .map(|s| s.unwrap_or_else(|| Err(RegionError::BadCell("not applied".to_string()))))
            .collect()
    }

    /// The row's cells that `query` selects.
    pub fn get(&self, row: &[u8], query: &ReadQuery) -> Result<Vec<Cell>, RegionError> {
        self.following(|r| r.region_for(row).get(row, query))
    }

    /// The row's cells that `query` selects and `filter` keeps.
    pub fn get_filtered(
        &self,
        row: &[u8],
        query: &ReadQuery,
        filter: &Filter,
    ) -> Result<Vec<Cell>, RegionError> {
        self.following(|r| r.region_for(row).get_filtered(row, query, filter))
    }

    /// The rows `scan` selects.
    pub fn scan(&self, scan: &Scan) -> Result<Vec<Vec<Cell>>, RegionError> {
        crate::scan::collect_rows(scan, self.scanner(scan)?)
    }

    /// A streaming scan over every region the scan's range touches, in its direction; it
    /// follows splits and merges that happen while it runs.
    pub fn scanner(&self, scan: &Scan) -> Result<TableScanner, RegionError> {
        TableScanner::new(Arc::clone(&self.live), scan.clone())
    }

    /// The latest value of one column, if any.
    pub fn get_value(
        &self,
        row: &[u8],
        family: &[u8],
        qualifier: &[u8],
    ) -> Result<Option<Bytes>, RegionError> {
        Ok(self
            .following(|r| r.region_for(row).latest(row, family, qualifier))?
            .map(|c| c.value_bytes()))
    }

    /// Adds `delta` to a counter and returns the new value, at the default durability.
    pub fn increment(
        &self,
        row: &[u8],
        family: &[u8],
        qualifier: &[u8],
        delta: i64,
    ) -> Result<i64, RegionError> {
        Ok(self
            .following(|r| {
                r.region_for(row)
                    .increment(row, family, qualifier, delta, Durability::UseDefault)
            })?
            .0)
    }

    /// Appends to several columns of one row atomically ([`Region::append_columns`]).
    pub fn append_columns(
        &self,
        row: &[u8],
        columns: &[(Bytes, Bytes, Bytes)],
        durability: Durability,
    ) -> Result<Vec<Cell>, RegionError> {
        Ok(self
            .following(|r| r.region_for(row).append_columns(row, columns, durability))?
            .0)
    }

    /// [`Region::check_and_mutate`] in the row's region.
    pub fn check_and_mutate(
        &self,
        row: &[u8],
        family: &[u8],
        qualifier: &[u8],
        check: impl Fn(Option<&[u8]>) -> bool,
        cells: Vec<Cell>,
        durability: Durability,
    ) -> Result<bool, RegionError> {
        self.following(|r| {
            r.region_for(row).check_and_mutate(
                row,
                family,
                qualifier,
                &check,
                cells.clone(),
                durability,
            )
        })
    }

    /// Merges, in every region, the store files HBase's exploring policy selects; returns how
    /// many files went away.
    pub fn compact(&self) -> Result<usize, RegionError> {
        self.compact_regions(false)
    }

    /// Rewrites every region's store files as one per family, dropping deleted, expired and
    /// excess versions and delete markers; returns how many files went away.
    pub fn major_compact(&self) -> Result<usize, RegionError> {
        self.compact_regions(true)
    }

    /// Compacts every region (`major`: all of each family's files).
    fn compact_regions(&self, major: bool) -> Result<usize, RegionError> {
        let policy = crate::compaction_policy::CompactionPolicy::default();
        let mut gone = 0;
        // A split or merge may close a region meanwhile (its compaction is then cancelled):
        // the call waits for the regions that replace it and compacts those, not again the
        // ones already done.
        let mut done = std::collections::HashSet::new();
        self.following(|regions| {
            for region in regions.all() {
                if done.contains(&region.id()) {
                    continue;
                }
                match region.compact(&policy, major) {
                    Ok(removed) => gone += removed,
                    Err(RegionError::CompactionCancelled(id)) if !region.is_open() => {
                        return Err(RegionError::RegionClosed { region: id });
                    }
                    Err(other) => return Err(other),
                }
                done.insert(region.id());
            }
            Ok(gone)
        })
    }

    /// Writes every region's memstores to store files; returns the highest flushed sequence id.
    pub fn flush(&self) -> Result<u64, RegionError> {
        let mut highest = 0;
        for region in self.regions() {
            highest = highest.max(region.flush()?);
        }
        Ok(highest)
    }
}

/// A scan over a table: its regions one after another in the scan's direction, each through
/// its own [`RegionScanner`] (with its own instance of the scan's filter, as HBase runs one per
/// region scanner), the row limit counted across them. The next region is found by key in the
/// table as it is when the scan gets there, so a split or merge of a region the scan has not
/// reached yet changes nothing it returns.
pub struct TableScanner {
    live: Arc<LiveRegions>,
    scan: Scan,
    /// Where the next region must start (forward: the last region's end; reversed: the rows
    /// below the last region's start). `None` before the first region; `Some(empty)` means
    /// there is none (the end of the table).
    boundary: Option<Bytes>,
    current: Option<RegionScanner>,
    rows: usize,
    cells_read: u64,
    done: bool,
}

impl std::fmt::Debug for TableScanner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableScanner")
            .field("scan", &self.scan)
            .field("rows", &self.rows)
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

impl TableScanner {
    fn new(live: Arc<LiveRegions>, scan: Scan) -> Result<TableScanner, RegionError> {
        let mut scanner = TableScanner {
            live,
            scan,
            boundary: None,
            current: None,
            rows: 0,
            cells_read: 0,
            done: false,
        };
        // Open the first region now, so that a scan of a closed table fails at open.
        if !scanner.open_next()? {
            scanner.done = true;
        }
        Ok(scanner)
    }

    /// Cells the scan has taken from its sources so far, every region together.
    pub fn cells_read(&self) -> u64 {
        self.cells_read + self.current.as_ref().map_or(0, RegionScanner::cells_read)
    }

    /// Appends the scan's next result (a row, or a batch of one) to `out` and answers how many
    /// cells it has, 0 at the end: [`RegionScanner::next_into`] across the table's regions,
    /// the allocation-free form of the iterator for a caller that clears and reuses `out`.
    /// After an error the scan is over.
    pub fn next_into(&mut self, out: &mut Vec<Cell>) -> Result<usize, RegionError> {
        loop {
            if self.done {
                return Ok(0);
            }
            let Some(current) = self.current.as_mut() else {
                self.done = true;
                return Ok(0);
            };
            // Each region's scanner stops at the rows still allowed; past its last, the next
            // region (if the limit leaves any).
            let read = match current.next_into(out) {
                Ok(0) => match self.open_next() {
                    Ok(true) => continue,
                    Ok(false) => Ok(0),
                    Err(e) => Err(e),
                },
                read => read,
            };
            if !matches!(read, Ok(n) if n > 0) {
                self.done = true;
            }
            return read;
        }
    }

    /// The next region to read, in the table as it is now: the one after the boundary, if the
    /// scan's range reaches it.
    fn next_region(&self, regions: &TableRegions) -> Option<(RegionEntry, Arc<Region>)> {
        let index = match (&self.boundary, self.scan.reversed) {
            (None, false) => regions.locate(&self.scan.start_row),
            (None, true) if self.scan.start_row.is_empty() => regions.regions.len() - 1,
            (None, true) => regions.locate(&self.scan.start_row),
            (Some(b), _) if b.is_empty() => return None,
            (Some(b), false) => regions.locate(b),
            // Reversed: the region holding the rows just below `b`.
            (Some(b), true) => regions
                .regions
                .partition_point(|(e, _)| e.start_key[..] < b[..])
                .checked_sub(1)?,
        };
        let (entry, region) = regions.regions.get(index)?;
        touches(entry, &self.scan).then(|| (entry.clone(), Arc::clone(region)))
    }

    /// Moves to the next region, if any; false when none is left.
    fn open_next(&mut self) -> Result<bool, RegionError> {
        if let Some(done) = self.current.take() {
            self.cells_read += done.cells_read();
            self.rows += done.rows();
        }
        if self.scan.limit.is_some_and(|limit| self.rows >= limit) {
            return Ok(false);
        }
        let mut scan = self.scan.clone();
        if let Some(limit) = scan.limit {
            scan.limit = Some(limit - self.rows);
        }
        let mut wait = ChangeWait::default();
        loop {
            let regions = self.live.get();
            let Some((entry, region)) = self.next_region(&regions) else {
                return Ok(false);
            };
            match region.scanner(&scan) {
                Ok(scanner) => {
                    self.current = Some(scanner);
                    // Past the first region, `Some(empty)` stands for "no more".
                    self.boundary = Some(if self.scan.reversed {
                        if entry.start_key.is_empty() {
                            Bytes::new()
                        } else {
                            entry.start_key.clone()
                        }
                    } else {
                        entry.end_key.clone()
                    });
                    return Ok(true);
                }
                Err(RegionError::RegionClosed { .. })
                    if (self.live.changing() || !Arc::ptr_eq(&regions, &self.live.get()))
                        && wait.may_wait() =>
                {
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
                Err(e) => return Err(e),
            }
        }
    }
}

/// Whether region `entry` can hold rows of `scan`'s range.
fn touches(entry: &RegionEntry, scan: &Scan) -> bool {
    let (low, high): (&[u8], &[u8]) = if scan.reversed {
        (&scan.stop_row, &scan.start_row)
    } else {
        (&scan.start_row, &scan.stop_row)
    };
    // The region ends at or before the range starts?
    let before = !entry.end_key.is_empty() && !low.is_empty() && entry.end_key[..] <= *low;
    // The region starts past the range's end (forward: stop is exclusive; reversed: start is
    // inclusive)?
    let after = !high.is_empty()
        && if scan.reversed {
            entry.start_key[..] > *high
        } else {
            entry.start_key[..] >= *high
        };
    !before && !after
}

impl Iterator for TableScanner {
    type Item = Result<Vec<Cell>, RegionError>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut result = Vec::new();
        match self.next_into(&mut result) {
            Ok(0) => None,
            Ok(_) => Some(Ok(result)),
            Err(e) => Some(Err(e)),
        }
    }
}
