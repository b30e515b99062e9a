//! `keel-bench`: Keel's load driver for whole-stack A/B experiments.
//!
//! The YCSB-compatible driver and the five seed experiments arrive with the load-driver issue;
//! until then `keel-bench list` shows each experiment, the HBase change it reproduces and the
//! crate whose micro-benchmark (`cargo xtask bench <name>`) measures it in isolation today.

#![expect(clippy::print_stdout, reason = "a CLI reports on the terminal")]

use clap::{Parser, Subcommand};

/// Keel's load driver.
#[derive(Debug, Parser)]
#[command(name = "keel-bench", about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Lists the seed experiments and where each stands.
    List,
}

/// One seed experiment: the HBase report it reproduces and what measures it now.
struct Experiment {
    name: &'static str,
    hbase: &'static str,
    mechanism: &'static str,
    status: &'static str,
}

const EXPERIMENTS: &[Experiment] = &[
    Experiment {
        name: "rpc-fastpath",
        hbase: "HBASE-26551",
        mechanism: "idle handlers on a stack take calls directly (keel-rpc)",
        status: "crate-level: cargo xtask bench rpc",
    },
    Experiment {
        name: "write-path",
        hbase: "HBASE-15158",
        mechanism: "locks, MVCC, WAL append+sync, memstore, visible, unlock (keel-region)",
        status: "crate-level: cargo xtask bench increment",
    },
    Experiment {
        name: "bufpool",
        hbase: "HBASE-14490",
        mechanism: "bounded shared pool of request buffers (keel-bufpool)",
        status: "crate-level: cargo xtask bench bufpool",
    },
    Experiment {
        name: "tracing-off",
        hbase: "HBASE-27153/27155",
        mechanism: "spans that cost nothing when tracing is off (keel-region)",
        status: "planned",
    },
    Experiment {
        name: "idlock-pool",
        hbase: "HBASE-17747",
        mechanism: "soft vs weak id-lock pools in the block cache (keel-blockcache)",
        status: "crate-level: cargo xtask bench blockcache",
    },
];

fn main() {
    match Cli::parse().command {
        Command::List => {
            println!(
                "{:<14} {:<18} {:<42} mechanism",
                "experiment", "hbase", "status"
            );
            for e in EXPERIMENTS {
                println!(
                    "{:<14} {:<18} {:<42} {}",
                    e.name, e.hbase, e.status, e.mechanism
                );
            }
        }
    }
}
