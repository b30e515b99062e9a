//! `keel serve`'s settings, declared once: [`SETTINGS`] is the one table from which the
//! `keel.toml` keys (HBase's names where HBase has one), the command-line flags (the `keel`
//! binary builds its flags from it) and the settings section of `docs/server.md`
//! ([`Settings::docs_table`]) all come. A test checks the three agree.
//!
//! `keel.toml` takes the keys as quoted dotted keys (`"hbase.regionserver.handler.count" = 30`)
//! or as nested tables, plus one `[table.NAME]` section per table. Flags override the file; the
//! file overrides the defaults, which are HBase's. An unknown key, or a value of the wrong type,
//! is an error that names it.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::time::Duration;

use keel_bufpool::Strategy;
use keel_region::Durability;

/// Every setting `keel serve` takes, after defaults, file and flags.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// `keel.listen` (127.0.0.1:9090; `hbase.regionserver.thrift.port` sets only the port).
    pub listen: SocketAddr,
    /// `keel.data.dir` (`./keel-data`).
    pub data_dir: PathBuf,
    /// `keel.status.listen`: the status port (127.0.0.1:9095; `"off"`: none).
    /// `hbase.regionserver.info.port` sets only its port.
    pub status_listen: Option<SocketAddr>,
    /// `hbase.regionserver.handler.count` (30).
    pub handler_count: usize,
    /// `hbase.ipc.server.callqueue.handler.factor` (0.1).
    pub handler_factor: f64,
    /// `hbase.ipc.server.callqueue.read.ratio` (0.0).
    pub read_ratio: f64,
    /// `hbase.ipc.server.callqueue.scan.ratio` (0.0).
    pub scan_ratio: f64,
    /// `hbase.hregion.memstore.flush.size` in bytes (128 MiB).
    pub flush_size: u64,
    /// `hbase.hregion.max.filesize` (10 GiB): the store size past which a region of a table
    /// with several regions splits (one region alone splits at 2 × the flush size).
    pub max_region_size: u64,
    /// `hbase.regionserver.region.split.policy`: `SteppingSplitPolicy` (the default) splits by
    /// size; `DisabledRegionSplitPolicy` never splits.
    pub split_policy: SplitPolicy,
    /// `hbase.hregion.compacting.memstore.type`: `NONE` (HBase's default) or `BASIC` (in-memory
    /// flushes into flat arrays; faster reads and scans of what is in memory).
    pub in_memory_compaction: keel_region::InMemoryCompaction,
    /// `hbase.hregion.compacting.pipeline.segments.limit` (2): under BASIC, the flat segments a
    /// store's memstore keeps before an in-memory flush merges them into one.
    pub pipeline_segments_limit: NonZeroUsize,
    /// `keel.hregion.compacting.memstore.copy` (true): under BASIC, an in-memory flush copies
    /// the cells it flattens into fresh chunks in key order.
    pub flatten_copies: bool,
    /// `hbase.hregion.memstore.block.multiplier` (4).
    pub block_multiplier: u64,
    /// `hbase.hstore.blockingStoreFiles` (16).
    pub blocking_store_files: usize,
    /// `hbase.busy.wait.duration` in ms (60 000): how long a write to a region above its
    /// blocking size waits for the flush before it is refused as too busy.
    pub busy_wait: Duration,
    /// `hbase.regionserver.thrift.framed.max_frame_size_in_mb`, as bytes (Keel: 16 MiB; HBase 2).
    pub max_frame: usize,
    /// `hbase.client.scanner.timeout.period` in ms (60 000).
    pub scanner_lease: Duration,
    /// `keel.max.connections` (1 000).
    pub max_connections: usize,
    /// `hbase.thrift.server.socket.read.timeout` in ms (60 000): a request begun must arrive
    /// whole within it.
    pub request_timeout: Duration,
    /// `hbase.thrift.connection.max-idletime` in ms (600 000): an idle connection is closed.
    pub idle_timeout: Duration,
    /// `keel.max.open.scanners` (10 000).
    pub max_open_scanners: usize,
    /// `hbase.server.allocator.pool.enabled` (true): request buffers from keel-bufpool's
    /// fixed-size pool; false: plain allocation.
    pub pool_enabled: bool,
    /// `keel.server.request.buffers`: any keel-bufpool design by name (`fixed-pool`, `plain`,
    /// `per-connection`, `shared-average`, `size-class`); overrides `pool_enabled` when given.
    pub request_buffers: Option<Strategy>,
    /// `hbase.ipc.server.max.callqueue.length`: calls per queue before refusals (`None`:
    /// HBase's (handlers / queues) × 10).
    pub max_queue_length: Option<usize>,
    /// `hbase.ipc.server.max.callqueue.size`: bytes of queued and running calls (1 GiB).
    pub max_queued_bytes: u64,
    /// `hbase.wal.hsync` (false): acknowledge writes only after the WAL is fsynced (survives a
    /// power cut) instead of once written to the OS (survives a process crash), for every table
    /// that does not choose its own durability.
    pub wal_hsync: bool,
    /// Durability per table (`[table.NAME] durability = "FSYNC_WAL"`, or
    /// `--table-durability NAME=FSYNC_WAL`): HBase's table `DURABILITY`, which Thrift1's
    /// `createTable` cannot carry.
    pub table_durability: BTreeMap<String, Durability>,
    /// Split keys per table (`[table.NAME] regions = 8`, `"8:UniformSplit"` or `["b", "m"]`,
    /// or `--table-regions NAME=SPEC`): how an operator pre-splits a table that clients create
    /// over Thrift1, which cannot carry split keys.
    pub table_split_keys: BTreeMap<String, Vec<bytes::Bytes>>,
    /// `keel.table.max.families` (256): column families a table may have.
    pub max_families_per_table: usize,
    /// `keel.server.inflight.bytes` (256 MiB): requests being received or decoded and replies
    /// not yet written, across the server; a request that does not fit is refused.
    pub max_inflight_bytes: u64,
    /// `keel.server.reply.timeout` in ms (30 000): how long a client has to read a reply before
    /// its connection is closed.
    pub reply_timeout: Duration,
    /// `hbase.server.scanner.max.result.size` (100 MiB): the most bytes of cells one
    /// `scannerGetList` returns, and a `getRows` may gather.
    pub max_result_size: u64,
    /// `keel.otlp.endpoint` (off): the OpenTelemetry collector `keel serve` exports its spans
    /// to over OTLP/HTTP with protobuf (a base URL gets `/v1/traces`); needs the `otlp` build
    /// feature.
    pub otlp_endpoint: Option<String>,
    /// `keel.otlp.sampling.ratio` (1.0): the share of traces exported, decided at each trace's
    /// root (a child follows its parent), as OpenTelemetry's `parentbased_traceidratio`.
    pub otlp_sampling_ratio: f64,
}

/// `keel.otlp.endpoint` / `--otlp-endpoint`: an http(s) URL, or `off`.
pub fn parse_otlp_endpoint(value: &str) -> Result<Option<String>, String> {
    if value == "off" || value.is_empty() {
        return Ok(None);
    }
    if !(value.starts_with("http://") || value.starts_with("https://")) {
        return Err(format!(
            "keel.otlp.endpoint {value:?}: expected an http:// or https:// URL (such as \
             http://127.0.0.1:4318), or off"
        ));
    }
    Ok(Some(value.to_string()))
}

/// `keel.otlp.sampling.ratio` / `--otlp-sampling-ratio`: a share from 0 to 1.
pub fn check_sampling_ratio(ratio: f64) -> Result<f64, String> {
    if (0.0..=1.0).contains(&ratio) {
        Ok(ratio)
    } else {
        Err(format!(
            "keel.otlp.sampling.ratio {ratio}: expected a share from 0 to 1"
        ))
    }
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            listen: SocketAddr::from(([127, 0, 0, 1], 9090)),
            data_dir: PathBuf::from("./keel-data"),
            status_listen: Some(SocketAddr::from(([127, 0, 0, 1], 9095))),
            handler_count: 30,
            handler_factor: 0.1,
            read_ratio: 0.0,
            scan_ratio: 0.0,
            flush_size: 128 << 20,
            max_region_size: 10 << 30,
            split_policy: SplitPolicy::Stepping,
            in_memory_compaction: keel_region::InMemoryCompaction::None,
            pipeline_segments_limit: NonZeroUsize::new(
                keel_region::RegionLimits::default().pipeline_segments_limit,
            )
            .expect("HBase's default limit is positive"),
            flatten_copies: keel_region::RegionLimits::default().flatten_copies,
            block_multiplier: 4,
            blocking_store_files: 16,
            busy_wait: Duration::from_secs(60),
            max_frame: 16 << 20,
            scanner_lease: Duration::from_secs(60),
            max_connections: 1000,
            request_timeout: Duration::from_secs(60),
            idle_timeout: Duration::from_secs(600),
            max_open_scanners: 10_000,
            pool_enabled: true,
            request_buffers: None,
            max_queue_length: None,
            max_queued_bytes: 1 << 30,
            wal_hsync: false,
            table_durability: BTreeMap::new(),
            table_split_keys: BTreeMap::new(),
            max_families_per_table: 256,
            max_inflight_bytes: 256 << 20,
            reply_timeout: Duration::from_secs(30),
            max_result_size: 100 << 20,
            otlp_endpoint: None,
            otlp_sampling_ratio: 1.0,
        }
    }
}

/// Sets a field from a `keel.toml` value.
type FromToml = fn(&mut Settings, &toml::Value) -> Result<(), String>;
/// Sets a field from a flag's text.
type FromFlag = fn(&mut Settings, &str) -> Result<(), String>;

/// One setting: its `keel.toml` key, its flag, and how each sets it.
#[derive(Debug, Clone, Copy)]
pub struct Setting {
    /// The `keel.toml` key (HBase's name where HBase has one). `table.NAME.durability` is the
    /// `[table.NAME]` section's key.
    pub key: &'static str,
    /// The flag, without its dashes (`None`: file only).
    pub flag: Option<&'static str>,
    /// What the flag's value looks like (`N`, `BYTES`, `MS`, …).
    pub value_name: &'static str,
    /// One line on what it does, for `--help` and the docs.
    pub help: &'static str,
    /// Whether the flag may be given several times.
    pub repeatable: bool,
    from_toml: FromToml,
    from_flag: FromFlag,
    /// The setting's value, shown as a flag would take it (the docs' default column).
    pub show: fn(&Settings) -> String,
    /// A value other than the default, written for the file and for the flag (the agreement
    /// test sets it both ways).
    pub example: (&'static str, &'static str),
}

fn int(key: &str, value: &toml::Value) -> Result<u64, String> {
    value
        .as_integer()
        .and_then(|v| u64::try_from(v).ok())
        .ok_or_else(|| format!("{key}: expected a non-negative integer, got {value}"))
}

fn float(key: &str, value: &toml::Value) -> Result<f64, String> {
    value
        .as_float()
        .or_else(|| value.as_integer().map(|i| i as f64))
        .ok_or_else(|| format!("{key}: expected a number, got {value}"))
}

fn string<'v>(key: &str, value: &'v toml::Value) -> Result<&'v str, String> {
    value
        .as_str()
        .ok_or_else(|| format!("{key}: expected a string, got {value}"))
}

/// A string setting parsed with its type's `FromStr`.
fn string_parsed<T: std::str::FromStr<Err = String>>(
    key: &str,
    value: &toml::Value,
) -> Result<T, String> {
    string(key, value)?
        .parse()
        .map_err(|e| format!("{key}: {e}"))
}

fn boolean(key: &str, value: &toml::Value) -> Result<bool, String> {
    value
        .as_bool()
        .ok_or_else(|| format!("{key}: expected true or false, got {value}"))
}

fn parse<T: std::str::FromStr>(flag: &str, text: &str) -> Result<T, String>
where
    T::Err: std::fmt::Display,
{
    text.parse().map_err(|e| format!("--{flag} {text:?}: {e}"))
}

fn port(key: &str, value: &toml::Value) -> Result<u16, String> {
    u16::try_from(int(key, value)?).map_err(|_| format!("{key}: not a port"))
}

/// `keel.status.listen` / `--status-listen`: an address, or `off` for no status port.
pub fn parse_status_listen(value: &str) -> Result<Option<SocketAddr>, String> {
    if value.eq_ignore_ascii_case("off") {
        return Ok(None);
    }
    value
        .parse()
        .map(Some)
        .map_err(|e| format!("keel.status.listen: {e} (an address such as 127.0.0.1:9095, or off)"))
}

/// `NAME=LEVEL` (`--table-durability`): a table and HBase's name for a durability.
pub fn parse_table_durability(value: &str) -> Result<(String, Durability), String> {
    let (name, level) = value
        .rsplit_once('=')
        .ok_or_else(|| format!("--table-durability {value:?}: expected NAME=LEVEL"))?;
    keel_region::names::TableName::new(name).map_err(|e| format!("--table-durability: {e}"))?;
    Ok((name.to_string(), level.parse()?))
}

/// HBase's region split policies Keel has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SplitPolicy {
    /// `SteppingSplitPolicy`: split by size.
    Stepping,
    /// `DisabledRegionSplitPolicy`: never split.
    Disabled,
}

impl std::str::FromStr for SplitPolicy {
    type Err = String;

    fn from_str(s: &str) -> Result<SplitPolicy, String> {
        match s.rsplit('.').next().unwrap_or(s) {
            "SteppingSplitPolicy" => Ok(SplitPolicy::Stepping),
            "DisabledRegionSplitPolicy" => Ok(SplitPolicy::Disabled),
            other => Err(format!(
                "unknown split policy {other}: SteppingSplitPolicy or DisabledRegionSplitPolicy"
            )),
        }
    }
}

impl std::fmt::Display for SplitPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SplitPolicy::Stepping => "SteppingSplitPolicy",
            SplitPolicy::Disabled => "DisabledRegionSplitPolicy",
        })
    }
}

/// A table's regions at creation, as `--table-regions` and `[table.NAME] regions` write them:
/// `N` or `N:HexStringSplit` (N regions over 8-hex-digit keys), `N:UniformSplit` (over 8-byte
/// binary keys), or `keys:K1,K2,…` (these split keys). Returns the split keys.
pub fn parse_regions(spec: &str) -> Result<Vec<bytes::Bytes>, String> {
    if let Some(keys) = spec.strip_prefix("keys:") {
        return Ok(keys
            .split(',')
            .map(|k| bytes::Bytes::copy_from_slice(k.as_bytes()))
            .collect());
    }
    let (count, algorithm) = spec.split_once(':').unwrap_or((spec, "HexStringSplit"));
    let count: u32 = count
        .parse()
        .ok()
        .filter(|n| (1..=1024).contains(n))
        .ok_or_else(|| format!("regions {spec:?}: a count from 1 to 1024 is needed"))?;
    match algorithm {
        "HexStringSplit" => Ok(keel_region::splits::hex_string(count)),
        "UniformSplit" => Ok(keel_region::splits::uniform(count)),
        other => Err(format!(
            "regions {spec:?}: unknown split algorithm {other} (HexStringSplit, UniformSplit)"
        )),
    }
}

/// `NAME=SPEC` (`--table-regions`): a table and its regions at creation ([`parse_regions`]).
pub fn parse_table_regions(value: &str) -> Result<(String, Vec<bytes::Bytes>), String> {
    let (name, spec) = value
        .split_once('=')
        .ok_or_else(|| format!("--table-regions {value:?}: expected NAME=SPEC"))?;
    keel_region::names::TableName::new(name).map_err(|e| format!("--table-regions: {e}"))?;
    Ok((name.to_string(), parse_regions(spec)?))
}

/// A setting with the same meaning in the file and as a flag, parsed with `FromStr` from the
/// flag's text.
macro_rules! plain {
    ($key:literal, $flag:literal, $value_name:literal, $help:literal, $field:ident,
     $toml:expr, $example:expr) => {
        Setting {
            key: $key,
            flag: Some($flag),
            value_name: $value_name,
            help: $help,
            repeatable: false,
            from_toml: |s, v| {
                s.$field = ($toml)($key, v)?;
                Ok(())
            },
            from_flag: |s, text| {
                s.$field = parse($flag, text)?;
                Ok(())
            },
            show: |s| s.$field.to_string(),
            example: $example,
        }
    };
}

/// A duration in milliseconds, in the file and as a flag.
macro_rules! millis {
    ($key:literal, $flag:literal, $help:literal, $field:ident, $example:literal) => {
        Setting {
            key: $key,
            flag: Some($flag),
            value_name: "MS",
            help: $help,
            repeatable: false,
            from_toml: |s, v| {
                s.$field = Duration::from_millis(int($key, v)?);
                Ok(())
            },
            from_flag: |s, text| {
                s.$field = Duration::from_millis(parse($flag, text)?);
                Ok(())
            },
            show: |s| s.$field.as_millis().to_string(),
            example: ($example, $example),
        }
    };
}

fn usize_of(key: &str, v: &toml::Value) -> Result<usize, String> {
    usize::try_from(int(key, v)?).map_err(|_| format!("{key}: too large"))
}

fn nonzero_usize_of(key: &str, v: &toml::Value) -> Result<NonZeroUsize, String> {
    NonZeroUsize::new(usize_of(key, v)?).ok_or_else(|| format!("{key}: at least 1"))
}

fn no_flag(_: &mut Settings, _: &str) -> Result<(), String> {
    Err("this setting has no flag".to_string())
}

/// Every setting, in the order `--help` and the docs list them.
pub static SETTINGS: &[Setting] = &[
    Setting {
        key: "keel.listen",
        flag: Some("listen"),
        value_name: "ADDR",
        help: "where the Thrift service listens (loopback unless you choose)",
        repeatable: false,
        from_toml: |s, v| {
            s.listen = parse("listen", string("keel.listen", v)?)?;
            Ok(())
        },
        from_flag: |s, text| {
            s.listen = parse("listen", text)?;
            Ok(())
        },
        show: |s| s.listen.to_string(),
        example: ("\"127.0.0.1:19090\"", "127.0.0.1:19090"),
    },
    Setting {
        key: "hbase.regionserver.thrift.port",
        flag: None,
        value_name: "PORT",
        help: "the Thrift service's port alone (keel.listen sets the address)",
        repeatable: false,
        from_toml: |s, v| {
            s.listen
                .set_port(port("hbase.regionserver.thrift.port", v)?);
            Ok(())
        },
        from_flag: no_flag,
        show: |s| s.listen.port().to_string(),
        example: ("19091", ""),
    },
    Setting {
        key: "keel.data.dir",
        flag: Some("data-dir"),
        value_name: "DIR",
        help: "the store's directory, created if needed",
        repeatable: false,
        from_toml: |s, v| {
            s.data_dir = PathBuf::from(string("keel.data.dir", v)?);
            Ok(())
        },
        from_flag: |s, text| {
            s.data_dir = PathBuf::from(text);
            Ok(())
        },
        show: |s| s.data_dir.display().to_string(),
        example: ("\"/srv/keel\"", "/srv/keel"),
    },
    Setting {
        key: "keel.status.listen",
        flag: Some("status-listen"),
        value_name: "ADDR|off",
        help: "the status port: /metrics, / and /status.json (off: none)",
        repeatable: false,
        from_toml: |s, v| {
            s.status_listen = parse_status_listen(string("keel.status.listen", v)?)?;
            Ok(())
        },
        from_flag: |s, text| {
            s.status_listen = parse_status_listen(text)?;
            Ok(())
        },
        show: |s| s.status_listen.map_or("off".to_string(), |a| a.to_string()),
        example: ("\"off\"", "off"),
    },
    Setting {
        key: "hbase.regionserver.info.port",
        flag: None,
        value_name: "PORT",
        help: "the status port's port alone",
        repeatable: false,
        from_toml: |s, v| {
            let mut address = s
                .status_listen
                .unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 9095)));
            address.set_port(port("hbase.regionserver.info.port", v)?);
            s.status_listen = Some(address);
            Ok(())
        },
        from_flag: no_flag,
        show: |s| {
            s.status_listen
                .map_or("off".to_string(), |a| a.port().to_string())
        },
        example: ("16030", ""),
    },
    plain!(
        "hbase.regionserver.handler.count",
        "handler-count",
        "N",
        "handler threads of the RPC executor",
        handler_count,
        usize_of,
        ("8", "8")
    ),
    plain!(
        "hbase.ipc.server.callqueue.handler.factor",
        "handler-factor",
        "F",
        "call queues per handler",
        handler_factor,
        float,
        ("0.5", "0.5")
    ),
    plain!(
        "hbase.ipc.server.callqueue.read.ratio",
        "read-ratio",
        "F",
        "share of queues and handlers for reads (0: one shared pool)",
        read_ratio,
        float,
        ("0.5", "0.5")
    ),
    plain!(
        "hbase.ipc.server.callqueue.scan.ratio",
        "scan-ratio",
        "F",
        "share of the read queues for scans",
        scan_ratio,
        float,
        ("0.25", "0.25")
    ),
    plain!(
        "hbase.hregion.memstore.flush.size",
        "flush-size",
        "BYTES",
        "a region's memstore size that triggers a flush",
        flush_size,
        int,
        ("1048576", "1048576")
    ),
    plain!(
        "hbase.hregion.max.filesize",
        "max-region-size",
        "BYTES",
        "a region's largest store size past which it splits, once its table has several regions (one region alone splits at 2 × the flush size)",
        max_region_size,
        int,
        ("67108864", "67108864")
    ),
    plain!(
        "hbase.regionserver.region.split.policy",
        "split-policy",
        "POLICY",
        "SteppingSplitPolicy (split by size) or DisabledRegionSplitPolicy (never split)",
        split_policy,
        string_parsed,
        ("\"DisabledRegionSplitPolicy\"", "DisabledRegionSplitPolicy")
    ),
    plain!(
        "hbase.hregion.compacting.memstore.type",
        "in-memory-compaction",
        "POLICY",
        "NONE (cells stay in the memstore's skip list until a flush) or BASIC (in-memory flushes into flat sorted arrays: faster reads and scans of recent data)",
        in_memory_compaction,
        string_parsed,
        ("\"BASIC\"", "BASIC")
    ),
    plain!(
        "hbase.hregion.compacting.pipeline.segments.limit",
        "pipeline-segments-limit",
        "N",
        "under BASIC, the flat segments a store's memstore keeps before an in-memory flush merges them all into one (at least 1)",
        pipeline_segments_limit,
        nonzero_usize_of,
        ("4", "4")
    ),
    plain!(
        "keel.hregion.compacting.memstore.copy",
        "flatten-copies",
        "BOOL",
        "under BASIC, an in-memory flush copies the cells it flattens into fresh chunks in key order, so scans read neighbouring memory (false: they stay where the writes put them, as in HBase)",
        flatten_copies,
        boolean,
        ("false", "false")
    ),
    plain!(
        "hbase.hregion.memstore.block.multiplier",
        "block-multiplier",
        "N",
        "above flush size × this a write waits for the flush (see hbase.busy.wait.duration)",
        block_multiplier,
        int,
        ("8", "8")
    ),
    plain!(
        "hbase.hstore.blockingStoreFiles",
        "blocking-store-files",
        "N",
        "store files at which a store's flushes wait for compaction",
        blocking_store_files,
        usize_of,
        ("32", "32")
    ),
    millis!(
        "hbase.busy.wait.duration",
        "busy-wait-ms",
        "a write to a region above its blocking size waits this long for the flush, then is refused",
        busy_wait,
        "10000"
    ),
    Setting {
        key: "hbase.regionserver.thrift.framed.max_frame_size_in_mb",
        flag: Some("max-frame"),
        value_name: "BYTES",
        help: "largest request frame (the key in MiB, the flag in bytes)",
        repeatable: false,
        from_toml: |s, v| {
            let mib = usize_of("hbase.regionserver.thrift.framed.max_frame_size_in_mb", v)?;
            s.max_frame = mib.saturating_mul(1 << 20);
            Ok(())
        },
        from_flag: |s, text| {
            s.max_frame = parse("max-frame", text)?;
            Ok(())
        },
        show: |s| s.max_frame.to_string(),
        example: ("8", "8388608"),
    },
    millis!(
        "hbase.client.scanner.timeout.period",
        "scanner-lease-ms",
        "an open scanner unused this long is closed",
        scanner_lease,
        "5000"
    ),
    plain!(
        "keel.max.connections",
        "max-connections",
        "N",
        "open connections at most; more are closed at accept",
        max_connections,
        usize_of,
        ("10", "10")
    ),
    millis!(
        "hbase.thrift.server.socket.read.timeout",
        "request-timeout-ms",
        "a request begun must arrive whole within this",
        request_timeout,
        "5000"
    ),
    millis!(
        "hbase.thrift.connection.max-idletime",
        "idle-timeout-ms",
        "an idle connection is closed after this",
        idle_timeout,
        "30000"
    ),
    plain!(
        "keel.max.open.scanners",
        "max-open-scanners",
        "N",
        "open scanners at most",
        max_open_scanners,
        usize_of,
        ("100", "100")
    ),
    plain!(
        "hbase.server.allocator.pool.enabled",
        "pool-enabled",
        "BOOL",
        "request buffers from the fixed-size pool (false: plain allocation)",
        pool_enabled,
        boolean,
        ("false", "false")
    ),
    Setting {
        key: "keel.server.request.buffers",
        flag: Some("request-buffers"),
        value_name: "DESIGN",
        help: "any request-buffer design: fixed-pool, plain, per-connection, shared-average, size-class",
        repeatable: false,
        from_toml: |s, v| {
            let text = string("keel.server.request.buffers", v)?;
            s.request_buffers = Some(
                text.parse()
                    .map_err(|e| format!("keel.server.request.buffers: {e}"))?,
            );
            Ok(())
        },
        from_flag: |s, text| {
            s.request_buffers = Some(parse("request-buffers", text)?);
            Ok(())
        },
        show: |s| s.buffer_strategy().to_string(),
        example: ("\"shared-average\"", "shared-average"),
    },
    Setting {
        key: "hbase.ipc.server.max.callqueue.length",
        flag: Some("max-queue-length"),
        value_name: "N",
        help: "calls per queue before refusals (default: handlers / queues × 10)",
        repeatable: false,
        from_toml: |s, v| {
            s.max_queue_length = Some(usize_of("hbase.ipc.server.max.callqueue.length", v)?);
            Ok(())
        },
        from_flag: |s, text| {
            s.max_queue_length = Some(parse("max-queue-length", text)?);
            Ok(())
        },
        show: |s| {
            s.max_queue_length
                .map_or("handlers / queues × 10".into(), |n| n.to_string())
        },
        example: ("50", "50"),
    },
    plain!(
        "hbase.ipc.server.max.callqueue.size",
        "max-queued-bytes",
        "BYTES",
        "bytes of queued and running calls before refusals",
        max_queued_bytes,
        int,
        ("1048576", "1048576")
    ),
    plain!(
        "hbase.wal.hsync",
        "wal-hsync",
        "BOOL",
        "acknowledge writes after the WAL's fdatasync (survives a power cut), not once written to the OS",
        wal_hsync,
        boolean,
        ("true", "true")
    ),
    plain!(
        "keel.table.max.families",
        "max-families",
        "N",
        "column families a table may have",
        max_families_per_table,
        usize_of,
        ("16", "16")
    ),
    plain!(
        "keel.server.inflight.bytes",
        "max-inflight-bytes",
        "BYTES",
        "requests being received or decoded and replies not yet written, server-wide; more is refused (CallQueueTooBigException)",
        max_inflight_bytes,
        int,
        ("1048576", "1048576")
    ),
    millis!(
        "keel.server.reply.timeout",
        "reply-timeout-ms",
        "how long a client has to read a reply; then its connection is closed (a handler never waits for it)",
        reply_timeout,
        "5000"
    ),
    plain!(
        "hbase.server.scanner.max.result.size",
        "max-result-size",
        "BYTES",
        "the most bytes of cells one scannerGetList returns (at least one row) and one getRows may gather",
        max_result_size,
        int,
        ("1048576", "1048576")
    ),
    Setting {
        key: "table.NAME.durability",
        flag: Some("table-durability"),
        value_name: "NAME=LEVEL",
        help: "a table's durability (SKIP_WAL, ASYNC_WAL, SYNC_WAL, FSYNC_WAL), HBase's table DURABILITY; repeatable",
        repeatable: true,
        // Read from the `[table.NAME]` sections; see `apply_table_sections`.
        from_toml: |_, _| Err("table durability is set in a [table.NAME] section".to_string()),
        from_flag: |s, text| {
            let (name, level) = parse_table_durability(text)?;
            s.table_durability.insert(name, level);
            Ok(())
        },
        show: |s| {
            if s.table_durability.is_empty() {
                "the server's".to_string()
            } else {
                let pairs: Vec<String> = s
                    .table_durability
                    .iter()
                    .map(|(t, d)| format!("{t}={d}"))
                    .collect();
                pairs.join(",")
            }
        },
        example: ("\"FSYNC_WAL\"", "orders=FSYNC_WAL"),
    },
    Setting {
        key: "table.NAME.regions",
        flag: Some("table-regions"),
        value_name: "NAME=SPEC",
        help: "a table's regions when it is created: N or N:HexStringSplit, N:UniformSplit, or keys:K1,K2 (HBase's pre-split); repeatable",
        repeatable: true,
        from_toml: |_, _| Err("table regions are set in a [table.NAME] section".to_string()),
        from_flag: |s, text| {
            let (name, keys) = parse_table_regions(text)?;
            s.table_split_keys.insert(name, keys);
            Ok(())
        },
        show: |s| {
            if s.table_split_keys.is_empty() {
                "one region".to_string()
            } else {
                let tables: Vec<String> = s
                    .table_split_keys
                    .iter()
                    .map(|(t, keys)| format!("{t}={}", keys.len() + 1))
                    .collect();
                tables.join(",")
            }
        },
        example: ("\"4:HexStringSplit\"", "orders=4:HexStringSplit"),
    },
    Setting {
        key: "keel.otlp.endpoint",
        flag: Some("otlp-endpoint"),
        value_name: "URL|off",
        help: "export spans over OTLP/HTTP (protobuf) to this collector (build feature otlp)",
        repeatable: false,
        from_toml: |s, v| {
            s.otlp_endpoint = parse_otlp_endpoint(string("keel.otlp.endpoint", v)?)?;
            Ok(())
        },
        from_flag: |s, text| {
            s.otlp_endpoint = parse_otlp_endpoint(text)?;
            Ok(())
        },
        show: |s| s.otlp_endpoint.clone().unwrap_or_else(|| "off".to_string()),
        example: ("\"http://127.0.0.1:4318\"", "http://127.0.0.1:4318"),
    },
    Setting {
        key: "keel.otlp.sampling.ratio",
        flag: Some("otlp-sampling-ratio"),
        value_name: "F",
        help: "share of traces exported, decided at the root (0 to 1)",
        repeatable: false,
        from_toml: |s, v| {
            s.otlp_sampling_ratio = check_sampling_ratio(float("keel.otlp.sampling.ratio", v)?)?;
            Ok(())
        },
        from_flag: |s, text| {
            s.otlp_sampling_ratio = check_sampling_ratio(parse("otlp-sampling-ratio", text)?)?;
            Ok(())
        },
        show: |s| s.otlp_sampling_ratio.to_string(),
        example: ("0.25", "0.25"),
    },
];

/// Per-table settings' keys start with this: they live in `[table.NAME]` sections.
const TABLE_KEY: &str = "table.NAME.";

fn flatten(prefix: &str, table: &toml::Table, out: &mut BTreeMap<String, toml::Value>) {
    for (key, value) in table {
        let name = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        match value {
            toml::Value::Table(inner) => flatten(&name, inner, out),
            other => {
                out.insert(name, other.clone());
            }
        }
    }
}

impl Settings {
    /// The request-buffer design: `keel.server.request.buffers` if given, else the fixed-size
    /// pool or plain allocation as `hbase.server.allocator.pool.enabled` says.
    pub fn buffer_strategy(&self) -> Strategy {
        self.request_buffers.unwrap_or(if self.pool_enabled {
            Strategy::FixedPool
        } else {
            Strategy::Plain
        })
    }

    /// The durability `USE_DEFAULT` writes get on tables that do not choose one.
    pub fn default_durability(&self) -> Durability {
        if self.wal_hsync {
            Durability::FsyncWal
        } else {
            Durability::SyncWal
        }
    }

    /// Applies a `keel.toml`'s text.
    pub fn apply_toml(&mut self, text: &str) -> Result<(), String> {
        let mut table: toml::Table = text.parse().map_err(|e| format!("keel.toml: {e}"))?;
        // `[table.NAME]` sections are per-table settings: NAME may hold dots, so they are read
        // before the rest is flattened into dotted keys.
        if let Some(tables) = table.remove("table") {
            self.apply_table_sections(&tables)?;
        }
        let mut keys = BTreeMap::new();
        flatten("", &table, &mut keys);
        for (key, value) in keys {
            let setting = SETTINGS
                .iter()
                .find(|s| s.key == key && !s.key.starts_with(TABLE_KEY))
                .ok_or_else(|| format!("keel.toml: unknown key {key}"))?;
            (setting.from_toml)(self, &value)?;
        }
        Ok(())
    }

    /// Applies one flag (named without its dashes) with its text.
    pub fn apply_flag(&mut self, flag: &str, text: &str) -> Result<(), String> {
        let setting = SETTINGS
            .iter()
            .find(|s| s.flag == Some(flag))
            .ok_or_else(|| format!("unknown flag --{flag}"))?;
        (setting.from_flag)(self, text)
    }

    fn apply_table_sections(&mut self, tables: &toml::Value) -> Result<(), String> {
        let tables = tables.as_table().ok_or_else(|| {
            "keel.toml: [table] holds one section per table: [table.NAME]".to_string()
        })?;
        for (name, section) in tables {
            keel_region::names::TableName::new(name)
                .map_err(|e| format!("keel.toml: [table.{name}]: {e}"))?;
            let section = section
                .as_table()
                .ok_or_else(|| format!("keel.toml: table.{name} must be a section"))?;
            for (key, value) in section {
                match key.as_str() {
                    "durability" => {
                        let level = string(&format!("table.{name}.durability"), value)?
                            .parse()
                            .map_err(|e| format!("table.{name}.durability: {e}"))?;
                        self.table_durability.insert(name.clone(), level);
                    }
                    "regions" => {
                        let what = format!("table.{name}.regions");
                        let keys =
                            match value {
                                toml::Value::Integer(n) => parse_regions(&n.to_string()),
                                toml::Value::String(spec) => parse_regions(spec),
                                toml::Value::Array(keys) => keys
                                    .iter()
                                    .map(|k| {
                                        k.as_str()
                                            .map(|k| bytes::Bytes::copy_from_slice(k.as_bytes()))
                                            .ok_or_else(|| "split keys are strings".to_string())
                                    })
                                    .collect(),
                                _ => Err("a count, \"N:ALGORITHM\" or an array of split keys"
                                    .to_string()),
                            }
                            .map_err(|e| format!("{what}: {e}"))?;
                        self.table_split_keys.insert(name.clone(), keys);
                    }
                    other => {
                        return Err(format!(
                            "keel.toml: unknown key table.{name}.{other} (a table section takes durability and regions)"
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    /// The settings section of `docs/server.md`: every setting's key, flag, default and use,
    /// as a Markdown table.
    pub fn docs_table() -> String {
        let defaults = Settings::default();
        let mut out = String::from("| `keel.toml` key | flag | default | what it does |\n");
        out.push_str("|---|---|---|---|\n");
        for s in SETTINGS {
            let key = if let Some(field) = s.key.strip_prefix(TABLE_KEY) {
                format!("`[table.NAME]` `{field}`")
            } else {
                format!("`{}`", s.key)
            };
            // A `|` inside a table cell must be escaped, code span or not.
            let flag = s.flag.map_or("—".to_string(), |f| {
                format!("`--{f} {}`", s.value_name.replace('|', "\\|"))
            });
            out.push_str(&format!(
                "| {key} | {flag} | {} | {} |\n",
                (s.show)(&defaults),
                s.help
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests;
