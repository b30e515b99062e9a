//! Closing a region (what a table's disable does to it, as HBase's region close): writes stop,
//! the memstores are flushed, and the WAL is told the region logs nothing more.

use std::sync::atomic::Ordering;

use super::{CLOSED, CLOSING, OPEN, Region};
use crate::error::RegionError;
use crate::limits::{CompactionThroughput, Throttle};
use crate::trace::span;

impl Region {
    /// Closes the region, as HBase's region close does. With more than
    /// `limits.preclose_flush_size` in its memstores it first flushes while still taking writes,
    /// paced at `limits.preclose_flush_bytes_per_sec`. Then new writes are refused
    /// ([`RegionError::RegionClosed`]), writes already past their checks finish, a compaction
    /// in progress stops without committing, and a final flush puts every edit in store files. Then the WAL is told that
    /// the region logs nothing more ([`keel_wal::Wal::close_region`]), so its entries keep no
    /// segment alive. Gets and scans that started keep what they hold; new ones are refused.
    /// Returns the flushed sequence id. If the flush fails, the region is open again and the
    /// error is returned; closing a closed region does nothing.
    pub fn close(&self) -> Result<u64, RegionError> {
        let _span = span!(INFO, "region.close", region = self.id);
        if self.is_open() && self.memstore_size() > self.limits.preclose_flush_size {
            let pace = self.limits.preclose_flush_bytes_per_sec;
            let throttle = Throttle::new(CompactionThroughput {
                lower_bytes_per_sec: pace,
                upper_bytes_per_sec: pace,
            });
            self.flush_paced((pace > 0).then_some(&throttle))?;
        }
        if self
            .state
            .compare_exchange(OPEN, CLOSING, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return Ok(self.flushed_sequence());
        }
        // A compaction sees the state and stops; once it has, none starts again.
        let compacting = self.compacting.lock();
        // Writers hold the updates lock shared from their last check to their memstore insert:
        // once it is ours, every write that will ever land here has landed.
        drop(self.updates.write());
        let flushed = match self.flush() {
            Ok(sequence) => sequence,
            Err(e) => {
                self.state.store(OPEN, Ordering::Release);
                return Err(e);
            }
        };
        self.state.store(CLOSED, Ordering::Release);
        drop(compacting);
        if let Err(e) = self.wal.close_region(self.id) {
            // Only truncation can fail here; the claim is gone either way. Open again, so the
            // caller's failure leaves the region as it found it.
            self.reopen()?;
            return Err(e.into());
        }
        Ok(flushed)
    }

    /// Undoes a [`Region::close`] whose table operation then failed (the catalog could not be
    /// written): the region declares itself to the WAL again and takes writes.
    pub(crate) fn reopen(&self) -> Result<(), RegionError> {
        self.wal.open_region(self.id, self.flushed_sequence())?;
        self.state.store(OPEN, Ordering::Release);
        Ok(())
    }
}
