//! `target/seeds/report.md` and one SVG chart per experiment: for each seed, Keel's A/B ratio
//! beside the seed's for every measure, and, for the fast path, the queue-time series.

use std::fmt::Write as _;
use std::path::Path;

use plotters::prelude::*;

use super::SeedResult;

fn fmt(v: f64) -> String {
    if v.is_nan() {
        "—".into()
    } else if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.3}")
    }
}

fn ratio(a: f64, b: f64) -> f64 {
    a / b
}

/// The markdown section of one experiment.
pub fn section(r: &SeedResult) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "## {} — {} ({})\n", r.id, r.title, r.hbase);
    let _ = writeln!(out, "{}\n", r.setup);
    let _ = writeln!(
        out,
        "**`{}` = {:.3}** (size: {:?})\n",
        r.figure.0, r.figure.1, r.size
    );
    let (a, b) = (&r.labels.0, &r.labels.1);
    let (sa, sb) = r.seed_labels.as_ref().unwrap_or(&r.labels);
    let _ = writeln!(
        out,
        "| measure | Keel: {a} | Keel: {b} | Keel {a} ÷ {b} | seed: {sa} | seed: {sb} | seed ratio |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|");
    for row in &r.rows {
        let seed_ratio = match (row.seed_a, row.seed_b) {
            (Some(x), Some(y)) => fmt(ratio(x, y)),
            _ => "—".into(),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} |",
            row.measure,
            fmt(row.keel_a),
            fmt(row.keel_b),
            fmt(ratio(row.keel_a, row.keel_b)),
            row.seed_a.map_or("—".into(), fmt),
            row.seed_b.map_or("—".into(), fmt),
            seed_ratio
        );
    }
    for table in &r.tables {
        let _ = writeln!(out, "\n{}\n", table.title);
        let _ = writeln!(out, "| measure | {} |", table.columns.join(" | "));
        let _ = writeln!(out, "|---|{}", "---|".repeat(table.columns.len()));
        for (measure, values) in &table.rows {
            let cells: Vec<String> = values
                .iter()
                .map(|v| v.map_or_else(|| "—".into(), fmt))
                .collect();
            let _ = writeln!(out, "| {measure} | {} |", cells.join(" | "));
        }
    }
    for note in &r.notes {
        let _ = writeln!(out, "\n- {note}");
    }
    let _ = writeln!(out, "\n![{}]({}.svg)\n", r.title, r.name);
    out
}

/// Draws the ratio chart (and the series, if any) to `<out>/<name>.svg`.
pub fn chart(r: &SeedResult, out: &Path) -> Result<(), String> {
    let path = out.join(format!("{}.svg", r.name));
    let draw = || -> Result<(), Box<dyn std::error::Error>> {
        let height = if r.series.is_empty() { 420 } else { 800 };
        let root = SVGBackend::new(&path, (1000, height)).into_drawing_area();
        root.fill(&WHITE)?;
        let (top, bottom) = if r.series.is_empty() {
            (root.clone(), None)
        } else {
            let (t, b) = root.split_vertically(400);
            (t, Some(b))
        };
        let rows: Vec<(String, f64, Option<f64>)> = r
            .rows
            .iter()
            .map(|row| {
                (
                    row.measure.clone(),
                    row.keel_a / row.keel_b,
                    row.seed_a.zip(row.seed_b).map(|(x, y)| x / y),
                )
            })
            .filter(|(_, k, _)| k.is_finite())
            .collect();
        let y_max = rows
            .iter()
            .flat_map(|(_, k, s)| [Some(*k), *s].into_iter().flatten())
            .fold(1.2_f64, f64::max)
            * 1.1;
        let mut chart = ChartBuilder::on(&top)
            .caption(
                format!("{} ({}): {} ÷ {}", r.id, r.hbase, r.labels.0, r.labels.1),
                ("sans-serif", 20),
            )
            .margin(12)
            .x_label_area_size(30)
            .y_label_area_size(50)
            .build_cartesian_2d(0.0..(rows.len() as f64).max(1.0), 0.0..y_max)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(rows.len().max(1))
            .x_label_formatter(&|x| format!("{}", (*x as usize) + 1))
            .x_desc("measure (numbered as in the report's table)")
            .y_desc("A ÷ B")
            .draw()?;
        chart
            .draw_series(rows.iter().enumerate().map(|(i, (_, k, _))| {
                let x = i as f64;
                Rectangle::new([(x + 0.1, 0.0), (x + 0.45, *k)], BLUE.mix(0.7).filled())
            }))?
            .label("Keel")
            .legend(|(x, y)| Rectangle::new([(x, y - 5), (x + 15, y + 5)], BLUE.mix(0.7).filled()));
        chart
            .draw_series(rows.iter().enumerate().filter_map(|(i, (_, _, s))| {
                let x = i as f64;
                s.map(|s| Rectangle::new([(x + 0.55, 0.0), (x + 0.9, s)], RED.mix(0.5).filled()))
            }))?
            .label("the seed")
            .legend(|(x, y)| Rectangle::new([(x, y - 5), (x + 15, y + 5)], RED.mix(0.5).filled()));
        chart.draw_series(LineSeries::new(
            [(0.0, 1.0), (rows.len() as f64, 1.0)],
            BLACK.stroke_width(1),
        ))?;
        chart
            .configure_series_labels()
            .background_style(WHITE)
            .border_style(BLACK)
            .draw()?;
        if let Some(area) = bottom {
            let x_max = r
                .series
                .iter()
                .flat_map(|s| s.points.iter().map(|p| p.0))
                .fold(1.0_f64, f64::max);
            let y_max = r
                .series
                .iter()
                .flat_map(|s| s.points.iter().map(|p| p.1))
                .fold(1.0_f64, f64::max)
                * 1.1;
            let mut chart = ChartBuilder::on(&area)
                .caption(
                    "Mean queue time per 0.5 s (QueueTimeComparison)",
                    ("sans-serif", 18),
                )
                .margin(12)
                .x_label_area_size(35)
                .y_label_area_size(60)
                .build_cartesian_2d(0.0..x_max, 0.0..y_max)?;
            chart
                .configure_mesh()
                .x_desc("seconds into the run")
                .y_desc("queue time, µs")
                .draw()?;
            let palette = [&RED, &BLUE, &GREEN, &MAGENTA, &BLACK, &CYAN];
            for (i, s) in r.series.iter().enumerate() {
                let color = palette[i % palette.len()];
                chart
                    .draw_series(LineSeries::new(
                        s.points.iter().copied(),
                        color.stroke_width(2),
                    ))?
                    .label(s.label.as_str())
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                    });
            }
            chart
                .configure_series_labels()
                .background_style(WHITE)
                .border_style(BLACK)
                .draw()?;
        }
        root.present()?;
        Ok(())
    };
    draw().map_err(|e| format!("drawing {}: {e}", path.display()))
}

/// Reads every `<out>/*.json`, draws the charts, writes `report.md`; returns the results.
pub fn write(out: &Path) -> Result<Vec<SeedResult>, String> {
    let mut results: Vec<SeedResult> = std::fs::read_dir(out)
        .map_err(|e| format!("{}: {e}", out.display()))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .map(|p| {
            let text = std::fs::read_to_string(&p).map_err(|e| format!("{}: {e}", p.display()))?;
            serde_json::from_str(&text).map_err(|e| format!("{}: {e}", p.display()))
        })
        .collect::<Result<_, String>>()?;
    results.sort_by(|a, b| a.id.cmp(&b.id));
    let mut md = String::from(
        "# Keel's seed experiments\n\nEach of the five HBase comparisons behind Keel's mechanisms, \
         run A/B on this machine by `cargo xtask seeds`, beside the seed's published numbers. \
         Ratios are A ÷ B from one run; this machine is shared and noisy.\n\n\
         | seed | HBase | figure | value |\n|---|---|---|---|\n",
    );
    for r in &results {
        let _ = writeln!(
            md,
            "| {} | {} | `{}` | {:.3} |",
            r.id, r.hbase, r.figure.0, r.figure.1
        );
    }
    md.push('\n');
    for r in &results {
        chart(r, out)?;
        md.push_str(&section(r));
    }
    let path = out.join("report.md");
    std::fs::write(&path, md).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(results)
}
