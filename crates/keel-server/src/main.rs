//! `keel`: Keel's server binary. `keel serve` serves the embedded store over HBase's Thrift1
//! gateway protocol, so happybase and other Thrift1 clients work against it unchanged. With no
//! arguments it listens on 127.0.0.1:9090 with its data in `./keel-data`. SIGINT or SIGTERM
//! shut it down gracefully: no new connections, calls in flight finished and answered, every
//! memstore flushed, the WAL closed.

#![expect(
    clippy::print_stderr,
    reason = "the server says where it listens, and when it stops"
)]

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::{Parser, Subcommand};
use keel_region::{RegionServer, ServerOptions};
use keel_server::config::Settings;
use keel_server::{Handler, HandlerOptions, NetOptions, StatusOptions, StatusServer, ThriftServer};

/// Keel's server.
#[derive(Debug, Parser)]
#[command(name = "keel", about, version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serves the store over HBase's Thrift1 protocol (buffered or framed, binary or compact).
    Serve(Serve),
}

/// Flags override `--config`, which overrides HBase's defaults.
#[derive(Debug, clap::Args)]
struct Serve {
    /// A `keel.toml` with HBase's keys (`hbase.regionserver.handler.count`, …).
    #[arg(long)]
    config: Option<PathBuf>,
    /// `keel.listen`: where to listen (default 127.0.0.1:9090; loopback unless you choose).
    #[arg(long)]
    listen: Option<SocketAddr>,
    /// `keel.data.dir`: the store's directory (default ./keel-data, created if needed).
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// `keel.status.listen`: the status port, with /metrics, / and /status.json (default
    /// 127.0.0.1:9095; `off` for none).
    #[arg(long, value_name = "ADDR|off")]
    status_listen: Option<String>,
    /// `hbase.regionserver.handler.count` (30).
    #[arg(long)]
    handler_count: Option<usize>,
    /// `hbase.ipc.server.callqueue.read.ratio` (0.0).
    #[arg(long)]
    read_ratio: Option<f64>,
    /// `hbase.ipc.server.callqueue.scan.ratio` (0.0).
    #[arg(long)]
    scan_ratio: Option<f64>,
    /// `hbase.hregion.memstore.flush.size`, bytes (128 MiB).
    #[arg(long)]
    flush_size: Option<u64>,
    /// Largest request frame, bytes (16 MiB).
    #[arg(long)]
    max_frame: Option<usize>,
    /// `hbase.ipc.server.callqueue.handler.factor` (0.1).
    #[arg(long)]
    handler_factor: Option<f64>,
    /// `hbase.hregion.memstore.block.multiplier` (4).
    #[arg(long)]
    block_multiplier: Option<u64>,
    /// `hbase.hstore.blockingStoreFiles` (16).
    #[arg(long)]
    blocking_store_files: Option<usize>,
    /// `hbase.client.scanner.timeout.period`, ms (60 000).
    #[arg(long)]
    scanner_lease_ms: Option<u64>,
    /// `keel.max.connections` (1 000).
    #[arg(long)]
    max_connections: Option<usize>,
    /// `hbase.thrift.server.socket.read.timeout`, ms (60 000).
    #[arg(long)]
    request_timeout_ms: Option<u64>,
    /// `hbase.thrift.connection.max-idletime`, ms (600 000).
    #[arg(long)]
    idle_timeout_ms: Option<u64>,
    /// `keel.max.open.scanners` (10 000).
    #[arg(long)]
    max_open_scanners: Option<usize>,
    /// `hbase.server.allocator.pool.enabled` (true).
    #[arg(long)]
    pool_enabled: Option<bool>,
    /// `keel.server.request.buffers`: fixed-pool, plain, per-connection or shared-average
    /// (default: as --pool-enabled says).
    #[arg(long)]
    request_buffers: Option<keel_bufpool::Strategy>,
    /// `hbase.ipc.server.max.callqueue.length` (handlers / queues × 10).
    #[arg(long)]
    max_queue_length: Option<usize>,
    /// `hbase.ipc.server.max.callqueue.size`, bytes (1 GiB).
    #[arg(long)]
    max_queued_bytes: Option<u64>,
    /// `hbase.wal.hsync` (false): acknowledge writes after the WAL's fsync (survives a power
    /// cut) rather than once written to the OS (survives a process crash).
    #[arg(long)]
    wal_hsync: Option<bool>,
    /// A table's durability, `NAME=LEVEL` with HBase's levels (SKIP_WAL, ASYNC_WAL, SYNC_WAL,
    /// FSYNC_WAL); repeatable. The `[table.NAME]` section of keel.toml does the same.
    #[arg(long, value_name = "NAME=LEVEL", value_parser = keel_server::config::parse_table_durability)]
    table_durability: Vec<(String, keel_region::Durability)>,
    /// `keel.table.max.families` (256).
    #[arg(long)]
    max_families: Option<usize>,
}

fn settings(args: &Serve) -> Result<Settings, String> {
    let mut s = Settings::default();
    if let Some(path) = &args.config {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        s.apply_toml(&text)?;
    }
    if let Some(v) = &args.data_dir {
        s.data_dir.clone_from(v);
    }
    if let Some(v) = &args.status_listen {
        s.status_listen = keel_server::config::parse_status_listen(v)?;
    }
    for (name, level) in &args.table_durability {
        s.table_durability.insert(name.clone(), *level);
    }
    // Each flag given replaces the setting (converted `via` a function where units differ).
    macro_rules! flags {
        ($($flag:ident => $field:ident $(via $map:expr)?),* $(,)?) => {
            $(if let Some(v) = args.$flag {
                s.$field = flags!(@convert v $(, $map)?);
            })*
        };
        (@convert $v:ident) => { $v };
        (@convert $v:ident, $map:expr) => { ($map)($v) };
    }
    flags! {
        listen => listen,
        handler_count => handler_count,
        handler_factor => handler_factor,
        read_ratio => read_ratio,
        scan_ratio => scan_ratio,
        flush_size => flush_size,
        block_multiplier => block_multiplier,
        blocking_store_files => blocking_store_files,
        max_frame => max_frame,
        scanner_lease_ms => scanner_lease via Duration::from_millis,
        max_connections => max_connections,
        request_timeout_ms => request_timeout via Duration::from_millis,
        idle_timeout_ms => idle_timeout via Duration::from_millis,
        max_open_scanners => max_open_scanners,
        pool_enabled => pool_enabled,
        request_buffers => request_buffers via Some,
        max_queue_length => max_queue_length via Some,
        max_queued_bytes => max_queued_bytes,
        wal_hsync => wal_hsync,
        max_families => max_families_per_table,
    }
    Ok(s)
}

fn serve(args: &Serve) -> Result<(), String> {
    let s = settings(args)?;
    let mut store_options = ServerOptions::default();
    store_options.limits.flush_size = s.flush_size;
    store_options.limits.block_multiplier = s.block_multiplier;
    store_options.limits.blocking_store_files = s.blocking_store_files;
    store_options.default_durability = s.default_durability();
    store_options.table_durability = s.table_durability.clone();
    store_options.max_families_per_table = s.max_families_per_table;
    let store = Arc::new(
        RegionServer::open(&s.data_dir, store_options)
            .map_err(|e| format!("cannot open {}: {e}", s.data_dir.display()))?,
    );
    let handler = Arc::new(Handler::new(
        Arc::clone(&store),
        HandlerOptions {
            port: i32::from(s.listen.port()),
            scanner_lease: s.scanner_lease,
            max_open_scanners: s.max_open_scanners,
            ..HandlerOptions::default()
        },
    ));
    let mut options = NetOptions {
        listen: s.listen,
        max_frame: s.max_frame,
        max_connections: s.max_connections,
        request_timeout: s.request_timeout,
        idle_timeout: s.idle_timeout,
        ..NetOptions::default()
    };
    options.buffers = s.buffer_strategy();
    options.rpc.handler_count = s.handler_count;
    options.rpc.handler_factor = s.handler_factor;
    options.rpc.read_ratio = s.read_ratio;
    options.rpc.scan_ratio = s.scan_ratio;
    options.rpc.max_queue_length = s.max_queue_length;
    options.rpc.max_queued_bytes = s.max_queued_bytes;
    let (stop_tx, stop_rx) = std::sync::mpsc::channel();
    ctrlc::set_handler(move || {
        let _ = stop_tx.send(());
    })
    .map_err(|e| format!("cannot handle signals: {e}"))?;
    let server = ThriftServer::start(handler, options)
        .map_err(|e| format!("cannot listen on {}: {e}", s.listen))?;
    let status = match s.status_listen {
        Some(address) => Some(
            StatusServer::start(
                Arc::clone(&store),
                server.observer(),
                &StatusOptions {
                    listen: address,
                    ..StatusOptions::default()
                },
            )
            .map_err(|e| format!("cannot serve the status port on {address}: {e}"))?,
        ),
        None => None,
    };
    tracing::info!(
        listen = %server.local_addr(),
        status = %status
            .as_ref()
            .map_or_else(|| "off".to_string(), |st| format!("http://{}/", st.local_addr())),
        data = %s.data_dir.display(),
        handlers = s.handler_count,
        max_frame = s.max_frame,
        flush_size = s.flush_size,
        max_connections = s.max_connections,
        request_timeout = ?s.request_timeout,
        idle_timeout = ?s.idle_timeout,
        max_open_scanners = s.max_open_scanners,
        request_buffers = %s.buffer_strategy(),
        durability = %s.default_durability(),
        "keel serving (Thrift1: buffered or framed, binary or compact)"
    );
    let _ = stop_rx.recv();
    tracing::info!("stopping: finishing calls in flight, flushing memstores");
    server.shutdown();
    if let Some(status) = status {
        status.shutdown();
    }
    for name in store.list_tables() {
        if let Ok(table) = store.table(&name) {
            table
                .flush()
                .map_err(|e| format!("flushing {name} at shutdown: {e}"))?;
        }
    }
    // If a connection thread still holds the store, everything is flushed already and the
    // WAL closes as the process exits.
    if let Ok(store) = Arc::try_unwrap(store) {
        store
            .close()
            .map_err(|e| format!("closing the store: {e}"))?;
    }
    tracing::info!("stopped");
    Ok(())
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    // Logs to stderr, filtered by RUST_LOG (default: info).
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    let result = match &cli.command {
        Command::Serve(args) => serve(args),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("keel: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
