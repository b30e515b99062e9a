//! Seeds 001 and 003 come from keel-region's own benchmarks (`increment`, `tracing`), each run
//! in its own process by `cargo xtask seeds`; this reads their output (tables and `figure:`
//! lines) into [`SeedResult`]s.

use super::{Row, SeedResult, Size};

/// `figure: <name> = <value>` lines.
fn figure(output: &str, name: &str) -> Result<f64, String> {
    output
        .lines()
        .find_map(|l| {
            l.strip_prefix("figure: ")?
                .strip_prefix(name)?
                .trim_start()
                .strip_prefix('=')?
                .trim()
                .parse()
                .ok()
        })
        .ok_or_else(|| format!("the benchmark printed no figure {name}"))
}

/// The numbers of the first line that starts with `prefix` (after splitting off a `|`).
fn numbers_after(output: &str, prefix: &str) -> Result<Vec<f64>, String> {
    let line = output
        .lines()
        .find(|l| l.trim_start().starts_with(prefix))
        .ok_or_else(|| format!("no line starting with {prefix:?}"))?;
    Ok(line.trim_start()[prefix.len()..]
        .split(['|', ' '])
        .filter_map(|t| t.trim().parse::<f64>().ok())
        .collect())
}

fn ratio_row(measure: &str, a: f64, b: f64, seed: Option<(f64, f64)>) -> Row {
    Row {
        measure: measure.into(),
        keel_a: a,
        keel_b: b,
        seed_a: seed.map(|s| s.0),
        seed_b: seed.map(|s| s.1),
    }
}

/// Seed 001 from `cargo bench -p keel-region --bench increment`.
pub fn reorder(output: &str, size: Size) -> Result<SeedResult, String> {
    // durability order total-ms incr/s p75 p95 p99 | stages…
    let new = numbers_after(output, "SyncWal   Reordered")?;
    let old = numbers_after(output, "SyncWal   Legacy")?;
    if new.len() < 5 || old.len() < 5 {
        return Err("the increment table has fewer columns than expected".into());
    }
    let (n_ms, n75, n95, n99) = (new[0], new[2], new[3], new[4]);
    let (o_ms, o75, o95, o99) = (old[0], old[2], old[3], old[4]);
    let mut rows = vec![
        ratio_row(
            "total time, s",
            n_ms / 1000.0,
            o_ms / 1000.0,
            Some((56.603_756_542, 74.495_320_701)),
        ),
        ratio_row("p75, µs", n75, o75, Some((2_979.505, 4_097.315))),
        ratio_row("p95, µs", n95, o95, Some((4_664.926, 6_597.782))),
        ratio_row("p99, µs", n99, o99, Some((5_463.442, 7_659.555))),
    ];
    // The same comparison with every increment fdatasynced, when the benchmark printed it.
    let mut notes = Vec::new();
    if let (Ok(new), Ok(old)) = (
        numbers_after(output, "FsyncWal  Reordered"),
        numbers_after(output, "FsyncWal  Legacy"),
    ) && new.len() >= 5
        && old.len() >= 5
    {
        rows.push(ratio_row(
            "FsyncWal: total time, s",
            new[0] / 1000.0,
            old[0] / 1000.0,
            None,
        ));
        rows.push(ratio_row("FsyncWal: p99, µs", new[4], old[4], None));
        notes.push(
            "The headline is at SyncWal, Keel's default (written to the OS, as HBase's SYNC_WAL \
             is flushed to the datanodes). On HDFS that flush is a network round trip; Keel's is a \
             `write(2)` that the appender makes itself, so holding the row lock through it costs \
             little, and the reorder's gain shows when the sync is slow: the FsyncWal rows."
                .into(),
        );
    }
    Ok(SeedResult {
        id: "seed001".into(),
        name: "reorder".into(),
        hbase: "HBASE-15158".into(),
        title: "the reordered write path vs the legacy one (increments)".into(),
        seed_labels: None,
        labels: ("reordered".into(), "legacy".into()),
        setup:
            "keel-region embedded, HBase's IncrementPerformanceTest: 80 threads incrementing the \
                same rows, SyncWal (`cargo xtask bench increment`). The seed's latencies are \
                IncrementPerformanceTest's printed values read as nanoseconds."
                .into(),
        figure: (
            "seed001_reorder_time_ratio".into(),
            figure(output, "increment_new_vs_legacy_time")?,
        ),
        rows,
        notes,
        series: Vec::new(),
        tables: Vec::new(),
        size,
    })
}

/// Seed 003 from `cargo xtask bench tracing` (three builds).
pub fn tracing(output: &str, size: Size) -> Result<SeedResult, String> {
    let row = |name: &str| numbers_after(output, &format!("| {name} |"));
    let out = row("compiled out")?;
    let off = row("compiled in, no subscriber")?;
    let on = row("compiled in, recording subscriber")?;
    // Older outputs have no OTLP row.
    let otlp = row("compiled in, OTLP export").ok();
    let get = |v: &[f64], i: usize| v.get(i).copied().unwrap_or(f64::NAN);
    let mut rows = vec![
        ratio_row(
            "run time, ms (in, off ÷ out)",
            get(&off, 0),
            get(&out, 0),
            None,
        ),
        ratio_row(
            "read p95, µs (in, off ÷ out)",
            get(&off, 1),
            get(&out, 1),
            None,
        ),
        ratio_row(
            "read p99, µs (in, off ÷ out)",
            get(&off, 2),
            get(&out, 2),
            None,
        ),
        ratio_row(
            "read p99, µs (in, on ÷ out)",
            get(&on, 2),
            get(&out, 2),
            None,
        ),
    ];
    if let Some(otlp) = &otlp {
        rows.push(ratio_row(
            "run time, ms (in, OTLP export ÷ out)",
            get(otlp, 0),
            get(&out, 0),
            None,
        ));
        rows.push(ratio_row(
            "read p99, µs (in, OTLP export ÷ out)",
            get(otlp, 2),
            get(&out, 2),
            None,
        ));
    }
    Ok(SeedResult {
        id: "seed003".into(),
        name: "tracing".into(),
        hbase: "HBASE-27153/27155".into(),
        title: "tracing compiled in and off vs compiled out (and on, with a subscriber)".into(),
        seed_labels: None,
        labels: ("compiled in".into(), "compiled out".into()),
        setup:
            "keel-region embedded, 20% updates / 80% random reads over a compacted, cached table, \
                three builds of the same benchmark (`cargo xtask bench tracing`)."
                .into(),
        figure: (
            "seed003_tracing_off_p99_ratio".into(),
            figure(output, "tracing_off_vs_compiled_out_p99")?,
        ),
        rows,
        notes: vec![
            "The seed's numbers live in a spreadsheet that is not public; its summary: HBASE-27155 \
             cost about 2 ms at p95 and 1 ms at p99 with tracing disabled."
                .into(),
            "OTLP export: the INFO spans of every operation sent over OTLP/HTTP as `keel serve \
             --otlp-endpoint` sends them, every trace sampled, to a stand-in collector in the \
             benchmark's process (the cost of exporting everything; keel.otlp.sampling.ratio \
             lowers it)."
                .into(),
        ],
        series: Vec::new(),
        tables: Vec::new(),
        size,
    })
}
