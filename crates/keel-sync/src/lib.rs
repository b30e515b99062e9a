//! The one place Keel names its locks, condition variables and atomics.
//!
//! Normally these are `parking_lot`'s `Mutex`, `RwLock` and `Condvar` and `std`'s atomics. Built with
//! `RUSTFLAGS="--cfg shuttle"` every one of them becomes shuttle's model-checked counterpart, so
//! a crate that takes its primitives from here can run its concurrency tests under shuttle's
//! randomized and PCT schedulers (`cargo xtask model`). The API is parking_lot's shape in both
//! cases: `lock()` returns the guard directly and condition variables wait on `&mut guard`.
//!
//! Under shuttle, timed waits never time out (shuttle has no clock): code must never depend on
//! a timeout for progress, and a lost wake-up shows up as a deadlock that shuttle reports.
//!
//! ```
//! use keel_sync::atomic::{AtomicU64, Ordering};
//! use keel_sync::{Condvar, Mutex};
//!
//! // parking_lot's shape in both builds: lock() returns the guard; a condition variable waits on it.
//! let ready = Mutex::new(false);
//! let signal = Condvar::new();
//! *ready.lock() = true;
//! signal.notify_all();
//! let mut guard = ready.lock();
//! while !*guard {
//!     signal.wait(&mut guard);
//! }
//! let counter = AtomicU64::new(0);
//! counter.fetch_add(1, Ordering::SeqCst);
//! assert_eq!(counter.load(Ordering::SeqCst), 1);
//! ```
//!
//! What this crate is not: no policy. Beyond choosing implementations it holds a few small helpers
//! that hot paths across the workspace share: [`CachePadded`], [`StripedCounter`],
//! [`ReadMostly`], [`prefetch`] (with [`prefetch_value`]) and [`yield_until`].

mod prefetch;
mod striped;

pub use prefetch::{prefetch, prefetch_value};
pub use striped::{ReadMostly, StripedCounter};

#[cfg(shuttle)]
mod model;
#[cfg(not(shuttle))]
mod real;

#[cfg(shuttle)]
pub use model::{Condvar, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};
#[cfg(not(shuttle))]
pub use real::{Condvar, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Atomics: `std::sync::atomic` normally, shuttle's under `--cfg shuttle`.
pub mod atomic {
    #[cfg(shuttle)]
    pub use shuttle::sync::atomic::{
        AtomicBool, AtomicI64, AtomicU32, AtomicU64, AtomicUsize, Ordering, fence,
    };
    #[cfg(not(shuttle))]
    pub use std::sync::atomic::{
        AtomicBool, AtomicI64, AtomicU32, AtomicU64, AtomicUsize, Ordering, fence,
    };
}

/// `Arc`: std's normally, shuttle's under `--cfg shuttle`.
#[cfg(shuttle)]
pub use shuttle::sync::Arc;
#[cfg(not(shuttle))]
pub use std::sync::Arc;

/// Bounded channels: std's normally, shuttle's under `--cfg shuttle` (so a blocked receiver is a
/// scheduling point the model sees).
pub mod mpsc {
    #[cfg(shuttle)]
    pub use shuttle::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
    #[cfg(not(shuttle))]
    pub use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
}

/// Threads and scheduling hints.
pub mod thread {
    #[cfg(shuttle)]
    pub use shuttle::thread::{JoinHandle, spawn, yield_now};
    #[cfg(not(shuttle))]
    pub use std::thread::{JoinHandle, spawn, yield_now};

    /// Spawns a named thread (under shuttle, a model thread; shuttle threads have no names).
    pub fn spawn_named<F, T>(name: &str, f: F) -> std::io::Result<JoinHandle<T>>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        #[cfg(shuttle)]
        {
            let _ = name;
            Ok(shuttle::thread::spawn(f))
        }
        #[cfg(not(shuttle))]
        {
            std::thread::Builder::new().name(name.to_string()).spawn(f)
        }
    }
}

/// A spin-wait hint; under shuttle a yield, so that the model can schedule the awaited thread.
#[inline]
pub fn spin_hint() {
    #[cfg(shuttle)]
    shuttle::thread::yield_now();
    #[cfg(not(shuttle))]
    std::hint::spin_loop();
}

/// Yields the CPU up to `times` times until `ready()` holds, and says whether it did
/// (`ready` is asked first, then after each yield).
///
/// For a waiter whose answer usually comes within a few scheduling turns, before it parks: with
/// more runnable threads than cores, a yield hands the core to another thread at the cost of a
/// context switch on that core, while a parked thread costs whoever answers it a futex wake-up
/// (on a VM, an inter-processor interrupt and tens of microseconds before it runs). Unlike a
/// spin on [`spin_hint`], it never keeps the answering thread off its core. Under shuttle each
/// yield is a scheduling point.
pub fn yield_until(times: usize, mut ready: impl FnMut() -> bool) -> bool {
    for _ in 0..times {
        if ready() {
            return true;
        }
        thread::yield_now();
    }
    ready()
}

/// Pads and aligns a value to 128 bytes (two cache lines, for adjacent-line prefetching) so that
/// two hot atomics never share a line.
#[derive(Debug, Default)]
#[repr(align(128))]
pub struct CachePadded<T>(pub T);

impl<T> std::ops::Deref for CachePadded<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

#[cfg(all(test, not(shuttle)))]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;

    #[test]
    fn condvar_wakes_a_waiter_and_times_out_without_one() {
        let pair = Arc::new((Mutex::new(false), Condvar::new()));
        let setter = {
            let pair = Arc::clone(&pair);
            thread::spawn(move || {
                *pair.0.lock() = true;
                pair.1.notify_all();
            })
        };
        let mut ready = pair.0.lock();
        while !*ready {
            pair.1.wait(&mut ready);
        }
        drop(ready);
        setter.join().unwrap();

        let mut guard = pair.0.lock();
        let start = Instant::now();
        let timed_out = pair
            .1
            .wait_until(&mut guard, start + Duration::from_millis(20));
        assert!(timed_out);
        assert!(start.elapsed() >= Duration::from_millis(20));
        pair.1.notify_one();
    }

    #[test]
    fn yield_until_asks_once_more_than_it_yields_and_stops_when_ready() {
        let mut asked = 0;
        assert!(!yield_until(3, || {
            asked += 1;
            false
        }));
        assert_eq!(asked, 4, "asked first, then after each of the 3 yields");
        let mut asked = 0;
        assert!(yield_until(5, || {
            asked += 1;
            asked == 2
        }));
        assert_eq!(asked, 2, "stops asking once ready");
        assert!(yield_until(0, || true));
    }

    #[test]
    fn cache_padded_is_aligned() {
        let padded = CachePadded(atomic::AtomicU64::new(1));
        assert_eq!(std::mem::align_of_val(&padded), 128);
        assert_eq!(padded.load(atomic::Ordering::Relaxed), 1);
        spin_hint();
    }
}

/// The crate README's example, compiled and run as a doctest.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
