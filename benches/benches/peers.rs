//! `cargo xtask bench peers [--quick]`: Keel beside fjall, sled, redb and (with keel-bench's
//! `peers` feature) RocksDB on YCSB A, C, E, F and the increment test, at matched durability,
//! interleaved, each measurement on a fresh store (`keel_bench::ycsb::compare`). Prints a table
//! of medians with their spread, then `figure: peers_<workload>_<durability>_keel_vs_best` per
//! row and `figure: peers_columns_vs_cell_<workload>` for the reads and scans.
//! `--rows a,increment`, `--levels sync` (or `fsync`), `--engines keel,sled` (`keel-columns` or
//! `keel-cell` for one layout) and `--rounds N` narrow or lengthen a run. Keel runs with
//! in-memory compaction `BASIC`; `--in-memory-compaction NONE` (HBase's default) measures it
//! without, and `--flatten-copies off` measures `BASIC` leaving the flattened cells where the
//! writes put them.

#![expect(clippy::print_stdout, reason = "a benchmark reports on the terminal")]

use keel_bench::ycsb::compare::{self, Engine, Plan, Work, columns_vs_cell, keel_vs_best};
use keel_bench::ycsb::targets::Layout;
use keel_testkit::figure;

fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    // `--rows a,increment`, `--levels sync`, `--engines keel,fjall` and `--rounds N` narrow or
    // lengthen the run (to profile one row at one durability, or measure it longer).
    let list = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .map(|v| v.split(',').map(str::to_lowercase).collect::<Vec<_>>())
    };
    let mut plan = Plan::new(quick);
    if let Some(rounds) = list("--rounds").and_then(|r| r.first()?.parse().ok()) {
        plan.rounds = rounds;
    }
    if let Some(policy) = list("--in-memory-compaction").and_then(|p| p.first().cloned()) {
        plan.in_memory_compaction = policy.parse()?;
    }
    if let Some(copy) = list("--flatten-copies").and_then(|c| c.first().cloned()) {
        plan.flatten_copies = match copy.as_str() {
            "on" | "true" => true,
            "off" | "false" => false,
            other => return Err(format!("--flatten-copies {other}: expected on or off")),
        };
    }
    if let Some(rows) = list("--rows") {
        plan.rows.retain(|r| rows.iter().any(|n| n == r.name));
    }
    if let Some(levels) = list("--levels") {
        plan.rows.retain(|r| levels.iter().any(|l| l == r.level()));
    }
    if let Some(engines) = list("--engines") {
        // `keel` runs both layouts; `keel-columns` or `keel-cell` one (to profile it).
        plan.layouts.retain(|layout| match layout {
            Layout::Columns => engines.iter().any(|e| e == "keel" || e == "keel-columns"),
            Layout::Cell => engines.iter().any(|e| e == "keel" || e == "keel-cell"),
        });
        plan.peers
            .retain(|p| engines.iter().any(|e| *e == p.name().to_lowercase()));
    }
    println!(
        "peers: {} records of 10 x 100 B, {} YCSB threads, {} round(s), engines alternate their order each round; Keel's in-memory compaction {} (copies {}); peers: {}",
        plan.records,
        plan.threads,
        plan.rounds,
        plan.in_memory_compaction,
        if plan.flatten_copies { "on" } else { "off" },
        plan.peers
            .iter()
            .map(|p| p.name())
            .collect::<Vec<_>>()
            .join(", ")
    );
    // Increments are one cell in either layout: Keel runs once there.
    let name = |row: &compare::Row, engine: Engine| match (row.work, engine) {
        (Work::Increment { .. }, Engine::Keel(_)) => "Keel".to_string(),
        _ => engine.name(),
    };
    let results = compare::run(&plan, &mut |row, engine, ops| {
        println!(
            "  {} {}: {} {ops:.0} ops/s",
            row.name,
            row.level(),
            name(row, engine)
        );
    })?;
    println!();
    println!("| row | engine | ops/s (median) | rounds |");
    println!("|---|---|---|---|");
    for (row, measured) in &results {
        let label = match row.work {
            Work::Ycsb(_) => format!("{} {}", row.name.to_uppercase(), row.level()),
            Work::Increment { threads, .. } => format!("increment {threads} thr {}", row.level()),
        };
        for m in measured {
            let rounds: Vec<String> = m.rounds.iter().map(|r| format!("{r:.0}")).collect();
            println!(
                "| {label} | {} | {:.0} | {} |",
                name(row, m.engine),
                m.median(),
                rounds.join(" / ")
            );
        }
    }
    println!();
    for (row, measured) in &results {
        if let Some(ratio) = keel_vs_best(row, measured) {
            println!(
                "{}",
                figure(
                    &format!("peers_{}_{}_keel_vs_best", row.name, row.level()),
                    ratio
                )
            );
        }
    }
    for (row, measured) in &results {
        if matches!(row.work, Work::Ycsb("c" | "e"))
            && row.level() == "sync"
            && let Some(ratio) = columns_vs_cell(measured)
        {
            println!(
                "{}",
                figure(&format!("peers_columns_vs_cell_{}", row.name), ratio)
            );
        }
    }
    Ok(())
}
