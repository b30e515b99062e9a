//! [`StripedCounter`]: a statistics counter that many threads add to (HBase's `LongAdder`).

use crate::CachePadded;
use crate::atomic::{AtomicU64, Ordering::Relaxed};

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
