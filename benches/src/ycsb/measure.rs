//! Measurements as YCSB's `hdrhistogram` measurement type: per operation name a histogram of
//! latencies in µs and a count per return status, and YCSB's text report (§11.5): `[OVERALL]`,
//! then per operation `Operations`, `AverageLatency(us)`, `MinLatency(us)`, `MaxLatency(us)`,
//! the configured percentiles with ordinal labels, and `Return=` lines.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use hdrhistogram::Histogram;
use serde::Serialize;

use super::db::Status;

/// One operation name's measurements.
#[derive(Debug, Clone)]
pub struct OpStats {
    /// Latencies, µs.
    pub latency_us: Histogram<u64>,
    /// Calls per status.
    pub returns: BTreeMap<Status, u64>,
}

impl OpStats {
    fn new() -> OpStats {
        OpStats {
            latency_us: Histogram::new_with_bounds(1, 3_600_000_000, 3)
                .unwrap_or_else(|_| unreachable!("valid histogram bounds")),
            returns: BTreeMap::new(),
        }
    }
}

/// Measurements by name (`READ`, `Intended-READ`, `CLEANUP`, …).
#[derive(Debug, Clone, Default)]
pub struct Measurements {
    /// By name, in report order.
    pub ops: BTreeMap<(u8, String), OpStats>,
}

/// Report order: YCSB prints a hash map's order; Keel prints a stable one.
fn rank(name: &str) -> u8 {
    let base = name.strip_prefix("Intended-").unwrap_or(name);
    let r = match base {
        "INSERT" => 0,
        "READ" => 1,
        "UPDATE" => 2,
        "SCAN" => 3,
        "READ-MODIFY-WRITE" => 4,
        "CLEANUP" => 6,
        _ => 5,
    };
    if name.starts_with("Intended-") {
        r + 10
    } else {
        r
    }
}

impl Measurements {
    /// Records one call of `name` that took `us` and ended with `status` (`None`: latency only,
    /// as YCSB's intended-time and read-modify-write entries).
    pub fn record(&mut self, name: &str, us: u64, status: Option<Status>) {
        let stats = self
            .ops
            .entry((rank(name), name.to_string()))
            .or_insert_with(OpStats::new);
        stats.latency_us.saturating_record(us.max(1));
        if let Some(status) = status {
            *stats.returns.entry(status).or_insert(0) += 1;
        }
    }

    /// Adds another thread's measurements.
    pub fn merge(&mut self, other: &Measurements) {
        for (key, stats) in &other.ops {
            let mine = self.ops.entry(key.clone()).or_insert_with(OpStats::new);
            // Same bounds everywhere: adding cannot fail.
            let _ = mine.latency_us.add(&stats.latency_us);
            for (status, n) in &stats.returns {
                *mine.returns.entry(*status).or_insert(0) += n;
            }
        }
    }

    /// One operation's stats.
    pub fn get(&self, name: &str) -> Option<&OpStats> {
        self.ops.get(&(rank(name), name.to_string()))
    }
}

/// Java's `Double.toString`: shortest round-trip digits, always a decimal point, scientific
/// (`4.2E-4`) below 10⁻³ and from 10⁷.
pub fn java_double(x: f64) -> String {
    if x == 0.0 {
        return "0.0".into();
    }
    if !x.is_finite() {
        return if x.is_nan() {
            "NaN".into()
        } else if x > 0.0 {
            "Infinity".into()
        } else {
            "-Infinity".into()
        };
    }
    let a = x.abs();
    if (1e-3..1e7).contains(&a) {
        let s = format!("{x}");
        if s.contains('.') { s } else { format!("{s}.0") }
    } else {
        let s = format!("{x:e}");
        let (mantissa, exponent) = s.split_once('e').unwrap_or((&s, "0"));
        let mantissa = if mantissa.contains('.') {
            mantissa.to_string()
        } else {
            format!("{mantissa}.0")
        };
        format!("{mantissa}E{exponent}")
    }
}

/// YCSB's percentile label: 95 → "95th", 1 → "1st", 99.9 → "99.9".
pub fn ordinal(p: f64) -> String {
    if p.fract() != 0.0 {
        return format!("{p}");
    }
    let n = p as i64;
    let suffix = match (n % 100, n % 10) {
        (11..=13, _) => "th",
        (_, 1) => "st",
        (_, 2) => "nd",
        (_, 3) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

/// The whole report.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Wall time of the phase, ms.
    pub runtime_ms: u64,
    /// Operations done (every measured operation except intended-time and cleanup entries).
    pub operations: u64,
    /// Per operation name.
    pub ops: Vec<OpReport>,
}

/// One operation name's block.
#[derive(Debug, Clone, Serialize)]
pub struct OpReport {
    /// `READ`, `Intended-READ`, …
    pub name: String,
    /// Calls measured.
    pub operations: u64,
    /// Mean, µs.
    pub average_us: f64,
    /// Minimum, µs.
    pub min_us: u64,
    /// Maximum, µs.
    pub max_us: u64,
    /// (percentile, µs).
    pub percentiles: Vec<(f64, u64)>,
    /// (status, count).
    pub returns: Vec<(String, u64)>,
}

impl Report {
    /// From merged measurements.
    pub fn new(m: &Measurements, runtime_ms: u64, operations: u64, percentiles: &[f64]) -> Report {
        let ops = m
            .ops
            .iter()
            .map(|((_, name), s)| OpReport {
                name: name.clone(),
                operations: s.latency_us.len(),
                average_us: s.latency_us.mean(),
                min_us: s.latency_us.min(),
                max_us: s.latency_us.max(),
                percentiles: percentiles
                    .iter()
                    .map(|p| (*p, s.latency_us.value_at_percentile(*p)))
                    .collect(),
                returns: s
                    .returns
                    .iter()
                    .map(|(st, n)| (st.name().to_string(), *n))
                    .collect(),
            })
            .collect();
        Report {
            runtime_ms,
            operations,
            ops,
        }
    }

    /// Operations that returned `ERROR`.
    pub fn errors(&self) -> u64 {
        self.ops
            .iter()
            .flat_map(|op| &op.returns)
            .filter(|(status, _)| status == "ERROR")
            .map(|(_, n)| n)
            .sum()
    }

    /// Throughput as YCSB computes it: 1000 × operations / runtime in ms.
    pub fn throughput(&self) -> f64 {
        if self.runtime_ms == 0 {
            0.0
        } else {
            1000.0 * self.operations as f64 / self.runtime_ms as f64
        }
    }

    /// The text report, line by line as YCSB's `TextMeasurementsExporter` writes it.
    pub fn text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "[OVERALL], RunTime(ms), {}", self.runtime_ms);
        let _ = writeln!(
            out,
            "[OVERALL], Throughput(ops/sec), {}",
            java_double(self.throughput())
        );
        for op in &self.ops {
            let n = &op.name;
            let _ = writeln!(out, "[{n}], Operations, {}", op.operations);
            let _ = writeln!(
                out,
                "[{n}], AverageLatency(us), {}",
                java_double(op.average_us)
            );
            let _ = writeln!(out, "[{n}], MinLatency(us), {}", op.min_us);
            let _ = writeln!(out, "[{n}], MaxLatency(us), {}", op.max_us);
            for (p, v) in &op.percentiles {
                let _ = writeln!(out, "[{n}], {}PercentileLatency(us), {v}", ordinal(*p));
            }
            for (status, count) in &op.returns {
                let _ = writeln!(out, "[{n}], Return={status}, {count}");
            }
        }
        out
    }
}
