//! Reads: gets and streaming scans merged from memstores and store files at one read point.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use bytes::Bytes;
use keel_cell::{Cell, CellKey, same_bytes};
use keel_storefile::{KeyValueScanner, MergeScanner, StoreFileReader, Take};

use super::{MemSource, Region, now_ms};
use crate::error::RegionError;
use crate::matcher::{Matcher, ReadQuery};
use crate::scan::Scan;
use crate::scanner::{ColumnStep, PlainRun, RegionScanner, column_step};
#[cfg(feature = "tracing")]
use crate::trace::Printable;
use crate::trace::span;

impl Region {
    /// The cells of `row` that `query` selects (its read point is replaced by the region's
    /// current one), merged from every store's memstore and the store files that may hold the
    /// row, in `CellComparator` order.
    pub fn get(&self, row: &[u8], query: &ReadQuery) -> Result<Vec<Cell>, RegionError> {
        let _span = span!(INFO, "region.get", region = self.id, row = %Printable(row));
        self.check_open(false)?;
        self.counters.read_requests.add(1);
        let read_point = self.mvcc.read_point();
        // Held by the seek keys and the memstore's scanner too: copied so that clones are free.
        let row = keel_cell::shared_copy(row);
        let first = CellKey::first_on_row(row.clone());
        let mut matcher = Matcher::borrowing(query, read_point, &self.family_rules);
        let hint = self.get_cells_hint.load(Ordering::Relaxed);
        let mut out = Vec::with_capacity(hint);
        for (name, store) in self
            .stores
            .iter()
            .filter(|(name, _)| wants_family(query, name))
        {
            // Files and memstore taken under the file-list lock, so a flush finishing meanwhile
            // cannot move cells from one to the other unseen. The lock is held through the get
            // (microseconds), so the scanners borrow the files instead of cloning their `Arc`s,
            // whose counts every reader of the file shares.
            let listed = store.files.read();
            let memstore = store.memstore.row_scanner(&row, read_point);
            let mut sources: Vec<Box<dyn KeyValueScanner + '_>> = listed
                .iter()
                .filter(|f| f.may_contain_row(&row) && may_hold_range(f, query))
                .map(|f| f.borrowed_row_scanner(&row))
                .collect();
            sources.push(Box::new(MemSource(memstore)));
            let mut merge = MergeScanner::new(sources, &first)?;
            let mut skip = crate::scanner::ColumnSkip::default();
            let last_named = last_named_qualifier(query, name);
            // Each cell is decided on where it lies in its source and then moved once into
            // the results or dropped (see `RegionScanner::read_row`): the row in one call
            // (`take_row`) while no seek is due, the loop below for a cell that is.
            let mut finished = false;
            loop {
                // A run never opens for a get naming columns (`Matcher::run_open`), so a cell
                // it keeps needs none of the column checks below.
                let mut run = PlainRun::default();
                let taken = merge.take_row(&row, &mut out, &mut |cell, kept| {
                    run.absorb(&mut skip, kept);
                    if run.keeps(&matcher, &mut skip, cell, kept) {
                        return run.keep(&matcher, kept);
                    }
                    run.close(&mut matcher, kept);
                    if finished || column_step(query, name, cell.qualifier()) != ColumnStep::Read {
                        return Take::Stop;
                    }
                    if let Some(take) = skip.take_or_stop(cell, kept.last()) {
                        return take;
                    }
                    let admitted = matcher.admit(cell);
                    if matcher.column_done() {
                        finished = last_named.is_some_and(|last| cell.qualifier() == &last[..]);
                        skip.column_done(cell, admitted);
                    }
                    run.decided(admitted, &matcher);
                    if admitted {
                        run.keep(&matcher, kept)
                    } else {
                        Take::Pass
                    }
                });
                run.absorb(&mut skip, &out);
                run.close(&mut matcher, &out);
                taken?;
                if finished {
                    break;
                }
                let Some(cell) = merge.peek() else {
                    break;
                };
                if !same_bytes(cell.row(), &row) {
                    break;
                }
                // A get naming columns seeks from one to the next and ends after the last.
                match column_step(query, name, cell.qualifier()) {
                    ColumnStep::Read => {}
                    ColumnStep::SeekTo(wanted) => {
                        merge.reseek(&CellKey::first_on_column(row.clone(), name, wanted))?;
                        continue;
                    }
                    ColumnStep::PastFamily => break,
                }
                if let Some(past) = skip.past_finished_column(cell, out.last()) {
                    merge.reseek(&past)?;
                    continue;
                }
                let admitted = matcher.admit(cell);
                // The last named column finished: nothing after it in the row can be admitted,
                // so the get ends here instead of seeking past the column's older versions (a
                // counter's row holds every increment's cell until a flush drops them).
                finished = matcher.column_done()
                    && last_named.is_some_and(|last| cell.qualifier() == &last[..]);
                if matcher.column_done() {
                    skip.column_done(cell, admitted);
                }
                if admitted {
                    merge.next_into(&mut out)?;
                } else {
                    merge.skip()?;
                }
                if finished {
                    break;
                }
            }
        }
        // One slot more than the row's cells: a source's look past the row lands there
        // (`KeyValueScanner::take_row`).
        let seen = out.len().min(1024) + 1;
        if seen != hint {
            self.get_cells_hint.store(seen, Ordering::Relaxed);
        }
        Ok(out)
    }

    /// The cells of `row` that `query` selects and `filter` keeps (HBase's `Get.setFilter`):
    /// the row read as a one-row scan, so the filter runs inside it exactly as in a scan
    /// (row key, cells, transforms, whole-row decisions).
    pub fn get_filtered(
        &self,
        row: &[u8],
        query: &ReadQuery,
        filter: &crate::filter::Filter,
    ) -> Result<Vec<Cell>, RegionError> {
        let mut stop = row.to_vec();
        stop.push(0);
        let scan = Scan {
            start_row: Bytes::copy_from_slice(row),
            stop_row: Bytes::from(stop),
            query: query.clone(),
            filter: Some(filter.clone()),
            ..Scan::all(query.now_ms)
        };
        Ok(self.scanner(&scan)?.next().transpose()?.unwrap_or_default())
    }

    /// The rows `scan` selects, each a `Vec` of its cells (or several, with a batch size): a
    /// [`Region::scanner`] collected.
    pub fn scan(&self, scan: &Scan) -> Result<Vec<Vec<Cell>>, RegionError> {
        crate::scan::collect_rows(scan, self.scanner(scan)?)
    }

    /// A streaming scan: results come out one at a time, read at one read point through the
    /// memstore segments and store files present when it opens — a flush or a new store file
    /// afterwards changes nothing it returns. A reversed scan streams too: each row is read
    /// forwards, then every source moves to the row before it.
    pub fn scanner(&self, scan: &Scan) -> Result<RegionScanner, RegionError> {
        let _span = span!(
            INFO,
            "region.scan_open",
            region = self.id,
            reversed = scan.reversed
        );
        self.check_open(false)?;
        self.counters.read_requests.add(1);
        let read_point = self.mvcc.read_point();
        let query = &scan.query;
        let matcher = Matcher::with_rules(
            ReadQuery {
                read_point,
                ..query.clone()
            },
            Arc::clone(&self.family_rules),
        );
        let start = scan.first_key();
        let mut sources: Vec<Box<dyn KeyValueScanner>> = Vec::new();
        let mut families = 0;
        for (_, store) in self
            .stores
            .iter()
            .filter(|(name, _)| wants_family(query, name))
        {
            // Under the file-list lock, as in `get`.
            let listed = store.files.read();
            for file in listed.iter().filter(|f| may_hold_range(f, query)) {
                sources.push(file.range_scanner());
            }
            // A reversed scan moves back from its end, so its memstore scanner is unbounded.
            let memstore = if scan.reversed {
                store.memstore.scanner(.., read_point)
            } else {
                store.memstore.scanner(start.clone().., read_point)
            };
            sources.push(Box::new(MemSource(memstore)));
            families += 1;
        }
        let merge = MergeScanner::new(sources, &start)?;
        RegionScanner::new(merge, matcher, scan.clone(), families == 1)
    }

    /// The latest visible put of one column, if any.
    pub fn latest(
        &self,
        row: &[u8],
        family: &[u8],
        qualifier: &[u8],
    ) -> Result<Option<Cell>, RegionError> {
        self.latest_of(
            row,
            keel_cell::shared_copy(family),
            keel_cell::shared_copy(qualifier),
        )
    }

    /// [`Region::latest`] of a column whose names the caller holds as `Bytes` already (a
    /// read-modify-write's): the query takes them as they are.
    pub(super) fn latest_of(
        &self,
        row: &[u8],
        family: Bytes,
        qualifier: Bytes,
    ) -> Result<Option<Cell>, RegionError> {
        let query = ReadQuery {
            columns: Some(vec![(family, Some(qualifier))]),
            ..ReadQuery::latest(0, now_ms())
        };
        Ok(self.get(row, &query)?.into_iter().next())
    }
}

/// The greatest qualifier of family `name` that `query` names, when it names only single
/// columns of it (`None` when it reads the whole family, or none of it). Cells of a family come
/// in qualifier order, so a get of that family has nothing to read after this column.
fn last_named_qualifier<'q>(query: &'q ReadQuery, name: &Bytes) -> Option<&'q Bytes> {
    let mut last: Option<&Bytes> = None;
    for (family, qualifier) in query.columns.as_ref()? {
        if family == name {
            let qualifier = qualifier.as_ref()?;
            last = Some(last.map_or(qualifier, |l| l.max(qualifier)));
        }
    }
    last
}

/// Whether `query` reads family `name` at all.
fn wants_family(query: &ReadQuery, name: &Bytes) -> bool {
    query
        .columns
        .as_ref()
        .is_none_or(|columns| columns.iter().any(|(f, _)| f == name))
}

/// Whether a store file can matter to a read of `query`'s time range (HBase's time-range
/// check in `shouldUseScanner`, made safe): a file whose every cell is older than the range holds
/// no put in it, and its delete markers can only mask older puts, so it is skipped. A file whose
/// cells are all newer is still read: its delete markers can mask puts inside the range.
fn may_hold_range(file: &StoreFileReader, query: &ReadQuery) -> bool {
    file.info().timestamp_range.1 >= query.time_range.min
}
