//! An executor in front of a toy service, on keel-rpc alone: a counter service whose
//! increments are write calls and whose reads are read calls, dispatched by eight client
//! threads through an `Executor` with HBase's read/write split and the fast-path hand-off.
//! Every call is answered; the final count must equal the increments sent, and every read
//! must see a count no older than the client's own last increment.
//!
//! `cargo run -p keel-rpc --example toy_service`

#![expect(clippy::print_stdout, reason = "an example reports what it did")]

use std::error::Error;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, mpsc};

use keel_rpc::{
    Call, CallClass, Executor, ExecutorKind, Failure, RpcOptions, RunInfo, ShutdownMode, Task,
};

/// The service: one counter.
#[derive(Default)]
struct Counter(AtomicU64);

/// A call of the toy protocol, with where its reply goes.
struct Request {
    service: Arc<Counter>,
    increment: bool,
    reply: mpsc::Sender<Result<u64, Failure>>,
}

impl Task for Request {
    fn run(&mut self, _info: &RunInfo) {
        let value = if self.increment {
            self.service.0.fetch_add(1, Ordering::SeqCst) + 1
        } else {
            self.service.0.load(Ordering::SeqCst)
        };
        let _ = self.reply.send(Ok(value));
    }

    fn fail(&mut self, failure: Failure) {
        let _ = self.reply.send(Err(failure));
    }
}

fn main() -> Result<(), Box<dyn Error>> {
    let executor = Executor::new(RpcOptions {
        handler_count: 8,
        read_ratio: 0.5,
        executor: Some(ExecutorKind::FastPathRwQueue),
        ..RpcOptions::default()
    })?;
    let service = Arc::new(Counter::default());
    const CLIENTS: u64 = 8;
    const CALLS: u64 = 2_000;
    std::thread::scope(|s| -> Result<(), String> {
        let clients: Vec<_> = (0..CLIENTS)
            .map(|_| {
                let (executor, service) = (&executor, Arc::clone(&service));
                s.spawn(move || -> Result<(), String> {
                    let (tx, rx) = mpsc::channel();
                    let mut last_increment = 0;
                    for i in 0..CALLS {
                        let increment = i % 2 == 0;
                        let class = if increment {
                            CallClass::Write
                        } else {
                            CallClass::Read
                        };
                        let request = Request {
                            service: Arc::clone(&service),
                            increment,
                            reply: tx.clone(),
                        };
                        executor
                            .dispatch(Call::new(class, request).with_size(64))
                            .map_err(|rejected| format!("refused: {:?}", rejected.reason))?;
                        let value = rx
                            .recv()
                            .map_err(|e| e.to_string())?
                            .map_err(|f| format!("{f:?}"))?;
                        if increment {
                            last_increment = value;
                        } else if value < last_increment {
                            return Err(format!(
                                "read {value} after this client's increment to {last_increment}"
                            ));
                        }
                    }
                    Ok(())
                })
            })
            .collect();
        for client in clients {
            client
                .join()
                .map_err(|_| "a client panicked".to_string())??;
        }
        Ok(())
    })?;
    executor.shutdown(ShutdownMode::Drain);
    let count = service.0.load(Ordering::SeqCst);
    let expected = CLIENTS * CALLS / 2;
    let metrics = executor.metrics();
    println!(
        "{} calls answered by {} handler pools; counter {count} (expected {expected})",
        CLIENTS * CALLS,
        metrics.pools.len()
    );
    if count != expected {
        return Err(format!("counter {count}, expected {expected}").into());
    }
    Ok(())
}
