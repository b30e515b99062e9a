//! Shuttle's primitives behind parking_lot's API (`--cfg shuttle` only).

use std::ops::{Deref, DerefMut};
use std::time::Instant;

/// A mutex whose every acquisition is a shuttle scheduling point.
#[derive(Debug, Default)]
pub struct Mutex<T>(shuttle::sync::Mutex<T>);

/// The guard of a [`Mutex`]; `None` only while a condvar wait has lent the inner guard out.
#[derive(Debug)]
pub struct MutexGuard<'a, T>(Option<shuttle::sync::MutexGuard<'a, T>>);

impl<T> Mutex<T> {
    /// A new mutex holding `value`.
    pub fn new(value: T) -> Mutex<T> {
        Mutex(shuttle::sync::Mutex::new(value))
    }

    /// Locks the mutex (poisoning is ignored, as parking_lot does).
    pub fn lock(&self) -> MutexGuard<'_, T> {
        MutexGuard(Some(
            self.0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        ))
    }

    /// Locks the mutex if no one holds it (`None` if someone does), as parking_lot's does.
    pub fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
        match self.0.try_lock() {
            Ok(guard) => Some(MutexGuard(Some(guard))),
            Err(std::sync::TryLockError::Poisoned(poisoned)) => {
                Some(MutexGuard(Some(poisoned.into_inner())))
            }
            Err(std::sync::TryLockError::WouldBlock) => None,
        }
    }
}

impl<T> Deref for MutexGuard<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        self.0
            .as_deref()
            .unwrap_or_else(|| unreachable!("guard is lent out only inside wait"))
    }
}

impl<T> DerefMut for MutexGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        self.0
            .as_deref_mut()
            .unwrap_or_else(|| unreachable!("guard is lent out only inside wait"))
    }
}

/// A condition variable whose waits are shuttle scheduling points.
#[derive(Debug, Default)]
pub struct Condvar(shuttle::sync::Condvar);

impl Condvar {
    /// A new condition variable.
    pub fn new() -> Condvar {
        Condvar(shuttle::sync::Condvar::new())
    }

    /// Releases the guard's lock, waits for a notification, and relocks.
    pub fn wait<T>(&self, guard: &mut MutexGuard<'_, T>) {
        let inner = guard
            .0
            .take()
            .unwrap_or_else(|| unreachable!("guard is held"));
        let inner = self
            .0
            .wait(inner)
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        guard.0 = Some(inner);
    }

    /// Shuttle has no clock: this waits like [`Condvar::wait`] and never times out.
    pub fn wait_until<T>(&self, guard: &mut MutexGuard<'_, T>, _deadline: Instant) -> bool {
        self.wait(guard);
        false
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

/// A reader-writer lock whose every acquisition is a shuttle scheduling point.
#[derive(Debug, Default)]
pub struct RwLock<T>(shuttle::sync::RwLock<T>);

/// Shared access to a [`RwLock`]'s value.
pub type RwLockReadGuard<'a, T> = shuttle::sync::RwLockReadGuard<'a, T>;

/// Exclusive access to a [`RwLock`]'s value.
pub type RwLockWriteGuard<'a, T> = shuttle::sync::RwLockWriteGuard<'a, T>;

impl<T> RwLock<T> {
    /// A new lock holding `value`.
    pub fn new(value: T) -> RwLock<T> {
        RwLock(shuttle::sync::RwLock::new(value))
    }

    /// Shared access (poisoning is ignored, as parking_lot does).
    pub fn read(&self) -> RwLockReadGuard<'_, T> {
        self.0
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Exclusive access (poisoning is ignored, as parking_lot does).
    pub fn write(&self) -> RwLockWriteGuard<'_, T> {
        self.0
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
