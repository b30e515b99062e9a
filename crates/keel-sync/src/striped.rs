//! [`StripedCounter`]: a statistics counter that many threads add to (HBase's `LongAdder`);
//! [`ReadMostly`]: a value many threads read and few replace, one copy per stripe.

use crate::atomic::{AtomicU64, Ordering::Relaxed};
use crate::{CachePadded, RwLock};

/// Stripes per counter: more than the threads a core runs between context switches, so two
/// busy threads rarely share one.
const STRIPES: usize = 16;

/// A counter many threads add to: each add goes to one of 16 cache-padded atomics,
/// chosen per thread, so that adders on different cores do not pull one cache line back and
/// forth (a request counter bumped by every read was one such line); a read sums the stripes.
/// The sum is exact once the adds it should see have happened; while adds run it may miss some.
#[derive(Debug)]
pub struct StripedCounter {
    stripes: [CachePadded<AtomicU64>; STRIPES],
}

impl Default for StripedCounter {
    fn default() -> StripedCounter {
        StripedCounter::new()
    }
}

impl StripedCounter {
    /// A counter at zero.
    pub fn new() -> StripedCounter {
        StripedCounter {
            stripes: std::array::from_fn(|_| CachePadded(AtomicU64::new(0))),
        }
    }

    /// Adds `n`.
    #[inline]
    pub fn add(&self, n: u64) {
        self.stripes[thread_stripe()].fetch_add(n, Relaxed);
    }

    /// The total of every add so far.
    pub fn sum(&self) -> u64 {
        self.stripes
            .iter()
            .fold(0u64, |sum, stripe| sum.wrapping_add(stripe.load(Relaxed)))
    }
}

/// A value that every request reads and that is replaced rarely (a table's list of regions, at
/// a split): one copy per stripe, each behind its own lock, with its own reference count, so
/// that readers on different cores take different cache lines. One `RwLock<Arc<T>>` cost every
/// read a lock and a reference count on two lines that every core pulled back and forth. A
/// [`store`](ReadMostly::store) replaces the copies one stripe at a time: a reader during it may
/// get the old value or the new one, as if it had read a moment earlier or later. The `Arc` is
/// std's under shuttle too: a reference count is not a scheduling point worth modelling.
#[derive(Debug)]
pub struct ReadMostly<T> {
    stripes: [CachePadded<RwLock<std::sync::Arc<T>>>; STRIPES],
}

impl<T: Clone> ReadMostly<T> {
    /// Holds `value` (cloned once per stripe).
    pub fn new(value: T) -> ReadMostly<T> {
        ReadMostly {
            stripes: std::array::from_fn(|_| {
                CachePadded(RwLock::new(std::sync::Arc::new(value.clone())))
            }),
        }
    }

    /// The current value, from the calling thread's stripe. One thread sees one `Arc` until the
    /// next store, so `Arc::ptr_eq` on two loads tells whether a store came between them.
    #[inline]
    pub fn load(&self) -> std::sync::Arc<T> {
        std::sync::Arc::clone(&self.stripes[thread_stripe()].read())
    }

    /// Replaces the value in every stripe.
    pub fn store(&self, value: T) {
        for stripe in &self.stripes {
            *stripe.write() = std::sync::Arc::new(value.clone());
        }
    }
}

/// The calling thread's stripe: threads take stripes in turn as they first add.
#[inline]
fn thread_stripe() -> usize {
    // Plain std: which stripe a thread takes is not something a model needs to explore.
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    std::thread_local! {
        static STRIPE: usize = NEXT.fetch_add(1, Relaxed) % STRIPES;
    }
    STRIPE.with(|stripe| *stripe)
}

#[cfg(all(test, not(shuttle)))]
mod tests {
    use super::*;

    #[test]
    fn concurrent_adds_all_count() {
        let counter = StripedCounter::new();
        std::thread::scope(|s| {
            for t in 0..8u64 {
                let counter = &counter;
                s.spawn(move || {
                    for _ in 0..10_000 {
                        counter.add(t + 1);
                    }
                });
            }
        });
        assert_eq!(counter.sum(), 10_000 * (1..=8).sum::<u64>());
    }

    #[test]
    fn read_mostly_loads_what_was_stored_from_every_thread() {
        let value = ReadMostly::new(vec![1, 2]);
        let first = value.load();
        assert!(
            std::sync::Arc::ptr_eq(&first, &value.load()),
            "one thread, one copy"
        );
        value.store(vec![3]);
        assert!(!std::sync::Arc::ptr_eq(&first, &value.load()));
        std::thread::scope(|s| {
            for _ in 0..20 {
                s.spawn(|| assert_eq!(*value.load(), [3]));
            }
        });
        assert_eq!(*first, [1, 2], "a loaded value outlives the store");
    }

    #[test]
    fn threads_spread_over_stripes() {
        let counter = StripedCounter::new();
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| counter.add(1));
            }
        });
        let used = counter
            .stripes
            .iter()
            .filter(|s| s.load(Relaxed) > 0)
            .count();
        assert!(used >= 2, "four threads added on {used} stripe(s)");
    }
}
