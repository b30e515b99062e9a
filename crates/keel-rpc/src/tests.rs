//! Executor behaviour on real threads: routing and thread names, the fast path, every limit,
//! deadlines, CoDel shedding, panics, runtime changes and both shutdown modes.

use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use crate::*;

#[derive(Debug)]
enum Event {
    Ran {
        id: u64,
        info: RunInfo,
        thread: String,
    },
    Failed {
        id: u64,
        failure: Failure,
    },
}

/// Reports what happened to it; optionally waits at a barrier first (to hold a handler) or
/// panics, or sleeps.
struct Probe {
    id: u64,
    events: Sender<Event>,
    gate: Option<Arc<Barrier>>,
    panic: bool,
    sleep: Duration,
}

impl Task for Probe {
    fn run(&mut self, info: &RunInfo) {
        if let Some(gate) = &self.gate {
            gate.wait();
        }
        if self.panic {
            panic!("probe {} asked to panic", self.id);
        }
        std::thread::sleep(self.sleep);
        let thread = std::thread::current().name().unwrap_or("").to_string();
        let _ = self.events.send(Event::Ran {
            id: self.id,
            info: info.clone(),
            thread,
        });
    }
    fn fail(&mut self, failure: Failure) {
        let _ = self.events.send(Event::Failed {
            id: self.id,
            failure,
        });
    }
}

fn probe(id: u64, events: &Sender<Event>) -> Probe {
    Probe {
        id,
        events: events.clone(),
        gate: None,
        panic: false,
        sleep: Duration::ZERO,
    }
}

fn call(class: CallClass, id: u64, events: &Sender<Event>) -> Call {
    Call::new(class, probe(id, events))
}

fn next(rx: &Receiver<Event>) -> Event {
    rx.recv_timeout(Duration::from_secs(20))
        .expect("an event within 20 s")
}

fn options(kind: ExecutorKind, handlers: usize) -> RpcOptions {
    RpcOptions {
        handler_count: handlers,
        read_ratio: 0.5,
        scan_ratio: 0.5,
        executor: Some(kind),
        priority_handler_count: 2,
        ..RpcOptions::default()
    }
}

/// Waits until no call runs or waits, then gives the handlers time to park.
fn settle(executor: &Executor) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while executor
        .metrics()
        .pools
        .iter()
        .any(|p| p.active_handlers > 0 || p.queued_calls > 0)
    {
        assert!(Instant::now() < deadline, "executor never went idle");
        std::thread::sleep(Duration::from_millis(1));
    }
    std::thread::sleep(Duration::from_millis(50));
}

#[test]
fn every_kind_runs_every_class_on_the_right_pool() {
    for kind in ExecutorKind::ALL {
        let executor = Executor::new(options(kind, 30)).unwrap();
        let (tx, rx) = channel();
        for (id, class) in CallClass::ALL.into_iter().enumerate() {
            executor.dispatch(call(class, id as u64, &tx)).unwrap();
        }
        let mut seen = Vec::new();
        for _ in 0..4 {
            match next(&rx) {
                Event::Ran { id, info, thread } => {
                    let class = CallClass::ALL[id as usize];
                    assert_eq!(info.class, class);
                    let pool = executor.layout().pool_for(class).name;
                    let expected = format!("keel-rpc-{pool}-{}", info.handler);
                    assert_eq!(thread, expected, "{kind:?} {class:?}");
                    seen.push((class, pool));
                }
                other => panic!("{kind:?}: {other:?}"),
            }
        }
        seen.sort();
        let pools: Vec<&str> = seen.iter().map(|(_, p)| *p).collect();
        if kind.is_rw() {
            assert_eq!(pools, ["write", "read", "scan", "priority"], "{kind:?}");
        } else {
            assert_eq!(pools, ["general", "general", "general", "priority"]);
        }
        settle(&executor);
        let m = executor.metrics();
        assert_eq!(m.pools.iter().map(|p| p.completed).sum::<u64>(), 4);
        assert_eq!(m.queued_bytes, 0);
    }
}

#[test]
fn fast_path_hands_calls_to_idle_handlers_and_plain_kinds_queue_them() {
    for kind in ExecutorKind::ALL {
        let executor = Executor::new(options(kind, 8)).unwrap();
        settle(&executor);
        let (tx, rx) = channel();
        executor.dispatch(call(CallClass::Write, 1, &tx)).unwrap();
        let Event::Ran { info, .. } = next(&rx) else {
            panic!("not run")
        };
        assert_eq!(info.handed_off, kind.is_fast_path(), "{kind:?}");
        settle(&executor);
        let pool = executor.metrics();
        let pool = pool.pool(executor.layout().pool_for(CallClass::Write).name);
        let pool = pool.unwrap();
        assert_eq!(pool.handed_off, u64::from(kind.is_fast_path()));
        assert_eq!(pool.queued, u64::from(!kind.is_fast_path()));
        assert_eq!(pool.handoff_time_us.len(), u64::from(kind.is_fast_path()));
    }
}

#[test]
fn idle_stack_is_lifo_so_the_warmest_handler_runs_next() {
    let mut opts = options(ExecutorKind::FastPathBalanced, 4);
    opts.handler_factor = 0.0; // one queue
    let executor = Executor::new(opts).unwrap();
    settle(&executor);
    let (tx, rx) = channel();
    // Sequential calls: each finishes and its handler re-parks on top before the next arrives.
    let mut handlers = Vec::new();
    for id in 0..5 {
        executor.dispatch(call(CallClass::Read, id, &tx)).unwrap();
        let Event::Ran { info, .. } = next(&rx) else {
            panic!()
        };
        assert!(info.handed_off);
        handlers.push(info.handler);
        settle(&executor);
    }
    assert!(
        handlers.iter().all(|&h| h == handlers[0]),
        "always the same, most recently parked handler: {handlers:?}"
    );
}

#[test]
fn overload_refuses_exactly_the_calls_beyond_the_limit_and_runs_the_rest() {
    for kind in ExecutorKind::ALL {
        let mut opts = options(kind, 2);
        opts.handler_factor = 0.0;
        opts.max_queue_length = Some(5);
        opts.priority_handler_count = 0;
        let executor = Executor::new(opts).unwrap();
        settle(&executor);
        let write_handlers = executor.layout().pool_for(CallClass::Write).handlers;
        // Hold every write handler.
        let gate = Arc::new(Barrier::new(write_handlers + 1));
        let (tx, rx) = channel();
        for id in 0..write_handlers as u64 {
            let mut p = probe(1000 + id, &tx);
            p.gate = Some(Arc::clone(&gate));
            executor.dispatch(Call::new(CallClass::Write, p)).unwrap();
        }
        // Wait until they are all running, so the queue is the only place left.
        let deadline = Instant::now() + Duration::from_secs(10);
        while executor.metrics().pools[0].active_handlers < write_handlers {
            assert!(Instant::now() < deadline);
            std::thread::yield_now();
        }
        let mut accepted = Vec::new();
        let mut refused = 0;
        for id in 0..20 {
            match executor.dispatch(call(CallClass::Write, id, &tx).with_size(10)) {
                Ok(()) => accepted.push(id),
                Err(rejected) => {
                    assert!(
                        matches!(rejected.reason, RejectReason::QueueFull { limit: 5, .. }),
                        "{rejected}"
                    );
                    assert_eq!(rejected.call.size(), 10, "the call comes back untouched");
                    refused += 1;
                }
            }
        }
        assert_eq!(accepted, [0, 1, 2, 3, 4], "{kind:?}");
        assert_eq!(refused, 15);
        assert_eq!(
            executor.metrics().queued_bytes,
            50,
            "refused calls hold no bytes"
        );
        gate.wait();
        let mut ran: Vec<u64> = (0..write_handlers + 5)
            .map(|_| match next(&rx) {
                Event::Ran { id, .. } => id,
                other => panic!("{other:?}"),
            })
            .filter(|&id| id < 1000)
            .collect();
        ran.sort();
        assert_eq!(ran, accepted);
        let m = executor.metrics();
        assert_eq!(m.pools[0].rejected_queue_full, 15);
        settle(&executor);
        assert_eq!(executor.metrics().queued_bytes, 0);
    }
}

#[test]
fn byte_and_size_limits_refuse_with_the_reason_and_can_be_lowered_at_runtime() {
    let mut opts = options(ExecutorKind::FastPathRwQueue, 4);
    opts.max_call_size = 1000;
    opts.max_queued_bytes = 5000;
    let executor = Executor::new(opts).unwrap();
    let (tx, rx) = channel();
    let err = executor
        .dispatch(call(CallClass::Write, 1, &tx).with_size(1001))
        .unwrap_err();
    assert_eq!(
        err.reason,
        RejectReason::TooLarge {
            size: 1001,
            limit: 1000
        }
    );
    // Hold a write handler with a 1000-byte call, then lower the byte limit under it.
    let gate = Arc::new(Barrier::new(2));
    let mut held = probe(2, &tx);
    held.gate = Some(Arc::clone(&gate));
    executor
        .dispatch(Call::new(CallClass::Write, held).with_size(1000))
        .unwrap();
    executor.set_max_queued_bytes(1500);
    let err = executor
        .dispatch(call(CallClass::Read, 3, &tx).with_size(600))
        .unwrap_err();
    assert!(
        matches!(
            err.reason,
            RejectReason::TooManyBytes {
                queued_bytes: 1000,
                size: 600,
                limit: 1500
            }
        ),
        "{err}"
    );
    executor
        .dispatch(call(CallClass::Read, 4, &tx).with_size(500))
        .unwrap();
    executor.set_max_call_size(10);
    assert!(
        executor
            .dispatch(call(CallClass::Read, 5, &tx).with_size(11))
            .is_err()
    );
    gate.wait();
    let mut ran = vec![];
    for _ in 0..2 {
        if let Event::Ran { id, .. } = next(&rx) {
            ran.push(id);
        }
    }
    ran.sort();
    assert_eq!(ran, [2, 4]);
    settle(&executor);
    let m = executor.metrics();
    assert_eq!((m.rejected_too_large, m.rejected_too_many_bytes), (2, 1));
    // Queue-length limits change online up to the fixed capacity (max(soft, 250)).
    executor.set_max_queue_length(250).unwrap();
    assert_eq!(
        executor.set_max_queue_length(251),
        Err(ConfigError::AboveHardLimit {
            pool: "write",
            requested: 251,
            capacity: 250
        })
    );
    executor.set_max_queue_length(0).unwrap();
    let err = executor
        .dispatch(call(CallClass::Write, 6, &tx))
        .unwrap_err();
    assert!(
        matches!(err.reason, RejectReason::QueueFull { limit: 0, .. }),
        "a limit of 0 refuses even a hand-off (HBASE-23744)"
    );
}

#[test]
fn a_call_past_its_deadline_is_answered_and_never_run() {
    let executor = Executor::new(options(ExecutorKind::RwQueue, 4)).unwrap();
    let (tx, rx) = channel();
    let past = Instant::now() - Duration::from_millis(1);
    executor
        .dispatch(call(CallClass::Read, 1, &tx).with_deadline(past))
        .unwrap();
    match next(&rx) {
        Event::Failed {
            id: 1,
            failure: Failure::TimedOut { .. },
        } => {}
        other => panic!("{other:?}"),
    }
    let future = Instant::now() + Duration::from_secs(60);
    executor
        .dispatch(call(CallClass::Read, 2, &tx).with_deadline(future))
        .unwrap();
    assert!(matches!(next(&rx), Event::Ran { id: 2, .. }));
    assert_eq!(executor.metrics().pool("read").unwrap().timed_out, 1);
}

#[test]
fn a_panicking_call_is_answered_and_its_handler_keeps_serving() {
    let mut opts = options(ExecutorKind::Balanced, 1);
    opts.priority_handler_count = 0;
    let executor = Executor::new(opts).unwrap();
    let (tx, rx) = channel();
    let mut bad = probe(1, &tx);
    bad.panic = true;
    executor
        .dispatch(Call::new(CallClass::Write, bad).with_size(7))
        .unwrap();
    match next(&rx) {
        Event::Failed {
            id: 1,
            failure: Failure::Panicked(message),
        } => assert_eq!(message, "probe 1 asked to panic"),
        other => panic!("{other:?}"),
    }
    executor.dispatch(call(CallClass::Write, 2, &tx)).unwrap();
    assert!(matches!(next(&rx), Event::Ran { id: 2, info, .. } if info.handler == 0));
    settle(&executor);
    let m = executor.metrics();
    assert_eq!(m.pools[0].panicked, 1);
    assert_eq!(m.queued_bytes, 0);
}

#[test]
fn codel_sheds_stale_calls_once_the_queue_is_overloaded() {
    let mut opts = options(ExecutorKind::FastPathBalanced, 1);
    opts.queue_type = QueueType::Codel;
    opts.max_queue_length = Some(100);
    opts.priority_handler_count = 0;
    opts.codel.target_delay = Duration::from_millis(1);
    opts.codel.interval = Duration::from_millis(20);
    let executor = Executor::new(opts).unwrap();
    settle(&executor);
    let (tx, rx) = channel();
    let gate = Arc::new(Barrier::new(2));
    let mut held = probe(100, &tx);
    held.gate = Some(Arc::clone(&gate));
    executor.dispatch(Call::new(CallClass::Read, held)).unwrap();
    let stale = Instant::now() - Duration::from_millis(50);
    for id in 0..20 {
        let mut p = probe(id, &tx);
        if id == 0 {
            p.sleep = Duration::from_millis(30);
        }
        executor
            .dispatch(Call::new(CallClass::Read, p).received_at(stale))
            .unwrap();
    }
    gate.wait();
    let (mut ran, mut dropped) = (0, 0);
    for _ in 0..21 {
        match next(&rx) {
            Event::Ran { .. } => ran += 1,
            Event::Failed {
                failure: Failure::Dropped { waited },
                ..
            } => {
                assert!(waited >= Duration::from_millis(50));
                dropped += 1;
            }
            other => panic!("{other:?}"),
        }
    }
    // The held call; the first take (starts the minimum) runs 30 ms; the first take of the next
    // interval finds the last minimum (50 ms) over target, so the queue is overloaded, and runs;
    // then, within that interval, every call older than 2 × target is shed.
    assert_eq!((ran, dropped), (3, 18));
    settle(&executor);
    assert_eq!(executor.metrics().pools[0].dropped, 18);
}

#[test]
fn shutdown_drain_runs_everything_queued_and_fail_queued_answers_it() {
    for mode in [ShutdownMode::Drain, ShutdownMode::FailQueued] {
        for kind in ExecutorKind::ALL {
            let mut opts = options(kind, 2);
            opts.priority_handler_count = 0;
            let executor = Executor::new(opts).unwrap();
            let (tx, rx) = channel();
            let gate = Arc::new(Barrier::new(2));
            let mut held = probe(100, &tx);
            held.gate = Some(Arc::clone(&gate));
            executor
                .dispatch(Call::new(CallClass::Write, held))
                .unwrap();
            while executor.metrics().pools[0].active_handlers == 0 {
                std::thread::yield_now();
            }
            let mut accepted = 0;
            for id in 0..10 {
                if executor.dispatch(call(CallClass::Write, id, &tx)).is_ok() {
                    accepted += 1;
                }
            }
            let releaser = std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(20));
                gate.wait();
            });
            executor.shutdown(mode);
            releaser.join().unwrap();
            let err = executor
                .dispatch(call(CallClass::Read, 99, &tx))
                .unwrap_err();
            assert_eq!(err.reason, RejectReason::ShuttingDown);
            drop((err, tx)); // the refused call holds a sender too
            let events: Vec<Event> = rx.iter().collect();
            let ran = events
                .iter()
                .filter(|e| matches!(e, Event::Ran { .. }))
                .count();
            let failed = events
                .iter()
                .filter(|e| {
                    matches!(
                        e,
                        Event::Failed {
                            failure: Failure::ShuttingDown,
                            ..
                        }
                    )
                })
                .count();
            assert_eq!(ran + failed, accepted + 1, "{kind:?} {mode:?}: {events:?}");
            let failed_at_shutdown: u64 = executor
                .metrics()
                .pools
                .iter()
                .map(|p| p.failed_at_shutdown)
                .sum();
            assert_eq!(failed as u64, failed_at_shutdown);
            assert!(ran >= 1, "the held call finishes");
            if mode == ShutdownMode::Drain {
                assert_eq!(failed, 0);
            }
            assert_eq!(executor.metrics().queued_bytes, 0);
        }
    }
}

#[test]
fn bad_configurations_are_refused_with_the_key() {
    let deadline_fast = RpcOptions {
        queue_type: QueueType::Deadline,
        executor: Some(ExecutorKind::FastPathRwQueue),
        read_ratio: 0.5,
        ..RpcOptions::default()
    };
    assert_eq!(
        Executor::new(deadline_fast).unwrap_err(),
        ConfigError::DeadlineWithFastPath("FastPathRwQueue")
    );
    let bad_ratio = RpcOptions {
        read_ratio: 1.5,
        ..RpcOptions::default()
    };
    assert!(matches!(
        Executor::new(bad_ratio).unwrap_err(),
        ConfigError::BadRatio {
            key: "hbase.ipc.server.callqueue.read.ratio",
            ..
        }
    ));
    let none = RpcOptions {
        handler_count: 0,
        ..RpcOptions::default()
    };
    assert_eq!(
        Executor::new(none).unwrap_err(),
        ConfigError::TooFewHandlers
    );
    // HBase's choice of executor from the options.
    let pick = |read_ratio, queue_type| {
        RpcOptions {
            read_ratio,
            queue_type,
            ..RpcOptions::default()
        }
        .executor_kind()
    };
    assert_eq!(pick(0.0, QueueType::Fifo), ExecutorKind::FastPathBalanced);
    assert_eq!(pick(0.5, QueueType::Codel), ExecutorKind::FastPathRwQueue);
    assert_eq!(pick(0.0, QueueType::Deadline), ExecutorKind::Balanced);
    assert_eq!(pick(0.5, QueueType::Deadline), ExecutorKind::RwQueue);
}

#[test]
fn deadline_queues_run_short_calls_before_long_scans() {
    let mut opts = options(ExecutorKind::RwQueue, 2);
    opts.queue_type = QueueType::Deadline;
    opts.scan_ratio = 0.0; // scans share the single read handler
    opts.priority_handler_count = 0;
    let executor = Executor::new(opts).unwrap();
    let (tx, rx) = channel();
    let gate = Arc::new(Barrier::new(2));
    let mut held = probe(100, &tx);
    held.gate = Some(Arc::clone(&gate));
    executor.dispatch(Call::new(CallClass::Read, held)).unwrap();
    while executor.metrics().pool("read").unwrap().active_handlers == 0 {
        std::thread::yield_now();
    }
    let t = Instant::now();
    executor
        .dispatch(
            call(CallClass::Scan, 1, &tx)
                .with_scan_vtime(400)
                .received_at(t),
        )
        .unwrap();
    executor
        .dispatch(call(CallClass::Read, 2, &tx).received_at(t))
        .unwrap();
    gate.wait();
    let order: Vec<u64> = (0..3)
        .map(|_| match next(&rx) {
            Event::Ran { id, .. } => id,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        order,
        [100, 2, 1],
        "the scan is deferred by sqrt(400) = 20 ms"
    );
}
