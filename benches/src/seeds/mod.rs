//! The five seed experiments (`cargo xtask seeds`): each HBase comparison A/B on this machine,
//! beside the seed's published numbers. Three run here through keel-bench's YCSB driver:
//! `fastpath` and `bufpool` against an in-process `keel serve`, `idlock` embedded. The other
//! two are keel-region's own benchmarks (`increment`, `tracing`), whose output `import` turns
//! into the same kind of result. `report` writes `report.md` and an SVG
//! chart per experiment.

pub mod bufpool;
pub mod fastpath;
pub mod idlock;
pub mod imported;
pub mod report;

use serde::{Deserialize, Serialize};

/// The median of the finite `values` (the mean of the middle two for an even count); NaN if
/// there are none. The experiments that repeat their pairs or rounds report it.
pub fn median(values: impl IntoIterator<Item = f64>) -> f64 {
    let mut v: Vec<f64> = values.into_iter().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    if v.len() % 2 == 1 {
        v[mid]
    } else {
        (v[mid - 1] + v[mid]) / 2.0
    }
}

/// How big a run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Size {
    /// Seconds: CI's smoke run.
    Quick,
    /// About two minutes per experiment, ten in all.
    Default,
    /// The seed's own sizes, where this machine can hold them.
    Full,
}

/// One row of an experiment's table: a measure, Keel's A and B, and the seed's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// What is measured.
    pub measure: String,
    /// Keel with the change (or the first alternative).
    pub keel_a: f64,
    /// Keel without it.
    pub keel_b: f64,
    /// The seed's A, if it published one.
    pub seed_a: Option<f64>,
    /// The seed's B.
    pub seed_b: Option<f64>,
}

/// A line of a time series (the fast path's queue time).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Series {
    /// Its label.
    pub label: String,
    /// (seconds, value) points.
    pub points: Vec<(f64, f64)>,
}

/// A table with one column per alternative, for an experiment with more than two.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Table {
    /// What it shows.
    pub title: String,
    /// The column headings (after the measure's).
    pub columns: Vec<String>,
    /// Each measure and its value per column (`None`: not measured or not published).
    pub rows: Vec<(String, Vec<Option<f64>>)>,
}

/// One experiment's outcome, written as `<out>/<name>.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeedResult {
    /// `seed000` … `seed004`.
    pub id: String,
    /// Short name (`fastpath`, …).
    pub name: String,
    /// The HBase issue.
    pub hbase: String,
    /// What A and B are.
    pub title: String,
    /// Labels of A and B.
    pub labels: (String, String),
    /// What the seed's own A and B were, where they differ from Keel's.
    #[serde(default)]
    pub seed_labels: Option<(String, String)>,
    /// What was run, in a sentence or two.
    pub setup: String,
    /// The headline figure's name and value.
    pub figure: (String, f64),
    /// The table.
    pub rows: Vec<Row>,
    /// Extra lines (counts, caveats).
    pub notes: Vec<String>,
    /// Time series to chart, if any.
    pub series: Vec<Series>,
    /// Further tables (every alternative side by side).
    #[serde(default)]
    pub tables: Vec<Table>,
    /// The size it ran at.
    pub size: Size,
}

impl SeedResult {
    /// Writes `<out>/<name>.json`.
    pub fn save(&self, out: &std::path::Path) -> Result<(), String> {
        std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
        let path = out.join(format!("{}.json", self.name));
        let text = serde_json::to_string_pretty(self).map_err(|e| e.to_string())?;
        std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))
    }
}
