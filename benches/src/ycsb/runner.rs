//! YCSB's `Client`: the load or run phase on `threadcount` threads, each with its own store
//! connection, its share of the operations and of the `target` rate (with intended-start
//! latency, `Intended-<OP>`, against coordinated omission), `maxexecutiontime`, a status line
//! on stderr every `status.interval`, and a progress bar when stdout is a terminal.

use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;
use rand::SeedableRng;
use rand::rngs::StdRng;

use super::db::{Status, Target};
use super::measure::{Measurements, Report};
use super::props::{Props, PropsError};
use super::workload::{CoreWorkload, Op};

/// How a phase runs (YCSB's `Client` properties).
#[derive(Debug, Clone, PartialEq)]
pub struct RunOptions {
    /// The load phase (`-load`: inserts) or the run phase (`-t`: transactions).
    pub load: bool,
    /// `threadcount` (1).
    pub threads: usize,
    /// `target` ops/s over all threads (0: unthrottled).
    pub target_ops: f64,
    /// `maxexecutiontime` (none).
    pub max_execution: Option<Duration>,
    /// `status.interval` (10 s).
    pub status_interval: Duration,
    /// `hdrhistogram.percentiles` (95, 99: YCSB 0.17.0's; master adds 50).
    pub percentiles: Vec<f64>,
    /// Print the status line.
    pub status: bool,
    /// Draw a progress bar (when stdout is a terminal).
    pub progress: bool,
}

impl RunOptions {
    /// From properties, with YCSB's defaults.
    pub fn from_props(p: &Props, load: bool) -> Result<RunOptions, PropsError> {
        let percentiles = p
            .string("hdrhistogram.percentiles", "95,99")
            .split(',')
            .map(|s| {
                s.trim().parse::<f64>().map_err(|_| PropsError::BadValue {
                    name: "hdrhistogram.percentiles".into(),
                    value: s.into(),
                    expected: "a comma-separated list of numbers",
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let seconds = p.int("maxexecutiontime", 0)?;
        Ok(RunOptions {
            load,
            threads: usize::try_from(p.int("threadcount", 1)?)
                .unwrap_or(1)
                .max(1),
            target_ops: p.float("target", 0.0)?,
            max_execution: (seconds > 0).then(|| Duration::from_secs(seconds as u64)),
            status_interval: Duration::from_secs(p.int("status.interval", 10)?.max(1) as u64),
            percentiles,
            status: true,
            progress: std::io::stdout().is_terminal(),
        })
    }
}

/// UTC civil date and time from Unix milliseconds: `yyyy-MM-dd HH:mm:ss:SSS`, as YCSB's status
/// line prints it.
pub fn timestamp(unix_ms: i64) -> String {
    let days = unix_ms.div_euclid(86_400_000);
    let ms_of_day = unix_ms.rem_euclid(86_400_000);
    // Howard Hinnant's days-to-civil.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}:{:03}",
        ms_of_day / 3_600_000,
        ms_of_day / 60_000 % 60,
        ms_of_day / 1000 % 60,
        ms_of_day % 1000
    )
}

fn micros(d: Duration) -> u64 {
    d.as_micros() as u64
}

/// The status line's per-operation part, over the interval since `previous`.
fn status_details(now: &Measurements, previous: &Measurements) -> String {
    let mut out = String::new();
    for ((_, name), stats) in &now.ops {
        if name.starts_with("Intended-") || name == "CLEANUP" {
            continue;
        }
        let mut interval = stats.latency_us.clone();
        if let Some(prev) = previous.get(name) {
            let _ = interval.subtract(&prev.latency_us);
        }
        if interval.is_empty() {
            continue;
        }
        out.push_str(&format!(
            " [{name}: Count={}, Max={}, Min={}, Avg={:.2}, 90={}, 99={}, 99.9={}, 99.99={}]",
            interval.len(),
            interval.max(),
            interval.min(),
            interval.mean(),
            interval.value_at_quantile(0.90),
            interval.value_at_quantile(0.99),
            interval.value_at_quantile(0.999),
            interval.value_at_quantile(0.9999),
        ));
    }
    out
}

fn merged(threads: &[Arc<Mutex<Measurements>>]) -> Measurements {
    let mut all = Measurements::default();
    for t in threads {
        all.merge(&t.lock());
    }
    all
}

/// Runs one phase and returns its report. The status line and the progress bar go to stderr,
/// as YCSB's do.
#[expect(
    clippy::print_stderr,
    reason = "YCSB's status line and the progress bar are on stderr"
)]
pub fn run(
    workload: &CoreWorkload,
    target: &dyn Target,
    options: &RunOptions,
) -> Result<Report, String> {
    let total_ops = if options.load {
        workload.insert_count
    } else {
        workload.operation_count
    }
    .max(0) as u64;
    let threads = options.threads;
    let per_thread =
        |t: usize| total_ops / threads as u64 + u64::from((t as u64) < total_ops % threads as u64);
    // Target ops/s per thread → the tick between one thread's intended starts.
    let tick = (options.target_ops > 0.0)
        .then(|| Duration::from_secs_f64(threads as f64 / options.target_ops));
    let done = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let measurements: Vec<Arc<Mutex<Measurements>>> = (0..threads)
        .map(|_| Arc::new(Mutex::new(Measurements::default())))
        .collect();
    let connections = (0..threads)
        .map(|_| target.connect())
        .collect::<Result<Vec<_>, _>>()?;
    let seed = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let started = Instant::now();
    let failure: Mutex<Option<String>> = Mutex::new(None);
    // When the last thread finished its operations: the phase's run time (YCSB's).
    let finished_at: Mutex<Option<Instant>> = Mutex::new(None);
    std::thread::scope(|s| {
        for (t, mut db) in connections.into_iter().enumerate() {
            let (m, done, stop, failure, finished_at) = (
                Arc::clone(&measurements[t]),
                &done,
                &stop,
                &failure,
                &finished_at,
            );
            let ops = per_thread(t);
            s.spawn(move || {
                let mut rng =
                    StdRng::seed_from_u64(seed ^ (t as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
                let thread_start = Instant::now();
                for i in 0..ops {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let intended = tick.map(|tick| {
                        let at = thread_start + tick.mul_f64(i as f64);
                        let now = Instant::now();
                        if at > now {
                            std::thread::sleep(at - now);
                        }
                        at
                    });
                    let op_start = Instant::now();
                    if options.load {
                        let status = workload.do_insert(&mut *db, &mut rng);
                        let mut m = m.lock();
                        m.record("INSERT", micros(op_start.elapsed()), Some(status));
                        if let Some(at) = intended {
                            m.record("Intended-INSERT", micros(at.elapsed()), None);
                        }
                    } else {
                        let Some(op) = workload.next_op(&mut rng) else {
                            *failure.lock() = Some("no operation has a positive proportion".into());
                            stop.store(true, Ordering::Relaxed);
                            break;
                        };
                        let outcome = workload.do_transaction(
                            op,
                            &mut *db,
                            &mut rng,
                            &mut |op: Op, call: &mut dyn FnMut() -> Status| {
                                let began = Instant::now();
                                let status = call();
                                let mut m = m.lock();
                                m.record(op.name(), micros(began.elapsed()), Some(status));
                                if let Some(at) = intended {
                                    m.record(
                                        &format!("Intended-{}", op.name()),
                                        micros(at.elapsed()),
                                        None,
                                    );
                                }
                                status
                            },
                        );
                        if let Err(e) = outcome {
                            *failure.lock() = Some(e.to_string());
                            stop.store(true, Ordering::Relaxed);
                            break;
                        }
                        if op == Op::ReadModifyWrite {
                            let mut m = m.lock();
                            m.record("READ-MODIFY-WRITE", micros(op_start.elapsed()), None);
                            if let Some(at) = intended {
                                m.record("Intended-READ-MODIFY-WRITE", micros(at.elapsed()), None);
                            }
                        }
                    }
                    done.fetch_add(1, Ordering::Relaxed);
                }
                let cleanup = Instant::now();
                {
                    let mut end = finished_at.lock();
                    *end = Some(end.map_or(cleanup, |e| e.max(cleanup)));
                }
                drop(db);
                m.lock().record("CLEANUP", micros(cleanup.elapsed()), None);
            });
        }
        // The status line, the progress bar and maxexecutiontime, on this thread.
        let mut previous = Measurements::default();
        let mut last_status = Instant::now();
        let mut last_done = 0;
        let progress = options.progress && total_ops > 0;
        let mut ticks = 0u64;
        loop {
            ticks += 1;
            std::thread::sleep(Duration::from_millis(20));
            let finished = done.load(Ordering::Relaxed);
            let all_done = finished >= total_ops || stop.load(Ordering::Relaxed);
            if options
                .max_execution
                .is_some_and(|limit| started.elapsed() >= limit)
            {
                stop.store(true, Ordering::Relaxed);
            }
            // The bar is redrawn every 200 ms.
            if progress && ticks.is_multiple_of(10) {
                let width = 40;
                let filled = (finished * width / total_ops.max(1)).min(width) as usize;
                eprint!(
                    "\r[{}{}] {:>3}% {finished}/{total_ops} ops ",
                    "#".repeat(filled),
                    ".".repeat(width as usize - filled),
                    finished * 100 / total_ops.max(1)
                );
                let _ = std::io::stderr().flush();
            }
            if options.status && (last_status.elapsed() >= options.status_interval) {
                let now = merged(&measurements);
                let seconds = last_status.elapsed().as_secs_f64();
                let unix_ms = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map_or(0, |d| d.as_millis() as i64);
                if progress {
                    eprint!("\r");
                }
                eprintln!(
                    "{} {} sec: {finished} operations; {:.2} current ops/sec;{}",
                    timestamp(unix_ms),
                    started.elapsed().as_secs(),
                    (finished - last_done) as f64 / seconds,
                    status_details(&now, &previous)
                );
                previous = now;
                last_status = Instant::now();
                last_done = finished;
            }
            if all_done {
                break;
            }
        }
        if progress {
            eprintln!();
        }
    });
    if let Some(message) = failure.into_inner() {
        return Err(message);
    }
    let runtime = finished_at
        .into_inner()
        .map_or_else(|| started.elapsed(), |end| end.duration_since(started));
    let all = merged(&measurements);
    Ok(Report::new(
        &all,
        runtime.as_millis() as u64,
        done.load(Ordering::Relaxed),
        &options.percentiles,
    ))
}
