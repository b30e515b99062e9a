//! `keel-bench`: Keel's load driver.
//! - `keel-bench ycsb [load|run|both] -P workloada -p recordcount=100000 --target embedded`
//!   runs YCSB's CoreWorkload against Keel embedded (a fresh temporary store unless
//!   `--data-dir`) or a running `keel serve` (`--target thrift --thrift 127.0.0.1:9090`) and
//!   prints YCSB's report (or `--json`).
//! - `keel-bench list` shows the seed experiments.

#![expect(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a CLI reports on the terminal"
)]

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use clap::{Parser, Subcommand, ValueEnum};
use keel_bench::seeds::{self, Size};
use keel_bench::ycsb::db::Target;
use keel_bench::ycsb::props::{Props, preset};
use keel_bench::ycsb::runner::{self, RunOptions};
use keel_bench::ycsb::targets::{Embedded, Layout, Thrift};
use keel_bench::ycsb::workload::CoreWorkload;
use keel_region::{Durability, Engine, EngineOptions};

/// Keel's load driver.
#[derive(Debug, Parser)]
#[command(name = "keel-bench", about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Phase {
    /// Insert the records (YCSB `-load`).
    Load,
    /// Run the transactions (YCSB `-t`).
    Run,
    /// Load, then run, in one process.
    Both,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum TargetKind {
    /// Direct keel-region calls (HBase's "embedded mode").
    Embedded,
    /// keel-thrift's client against a running `keel serve`.
    Thrift,
    /// fjall, for comparison.
    Fjall,
    /// sled, for comparison.
    Sled,
    /// redb, for comparison.
    Redb,
    /// RocksDB, for comparison (needs `--features peers`).
    Rocksdb,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum LayoutArg {
    /// One column per field, as YCSB's HBase binding.
    Columns,
    /// One cell per record, as the key-value peers.
    Cell,
}

/// `keel-bench ycsb`'s arguments.
#[derive(Debug, clap::Args)]
struct YcsbArgs {
    /// Which phase.
    #[arg(value_enum, default_value = "both")]
    phase: Phase,
    /// A workload file, or one of YCSB's standard workloads by name (a … f).
    #[arg(short = 'P', value_name = "FILE|a..f")]
    files: Vec<String>,
    /// A property, `name=value` (after the files; later ones win).
    #[arg(short = 'p', value_name = "NAME=VALUE")]
    props: Vec<String>,
    /// The store under test.
    #[arg(long, value_enum, default_value = "embedded")]
    target: TargetKind,
    /// Embedded: the store's directory (default: a fresh temporary one).
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Thrift: the server's address.
    #[arg(long, default_value = "127.0.0.1:9090")]
    thrift: SocketAddr,
    /// How a record is stored.
    #[arg(long, value_enum, default_value = "columns")]
    layout: LayoutArg,
    /// Print the reports as JSON instead of YCSB's text.
    #[arg(long)]
    json: bool,
    /// Embedded and peers: an acknowledged write is written to the OS (`sync`, Keel's
    /// `SyncWal`, its default) or fdatasynced (`fsync`, Keel's `FsyncWal`).
    #[arg(long, default_value = "sync", value_parser = ["sync", "fsync"])]
    durability: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum SizeArg {
    Quick,
    Default,
    Full,
}

impl SizeArg {
    fn size(self) -> Size {
        match self {
            SizeArg::Quick => Size::Quick,
            SizeArg::Default => Size::Default,
            SizeArg::Full => Size::Full,
        }
    }
}

/// The seed experiments' steps (`cargo xtask seeds` runs them, one process each).
#[derive(Debug, Subcommand)]
enum Seed {
    /// Runs an experiment through the YCSB driver: `fastpath` (seed 000), `bufpool` (seed 002)
    /// or `idlock` (seed 004).
    Run {
        /// Which.
        name: String,
        /// How big.
        #[arg(long, value_enum, default_value = "default")]
        size: SizeArg,
        /// Where results go.
        #[arg(long, default_value = "target/seeds")]
        out: PathBuf,
    },
    /// Reads a crate benchmark's output into a result: `reorder` (increment) or `tracing`.
    Import {
        /// Which.
        name: String,
        /// The benchmark's saved output.
        output: PathBuf,
        /// The size it ran at.
        #[arg(long, value_enum, default_value = "default")]
        size: SizeArg,
        /// Where results go.
        #[arg(long, default_value = "target/seeds")]
        out: PathBuf,
    },
    /// Writes `report.md` and the charts from the results, and prints the headline figures.
    Report {
        /// Where the results are.
        #[arg(long, default_value = "target/seeds")]
        out: PathBuf,
    },
}

fn seed(command: Seed) -> Result<(), String> {
    match command {
        Seed::Run { name, size, out } => {
            let result = match name.as_str() {
                "fastpath" => seeds::fastpath::run_seed(size.size())?,
                "bufpool" => seeds::bufpool::run_seed(size.size())?,
                "idlock" => seeds::idlock::run_seed(size.size())?,
                other => {
                    return Err(format!(
                        "no such seed {other}; fastpath, bufpool or idlock (the others are imported)"
                    ));
                }
            };
            print!("{}", seeds::report::section(&result));
            result.save(&out)
        }
        Seed::Import {
            name,
            output,
            size,
            out,
        } => {
            let text = std::fs::read_to_string(&output)
                .map_err(|e| format!("{}: {e}", output.display()))?;
            let result = match name.as_str() {
                "reorder" => seeds::imported::reorder(&text, size.size())?,
                "tracing" => seeds::imported::tracing(&text, size.size())?,
                other => return Err(format!("nothing to import as {other}")),
            };
            print!("{}", seeds::report::section(&result));
            result.save(&out)
        }
        Seed::Report { out } => {
            let results = seeds::report::write(&out)?;
            println!("report: {}", out.join("report.md").display());
            for r in &results {
                println!("figure: {} = {:.4}", r.figure.0, r.figure.1);
            }
            Ok(())
        }
    }
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Runs YCSB's CoreWorkload (existing YCSB workload files work unchanged).
    Ycsb(YcsbArgs),
    /// The seed experiments (`cargo xtask seeds` runs these steps).
    #[command(subcommand)]
    Seed(Seed),
    /// Lists the seed experiments.
    List,
}

fn ycsb(a: &YcsbArgs) -> Result<(), String> {
    let mut props = Props::new();
    for file in &a.files {
        let path = PathBuf::from(file);
        match (path.exists(), preset(file)) {
            (false, Some(text)) => props.load_str(text),
            _ => props.load_file(&path).map_err(|e| e.to_string())?,
        }
    }
    for arg in &a.props {
        props.set_arg(arg).map_err(|e| e.to_string())?;
    }
    let workload = CoreWorkload::new(&props).map_err(|e| e.to_string())?;
    let family = props.string("columnfamily", "family");
    let layout = match a.layout {
        LayoutArg::Columns => Layout::Columns,
        LayoutArg::Cell => Layout::Cell,
    };
    let temp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let store_dir = a
        .data_dir
        .clone()
        .unwrap_or_else(|| temp.path().to_path_buf());
    let store;
    let target: Box<dyn Target> = match a.target {
        TargetKind::Embedded => {
            store = Arc::new(
                Engine::open(
                    &store_dir,
                    EngineOptions {
                        default_durability: if a.durability == "fsync" {
                            Durability::FsyncWal
                        } else {
                            Durability::SyncWal
                        },
                        ..EngineOptions::default()
                    },
                )
                .map_err(|e| format!("opening {}: {e}", store_dir.display()))?,
            );
            Box::new(Embedded::new(&store, &workload.table, &family, layout)?)
        }
        TargetKind::Thrift => Box::new(Thrift::new(a.thrift, &workload.table, &family, layout)?),
        TargetKind::Fjall | TargetKind::Sled | TargetKind::Redb | TargetKind::Rocksdb => {
            peer(a.target, &store_dir, &a.durability)?
        }
    };
    eprintln!("keel-bench ycsb: {}", target.describe());
    let phases: &[bool] = match a.phase {
        Phase::Load => &[true],
        Phase::Run => &[false],
        Phase::Both => &[true, false],
    };
    let mut reports = serde_json::Map::new();
    for &load in phases {
        let options = RunOptions::from_props(&props, load).map_err(|e| e.to_string())?;
        let report = runner::run(&workload, &*target, &options)?;
        let name = if load { "load" } else { "run" };
        if a.json {
            reports.insert(
                name.to_string(),
                serde_json::to_value(&report).map_err(|e| e.to_string())?,
            );
        } else {
            if phases.len() > 1 {
                println!("# {name}");
            }
            print!("{}", report.text());
        }
    }
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&reports).map_err(|e| e.to_string())?
        );
    }
    Ok(())
}

/// A peer engine as the target, writing at `durability` (`sync` or `fsync`).
fn peer(
    kind: TargetKind,
    dir: &std::path::Path,
    durability: &str,
) -> Result<Box<dyn Target>, String> {
    use keel_bench::ycsb::peers::{self, Peer, PeerKind, WriteMode};
    let kind = match kind {
        TargetKind::Fjall => PeerKind::Fjall,
        TargetKind::Sled => PeerKind::Sled,
        TargetKind::Redb => PeerKind::Redb,
        _ => PeerKind::RocksDb,
    };
    let mode = if durability == "fsync" {
        WriteMode::Fsync
    } else {
        WriteMode::Sync
    };
    Ok(Box::new(Peer::new(kind, peers::open(kind, dir)?, mode)))
}

/// One seed experiment: the HBase report it reproduces and what measures it.
struct Experiment {
    name: &'static str,
    hbase: &'static str,
    mechanism: &'static str,
}

const EXPERIMENTS: &[Experiment] = &[
    Experiment {
        name: "rpc-fastpath",
        hbase: "HBASE-26551",
        mechanism: "idle handlers on a stack take calls directly (keel-rpc)",
    },
    Experiment {
        name: "write-path",
        hbase: "HBASE-15158",
        mechanism: "locks, MVCC, WAL append+sync, memstore, visible, unlock (keel-region)",
    },
    Experiment {
        name: "bufpool",
        hbase: "HBASE-14490",
        mechanism: "bounded shared pool of request buffers (keel-bufpool)",
    },
    Experiment {
        name: "tracing-off",
        hbase: "HBASE-27153/27155",
        mechanism: "spans that cost nothing when tracing is off (keel-region)",
    },
    Experiment {
        name: "idlock-pool",
        hbase: "HBASE-17747",
        mechanism: "soft vs weak id-lock pools in the block cache (keel-blockcache)",
    },
];

fn main() -> std::process::ExitCode {
    let result = match Cli::parse().command {
        Command::Ycsb(args) => ycsb(&args),
        Command::Seed(command) => seed(command),
        Command::List => {
            println!("{:<14} {:<18} mechanism", "experiment", "hbase");
            for e in EXPERIMENTS {
                println!("{:<14} {:<18} {}", e.name, e.hbase, e.mechanism);
            }
            Ok(())
        }
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("keel-bench: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
