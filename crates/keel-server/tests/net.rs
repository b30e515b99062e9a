//! The server over TCP with keel-thrift's client: every transport and protocol, many
//! connections at once, unknown methods, malformed and oversized requests, pipelined requests.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;

use bytes::Bytes;
use keel_region::{Engine, EngineOptions};
use keel_server::{Handler, HandlerOptions, NetOptions, ThriftServer};
use keel_thrift::hbase::{BatchMutation, Call, Mutation, Reply, TScan};
use keel_thrift::transport::{Protocol, Transport};
use keel_thrift::{Client, ClientError};

mod common;
use common::{b, create_table, serve};

fn start(dir: &std::path::Path, max_frame: usize) -> ThriftServer {
    serve(
        dir,
        NetOptions {
            max_frame,
            ..NetOptions::default()
        },
    )
}

#[test]
fn every_transport_and_protocol_many_connections_at_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = start(dir.path(), 16 << 20);
    let address = server.local_addr();
    let mut admin =
        Client::connect(address, Transport::Buffered, Protocol::Binary).expect("connect");
    create_table(&mut admin, "t");
    std::thread::scope(|s| {
        for (i, (transport, protocol)) in [
            (Transport::Buffered, Protocol::Binary),
            (Transport::Buffered, Protocol::Compact),
            (Transport::Framed, Protocol::Binary),
            (Transport::Framed, Protocol::Compact),
        ]
        .into_iter()
        .cycle()
        .take(16)
        .enumerate()
        {
            s.spawn(move || {
                let mut c = Client::connect(address, transport, protocol).expect("connect");
                for n in 0..20 {
                    let row = b(&format!("c{i:02}-{n:03}"));
                    c.call(&Call::MutateRows {
                        table: b("t"),
                        batches: vec![BatchMutation {
                            row: row.clone(),
                            mutations: vec![Mutation {
                                column: b("cf:v"),
                                value: Some(Bytes::from(vec![b'x'; 2000])),
                                ..Mutation::default()
                            }],
                        }],
                        timestamp: None,
                    })
                    .expect("put");
                    match c
                        .call(&Call::GetRows {
                            table: b("t"),
                            rows: vec![row],
                            columns: None,
                            timestamp: None,
                        })
                        .expect("get")
                    {
                        Reply::Rows(rows) => assert_eq!(rows.len(), 1),
                        other => panic!("{other:?}"),
                    }
                }
                // A scanner over this connection's rows.
                let id = match c
                    .call(&Call::ScannerOpen {
                        table: b("t"),
                        scan: TScan {
                            start_row: Some(b(&format!("c{i:02}-"))),
                            stop_row: Some(b(&format!("c{i:02}."))),
                            ..TScan::default()
                        },
                    })
                    .expect("open")
                {
                    Reply::I32(id) => id,
                    other => panic!("{other:?}"),
                };
                match c.call(&Call::ScannerGet { id, rows: 100 }).expect("scan") {
                    Reply::Rows(rows) => assert_eq!(rows.len(), 20),
                    other => panic!("{other:?}"),
                }
                c.call(&Call::ScannerClose { id }).expect("close");
            });
        }
    });
    // A fresh connection sees the table.
    let mut c = Client::connect(address, Transport::Framed, Protocol::Compact).expect("connect");
    match c.call(&Call::GetTableNames).expect("names") {
        Reply::Names(names) => assert_eq!(names, vec![b("t")]),
        other => panic!("{other:?}"),
    }
    let stats = server.stats();
    assert!(stats.requests.load(std::sync::atomic::Ordering::Relaxed) >= 16 * 43);
    server.shutdown();
}

fn framed_binary_call(name: &str) -> Vec<u8> {
    use keel_thrift::{BinaryEncoder, Encoder, MessageHeader, MessageType};
    let mut e = BinaryEncoder::new();
    e.write_message_begin(&MessageHeader {
        name: name.into(),
        kind: MessageType::Call,
        seqid: 0,
    });
    e.write_struct_begin();
    e.write_struct_end();
    let body = e.take();
    [(body.len() as u32).to_be_bytes().to_vec(), body].concat()
}

#[test]
fn unknown_methods_malformed_and_oversized_requests() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = start(dir.path(), 4096);
    let address = server.local_addr();
    // Unknown method: a TApplicationException, then the connection still serves.
    let mut socket = TcpStream::connect(address).expect("connect");
    socket
        .write_all(&framed_binary_call("getNoSuchThing"))
        .expect("write");
    let mut prefix = [0u8; 4];
    socket.read_exact(&mut prefix).expect("reply");
    let mut body = vec![0u8; u32::from_be_bytes(prefix) as usize];
    socket.read_exact(&mut body).expect("reply");
    assert_eq!(
        &body[..4],
        &[0x80, 0x01, 0x00, 0x03],
        "an EXCEPTION message"
    );
    socket
        .write_all(&framed_binary_call("getTableNames"))
        .expect("write");
    socket.read_exact(&mut prefix).expect("second reply");
    // A frame over the limit: an error reply, then the connection is closed.
    let mut socket = TcpStream::connect(address).expect("connect");
    socket.write_all(&100_000u32.to_be_bytes()).expect("write");
    socket.write_all(&[0x80]).expect("write");
    let mut rest = Vec::new();
    socket
        .read_to_end(&mut rest)
        .expect("closed after the reply");
    assert!(rest.len() > 4, "an error reply came first");
    // Garbage: closed, and the server keeps serving others.
    let mut socket = TcpStream::connect(address).expect("connect");
    socket.write_all(b"GET / HTTP/1.1\r\n\r\n").expect("write");
    let mut rest = Vec::new();
    let _ = socket.read_to_end(&mut rest);
    assert!(rest.is_empty());
    let mut c = Client::connect(address, Transport::Buffered, Protocol::Binary).expect("connect");
    assert!(matches!(c.call(&Call::GetTableNames), Ok(Reply::Names(_))));
    // A client that disconnects mid-request does not disturb the server.
    let mut socket = TcpStream::connect(address).expect("connect");
    socket
        .write_all(&framed_binary_call("getTableNames")[..7])
        .expect("write");
    drop(socket);
    assert!(matches!(c.call(&Call::GetTableNames), Ok(Reply::Names(_))));
    let err = c
        .call(&Call::DeleteTable {
            table: b("missing"),
        })
        .expect_err("no table");
    assert!(matches!(err, ClientError::Hbase(_)), "{err}");
    assert!(
        server
            .stats()
            .malformed
            .load(std::sync::atomic::Ordering::Relaxed)
            >= 2
    );
    server.shutdown();
}

#[test]
fn a_dropped_connection_frees_its_scanners() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Arc::new(Engine::open(dir.path(), EngineOptions::default()).expect("open"));
    let handler = Arc::new(Handler::new(store, HandlerOptions::default()));
    let options = NetOptions {
        listen: "127.0.0.1:0".parse().expect("address"),
        ..NetOptions::default()
    };
    let server = ThriftServer::start(Arc::clone(&handler), options).expect("start");
    let mut c = Client::connect(server.local_addr(), Transport::Buffered, Protocol::Binary)
        .expect("connect");
    create_table(&mut c, "t");
    for _ in 0..3 {
        c.call(&Call::ScannerOpen {
            table: b("t"),
            scan: TScan::default(),
        })
        .expect("open");
    }
    assert_eq!(handler.open_scanners(), 3);
    drop(c);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while handler.open_scanners() > 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the scanners outlived their connection"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    server.shutdown();
}

/// A client that pipelines (several requests written before reading) gets its replies in
/// request order, though the calls go to different pools and the first is the slowest.
#[test]
fn pipelined_requests_are_answered_in_order() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = start(dir.path(), 16 << 20);
    let address = server.local_addr();
    let mut c = Client::connect(address, Transport::Framed, Protocol::Binary).expect("connect");
    let rows = create_and_load(&mut c, 3000, 100);
    let calls = [
        Call::GetRows {
            table: b("t"),
            rows,
            columns: None,
            timestamp: None,
        },
        Call::GetTableNames,
        Call::IsTableEnabled { table: b("t") },
        Call::GetTableNames,
    ];
    let mut socket = TcpStream::connect(address).expect("connect");
    let mut requests = Vec::new();
    for (seqid, call) in calls.iter().enumerate() {
        let mut e = keel_thrift::BinaryEncoder::new();
        call.encode(&mut e, seqid as i32 + 1);
        let body = keel_thrift::Encoder::take(&mut e);
        requests.extend_from_slice(&(body.len() as u32).to_be_bytes());
        requests.extend_from_slice(&body);
    }
    socket.write_all(&requests).expect("all requests at once");
    for expected in 1..=calls.len() as i32 {
        let mut prefix = [0u8; 4];
        socket.read_exact(&mut prefix).expect("a reply");
        let mut body = vec![0u8; u32::from_be_bytes(prefix) as usize];
        socket.read_exact(&mut body).expect("a reply");
        let mut d =
            keel_thrift::BinaryDecoder::new(Bytes::from(body), keel_thrift::Limits::default());
        let (header, outcome) = keel_thrift::hbase::decode_reply(&mut d).expect("a reply");
        assert_eq!(header.seqid, expected, "replies in request order");
        assert!(matches!(outcome, Ok(Ok(_))), "{outcome:?}");
    }
    server.shutdown();
}

/// A client that disconnects while its call is still running: the call finishes, its reply
/// goes nowhere, and the scanner it opened is closed with the connection (the reader waits for
/// the call in flight before closing the connection's scanners).
#[test]
fn a_client_gone_mid_call_leaves_no_scanner_behind() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Arc::new(Engine::open(dir.path(), EngineOptions::default()).expect("open"));
    let handler = Arc::new(Handler::new(store, HandlerOptions::default()));
    // One handler, kept busy by slow reads, so the scanner opens queue behind them and each
    // client is gone before its call runs.
    let options = NetOptions {
        listen: "127.0.0.1:0".parse().expect("address"),
        rpc: keel_rpc::RpcOptions {
            handler_count: 1,
            ..keel_rpc::RpcOptions::default()
        },
        ..NetOptions::default()
    };
    let server = ThriftServer::start(Arc::clone(&handler), options).expect("start");
    let address = server.local_addr();
    let mut c = Client::connect(address, Transport::Framed, Protocol::Binary).expect("connect");
    let rows = create_and_load(&mut c, 3000, 1);
    let busy = std::sync::atomic::AtomicBool::new(true);
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut reader =
                Client::connect(address, Transport::Framed, Protocol::Binary).expect("connect");
            while busy.load(std::sync::atomic::Ordering::Relaxed) {
                reader
                    .call(&Call::GetRows {
                        table: b("t"),
                        rows: rows.clone(),
                        columns: None,
                        timestamp: None,
                    })
                    .expect("a slow read");
            }
        });
        std::thread::sleep(std::time::Duration::from_millis(50));
        drop_clients_mid_call(address);
        busy.store(false, std::sync::atomic::Ordering::Relaxed);
    });
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while handler.open_scanners() > 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "{} scanners outlived their connections",
            handler.open_scanners()
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(matches!(c.call(&Call::GetTableNames), Ok(Reply::Names(_))));
    server.shutdown();
}

/// 50 clients that each send a scanner open and hang up at once.
fn drop_clients_mid_call(address: std::net::SocketAddr) {
    for _ in 0..50 {
        let mut e = keel_thrift::BinaryEncoder::new();
        Call::ScannerOpen {
            table: b("t"),
            scan: TScan::default(),
        }
        .encode(&mut e, 1);
        let body = keel_thrift::Encoder::take(&mut e);
        let mut socket = TcpStream::connect(address).expect("connect");
        socket
            .write_all(&(body.len() as u32).to_be_bytes())
            .expect("write");
        socket.write_all(&body).expect("write");
        drop(socket);
    }
}

/// Creates table `t` (family `cf`) and writes `rows` rows of one `value_len`-byte value each in
/// one call; returns the row keys.
fn create_and_load(c: &mut Client, rows: usize, value_len: usize) -> Vec<Bytes> {
    create_table(c, "t");
    let keys: Vec<Bytes> = (0..rows).map(|i| b(&format!("r{i:05}"))).collect();
    c.call(&Call::MutateRows {
        table: b("t"),
        batches: keys
            .iter()
            .map(|row| BatchMutation {
                row: row.clone(),
                mutations: vec![Mutation {
                    column: b("cf:v"),
                    value: Some(Bytes::from(vec![b'v'; value_len])),
                    ..Mutation::default()
                }],
            })
            .collect(),
        timestamp: None,
    })
    .expect("load");
    keys
}
