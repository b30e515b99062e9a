//! Randomized stress on real threads with an oracle: many dispatchers, random classes, sizes,
//! deadlines and occasional panics against every executor kind and queue type, small limits so
//! that refusals happen, and a shutdown racing the last dispatches. Oracle: every accepted call is
//! answered exactly once (run, or failed with a reason that fits it), every refused call is never
//! answered, and the executor's counters and byte gauge agree with what the tasks saw.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{Duration, Instant};

use keel_rpc::{
    Call, CallClass, Executor, ExecutorKind, Failure, QueueType, RpcOptions, RunInfo, ShutdownMode,
    Task,
};
use rand::{Rng, SeedableRng, rngs::StdRng};

const RAN: u8 = 1;
const FAILED: u8 = 2;
const PANICKED: u8 = 4;

struct Tracked {
    id: usize,
    outcomes: Arc<Vec<AtomicU8>>,
    panic: bool,
    spin: Duration,
}

impl Task for Tracked {
    fn run(&mut self, _: &RunInfo) {
        let end = Instant::now() + self.spin;
        while Instant::now() < end {
            std::hint::spin_loop();
        }
        self.outcomes[self.id].fetch_add(RAN, Ordering::SeqCst);
        if self.panic {
            panic!("stress panic {}", self.id);
        }
    }
    fn fail(&mut self, failure: Failure) {
        let bit = match failure {
            Failure::Panicked(_) => PANICKED,
            _ => FAILED,
        };
        self.outcomes[self.id].fetch_add(bit, Ordering::SeqCst);
    }
}

fn round(kind: ExecutorKind, queue_type: QueueType, mode: ShutdownMode, rng: &mut StdRng) {
    const DISPATCHERS: usize = 6;
    const PER: usize = 600;
    let options = RpcOptions {
        handler_count: rng.random_range(2..12),
        handler_factor: rng.random_range(0.0..0.6),
        read_ratio: 0.5,
        scan_ratio: rng.random_range(0.0..0.6),
        queue_type,
        executor: Some(kind),
        max_queue_length: Some(rng.random_range(1..60)),
        max_queued_bytes: 150_000,
        max_call_size: 5_000,
        priority_handler_count: rng.random_range(0..3),
        ..RpcOptions::default()
    };
    let executor = Arc::new(Executor::new(options).expect("valid options"));
    let outcomes: Arc<Vec<AtomicU8>> =
        Arc::new((0..DISPATCHERS * PER).map(|_| AtomicU8::new(0)).collect());
    let seeds: Vec<u64> = (0..DISPATCHERS).map(|_| rng.random()).collect();
    let accepted: Vec<Vec<(usize, bool)>> = std::thread::scope(|scope| {
        let handles: Vec<_> = seeds
            .iter()
            .enumerate()
            .map(|(d, &seed)| {
                let executor = Arc::clone(&executor);
                let outcomes = Arc::clone(&outcomes);
                scope.spawn(move || {
                    let mut rng = StdRng::seed_from_u64(seed);
                    let mut accepted = Vec::new();
                    for i in 0..PER {
                        let id = d * PER + i;
                        let class = CallClass::ALL[rng.random_range(0..4)];
                        let panic = rng.random_ratio(1, 50);
                        let task = Tracked {
                            id,
                            outcomes: Arc::clone(&outcomes),
                            panic,
                            spin: Duration::from_micros(rng.random_range(0..30)),
                        };
                        let mut call = Call::new(class, task).with_size(rng.random_range(0..5_500));
                        if rng.random_ratio(1, 10) {
                            call = call.with_deadline(Instant::now() + Duration::from_micros(50));
                        }
                        if let Ok(()) = executor.dispatch(call) {
                            accepted.push((id, panic));
                        }
                        if rng.random_ratio(1, 100) {
                            std::thread::sleep(Duration::from_micros(200));
                        }
                    }
                    accepted
                })
            })
            .collect();
        // Shut down while the dispatchers are still going, most of the time.
        std::thread::sleep(Duration::from_millis(rng.random_range(0..40)));
        executor.shutdown(mode);
        handles
            .into_iter()
            .map(|h| h.join().expect("dispatcher"))
            .collect()
    });
    // Dispatches that lost the race with shutdown were refused; every accepted one is answered.
    let accepted: Vec<(usize, bool)> = accepted.into_iter().flatten().collect();
    let mut is_accepted = vec![None; DISPATCHERS * PER];
    for &(id, panic) in &accepted {
        is_accepted[id] = Some(panic);
    }
    let mut ran = 0u64;
    for (id, outcome) in outcomes.iter().enumerate() {
        let outcome = outcome.load(Ordering::SeqCst);
        match is_accepted[id] {
            None => assert_eq!(outcome, 0, "refused call {id} was answered"),
            Some(false) => {
                assert!(
                    outcome == RAN || outcome == FAILED,
                    "call {id}: {outcome:#b}"
                );
                ran += u64::from(outcome == RAN);
            }
            Some(true) => assert!(
                outcome == RAN | PANICKED || outcome == FAILED,
                "panicking call {id}: {outcome:#b}"
            ),
        }
    }
    let m = executor.metrics();
    assert_eq!(m.queued_bytes, 0, "every byte released");
    let dispatched: u64 = m.pools.iter().map(|p| p.dispatched).sum();
    assert_eq!(dispatched, accepted.len() as u64);
    let completed: u64 = m.pools.iter().map(|p| p.completed).sum();
    let panicked: u64 = m.pools.iter().map(|p| p.panicked).sum();
    assert_eq!(completed - panicked, ran, "{kind:?} {queue_type:?}");
    if mode == ShutdownMode::Drain {
        let failed_at_shutdown: u64 = m.pools.iter().map(|p| p.failed_at_shutdown).sum();
        assert_eq!(failed_at_shutdown, 0);
    }
}

#[test]
fn every_accepted_call_is_answered_once_and_no_refused_one_is() {
    let mut rng = keel_testkit::rng();
    let rounds = if cfg!(debug_assertions) { 1 } else { 3 };
    for _ in 0..rounds {
        for kind in ExecutorKind::ALL {
            for queue_type in [QueueType::Fifo, QueueType::Deadline, QueueType::Codel] {
                if queue_type == QueueType::Deadline && kind.is_fast_path() {
                    continue;
                }
                for mode in [ShutdownMode::Drain, ShutdownMode::FailQueued] {
                    round(kind, queue_type, mode, &mut rng);
                }
            }
        }
    }
}
