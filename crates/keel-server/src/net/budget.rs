//! The server-wide budget of bytes in flight (`keel.server.inflight.bytes`): requests being
//! received (a frame's length is reserved before its body is read), decoded calls (their
//! estimated memory, which a frame of empty structs makes many times its size) and replies not
//! yet written to a client that reads slowly. A request that does not fit is refused with
//! HBase's `CallQueueTooBigException` wording instead of being read into memory, so neither
//! many half-sent frames nor clients that never read their replies can exhaust memory.
//!
//! Large reservations (over [`SMALL`]: big frames, big decoded calls, big replies) may fill only
//! three quarters of the budget; the last quarter is kept for small ones. Otherwise a few
//! half-sent 16 MiB frames, or a few unread multi-MB replies, would fill it, and every
//! well-behaved client's 100-byte get would be refused until they timed out.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// A reservation holding at most this much is small: it may use the whole budget.
pub(crate) const SMALL: u64 = 64 << 10;

/// Bytes in flight across the server, and the most there may be.
#[derive(Debug)]
pub(crate) struct Budget {
    used: AtomicU64,
    max: u64,
}

/// Bytes held against a [`Budget`], given back when dropped.
#[derive(Debug)]
pub(crate) struct Reservation {
    budget: Arc<Budget>,
    bytes: u64,
}

impl Budget {
    pub(crate) fn new(max: u64) -> Arc<Budget> {
        Arc::new(Budget {
            used: AtomicU64::new(0),
            max,
        })
    }

    /// `bytes` more, if they fit (a large reservation within the large share).
    pub(crate) fn try_reserve(self: &Arc<Budget>, bytes: u64) -> Option<Reservation> {
        self.take(bytes, bytes).then(|| Reservation {
            budget: Arc::clone(self),
            bytes,
        })
    }

    /// A reservation of nothing yet, to grow.
    pub(crate) fn empty(self: &Arc<Budget>) -> Reservation {
        Reservation {
            budget: Arc::clone(self),
            bytes: 0,
        }
    }

    /// Takes `bytes` for a reservation that will then hold `total`.
    fn take(&self, bytes: u64, total: u64) -> bool {
        let limit = if total > SMALL {
            self.max - self.max / 4
        } else {
            self.max
        };
        let mut used = self.used.load(Ordering::Relaxed);
        loop {
            let Some(after) = used.checked_add(bytes).filter(|&a| a <= limit) else {
                return false;
            };
            match self
                .used
                .compare_exchange_weak(used, after, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => return true,
                Err(now) => used = now,
            }
        }
    }

    /// Bytes in flight now.
    pub(crate) fn used(&self) -> u64 {
        self.used.load(Ordering::Relaxed)
    }

    /// The limit.
    pub(crate) fn max(&self) -> u64 {
        self.max
    }

    /// Bytes that may still be reserved.
    pub(crate) fn available(&self) -> u64 {
        self.max.saturating_sub(self.used())
    }
}

impl Reservation {
    /// `more` bytes, if they fit.
    pub(crate) fn try_grow(&mut self, more: u64) -> bool {
        let grown = self.budget.take(more, self.bytes.saturating_add(more));
        if grown {
            self.bytes += more;
        }
        grown
    }

    /// Bytes held.
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Moves `bytes` of this reservation (at most what it holds) into a new one: a request
    /// complete in a connection's read buffer takes its own bytes' share along.
    pub(crate) fn split_off(&mut self, bytes: u64) -> Reservation {
        let bytes = bytes.min(self.bytes);
        self.bytes -= bytes;
        Reservation {
            budget: Arc::clone(&self.budget),
            bytes,
        }
    }

    /// Holds exactly `bytes` from now on, fitting or not: what it stands for is already in
    /// memory (a reply being written), and the budget must say so truthfully.
    pub(crate) fn resize(&mut self, bytes: u64) {
        if bytes >= self.bytes {
            self.budget
                .used
                .fetch_add(bytes - self.bytes, Ordering::AcqRel);
        } else {
            self.budget
                .used
                .fetch_sub(self.bytes - bytes, Ordering::AcqRel);
        }
        self.bytes = bytes;
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.budget.used.fetch_sub(self.bytes, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservations_fit_the_limit_and_give_back_what_they_hold() {
        let budget = Budget::new(100);
        let mut a = budget.try_reserve(60).expect("fits");
        assert!(budget.try_reserve(50).is_none(), "60 + 50 > 100");
        let b = budget.try_reserve(40).expect("fits exactly");
        assert!(!a.try_grow(1));
        drop(b);
        assert!(a.try_grow(30));
        assert_eq!(budget.used(), 90);
        a.resize(150);
        assert_eq!(
            budget.used(),
            150,
            "a reply already in memory is counted as it is"
        );
        assert_eq!(budget.available(), 0);
        a.resize(10);
        assert_eq!(budget.used(), 10);
        let part = a.split_off(4);
        assert_eq!((a.bytes(), part.bytes(), budget.used()), (6, 4, 10));
        drop(part);
        assert_eq!(budget.used(), 6);
        assert_eq!(a.split_off(100).bytes(), 6, "never more than it holds");
        assert_eq!(budget.used(), 0);
        let mut grown = budget.empty();
        assert!(grown.try_grow(100));
        drop(a);
        drop(grown);
        assert_eq!(budget.used(), 0);
        assert_eq!(budget.max(), 100);
    }

    #[test]
    fn large_reservations_leave_a_quarter_for_small_ones() {
        let budget = Budget::new(1 << 20);
        assert!(
            budget.try_reserve(800 << 10).is_none(),
            "past three quarters"
        );
        let large = budget
            .try_reserve(700 << 10)
            .expect("within three quarters");
        assert!(
            budget.try_reserve(100 << 10).is_none(),
            "700 + 100 KiB > 768 KiB"
        );
        let small: Vec<Reservation> = (0..5)
            .map(|_| {
                budget
                    .try_reserve(SMALL)
                    .expect("small ones use the last quarter")
            })
            .collect();
        assert_eq!(budget.used(), (700 << 10) + 5 * SMALL);
        let mut grows = budget.try_reserve(1).expect("small");
        assert!(!grows.try_grow(SMALL), "grown past small it is large");
        drop(large);
        assert!(grows.try_grow(SMALL));
        drop(small);
        drop(grows);
        assert_eq!(budget.used(), 0);
    }
}
