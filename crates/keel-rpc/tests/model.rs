//! Shuttle models of the executor (`cargo xtask model rpc`): real `Executor`s, whose locks,
//! condition variables and threads are shuttle's under `--cfg shuttle`, explored by the random
//! and PCT schedulers. Every model waits for its calls on a condition variable, so a call left
//! in a queue while every handler is parked is a deadlock that shuttle reports. The last model
//! shows that this check has teeth: HBase's ordering (poll, then push onto the idle stack outside
//! the queue's lock) strands a call, and shuttle finds it.

#![cfg(shuttle)]

use std::collections::VecDeque;

use keel_rpc::{
    Call, CallClass, Executor, ExecutorKind, Failure, RpcOptions, RunInfo, ShutdownMode, Task,
};
use keel_sync::{Arc, Condvar, Mutex};
use shuttle::thread;

fn iterations() -> usize {
    keel_testkit::model_iterations(1_000)
}

/// Runs `model` under shuttle's random scheduler and its PCT scheduler (depth 3).
fn explore(model: impl Fn() + Send + Sync + 'static) {
    let model = std::sync::Arc::new(model);
    let random = std::sync::Arc::clone(&model);
    shuttle::check_random(move || random(), iterations());
    shuttle::check_pct(move || model(), iterations(), 3);
}

/// How often each call ran and failed, and a condition variable to wait for totals.
#[derive(Default)]
struct Ledger {
    state: Mutex<(Vec<u32>, Vec<u32>)>,
    changed: Condvar,
}

impl Ledger {
    fn new(calls: usize) -> Arc<Ledger> {
        Arc::new(Ledger {
            state: Mutex::new((vec![0; calls], vec![0; calls])),
            changed: Condvar::new(),
        })
    }

    fn wait_resolved(&self, count: usize) {
        let mut state = self.state.lock();
        while state.0.iter().chain(&state.1).sum::<u32>() < count as u32 {
            self.changed.wait(&mut state);
        }
    }
}

struct Counted {
    id: usize,
    ledger: Arc<Ledger>,
}

impl Task for Counted {
    fn run(&mut self, _: &RunInfo) {
        self.ledger.state.lock().0[self.id] += 1;
        self.ledger.changed.notify_all();
    }
    fn fail(&mut self, _: Failure) {
        self.ledger.state.lock().1[self.id] += 1;
        self.ledger.changed.notify_all();
    }
}

fn options(kind: ExecutorKind, handlers: usize, factor: f64) -> RpcOptions {
    RpcOptions {
        handler_count: handlers,
        handler_factor: factor,
        read_ratio: 0.5,
        executor: Some(kind),
        priority_handler_count: 0,
        ..RpcOptions::default()
    }
}

/// Two dispatchers send two calls each; every call must run exactly once, with no shutdown to
/// rescue a stranded one.
fn every_call_runs_once(kind: ExecutorKind, handlers: usize, factor: f64) {
    let executor = Arc::new(Executor::new(options(kind, handlers, factor)).expect("model step"));
    let ledger = Ledger::new(4);
    let dispatchers: Vec<_> = (0..2)
        .map(|d| {
            let executor = Arc::clone(&executor);
            let ledger = Arc::clone(&ledger);
            thread::spawn(move || {
                for i in 0..2 {
                    let id = d * 2 + i;
                    let class = if id % 2 == 0 {
                        CallClass::Write
                    } else {
                        CallClass::Read
                    };
                    let task = Counted {
                        id,
                        ledger: Arc::clone(&ledger),
                    };
                    executor
                        .dispatch(Call::new(class, task))
                        .expect("model step");
                }
            })
        })
        .collect();
    for d in dispatchers {
        d.join().expect("model step");
    }
    ledger.wait_resolved(4);
    {
        let state = ledger.state.lock();
        assert_eq!(state.0, [1, 1, 1, 1], "each call ran exactly once");
        assert_eq!(state.1, [0, 0, 0, 0]);
    }
    executor.shutdown(ShutdownMode::Drain);
}

#[test]
fn fast_path_balanced_one_queue() {
    let run = || every_call_runs_once(ExecutorKind::FastPathBalanced, 2, 0.0);
    explore(run);
}

#[test]
fn fast_path_balanced_two_queues() {
    let run = || every_call_runs_once(ExecutorKind::FastPathBalanced, 2, 1.0);
    explore(run);
}

#[test]
fn fast_path_rw_queue() {
    let run = || every_call_runs_once(ExecutorKind::FastPathRwQueue, 2, 0.0);
    explore(run);
}

#[test]
fn plain_executors_wake_their_handlers() {
    let run = || {
        every_call_runs_once(ExecutorKind::Balanced, 2, 1.0);
        every_call_runs_once(ExecutorKind::RwQueue, 2, 0.0);
    };
    explore(run);
}

/// Dispatchers race a shutdown: every accepted call is run or failed exactly once by the time
/// `shutdown` returns, and no refused call is touched.
fn shutdown_loses_nothing(kind: ExecutorKind, mode: ShutdownMode) {
    let executor = Arc::new(Executor::new(options(kind, 2, 0.0)).expect("model step"));
    let ledger = Ledger::new(4);
    let dispatchers: Vec<_> = (0..2)
        .map(|d| {
            let executor = Arc::clone(&executor);
            let ledger = Arc::clone(&ledger);
            thread::spawn(move || {
                let mut accepted = Vec::new();
                for i in 0..2 {
                    let id = d * 2 + i;
                    let task = Counted {
                        id,
                        ledger: Arc::clone(&ledger),
                    };
                    if executor.dispatch(Call::new(CallClass::Write, task)).is_ok() {
                        accepted.push(id);
                    }
                }
                accepted
            })
        })
        .collect();
    executor.shutdown(mode);
    let mut accepted = Vec::new();
    for d in dispatchers {
        accepted.extend(d.join().expect("model step"));
    }
    let state = ledger.state.lock();
    for id in 0..4 {
        let resolved = state.0[id] + state.1[id];
        let expected = u32::from(accepted.contains(&id));
        assert_eq!(
            resolved, expected,
            "call {id}: runs {:?} fails {:?}",
            state.0, state.1
        );
    }
    if mode == ShutdownMode::Drain {
        assert!(state.1.iter().all(|&f| f == 0), "drain fails nothing");
    }
}

#[test]
fn shutdown_drain_races_dispatch() {
    for kind in [ExecutorKind::FastPathBalanced, ExecutorKind::Balanced] {
        let run = move || shutdown_loses_nothing(kind, ShutdownMode::Drain);
        explore(run);
    }
}

#[test]
fn shutdown_fail_queued_races_dispatch() {
    for kind in [ExecutorKind::FastPathRwQueue, ExecutorKind::RwQueue] {
        let run = move || shutdown_loses_nothing(kind, ShutdownMode::FailQueued);
        explore(run);
    }
}

/// HBase's fast-path ordering, reduced to its core: a handler polls its queue, and only after
/// releasing it pushes itself onto the idle stack. A dispatcher that finds the stack empty in
/// that window queues the call, and the handler then parks with a call in its own queue.
fn hbase_ordering_model() {
    struct Shared {
        queue: Mutex<VecDeque<u32>>,
        idle: Mutex<Vec<usize>>,
        slot: Mutex<Option<u32>>,
        wake: Condvar,
        done: Mutex<u32>,
        done_changed: Condvar,
    }
    let shared = Arc::new(Shared {
        queue: Mutex::new(VecDeque::new()),
        idle: Mutex::new(Vec::new()),
        slot: Mutex::new(None),
        wake: Condvar::new(),
        done: Mutex::new(0),
        done_changed: Condvar::new(),
    });
    let finish = |s: &Shared| {
        *s.done.lock() += 1;
        s.done_changed.notify_all();
    };
    let handler = {
        let s = Arc::clone(&shared);
        thread::spawn(move || {
            loop {
                let polled = s.queue.lock().pop_front();
                if polled.is_some() {
                    finish(&s);
                    continue;
                }
                s.idle.lock().push(0); // the window: the queue's lock is not held here
                let mut slot = s.slot.lock();
                while slot.is_none() {
                    s.wake.wait(&mut slot);
                }
                if slot.take() == Some(u32::MAX) {
                    return;
                }
                drop(slot);
                finish(&s);
            }
        })
    };
    let parked = shared.idle.lock().pop();
    match parked {
        Some(_) => {
            *shared.slot.lock() = Some(1);
            shared.wake.notify_one();
        }
        None => shared.queue.lock().push_back(1),
    }
    let mut done = shared.done.lock();
    while *done < 1 {
        shared.done_changed.wait(&mut done);
    }
    drop(done);
    // Stop the handler (it parks again after the call).
    loop {
        if shared.idle.lock().pop().is_some() {
            *shared.slot.lock() = Some(u32::MAX);
            shared.wake.notify_one();
            break;
        }
        thread::yield_now();
    }
    handler.join().expect("model step");
}

#[test]
#[should_panic(expected = "deadlock")]
fn the_model_finds_hbases_poll_push_window() {
    shuttle::check_random(hbase_ordering_model, 10_000);
}
