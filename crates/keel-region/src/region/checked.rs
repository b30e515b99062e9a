//! The one validation every write goes through. [`CheckedWrite`] can be made only here, by
//! [`Region::check_write`], and the write path after the row locks (`write_locked`) takes
//! nothing else: put, delete, batch, mutate-row, check-and-mutate, increment and append all pass
//! through it, and so will any entry point added later. What it checks, before anything reaches
//! the WAL:
//! - at least one cell;
//! - every cell's family is one of the region's (a cell of another family would be logged,
//!   dropped by the memstore and then refused by replay: acknowledged, lost, and a region
//!   that could not open);
//! - the cells fit in one WAL entry (`WalOptions::max_entry_size`).
//!
//! Rows, families, qualifiers and sizes of single cells are `keel_cell::Cell`'s own invariant,
//! checked when a cell is built or decoded.

use keel_cell::{Cell, encoded_batch_len, escape_bytes};

use super::Region;
use crate::error::RegionError;

/// Cells that passed [`Region::check_write`] for this region.
#[derive(Debug)]
pub(crate) struct CheckedWrite {
    cells: Vec<Cell>,
    /// The payload of their WAL entry.
    entry_len: usize,
}

impl CheckedWrite {
    /// The cells, for the write path to stamp and log.
    pub(super) fn into_cells(self) -> Vec<Cell> {
        self.cells
    }

    /// The cells.
    pub(super) fn cells(&self) -> &[Cell] {
        &self.cells
    }

    /// Whether `other` can join this write in one WAL entry of at most `max_entry` bytes.
    pub(super) fn can_join(&self, other: &CheckedWrite, max_entry: usize) -> bool {
        self.entry_len + (other.entry_len - keel_wal::format::ENTRY_HEADER_LEN) <= max_entry
    }

    /// Adds `other`'s cells to this write (a batch's mini-batch; see [`CheckedWrite::can_join`]).
    pub(super) fn join(&mut self, other: CheckedWrite) {
        self.entry_len += other.entry_len - keel_wal::format::ENTRY_HEADER_LEN;
        self.cells.extend(other.cells);
    }
}

impl Region {
    /// The one validation of a write (see the module's documentation).
    pub(crate) fn check_write(&self, cells: Vec<Cell>) -> Result<CheckedWrite, RegionError> {
        if cells.is_empty() {
            return Err(RegionError::BadCell("a write with no cells".to_string()));
        }
        if let Some(cell) = cells.iter().find(|c| !self.stores.contains_key(c.family())) {
            return Err(RegionError::NoSuchFamily {
                family: escape_bytes(cell.family()),
                region: self.id,
            });
        }
        let entry_len = keel_wal::format::ENTRY_HEADER_LEN + encoded_batch_len(&cells);
        let max = self.wal.max_entry_size();
        if entry_len > max {
            return Err(RegionError::WriteTooLarge {
                region: self.id,
                row: escape_bytes(cells[0].row()),
                bytes: entry_len,
                max,
            });
        }
        Ok(CheckedWrite { cells, entry_len })
    }

    /// [`Region::check_write`] for an operation on one row: every cell must be of `row`.
    pub(crate) fn check_row_write(
        &self,
        row: &[u8],
        cells: Vec<Cell>,
    ) -> Result<CheckedWrite, RegionError> {
        if let Some(other) = cells.iter().find(|c| c.row() != row) {
            return Err(RegionError::NotOneRow {
                row: escape_bytes(row),
                other: escape_bytes(other.row()),
            });
        }
        self.check_write(cells)
    }
}
