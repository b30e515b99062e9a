//! `cargo xtask bench tracing`: the HBASE-27153/27155 experiment scaled to this machine. A
//! YCSB-like load — 20% single-field updates, 80% whole-row random reads (uniform) — from 8
//! threads, embedded, on a table pre-loaded with 10-field records, flushed and major-compacted so
//! reads are served from one store file through the block cache. Three builds in one run:
//! tracing compiled out (keel-region without its `tracing` feature), compiled in with no
//! subscriber, compiled in with a subscriber that records and formats every span and event
//! (tracing-subscriber's fmt layer at TRACE, writing to a sink), and compiled in with its INFO
//! spans exported over OTLP/HTTP as `keel serve --otlp-endpoint` exports them (every trace
//! sampled, to a stand-in collector in this process that reads and drops each export). Rounds
//! interleave them;
//! each run starts from a fresh copy of the prepared data. Reports run time, read p95/p99 and
//! the ratios to compiled-out (medians over rounds).
//!
//! Roles: `--prepare DIR`, `--worker DIR [--subscriber | --otlp URL]` (one measured run, printing a
//! `result:` line), and the default, the coordinator; xtask passes `--compiled-out EXE`, the
//! same benchmark built without the feature.

#![expect(clippy::print_stdout, reason = "a benchmark reports on the terminal")]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use keel_region::matcher::ReadQuery;
use keel_region::{Engine, EngineOptions, FamilyOptions};
use keel_testkit::figure;
use rand::{Rng, SeedableRng};

const THREADS: usize = 2;
const FIELDS: usize = 10;
const FIELD_LEN: usize = 100;

struct Size {
    records: u64,
    operations: u64,
    rounds: usize,
}

fn size(quick: bool) -> Size {
    if quick {
        Size {
            records: 20_000,
            operations: 80_000,
            rounds: 2,
        }
    } else {
        Size {
            records: 100_000,
            operations: 600_000,
            rounds: 7,
        }
    }
}

fn key(i: u64) -> String {
    // Scattered like YCSB's hashed insert order.
    format!("user{:019}", i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 1)
}

fn options() -> EngineOptions {
    EngineOptions {
        // Nothing background during the measurement: no periodic major compaction.
        major_compaction_period: Duration::ZERO,
        ..EngineOptions::default()
    }
}

fn prepare(dir: &Path, records: u64) {
    let server = Engine::open(dir, options()).expect("open");
    let table = server
        .create_table("usertable", vec![FamilyOptions::new("family")])
        .expect("create");
    let value = vec![b'v'; FIELD_LEN];
    for i in 0..records {
        let row = key(i);
        let cells = (0..FIELDS)
            .map(|f| {
                keel_cell::Cell::put(
                    row.clone(),
                    "family",
                    format!("field{f}"),
                    keel_cell::LATEST_TIMESTAMP,
                    value.clone(),
                )
                .expect("cell")
            })
            .collect();
        table
            .mutate(cells, keel_region::Durability::SkipWal)
            .expect("load");
        if i % 20_000 == 19_999 {
            table.flush().expect("flush");
        }
    }
    table.flush().expect("flush");
    table.major_compact().expect("major compaction");
    drop(table);
    server.close().expect("close");
}

struct Measured {
    runtime: Duration,
    read_p95_us: f64,
    read_p99_us: f64,
}

fn work(dir: &Path, size: &Size) -> Measured {
    let server = Engine::open(dir, options()).expect("open");
    let table = server.table("usertable").expect("table");
    let per_thread = size.operations / THREADS as u64;
    let query = ReadQuery::latest(u64::MAX, 0);
    // Warm the block cache so every run reads from memory (the seed's setup).
    for i in 0..size.records {
        table.get(key(i).as_bytes(), &query).expect("warm");
    }
    let started = Instant::now();
    let histograms: Vec<Histogram<u64>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                let (table, query) = (&table, &query);
                s.spawn(move || {
                    let mut rng = rand::rngs::StdRng::seed_from_u64(t as u64 + 1);
                    let mut reads =
                        Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3).expect("histogram");
                    let value = vec![b'u'; FIELD_LEN];
                    for _ in 0..per_thread {
                        let row = key(rng.random_range(0..size.records));
                        if rng.random_range(0..100) < 20 {
                            let field = format!("field{}", rng.random_range(0..FIELDS));
                            table
                                .put(row.as_bytes(), b"family", field.as_bytes(), &value)
                                .expect("update");
                        } else {
                            let began = Instant::now();
                            let cells = table.get(row.as_bytes(), query).expect("read");
                            reads.saturating_record(began.elapsed().as_nanos() as u64);
                            assert_eq!(cells.len(), FIELDS, "row {row}");
                        }
                    }
                    reads
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("thread"))
            .collect()
    });
    let runtime = started.elapsed();
    let mut reads = Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3).expect("histogram");
    for h in &histograms {
        reads.add(h).expect("merge");
    }
    drop(table);
    server.close().expect("close");
    Measured {
        runtime,
        read_p95_us: reads.value_at_quantile(0.95) as f64 / 1000.0,
        read_p99_us: reads.value_at_quantile(0.99) as f64 / 1000.0,
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    CompiledOut,
    Off,
    On,
    Otlp,
}

impl Mode {
    fn label(self) -> &'static str {
        match self {
            Mode::CompiledOut => "compiled out",
            Mode::Off => "compiled in, no subscriber",
            Mode::On => "compiled in, recording subscriber",
            Mode::Otlp => "compiled in, OTLP export",
        }
    }
}

fn run_worker(exe: &Path, data: &Path, quick: bool, mode: Mode, collector: &str) -> Measured {
    let mut command = Command::new(exe);
    command.arg("--worker").arg(data);
    if quick {
        command.arg("--quick");
    }
    match mode {
        Mode::On => {
            command.arg("--subscriber");
        }
        Mode::Otlp => {
            command.arg("--otlp").arg(collector);
        }
        Mode::CompiledOut | Mode::Off => {}
    }
    let output = command.output().expect("worker runs");
    assert!(
        output.status.success(),
        "worker failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8_lossy(&output.stdout);
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("result: "))
        .expect("a result line");
    let numbers: Vec<f64> = line
        .split(' ')
        .map(|n| n.parse().expect("number"))
        .collect();
    Measured {
        runtime: Duration::from_secs_f64(numbers[0]),
        read_p95_us: numbers[1],
        read_p99_us: numbers[2],
    }
}

/// Installs an exporter of every INFO span over OTLP/HTTP to `url`, with the batch processor
/// and sampler `keel serve --otlp-endpoint` uses; returns the provider to flush at the end.
fn export_spans(url: &str) -> opentelemetry_sdk::trace::SdkTracerProvider {
    use opentelemetry::trace::TracerProvider as _;
    use opentelemetry_otlp::{Protocol, WithExportConfig as _};
    use opentelemetry_sdk::trace::{Sampler, SdkTracerProvider};
    use tracing_subscriber::Layer as _;
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(url)
        .build()
        .expect("an OTLP exporter");
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_sampler(Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(
            1.0,
        ))))
        .build();
    let layer = tracing_opentelemetry::layer()
        .with_tracer(provider.tracer("keel"))
        .with_filter(tracing_subscriber::filter::LevelFilter::INFO);
    tracing_subscriber::registry().with(layer).init();
    provider
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let quick = args.iter().any(|a| a == "--quick");
    let size = size(quick);
    let value_after = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .map(PathBuf::from)
    };
    if let Some(dir) = value_after("--prepare") {
        prepare(&dir, size.records);
        return;
    }
    if let Some(dir) = value_after("--worker") {
        if args.iter().any(|a| a == "--subscriber") {
            tracing_subscriber::fmt()
                .with_writer(std::io::sink)
                .with_max_level(tracing_subscriber::filter::LevelFilter::TRACE)
                .init();
        }
        let provider = value_after("--otlp").map(|url| export_spans(&url.to_string_lossy()));
        let m = work(&dir, &size);
        println!(
            "result: {} {} {}",
            m.runtime.as_secs_f64(),
            m.read_p95_us,
            m.read_p99_us
        );
        if let Some(provider) = provider {
            let _ = provider.shutdown();
        }
        return;
    }
    let me = std::env::current_exe().expect("own path");
    let compiled_out = value_after("--compiled-out");
    let scratch = tempfile::tempdir().expect("tempdir");
    let prepared = scratch.path().join("prepared");
    println!(
        "tracing: {} records × {FIELDS} fields × {FIELD_LEN} B, {} operations (20% update / 80% read), {THREADS} threads, {} rounds",
        size.records, size.operations, size.rounds
    );
    let status = Command::new(&me)
        .arg("--prepare")
        .arg(&prepared)
        .args(quick.then_some("--quick"))
        .status()
        .expect("prepare");
    assert!(status.success(), "preparing the table failed");
    // The stand-in collector: reads each export whole and drops it, counting the bytes.
    let exported = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let counter = std::sync::Arc::clone(&exported);
    let collector = keel_testkit::HttpSink::start(move |_, body| {
        counter.fetch_add(body.len() as u64, std::sync::atomic::Ordering::Relaxed);
    })
    .expect("the stand-in collector starts");
    let collector_url = format!("{}/v1/traces", collector.url());
    let mut modes = vec![Mode::Off, Mode::On, Mode::Otlp];
    match &compiled_out {
        Some(_) => modes.insert(0, Mode::CompiledOut),
        None => println!(
            "(no --compiled-out build given: `cargo xtask bench tracing` builds one; comparing off vs on only)"
        ),
    }
    let mut results: Vec<Vec<Measured>> = modes.iter().map(|_| Vec::new()).collect();
    for round in 0..size.rounds {
        // Rotate the order so no build always runs first (or last) on a warming machine.
        for k in 0..modes.len() {
            let i = (k + round) % modes.len();
            let mode = modes[i];
            let data = scratch.path().join(format!("run-{round}-{i}"));
            keel_testkit::copy_dir(&prepared, &data).expect("copy the prepared table");
            let exe = match mode {
                Mode::CompiledOut => compiled_out.clone().expect("given"),
                _ => me.clone(),
            };
            let m = run_worker(&exe, &data, quick, mode, &collector_url);
            println!(
                "  round {round}: {:<34} {:>8.0} ms  read p95 {:>7.1} µs  p99 {:>7.1} µs",
                mode.label(),
                m.runtime.as_secs_f64() * 1000.0,
                m.read_p95_us,
                m.read_p99_us
            );
            results[i].push(m);
            let _ = std::fs::remove_dir_all(&data);
        }
    }
    println!();
    println!("| build | run time ms | read p95 µs | read p99 µs |");
    println!("|---|---|---|---|");
    let medians: Vec<(f64, f64, f64)> = results
        .iter()
        .map(|runs| {
            (
                median(
                    runs.iter()
                        .map(|m| m.runtime.as_secs_f64() * 1000.0)
                        .collect(),
                ),
                median(runs.iter().map(|m| m.read_p95_us).collect()),
                median(runs.iter().map(|m| m.read_p99_us).collect()),
            )
        })
        .collect();
    for (mode, (t, p95, p99)) in modes.iter().zip(&medians) {
        println!("| {} | {t:.0} | {p95:.1} | {p99:.1} |", mode.label());
    }
    let base = medians[0];
    let base_label = modes[0].label();
    println!();
    for (mode, (t, p95, p99)) in modes.iter().zip(&medians).skip(1) {
        println!(
            "{} vs {base_label}: time {:.3}, p95 {:.3}, p99 {:.3}",
            mode.label(),
            t / base.0,
            p95 / base.1,
            p99 / base.2
        );
    }
    let on = medians[modes.len() - 2];
    let otlp = medians[modes.len() - 1];
    println!(
        "OTLP export: {} KiB of spans sent to the stand-in collector over all rounds",
        exported.load(std::sync::atomic::Ordering::Relaxed) / 1024
    );
    println!(
        "{}",
        figure(
            "tracing_otlp_vs_compiled_in_off_p99",
            otlp.2 / medians[modes.len() - 3].2
        )
    );
    if compiled_out.is_some() {
        println!(
            "{}",
            figure("tracing_otlp_vs_compiled_out_p99", otlp.2 / base.2)
        );
        let off = medians[1];
        println!(
            "{}",
            figure("tracing_off_vs_compiled_out_p99", off.2 / base.2)
        );
        println!(
            "{}",
            figure("tracing_on_vs_compiled_out_p99", on.2 / base.2)
        );
    } else {
        println!("{}", figure("tracing_on_vs_off_p99", on.2 / base.2));
    }
}
