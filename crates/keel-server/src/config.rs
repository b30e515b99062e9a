//! `keel.toml`: the server's settings under HBase's own key names (and a few `keel.*` ones),
//! written either as quoted dotted keys (`"hbase.regionserver.handler.count" = 30`) or as nested
//! tables. Command-line flags override the file; the file overrides the defaults, which are
//! HBase's. An unknown key or a value of the wrong type is an error that names it.

use std::collections::BTreeMap;
use std::net::SocketAddr;
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
    /// `hbase.hregion.memstore.block.multiplier` (4).
    pub block_multiplier: u64,
    /// `hbase.hstore.blockingStoreFiles` (16).
    pub blocking_store_files: usize,
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
    /// `per-connection`, `shared-average`); overrides `pool_enabled` when given.
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
    /// `keel.table.max.families` (256): column families a table may have.
    pub max_families_per_table: usize,
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
            block_multiplier: 4,
            blocking_store_files: 16,
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
            max_families_per_table: 256,
        }
    }
}

/// `NAME=LEVEL` (`--table-durability`): a table and HBase's name for a durability.
pub fn parse_table_durability(value: &str) -> Result<(String, Durability), String> {
    let (name, level) = value
        .rsplit_once('=')
        .ok_or_else(|| format!("--table-durability {value:?}: expected NAME=LEVEL"))?;
    keel_region::names::TableName::new(name).map_err(|e| format!("--table-durability: {e}"))?;
    Ok((name.to_string(), level.parse()?))
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
            let int = || {
                value
                    .as_integer()
                    .filter(|&v| v >= 0)
                    .ok_or_else(|| format!("{key}: expected a non-negative integer, got {value}"))
            };
            let float = || {
                value
                    .as_float()
                    .or_else(|| value.as_integer().map(|i| i as f64))
                    .ok_or_else(|| format!("{key}: expected a number, got {value}"))
            };
            let string = || {
                value
                    .as_str()
                    .map(str::to_string)
                    .ok_or_else(|| format!("{key}: expected a string, got {value}"))
            };
            match key.as_str() {
                "keel.listen" => {
                    self.listen = string()?.parse().map_err(|e| format!("{key}: {e}"))?;
                }
                "hbase.regionserver.thrift.port" => {
                    let port = u16::try_from(int()?).map_err(|_| format!("{key}: not a port"))?;
                    self.listen.set_port(port);
                }
                "keel.data.dir" => self.data_dir = PathBuf::from(string()?),
                "keel.status.listen" => self.status_listen = parse_status_listen(&string()?)?,
                "hbase.regionserver.info.port" => {
                    let port = u16::try_from(int()?).map_err(|_| format!("{key}: not a port"))?;
                    let mut address = self
                        .status_listen
                        .unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 9095)));
                    address.set_port(port);
                    self.status_listen = Some(address);
                }
                "hbase.regionserver.handler.count" => self.handler_count = int()? as usize,
                "hbase.ipc.server.callqueue.handler.factor" => self.handler_factor = float()?,
                "hbase.ipc.server.callqueue.read.ratio" => self.read_ratio = float()?,
                "hbase.ipc.server.callqueue.scan.ratio" => self.scan_ratio = float()?,
                "hbase.hregion.memstore.flush.size" => self.flush_size = int()? as u64,
                "hbase.hregion.memstore.block.multiplier" => self.block_multiplier = int()? as u64,
                "hbase.hstore.blockingStoreFiles" => self.blocking_store_files = int()? as usize,
                "hbase.regionserver.thrift.framed.max_frame_size_in_mb" => {
                    self.max_frame = (int()? as usize).saturating_mul(1 << 20);
                }
                "hbase.client.scanner.timeout.period" => {
                    self.scanner_lease = Duration::from_millis(int()? as u64);
                }
                "keel.max.connections" => self.max_connections = int()? as usize,
                "hbase.thrift.server.socket.read.timeout" => {
                    self.request_timeout = Duration::from_millis(int()? as u64);
                }
                "hbase.thrift.connection.max-idletime" => {
                    self.idle_timeout = Duration::from_millis(int()? as u64);
                }
                "keel.max.open.scanners" => self.max_open_scanners = int()? as usize,
                "hbase.ipc.server.max.callqueue.length" => {
                    self.max_queue_length = Some(int()? as usize);
                }
                "hbase.ipc.server.max.callqueue.size" => self.max_queued_bytes = int()? as u64,
                "hbase.server.allocator.pool.enabled" => {
                    self.pool_enabled = value
                        .as_bool()
                        .ok_or_else(|| format!("{key}: expected true or false, got {value}"))?;
                }
                "hbase.wal.hsync" => {
                    self.wal_hsync = value
                        .as_bool()
                        .ok_or_else(|| format!("{key}: expected true or false, got {value}"))?;
                }
                "keel.table.max.families" => self.max_families_per_table = int()? as usize,
                "keel.server.request.buffers" => {
                    self.request_buffers =
                        Some(string()?.parse().map_err(|e| format!("{key}: {e}"))?);
                }
                _ => return Err(format!("keel.toml: unknown key {key}")),
            }
        }
        Ok(())
    }
}

impl Settings {
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
                        let level = value
                            .as_str()
                            .ok_or_else(|| format!("table.{name}.durability: expected a string"))?
                            .parse()
                            .map_err(|e| format!("table.{name}.durability: {e}"))?;
                        self.table_durability.insert(name.clone(), level);
                    }
                    other => {
                        return Err(format!(
                            "keel.toml: unknown key table.{name}.{other} (a table section takes durability)"
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hbase_keys_in_either_form_and_errors_that_name_the_key() {
        let mut s = Settings::default();
        s.apply_toml(
            r#"
            "hbase.regionserver.handler.count" = 8
            "hbase.ipc.server.callqueue.read.ratio" = 0.5
            "keel.data.dir" = "/tmp/x"

            [hbase.hregion.memstore]
            "flush.size" = 1048576

            [hbase.regionserver.thrift]
            port = 19090

            [hbase.server.allocator.pool]
            enabled = false
            "#,
        )
        .expect("valid");
        assert_eq!(s.handler_count, 8);
        assert_eq!(s.read_ratio, 0.5);
        assert_eq!(s.flush_size, 1 << 20);
        assert_eq!(s.listen.port(), 19090);
        assert_eq!(s.data_dir, PathBuf::from("/tmp/x"));
        assert!(!s.pool_enabled);
        assert_eq!(s.buffer_strategy(), Strategy::Plain);
        let mut design = Settings::default();
        assert_eq!(design.buffer_strategy(), Strategy::FixedPool);
        design
            .apply_toml("[keel.server.request]\nbuffers = \"shared-average\"")
            .expect("a design by name");
        assert_eq!(design.buffer_strategy(), Strategy::SharedAverage);
        let wrong = Settings::default()
            .apply_toml("\"keel.server.request.buffers\" = \"pooled\"")
            .expect_err("unknown design");
        assert!(
            wrong.contains("keel.server.request.buffers") && wrong.contains("per-connection"),
            "{wrong}"
        );
        assert_eq!(
            s.status_listen,
            Some("127.0.0.1:9095".parse().expect("address"))
        );
        let mut off = Settings::default();
        off.apply_toml("\"keel.status.listen\" = \"off\"")
            .expect("off");
        assert_eq!(off.status_listen, None);
        let mut port = Settings::default();
        port.apply_toml("\"hbase.regionserver.info.port\" = 16030")
            .expect("port");
        assert_eq!(port.status_listen.map(|a| a.port()), Some(16030));
        assert!(
            Settings::default()
                .apply_toml("\"keel.status.listen\" = \"nowhere\"")
                .is_err()
        );
        let unknown = Settings::default()
            .apply_toml("\"hbase.made.up\" = 1")
            .expect_err("unknown");
        assert!(unknown.contains("hbase.made.up"), "{unknown}");
        let wrong = Settings::default()
            .apply_toml("\"hbase.regionserver.handler.count\" = \"many\"")
            .expect_err("type");
        assert!(
            wrong.contains("hbase.regionserver.handler.count"),
            "{wrong}"
        );
        assert!(Settings::default().apply_toml("not toml [").is_err());
    }

    #[test]
    fn durability_for_the_server_and_per_table() {
        let mut s = Settings::default();
        assert_eq!(s.default_durability(), Durability::SyncWal);
        s.apply_toml(
            r#"
            "hbase.wal.hsync" = true
            [table.orders]
            durability = "FSYNC_WAL"
            [table."a.b"]
            durability = "async_wal"
            "#,
        )
        .expect("valid");
        assert_eq!(s.default_durability(), Durability::FsyncWal);
        assert_eq!(s.table_durability["orders"], Durability::FsyncWal);
        assert_eq!(s.table_durability["a.b"], Durability::AsyncWal);
        for (bad, says) in [
            (
                "[table.\"..\"]\ndurability = \"SYNC_WAL\"",
                "first character",
            ),
            (
                "[table.t]\ndurability = \"SOMETIMES\"",
                "unknown durability",
            ),
            ("[table.t]\nversions = 3", "unknown key table.t.versions"),
            ("\"hbase.wal.hsync\" = 1", "hbase.wal.hsync"),
        ] {
            let err = Settings::default().apply_toml(bad).expect_err(bad);
            assert!(err.contains(says), "{bad}: {err}");
        }
        assert_eq!(
            parse_table_durability("t=FSYNC_WAL"),
            Ok(("t".to_string(), Durability::FsyncWal))
        );
        assert!(parse_table_durability("../t=FSYNC_WAL").is_err());
        assert!(parse_table_durability("t").is_err());
    }
}
