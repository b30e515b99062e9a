//! The open scanners of a [`crate::Handler`]: each owned by the connection that opened it,
//! leased, bounded in number, and freed when its connection goes — even while a call is
//! reading from it.
//!
//! - **Ownership.** Ids are sequential, so guessable; a scanner answers only the connection that
//!   opened it. Another connection gets exactly the error an unknown id gets, so it learns
//!   nothing.
//! - **Leases.** A scanner unused for the lease (`hbase.client.scanner.timeout.period`, 60 s) is
//!   closed by a timer ([`Scanners::start_lease_timer`]), not only when another scanner call
//!   happens to look.
//! - **In use.** A call reading a scanner takes it out of its slot, so other scanners are not
//!   held up behind it; the slot stays. Closing the connection (or the scanner) removes the slot,
//!   and the call's scanner is dropped when it is done instead of going back.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use keel_region::TableScanner;
use keel_sync::Mutex;
use keel_thrift::hbase::HbaseError;

/// A scanner's place in the table.
struct Slot {
    /// The connection that opened it (0 for embedded callers).
    connection: u64,
    /// `None` while a call is reading from it.
    scanner: Option<TableScanner>,
    sort_columns: bool,
    last_used: Instant,
}

/// A scanner lent to one call.
pub(crate) struct Lent {
    pub(crate) scanner: TableScanner,
    pub(crate) sort_columns: bool,
}

/// The limits the table keeps.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ScannerLimits {
    pub(crate) lease: Duration,
    pub(crate) max_open: usize,
    pub(crate) max_per_connection: usize,
}

/// Every open scanner.
pub(crate) struct Scanners {
    slots: Mutex<HashMap<i32, Slot>>,
    next: AtomicI32,
    limits: ScannerLimits,
}

fn unknown(id: i32) -> HbaseError {
    HbaseError::IllegalArgument(format!("no open scanner {id}"))
}

fn io(message: String) -> HbaseError {
    HbaseError::Io {
        message,
        can_retry: false,
    }
}

impl Scanners {
    pub(crate) fn new(limits: ScannerLimits) -> Arc<Scanners> {
        Arc::new(Scanners {
            slots: Mutex::new(HashMap::new()),
            next: AtomicI32::new(1),
            limits,
        })
    }

    /// Closes scanners whose lease ran out, every `lease / 4` (at most every second), for as
    /// long as the table exists.
    pub(crate) fn start_lease_timer(table: &Arc<Scanners>) {
        let weak: Weak<Scanners> = Arc::downgrade(table);
        let period =
            (table.limits.lease / 4).clamp(Duration::from_millis(10), Duration::from_secs(1));
        let _ = std::thread::Builder::new()
            .name("keel-scanner-leases".to_string())
            .stack_size(64 << 10)
            .spawn(move || {
                loop {
                    std::thread::sleep(period);
                    let Some(table) = weak.upgrade() else { return };
                    table.expire();
                }
            });
    }

    /// Whether `connection` may open one more scanner.
    pub(crate) fn check_room(&self, connection: u64) -> Result<(), HbaseError> {
        let slots = self.slots.lock();
        if slots.len() >= self.limits.max_open {
            return Err(io(format!(
                "too many open scanners ({}); close some",
                self.limits.max_open
            )));
        }
        let mine = slots
            .values()
            .filter(|s| s.connection == connection)
            .count();
        if mine >= self.limits.max_per_connection {
            return Err(io(format!(
                "this connection has {mine} open scanners, the most it may; close some"
            )));
        }
        Ok(())
    }

    /// Registers an open scanner for `connection`; returns its id.
    pub(crate) fn insert(&self, connection: u64, scanner: TableScanner, sort_columns: bool) -> i32 {
        let mut slots = self.slots.lock();
        let mut id = self.next.fetch_add(1, Ordering::Relaxed);
        while slots.contains_key(&id) {
            id = self.next.fetch_add(1, Ordering::Relaxed);
        }
        slots.insert(
            id,
            Slot {
                connection,
                scanner: Some(scanner),
                sort_columns,
                last_used: Instant::now(),
            },
        );
        id
    }

    /// Lends scanner `id` to a call made on `connection`; [`Scanners::give_back`] returns it.
    pub(crate) fn lend(&self, connection: u64, id: i32) -> Result<Lent, HbaseError> {
        let mut slots = self.slots.lock();
        let slot = slots
            .get_mut(&id)
            .filter(|s| s.connection == connection)
            .ok_or_else(|| unknown(id))?;
        let scanner = slot
            .scanner
            .take()
            .ok_or_else(|| io(format!("scanner {id} is in use by another call")))?;
        Ok(Lent {
            scanner,
            sort_columns: slot.sort_columns,
        })
    }

    /// Puts a lent scanner back, unless its slot went meanwhile (closed, or its connection
    /// gone): then it is dropped here.
    pub(crate) fn give_back(&self, id: i32, lent: Lent) {
        let mut slots = self.slots.lock();
        if let Some(slot) = slots.get_mut(&id) {
            slot.scanner = Some(lent.scanner);
            slot.last_used = Instant::now();
        }
    }

    /// Closes scanner `id` for `connection`.
    pub(crate) fn close(&self, connection: u64, id: i32) -> Result<(), HbaseError> {
        let mut slots = self.slots.lock();
        match slots.get(&id) {
            Some(slot) if slot.connection == connection => {
                slots.remove(&id);
                Ok(())
            }
            _ => Err(unknown(id)),
        }
    }

    /// Closes every scanner `connection` opened, lent ones included; returns how many.
    pub(crate) fn close_connection(&self, connection: u64) -> usize {
        let mut slots = self.slots.lock();
        let before = slots.len();
        slots.retain(|_, s| s.connection != connection);
        before - slots.len()
    }

    /// Closes the scanners whose lease ran out (not one lent to a call now); returns how many.
    pub(crate) fn expire(&self) -> usize {
        let lease = self.limits.lease;
        let mut slots = self.slots.lock();
        let before = slots.len();
        slots.retain(|_, s| s.scanner.is_none() || s.last_used.elapsed() < lease);
        before - slots.len()
    }

    /// Scanners open now.
    pub(crate) fn len(&self) -> usize {
        self.slots.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use keel_region::{Engine, EngineOptions, FamilyOptions, Scan};

    /// A scanner a call is reading when its connection goes is not put back afterwards: before,
    /// the connection's cleanup could not see it and it stayed until its lease ran out.
    #[test]
    fn a_scanner_in_use_when_its_connection_goes_is_freed_after_the_call() {
        let dir = tempfile::tempdir().expect("tempdir");
        let server = Engine::open(dir.path(), EngineOptions::default()).expect("open");
        let table = server
            .create_table("t", vec![FamilyOptions::new("f")])
            .expect("create");
        let scanners = Scanners::new(ScannerLimits {
            lease: Duration::from_secs(60),
            max_open: 10,
            max_per_connection: 10,
        });
        let scan = |_| table.scanner(&Scan::all(0)).expect("scanner");
        let id = scanners.insert(7, scan(()), false);
        let other = scanners.insert(8, scan(()), false);
        let lent = scanners.lend(7, id).expect("lend");
        assert!(scanners.lend(7, id).is_err(), "lent once at a time");
        assert!(scanners.lend(8, id).is_err(), "never to another connection");
        assert_eq!(scanners.close_connection(7), 1, "the lent one's slot goes");
        scanners.give_back(id, lent);
        assert_eq!(scanners.len(), 1, "and it is not put back");
        assert!(scanners.lend(8, other).is_ok());
        assert_eq!(
            scanners.expire(),
            0,
            "a lent scanner never expires under its call"
        );
    }
}
