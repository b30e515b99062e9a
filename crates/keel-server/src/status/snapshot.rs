//! One consistent-enough picture of the server for the status page and `/status.json`: every
//! counter the leaves expose, gathered from the store (regions, WAL, block cache, memory) and
//! the network side (connections, executor, request pool), plus the process's memory and files.

use std::time::Duration;

use keel_region::{Engine, TableState};
use serde::Serialize;

use super::history::Sample;
use crate::NetObserver;

/// Everything the status port reports.
#[derive(Debug, Clone, Serialize)]
pub struct Snapshot {
    /// Version, uptime, where it listens.
    pub server: ServerInfo,
    /// Every table with its regions.
    pub tables: Vec<TableStatus>,
    /// The executor's layout and counters.
    pub rpc: RpcStatus,
    /// Connections and requests.
    pub net: NetStatus,
    /// The request buffer pool (keel-bufpool).
    pub bufpool: BufPoolStatus,
    /// The write-ahead log.
    pub wal: WalStatus,
    /// Memstores across the server.
    pub memstore: MemstoreStatus,
    /// The shared block cache, if reads go through one.
    pub block_cache: Option<BlockCacheStatus>,
    /// The process (Linux: from `/proc/self`).
    pub process: ProcessStatus,
    /// Throughput and p99 over the last minutes, oldest first.
    pub history: Vec<Sample>,
}

/// Who and where.
#[derive(Debug, Clone, Serialize)]
pub struct ServerInfo {
    /// Keel's version.
    pub version: &'static str,
    /// Seconds since the status port started.
    pub uptime_s: u64,
    /// The Thrift port's address.
    pub listen: String,
}

/// A table.
#[derive(Debug, Clone, Serialize)]
pub struct TableStatus {
    /// Its name.
    pub name: String,
    /// Enabled in the catalog (a table whose region failed to open is).
    pub enabled: bool,
    /// `enabled`, `disabled` or `failed_open` (HBase's `FAILED_OPEN`: its region could not open).
    pub state: &'static str,
    /// Why its region failed to open, when it did.
    pub failure: Option<String>,
    /// What `USE_DEFAULT` writes to it get (`SYNC_WAL`, `FSYNC_WAL`, …).
    pub durability: String,
    /// Its regions (one, today).
    pub regions: Vec<RegionStatus>,
}

/// A region.
#[derive(Debug, Clone, Serialize)]
pub struct RegionStatus {
    /// Its id.
    pub id: u64,
    /// Its first row (escaped; empty: the table's first).
    pub start_key: String,
    /// The row after it (escaped; empty: past the last).
    pub end_key: String,
    /// Bytes in its memstores.
    pub memstore_bytes: u64,
    /// Store files, all families.
    pub store_files: usize,
    /// Their bytes.
    pub store_file_bytes: u64,
    /// Per family.
    pub families: Vec<FamilyStatus>,
    /// HBase `readRequestsCount`.
    pub read_requests: u64,
    /// HBase `writeRequestsCount`.
    pub write_requests: u64,
    /// Flushes committed.
    pub flushes: u64,
    /// Compactions done.
    pub compactions: u64,
    /// Writes refused with `RegionTooBusy`.
    pub busy_refusals: u64,
    /// Writes that waited for global memstore memory.
    pub blocked_writes: u64,
}

/// A family's store files.
#[derive(Debug, Clone, Serialize)]
pub struct FamilyStatus {
    /// The family.
    pub name: String,
    /// Store files.
    pub files: usize,
    /// Their bytes.
    pub bytes: u64,
}

/// The executor.
#[derive(Debug, Clone, Serialize)]
pub struct RpcStatus {
    /// Its kind (`FastPathRwQueue`, …).
    pub executor: String,
    /// Bytes of queued and running calls.
    pub queued_bytes: u64,
    /// Calls refused for the byte limit.
    pub rejected_too_many_bytes: u64,
    /// Calls refused for their size alone.
    pub rejected_too_large: u64,
    /// Its handler pools.
    pub pools: Vec<RpcPoolStatus>,
}

/// One handler pool.
#[derive(Debug, Clone, Serialize)]
pub struct RpcPoolStatus {
    /// `general`, `write`, `read`, `scan` or `priority`.
    pub name: String,
    /// Queues.
    pub queues: usize,
    /// Handlers.
    pub handlers: usize,
    /// Calls waiting now.
    pub queued_calls: usize,
    /// Handlers running a call now.
    pub active_handlers: usize,
    /// Calls accepted.
    pub dispatched: u64,
    /// Accepted calls handed straight to an idle handler (the fast path).
    pub handed_off: u64,
    /// Calls refused because the queue was full.
    pub rejected: u64,
    /// Calls shed by CoDel.
    pub dropped: u64,
    /// Calls whose deadline passed while they waited.
    pub timed_out: u64,
    /// Receive-to-end time at the 99th percentile, µs (since start).
    pub total_time_p99_us: u64,
}

/// Connections and requests.
#[derive(Debug, Clone, Serialize)]
pub struct NetStatus {
    /// Open now.
    pub open_connections: usize,
    /// Accepted since start.
    pub connections: u64,
    /// Refused at the connection limit.
    pub refused_connections: u64,
    /// Requests decoded.
    pub requests: u64,
    /// Requests the executor refused.
    pub rejected: u64,
    /// Malformed or oversized requests.
    pub malformed: u64,
    /// Requests that did not arrive in time.
    pub slow_requests: u64,
    /// Connections closed idle.
    pub idle_closed: u64,
    /// Calls refused for want of in-flight budget (CallQueueTooBigException).
    pub refused_busy: u64,
    /// Connections closed because their client did not read a reply in time.
    pub slow_readers: u64,
    /// Bytes in flight now: requests being received or decoded, replies not yet written.
    pub inflight_bytes: u64,
    /// The most there may be (`keel.server.inflight.bytes`).
    pub inflight_limit: u64,
}

/// The request buffer pool.
#[derive(Debug, Clone, Serialize)]
pub struct BufPoolStatus {
    /// The request-buffer design (`fixed-pool`, `plain`, `per-connection`, `shared-average`, `size-class`).
    pub strategy: &'static str,
    /// Pooled buffers handed out.
    pub pooled_allocations: u64,
    /// Their bytes.
    pub pooled_bytes: u64,
    /// Requests (or tails) served from the heap.
    pub heap_allocations: u64,
    /// Their bytes.
    pub heap_bytes: u64,
    /// Buffers the pool created.
    pub buffers_created: u64,
    /// Buffers in existence now.
    pub live_buffers: usize,
    /// Times every buffer was in use.
    pub exhaustions: u64,
}

/// The WAL.
#[derive(Debug, Clone, Serialize)]
pub struct WalStatus {
    /// Entries appended.
    pub appends: u64,
    /// Their payload bytes.
    pub bytes: u64,
    /// Writes issued (each carries one group-commit batch; `SyncWal` acknowledges after it).
    pub writes: u64,
    /// Syncs (fsync) issued: `FsyncWal` waits for one; the others are synced periodically.
    pub syncs: u64,
    /// Mean entries made durable per sync.
    pub entries_per_sync_mean: f64,
    /// Sync latency, µs.
    pub sync_latency_p50_us: u64,
    /// Sync latency, µs.
    pub sync_latency_p99_us: u64,
    /// Segment rolls.
    pub rolls: u64,
    /// Closed segments still on disk.
    pub closed_segments: usize,
    /// Why the WAL refuses every write (a write or sync failed), if it does.
    pub poisoned: Option<String>,
}

/// Memstores across the server.
#[derive(Debug, Clone, Serialize)]
pub struct MemstoreStatus {
    /// Bytes held.
    pub bytes: u64,
    /// The high watermark, where writers block.
    pub high_watermark: u64,
    /// Writes that blocked on memory.
    pub blocked_writes: u64,
    /// Flushes forced by memory pressure.
    pub pressure_flushes: u64,
    /// Bytes of free MSLAB chunks kept for reuse (one pool for the server, bounded).
    pub chunk_pool_bytes: u64,
}

/// The block cache.
#[derive(Debug, Clone, Serialize)]
pub struct BlockCacheStatus {
    /// Capacity, bytes.
    pub capacity_bytes: u64,
    /// Bytes cached.
    pub size_bytes: u64,
    /// Blocks cached.
    pub blocks: u64,
    /// Lookups that found their block.
    pub hits: u64,
    /// Lookups that did not.
    pub misses: u64,
    /// Hits ÷ lookups.
    pub hit_ratio: f64,
    /// The same among lookups that would cache what they load.
    pub caching_hit_ratio: f64,
    /// Eviction runs.
    pub evictions: u64,
    /// Blocks evicted.
    pub evicted_blocks: u64,
    /// Inserts refused.
    pub failed_inserts: u64,
    /// Id-lock objects created (HBASE-17747).
    pub id_locks_created: u64,
    /// Id-lock objects pooled now.
    pub id_locks_pooled: usize,
}

/// The process.
#[derive(Debug, Clone, Serialize)]
pub struct ProcessStatus {
    /// Resident memory, bytes.
    pub resident_bytes: Option<u64>,
    /// Open file descriptors.
    pub open_files: Option<u64>,
}

fn micros(d: Duration) -> u64 {
    d.as_micros() as u64
}

/// Gathers a snapshot (`history` is filled in by the caller).
pub(super) fn collect(
    store: &Engine,
    net: &NetObserver,
    uptime: Duration,
    history: Vec<Sample>,
) -> Snapshot {
    let tables = store
        .list_tables()
        .into_iter()
        .map(|name| {
            let enabled = store.is_table_enabled(&name).unwrap_or(false);
            let regions = store
                .table(&name)
                .map(|t| {
                    t.regions()
                        .iter()
                        .zip(t.region_infos())
                        .map(|(r, info)| region_status(r, &info))
                        .collect()
                })
                .unwrap_or_default();
            let (state, failure) = match store.table_state(&name) {
                Ok(TableState::Enabled) => ("enabled", None),
                Ok(TableState::Disabled) | Err(_) => ("disabled", None),
                Ok(TableState::FailedOpen { reason }) => ("failed_open", Some(reason)),
            };
            let durability = store
                .table_durability(&name)
                .map(|d| d.to_string())
                .unwrap_or_default();
            TableStatus {
                name,
                enabled,
                state,
                failure,
                durability,
                regions,
            }
        })
        .collect();
    let rpc = net.rpc();
    let stats = store.stats();
    let wal = store.wal_stats();
    let pool = net.pool_stats();
    let n = net.stats();
    let load = |c: &std::sync::atomic::AtomicU64| c.load(std::sync::atomic::Ordering::Relaxed);
    Snapshot {
        server: ServerInfo {
            version: env!("CARGO_PKG_VERSION"),
            uptime_s: uptime.as_secs(),
            listen: net.local_addr().to_string(),
        },
        tables,
        rpc: RpcStatus {
            executor: format!("{:?}", rpc.executor),
            queued_bytes: rpc.queued_bytes,
            rejected_too_many_bytes: rpc.rejected_too_many_bytes,
            rejected_too_large: rpc.rejected_too_large,
            pools: rpc
                .pools
                .iter()
                .map(|p| RpcPoolStatus {
                    name: p.name.to_string(),
                    queues: p.queues,
                    handlers: p.handlers,
                    queued_calls: p.queued_calls,
                    active_handlers: p.active_handlers,
                    dispatched: p.dispatched,
                    handed_off: p.handed_off,
                    rejected: p.rejected_queue_full,
                    dropped: p.dropped,
                    timed_out: p.timed_out,
                    total_time_p99_us: p.total_time_us.value_at_quantile(0.99),
                })
                .collect(),
        },
        net: NetStatus {
            open_connections: net.open_connections(),
            connections: load(&n.connections),
            refused_connections: load(&n.refused_connections),
            requests: load(&n.requests),
            rejected: load(&n.rejected),
            malformed: load(&n.malformed),
            slow_requests: load(&n.slow_requests),
            idle_closed: load(&n.idle_closed),
            refused_busy: load(&n.refused_busy),
            slow_readers: load(&n.slow_readers),
            inflight_bytes: net.inflight_bytes().0,
            inflight_limit: net.inflight_bytes().1,
        },
        bufpool: BufPoolStatus {
            strategy: net.buffer_strategy().name(),
            pooled_allocations: pool.pooled_allocations,
            pooled_bytes: pool.pooled_bytes,
            heap_allocations: pool.heap_allocations,
            heap_bytes: pool.heap_bytes,
            buffers_created: pool.buffers_created,
            live_buffers: pool.live_buffers,
            exhaustions: pool.exhaustions,
        },
        wal: WalStatus {
            appends: wal.appends,
            bytes: wal.bytes,
            writes: wal.writes,
            syncs: wal.syncs,
            entries_per_sync_mean: wal.entries_per_sync_mean,
            sync_latency_p50_us: micros(wal.sync_latency_p50),
            sync_latency_p99_us: micros(wal.sync_latency_p99),
            rolls: wal.rolls,
            closed_segments: store.wal_closed_segments(),
            poisoned: store.wal_poisoned(),
        },
        memstore: MemstoreStatus {
            bytes: stats.memstore_bytes,
            high_watermark: stats.memstore_high,
            blocked_writes: stats.blocked_writes,
            pressure_flushes: stats.pressure_flushes,
            chunk_pool_bytes: stats.chunk_pool_bytes,
        },
        block_cache: store.block_cache_stats().map(|c| {
            let locks = store.block_cache_lock_stats().unwrap_or_default();
            BlockCacheStatus {
                capacity_bytes: store.block_cache_capacity(),
                size_bytes: c.size_bytes,
                blocks: c.blocks,
                hits: c.hits,
                misses: c.misses,
                hit_ratio: c.hit_ratio(),
                caching_hit_ratio: c.caching_hit_ratio(),
                evictions: c.evictions,
                evicted_blocks: c.evicted_blocks,
                failed_inserts: c.failed_inserts,
                id_locks_created: locks.created,
                id_locks_pooled: locks.pooled,
            }
        }),
        process: process_status(),
        history,
    }
}

fn region_status(region: &keel_region::Region, info: &keel_region::RegionInfo) -> RegionStatus {
    let stats = region.stats();
    let families: Vec<FamilyStatus> = region
        .store_file_sizes()
        .into_iter()
        .map(|f| FamilyStatus {
            name: String::from_utf8_lossy(&f.family).into_owned(),
            files: f.files,
            bytes: f.bytes,
        })
        .collect();
    RegionStatus {
        id: region.id(),
        start_key: keel_cell::escape_bytes(&info.start_key),
        end_key: keel_cell::escape_bytes(&info.end_key),
        memstore_bytes: region.memstore_size(),
        store_files: families.iter().map(|f| f.files).sum(),
        store_file_bytes: families.iter().map(|f| f.bytes).sum(),
        families,
        read_requests: stats.read_requests,
        write_requests: stats.write_requests,
        flushes: stats.flushes,
        compactions: stats.compactions,
        busy_refusals: stats.busy_refusals,
        blocked_writes: stats.blocked_writes,
    }
}

/// Resident memory and open files, from `/proc/self` (absent elsewhere).
fn process_status() -> ProcessStatus {
    let resident_bytes = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status.lines().find_map(|line| {
                let kb = line.strip_prefix("VmRSS:")?.trim().strip_suffix("kB")?;
                kb.trim().parse::<u64>().ok().map(|kb| kb * 1024)
            })
        });
    let open_files = std::fs::read_dir("/proc/self/fd")
        .ok()
        .map(|dir| dir.count() as u64);
    ProcessStatus {
        resident_bytes,
        open_files,
    }
}
