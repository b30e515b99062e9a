//! One handler pool: its queues, the idle-handler stack of the fast path, and the hand-off slot
//! each handler parks on.
//!
//! The fast path's invariant (HBase's poll/push window, closed): a handler's empty poll of its
//! queue and its push onto the idle stack happen under that queue's lock, and a dispatcher holds
//! the queue's lock while it checks the idle stack and, finding it empty, enqueues. So a call is
//! never queued while a handler of its pool is parked, and a handler never parks while its queue
//! holds a call. Lock order: a queue's lock, then the idle stack's; hand-off slots are taken alone.

use keel_sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use keel_sync::{Condvar, Mutex};

use crate::call::Call;
use crate::error::{RejectReason, Rejected};
use crate::layout::{PoolLayout, hard_limit};
use crate::metrics::{PoolCounters, PoolShape};
use crate::queue::{CallQueue, QueueConfig};

pub(crate) struct QueueSlot {
    pub(crate) calls: Mutex<CallQueue>,
    /// Handlers of a pool without a fast path wait here for calls.
    pub(crate) ready: Condvar,
}

/// What a parked handler is given.
enum HandOffState {
    Empty,
    Call(Call),
    Exit,
}

struct HandOff {
    state: Mutex<HandOffState>,
    wake: Condvar,
}

impl HandOff {
    fn give(&self, what: HandOffState) {
        *self.state.lock() = what;
        self.wake.notify_one();
    }

    /// Blocks until a dispatcher (a call) or shutdown (`None`) wakes this handler.
    fn wait(&self) -> Option<Call> {
        let mut state = self.state.lock();
        loop {
            match std::mem::replace(&mut *state, HandOffState::Empty) {
                HandOffState::Empty => self.wake.wait(&mut state),
                HandOffState::Call(call) => return Some(call),
                HandOffState::Exit => return None,
            }
        }
    }
}

/// What a handler does next.
pub(crate) enum Work {
    /// Run this call; `true` if it came by hand-off.
    Run(Call, bool),
    /// Look again (woken without a call in hand).
    Retry,
    /// The executor is shutting down and this handler's queue is empty.
    Exit,
}

pub(crate) struct Pool {
    pub(crate) name: &'static str,
    pub(crate) queues: Box<[QueueSlot]>,
    /// Fast path only: parked handlers, most recently parked last (LIFO keeps warm ones busy).
    idle: Option<Mutex<Vec<usize>>>,
    slots: Box<[HandOff]>,
    pub(crate) handlers: usize,
    pub(crate) queue_limit: AtomicUsize,
    pub(crate) hard_limit: usize,
    pub(crate) counters: PoolCounters,
    #[cfg(shuttle)]
    balance: keel_sync::atomic::AtomicU64,
}

impl Pool {
    pub(crate) fn new(layout: &PoolLayout, queue: QueueConfig) -> Pool {
        Pool {
            name: layout.name,
            queues: (0..layout.queues)
                .map(|_| QueueSlot {
                    calls: Mutex::new(CallQueue::new(queue)),
                    ready: Condvar::new(),
                })
                .collect(),
            idle: layout
                .fast_path
                .then(|| Mutex::new(Vec::with_capacity(layout.handlers))),
            slots: (0..layout.handlers)
                .map(|_| HandOff {
                    state: Mutex::new(HandOffState::Empty),
                    wake: Condvar::new(),
                })
                .collect(),
            handlers: layout.handlers,
            queue_limit: AtomicUsize::new(layout.queue_limit),
            hard_limit: hard_limit(layout.queue_limit),
            counters: PoolCounters::new(),
            #[cfg(shuttle)]
            balance: keel_sync::atomic::AtomicU64::new(0),
        }
    }

    /// Hands `call` to an idle handler or queues it; gives it back if the pool refuses it.
    pub(crate) fn offer(&self, call: Call, shutting_down: &AtomicBool) -> Result<(), Rejected> {
        let index = self.pick_queue();
        let queue = &self.queues[index];
        let mut calls = queue.calls.lock();
        if shutting_down.load(Ordering::Acquire) {
            return Err(Rejected {
                reason: RejectReason::ShuttingDown,
                call,
            });
        }
        let limit = self.queue_limit.load(Ordering::Relaxed);
        let full = |call| {
            self.counters
                .rejected_queue_full
                .fetch_add(1, Ordering::Relaxed);
            Err(Rejected {
                reason: RejectReason::QueueFull {
                    pool: self.name,
                    queue: index,
                    limit,
                },
                call,
            })
        };
        if let Some(idle) = &self.idle {
            // A hand-off bypasses the length limit, so a limit of 0 ("accept nothing") has to
            // be checked here (HBASE-23744).
            if limit == 0 {
                return full(call);
            }
            let parked = idle.lock().pop();
            if let Some(handler) = parked {
                drop(calls);
                self.counters.dispatched.fetch_add(1, Ordering::Relaxed);
                self.counters.handed_off.fetch_add(1, Ordering::Relaxed);
                self.slots[handler].give(HandOffState::Call(call));
                return Ok(());
            }
        }
        if calls.len() >= limit {
            return full(call);
        }
        calls.push(call);
        drop(calls);
        self.counters.dispatched.fetch_add(1, Ordering::Relaxed);
        self.counters.queued.fetch_add(1, Ordering::Relaxed);
        if self.idle.is_none() {
            queue.ready.notify_one();
        }
        Ok(())
    }

    /// Handler `handler`'s next step: a call from its queue, a hand-off after parking, or exit.
    /// Calls a CoDel queue shed on the way are appended to `dropped`.
    pub(crate) fn next(
        &self,
        handler: usize,
        shutting_down: &AtomicBool,
        dropped: &mut Vec<Call>,
    ) -> Work {
        let queue = &self.queues[handler % self.queues.len()];
        let mut calls = queue.calls.lock();
        let mut stats = crate::queue::TakeStats::default();
        let limit = self.queue_limit.load(Ordering::Relaxed);
        let taken = calls.take(std::time::Instant::now(), limit, dropped, &mut stats);
        if stats.lifo_takes > 0 {
            self.counters
                .lifo_takes
                .fetch_add(stats.lifo_takes, Ordering::Relaxed);
        }
        if let Some(call) = taken {
            return Work::Run(call, false);
        }
        if shutting_down.load(Ordering::Acquire) {
            return Work::Exit;
        }
        if !dropped.is_empty() {
            // Answer the shed calls before parking; then look again.
            return Work::Retry;
        }
        match &self.idle {
            Some(idle) => {
                // Parking is published under the queue's lock: see the module note.
                idle.lock().push(handler);
                drop(calls);
                match self.slots[handler].wait() {
                    Some(call) => Work::Run(call, true),
                    None => Work::Exit,
                }
            }
            None => {
                queue.ready.wait(&mut calls);
                Work::Retry
            }
        }
    }

    /// Shutdown: wakes every waiting handler and returns the calls still queued if `take_queued`.
    pub(crate) fn stop(&self, take_queued: bool) -> Vec<Call> {
        let mut queued = Vec::new();
        for queue in self.queues.iter() {
            let mut calls = queue.calls.lock();
            if take_queued {
                queued.extend(calls.drain());
            }
            drop(calls);
            queue.ready.notify_all();
        }
        // Every handler that checks the flag from now on sees it (each queue lock above was a
        // barrier), so the stack only shrinks from here.
        if let Some(idle) = &self.idle {
            let parked = std::mem::take(&mut *idle.lock());
            for handler in parked {
                self.slots[handler].give(HandOffState::Exit);
            }
        }
        queued
    }

    pub(crate) fn shape(&self) -> PoolShape {
        PoolShape {
            queues: self.queues.len(),
            handlers: self.handlers,
            queue_limit: self.queue_limit.load(Ordering::Relaxed),
            queued_calls: self.queues.iter().map(|q| q.calls.lock().len()).sum(),
        }
    }

    /// HBase's `RandomQueueBalancer`: a uniformly random queue (constant with one queue).
    fn pick_queue(&self) -> usize {
        let n = self.queues.len();
        if n == 1 {
            return 0;
        }
        #[cfg(shuttle)]
        let r = splitmix(self.balance.fetch_add(1, Ordering::Relaxed));
        #[cfg(not(shuttle))]
        let r = thread_random();
        ((r as u128 * n as u128) >> 64) as usize
    }
}

fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// A per-thread random number (xorshift seeded from std's per-thread hash keys), so that
/// dispatchers never share a cache line to balance.
#[cfg(not(shuttle))]
fn thread_random() -> u64 {
    use std::cell::Cell;
    use std::hash::BuildHasher;
    thread_local! {
        static STATE: Cell<u64> =
            Cell::new(splitmix(std::hash::RandomState::new().hash_one(0u8)) | 1);
    }
    STATE.with(|state| {
        let mut x = state.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        state.set(x);
        x
    })
}
