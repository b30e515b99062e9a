//! One call queue's discipline, single-threaded (the executor holds the queue's lock around
//! it): FIFO, deadline order, or adaptive-LIFO CoDel.

use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, VecDeque};
use std::time::{Duration, Instant};

use crate::call::{Call, CallClass};
use crate::options::{CodelOptions, QueueType, RpcOptions};

/// What a queue needs from the options, copied so a queue stands alone.
#[derive(Debug, Clone, Copy)]
pub(crate) struct QueueConfig {
    kind: QueueType,
    max_call_delay: Duration,
    scan_vtime_weight: f64,
    codel: CodelOptions,
}

impl QueueConfig {
    pub(crate) fn from_options(options: &RpcOptions, kind: QueueType) -> QueueConfig {
        QueueConfig {
            kind,
            max_call_delay: options.max_call_delay,
            scan_vtime_weight: options.scan_vtime_weight,
            codel: options.codel,
        }
    }
}

/// Counts a take can produce besides its call.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TakeStats {
    pub(crate) lifo_takes: u64,
}

#[derive(Debug)]
pub(crate) struct CallQueue {
    config: QueueConfig,
    fifo: VecDeque<Call>,
    heap: BinaryHeap<Reverse<DeadlineEntry>>,
    seq: u64,
    codel: CodelState,
}

impl CallQueue {
    pub(crate) fn new(config: QueueConfig) -> CallQueue {
        CallQueue {
            config,
            fifo: VecDeque::new(),
            heap: BinaryHeap::new(),
            seq: 0,
            codel: CodelState::default(),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.fifo.len() + self.heap.len()
    }

    pub(crate) fn push(&mut self, call: Call) {
        if self.config.kind != QueueType::Deadline {
            self.fifo.push_back(call);
            return;
        }
        let delay = if call.class == CallClass::Scan && call.scan_vtime > 0 {
            let ms = (call.scan_vtime as f64 * self.config.scan_vtime_weight)
                .sqrt()
                .round();
            Duration::from_millis(ms as u64)
        } else {
            Duration::ZERO
        };
        let due = call.received + delay.min(self.config.max_call_delay);
        self.seq += 1;
        self.heap.push(Reverse(DeadlineEntry {
            due,
            seq: self.seq,
            call,
        }));
    }

    /// Takes the next call to run. A CoDel queue may shed calls on the way: they go to
    /// `dropped`, to be answered outside the lock.
    pub(crate) fn take(
        &mut self,
        now: Instant,
        soft_limit: usize,
        dropped: &mut Vec<Call>,
        stats: &mut TakeStats,
    ) -> Option<Call> {
        match self.config.kind {
            QueueType::Fifo => self.fifo.pop_front(),
            QueueType::Deadline => self.heap.pop().map(|Reverse(entry)| entry.call),
            QueueType::Codel => loop {
                let lifo = self.fifo.len() as f64
                    > self.config.codel.lifo_threshold * soft_limit.max(1) as f64;
                let call = if lifo {
                    stats.lifo_takes += 1;
                    self.fifo.pop_back()?
                } else {
                    self.fifo.pop_front()?
                };
                let delay = now.saturating_duration_since(call.received);
                if self.codel.needs_drop(now, delay, &self.config.codel) {
                    dropped.push(call);
                } else {
                    return Some(call);
                }
            },
        }
    }

    /// Removes every queued call (shutdown).
    pub(crate) fn drain(&mut self) -> Vec<Call> {
        let mut calls: Vec<Call> = self.fifo.drain(..).collect();
        calls.extend(self.heap.drain().map(|Reverse(entry)| entry.call));
        calls
    }
}

#[derive(Debug)]
struct DeadlineEntry {
    due: Instant,
    seq: u64,
    call: Call,
}

impl PartialEq for DeadlineEntry {
    fn eq(&self, other: &DeadlineEntry) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for DeadlineEntry {}

impl PartialOrd for DeadlineEntry {
    fn partial_cmp(&self, other: &DeadlineEntry) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for DeadlineEntry {
    fn cmp(&self, other: &DeadlineEntry) -> Ordering {
        (self.due, self.seq).cmp(&(other.due, other.seq))
    }
}

/// HBase's `AdaptiveLifoCoDelCallQueue.needToDrop`, without its CAS dance: every take happens
/// under the queue's lock here.
#[derive(Debug, Default)]
struct CodelState {
    /// End of the current interval; `None` before the first take.
    interval_end: Option<Instant>,
    /// Minimum queueing delay seen in the current interval.
    min_delay: Duration,
    /// Set at an interval boundary: the next take starts the new interval's minimum.
    reset: bool,
    /// Whether the last finished interval's minimum delay exceeded the target.
    overloaded: bool,
}

impl CodelState {
    fn needs_drop(&mut self, now: Instant, delay: Duration, options: &CodelOptions) -> bool {
        if self.interval_end.is_none_or(|end| now > end) && !self.reset {
            self.interval_end = Some(now + options.interval);
            self.overloaded = self.min_delay > options.target_delay;
            self.reset = true;
        }
        if self.reset {
            self.reset = false;
            self.min_delay = delay;
            return false;
        }
        self.min_delay = self.min_delay.min(delay);
        self.overloaded && delay > options.target_delay * 2
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::call::{Failure, RunInfo, Task};

    struct Tag;
    impl Task for Tag {
        fn run(&mut self, _: &RunInfo) {}
        fn fail(&mut self, _: Failure) {}
    }

    fn queue(kind: QueueType) -> CallQueue {
        CallQueue::new(QueueConfig::from_options(&RpcOptions::default(), kind))
    }

    fn call(class: CallClass, received: Instant, size: u64) -> Call {
        Call::new(class, Tag).received_at(received).with_size(size)
    }

    fn take_all(q: &mut CallQueue, now: Instant, limit: usize) -> (Vec<u64>, Vec<u64>, u64) {
        let (mut taken, mut dropped, mut stats) = (Vec::new(), Vec::new(), TakeStats::default());
        while let Some(c) = q.take(now, limit, &mut dropped, &mut stats) {
            taken.push(c.size);
        }
        let dropped = dropped.iter().map(|c| c.size).collect();
        (taken, dropped, stats.lifo_takes)
    }

    #[test]
    fn fifo_keeps_arrival_order() {
        let mut q = queue(QueueType::Fifo);
        let t = Instant::now();
        for i in 0..5 {
            q.push(call(CallClass::Read, t, i));
        }
        assert_eq!(q.len(), 5);
        assert_eq!(take_all(&mut q, t, 100).0, [0, 1, 2, 3, 4]);
    }

    #[test]
    fn deadline_defers_long_scans_and_keeps_ties_fifo() {
        let mut q = queue(QueueType::Deadline);
        let t = Instant::now();
        // A scan 10 000 nexts in is deferred by sqrt(10 000) = 100 ms; one with 4 by 2 ms.
        q.push(call(CallClass::Scan, t, 0).with_scan_vtime(10_000));
        q.push(call(CallClass::Scan, t, 1).with_scan_vtime(4));
        q.push(call(CallClass::Read, t + Duration::from_millis(1), 2));
        q.push(call(CallClass::Write, t + Duration::from_millis(1), 3));
        // A scan with a huge vtime is capped at max.call.delay (5 s), so it still precedes a
        // call received 6 s later.
        q.push(call(CallClass::Scan, t, 4).with_scan_vtime(u64::MAX / 2));
        q.push(call(CallClass::Read, t + Duration::from_secs(6), 5));
        assert_eq!(take_all(&mut q, t, 100).0, [2, 3, 1, 0, 4, 5]);
    }

    #[test]
    fn codel_turns_lifo_above_the_threshold() {
        let mut q = queue(QueueType::Codel);
        let t = Instant::now();
        for i in 0..10 {
            q.push(call(CallClass::Read, t, i));
        }
        // Limit 10: 10 > 8 and 9 > 8 take from the back; at 8 queued it is FIFO again.
        let (taken, dropped, lifo) = take_all(&mut q, t, 10);
        assert_eq!(taken, [9, 8, 0, 1, 2, 3, 4, 5, 6, 7]);
        assert!(dropped.is_empty());
        assert_eq!(lifo, 2);
    }

    #[test]
    fn codel_drops_only_while_overloaded() {
        let mut q = queue(QueueType::Codel);
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        // Interval 1 (first take resets): every call waited 150 ms > 100 ms target.
        for i in 0..3 {
            q.push(call(CallClass::Read, t0, i));
        }
        let (taken, dropped, _) = take_all(&mut q, t0 + ms(150), 1000);
        assert_eq!((taken, dropped), (vec![0, 1, 2], vec![]));
        // Interval 2 begins past the first one's end: its minimum (150 ms) marks overload. The
        // first take of an interval is never dropped; after it, calls older than 2 × target are.
        let t1 = t0 + ms(300);
        q.push(call(CallClass::Read, t1 - ms(250), 10));
        q.push(call(CallClass::Read, t1 - ms(250), 11));
        q.push(call(CallClass::Read, t1 - ms(50), 12));
        let (taken, dropped, _) = take_all(&mut q, t1, 1000);
        assert_eq!((taken, dropped), (vec![10, 12], vec![11]));
        // Interval 3: the last interval's minimum was 50 ms < target, so nothing is dropped.
        let t2 = t1 + ms(200);
        q.push(call(CallClass::Read, t2 - ms(20), 20));
        q.push(call(CallClass::Read, t2 - ms(900), 21));
        let (taken, dropped, _) = take_all(&mut q, t2, 1000);
        assert_eq!((taken, dropped), (vec![20, 21], vec![]));
    }

    #[test]
    fn drain_empties_every_kind() {
        for kind in [QueueType::Fifo, QueueType::Deadline, QueueType::Codel] {
            let mut q = queue(kind);
            let t = Instant::now();
            for i in 0..4 {
                q.push(call(CallClass::Scan, t, i).with_scan_vtime(i));
            }
            assert_eq!(q.drain().len(), 4, "{kind:?}");
            assert_eq!(q.len(), 0);
        }
    }
}
