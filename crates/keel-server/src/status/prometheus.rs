//! `/metrics`: the Prometheus text exposition format (version 0.0.4). HBase's metric names
//! become Prometheus ones — snake_case, `keel_` prefix, a unit suffix, `_total` on counters
//! (`queueCallTime` → `keel_rpc_queue_call_time_seconds`, `numCallsInReadQueue` →
//! `keel_rpc_queue_length{pool="read"}`, `readRequestsCount` →
//! `keel_region_read_requests_total`).

use std::fmt::Write as _;

use hdrhistogram::Histogram;
use keel_rpc::RpcMetrics;

use super::snapshot::Snapshot;

/// Bucket bounds of the call-time histograms, seconds: 100 µs to 10 s.
const BUCKETS_S: [f64; 15] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    10.0,
];

/// One labelled series of a histogram family.
type Series<'a> = (Vec<(&'a str, &'a str)>, &'a Histogram<u64>);

/// Text being written: each family's `# HELP` and `# TYPE` once, then its samples together.
struct Exposition {
    out: String,
}

fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn labels(pairs: &[(&str, &str)]) -> String {
    if pairs.is_empty() {
        return String::new();
    }
    let inner: Vec<String> = pairs
        .iter()
        .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
        .collect();
    format!("{{{}}}", inner.join(","))
}

impl Exposition {
    fn family(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.out, "# HELP {name} {help}");
        let _ = writeln!(self.out, "# TYPE {name} {kind}");
    }

    fn sample(&mut self, name: &str, pairs: &[(&str, &str)], value: f64) {
        let _ = writeln!(self.out, "{name}{} {value}", labels(pairs));
    }

    /// A family with one unlabelled sample.
    fn single(&mut self, name: &str, kind: &str, help: &str, value: f64) {
        self.family(name, kind, help);
        self.sample(name, &[], value);
    }

    /// A histogram family in seconds from microsecond histograms, one per label set. The sum
    /// is the mean × count (HdrHistogram keeps no exact sum).
    fn histogram(&mut self, name: &str, help: &str, series: &[Series<'_>]) {
        self.family(name, "histogram", help);
        for (pairs, h) in series {
            for bound in BUCKETS_S {
                let le = format!("{bound}");
                let mut with_le = pairs.clone();
                with_le.push(("le", &le));
                let count = h.count_between(0, (bound * 1e6) as u64);
                self.sample(&format!("{name}_bucket"), &with_le, count as f64);
            }
            let mut with_le = pairs.clone();
            with_le.push(("le", "+Inf"));
            self.sample(&format!("{name}_bucket"), &with_le, h.len() as f64);
            self.sample(
                &format!("{name}_sum"),
                pairs,
                h.mean() * h.len() as f64 / 1e6,
            );
            self.sample(&format!("{name}_count"), pairs, h.len() as f64);
        }
    }
}

/// Writes every metric: `snapshot` for counters and gauges, `rpc` for the call-time histograms.
pub(super) fn render(snapshot: &Snapshot, rpc: &RpcMetrics) -> String {
    let mut e = Exposition { out: String::new() };
    write_rpc(&mut e, snapshot, rpc);
    write_net(&mut e, snapshot);
    write_store(&mut e, snapshot);
    if let Some(v) = snapshot.process.resident_bytes {
        e.single(
            "process_resident_memory_bytes",
            "gauge",
            "Resident memory size in bytes.",
            v as f64,
        );
    }
    if let Some(v) = snapshot.process.open_files {
        e.single(
            "process_open_fds",
            "gauge",
            "Number of open file descriptors.",
            v as f64,
        );
    }
    e.out
}

type PoolValue = fn(&super::snapshot::RpcPoolStatus) -> f64;

fn write_rpc(e: &mut Exposition, s: &Snapshot, rpc: &RpcMetrics) {
    let per_pool: [(&str, &str, &str, PoolValue); 9] = [
        (
            "keel_rpc_queues",
            "gauge",
            "Call queues of the pool.",
            |p| p.queues as f64,
        ),
        ("keel_rpc_handlers", "gauge", "Handlers of the pool.", |p| {
            p.handlers as f64
        }),
        (
            "keel_rpc_queue_length",
            "gauge",
            "Calls waiting in the pool's queues (HBase numCallsIn<Class>Queue).",
            |p| p.queued_calls as f64,
        ),
        (
            "keel_rpc_active_handlers",
            "gauge",
            "Handlers running a call (HBase numActive<Class>Handler).",
            |p| p.active_handlers as f64,
        ),
        (
            "keel_rpc_dispatched_calls_total",
            "counter",
            "Calls accepted by the pool.",
            |p| p.dispatched as f64,
        ),
        (
            "keel_rpc_fast_path_handoffs_total",
            "counter",
            "Accepted calls handed straight to an idle handler (HBASE-16023).",
            |p| p.handed_off as f64,
        ),
        (
            "keel_rpc_rejected_calls_total",
            "counter",
            "Calls refused because the queue was full (CallQueueTooBigException).",
            |p| p.rejected as f64,
        ),
        (
            "keel_rpc_dropped_calls_total",
            "counter",
            "Calls shed by CoDel (HBase numGeneralCallsDropped).",
            |p| p.dropped as f64,
        ),
        (
            "keel_rpc_timed_out_calls_total",
            "counter",
            "Calls whose deadline passed while they waited.",
            |p| p.timed_out as f64,
        ),
    ];
    for (name, kind, help, value) in per_pool {
        e.family(name, kind, help);
        for p in &s.rpc.pools {
            e.sample(name, &[("pool", &p.name)], value(p));
        }
    }
    e.single(
        "keel_rpc_queued_bytes",
        "gauge",
        "Bytes of queued and running calls (HBase queueSize).",
        s.rpc.queued_bytes as f64,
    );
    e.family(
        "keel_rpc_refused_calls_total",
        "counter",
        "Calls refused by the executor's own limits, by reason.",
    );
    e.sample(
        "keel_rpc_refused_calls_total",
        &[("reason", "too_many_bytes")],
        s.rpc.rejected_too_many_bytes as f64,
    );
    e.sample(
        "keel_rpc_refused_calls_total",
        &[("reason", "too_large")],
        s.rpc.rejected_too_large as f64,
    );
    type Pick = fn(&keel_rpc::PoolMetrics) -> &Histogram<u64>;
    let histograms: [(&str, &str, Pick); 3] = [
        (
            "keel_rpc_queue_call_time_seconds",
            "Receive to handler start (HBase queueCallTime).",
            |p| &p.queue_time_us,
        ),
        (
            "keel_rpc_process_call_time_seconds",
            "Handler start to end (HBase processCallTime).",
            |p| &p.processing_time_us,
        ),
        (
            "keel_rpc_total_call_time_seconds",
            "Receive to end (HBase totalCallTime).",
            |p| &p.total_time_us,
        ),
    ];
    for (name, help, pick) in histograms {
        let series: Vec<Series<'_>> = rpc
            .pools
            .iter()
            .map(|p| (vec![("pool", p.name)], pick(p)))
            .collect();
        e.histogram(name, help, &series);
    }
}

fn write_net(e: &mut Exposition, s: &Snapshot) {
    let n = &s.net;
    e.single(
        "keel_net_open_connections",
        "gauge",
        "Client connections open.",
        n.open_connections as f64,
    );
    e.single(
        "keel_net_inflight_bytes",
        "gauge",
        "Bytes in flight: requests being received or decoded, replies not yet written.",
        n.inflight_bytes as f64,
    );
    e.single(
        "keel_net_inflight_limit_bytes",
        "gauge",
        "The most bytes there may be in flight (keel.server.inflight.bytes).",
        n.inflight_limit as f64,
    );
    let counters: [(&str, &str, u64); 9] = [
        (
            "keel_net_connections_total",
            "Connections accepted.",
            n.connections,
        ),
        (
            "keel_net_refused_connections_total",
            "Connections refused at the connection limit.",
            n.refused_connections,
        ),
        ("keel_net_requests_total", "Requests decoded.", n.requests),
        (
            "keel_net_rejected_requests_total",
            "Requests the executor refused (answered with CallQueueTooBigException).",
            n.rejected,
        ),
        (
            "keel_net_malformed_requests_total",
            "Malformed or oversized requests (connection closed).",
            n.malformed,
        ),
        (
            "keel_net_slow_requests_total",
            "Requests that did not arrive within the request timeout.",
            n.slow_requests,
        ),
        (
            "keel_net_idle_closed_total",
            "Connections closed after the idle timeout.",
            n.idle_closed,
        ),
        (
            "keel_net_refused_busy_total",
            "Calls refused for want of in-flight budget (CallQueueTooBigException).",
            n.refused_busy,
        ),
        (
            "keel_net_slow_readers_total",
            "Connections closed because their client did not read a reply within the reply timeout.",
            n.slow_readers,
        ),
    ];
    for (name, help, v) in counters {
        e.single(name, "counter", help, v as f64);
    }
    let b = &s.bufpool;
    let pool: [(&str, &str, &str, f64); 7] = [
        (
            "keel_bufpool_pooled_allocations_total",
            "counter",
            "Pooled request buffers handed out.",
            b.pooled_allocations as f64,
        ),
        (
            "keel_bufpool_pooled_bytes_total",
            "counter",
            "Bytes of pooled buffers handed out.",
            b.pooled_bytes as f64,
        ),
        (
            "keel_bufpool_heap_allocations_total",
            "counter",
            "Requests or request tails served from the heap.",
            b.heap_allocations as f64,
        ),
        (
            "keel_bufpool_heap_bytes_total",
            "counter",
            "Bytes of those heap allocations.",
            b.heap_bytes as f64,
        ),
        (
            "keel_bufpool_buffers_created_total",
            "counter",
            "Buffers the pool created.",
            b.buffers_created as f64,
        ),
        (
            "keel_bufpool_live_buffers",
            "gauge",
            "Pool buffers in existence.",
            b.live_buffers as f64,
        ),
        (
            "keel_bufpool_exhaustions_total",
            "counter",
            "Times a pooled buffer was wanted and all were in use.",
            b.exhaustions as f64,
        ),
    ];
    for (name, kind, help, v) in pool {
        e.single(name, kind, help, v);
    }
}

type RegionValue = fn(&super::snapshot::RegionStatus) -> f64;

fn write_store(e: &mut Exposition, s: &Snapshot) {
    let w = &s.wal;
    let wal: [(&str, &str, &str, f64); 9] = [
        (
            "keel_wal_writes_total",
            "counter",
            "WAL writes issued, one per group-commit batch.",
            w.writes as f64,
        ),
        (
            "keel_wal_appends_total",
            "counter",
            "WAL entries appended.",
            w.appends as f64,
        ),
        (
            "keel_wal_appended_bytes_total",
            "counter",
            "Payload bytes appended to the WAL.",
            w.bytes as f64,
        ),
        (
            "keel_wal_syncs_total",
            "counter",
            "WAL syncs issued.",
            w.syncs as f64,
        ),
        (
            "keel_wal_entries_per_sync",
            "gauge",
            "Mean entries made durable per sync (group commit).",
            w.entries_per_sync_mean,
        ),
        (
            "keel_wal_sync_latency_p50_seconds",
            "gauge",
            "WAL sync latency, median since start.",
            w.sync_latency_p50_us as f64 / 1e6,
        ),
        (
            "keel_wal_sync_latency_p99_seconds",
            "gauge",
            "WAL sync latency, 99th percentile since start.",
            w.sync_latency_p99_us as f64 / 1e6,
        ),
        (
            "keel_wal_rolls_total",
            "counter",
            "WAL segment rolls.",
            w.rolls as f64,
        ),
        (
            "keel_wal_closed_segments",
            "gauge",
            "Closed WAL segments still on disk.",
            w.closed_segments as f64,
        ),
    ];
    for (name, kind, help, v) in wal {
        e.single(name, kind, help, v);
    }
    e.single(
        "keel_wal_poisoned",
        "gauge",
        "1 when the WAL refuses every write after a failed write or sync (until restart).",
        f64::from(u8::from(w.poisoned.is_some())),
    );
    e.family(
        "keel_table_failed_open",
        "gauge",
        "1 for each table whose region failed to open (HBase's FAILED_OPEN).",
    );
    for t in s.tables.iter().filter(|t| t.state == "failed_open") {
        e.sample("keel_table_failed_open", &[("table", &t.name)], 1.0);
    }
    let m = &s.memstore;
    e.single(
        "keel_memstore_bytes",
        "gauge",
        "Bytes in memstores across the server (HBase memStoreSize).",
        m.bytes as f64,
    );
    e.single(
        "keel_memstore_high_watermark_bytes",
        "gauge",
        "Global memstore size at which writers block.",
        m.high_watermark as f64,
    );
    e.single(
        "keel_memstore_blocked_writes_total",
        "counter",
        "Writes that waited for global memstore memory.",
        m.blocked_writes as f64,
    );
    e.single(
        "keel_memstore_pressure_flushes_total",
        "counter",
        "Flushes forced by global memory pressure.",
        m.pressure_flushes as f64,
    );
    e.single(
        "keel_memstore_chunk_pool_bytes",
        "gauge",
        "Free MSLAB chunks kept for reuse, in the server's one bounded pool.",
        m.chunk_pool_bytes as f64,
    );
    let per_region: [(&str, &str, &str, RegionValue); 8] = [
        (
            "keel_region_memstore_bytes",
            "gauge",
            "Bytes in the region's memstores.",
            |r| r.memstore_bytes as f64,
        ),
        (
            "keel_region_store_files",
            "gauge",
            "Store files of the region.",
            |r| r.store_files as f64,
        ),
        (
            "keel_region_store_file_bytes",
            "gauge",
            "Bytes of the region's store files.",
            |r| r.store_file_bytes as f64,
        ),
        (
            "keel_region_read_requests_total",
            "counter",
            "Read requests (HBase readRequestsCount).",
            |r| r.read_requests as f64,
        ),
        (
            "keel_region_write_requests_total",
            "counter",
            "Write requests (HBase writeRequestsCount).",
            |r| r.write_requests as f64,
        ),
        (
            "keel_region_flushes_total",
            "counter",
            "Memstore flushes.",
            |r| r.flushes as f64,
        ),
        (
            "keel_region_compactions_total",
            "counter",
            "Compactions.",
            |r| r.compactions as f64,
        ),
        (
            "keel_region_busy_refusals_total",
            "counter",
            "Writes refused with RegionTooBusy.",
            |r| r.busy_refusals as f64,
        ),
    ];
    for (name, kind, help, value) in per_region {
        e.family(name, kind, help);
        for t in &s.tables {
            for r in &t.regions {
                let id = r.id.to_string();
                e.sample(name, &[("table", &t.name), ("region", &id)], value(r));
            }
        }
    }
    if let Some(c) = &s.block_cache {
        let cache: [(&str, &str, &str, f64); 12] = [
            (
                "keel_block_cache_evictions_total",
                "counter",
                "Eviction runs.",
                c.evictions as f64,
            ),
            (
                "keel_block_cache_capacity_bytes",
                "gauge",
                "Block cache capacity.",
                c.capacity_bytes as f64,
            ),
            (
                "keel_block_cache_size_bytes",
                "gauge",
                "Bytes cached.",
                c.size_bytes as f64,
            ),
            (
                "keel_block_cache_blocks",
                "gauge",
                "Blocks cached.",
                c.blocks as f64,
            ),
            (
                "keel_block_cache_hits_total",
                "counter",
                "Lookups that found their block.",
                c.hits as f64,
            ),
            (
                "keel_block_cache_misses_total",
                "counter",
                "Lookups that did not.",
                c.misses as f64,
            ),
            (
                "keel_block_cache_hit_ratio",
                "gauge",
                "Hits over lookups since start.",
                c.hit_ratio,
            ),
            (
                "keel_block_cache_caching_hit_ratio",
                "gauge",
                "Hit ratio among lookups that would cache what they load.",
                c.caching_hit_ratio,
            ),
            (
                "keel_block_cache_evicted_blocks_total",
                "counter",
                "Blocks evicted.",
                c.evicted_blocks as f64,
            ),
            (
                "keel_block_cache_failed_inserts_total",
                "counter",
                "Inserts refused.",
                c.failed_inserts as f64,
            ),
            (
                "keel_block_cache_id_locks_created_total",
                "counter",
                "Id-lock objects created (HBASE-17747).",
                c.id_locks_created as f64,
            ),
            (
                "keel_block_cache_id_locks_pooled",
                "gauge",
                "Id-lock objects pooled now.",
                c.id_locks_pooled as f64,
            ),
        ];
        for (name, kind, help, v) in cache {
            e.single(name, kind, help, v);
        }
    }
}
