//! `keel serve` stops gracefully on SIGTERM: calls in flight are answered, memstores are
//! flushed — so even writes acknowledged without the WAL (`writeToWAL=false`) survive a
//! restart — and the process exits 0. It also reads its settings from a `keel.toml`.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use bytes::Bytes;
use keel_thrift::Client;
use keel_thrift::hbase::{BatchMutation, Call, ColumnDescriptor, Mutation, Reply};
use keel_thrift::transport::{Protocol, Transport};

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("address").port()
}

/// The server process, killed if the test ends early (a failed assertion leaves nothing
/// running).
struct Running(std::process::Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start(config: &std::path::Path) -> Running {
    Running(
        Command::new(env!("CARGO_BIN_EXE_keel"))
            .args(["serve", "--config"])
            .arg(config)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("keel serve starts"),
    )
}

fn connect(port: u16) -> Client {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(c) = Client::connect(("127.0.0.1", port), Transport::Framed, Protocol::Binary) {
            return c;
        }
        assert!(Instant::now() < deadline, "keel serve never listened");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn sigterm_finishes_flushes_and_a_restart_finds_every_write() {
    let dir = tempfile::tempdir().expect("tempdir");
    let port = free_port();
    let config = dir.path().join("keel.toml");
    std::fs::write(
        &config,
        format!(
            "\"keel.data.dir\" = \"{}\"\n\"hbase.regionserver.thrift.port\" = {port}\n\"hbase.regionserver.handler.count\" = 4\n",
            dir.path().join("data").display()
        ),
    )
    .expect("config");
    let mut server = start(&config);
    let mut c = connect(port);
    c.call(&Call::CreateTable {
        table: b("t"),
        families: vec![ColumnDescriptor {
            name: b("cf:"),
            ..ColumnDescriptor::default()
        }],
    })
    .expect("create");
    for i in 0..100 {
        c.call(&Call::MutateRows {
            table: b("t"),
            batches: vec![BatchMutation {
                row: b(&format!("r{i:03}")),
                mutations: vec![Mutation {
                    column: b("cf:v"),
                    value: Some(b("v")),
                    write_to_wal: false,
                    ..Mutation::default()
                }],
            }],
            timestamp: None,
        })
        .expect("put without the WAL");
    }
    let status = Command::new("kill")
        .args(["-TERM", &server.0.id().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    let deadline = Instant::now() + Duration::from_secs(30);
    let exit = loop {
        if let Some(exit) = server.0.try_wait().expect("wait") {
            break exit;
        }
        assert!(Instant::now() < deadline, "keel serve did not stop");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(exit.success(), "exit {exit:?}");
    // The restart finds every write, though none was logged.
    let _server = start(&config);
    let mut c = connect(port);
    let rows: Vec<Bytes> = (0..100).map(|i| b(&format!("r{i:03}"))).collect();
    match c
        .call(&Call::GetRows {
            table: b("t"),
            rows,
            columns: None,
            timestamp: None,
        })
        .expect("get")
    {
        Reply::Rows(found) => assert_eq!(found.len(), 100),
        other => panic!("{other:?}"),
    }
}
