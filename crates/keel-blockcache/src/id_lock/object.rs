//! The lock object a pool hands out: a writer-preferring read/write lock built on keel-sync's
//! mutex and condition variable, so that shuttle can model it and no `unsafe` is needed to keep
//! it locked while a guard owns a shared handle to it.

use keel_sync::{Condvar, Mutex};

#[derive(Debug, Default)]
pub(crate) struct LockObject {
    state: Mutex<RwState>,
    changed: Condvar,
}

#[derive(Debug, Default)]
struct RwState {
    readers: u32,
    writer: bool,
    waiting_writers: u32,
}

impl LockObject {
    /// Shared access; waits while a writer holds or waits (writers are not starved).
    pub(crate) fn lock_read(&self) {
        let mut state = self.state.lock();
        while state.writer || state.waiting_writers > 0 {
            self.changed.wait(&mut state);
        }
        state.readers += 1;
    }

    pub(crate) fn unlock_read(&self) {
        let mut state = self.state.lock();
        state.readers -= 1;
        if state.readers == 0 && state.waiting_writers > 0 {
            self.changed.notify_all();
        }
    }

    /// Exclusive access.
    pub(crate) fn lock_write(&self) {
        let mut state = self.state.lock();
        state.waiting_writers += 1;
        while state.writer || state.readers > 0 {
            self.changed.wait(&mut state);
        }
        state.waiting_writers -= 1;
        state.writer = true;
    }

    pub(crate) fn unlock_write(&self) {
        let mut state = self.state.lock();
        state.writer = false;
        self.changed.notify_all();
    }
}
