//! A scan in progress: one merge of every source (memstore segments and store files taken at
//! its start, at one read point, so a flush during the scan changes nothing it returns), read a
//! row at a time in either direction, through the read's own rules (the [`Matcher`]) and then
//! the scan's filter, which may make it seek.

use std::collections::VecDeque;

use bytes::Bytes;
use keel_cell::{Cell, CellKey, same_bytes};
use keel_storefile::{KeyValueScanner, MergeScanner, Take};

use crate::error::RegionError;
use crate::filter::{
    Active, Hooks, ReturnCode, drops_row, drops_row_key, ends_scan, is_row_hint, reset,
};
use crate::matcher::{Matcher, ReadQuery};
use crate::scan::Scan;

/// A scan in progress ([`crate::Region::scanner`]): an iterator of results, each the selected
/// cells of one row (or a batch of them). It reads one row at a time from the merge of every
/// source — forwards, or, reversed, each row forwards and then the row before it
/// (`KeyValueScanner::seek_before_row`, HBase's `seekToPreviousRow`) — so neither direction
/// holds more than the row it is on.
///
/// Its filter runs inside: per row `filter_row_key`, per cell (after the matcher) `filter_cell`,
/// whose step becomes a seek — past the column, past the family's rest of the row, or to the
/// filter's hint — then `transform`, `filter_row_cells` and `filter_row` on the row, `reset`,
/// and `filter_all_remaining` to end the scan early. Two answers a filter can give ahead are
/// taken without asking per cell: a row it will pass whole (`Active::passes_rest_of_row`) is
/// read as an unfiltered scan reads it, and after a cell it includes, a row it will drop the
/// rest of (`Active::drops_rest_of_row`) is left at once.
pub struct RegionScanner {
    merge: MergeScanner<'static>,
    matcher: Matcher<'static>,
    skip: ColumnSkip,
    scan: Scan,
    filter: Option<Box<dyn Active>>,
    /// The merge reads one family: the end of a family's part of a row is the end of the row.
    one_family: bool,
    /// The filter's `has_filter_row`, asked once (it is fixed for a filter's life; asking a
    /// list at every row walked its filters through a virtual call apiece).
    filter_has_row: bool,
    /// The filter's `transforms`, asked once: a kept cell goes through `transform` only if
    /// the filter may change it.
    filter_transforms: bool,
    /// The filter's `hooks`, asked once: a call the filter does not hook (a row count's
    /// filters never end a scan nor look at a row key) is not made, at every row and cell.
    filter_hooks: Hooks,
    ready: VecDeque<Vec<Cell>>,
    /// The row being read: its cells alone, as the sources' `take_row` sees them. Handed to
    /// the caller by [`RegionScanner::next_into`] (swapped with an empty buffer of the
    /// caller's, so a caller that reuses one buffer reads a scan without allocating).
    cells: Vec<Cell>,
    rows: usize,
    done: bool,
    /// Cells taken from the merge (what the scan read, whatever it returned).
    cells_read: u64,
    /// Cells the last row returned, plus the slot a source's look past the row takes
    /// ([`KeyValueScanner::take_row`]): the next row's buffer starts that large (a scan's rows
    /// are mostly alike, and growing the buffer moves every cell already in it; sized for the
    /// cells alone, every ten-column row grew to twenty at that look).
    row_hint: usize,
    /// The filter passes every cell of the current row as it is (`Active::passes_rest_of_row`,
    /// asked after `filter_row_key`): the row's cells skip the per-cell filter calls.
    row_passes: bool,
    /// A reversed scan's filter hint already moved the merge off the current row.
    moved_off_row: bool,
    /// A filter skipped the rest of an empty-qualifier column, which cannot be seeked past:
    /// the family's delete markers live there (see [`ColumnSkip`]).
    draining: Option<Draining>,
}

/// The rest of an empty-qualifier column, read through the matcher (so its delete markers
/// count) but not given to the filter; then, if the filter gave one, its hint.
#[derive(Debug)]
struct Draining {
    row: Bytes,
    family: Bytes,
    then: Option<CellKey>,
}

impl Draining {
    /// The rest of `cell`'s (empty-qualifier) column, then `then`.
    fn of(cell: &Cell, then: Option<CellKey>) -> Draining {
        Draining {
            row: cell.row_bytes(),
            family: cell.family_bytes(),
            then,
        }
    }
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
    /// Older versions of the finished column passed over in place since it finished.
    passed: u8,
}

/// Where the finished column's coordinates are.
#[derive(Debug)]
enum Finished {
    /// In the last cell the caller kept: no copy of its key needed (every returned column's
    /// last version is this case, so it is the common one, and it saves three reference-count
    /// round trips on the cell's shared block).
    Kept,
    /// The key of a finished column's last cell, which was not kept.
    Dropped(CellKey),
}

impl ColumnSkip {
    /// Notes that `cell`'s column has all the versions the read wants; `kept`: the caller
    /// keeps `cell` as the last of its results (it is then passed back to
    /// [`ColumnSkip::past_finished_column`] as `last_kept`).
    #[inline]
    pub(crate) fn column_done(&mut self, cell: &Cell, kept: bool) {
        if cell.qualifier().is_empty() {
            return;
        }
        self.passed = 0;
        self.done = Some(if kept {
            Finished::Kept
        } else {
            Finished::Dropped(cell.key().clone())
        });
    }

    /// Where to reseek if `next` is an older version of the finished column (`next` is then
    /// to be passed over along with the rest of the column); `None` to read `next`.
    /// `last_kept` is the caller's last kept cell (`None` once its results were handed on,
    /// when `next` is always of another row).
    #[inline]
    pub(crate) fn past_finished_column(
        &mut self,
        next: &Cell,
        last_kept: Option<&Cell>,
    ) -> Option<CellKey> {
        let done = self.done.take()?;
        let finished = match &done {
            Finished::Dropped(key) => key,
            Finished::Kept => last_kept?.key(),
        };
        if !next.key().same_column(finished) {
            return None;
        }
        Some(CellKey::last_on_column(
            finished.row_bytes(),
            finished.family(),
            finished.qualifier(),
        ))
    }

    /// For a reader taking a row in one call ([`KeyValueScanner::take_row`]): `None` when
    /// `next` may be read as it is; [`Take::Pass`] for one of the first
    /// [`PASSED_BEFORE_SEEK`] older versions of the finished column, passed over where it
    /// lies (the seek [`ColumnSkip::past_finished_column`] would make skips it unread too);
    /// [`Take::Stop`] at the next one, where that seek is due (its state is then left for that
    /// call). A column updated since its file was written (a newer version in the memstore,
    /// the old one in the file) stopped the take at every such column for a seek that only
    /// stepped over one cell.
    #[inline]
    pub(crate) fn take_or_stop(&mut self, next: &Cell, last_kept: Option<&Cell>) -> Option<Take> {
        let finished = match &self.done {
            None => return None,
            Some(Finished::Dropped(key)) => Some(key),
            Some(Finished::Kept) => last_kept.map(Cell::key),
        };
        if finished.is_some_and(|finished| next.key().same_column(finished)) {
            if self.passed < PASSED_BEFORE_SEEK {
                self.passed += 1;
                return Some(Take::Pass);
            }
            return Some(Take::Stop);
        }
        self.done = None;
        None
    }
}

/// A run of columns decided without the matcher, for a reader taking a row in one call
/// ([`KeyValueScanner::take_row`]). After the matcher admits a cell while
/// [`Matcher::run_open`] holds, each following cell that is the next column's visible put
/// ([`Matcher::continues_run`]) is kept on that test alone; the matcher is told once, at the
/// run's end ([`PlainRun::close`]), before it decides anything else. A cell kept while a run
/// is open is kept with the run's rule ([`Take::KeepRun`]), so a source that can apply it
/// keeps the rest of the run without asking ([`PlainRun::absorb`] accounts for those).
#[derive(Debug, Default)]
pub(crate) struct PlainRun {
    /// The last cell kept was admitted while a run may follow it.
    open: bool,
    /// Cells were kept in the run since the matcher last decided one.
    behind: bool,
    /// After a [`Take::KeepRun`]: how many results there were with the cell it kept. More,
    /// at the next call, are cells the source kept by the rule.
    known: Option<usize>,
}

impl PlainRun {
    /// Whether `cell` is kept as the next column of the open run, `kept` ending with the
    /// run's last cell (the column skip is then set as the matcher's admission would set it).
    #[inline]
    pub(crate) fn keeps(
        &mut self,
        matcher: &Matcher<'_>,
        skip: &mut ColumnSkip,
        cell: &Cell,
        kept: &[Cell],
    ) -> bool {
        if !self.open {
            return false;
        }
        let Some(last) = kept.last() else {
            return false;
        };
        if !matcher.continues_run(cell, last) {
            return false;
        }
        skip.column_done(cell, true);
        self.behind = true;
        true
    }

    /// The take for a cell the reader keeps, `kept` the results before it: with the run's
    /// rule while a run is open, so that the source may keep the rest of the run unasked.
    #[inline]
    pub(crate) fn keep(&mut self, matcher: &Matcher<'_>, kept: &[Cell]) -> Take {
        if !self.open {
            return Take::Keep;
        }
        self.known = Some(kept.len() + 1);
        Take::KeepRun(matcher.run_rule())
    }

    /// Accounts for the cells a source kept by the run's rule since the last
    /// [`PlainRun::keep`], `kept` the results now: each is a cell [`PlainRun::keeps`] would
    /// have kept, so the matcher is behind by them and the column skip is set as for their
    /// last. Returns how many there were (the reader counts them as read). Called first
    /// whenever the reader is shown a cell, and once its take returns.
    #[inline]
    pub(crate) fn absorb(&mut self, skip: &mut ColumnSkip, kept: &[Cell]) -> usize {
        let Some(known) = self.known.take() else {
            return 0;
        };
        let extra = kept.len().saturating_sub(known);
        if extra > 0
            && let Some(last) = kept.last()
        {
            skip.column_done(last, true);
            self.behind = true;
        }
        extra
    }

    /// Ends the run: the matcher catches up with its last cell, the end of `kept`. Called
    /// before the matcher decides any other cell, and when a row's take returns with more of
    /// the row to read, or fails.
    #[inline]
    pub(crate) fn close(&mut self, matcher: &mut Matcher<'_>, kept: &[Cell]) {
        self.open = false;
        if std::mem::take(&mut self.behind)
            && let Some(last) = kept.last()
        {
            matcher.catch_up(last);
        }
    }

    /// After the matcher decided a cell (`admitted`: kept as the last of the results): a run
    /// may follow it.
    #[inline]
    pub(crate) fn decided(&mut self, admitted: bool, matcher: &Matcher<'_>) {
        self.open = admitted && matcher.run_open();
    }
}

/// How many older versions of a finished column a reader taking a row in one call passes
/// over before it stops for a seek: a seek re-positions every source and pays for itself only
/// over more cells than a column usually holds.
const PASSED_BEFORE_SEEK: u8 = 2;

/// Where a read that names columns goes from a cell: [`column_step`].
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ColumnStep<'q> {
    /// The cell's column may be read (named, its whole family named, or the empty qualifier).
    Read,
    /// The next named column of the family: seek to its first cell.
    SeekTo(&'q Bytes),
    /// Past every column the read names in the cell's family: skip the rest of the family.
    PastFamily,
}

/// What a read of `query` does with a cell of (`family`, `qualifier`) before the matcher sees
/// it (HBase's explicit column tracker, which answers `SEEK_NEXT_COL` with the next wanted
/// column): the cells of columns it does not name are seeked past, not read one version at a
/// time. The empty-qualifier column is always read: the family's delete markers live there, and
/// it sorts before every other column, so a seek from any later one cannot skip them. The
/// column list is walked each call (a read names a handful; no allocation per get).
pub(crate) fn column_step<'q>(
    query: &'q ReadQuery,
    family: &[u8],
    qualifier: &[u8],
) -> ColumnStep<'q> {
    let Some(columns) = &query.columns else {
        return ColumnStep::Read;
    };
    if qualifier.is_empty() {
        return ColumnStep::Read;
    }
    let mut next: Option<&'q Bytes> = None;
    for (named_family, named) in columns {
        if named_family != family {
            continue;
        }
        let Some(named) = named else {
            return ColumnStep::Read; // the whole family
        };
        match named[..].cmp(qualifier) {
            std::cmp::Ordering::Equal => return ColumnStep::Read,
            std::cmp::Ordering::Greater if next.is_none_or(|n| named < n) => next = Some(named),
            _ => {}
        }
    }
    next.map_or(ColumnStep::PastFamily, ColumnStep::SeekTo)
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
    /// A scan over `merge` (already positioned for a forward scan), whose sources hold only
    /// one family if `one_family`.
    pub(crate) fn new(
        mut merge: MergeScanner<'static>,
        matcher: Matcher<'static>,
        scan: Scan,
        one_family: bool,
    ) -> Result<RegionScanner, RegionError> {
        if scan.reversed {
            merge.seek_before_row(scan.reversed_upper().as_deref())?;
        }
        let filter = scan.filter.as_ref().map(|f| f.instantiate(scan.reversed));
        Ok(RegionScanner {
            merge,
            matcher,
            skip: ColumnSkip::default(),
            scan,
            filter_has_row: filter.as_ref().is_some_and(|f| f.has_filter_row()),
            filter_transforms: filter.as_ref().is_some_and(|f| f.transforms()),
            filter_hooks: filter.as_ref().map_or(Hooks::NONE, |f| f.hooks()),
            filter,
            one_family,
            ready: VecDeque::new(),
            cells: Vec::new(),
            rows: 0,
            done: false,
            cells_read: 0,
            row_hint: 0,
            row_passes: false,
            moved_off_row: false,
            draining: None,
        })
    }

    /// Rows this scan has returned so far (a row cut into batches counts once).
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Cells this scan has taken from its sources so far (the measure of how much it read: a
    /// filter that seeks keeps it near what the scan returns).
    pub fn cells_read(&self) -> u64 {
        self.cells_read
    }

    /// The next row the scan takes (stepping over rows it does not include), or `None` at its
    /// end.
    fn next_row_key(&mut self) -> Result<Option<Bytes>, RegionError> {
        loop {
            let Some(cell) = self.merge.peek() else {
                return Ok(None);
            };
            let row = cell.row_bytes();
            if self.scan.past_end(&row) {
                return Ok(None);
            }
            if self.scan.includes(&row) {
                return Ok(Some(row));
            }
            self.leave_row(&row)?;
        }
    }

    /// Moves to the row after `row` in the scan's direction (unless a filter's hint already
    /// moved the scan on).
    fn leave_row(&mut self, row: &Bytes) -> Result<(), RegionError> {
        if self.scan.reversed {
            if !std::mem::take(&mut self.moved_off_row) {
                self.merge.seek_before_row(Some(row))?;
            }
        } else if self.merge.peek().is_some_and(|c| same_bytes(c.row(), row)) {
            self.merge.seek(&CellKey::last_on_row(row.clone()))?;
        }
        Ok(())
    }

    /// The cells of `row` the read selects: the row's cells in `CellComparator` order, through
    /// the matcher and the filter, skipping what they say can be skipped with seeks.
    ///
    /// Each cell is decided on where it lies in its source ([`KeyValueScanner::peek`]) and then
    /// moved once into the row's results or dropped; every seek below goes to a key after the
    /// peeked cell, so it passes over that cell as well.
    ///
    /// Where no filter looks at the row's cells, the row is taken in one call
    /// ([`KeyValueScanner::take_row`]), deciding each cell on the matcher alone; the loop
    /// below handles only the cells that call stops at (those due a seek).
    fn read_row(&mut self, row: &Bytes) -> Result<(), RegionError> {
        let mut out = std::mem::take(&mut self.cells);
        out.clear();
        if out.capacity() == 0 {
            // As large as the hint says: `reserve` on an empty vector rounds up to four cells,
            // twice what a row count's rows take.
            out = Vec::with_capacity(self.row_hint);
        } else {
            out.reserve(self.row_hint);
        }
        let read = self.read_row_into(row, &mut out);
        self.cells = out;
        read
    }

    /// [`RegionScanner::read_row`]'s reading, into `out` (empty).
    fn read_row_into(&mut self, row: &Bytes, out: &mut Vec<Cell>) -> Result<(), RegionError> {
        self.draining = None;
        let unfiltered = self.filter.is_none() || self.row_passes;
        loop {
            if unfiltered && self.draining.is_none() {
                self.take_unfiltered(row, out)?;
            }
            let Some(cell) = self.merge.peek() else {
                break;
            };
            if !same_bytes(cell.row(), row) {
                break;
            }
            self.cells_read += 1;
            if let Some(past) = self.skip.past_finished_column(cell, out.last()) {
                self.merge.reseek(&past)?;
                continue;
            }
            if let Some(draining) = &self.draining {
                if same_bytes(cell.row(), &draining.row)
                    && same_bytes(cell.family(), &draining.family)
                    && cell.qualifier().is_empty()
                {
                    self.matcher.admit(cell);
                    self.merge.skip()?;
                    continue;
                }
                let then = self.draining.take().and_then(|d| d.then);
                if let Some(hint) = then
                    && self.hint_moves_on(cell, &hint)
                {
                    self.seek_hint(hint)?;
                    continue;
                }
            }
            match column_step(&self.scan.query, cell.family(), cell.qualifier()) {
                ColumnStep::Read => {}
                ColumnStep::SeekTo(wanted) => {
                    let target = CellKey::first_on_column(cell.row_bytes(), cell.family(), wanted);
                    self.advance_to(&target)?;
                    continue;
                }
                ColumnStep::PastFamily => {
                    let past = CellKey::past_family(cell.row(), cell.family());
                    self.advance_to(&past)?;
                    continue;
                }
            }
            let admitted = self.matcher.admit(cell);
            let column_done = self.matcher.column_done();
            let unfiltered = self.filter.is_none() || self.row_passes;
            if column_done && (!admitted || unfiltered) {
                self.skip.column_done(cell, admitted);
            }
            if !admitted {
                self.merge.skip()?;
                continue;
            }
            let Some(filter) = self.filter.as_mut().filter(|_| !self.row_passes) else {
                self.merge.next_into(out)?;
                continue;
            };
            if ends_scan(filter.as_ref(), self.filter_hooks) {
                self.done = true;
                break;
            }
            let mut code = filter.filter_cell(cell);
            if matches!(code, ReturnCode::Include | ReturnCode::IncludeAndNextCol)
                && filter.drops_rest_of_row()
            {
                // The filter will answer the row's next cell with `NextRow` (a row count's
                // `FirstKeyOnlyFilter`): leave now rather than read that cell to hear it. Every
                // cell between here and that answer would have been dropped, by the matcher or by
                // it, and nothing else is asked of the filter on the way.
                code = ReturnCode::IncludeAndSeekNextRow;
            }
            // What the code asks for is read from the peeked cell; the cell is then kept or
            // passed over, and only after that does the scan seek (to a key after it).
            let mut seek_to: Option<CellKey> = None;
            let mut seek_hint: Option<CellKey> = None;
            // A kept cell whose row the scan then leaves, with one family in the merge.
            let mut keep_and_leave_row = false;
            let next_col = match code {
                ReturnCode::Include | ReturnCode::Skip => column_done,
                ReturnCode::IncludeAndNextCol | ReturnCode::NextCol => true,
                ReturnCode::IncludeAndSeekNextRow | ReturnCode::NextRow => {
                    // HBase's NEXT_ROW moves only the store that returned the cell: the rest
                    // of its family in this row is skipped, the row's other families still
                    // come. One buffer for the key (a counted row and a separate family name
                    // were two allocations and a count on the cell's block, per row of a count).
                    // With one family in the merge, the end of the row is the same place
                    // and needs no key of its own (the row is the cell's, counted).
                    // A kept cell leaves the row through `keep_and_leave_row`, which builds
                    // the key only when the row goes on (a row count's every row otherwise
                    // built one, and a store file checked it).
                    if self.one_family && code.includes() {
                        keep_and_leave_row = true;
                    } else {
                        seek_to = Some(if self.one_family {
                            CellKey::last_on_row(cell.row_bytes())
                        } else {
                            CellKey::past_family(cell.row(), cell.family())
                        });
                    }
                    false
                }
                ReturnCode::SeekNextUsingHint => match filter.hint(cell) {
                    Some(hint) if self.hint_moves_on(cell, &hint) => {
                        if cell.qualifier().is_empty() {
                            self.draining = Some(Draining::of(cell, Some(hint)));
                        } else {
                            seek_hint = Some(hint);
                        }
                        false
                    }
                    // A hint that would not move the scan on is taken as a skip.
                    _ => column_done,
                },
            };
            if next_col {
                if cell.qualifier().is_empty() {
                    self.draining = Some(Draining::of(cell, None));
                } else {
                    // A cell the filter includes is the row's last kept cell below (a
                    // transform keeps its key), so the skip reads the column from there: a
                    // copy of its key cost every filtered cell two counts on its block.
                    self.skip.column_done(cell, code.includes());
                }
            }
            if code.includes() {
                // Kept, then sought past in one call: a store file steps over what the seek
                // passes by cell headers, without decoding the kept cell's successor first (a
                // row count's second cell, at every row).
                match seek_to.take() {
                    Some(target) => self.merge.keep_and_reseek(out, &target)?,
                    None if keep_and_leave_row => self.merge.keep_and_leave_row(out)?,
                    None => self.merge.next_into(out)?,
                }
                if self.filter_transforms {
                    let filter = self.filter.as_ref().expect("checked above");
                    if let Some(kept) = out.pop() {
                        #[cfg(debug_assertions)]
                        let key = kept.key().clone();
                        let changed = filter.transform(kept);
                        // `ColumnSkip` reads the finished column from the kept cell.
                        #[cfg(debug_assertions)]
                        debug_assert!(changed.key() == &key, "a transform keeps the cell's key");
                        out.push(changed);
                    }
                }
            } else if seek_to.is_none() && seek_hint.is_none() {
                // A cell the scan seeks past is left where it is: stepping over it first
                // decoded the next cell only to seek past that too (a row count's second
                // cell, at every row).
                self.merge.skip()?;
            }
            if let Some(target) = seek_to {
                self.advance_to(&target)?;
            }
            if let Some(hint) = seek_hint {
                self.seek_hint(hint)?;
            }
        }
        self.row_hint = out.len().min(1024) + 1;
        Ok(())
    }

    /// The row's cells in one call until one is due a seek: the column skip's, or a column
    /// list's (the caller's loop then seeks). Every other cell goes through the matcher and is
    /// kept or dropped where it lies.
    fn take_unfiltered(&mut self, row: &[u8], out: &mut Vec<Cell>) -> Result<(), RegionError> {
        let (matcher, skip, query) = (&mut self.matcher, &mut self.skip, &self.scan.query);
        let cells_read = &mut self.cells_read;
        let mut run = PlainRun::default();
        let taken = self.merge.take_row(row, out, &mut |cell, kept| {
            *cells_read += run.absorb(skip, kept) as u64;
            if run.keeps(matcher, skip, cell, kept) {
                *cells_read += 1;
                return run.keep(matcher, kept);
            }
            run.close(matcher, kept);
            if let Some(take) = skip.take_or_stop(cell, kept.last()) {
                return take;
            }
            if query.columns.is_some()
                && column_step(query, cell.family(), cell.qualifier()) != ColumnStep::Read
            {
                return Take::Stop;
            }
            *cells_read += 1;
            let admitted = matcher.admit(cell);
            if matcher.column_done() {
                skip.column_done(cell, admitted);
            }
            run.decided(admitted, matcher);
            if admitted {
                run.keep(matcher, kept)
            } else {
                Take::Pass
            }
        });
        *cells_read += run.absorb(skip, out) as u64;
        // The matcher catches up with the run (copying its last column's coordinates, whose
        // bytes a run kept by its source was never read: a cache miss a row) only if it
        // decides more of this row: the next row's first cell resets it. Also on an error: it
        // must not be left behind the results.
        if taken.is_err() || self.merge.peek().is_some_and(|c| same_bytes(c.row(), row)) {
            run.close(matcher, out);
        }
        taken?;
        Ok(())
    }

    /// Moves forward to the first cell at or after `target`, with a reseek: sources already
    /// there stay put, and a store file whose current block holds the target steps within it
    /// without an index lookup (HBase's `nextIndexedKey`, HBASE-13109). A full seek
    /// re-positions every source from the index: counting rows with `FirstKeyOnlyFilter`
    /// seeked at every row and took 2.27× a full scan's time; reseeking takes 0.89×.
    fn advance_to(&mut self, target: &CellKey) -> Result<(), RegionError> {
        self.merge.reseek(target)?;
        Ok(())
    }

    /// Whether seeking to `hint` moves the scan on from `cell` in its direction.
    fn hint_moves_on(&self, cell: &Cell, hint: &CellKey) -> bool {
        if !self.scan.reversed {
            hint > cell.key()
        } else if is_row_hint(hint) {
            hint.row() <= cell.row()
        } else {
            hint.row() == cell.row() && hint > cell.key()
        }
    }

    /// Seeks to a filter's hint: forward, to the key; reversed, a row-level hint goes to the
    /// last row before its row, a column hint to the key within this row.
    fn seek_hint(&mut self, hint: CellKey) -> Result<(), RegionError> {
        if self.scan.reversed && is_row_hint(&hint) {
            self.merge.seek_before_row(Some(hint.row()))?;
            self.moved_off_row = true;
        } else {
            self.advance_to(&hint)?;
        }
        Ok(())
    }

    /// Reads the next non-empty row that passes the filter, in the scan's order, into
    /// `self.cells`; false at the end.
    fn next_row(&mut self) -> Result<bool, RegionError> {
        loop {
            if self.done {
                return Ok(false);
            }
            let Some(row) = self.next_row_key()? else {
                return Ok(false);
            };
            if let Some(filter) = self.filter.as_mut() {
                if ends_scan(filter.as_ref(), self.filter_hooks) {
                    return Ok(false);
                }
                if drops_row_key(filter.as_mut(), self.filter_hooks, &row) {
                    reset(filter.as_mut(), self.filter_hooks);
                    if ends_scan(filter.as_ref(), self.filter_hooks) {
                        return Ok(false);
                    }
                    self.leave_row(&row)?;
                    continue;
                }
                self.row_passes = !self.filter_transforms && filter.passes_rest_of_row();
            }
            self.read_row(&row)?;
            self.leave_row(&row)?;
            let cells = &mut self.cells;
            if let Some(filter) = self.filter.as_mut() {
                if !cells.is_empty() {
                    if self.filter_has_row {
                        filter.filter_row_cells(cells);
                    }
                    if !cells.is_empty() && drops_row(filter.as_mut(), self.filter_hooks) {
                        cells.clear();
                    }
                }
                // Done before the reset counts too: in HBase the store scanner's matcher sees
                // `filterAllRemaining` at the next cell, before the row's filters are reset
                // (ColumnCountGetFilter ends the scan so).
                let done = ends_scan(filter.as_ref(), self.filter_hooks);
                reset(filter.as_mut(), self.filter_hooks);
                if done || ends_scan(filter.as_ref(), self.filter_hooks) {
                    self.done = true;
                }
            }
            if !cells.is_empty() {
                return Ok(true);
            }
        }
    }

    /// Appends the scan's next result to `out` and answers how many cells it has, 0 at the
    /// end: a row's cells, or with a batch size the next batch of them. Rows come in the
    /// scan's order as from the iterator, which this is the allocation-free form of: into an
    /// empty `out` the row is handed over whole (the scanner takes `out`'s buffer to read the
    /// next row into), so a caller that clears and reuses one buffer allocates nothing per
    /// row. After an error the scan is over.
    pub fn next_into(&mut self, out: &mut Vec<Cell>) -> Result<usize, RegionError> {
        loop {
            if let Some(batch) = self.ready.pop_front() {
                let n = batch.len();
                out.extend(batch);
                return Ok(n);
            }
            if self.done {
                return Ok(0);
            }
            match self.next_row() {
                Err(e) => {
                    self.done = true;
                    return Err(e);
                }
                Ok(false) => {
                    self.done = true;
                    return Ok(0);
                }
                Ok(true) => {}
            }
            self.rows += 1;
            if self.scan.limit.is_some_and(|limit| self.rows >= limit) {
                self.done = true;
            }
            match self.scan.batch {
                Some(batch) if batch > 0 => {
                    self.ready
                        .extend(self.cells.chunks(batch).map(<[Cell]>::to_vec));
                }
                _ => {
                    let n = self.cells.len();
                    if out.is_empty() {
                        std::mem::swap(out, &mut self.cells);
                    } else {
                        out.append(&mut self.cells);
                    }
                    return Ok(n);
                }
            }
        }
    }
}

impl Iterator for RegionScanner {
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

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::Arc;

    use keel_cell::CellType;
    use keel_storefile::VecScanner;
    use proptest::prelude::*;

    use super::*;
    use crate::matcher::{FamilyRules, TimeRange};

    /// Cells from generated coordinates: rows `r0..r3`, families `f` and `g`, qualifiers
    /// `""` and `a..d`, every cell its own sequence id (its position, from 1); family markers
    /// go to the empty qualifier, where they live. Each cell names the source it goes to.
    fn cells_of(spec: &[(u8, bool, u8, i64, u8, u8)]) -> Vec<(usize, Cell)> {
        spec.iter()
            .enumerate()
            .map(|(i, &(row, g, qualifier, ts, kind, source))| {
                let kind = match kind {
                    0 => CellType::Delete,
                    1 => CellType::DeleteColumn,
                    2 => CellType::DeleteFamily,
                    3 => CellType::DeleteFamilyVersion,
                    _ => CellType::Put,
                };
                let family_marker =
                    matches!(kind, CellType::DeleteFamily | CellType::DeleteFamilyVersion);
                let qualifier = if family_marker {
                    ""
                } else {
                    ["", "a", "b", "c", "d"][usize::from(qualifier % 5)]
                };
                let cell = Cell::builder(format!("r{row}"), if g { "g" } else { "f" })
                    .qualifier(qualifier)
                    .timestamp(ts)
                    .cell_type(kind)
                    .sequence_id(i as u64 + 1)
                    .value(format!("v{i}"))
                    .build()
                    .expect("a valid cell");
                (usize::from(source), cell)
            })
            .collect()
    }

    /// A sorted source that keeps the cells of a run unasked by its rule after a
    /// [`Take::KeepRun`], as a flat memstore segment does by its next-column bits.
    struct RunSource {
        cells: Vec<Cell>,
        pos: usize,
    }

    impl KeyValueScanner for RunSource {
        fn peek(&self) -> Option<&Cell> {
            self.cells.get(self.pos)
        }

        fn next(&mut self) -> keel_storefile::Result<Option<Cell>> {
            let cell = self.cells.get(self.pos).cloned();
            self.pos += usize::from(cell.is_some());
            Ok(cell)
        }

        fn take_row(
            &mut self,
            row: &[u8],
            out: &mut Vec<Cell>,
            decide: &mut keel_storefile::Decide<'_>,
        ) -> keel_storefile::Result<()> {
            while let Some(cell) = self.cells.get(self.pos).filter(|c| c.row() == row) {
                match decide(cell, out) {
                    Take::Keep => out.push(cell.clone()),
                    Take::KeepRun(rule) => {
                        out.push(cell.clone());
                        while let Some(next) = self.cells.get(self.pos + 1).filter(|next| {
                            next.row() == row && out.last().is_some_and(|l| rule.continues(next, l))
                        }) {
                            out.push(next.clone());
                            self.pos += 1;
                        }
                    }
                    Take::Pass => {}
                    Take::Stop => break,
                }
                self.pos += 1;
            }
            Ok(())
        }

        fn seek(&mut self, key: &CellKey) -> keel_storefile::Result<()> {
            self.pos = self.cells.partition_point(|c| c.key() < key);
            Ok(())
        }

        fn seek_before_row(&mut self, row: Option<&[u8]>) -> keel_storefile::Result<()> {
            let end = match row {
                None => self.cells.len(),
                Some(row) => self.cells.partition_point(|c| c.row() < row),
            };
            self.pos = match end.checked_sub(1).map(|last| self.cells[last].row_bytes()) {
                Some(last_row) => self.cells.partition_point(|c| c.row() < &last_row[..]),
                None => self.cells.len(),
            };
            Ok(())
        }
    }

    /// An unfiltered scan over `cells` split among three sources; with `runs`, sources that
    /// keep runs unasked ([`RunSource`]).
    fn scanned(
        cells: &[(usize, Cell)],
        query: &ReadQuery,
        rules: &Arc<HashMap<Bytes, FamilyRules>>,
        runs: bool,
    ) -> Vec<Vec<Cell>> {
        let mut split: Vec<Vec<Cell>> = vec![Vec::new(); 3];
        for (source, cell) in cells {
            split[*source].push(cell.clone());
        }
        let sources: Vec<Box<dyn KeyValueScanner>> = split
            .into_iter()
            .map(|mut cells| {
                cells.sort();
                if runs {
                    Box::new(RunSource { cells, pos: 0 }) as Box<dyn KeyValueScanner>
                } else {
                    Box::new(VecScanner::new(cells)) as Box<dyn KeyValueScanner>
                }
            })
            .collect();
        let scan = Scan {
            query: query.clone(),
            ..Scan::all(query.now_ms)
        };
        let start = scan.first_key();
        let merge = MergeScanner::new(sources, &start).expect("in memory");
        let matcher = Matcher::with_rules(query.clone(), Arc::clone(rules));
        RegionScanner::new(merge, matcher, scan, false)
            .expect("in memory")
            .collect::<Result<_, _>>()
            .expect("in memory")
    }

    /// What the matcher admits fed every cell in order, one at a time, by row.
    fn admitted(
        cells: &[(usize, Cell)],
        query: &ReadQuery,
        rules: &Arc<HashMap<Bytes, FamilyRules>>,
    ) -> Vec<Vec<Cell>> {
        let mut sorted: Vec<Cell> = cells.iter().map(|(_, c)| c.clone()).collect();
        sorted.sort();
        let mut matcher = Matcher::with_rules(query.clone(), Arc::clone(rules));
        let mut rows: Vec<Vec<Cell>> = Vec::new();
        for cell in sorted {
            if !matcher.admit(&cell) {
                continue;
            }
            match rows.last_mut() {
                Some(row) if row[0].row() == cell.row() => row.push(cell),
                _ => rows.push(vec![cell]),
            }
        }
        rows
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        /// A scan, whose rows are taken in one call with runs of columns decided without the
        /// matcher ([`PlainRun`]; by sources that keep them unasked, too), returns what the
        /// matcher admits when shown every cell:
        /// invisible cells, cells outside the time range or past the TTL, markers, older
        /// versions, several families and sources, column lists.
        #[test]
        fn a_scan_returns_what_the_matcher_admits_cell_by_cell(
            spec in prop::collection::vec(
                (0u8..4, any::<bool>(), 0u8..5, 1i64..7, 0u8..10, 0u8..3),
                0..60,
            ),
            read_point_back in 0usize..6,
            range in (0i64..3, 3i64..9),
            versions in (1u32..3, 1u32..3),
            ttl in prop::option::of(1i64..5),
            columns in 0u8..3,
        ) {
            let cells = cells_of(&spec);
            let rules = Arc::new(HashMap::from([(
                Bytes::from_static(b"f"),
                FamilyRules { max_versions: versions.1, min_versions: 0, ttl_ms: ttl },
            )]));
            let query = ReadQuery {
                read_point: cells.len().saturating_sub(read_point_back) as u64,
                time_range: TimeRange { min: range.0, max: range.1 },
                max_versions: versions.0,
                // TTL expiry reaches back from now = 8: a TTL of 1..5 expires the older cells.
                now_ms: 8,
                columns: match columns {
                    0 | 1 => None,
                    _ => Some(vec![
                        (Bytes::from_static(b"f"), None),
                        (Bytes::from_static(b"g"), Some(Bytes::from_static(b"b"))),
                    ]),
                },
            };
            let wanted = admitted(&cells, &query, &rules);
            prop_assert_eq!(scanned(&cells, &query, &rules, false), wanted.clone());
            prop_assert_eq!(scanned(&cells, &query, &rules, true), wanted);
        }
    }

    /// A column whose newest version is not yet visible (a write in flight) still returns
    /// its visible version, after a row whose last column was finished: the matcher's
    /// `column_done` answered for that column until a visible cell entered the new one.
    #[test]
    fn an_invisible_newest_version_hides_nothing_below_it() {
        let cells = cells_of(&[
            (1, true, 2, 1, 4, 0),
            (0, true, 0, 1, 4, 0),
            (0, false, 0, 1, 0, 0),
            (1, true, 2, 1, 4, 0),
        ]);
        let query = ReadQuery::latest(3, 8);
        let rules = Arc::new(HashMap::new());
        for runs in [false, true] {
            let rows = scanned(&cells, &query, &rules, runs);
            assert_eq!(rows, admitted(&cells, &query, &rules));
            assert_eq!(rows.len(), 2, "{rows:?}");
            assert_eq!(rows[1][0].sequence_id(), 1);
        }
    }

    /// After a run, when the row goes on (here: at the older versions of the run's last column
    /// that the column skip stops at, for a seek), the matcher and the column skip stand as
    /// deciding every cell through the matcher would have left them. (When the row ends with
    /// the run, the matcher is left behind: the next row's first cell resets it.)
    #[test]
    fn a_run_leaves_the_matcher_and_column_skip_as_the_matcher_would() {
        // The run opens after the empty qualifier, which the column skip never finishes.
        let run: Vec<Cell> = ["", "a", "b", "c"]
            .iter()
            .map(|q| Cell::put("r", "f", *q, 5, "v").expect("a valid cell"))
            .collect();
        let older: Vec<Cell> = (2..5)
            .rev()
            .map(|ts| Cell::put("r", "f", "c", ts, "v").expect("a valid cell"))
            .collect();
        let query = ReadQuery::latest(u64::MAX, 0);
        let rules = Arc::new(HashMap::new());

        let mut one_by_one = Matcher::with_rules(query.clone(), Arc::clone(&rules));
        let mut skip_one_by_one = ColumnSkip::default();
        let mut kept = Vec::new();
        for cell in &run {
            assert_eq!(skip_one_by_one.take_or_stop(cell, kept.last()), None);
            assert!(one_by_one.admit(cell));
            skip_one_by_one.column_done(cell, true);
            kept.push(cell.clone());
        }
        let takes: Vec<_> = older
            .iter()
            .map(|cell| skip_one_by_one.take_or_stop(cell, kept.last()))
            .collect();
        assert_eq!(
            takes,
            [Some(Take::Pass), Some(Take::Pass), Some(Take::Stop)]
        );

        let row: Vec<Cell> = run.iter().chain(&older).cloned().collect();
        let mut scanner = RegionScanner::new(
            MergeScanner::new(
                vec![Box::new(VecScanner::new(row))],
                &CellKey::first_on_row(Bytes::from_static(b"r")),
            )
            .expect("in memory"),
            Matcher::with_rules(query.clone(), rules),
            Scan::all(0),
            true,
        )
        .expect("in memory");
        let mut out = Vec::new();
        scanner.take_unfiltered(b"r", &mut out).expect("in memory");
        assert_eq!(out, run);
        assert_eq!(scanner.merge.peek(), Some(&older[2]), "stopped for a seek");
        assert_eq!(format!("{:?}", scanner.matcher), format!("{one_by_one:?}"));
        assert_eq!(
            format!("{:?}", scanner.skip),
            format!("{skip_one_by_one:?}")
        );
    }

    fn naming(columns: &[(&'static str, Option<&'static str>)]) -> ReadQuery {
        ReadQuery {
            columns: Some(
                columns
                    .iter()
                    .map(|(f, q)| {
                        (
                            Bytes::from_static(f.as_bytes()),
                            q.map(|q| Bytes::from_static(q.as_bytes())),
                        )
                    })
                    .collect(),
            ),
            ..ReadQuery::latest(u64::MAX, 0)
        }
    }

    #[test]
    fn a_read_naming_columns_seeks_to_the_next_one_and_past_the_family() {
        let query = naming(&[("f", Some("m")), ("f", Some("c")), ("g", None)]);
        let step = |family: &str, qualifier: &str| {
            column_step(&query, family.as_bytes(), qualifier.as_bytes())
        };
        assert_eq!(
            step("f", "a"),
            ColumnStep::SeekTo(&Bytes::from_static(b"c"))
        );
        assert_eq!(step("f", "c"), ColumnStep::Read);
        assert_eq!(
            step("f", "d"),
            ColumnStep::SeekTo(&Bytes::from_static(b"m"))
        );
        assert_eq!(step("f", "m"), ColumnStep::Read);
        assert_eq!(step("f", "z"), ColumnStep::PastFamily);
        // The family's delete markers are in the empty qualifier: always read.
        assert_eq!(step("f", ""), ColumnStep::Read);
        // A family named whole, and a read naming no columns, read everything.
        assert_eq!(step("g", "anything"), ColumnStep::Read);
        let all = ReadQuery::latest(u64::MAX, 0);
        assert_eq!(column_step(&all, b"f", b"z"), ColumnStep::Read);
    }
}
