//! The tests' shared helpers: the handler fixture (a store with table `t`: families `cf`, 3
//! versions, and `cf2`, 1 version, behind a [`Handler`]) with helpers to write and read it, and
//! [`serve`], a server over TCP on a fresh store, and [`start`], `keel serve` as a child process.

#![allow(dead_code, reason = "each test file uses some of these")]

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use keel_region::{Engine, EngineOptions};
use keel_server::{Handler, HandlerOptions, NetOptions, ThriftServer};
use keel_thrift::Client;
use keel_thrift::hbase::{
    BatchMutation, Call, ColumnDescriptor, HbaseError, Mutation, Reply, TRowResult,
};
use keel_thrift::transport::{Protocol, Transport};

// A `keel serve` child process, for tests that kill it or read its settings from a file.

pub(crate) fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("address").port()
}

/// The server process, killed if the test ends early (a failed assertion leaves nothing
/// running).
pub(crate) struct Running(pub(crate) std::process::Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub(crate) fn start(config: &std::path::Path) -> Running {
    Running(
        Command::new(env!("CARGO_BIN_EXE_keel"))
            // Tests run side by side: no fixed status port.
            .args(["serve", "--status-listen", "127.0.0.1:0", "--config"])
            .arg(config)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("keel serve starts"),
    )
}

pub(crate) fn connect(port: u16) -> Client {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(c) = Client::connect(("127.0.0.1", port), Transport::Framed, Protocol::Binary) {
            return c;
        }
        assert!(Instant::now() < deadline, "keel serve never listened");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Creates `table` with one family, `cf`, at its defaults, through `client`.
pub(crate) fn create_table(client: &mut Client, table: &str) {
    client
        .call(&Call::CreateTable {
            table: b(table),
            families: vec![ColumnDescriptor {
                name: b("cf:"),
                ..ColumnDescriptor::default()
            }],
        })
        .expect("create");
}

/// A `keel.toml` in `dir` with its data under `dir/data`, a free port, and `extra` lines;
/// returns the port and the file.
pub(crate) fn write_config(dir: &std::path::Path, extra: &str) -> (u16, std::path::PathBuf) {
    let port = free_port();
    let config = dir.join("keel.toml");
    std::fs::write(
        &config,
        format!(
            "\"keel.data.dir\" = \"{}\"\n\"hbase.regionserver.thrift.port\" = {port}\n{extra}",
            dir.join("data").display()
        ),
    )
    .expect("config");
    (port, config)
}

/// A server on a fresh store in `dir`, on an ephemeral loopback port, with `options` otherwise.
pub(crate) fn serve(dir: &std::path::Path, options: NetOptions) -> ThriftServer {
    let store = Arc::new(Engine::open(dir, EngineOptions::default()).expect("open"));
    let handler = Arc::new(Handler::new(store, HandlerOptions::default()));
    ThriftServer::start(
        handler,
        NetOptions {
            listen: "127.0.0.1:0".parse().expect("address"),
            ..options
        },
    )
    .expect("start")
}

pub(crate) fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

pub(crate) fn put(column: &str, value: &str) -> Mutation {
    Mutation {
        is_delete: false,
        column: b(column),
        value: Some(b(value)),
        write_to_wal: true,
    }
}

pub(crate) fn delete(column: &str) -> Mutation {
    Mutation {
        is_delete: true,
        column: b(column),
        value: None,
        write_to_wal: true,
    }
}

pub(crate) struct Fixture {
    pub(crate) _dir: tempfile::TempDir,
    pub(crate) handler: Handler,
}

pub(crate) fn fixture(options: HandlerOptions) -> Fixture {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Arc::new(Engine::open(dir.path(), EngineOptions::default()).expect("open"));
    let handler = Handler::new(server, options);
    handler
        .handle(Call::CreateTable {
            table: b("t"),
            families: vec![
                ColumnDescriptor {
                    name: b("cf:"),
                    max_versions: 3,
                    time_to_live: -1,
                    ..ColumnDescriptor::default()
                },
                ColumnDescriptor {
                    name: b("cf2:"),
                    max_versions: 1,
                    ..ColumnDescriptor::default()
                },
            ],
        })
        .expect("create");
    Fixture { _dir: dir, handler }
}

pub(crate) fn mutate(
    h: &Handler,
    row: &str,
    mutations: Vec<Mutation>,
    timestamp: Option<i64>,
) -> Result<Reply, HbaseError> {
    h.handle(Call::MutateRows {
        table: b("t"),
        batches: vec![BatchMutation {
            row: b(row),
            mutations,
        }],
        timestamp,
    })
}

pub(crate) fn columns_of(result: &TRowResult) -> Vec<(String, String)> {
    result
        .columns
        .as_ref()
        .expect("a column map")
        .iter()
        .map(|(k, c)| {
            (
                String::from_utf8_lossy(k).into_owned(),
                String::from_utf8_lossy(&c.value).into_owned(),
            )
        })
        .collect()
}

pub(crate) fn rows(reply: Reply) -> Vec<TRowResult> {
    match reply {
        Reply::Rows(rows) => rows,
        other => panic!("rows expected, got {other:?}"),
    }
}
