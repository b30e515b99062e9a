//! Read-modify-writes under the row's exclusive lock: increment, append, check-and-mutate.

use std::sync::atomic::Ordering;

use bytes::Bytes;
use keel_cell::{Cell, escape_bytes};

use super::combine::{RmwOp, RmwRequest};
use super::{Durability, ReadModifyWrites, Region, WriteOrder, WriteTimings};
use crate::error::RegionError;
#[cfg(feature = "tracing")]
use crate::trace::Printable;
use crate::trace::span;

impl Region {
    /// Adds `delta` to the 8-byte big-endian counter at (row, family, qualifier) (absent counts
    /// as 0) and returns the new value. Read-modify-write under the row's exclusive lock: the
    /// previous write to the row is visible before its lock was released, so the read needs no
    /// wait (the HBASE-8763 regression does not exist on this path). The new cell's timestamp is
    /// max(old timestamp + 1, now). Concurrent increments and appends of one row are combined
    /// unless the region runs them per call ([`ReadModifyWrites`]).
    pub fn increment(
        &self,
        row: &[u8],
        family: &[u8],
        qualifier: &[u8],
        delta: i64,
        durability: Durability,
    ) -> Result<(i64, WriteTimings), RegionError> {
        let _span = span!(INFO, "region.increment", region = self.id, row = %Printable(row));
        let (value, timings) =
            self.rmw(row, family, qualifier, RmwOp::Increment(delta), durability)?;
        // An increment's new value is always its 8 bytes.
        let bytes: [u8; 8] = value[..].try_into().map_err(|_| RegionError::NotACounter {
            row: escape_bytes(row),
            len: value.len(),
        })?;
        Ok((i64::from_be_bytes(bytes), timings))
    }

    /// Appends `suffix` to the value at (row, family, qualifier) (absent is empty) and returns the
    /// new value, atomically like [`Region::increment`].
    pub fn append(
        &self,
        row: &[u8],
        family: &[u8],
        qualifier: &[u8],
        suffix: &[u8],
        durability: Durability,
    ) -> Result<(Bytes, WriteTimings), RegionError> {
        let _span = span!(INFO, "region.append", region = self.id, row = %Printable(row));
        let op = RmwOp::Append(Bytes::copy_from_slice(suffix));
        self.rmw(row, family, qualifier, op, durability)
    }

    /// Appends to several columns of one row at once (HBase's `Append` with several columns,
    /// Thrift's `append`): every column's current value is read and every new cell written
    /// under one hold of the row's exclusive lock, in one WAL entry, so a reader sees all the
    /// appends or none. Returns the cells stored, one per column (each new cell's timestamp is
    /// max(its column's previous timestamp + 1, now), as for an increment).
    pub fn append_columns(
        &self,
        row: &[u8],
        columns: &[(Bytes, Bytes, Bytes)],
        durability: Durability,
    ) -> Result<(Vec<Cell>, WriteTimings), RegionError> {
        let _span = span!(INFO, "region.append", region = self.id, row = %Printable(row));
        self.count_writes(1);
        for (family, _, _) in columns {
            self.check_family(family)?;
        }
        self.check_resources()?;
        let (guard, timings) = self.lock_exclusive(keel_cell::shared_copy(row))?;
        let now = self.server_time();
        let mut cells: Vec<Cell> = Vec::with_capacity(columns.len());
        for (family, qualifier, suffix) in columns {
            // A column named twice appends twice: the second builds on the first.
            let earlier = cells
                .iter()
                .rev()
                .find(|c| c.family() == family && c.qualifier() == qualifier)
                .cloned();
            let current = match earlier {
                Some(cell) => Some(cell),
                None => self.latest_for_update(row, family, qualifier)?,
            };
            let mut value = current
                .as_ref()
                .map(|c| c.value().to_vec())
                .unwrap_or_default();
            value.extend_from_slice(suffix);
            let timestamp = current
                .as_ref()
                .map_or(i64::MIN, |c| c.timestamp().saturating_add(1))
                .max(now);
            let cell = Cell::builder(Bytes::copy_from_slice(row), family.clone())
                .qualifier(qualifier.clone())
                .timestamp(timestamp)
                .value(Bytes::from(value))
                .build()
                .map_err(|e| RegionError::BadCell(e.to_string()))?;
            cells.push(cell);
        }
        if let Some(latest) = cells.iter().map(Cell::timestamp).max() {
            self.last_server_ts.fetch_max(latest, Ordering::Relaxed);
        }
        // A column named twice is written once, with its final value.
        let mut stored: Vec<Cell> = Vec::with_capacity(cells.len());
        for cell in cells.iter().rev() {
            if !stored
                .iter()
                .any(|c| c.family() == cell.family() && c.qualifier() == cell.qualifier())
            {
                stored.push(cell.clone());
            }
        }
        stored.reverse();
        let result = stored.clone();
        let write = self.check_write(stored)?;
        let timings = self.write_locked(write, durability, timings, guard)?;
        Ok((result, timings))
    }

    /// Applies `cells` (all on `row`) only if the latest visible value of (row, family,
    /// qualifier) satisfies `check`; returns whether it did. Atomic under the row's exclusive
    /// lock: no write to the row can fall between the check and the mutation.
    pub fn check_and_mutate(
        &self,
        row: &[u8],
        family: &[u8],
        qualifier: &[u8],
        check: impl FnOnce(Option<&[u8]>) -> bool,
        cells: Vec<Cell>,
        durability: Durability,
    ) -> Result<bool, RegionError> {
        let _span = span!(INFO, "region.check_and_mutate", region = self.id, row = %Printable(row));
        self.count_writes(1);
        self.check_family(family)?;
        let write = self.check_row_write(row, cells)?;
        self.check_resources()?;
        let (guard, timings) = self.lock_exclusive(keel_cell::shared_copy(row))?;
        let current = self.latest_for_update(
            row,
            &keel_cell::shared_copy(family),
            &keel_cell::shared_copy(qualifier),
        )?;
        if !check(current.as_ref().map(|c| c.value())) {
            return Ok(false);
        }
        self.write_locked(write, durability, timings, guard)?;
        Ok(true)
    }

    /// One column's read-modify-write: checked, then combined with the row's others in flight
    /// or run under the row's lock alone, as the region runs them.
    fn rmw(
        &self,
        row: &[u8],
        family: &[u8],
        qualifier: &[u8],
        op: RmwOp,
        durability: Durability,
    ) -> Result<(Bytes, WriteTimings), RegionError> {
        self.count_writes(1);
        self.check_family(family)?;
        self.check_resources()?;
        // Shared copies: the column's names are cloned into the read, the cell and the batch's
        // column, and a plain copy's first clone allocates again (see `shared_copy`).
        let request = RmwRequest {
            family: keel_cell::shared_copy(family),
            qualifier: keel_cell::shared_copy(qualifier),
            op,
            durability,
        };
        match self.read_modify_writes {
            ReadModifyWrites::Combined => self.combined_rmw(row, request),
            ReadModifyWrites::PerCall => self.rmw_locked(row, &request),
        }
    }

    /// A read-modify-write alone: takes the row's exclusive lock, reads, writes.
    pub(super) fn rmw_locked(
        &self,
        row: &[u8],
        request: &RmwRequest,
    ) -> Result<(Bytes, WriteTimings), RegionError> {
        let shared_row = keel_cell::shared_copy(row);
        let (guard, timings) = self.lock_exclusive(shared_row.clone())?;
        let current = self.latest_for_update(row, &request.family, &request.qualifier)?;
        let value = request.op.apply(row, current.as_ref().map(|c| c.value()))?;
        let timestamp = current
            .as_ref()
            .map_or(i64::MIN, |c| c.timestamp().saturating_add(1))
            .max(self.server_time());
        // A put after this increment must not get an older server timestamp (several
        // increments in one millisecond run the counter's timestamps ahead of the clock).
        self.last_server_ts.fetch_max(timestamp, Ordering::Relaxed);
        let cell = Cell::builder(Bytes::copy_from_slice(row), request.family.clone())
            .qualifier(request.qualifier.clone())
            .timestamp(timestamp)
            .value(value.clone())
            .build()
            .map_err(|e| RegionError::BadCell(e.to_string()))?;
        let write = self.check_write(vec![cell])?;
        let timings = self.write_locked(write, request.durability, timings, guard)?;
        Ok((value, timings))
    }

    /// A read-modify-write's column must be of one of the region's families (HBase's
    /// `NoSuchColumnFamilyException`), checked before the row is locked.
    fn check_family(&self, family: &[u8]) -> Result<(), RegionError> {
        if self.stores.contains_key(family) {
            return Ok(());
        }
        Err(RegionError::NoSuchFamily {
            family: escape_bytes(family),
            region: self.id,
        })
    }

    /// The latest value a read-modify-write builds on, under the row's exclusive lock. In the
    /// legacy order the row's previous writer may have unlocked before becoming visible, so
    /// this first waits for every write in flight in the region.
    pub(super) fn latest_for_update(
        &self,
        row: &[u8],
        family: &Bytes,
        qualifier: &Bytes,
    ) -> Result<Option<Cell>, RegionError> {
        if self.order == WriteOrder::Legacy {
            self.mvcc.await_all();
        }
        self.latest_of(row, family.clone(), qualifier.clone())
    }
}
