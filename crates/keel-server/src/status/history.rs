//! The last minutes of throughput and latency, for the status page's sparklines: every
//! interval a sampler takes the requests decoded and the executor's receive-to-end histograms
//! (every pool merged), and keeps the interval's rate and p99 — the histogram of the interval
//! alone, the cumulative one minus the previous.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use keel_sync::Mutex;
use serde::Serialize;

use crate::NetObserver;

/// One interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Sample {
    /// Seconds since the status port started, at the interval's end.
    pub t_s: f64,
    /// Requests decoded per second over the interval.
    pub requests_per_s: f64,
    /// Calls' receive-to-end time at the 99th percentile over the interval, µs (0 when no call
    /// completed).
    pub p99_us: u64,
}

/// The samples kept, and what the next one is measured from.
pub(super) struct History {
    capacity: usize,
    samples: Mutex<VecDeque<Sample>>,
    last: Mutex<Option<Last>>,
}

struct Last {
    at: Instant,
    requests: u64,
    total_time: Histogram<u64>,
}

fn merged(net: &NetObserver) -> Option<Histogram<u64>> {
    let rpc = net.rpc();
    let mut pools = rpc.pools.into_iter();
    let mut all = pools.next()?.total_time_us;
    for pool in pools {
        // Same bounds in every pool: adding cannot fail.
        let _ = all.add(&pool.total_time_us);
    }
    Some(all)
}

impl History {
    pub(super) fn new(capacity: usize) -> History {
        History {
            capacity: capacity.max(2),
            samples: Mutex::new(VecDeque::new()),
            last: Mutex::new(None),
        }
    }

    /// Takes one sample (the first call only sets the starting point).
    pub(super) fn sample(&self, net: &NetObserver, started: Instant) {
        let now = Instant::now();
        let requests = net
            .stats()
            .requests
            .load(std::sync::atomic::Ordering::Relaxed);
        let Some(total_time) = merged(net) else {
            return;
        };
        let mut last = self.last.lock();
        if let Some(previous) = last.as_ref() {
            let seconds = now.duration_since(previous.at).as_secs_f64().max(1e-9);
            let mut interval = total_time.clone();
            let p99_us = match interval.subtract(&previous.total_time) {
                Ok(()) if !interval.is_empty() => interval.value_at_quantile(0.99),
                _ => 0,
            };
            let sample = Sample {
                t_s: now.duration_since(started).as_secs_f64(),
                requests_per_s: requests.saturating_sub(previous.requests) as f64 / seconds,
                p99_us,
            };
            let mut samples = self.samples.lock();
            if samples.len() == self.capacity {
                samples.pop_front();
            }
            samples.push_back(sample);
        }
        *last = Some(Last {
            at: now,
            requests,
            total_time,
        });
    }

    /// The samples, oldest first.
    pub(super) fn samples(&self) -> Vec<Sample> {
        self.samples.lock().iter().copied().collect()
    }
}

/// How often the sampler runs by default, and how many samples are kept: 10 minutes.
pub(super) const DEFAULT_INTERVAL: Duration = Duration::from_secs(5);
/// See [`DEFAULT_INTERVAL`].
pub(super) const DEFAULT_SAMPLES: usize = 120;
