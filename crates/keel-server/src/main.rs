//! `keel`: Keel's server binary. `keel serve` serves the embedded store over HBase's Thrift1
//! gateway protocol, so happybase and other Thrift1 clients work against it unchanged. With no
//! arguments it listens on 127.0.0.1:9090 with its data in `./keel-data`. SIGINT or SIGTERM
//! shut it down gracefully: no new connections, calls in flight finished and answered, every
//! memstore flushed, the WAL closed.

#![expect(
    clippy::print_stderr,
    reason = "the server says where it listens, and when it stops"
)]

use std::path::PathBuf;
use std::sync::Arc;

use clap::{Parser, Subcommand};

#[cfg(feature = "otlp")]
#[path = "bin_support/otlp.rs"]
mod otlp;
use keel_region::{Engine, EngineOptions};
use keel_server::config::{SETTINGS, Settings};
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
    /// Splits or merges a running server's regions, through its (loopback) status port.
    Admin {
        /// The server's status address.
        #[arg(long, default_value = "127.0.0.1:9095")]
        status: std::net::SocketAddr,
        #[command(subcommand)]
        operation: AdminOperation,
    },
}

#[derive(Debug, Subcommand)]
enum AdminOperation {
    /// Splits a region at a row (or at its split point).
    Split {
        /// The table.
        table: String,
        /// The region's id (`getTableRegions`, or the status page).
        region: u64,
        /// The row the second region starts at.
        at: Option<String>,
    },
    /// Merges two adjacent regions.
    Merge {
        /// The table.
        table: String,
        /// One region's id.
        a: u64,
        /// The other's.
        b: u64,
    },
}

/// Percent-encodes a query value.
fn encode(value: &[u8]) -> String {
    value
        .iter()
        .map(|&b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// `keel admin`: one POST to the status port; prints its answer.
#[expect(clippy::print_stdout, reason = "a command's answer, on the terminal")]
fn admin(status: std::net::SocketAddr, operation: &AdminOperation) -> Result<(), String> {
    use std::io::{Read, Write};
    let path = match operation {
        AdminOperation::Split { table, region, at } => {
            let mut path = format!(
                "/admin/split?table={}&region={region}",
                encode(table.as_bytes())
            );
            if let Some(at) = at {
                path.push_str(&format!("&at={}", encode(at.as_bytes())));
            }
            path
        }
        AdminOperation::Merge { table, a, b } => {
            format!(
                "/admin/merge?table={}&a={a}&b={b}",
                encode(table.as_bytes())
            )
        }
    };
    let mut socket = std::net::TcpStream::connect(status)
        .map_err(|e| format!("the status port {status}: {e}"))?;
    write!(
        socket,
        "POST {path} HTTP/1.1\r\nHost: {status}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )
    .map_err(|e| e.to_string())?;
    let mut reply = String::new();
    socket
        .read_to_string(&mut reply)
        .map_err(|e| e.to_string())?;
    let (head, body) = reply.split_once("\r\n\r\n").unwrap_or((&reply, ""));
    if head.starts_with("HTTP/1.1 200") {
        print!("{body}");
        Ok(())
    } else {
        Err(body.trim().to_string())
    }
}

/// `keel serve`'s flags: `--config` and one per setting of keel-server's settings table
/// (`keel_server::config::SETTINGS`), so the flags, the `keel.toml` keys and the docs cannot
/// drift apart. Flags override `--config`, which overrides HBase's defaults.
#[derive(Debug)]
struct Serve {
    /// A `keel.toml` with HBase's keys.
    config: Option<PathBuf>,
    /// Each setting flag given, in order, with its text.
    flags: Vec<(&'static str, String)>,
}

impl clap::FromArgMatches for Serve {
    fn from_arg_matches(matches: &clap::ArgMatches) -> Result<Serve, clap::Error> {
        let mut flags = Vec::new();
        for setting in SETTINGS {
            let Some(flag) = setting.flag else { continue };
            if let Some(values) = matches.get_many::<String>(flag) {
                flags.extend(values.map(|v| (flag, v.clone())));
            }
        }
        Ok(Serve {
            config: matches.get_one::<PathBuf>("config").cloned(),
            flags,
        })
    }

    fn update_from_arg_matches(&mut self, matches: &clap::ArgMatches) -> Result<(), clap::Error> {
        *self = Serve::from_arg_matches(matches)?;
        Ok(())
    }
}

impl clap::Args for Serve {
    fn augment_args(command: clap::Command) -> clap::Command {
        let mut command = command.arg(
            clap::Arg::new("config")
                .long("config")
                .value_name("FILE")
                .value_parser(clap::value_parser!(PathBuf))
                .help("A keel.toml with HBase's keys (hbase.regionserver.handler.count, …)"),
        );
        for setting in SETTINGS {
            let Some(flag) = setting.flag else { continue };
            command = command.arg(
                clap::Arg::new(flag)
                    .long(flag)
                    .value_name(setting.value_name)
                    .help(format!("`{}`: {}", setting.key, setting.help))
                    .action(if setting.repeatable {
                        clap::ArgAction::Append
                    } else {
                        clap::ArgAction::Set
                    }),
            );
        }
        command
    }

    fn augment_args_for_update(command: clap::Command) -> clap::Command {
        Serve::augment_args(command)
    }
}

fn settings(args: &Serve) -> Result<Settings, String> {
    let mut s = Settings::default();
    if let Some(path) = &args.config {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        s.apply_toml(&text)?;
    }
    for (flag, text) in &args.flags {
        s.apply_flag(flag, text)?;
    }
    Ok(s)
}

fn serve(s: &Settings) -> Result<(), String> {
    let mut store_options = EngineOptions::default();
    store_options.limits.flush_size = s.flush_size;
    store_options.max_region_size = s.max_region_size;
    store_options.auto_split = s.split_policy == keel_server::config::SplitPolicy::Stepping;
    store_options.limits.block_multiplier = s.block_multiplier;
    store_options.limits.in_memory_compaction = s.in_memory_compaction;
    store_options.limits.pipeline_segments_limit = s.pipeline_segments_limit.get();
    store_options.limits.flatten_copies = s.flatten_copies;
    store_options.limits.blocking_store_files = s.blocking_store_files;
    store_options.limits.busy_wait = s.busy_wait;
    store_options.default_durability = s.default_durability();
    store_options.table_durability = s.table_durability.clone();
    store_options.table_split_keys = s.table_split_keys.clone();
    store_options.max_families_per_table = s.max_families_per_table;
    let store = Arc::new(
        Engine::open(&s.data_dir, store_options)
            .map_err(|e| format!("cannot open {}: {e}", s.data_dir.display()))?,
    );
    let handler = Arc::new(Handler::new(
        Arc::clone(&store),
        HandlerOptions {
            port: i32::from(s.listen.port()),
            scanner_lease: s.scanner_lease,
            max_open_scanners: s.max_open_scanners,
            max_result_size: s.max_result_size,
            ..HandlerOptions::default()
        },
    ));
    let mut options = NetOptions {
        listen: s.listen,
        max_frame: s.max_frame,
        max_connections: s.max_connections,
        request_timeout: s.request_timeout,
        idle_timeout: s.idle_timeout,
        max_inflight_bytes: s.max_inflight_bytes,
        reply_timeout: s.reply_timeout,
        max_decoded: s.max_frame.saturating_mul(4),
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

/// What runs until the server stops: the OTLP exporter, when one is set.
struct Telemetry {
    #[cfg(feature = "otlp")]
    exporter: Option<otlp::Exporter>,
}

impl Telemetry {
    fn shutdown(self) {
        #[cfg(feature = "otlp")]
        if let Some(exporter) = self.exporter {
            exporter.shutdown();
        }
    }
}

/// Logs to stderr, filtered by RUST_LOG (default: info); with `keel.otlp.endpoint` set, spans
/// also go to that collector (INFO and above: a call, and the region operations under it).
fn init_telemetry(settings: Option<&Settings>) -> Result<Telemetry, String> {
    use tracing_subscriber::Layer as _;
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    let logs = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        );
    let endpoint = settings.and_then(|s| s.otlp_endpoint.clone());
    #[cfg(feature = "otlp")]
    if let (Some(endpoint), Some(s)) = (&endpoint, settings) {
        let (export, exporter) = otlp::layer(endpoint, s.otlp_sampling_ratio)?;
        tracing_subscriber::registry()
            .with(logs)
            .with(export.with_filter(tracing_subscriber::filter::LevelFilter::INFO))
            .init();
        tracing::info!("exporting spans over OTLP to {endpoint}");
        return Ok(Telemetry {
            exporter: Some(exporter),
        });
    }
    #[cfg(not(feature = "otlp"))]
    if let Some(endpoint) = endpoint {
        return Err(format!(
            "keel.otlp.endpoint is {endpoint}, but this keel was built without the otlp \
             feature (cargo build -p keel-server --features otlp)"
        ));
    }
    tracing_subscriber::registry().with(logs).init();
    Ok(Telemetry {
        #[cfg(feature = "otlp")]
        exporter: None,
    })
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Serve(args) => settings(args).and_then(|s| {
            let telemetry = init_telemetry(Some(&s))?;
            let served = serve(&s);
            telemetry.shutdown();
            served
        }),
        Command::Admin { status, operation } => {
            init_telemetry(None).and_then(|_| admin(*status, operation))
        }
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("keel: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
