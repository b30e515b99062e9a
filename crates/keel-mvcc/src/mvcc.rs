//! Write numbers that become visible strictly in begin order.
//!
//! Design. HBase takes one mutex for `begin` (to append an entry to a linked list) and again for
//! `complete`. Here:
//! - `begin` is one `fetch_add` on the write point: no lock.
//! - `complete(n)` takes a mutex for a few instructions: it marks `n` in a window of completion
//!   flags that starts just above the read point, pops the completed prefix, and publishes the
//!   new read point with one atomic store. The window is a ring of flags that doubles if a
//!   straggler holds the read point back further than it has room for, so it never limits
//!   correctness and allocates nothing in steady state.
//! - `read_point` is one atomic load.
//! - Waiters (`complete_and_wait`, `await_all`) spin briefly, then park on one of
//!   [`WAKE_STRIPES`] condition variables, chosen by their write number; a completer that moves
//!   the read point notifies only the stripes of the numbers it passed, and only when someone
//!   is registered as waiting. One condition variable woke every parked writer at every move
//!   (80 writers on 100 hot rows: most of them woke only to park again).
//!
//! Why a mutex and not a lock-free ring: both were built and measured (docs/mvcc.md). On the
//! 2-core machines Keel is developed on, a lock-free ring (a CAS on the read point per
//! completion) moved three contended cache lines between cores on every write and ran 4-8× slower
//! than this design at 8 and 64 threads; the short critical section keeps the window's lines on
//! one core while contenders park.

use keel_sync::atomic::{AtomicU64, AtomicUsize, Ordering::SeqCst};
use keel_sync::{Condvar, Mutex, MutexGuard};

use crate::error::MvccError;

/// Spins before a waiter parks: most waits end within a few hundred nanoseconds. Under shuttle
/// a spin is a yield, so long spins would hide the parking path from the model: spin once.
const SPINS_BEFORE_PARK: u32 = if cfg!(shuttle) { 1 } else { 64 };

/// Condition variables parked waiters are spread over by write number: a read point moving
/// past `k` numbers wakes the waiters of at most `k` stripes. Waiters whose numbers are a
/// multiple of this apart share a stripe and may wake early (they check and park again).
const WAKE_STRIPES: usize = if cfg!(shuttle) { 2 } else { 32 };

/// Multi-version concurrency control for one region: hands out write numbers and tracks the
/// read point, below which every write is complete and visible.
#[derive(Debug, Default)]
pub struct Mvcc {
    hot: Hot,
    /// Serialises `begin_with` so closures run in write-number order.
    begin_lock: Mutex<()>,
    wait_lock: Mutex<()>,
    /// Parked waiters, by write number (`stripe`).
    wait_conds: [Condvar; WAKE_STRIPES],
    abandoned: AtomicU64,
}

/// Everything a `begin` + `complete` touches, on one cache line. A writer touches these in
/// sequence, so one line moving between cores serves the whole write; padding them apart (the
/// usual advice) measured 2× slower here, because each write then moved four lines.
#[derive(Debug, Default)]
#[repr(C, align(128))]
struct Hot {
    /// The last write number handed out.
    write_point: AtomicU64,
    /// Published copy of `window.read_point`: every write at or below it is complete.
    read_point: AtomicU64,
    /// Parked waiters; completers notify only when this is non-zero.
    waiters: AtomicUsize,
    window: Mutex<Window>,
}

/// Completion flags of the writes above the read point, in a ring: write `n` is at
/// `n & (len - 1)`. Set when `n` completes, cleared when the read point passes it. It doubles
/// when a straggler holds the read point back further than it has room for, so its size is a
/// high-water mark of writes in flight, never a limit.
#[derive(Debug)]
struct Window {
    read_point: u64,
    done: Vec<bool>,
}

/// Starting ring size: far more than a region's writes in flight (HBase's default handler count
/// is 30), 4 KiB.
const INITIAL_WINDOW: usize = 4096;

impl Default for Window {
    fn default() -> Self {
        Window {
            read_point: 0,
            done: vec![false; INITIAL_WINDOW],
        }
    }
}

impl Window {
    #[inline]
    fn slot(&self, number: u64) -> usize {
        (number & (self.done.len() as u64 - 1)) as usize
    }

    /// Makes room for `number`: re-lays the flags of every write in flight into a ring twice
    /// as large, as often as needed.
    #[inline]
    fn make_room(&mut self, number: u64) {
        while number - self.read_point > self.done.len() as u64 {
            let mut bigger = Window {
                read_point: self.read_point,
                done: vec![false; self.done.len() * 2],
            };
            for n in self.read_point + 1..=self.read_point + self.done.len() as u64 {
                let slot = bigger.slot(n);
                bigger.done[slot] = self.done[self.slot(n)];
            }
            *self = bigger;
        }
    }

    /// Marks `number` done and moves the read point over the completed prefix.
    #[inline]
    fn complete(&mut self, number: u64) {
        self.make_room(number);
        let slot = self.slot(number);
        self.done[slot] = true;
        loop {
            let next = self.slot(self.read_point + 1);
            if !self.done[next] {
                break;
            }
            self.done[next] = false;
            self.read_point += 1;
        }
    }
}

/// A reserved write number. Complete it with [`Mvcc::complete`] or [`Mvcc::complete_and_wait`]
/// whether the write succeeded or failed: until it is completed, no later write becomes
/// visible. Dropping it without completing (an early return, a panic) completes it anyway and
/// counts it in [`MvccStats::abandoned`], so a forgotten entry can never stall the region.
#[derive(Debug)]
#[must_use = "an entry must be completed, or every later write stays invisible"]
pub struct WriteEntry<'a> {
    mvcc: &'a Mvcc,
    number: u64,
}

impl WriteEntry<'_> {
    /// The write number: also the sequence id of the write's cells and WAL entry.
    pub fn write_number(&self) -> u64 {
        self.number
    }

    /// Hands the entry's completion to whoever holds the returned write number, for a write
    /// that another thread may finish (a region's writers apply each other's durable writes).
    /// The entry no longer completes itself when dropped: the number must reach
    /// [`Mvcc::complete_detached`] exactly once, or no later write ever becomes visible.
    pub fn detach(self) -> u64 {
        let number = self.number;
        std::mem::forget(self);
        number
    }
}

impl Drop for WriteEntry<'_> {
    fn drop(&mut self) {
        self.mvcc.abandoned.fetch_add(1, SeqCst);
        self.mvcc.finish(self.number);
    }
}

/// A snapshot of an [`Mvcc`]'s counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MvccStats {
    /// The last write number handed out.
    pub write_point: u64,
    /// Every write at or below this is visible.
    pub read_point: u64,
    /// Entries dropped without being completed (each one completed itself).
    pub abandoned: u64,
}

impl Mvcc {
    /// An idle MVCC at write number 0.
    pub fn new() -> Mvcc {
        Mvcc::default()
    }

    /// Reserves the next write number.
    #[inline]
    pub fn begin(&self) -> WriteEntry<'_> {
        let number = self.hot.write_point.fetch_add(1, SeqCst) + 1;
        WriteEntry { mvcc: self, number }
    }

    /// Reserves the next write number and runs `reserve(write_number)` before any other
    /// `begin_with` can take a number, so closures run in write-number order (HBase's
    /// `begin(Runnable)`, HBASE-17471: the WAL reserves its slot here, keeping a region's sequence
    /// ids in order in the log). Plain [`Mvcc::begin`] calls are not ordered against these
    /// closures. If `reserve` panics the entry completes itself.
    pub fn begin_with<R>(&self, reserve: impl FnOnce(u64) -> R) -> (WriteEntry<'_>, R) {
        let _order = self.begin_lock.lock();
        let entry = self.begin();
        let reserved = reserve(entry.number);
        (entry, reserved)
    }

    /// Marks the entry complete and advances the read point over every contiguous completed
    /// write. Returns true if the entry is already visible (the read point covers it).
    ///
    /// # Panics
    /// If `entry` came from another `Mvcc`.
    #[inline]
    pub fn complete(&self, entry: WriteEntry<'_>) -> bool {
        assert!(
            std::ptr::eq(entry.mvcc, self),
            "a WriteEntry completed on another Mvcc"
        );
        let number = entry.number;
        std::mem::forget(entry);
        self.finish(number) >= number
    }

    /// Completes the entry and waits until the read point covers it: the write is visible to
    /// every reader that starts afterwards.
    pub fn complete_and_wait(&self, entry: WriteEntry<'_>) {
        let number = entry.number;
        if !self.complete(entry) {
            self.wait_for(number);
        }
    }

    /// Completes write numbers [detached](WriteEntry::detach) from their entries, each exactly
    /// once, under one take of the completion lock; returns the read point afterwards.
    pub fn complete_detached(&self, numbers: &[u64]) -> u64 {
        let mut window = self.hot.window.lock();
        let before = window.read_point;
        for &number in numbers {
            debug_assert!(number > window.read_point, "write {number} completed twice");
            window.complete(number);
        }
        self.publish(window, before)
    }

    /// Waits until the read point covers `number`: that write, and every one before it, is
    /// visible to every reader that starts afterwards.
    pub fn wait_visible(&self, number: u64) {
        if self.read_point() < number {
            self.wait_for(number);
        }
    }

    /// Waits until every write begun before this call is complete (a flush's barrier).
    pub fn await_all(&self) {
        self.complete_and_wait(self.begin());
    }

    /// The read point: every write at or below it is complete. One atomic load.
    #[inline]
    pub fn read_point(&self) -> u64 {
        self.hot.read_point.load(SeqCst)
    }

    /// The last write number handed out.
    pub fn write_point(&self) -> u64 {
        self.hot.write_point.load(SeqCst)
    }

    /// Moves both points to `write_number` (region open: the highest sequence id found in store
    /// files and the replayed WAL). Only while idle (no write in flight), never backwards.
    pub fn advance_to(&self, write_number: u64) -> Result<(), MvccError> {
        let mut window = self.hot.window.lock();
        let read_point = window.read_point;
        let current = self.write_point();
        if current != read_point {
            return Err(MvccError::NotIdle {
                read_point,
                write_point: current,
            });
        }
        if write_number < current {
            return Err(MvccError::Backwards {
                current,
                requested: write_number,
            });
        }
        // `begin` takes no lock: a racing begin changes the write point and fails the exchange.
        if self
            .hot
            .write_point
            .compare_exchange(current, write_number, SeqCst, SeqCst)
            .is_err()
        {
            let write_point = self.write_point();
            return Err(MvccError::NotIdle {
                read_point,
                write_point,
            });
        }
        // Every flag is clear when idle, so the ring needs no reset.
        window.read_point = write_number;
        self.hot.read_point.store(write_number, SeqCst);
        Ok(())
    }

    /// Counters for metrics and tests.
    pub fn stats(&self) -> MvccStats {
        MvccStats {
            write_point: self.write_point(),
            read_point: self.read_point(),
            abandoned: self.abandoned.load(SeqCst),
        }
    }

    /// Records `number` as complete and advances; returns the read point afterwards.
    #[inline]
    fn finish(&self, number: u64) -> u64 {
        let mut window = self.hot.window.lock();
        debug_assert!(number > window.read_point, "write {number} completed twice");
        let before = window.read_point;
        window.complete(number);
        self.publish(window, before)
    }

    /// After completions under `window` moved the read point from `before` (or not): publishes
    /// it, unlocks, and wakes the waiters it passed. Returns the read point.
    #[inline]
    fn publish(&self, window: MutexGuard<'_, Window>, before: u64) -> u64 {
        let read_point = window.read_point;
        let moved = read_point != before;
        // Store the read point, then look for waiters (see `wake_waiters`), both while the line
        // is still ours: after the unlock the next writer takes it.
        let wake = moved && {
            self.hot.read_point.store(read_point, SeqCst);
            self.hot.waiters.load(SeqCst) > 0
        };
        drop(window);
        if wake {
            self.wake_waiters(before, read_point);
        }
        read_point
    }

    fn wait_for(&self, number: u64) {
        for _ in 0..SPINS_BEFORE_PARK {
            if self.read_point() >= number {
                return;
            }
            keel_sync::spin_hint();
        }
        self.hot.waiters.fetch_add(1, SeqCst);
        let mut guard = self.wait_lock.lock();
        while self.read_point() < number {
            self.stripe(number).wait(&mut guard);
        }
        drop(guard);
        self.hot.waiters.fetch_sub(1, SeqCst);
    }

    /// The condition variable the waiters for `number` park on.
    fn stripe(&self, number: u64) -> &Condvar {
        &self.wait_conds[(number % WAKE_STRIPES as u64) as usize]
    }

    /// Wakes the parked waiters for the numbers in `(from, to]` after the read point moved
    /// from `from` to `to`. A waiter registers in `waiters`, then checks the read point under
    /// `wait_lock`; a completer stores the read point, then reads `waiters`. Both are `SeqCst`,
    /// so one of them sees the other, and notifying under `wait_lock` cannot fall between a
    /// waiter's check and its wait. A waiter for `n` parks while the read point is below `n`,
    /// so the completer whose move passes `n` has `from < n <= to` and notifies `n`'s stripe.
    fn wake_waiters(&self, from: u64, to: u64) {
        let _guard = self.wait_lock.lock();
        let stripes = (to - from).min(WAKE_STRIPES as u64);
        for number in from + 1..=from + stripes {
            self.stripe(number).notify_all();
        }
    }
}

#[cfg(all(test, not(shuttle)))]
mod tests {
    use super::*;

    #[test]
    fn read_point_advances_only_over_contiguous_completions() {
        let mvcc = Mvcc::new();
        let (a, b, c) = (mvcc.begin(), mvcc.begin(), mvcc.begin());
        assert_eq!(
            (a.write_number(), b.write_number(), c.write_number()),
            (1, 2, 3)
        );
        assert!(!mvcc.complete(c));
        assert!(!mvcc.complete(b));
        assert_eq!(mvcc.read_point(), 0, "write 1 is still in flight");
        assert!(mvcc.complete(a));
        assert_eq!(mvcc.read_point(), 3);
        assert_eq!(mvcc.stats().abandoned, 0);
    }

    #[test]
    fn detached_numbers_complete_together_and_only_when_completed() {
        let mvcc = Mvcc::new();
        let (a, b, c) = (mvcc.begin().detach(), mvcc.begin().detach(), mvcc.begin());
        assert_eq!(
            mvcc.read_point(),
            0,
            "a detached entry does not complete on drop"
        );
        assert_eq!(
            mvcc.complete_detached(&[b]),
            0,
            "write 1 is still in flight"
        );
        assert_eq!(mvcc.complete_detached(&[a]), 2);
        mvcc.wait_visible(2);
        assert!(mvcc.complete(c));
        mvcc.wait_visible(3);
        assert_eq!(mvcc.stats().abandoned, 0);
    }

    #[test]
    fn wait_visible_returns_once_another_thread_completes() {
        let mvcc = Mvcc::new();
        let first = mvcc.begin().detach();
        let second = mvcc.begin().detach();
        std::thread::scope(|s| {
            let waiter = s.spawn(|| mvcc.wait_visible(second));
            std::thread::sleep(std::time::Duration::from_millis(20));
            assert!(!waiter.is_finished(), "write 2 is not visible yet");
            mvcc.complete_detached(&[second, first]);
            waiter.join().expect("waiter");
        });
        assert_eq!(mvcc.read_point(), 2);
    }

    #[test]
    fn dropped_entries_complete_themselves_and_are_counted() {
        let mvcc = Mvcc::new();
        let first = mvcc.begin();
        drop(mvcc.begin());
        assert_eq!(mvcc.stats().abandoned, 1);
        assert!(mvcc.complete(first));
        assert_eq!(mvcc.read_point(), 2);
    }

    #[test]
    fn a_straggler_holds_back_many_completions_then_releases_them() {
        let mvcc = Mvcc::new();
        let straggler = mvcc.begin();
        let later: Vec<_> = (0..10_000).map(|_| mvcc.begin()).collect();
        for entry in later.into_iter().rev() {
            assert!(!mvcc.complete(entry));
        }
        assert_eq!(mvcc.read_point(), 0);
        assert!(mvcc.complete(straggler));
        assert_eq!(mvcc.read_point(), 10_001);
        let next = mvcc.begin();
        assert!(mvcc.complete(next));
        assert_eq!(mvcc.read_point(), 10_002);
    }

    #[test]
    fn begin_with_runs_the_closure_with_the_number() {
        let mvcc = Mvcc::new();
        let (entry, seen) = mvcc.begin_with(|n| n * 10);
        assert_eq!(seen, 10);
        mvcc.complete_and_wait(entry);
        assert_eq!(mvcc.read_point(), 1);
    }

    #[test]
    fn a_panicking_reservation_completes_the_entry() {
        let mvcc = Mvcc::new();
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _ = mvcc.begin_with(|_| panic!("wal slot reservation failed"));
        }));
        assert!(result.is_err());
        assert_eq!(mvcc.read_point(), 1);
        assert_eq!(mvcc.stats().abandoned, 1);
    }

    #[test]
    fn advance_to_only_when_idle_and_never_backwards() {
        let mvcc = Mvcc::new();
        mvcc.advance_to(100).unwrap();
        assert_eq!((mvcc.read_point(), mvcc.write_point()), (100, 100));
        assert_eq!(mvcc.begin_with(|n| n).1, 101);
        assert_eq!(mvcc.read_point(), 101);
        assert_eq!(
            mvcc.advance_to(50),
            Err(MvccError::Backwards {
                current: 101,
                requested: 50
            })
        );
        let busy = mvcc.begin();
        assert_eq!(
            mvcc.advance_to(500),
            Err(MvccError::NotIdle {
                read_point: 101,
                write_point: 102
            })
        );
        mvcc.complete(busy);
        mvcc.advance_to(102).unwrap();
        assert_eq!(mvcc.stats().write_point, 102);
    }

    #[test]
    #[should_panic(expected = "another Mvcc")]
    fn completing_on_the_wrong_mvcc_panics() {
        let (a, b) = (Mvcc::new(), Mvcc::new());
        let entry = a.begin();
        b.complete(entry);
    }
}
