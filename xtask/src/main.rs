//! `cargo xtask`: Keel's automation, in Rust so it runs wherever cargo does.
//!
//! `cargo xtask ci` is what `.ci/run` and the README's test command run; the other commands are
//! its pieces for the inner loop, plus the benchmark and crash-suite dispatch tables.

#![expect(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a CLI reports on the terminal"
)]

mod cmd;
mod seeds;
mod suites;
mod tidy;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Keel's automation.
#[derive(Debug, Parser)]
#[command(name = "cargo xtask", about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Everything CI checks: fmt, tidy, clippy, docs, every library crate packaged and built
    /// from its package, every example run, shuttle models, the seed experiments and the admin
    /// benchmark at their smallest, doctests and tests.
    Ci,
    /// `cargo package` of every library crate, each built from its package as crates.io would.
    Package,
    /// Builds and runs every crate's examples (each checks its own result).
    Examples,
    /// Formats the workspace (`--check` only reports).
    Fmt {
        /// Report unformatted files instead of rewriting them.
        #[arg(long)]
        check: bool,
    },
    /// Clippy on every target with warnings denied.
    Lint,
    /// Builds the docs with warnings denied.
    Doc,
    /// Runs the tests (nextest when installed) and doctests.
    Test {
        /// Fewer proptest cases and randomized rounds, no doctests: the inner loop.
        #[arg(long)]
        fast: bool,
    },
    /// Checks the workspace's own rules (dependency levels, module docs, no println! in libs).
    Tidy,
    /// Runs one benchmark and prints its `figure:` lines; an unknown name lists the known ones.
    Bench {
        /// Which benchmark.
        name: String,
        /// A shortened run (under a minute).
        #[arg(long)]
        quick: bool,
        /// Draws the benchmark's last results as a chart instead of running it (rpc).
        #[arg(long)]
        plot: bool,
    },
    /// Runs the shuttle models (all, or one by name) under `--cfg shuttle`.
    Model {
        /// Which model suite (default: all).
        name: Option<String>,
        /// Schedules per property and scheduler (default: the suite's own).
        #[arg(long)]
        iterations: Option<u32>,
    },
    /// Runs the unit tests of the crates with `unsafe` under Miri (skips if Miri is absent).
    Miri,
    /// Fuzzes one target briefly with cargo-fuzz (skips if cargo-fuzz or nightly is absent).
    Fuzz {
        /// Which fuzz target.
        name: String,
        /// How long to fuzz.
        #[arg(long, default_value_t = 60)]
        seconds: u32,
    },
    /// Runs one kill-and-recover suite; an unknown name lists the known ones.
    Crash {
        /// Which suite.
        name: String,
        /// Rounds of kill and recover (default: the suite's own).
        #[arg(long)]
        rounds: Option<u32>,
    },
    /// Runs the five seed experiments (about 4 minutes; `--quick`: seconds once built; `--full`:
    /// the seeds' own sizes) and writes `target/seeds/report.md` with a chart per experiment.
    Seeds {
        /// The smoke-test size (CI).
        #[arg(long)]
        quick: bool,
        /// The seed-sized runs.
        #[arg(long, conflicts_with = "quick")]
        full: bool,
    },
    /// Runs the YCSB-compatible driver (`keel-bench ycsb`, release build) with these arguments,
    /// e.g. `cargo xtask ycsb both -P a -p recordcount=100000 -p threadcount=8`.
    Ycsb {
        /// Everything after `ycsb`, passed on.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Runs one soak suite (a long mixed load that checks its invariants) for some minutes.
    Soak {
        /// Which suite.
        name: String,
        /// How long, in minutes (fractions allowed).
        #[arg(long, default_value_t = 5.0)]
        minutes: f64,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Ci => ci(),
        Command::Package => cmd::package(),
        Command::Examples => cmd::examples(),
        Command::Fmt { check } => cmd::fmt(check),
        Command::Lint => cmd::lint(),
        Command::Doc => cmd::doc(),
        Command::Test { fast } => cmd::test(fast),
        Command::Tidy => run_tidy(),
        Command::Bench { name, quick, plot } => suites::bench(&name, quick, plot),
        Command::Model { name, iterations } => suites::model(name.as_deref(), iterations),
        Command::Miri => suites::miri(),
        Command::Fuzz { name, seconds } => suites::fuzz(&name, seconds),
        Command::Crash { name, rounds } => suites::crash(&name, rounds),
        Command::Soak { name, minutes } => suites::soak(&name, minutes),
        Command::Seeds { quick, full } => seeds::seeds(if quick {
            "quick"
        } else if full {
            "full"
        } else {
            "default"
        }),
        Command::Ycsb { args } => {
            let mut all = vec![
                "run",
                "--release",
                "--locked",
                "-q",
                "-p",
                "keel-bench",
                "--",
                "ycsb",
            ];
            all.extend(args.iter().map(String::as_str));
            cmd::run(cmd::cargo(&all))
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("xtask: {err}");
            ExitCode::FAILURE
        }
    }
}

/// The whole CI sequence. Tests run last so that the log ends with the test runners' summaries.
fn ci() -> Result<(), String> {
    let started = std::time::Instant::now();
    cmd::fmt(true)?;
    run_tidy()?;
    cmd::lint()?;
    cmd::lint_without_optional_features()?;
    cmd::doc()?;
    // Every crate as it would be published, built from its own package; every example run.
    cmd::package()?;
    cmd::examples()?;
    suites::model(None, None)?;
    // The seed experiments at their smallest, so they never rot (release builds; seconds to run).
    seeds::seeds("quick")?;
    // Table operations off the data path (issue 21): its quick run, so the benchmark never rots.
    suites::bench("admin", true, false)?;
    cmd::test(false)?;
    println!("xtask ci: all steps passed in {:.0?}", started.elapsed());
    Ok(())
}

fn run_tidy() -> Result<(), String> {
    let root = cmd::workspace_root();
    let problems = tidy::check(&root);
    if problems.is_empty() {
        println!("tidy: ok");
        Ok(())
    } else {
        for problem in &problems {
            eprintln!("tidy: {problem}");
        }
        Err(format!("tidy found {} problem(s)", problems.len()))
    }
}
