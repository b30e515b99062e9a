//! `cargo xtask bench rpc`: HBASE-26551's experiment in one run. 100 closed-loop clients issue
//! 50% writes, 25% gets and 25% scans (service times model the region: writes wait on a
//! simulated sync, scans run longer than gets; an I/O-waiting and a CPU-spinning mode) against
//! each design with read ratio 0.5 and handler factor 0.2: RwQueue, FastPathRwQueue, Balanced,
//! FastPathBalanced, and a plain shared crossbeam channel feeding N workers. Designs run
//! interleaved, round after round, so drift on a shared machine hits them alike. Prints the
//! seed's table per configuration, writes the queue-time series to
//! `target/keel-bench/rpc-queue-time.csv`; `--plot` draws that CSV as an SVG.

#![expect(clippy::print_stdout, reason = "a benchmark reports on the terminal")]

mod load;
mod plot;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use keel_rpc::{ExecutorKind, RpcOptions};
use keel_testkit::figure;
use load::{BUCKET, Design, Mode, OPS, Recorder, RunResult};

const CLIENTS: usize = 100;
/// The seed's handler count, and one sized for a 2-core machine.
const HANDLERS: [usize; 2] = [1000, 16];

fn options(handlers: usize) -> RpcOptions {
    RpcOptions {
        handler_count: handlers,
        handler_factor: 0.2,
        read_ratio: 0.5,
        scan_ratio: 0.0,
        priority_handler_count: 0,
        ..RpcOptions::default()
    }
}

fn out_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target"));
    let dir = target.join("keel-bench");
    let _ = std::fs::create_dir_all(&dir);
    dir.canonicalize().unwrap_or(dir)
}

/// Everything one design accumulated over the rounds of one configuration.
struct Totals {
    recorder: Recorder,
    elapsed: Duration,
    handoff_p50_us: Vec<f64>,
    handoff_share: Vec<f64>,
}

impl Totals {
    fn throughput(&self) -> f64 {
        self.recorder.ops as f64 / self.elapsed.as_secs_f64()
    }

    fn p99_queue(&self, op: usize) -> f64 {
        self.recorder.queue[op].value_at_quantile(0.99) as f64
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    let dir = out_dir();
    let csv_path = dir.join("rpc-queue-time.csv");
    if args.iter().any(|a| a == "--plot") {
        match plot::render(&csv_path, &dir.join("rpc-queue-time.svg")) {
            Ok(summary) => println!("{summary}"),
            Err(e) => {
                println!("plot failed: {e}");
                std::process::exit(1);
            }
        }
        return;
    }
    let (rounds, duration) = if quick {
        (1, Duration::from_millis(800))
    } else {
        (3, Duration::from_secs(2))
    };
    let seed = keel_testkit::seed();
    println!(
        "rpc: {CLIENTS} closed-loop clients, 50% write / 25% get / 25% scan; read ratio 0.5, \
         handler factor 0.2, scan ratio 0; {rounds} interleaved round(s) of {duration:?} per design, \
         each after {:?} unrecorded warm-up",
        load::WARMUP
    );
    for mode in [Mode::Io, Mode::Cpu] {
        println!(
            "  {} mode service (cpu spin, sleep): write {}, get {}, scan {}",
            mode.name(),
            mode_service(mode, 0),
            mode_service(mode, 1),
            mode_service(mode, 2)
        );
    }
    let mut csv =
        String::from("handlers,mode,design,round,t_s,op,calls,queue_avg_us,queue_p99_us\n");
    let mut totals: BTreeMap<(usize, &str, usize), Totals> = BTreeMap::new();
    for round in 0..rounds {
        for handlers in HANDLERS {
            for mode in [Mode::Io, Mode::Cpu] {
                for (d, design) in Design::ALL.into_iter().enumerate() {
                    let result = load::run(
                        design,
                        &options(handlers),
                        mode,
                        CLIENTS,
                        duration,
                        seed ^ round as u64,
                    );
                    append_series(&mut csv, handlers, mode, design, round, &result);
                    accumulate(&mut totals, (handlers, mode.name(), d), result);
                }
            }
        }
    }
    std::fs::write(&csv_path, csv).expect("write the CSV");
    for handlers in HANDLERS {
        for mode in [Mode::Io, Mode::Cpu] {
            print_table(&totals, handlers, mode);
        }
    }
    println!(
        "queue-time series: {} (draw it: cargo xtask bench rpc --plot)",
        csv_path.display()
    );

    // The hand-off itself, without 100 clients competing for 2 cores: one client.
    let alone = load::run(
        Design::Executor(ExecutorKind::FastPathRwQueue),
        &options(HANDLERS[0]),
        Mode::Cpu,
        1,
        duration,
        seed,
    );
    let alone_p50 = alone.handoff_p50_us.unwrap_or(f64::NAN);
    // For scale: the machine's own cost of waking a sleeping thread (a condition variable
    // ping-pong with nothing else running). A hand-off cannot beat it.
    let wake_p50 = load::raw_wake_p50_us(if quick { 2_000 } else { 20_000 });
    println!(
        "one client (no CPU contention): fast-path hand-off p50 {alone_p50:.0} µs; \
         bare condvar wake-up on this machine p50 {wake_p50:.1} µs"
    );

    let seed_config = |d: usize| &totals[&(HANDLERS[0], Mode::Io.name(), d)];
    let (rw, fast) = (seed_config(0), seed_config(1));
    let worst_p99 = (0..3)
        .map(|op| fast.p99_queue(op) / rw.p99_queue(op).max(1.0))
        .fold(0.0, f64::max);
    let loaded_p50 = median(&fast.handoff_p50_us);
    println!(
        "seed configuration ({} handlers, io mode): fast-path hand-off p50 under load {loaded_p50:.0} µs",
        HANDLERS[0]
    );
    println!(
        "{}",
        figure(
            "rpc_fastpath_vs_rwqueue_throughput",
            fast.throughput() / rw.throughput()
        )
    );
    println!(
        "{}",
        figure("rpc_fastpath_vs_rwqueue_p99_queue_time", worst_p99)
    );
    println!("{}", figure("rpc_handoff_p50_us", loaded_p50));
}

fn mode_service(mode: Mode, op: usize) -> String {
    let (cpu, sleep) = load::service(mode, op);
    format!("({cpu:?}, {sleep:?})")
}

fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

fn accumulate(
    totals: &mut BTreeMap<(usize, &str, usize), Totals>,
    key: (usize, &'static str, usize),
    r: RunResult,
) {
    let entry = totals.entry(key).or_insert_with(|| Totals {
        recorder: Recorder::new(),
        elapsed: Duration::ZERO,
        handoff_p50_us: Vec::new(),
        handoff_share: Vec::new(),
    });
    entry.elapsed += r.elapsed;
    entry.recorder.merge(r.recorder);
    entry.handoff_p50_us.extend(r.handoff_p50_us);
    entry.handoff_share.extend(r.handoff_share);
}

/// One CSV row per (time bucket, operation): calls, mean and p99 queue time.
fn append_series(
    csv: &mut String,
    handlers: usize,
    mode: Mode,
    design: Design,
    round: usize,
    r: &RunResult,
) {
    let mut buckets: BTreeMap<(u32, u8), Vec<u32>> = BTreeMap::new();
    for &(bucket, op, queue_us) in &r.recorder.series {
        buckets.entry((bucket, op)).or_default().push(queue_us);
    }
    for ((bucket, op), mut values) in buckets {
        values.sort_unstable();
        let avg = values.iter().map(|&v| f64::from(v)).sum::<f64>() / values.len() as f64;
        let p99 = values[((values.len() - 1) as f64 * 0.99) as usize];
        let t = f64::from(bucket) * BUCKET.as_secs_f64();
        let _ = writeln!(
            csv,
            "{handlers},{},{},{round},{t:.1},{},{},{avg:.1},{p99}",
            mode.name(),
            design.name(),
            OPS[op as usize],
            values.len()
        );
    }
}

fn print_table(totals: &BTreeMap<(usize, &str, usize), Totals>, handlers: usize, mode: Mode) {
    println!();
    println!("== {handlers} handlers, {} mode ==", mode.name());
    println!(
        "{:<17} {:>9} {:>6} {:>8} | {:<5} {:>9} {:>9} {:>9} | {:>9} {:>9} {:>9} | {:>8}",
        "design",
        "ops/s",
        "vs RW",
        "handoff",
        "op",
        "q avg",
        "q p95",
        "q p99",
        "tot avg",
        "tot p95",
        "tot p99",
        "q99 vs RW"
    );
    let rw = &totals[&(handlers, mode.name(), 0)];
    for (d, design) in Design::ALL.into_iter().enumerate() {
        let t = &totals[&(handlers, mode.name(), d)];
        let share = if t.handoff_share.is_empty() {
            "-".to_string()
        } else {
            format!(
                "{:.0}%",
                100.0 * t.handoff_share.iter().sum::<f64>() / t.handoff_share.len() as f64
            )
        };
        for (op, name) in OPS.iter().enumerate() {
            let (q, tot) = (&t.recorder.queue[op], &t.recorder.total[op]);
            let lead = if op == 0 {
                format!(
                    "{:<17} {:>9.0} {:>6.3} {:>8}",
                    design.name(),
                    t.throughput(),
                    t.throughput() / rw.throughput(),
                    share
                )
            } else {
                format!("{:<17} {:>9} {:>6} {:>8}", "", "", "", "")
            };
            println!(
                "{lead} | {name:<5} {:>9.0} {:>9} {:>9} | {:>9.0} {:>9} {:>9} | {:>8.3}",
                q.mean(),
                q.value_at_quantile(0.95),
                q.value_at_quantile(0.99),
                tot.mean(),
                tot.value_at_quantile(0.95),
                tot.value_at_quantile(0.99),
                t.p99_queue(op) / rw.p99_queue(op).max(1.0)
            );
        }
        if t.recorder.rejected + t.recorder.failed > 0 {
            println!(
                "{:<17} refused {} (retried), failed {}",
                "", t.recorder.rejected, t.recorder.failed
            );
        }
    }
    println!("(latencies in µs; handoff = share of calls handed straight to an idle handler)");
}
