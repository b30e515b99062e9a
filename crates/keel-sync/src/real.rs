//! The production primitives: parking_lot's, with a condvar API shared with the model version.

use std::time::Instant;

pub use parking_lot::{Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// A condition variable (parking_lot's) used with [`Mutex`].
#[derive(Debug, Default)]
pub struct Condvar(parking_lot::Condvar);

impl Condvar {
    /// A new condition variable.
    pub const fn new() -> Condvar {
        Condvar(parking_lot::Condvar::new())
    }

    /// Releases the guard's lock, waits for a notification, and relocks.
    pub fn wait<T>(&self, guard: &mut MutexGuard<'_, T>) {
        self.0.wait(guard);
    }

    /// As [`Condvar::wait`], but gives up at `deadline`; returns true if it timed out.
    pub fn wait_until<T>(&self, guard: &mut MutexGuard<'_, T>, deadline: Instant) -> bool {
        self.0.wait_until(guard, deadline).timed_out()
    }

    /// Wakes one waiter.
    pub fn notify_one(&self) {
        self.0.notify_one();
    }

    /// Wakes every waiter.
    pub fn notify_all(&self) {
        self.0.notify_all();
    }
}
