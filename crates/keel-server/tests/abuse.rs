//! Bad clients and too much load: a client trickling a request byte by byte and an idle one are
//! closed while others are served; a frame holding a truncated message or arguments of the
//! wrong types gets an error or a close; more calls than the queues hold are refused with
//! `CallQueueTooBigException` (retryable) and memory stays bounded.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use bytes::Bytes;
use keel_rpc::RpcOptions;
use keel_server::NetOptions;
use keel_thrift::hbase::{
    BatchMutation, Call, ColumnDescriptor, HbaseError, Mutation, Reply, decode_reply,
};
use keel_thrift::transport::{Protocol, Transport};
use keel_thrift::{BinaryDecoder, BinaryEncoder, Client, ClientError, Encoder, Limits, TType};

mod common;
use common::{b, serve as start};

fn create_table(c: &mut Client) {
    c.call(&Call::CreateTable {
        table: b("t"),
        families: vec![ColumnDescriptor {
            name: b("cf:"),
            ..ColumnDescriptor::default()
        }],
    })
    .expect("create");
}

/// Reads until the server closes the socket (or `limit` passes); returns what came and when.
fn read_until_closed(socket: &mut TcpStream, limit: Duration) -> (Vec<u8>, Duration) {
    let began = Instant::now();
    socket.set_read_timeout(Some(limit)).expect("read timeout");
    let mut all = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match socket.read(&mut buf) {
            Ok(0) | Err(_) => return (all, began.elapsed()),
            Ok(n) => all.extend_from_slice(&buf[..n]),
        }
    }
}

#[test]
fn a_trickling_client_and_an_idle_one_are_closed_while_others_are_served() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = start(
        dir.path(),
        NetOptions {
            request_timeout: Duration::from_millis(600),
            idle_timeout: Duration::from_millis(1500),
            ..NetOptions::default()
        },
    );
    let address = server.local_addr();
    let mut good = Client::connect(address, Transport::Framed, Protocol::Binary).expect("connect");
    create_table(&mut good);
    // One byte every 100 ms of a framed request that never completes in time.
    let trickler = std::thread::spawn(move || {
        let mut socket = TcpStream::connect(address).expect("connect");
        let mut request = 64u32.to_be_bytes().to_vec();
        request.extend_from_slice(&[0x80, 0x01, 0x00, 0x01]);
        let began = Instant::now();
        for byte in request {
            if socket.write_all(&[byte]).is_err() {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        read_until_closed(&mut socket, Duration::from_secs(10));
        began.elapsed()
    });
    let idle = std::thread::spawn(move || {
        let mut socket = TcpStream::connect(address).expect("connect");
        read_until_closed(&mut socket, Duration::from_secs(10)).1
    });
    // Meanwhile the well-behaved client is served throughout.
    let until = Instant::now() + Duration::from_millis(1200);
    let mut served = 0;
    while Instant::now() < until {
        assert!(matches!(
            good.call(&Call::GetTableNames),
            Ok(Reply::Names(_))
        ));
        served += 1;
    }
    assert!(served > 10);
    let trickled = trickler.join().expect("trickler");
    assert!(
        trickled < Duration::from_secs(5),
        "the trickling client was closed ({trickled:?})"
    );
    let idled = idle.join().expect("idle");
    assert!(
        idled >= Duration::from_millis(1400) && idled < Duration::from_secs(8),
        "the idle client was closed after the idle timeout ({idled:?})"
    );
    assert_eq!(server.stats().slow_requests.load(Ordering::Relaxed), 1);
    assert!(server.stats().idle_closed.load(Ordering::Relaxed) >= 1);
    server.shutdown();
}

#[test]
fn truncated_messages_and_wrong_field_types() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = start(dir.path(), NetOptions::default());
    let address = server.local_addr();
    let mut good = Client::connect(address, Transport::Framed, Protocol::Binary).expect("connect");
    create_table(&mut good);
    // A whole frame whose message stops mid-argument: malformed, the connection is closed.
    let mut e = BinaryEncoder::new();
    Call::GetTableRegions { table: b("t") }.encode(&mut e, 1);
    let message = e.take();
    let cut = &message[..message.len() - 3];
    let mut socket = TcpStream::connect(address).expect("connect");
    socket
        .write_all(&(cut.len() as u32).to_be_bytes())
        .expect("write");
    socket.write_all(cut).expect("write");
    let (reply, _) = read_until_closed(&mut socket, Duration::from_secs(10));
    assert!(reply.is_empty(), "closed without a reply");
    // mutateRows whose table is an i32 and whose mutation list holds strings: the wrong-typed
    // fields are skipped as Thrift does, so the call names no table → an IOError, and the
    // connection stays usable.
    let mut e = BinaryEncoder::new();
    e.write_message_begin(&keel_thrift::MessageHeader {
        name: "mutateRows".into(),
        kind: keel_thrift::MessageType::Call,
        seqid: 9,
    });
    e.write_struct_begin();
    e.write_field_begin(TType::I32, 1);
    e.write_i32(42);
    e.write_field_begin(TType::List, 2);
    e.write_list_begin(TType::Binary, 1);
    e.write_binary(b"not a BatchMutation");
    e.write_struct_end();
    let message = e.take();
    let mut socket = TcpStream::connect(address).expect("connect");
    for _ in 0..2 {
        socket
            .write_all(&(message.len() as u32).to_be_bytes())
            .expect("write");
        socket.write_all(&message).expect("write");
        let mut prefix = [0u8; 4];
        socket.read_exact(&mut prefix).expect("a reply");
        let mut body = vec![0u8; u32::from_be_bytes(prefix) as usize];
        socket.read_exact(&mut body).expect("a reply");
        let mut d = BinaryDecoder::new(Bytes::from(body), Limits::default());
        let (header, outcome) = decode_reply(&mut d).expect("a well-formed reply");
        assert_eq!(header.seqid, 9);
        assert!(
            matches!(outcome, Ok(Err(HbaseError::Io { .. }))),
            "{outcome:?}"
        );
    }
    assert!(matches!(
        good.call(&Call::GetTableNames),
        Ok(Reply::Names(_))
    ));
    server.shutdown();
}

#[test]
fn more_calls_than_the_queues_hold_are_refused_and_memory_stays_bounded() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = start(
        dir.path(),
        NetOptions {
            rpc: RpcOptions {
                handler_count: 1,
                max_queue_length: Some(2),
                ..RpcOptions::default()
            },
            ..NetOptions::default()
        },
    );
    let address = server.local_addr();
    let mut admin = Client::connect(address, Transport::Framed, Protocol::Binary).expect("connect");
    create_table(&mut admin);
    let rows: Vec<Bytes> = (0..2000).map(|i| b(&format!("r{i:05}"))).collect();
    for chunk in rows.chunks(500) {
        admin
            .call(&Call::MutateRows {
                table: b("t"),
                batches: chunk
                    .iter()
                    .map(|row| BatchMutation {
                        row: row.clone(),
                        mutations: vec![Mutation {
                            column: b("cf:v"),
                            value: Some(Bytes::from(vec![b'v'; 200])),
                            ..Mutation::default()
                        }],
                    })
                    .collect(),
                timestamp: None,
            })
            .expect("load");
    }
    // 24 connections, each with one slow read in flight, against one handler and a queue of 2.
    let (answered, refused) = std::thread::scope(|s| {
        let handles: Vec<_> = (0..24)
            .map(|_| {
                let rows = rows.clone();
                s.spawn(move || {
                    let mut c = Client::connect(address, Transport::Framed, Protocol::Binary)
                        .expect("connect");
                    let (mut answered, mut refused) = (0, 0);
                    for _ in 0..6 {
                        match c.call(&Call::GetRows {
                            table: b("t"),
                            rows: rows.clone(),
                            columns: None,
                            timestamp: None,
                        }) {
                            Ok(Reply::Rows(found)) => {
                                assert_eq!(found.len(), rows.len(), "a full answer");
                                answered += 1;
                            }
                            Err(ClientError::Hbase(HbaseError::Io { message, can_retry })) => {
                                assert!(message.contains("CallQueueTooBigException"), "{message}");
                                assert!(can_retry, "a refusal may be retried");
                                refused += 1;
                            }
                            other => panic!("{other:?}"),
                        }
                    }
                    // The connection is still usable after its refusals.
                    assert!(matches!(c.call(&Call::GetTableNames), Ok(Reply::Names(_))));
                    (answered, refused)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("client"))
            .fold((0, 0), |(a, r), (x, y)| (a + x, r + y))
    });
    assert_eq!(answered + refused, 24 * 6);
    assert!(refused > 0, "the queues overflowed");
    assert!(answered > 0, "and still served");
    assert_eq!(
        server.stats().rejected.load(Ordering::Relaxed),
        refused as u64
    );
    // Bounded memory: no call bytes left queued (a handler releases a call's bytes just after
    // its reply is sent), and the request pool never grew past its cap.
    let deadline = Instant::now() + Duration::from_secs(10);
    while server.executor().metrics().queued_bytes != 0 {
        assert!(Instant::now() < deadline, "call bytes stayed queued");
        std::thread::sleep(Duration::from_millis(5));
    }
    let pool = server.pool_stats();
    assert!(pool.live_buffers <= keel_bufpool::PoolOptions::default().max_buffers);
    server.shutdown();
}
