//! `/`: the status page — server-rendered HTML with inline CSS and SVG, no scripts and no
//! external assets, so it works with JavaScript off and from an air-gapped browser. It
//! refreshes itself every 10 s (a meta refresh).

use std::fmt::Write as _;

use super::history::Sample;
use super::snapshot::Snapshot;

/// Escapes text for HTML.
fn h(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// 1536 → "1.5 KiB".
pub(super) fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// 1234567 → "1,234,567".
pub(super) fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn percent(ratio: f64) -> String {
    format!("{:.1}%", ratio * 100.0)
}

/// An inline SVG line of `values` (oldest first), scaled to its own maximum.
fn sparkline(values: &[f64], label: &str) -> String {
    const W: f64 = 240.0;
    const H: f64 = 40.0;
    let max = values.iter().copied().fold(0.0_f64, f64::max);
    let mut points = String::new();
    if values.len() >= 2 && max > 0.0 {
        let step = W / (values.len() - 1) as f64;
        for (i, v) in values.iter().enumerate() {
            let _ = write!(
                points,
                "{:.1},{:.1} ",
                i as f64 * step,
                H - 2.0 - (v / max) * (H - 4.0)
            );
        }
    }
    format!(
        "<svg class=\"spark\" role=\"img\" aria-label=\"{}\" width=\"{W}\" height=\"{H}\" viewBox=\"0 0 {W} {H}\"><rect width=\"{W}\" height=\"{H}\" fill=\"#f4f6f8\"/><polyline fill=\"none\" stroke=\"#2a6fb0\" stroke-width=\"1.5\" points=\"{}\"/></svg>",
        h(label),
        points.trim_end()
    )
}

const STYLE: &str = "body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#1d2733}\
h1{font-size:22px;margin:0 0 4px}h2{font-size:16px;margin:24px 0 8px;border-bottom:1px solid #dde3ea}\
table{border-collapse:collapse}td,th{padding:3px 10px;text-align:right;border-bottom:1px solid #eef1f4}\
th{background:#f4f6f8}td:first-child,th:first-child{text-align:left}.muted{color:#667}\
.cards{display:flex;gap:24px;flex-wrap:wrap}.card{border:1px solid #dde3ea;padding:8px 12px;border-radius:4px}\
.big{font-size:20px;font-weight:600}.bar{background:#eef1f4;width:240px;height:10px}\
.bar div{background:#2a6fb0;height:10px}\
.alarm{background:#fdecea;border:1px solid #c62828;color:#8e1c1c;padding:8px 12px;margin:12px 0;border-radius:4px}";

fn row(cells: &[String]) -> String {
    let mut out = String::from("<tr>");
    for c in cells {
        let _ = write!(out, "<td>{c}</td>");
    }
    out.push_str("</tr>");
    out
}

fn header(cells: &[&str]) -> String {
    let mut out = String::from("<tr>");
    for c in cells {
        let _ = write!(out, "<th>{c}</th>");
    }
    out.push_str("</tr>");
    out
}

fn trends(out: &mut String, history: &[Sample]) {
    let rates: Vec<f64> = history.iter().map(|s| s.requests_per_s).collect();
    let p99s: Vec<f64> = history.iter().map(|s| s.p99_us as f64).collect();
    let last = history.last();
    let span_s = match (history.first(), last) {
        (Some(first), Some(last)) => last.t_s - first.t_s,
        _ => 0.0,
    };
    let span = if span_s >= 120.0 {
        format!("{:.0} minutes", span_s / 60.0)
    } else {
        format!("{span_s:.0} seconds")
    };
    let _ = write!(
        out,
        "<h2>Last {span}</h2><div class=\"cards\">\
         <div class=\"card\"><div>Requests per second</div><div class=\"big\" id=\"rate\">{:.0}</div>{}</div>\
         <div class=\"card\"><div>Call p99 (µs)</div><div class=\"big\" id=\"p99\">{}</div>{}</div></div>",
        last.map_or(0.0, |s| s.requests_per_s),
        sparkline(&rates, "requests per second"),
        last.map_or(0, |s| s.p99_us),
        sparkline(&p99s, "p99 latency"),
    );
    if history.is_empty() {
        out.push_str(
            "<p class=\"muted\">Collecting: the first sample comes a few seconds after start.</p>",
        );
    }
}

fn tables(out: &mut String, s: &Snapshot) {
    out.push_str("<h2>Tables and regions</h2><table id=\"tables\">");
    out.push_str(&header(&[
        "Table",
        "Region",
        "Keys",
        "State",
        "Memstore",
        "Store files",
        "Store file size",
        "Read requests",
        "Write requests",
        "Flushes",
        "Compactions",
    ]));
    for t in &s.tables {
        if t.regions.is_empty() {
            let _ = write!(
                out,
                "<tr data-table=\"{name}\"><td>{name}</td><td>–</td><td>{}</td><td colspan=\"8\" class=\"muted\">{}</td></tr>",
                t.state.replace('_', " "),
                h(t.failure.as_deref().unwrap_or("not serving")),
                name = h(&t.name),
            );
        }
        for r in &t.regions {
            let _ = write!(
                out,
                "<tr data-table=\"{name}\"><td>{name}</td><td>{}</td><td>[{}, {})</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
                 <td data-metric=\"read_requests\">{}</td><td data-metric=\"write_requests\">{}</td><td>{}</td><td>{}</td></tr>",
                r.id,
                h(&r.start_key),
                h(if r.end_key.is_empty() {
                    "∞"
                } else {
                    &r.end_key
                }),
                if t.enabled { "enabled" } else { "disabled" },
                bytes(r.memstore_bytes),
                r.store_files,
                bytes(r.store_file_bytes),
                count(r.read_requests),
                count(r.write_requests),
                r.flushes,
                r.compactions,
                name = h(&t.name),
            );
        }
    }
    if s.tables.is_empty() {
        out.push_str("<tr><td colspan=\"11\" class=\"muted\">No tables yet.</td></tr>");
    }
    out.push_str("</table>");
}

fn executor(out: &mut String, s: &Snapshot) {
    let _ = write!(
        out,
        "<h2>RPC executor</h2><p>{} · {} queued bytes · {} open connections · {} requests · {} refused</p><p>In flight: {} of {} bytes · {} refused for want of them · {} slow readers closed</p><table id=\"rpc\">",
        h(&s.rpc.executor),
        count(s.rpc.queued_bytes),
        s.net.open_connections,
        count(s.net.requests),
        count(s.net.rejected),
        count(s.net.inflight_bytes),
        count(s.net.inflight_limit),
        count(s.net.refused_busy),
        count(s.net.slow_readers),
    );
    out.push_str(&header(&[
        "Pool",
        "Queues",
        "Handlers",
        "Queued now",
        "Active now",
        "Dispatched",
        "Fast path",
        "Rejected",
        "p99 (µs)",
    ]));
    for p in &s.rpc.pools {
        out.push_str(&row(&[
            h(&p.name),
            p.queues.to_string(),
            p.handlers.to_string(),
            p.queued_calls.to_string(),
            p.active_handlers.to_string(),
            count(p.dispatched),
            count(p.handed_off),
            count(p.rejected),
            count(p.total_time_p99_us),
        ]));
    }
    out.push_str("</table>");
}

fn storage(out: &mut String, s: &Snapshot) {
    let w = &s.wal;
    let _ = write!(
        out,
        "<h2>Write-ahead log</h2><table id=\"wal\">{}{}{}{}{}{}{}</table>",
        row(&["Appends".into(), count(w.appends)]),
        row(&["Writes (group commits)".into(), count(w.writes)]),
        row(&["Syncs (fsync)".into(), count(w.syncs)]),
        row(&[
            "Entries per sync".into(),
            format!("{:.2}", w.entries_per_sync_mean)
        ]),
        row(&[
            "Sync p50 / p99 (µs)".into(),
            format!("{} / {}", w.sync_latency_p50_us, w.sync_latency_p99_us)
        ]),
        row(&["Closed segments".into(), w.closed_segments.to_string()]),
        row(&["Rolls".into(), count(w.rolls)]),
    );
    out.push_str("<h2>Block cache</h2>");
    match &s.block_cache {
        Some(c) => {
            let used = if c.capacity_bytes == 0 {
                0.0
            } else {
                c.size_bytes as f64 / c.capacity_bytes as f64
            };
            let _ = write!(
                out,
                "<p>{} of {} ({}), {} blocks</p><div class=\"bar\"><div style=\"width:{:.0}%\"></div></div>\
                 <table id=\"cache\">{}{}{}{}{}</table>",
                bytes(c.size_bytes),
                bytes(c.capacity_bytes),
                percent(used),
                count(c.blocks),
                (used * 100.0).min(100.0),
                row(&["Hit ratio".into(), percent(c.hit_ratio)]),
                row(&["Caching hit ratio".into(), percent(c.caching_hit_ratio)]),
                row(&[
                    "Hits / misses".into(),
                    format!("{} / {}", count(c.hits), count(c.misses))
                ]),
                row(&[
                    "Evicted blocks / failed inserts".into(),
                    format!("{} / {}", count(c.evicted_blocks), count(c.failed_inserts))
                ]),
                row(&[
                    "Id locks created / pooled".into(),
                    format!("{} / {}", count(c.id_locks_created), c.id_locks_pooled)
                ]),
            );
        }
        None => out.push_str("<p class=\"muted\">Off: reads go straight to store files.</p>"),
    }
    let b = &s.bufpool;
    let m = &s.memstore;
    let _ = write!(
        out,
        "<h2>Memory</h2><table id=\"memory\">{}{}{}{}{}{}{}</table>",
        row(&[
            "Memstores (all regions)".into(),
            format!(
                "{} of {} before writes block",
                bytes(m.bytes),
                bytes(m.high_watermark)
            )
        ]),
        row(&[
            "Blocked writes / pressure flushes".into(),
            format!(
                "{} / {}",
                count(m.blocked_writes),
                count(m.pressure_flushes)
            )
        ]),
        row(&["Free memstore chunks".into(), bytes(m.chunk_pool_bytes)]),
        row(&[
            "Request buffers: pooled / heap".into(),
            format!(
                "{} / {} ({})",
                count(b.pooled_allocations),
                count(b.heap_allocations),
                b.strategy
            )
        ]),
        row(&[
            "Request buffers created / live".into(),
            format!("{} / {}", count(b.buffers_created), b.live_buffers)
        ]),
        row(&[
            "Resident memory".into(),
            s.process.resident_bytes.map_or("n/a".into(), bytes)
        ]),
        row(&[
            "Open files".into(),
            s.process.open_files.map_or("n/a".into(), count)
        ]),
    );
}

/// What an operator must see first: a WAL that refuses writes, tables that cannot open.
fn alarms(out: &mut String, s: &Snapshot) {
    if let Some(cause) = &s.wal.poisoned {
        let _ = write!(
            out,
            "<div class=\"alarm\" id=\"wal-poisoned\"><strong>The WAL is poisoned:</strong> {}. \
             Every write is refused until the server restarts; reads still work.</div>",
            h(cause)
        );
    }
    for t in s.tables.iter().filter(|t| t.state == "failed_open") {
        let _ = write!(
            out,
            "<div class=\"alarm\" data-failed-table=\"{name}\"><strong>Table {name} failed to open:</strong> {}. \
             It serves nothing until repaired and enabled again; the other tables serve.</div>",
            h(t.failure.as_deref().unwrap_or("")),
            name = h(&t.name),
        );
    }
}

/// The whole page.
pub(super) fn render(s: &Snapshot) -> String {
    let mut out = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"refresh\" content=\"10\"><title>Keel status</title><style>{STYLE}</style></head><body>\
         <h1>Keel region server</h1><p class=\"muted\">version {} · up {} s · Thrift on {} · \
         <a href=\"/metrics\">/metrics</a> · <a href=\"/status.json\">/status.json</a></p>",
        h(s.server.version),
        s.server.uptime_s,
        h(&s.server.listen),
    );
    alarms(&mut out, s);
    trends(&mut out, &s.history);
    tables(&mut out, s);
    executor(&mut out, s);
    storage(&mut out, s);
    out.push_str("</body></html>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_bytes_and_escaping() {
        assert_eq!(count(0), "0");
        assert_eq!(count(999), "999");
        assert_eq!(count(1000), "1,000");
        assert_eq!(count(1_234_567), "1,234,567");
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(1536), "1.5 KiB");
        assert_eq!(bytes(3 << 30), "3.0 GiB");
        assert_eq!(h("<a href=\"x\">&"), "&lt;a href=&quot;x&quot;&gt;&amp;");
        assert!(sparkline(&[1.0, 2.0, 4.0], "x").contains("points=\"0.0,"));
        assert!(sparkline(&[], "x").contains("points=\"\""));
    }
}
