//! `--plot`: draws the queue-time series CSV as an SVG chart like the seed's
//! QueueTimeComparison: each design's run laid end to end on one time axis.

use std::collections::BTreeMap;
use std::path::Path;

use plotters::prelude::*;

/// Reads `csv` (written by a bench run) and writes `svg`; returns a one-line summary.
pub(crate) fn render(csv: &Path, svg: &Path) -> Result<String, Box<dyn std::error::Error>> {
    let text = std::fs::read_to_string(csv)
        .map_err(|e| format!("{}: {e} (run `cargo xtask bench rpc` first)", csv.display()))?;
    // Series per design, for the seed's configuration (most handlers, io mode, first round).
    let mut rows = text.lines();
    let header: Vec<&str> = rows.next().ok_or("empty CSV")?.split(',').collect();
    let col = |name: &str| {
        header
            .iter()
            .position(|h| *h == name)
            .ok_or(format!("CSV lacks column {name}"))
    };
    let (c_handlers, c_mode, c_design, c_round, c_t, c_calls, c_avg) = (
        col("handlers")?,
        col("mode")?,
        col("design")?,
        col("round")?,
        col("t_s")?,
        col("calls")?,
        col("queue_avg_us")?,
    );
    let records: Vec<Vec<&str>> = rows.map(|r| r.split(',').collect()).collect();
    let max_handlers = records
        .iter()
        .filter_map(|r| r[c_handlers].parse::<usize>().ok())
        .max()
        .ok_or("no rows")?;
    // (run order, design) → (time, calls, calls × mean queue time)
    type Points = Vec<(f64, f64, f64)>;
    let mut series: BTreeMap<(usize, String), Points> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    for r in &records {
        if r[c_handlers].parse::<usize>()? != max_handlers || r[c_mode] != "io" || r[c_round] != "0"
        {
            continue;
        }
        let design = r[c_design].to_string();
        if !order.contains(&design) {
            order.push(design.clone());
        }
        let index = order.iter().position(|d| *d == design).unwrap_or(0);
        let calls: f64 = r[c_calls].parse()?;
        let avg: f64 = r[c_avg].parse()?;
        series
            .entry((index, design))
            .or_default()
            .push((r[c_t].parse()?, calls, avg * calls));
    }
    // Sum the classes per time bucket: the call-weighted mean queue time of all operations.
    let mut lines = Vec::new();
    let mut offset = 0.0;
    for ((_, design), points) in &series {
        let mut by_t: BTreeMap<u64, (f64, f64)> = BTreeMap::new();
        for (t, calls, weighted) in points {
            let e = by_t.entry((t * 1000.0) as u64).or_default();
            e.0 += calls;
            e.1 += weighted;
        }
        let line: Vec<(f64, f64)> = by_t
            .iter()
            .map(|(t, (calls, w))| (offset + *t as f64 / 1000.0, w / calls.max(1.0)))
            .collect();
        offset = line.last().map_or(offset, |p| p.0) + 0.5;
        lines.push((design.clone(), line));
    }
    let y_max = lines
        .iter()
        .flat_map(|(_, l)| l.iter().map(|p| p.1))
        .fold(1.0, f64::max)
        * 1.1;
    let root = SVGBackend::new(svg, (1000, 450)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("Mean queue time per 100 ms, {max_handlers} handlers, io mode (one run each)"),
            ("sans-serif", 20),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..offset.max(1.0), 0.0..y_max)?;
    chart
        .configure_mesh()
        .x_desc("seconds (runs laid end to end)")
        .y_desc("queue time, µs")
        .draw()?;
    let palette = [&RED, &BLUE, &GREEN, &MAGENTA, &BLACK];
    for (i, (design, line)) in lines.iter().enumerate() {
        let color = palette[i % palette.len()];
        chart
            .draw_series(LineSeries::new(line.iter().copied(), color.stroke_width(2)))?
            .label(design.as_str())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
    }
    chart
        .configure_series_labels()
        .background_style(WHITE)
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(format!(
        "{} designs drawn to {}",
        lines.len(),
        svg.display()
    ))
}
