//! The closed-loop load: client threads issuing 50% writes, 25% gets and 25% scans whose
//! service times model the region, against an executor or a plain channel of workers.

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use keel_rpc::{Call, CallClass, Executor, ExecutorKind, Failure, RpcOptions, RunInfo, Task};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Operation classes as the seed's YCSB report names them.
pub(crate) const OPS: [&str; 3] = ["write", "get", "scan"];

/// How a handler spends a call's service time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Handlers sleep as if waiting on I/O: a write waits on a WAL sync, a get on a block read,
    /// a scan on several; each with a little CPU first.
    Io,
    /// Handlers spin on the CPU for the whole service time.
    Cpu,
}

impl Mode {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Mode::Io => "io",
            Mode::Cpu => "cpu",
        }
    }

    /// (CPU spin, sleep) for each operation.
    pub(crate) fn service(self, op: usize) -> (Duration, Duration) {
        let us = Duration::from_micros;
        match (self, op) {
            (Mode::Io, 0) => (us(5), us(300)),
            (Mode::Io, 1) => (us(5), us(150)),
            (Mode::Io, _) => (us(10), us(600)),
            (Mode::Cpu, 0) => (us(30), Duration::ZERO),
            (Mode::Cpu, 1) => (us(15), Duration::ZERO),
            (Mode::Cpu, _) => (us(60), Duration::ZERO),
        }
    }
}

/// What executes the calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Design {
    Executor(ExecutorKind),
    /// One shared bounded crossbeam channel feeding N worker threads.
    Channel,
}

impl Design {
    pub(crate) const ALL: [Design; 5] = [
        Design::Executor(ExecutorKind::RwQueue),
        Design::Executor(ExecutorKind::FastPathRwQueue),
        Design::Executor(ExecutorKind::Balanced),
        Design::Executor(ExecutorKind::FastPathBalanced),
        Design::Channel,
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Design::Executor(kind) => kind.name(),
            Design::Channel => "Channel",
        }
    }
}

#[derive(Debug, Default, Clone, Copy)]
struct Done {
    queue: Duration,
    failed: bool,
}

/// A client's single outstanding call: closed loop, so one slot per client, reused.
#[derive(Default)]
struct Completion {
    done: Mutex<Option<Done>>,
    ready: Condvar,
}

impl Completion {
    fn complete(&self, done: Done) {
        *self.done.lock().expect("no panics hold this lock") = Some(done);
        self.ready.notify_one();
    }

    fn wait(&self) -> Done {
        let mut done = self.done.lock().expect("no panics hold this lock");
        loop {
            if let Some(d) = done.take() {
                return d;
            }
            done = self.ready.wait(done).expect("no panics hold this lock");
        }
    }
}

struct Op {
    op: usize,
    mode: Mode,
    completion: Arc<Completion>,
}

impl Op {
    fn serve(&self, queue: Duration) {
        let (cpu, sleep) = self.mode.service(self.op);
        let end = Instant::now() + cpu;
        while Instant::now() < end {
            std::hint::spin_loop();
        }
        if !sleep.is_zero() {
            std::thread::sleep(sleep);
        }
        self.completion.complete(Done {
            queue,
            failed: false,
        });
    }
}

impl Task for Op {
    fn run(&mut self, info: &RunInfo) {
        self.serve(info.queue_time);
    }
    fn fail(&mut self, _: Failure) {
        self.completion.complete(Done {
            queue: Duration::ZERO,
            failed: true,
        });
    }
}

/// Per-operation latency histograms (µs) and a queue-time series.
pub(crate) struct Recorder {
    pub(crate) queue: Vec<Histogram<u64>>,
    pub(crate) total: Vec<Histogram<u64>>,
    /// (bucket index, op, queue µs)
    pub(crate) series: Vec<(u32, u8, u32)>,
    pub(crate) ops: u64,
    pub(crate) rejected: u64,
    pub(crate) failed: u64,
}

fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 600_000_000, 3).expect("constant bounds")
}

impl Recorder {
    pub(crate) fn new() -> Recorder {
        Recorder {
            queue: (0..3).map(|_| histogram()).collect(),
            total: (0..3).map(|_| histogram()).collect(),
            series: Vec::new(),
            ops: 0,
            rejected: 0,
            failed: 0,
        }
    }

    pub(crate) fn merge(&mut self, other: Recorder) {
        for i in 0..3 {
            self.queue[i].add(&other.queue[i]).expect("same bounds");
            self.total[i].add(&other.total[i]).expect("same bounds");
        }
        self.series.extend(other.series);
        self.ops += other.ops;
        self.rejected += other.rejected;
        self.failed += other.failed;
    }
}

/// Unrecorded start of every run.
pub(crate) const WARMUP: Duration = Duration::from_millis(300);

/// Length of one time-series bucket.
pub(crate) const BUCKET: Duration = Duration::from_millis(100);

/// The outcome of one run of one design.
pub(crate) struct RunResult {
    pub(crate) recorder: Recorder,
    pub(crate) elapsed: Duration,
    /// Executor only: fast-path hand-offs' dispatch-to-start p50 (µs) and their share of calls.
    pub handoff_p50_us: Option<f64>,
    pub(crate) handoff_share: Option<f64>,
}

enum Target {
    Executor(Box<Executor>),
    Channel(
        crossbeam_channel::Sender<(Op, Instant)>,
        Vec<std::thread::JoinHandle<()>>,
    ),
}

impl Target {
    fn start(design: Design, options: &RpcOptions) -> Target {
        match design {
            Design::Executor(kind) => {
                let options = RpcOptions {
                    executor: Some(kind),
                    ..options.clone()
                };
                Target::Executor(Box::new(
                    Executor::new(options).expect("valid bench options"),
                ))
            }
            Design::Channel => {
                let (tx, rx) = crossbeam_channel::bounded::<(Op, Instant)>(10_000);
                let workers = (0..options.handler_count)
                    .map(|i| {
                        let rx = rx.clone();
                        std::thread::Builder::new()
                            .name(format!("channel-worker-{i}"))
                            .spawn(move || {
                                for (op, dispatched) in rx {
                                    op.serve(dispatched.elapsed());
                                }
                            })
                            .expect("spawn worker")
                    })
                    .collect();
                Target::Channel(tx, workers)
            }
        }
    }

    /// Hands `op` over; false if it was refused (the client backs off and retries).
    fn submit(&self, op: Op, class: CallClass, now: Instant) -> bool {
        match self {
            Target::Executor(executor) => executor
                .dispatch(Call::new(class, op).received_at(now).with_size(100))
                .is_ok(),
            Target::Channel(tx, _) => tx.try_send((op, now)).is_ok(),
        }
    }

    fn finish(self) -> (Option<f64>, Option<f64>) {
        match self {
            Target::Executor(executor) => {
                let metrics = executor.metrics();
                executor.shutdown(keel_rpc::ShutdownMode::Drain);
                let mut handoff = histogram();
                let (mut handed, mut dispatched) = (0u64, 0u64);
                for pool in &metrics.pools {
                    handoff.add(&pool.handoff_time_us).expect("bounds");
                    handed += pool.handed_off;
                    dispatched += pool.dispatched;
                }
                let p50 = (!handoff.is_empty()).then(|| handoff.value_at_quantile(0.5) as f64);
                (p50, Some(handed as f64 / dispatched.max(1) as f64))
            }
            Target::Channel(tx, workers) => {
                drop(tx);
                for w in workers {
                    w.join().expect("worker");
                }
                (None, None)
            }
        }
    }
}

/// Runs `clients` closed-loop clients against `design` for `duration`.
pub(crate) fn run(
    design: Design,
    options: &RpcOptions,
    mode: Mode,
    clients: usize,
    duration: Duration,
    seed: u64,
) -> RunResult {
    let target = Target::start(design, options);
    // Let every handler reach its idle state before the clock starts.
    std::thread::sleep(Duration::from_millis(200));
    // Clients start together; the first WARMUP of each run (threads spinning up, handlers
    // first woken) is run but not recorded, so every design is measured in its steady state.
    let start = Instant::now();
    let end = start + WARMUP + duration;
    let recorders: Vec<Recorder> = std::thread::scope(|scope| {
        let target = &target;
        let handles: Vec<_> = (0..clients)
            .map(|c| {
                scope.spawn(move || client(target, mode, start, end, seed ^ (c as u64 * 7919)))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("client"))
            .collect()
    });
    let elapsed = start.elapsed().saturating_sub(WARMUP);
    let (handoff_p50_us, handoff_share) = target.finish();
    let mut recorder = Recorder::new();
    for r in recorders {
        recorder.merge(r);
    }
    RunResult {
        recorder,
        elapsed,
        handoff_p50_us,
        handoff_share,
    }
}

fn client(target: &Target, mode: Mode, start: Instant, end: Instant, seed: u64) -> Recorder {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut recorder = Recorder::new();
    let completion = Arc::new(Completion::default());
    while Instant::now() < end {
        let roll: f64 = rng.random();
        let (op, class) = if roll < 0.5 {
            (0, CallClass::Write)
        } else if roll < 0.75 {
            (1, CallClass::Read)
        } else {
            (2, CallClass::Scan)
        };
        let issued = Instant::now();
        let done = loop {
            let call = Op {
                op,
                mode,
                completion: Arc::clone(&completion),
            };
            let now = Instant::now();
            if target.submit(call, class, now) {
                break completion.wait();
            }
            recorder.rejected += 1;
            std::thread::sleep(Duration::from_millis(1));
        };
        let total = issued.elapsed();
        if issued < start + WARMUP {
            continue;
        }
        if done.failed {
            recorder.failed += 1;
            continue;
        }
        let q = done.queue.as_micros().max(1) as u64;
        recorder.queue[op].saturating_record(q);
        recorder.total[op].saturating_record(total.as_micros().max(1) as u64);
        let since = issued.duration_since(start + WARMUP);
        let bucket = (since.as_nanos() / BUCKET.as_nanos()) as u32;
        recorder
            .series
            .push((bucket, op as u8, q.min(u32::MAX as u64) as u32));
        recorder.ops += 1;
    }
    recorder
}

/// (CPU spin, sleep) of `op` in `mode`.
pub(crate) fn service(mode: Mode, op: usize) -> (Duration, Duration) {
    mode.service(op)
}

/// Median time from notifying a condition variable to the sleeping thread running, with
/// nothing else on the machine: the floor under any hand-off to a parked thread.
pub(crate) fn raw_wake_p50_us(rounds: usize) -> f64 {
    struct Slot {
        sent: Mutex<Option<Instant>>,
        ready: Condvar,
    }
    let slot = Arc::new(Slot {
        sent: Mutex::new(None),
        ready: Condvar::new(),
    });
    let (tx, rx) = crossbeam_channel::bounded::<Duration>(1);
    let sleeper = {
        let slot = Arc::clone(&slot);
        std::thread::spawn(move || {
            loop {
                let mut sent = slot.sent.lock().expect("no panics hold this lock");
                let at = loop {
                    match sent.take() {
                        Some(at) => break at,
                        None => sent = slot.ready.wait(sent).expect("no panics hold this lock"),
                    }
                };
                drop(sent);
                if tx.send(at.elapsed()).is_err() {
                    return;
                }
            }
        })
    };
    let mut samples = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        // Let the sleeper reach its wait before the next wake-up.
        std::thread::sleep(Duration::from_micros(50));
        *slot.sent.lock().expect("no panics hold this lock") = Some(Instant::now());
        slot.ready.notify_one();
        samples.push(rx.recv().expect("sleeper alive"));
    }
    drop(rx);
    *slot.sent.lock().expect("no panics hold this lock") = Some(Instant::now());
    slot.ready.notify_one();
    let _ = sleeper.join();
    samples.sort();
    samples[samples.len() / 2].as_secs_f64() * 1e6
}
