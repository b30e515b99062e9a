//! `keel`: Keel's server binary. `keel serve` serves the embedded store over HBase's Thrift1
//! gateway protocol, so happybase and other Thrift1 clients work against it unchanged.

#![expect(
    clippy::print_stderr,
    reason = "the server says where it listens on start"
)]

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use clap::{Parser, Subcommand};
use keel_region::{RegionServer, ServerOptions};
use keel_server::{Handler, HandlerOptions, NetOptions, ThriftServer};

/// Keel's server.
#[derive(Debug, Parser)]
#[command(name = "keel", about, version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serves the store in `--data-dir` over HBase's Thrift1 protocol.
    Serve(Serve),
}

#[derive(Debug, clap::Args)]
struct Serve {
    /// Where to listen (HBase's Thrift port, loopback only unless you choose otherwise).
    #[arg(long, default_value = "127.0.0.1:9090")]
    listen: SocketAddr,
    /// The store's directory (created if needed).
    #[arg(long, default_value = "./keel-data")]
    data_dir: PathBuf,
    /// `hbase.regionserver.handler.count`: handler threads.
    #[arg(long, default_value_t = 30)]
    handler_count: usize,
    /// `hbase.ipc.server.callqueue.read.ratio`: the handlers' share for reads.
    #[arg(long, default_value_t = 0.0)]
    read_ratio: f64,
    /// `hbase.ipc.server.callqueue.scan.ratio`: the read handlers' share for scans.
    #[arg(long, default_value_t = 0.0)]
    scan_ratio: f64,
    /// `hbase.hregion.memstore.flush.size`, bytes.
    #[arg(long, default_value_t = 128 << 20)]
    flush_size: u64,
    /// Largest request frame, bytes.
    #[arg(long, default_value_t = 16 << 20)]
    max_frame: usize,
}

fn serve(args: Serve) -> Result<(), String> {
    let mut store_options = ServerOptions::default();
    store_options.limits.flush_size = args.flush_size;
    let store = Arc::new(
        RegionServer::open(&args.data_dir, store_options)
            .map_err(|e| format!("cannot open {}: {e}", args.data_dir.display()))?,
    );
    let handler = Arc::new(Handler::new(
        store,
        HandlerOptions {
            port: i32::from(args.listen.port()),
            ..HandlerOptions::default()
        },
    ));
    let mut options = NetOptions {
        listen: args.listen,
        max_frame: args.max_frame,
        ..NetOptions::default()
    };
    options.rpc.handler_count = args.handler_count;
    options.rpc.read_ratio = args.read_ratio;
    options.rpc.scan_ratio = args.scan_ratio;
    let server = ThriftServer::start(handler, options)
        .map_err(|e| format!("cannot listen on {}: {e}", args.listen))?;
    eprintln!(
        "keel: serving {} on {} (Thrift1, buffered or framed, binary or compact); {} handlers, max frame {} B",
        args.data_dir.display(),
        server.local_addr(),
        args.handler_count,
        args.max_frame
    );
    loop {
        std::thread::park();
    }
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
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
