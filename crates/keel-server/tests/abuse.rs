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

/// A framed request for `call`, as a client would send it.
fn framed(call: &Call, seqid: i32) -> Vec<u8> {
    let mut e = BinaryEncoder::new();
    call.encode(&mut e, seqid);
    let body = e.take();
    let mut frame = (body.len() as u32).to_be_bytes().to_vec();
    frame.extend_from_slice(&body);
    frame
}

/// Reads one framed reply.
fn read_reply(socket: &mut TcpStream) -> Vec<u8> {
    let mut len = [0u8; 4];
    socket.read_exact(&mut len).expect("reply length");
    let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
    socket.read_exact(&mut body).expect("reply body");
    body
}

fn big_row(c: &mut Client, mib: usize) {
    create_table(c);
    c.call(&Call::MutateRows {
        table: b("t"),
        batches: vec![BatchMutation {
            row: b("big"),
            // Columns of 4 MiB: a cell may hold at most 10 MiB.
            mutations: (0..mib / 4)
                .map(|i| Mutation {
                    column: b(&format!("cf:v{i}")),
                    value: Some(Bytes::from(vec![b'x'; 4 << 20])),
                    ..Mutation::default()
                })
                .collect(),
        }],
        timestamp: None,
    })
    .expect("big row");
}

/// Forty clients ask for a 12 MiB row (more than loopback's socket buffers hold) and never read
/// the reply. Before, each stalled a handler
/// in `write_all`: with 8 handlers, nobody else was served. Now a handler writes what the
/// socket takes and leaves the rest to the connection's writer, which closes the connection
/// after the reply timeout; the unwritten bytes are held against the in-flight budget meanwhile.
#[test]
fn clients_that_never_read_lose_their_connections_not_the_handlers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = start(
        dir.path(),
        NetOptions {
            rpc: RpcOptions {
                handler_count: 8,
                ..RpcOptions::default()
            },
            reply_timeout: Duration::from_secs(2),
            ..NetOptions::default()
        },
    );
    let address = server.local_addr();
    let mut good = Client::connect(address, Transport::Framed, Protocol::Binary).expect("connect");
    big_row(&mut good, 12);
    let get = framed(
        &Call::GetRows {
            table: b("t"),
            rows: vec![b("big")],
            columns: None,
            timestamp: None,
        },
        1,
    );
    let stuck: Vec<TcpStream> = (0..40)
        .map(|_| {
            let mut socket = TcpStream::connect(address).expect("connect");
            socket.write_all(&get).expect("request");
            socket
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let began = Instant::now();
    let answer = good.call(&Call::GetTableNames);
    assert!(matches!(answer, Ok(Reply::Names(_))), "{answer:?}");
    assert!(
        began.elapsed() < Duration::from_secs(1),
        "a well-behaved client waited {:?}",
        began.elapsed()
    );
    // Each stalled reply was either refused (it did not fit the replies' half of the budget)
    // or, after the reply timeout, its connection closed.
    let deadline = Instant::now() + Duration::from_secs(15);
    let settled = || {
        let stats = server.stats();
        stats.slow_readers.load(Ordering::Relaxed) + stats.refused_busy.load(Ordering::Relaxed)
    };
    while settled() < 40 {
        assert!(Instant::now() < deadline, "{} of 40 settled", settled());
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(server.stats().slow_readers.load(Ordering::Relaxed) > 0);
    let observer = server.observer();
    let deadline = Instant::now() + Duration::from_secs(5);
    while observer.inflight_bytes().0 > 0 {
        assert!(
            Instant::now() < deadline,
            "{:?} still held",
            observer.inflight_bytes()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // And a shutdown does not wait for any of them.
    let began = Instant::now();
    server.shutdown();
    assert!(began.elapsed() < Duration::from_secs(6));
    drop(stuck);
}

/// A frame of empty structs (HBase's `incrementRows` with two million of them: 2 MB on the
/// wire, hundreds of MB decoded) is refused with `CallQueueTooBigException` before it is
/// decoded, and the connection goes on.
#[test]
fn a_frame_of_empty_structs_is_refused_and_the_connection_stays() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = start(dir.path(), NetOptions::default());
    let address = server.local_addr();
    let mut e = BinaryEncoder::new();
    e.write_message_begin(&keel_thrift::MessageHeader {
        name: "incrementRows".into(),
        kind: keel_thrift::MessageType::Call,
        seqid: 7,
    });
    e.write_struct_begin();
    e.write_field_begin(TType::List, 1);
    e.write_list_begin(TType::Struct, 2_000_000);
    for _ in 0..2_000_000 {
        e.write_struct_begin();
        e.write_struct_end();
    }
    e.write_struct_end();
    let body = e.take();
    let mut socket = TcpStream::connect(address).expect("connect");
    socket
        .write_all(&(body.len() as u32).to_be_bytes())
        .expect("length");
    socket.write_all(&body).expect("body");
    let reply = read_reply(&mut socket);
    let mut d = BinaryDecoder::new(Bytes::from(reply), Limits::default());
    match decode_reply(&mut d) {
        Ok((_, Ok(Err(HbaseError::Io { message, can_retry })))) => {
            assert!(message.contains("CallQueueTooBigException"), "{message}");
            assert!(can_retry);
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    socket
        .write_all(&framed(&Call::GetTableNames, 8))
        .expect("next request");
    let reply = read_reply(&mut socket);
    let mut d = BinaryDecoder::new(Bytes::from(reply), Limits::default());
    assert!(decode_reply(&mut d).is_ok(), "the connection still works");
    assert!(server.stats().refused_busy.load(Ordering::Relaxed) >= 1);
}

/// Many half-sent frames: each frame's length is reserved before its body is read, so frames
/// beyond the in-flight budget are read past without being kept and refused; memory stays
/// within the budget, and once the slow senders time out a well-behaved client is served.
#[test]
fn half_sent_frames_are_held_within_the_budget() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = start(
        dir.path(),
        NetOptions {
            max_inflight_bytes: 8 << 20,
            request_timeout: Duration::from_millis(1500),
            ..NetOptions::default()
        },
    );
    let address = server.local_addr();
    let observer = server.observer();
    // 20 connections announce 2 MiB frames and send half of each (a large frame may take three
    // quarters of the 4 MiB request half: one fits).
    let half: Vec<TcpStream> = (0..20)
        .map(|_| {
            let mut socket = TcpStream::connect(address).expect("connect");
            let _ = socket.write_all(&(2u32 << 20).to_be_bytes());
            let mut body = vec![0u8; 1 << 20];
            body[..4].copy_from_slice(&[0x80, 0x01, 0x00, 0x01]);
            let _ = socket.write_all(&body);
            socket
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let (used, max) = observer.inflight_bytes();
    assert!(used <= max, "{used} > {max}");
    assert!(
        used >= 2 << 20,
        "at least one frame is being received ({used})"
    );
    // The slow senders time out; then the budget is free and others are served.
    let deadline = Instant::now() + Duration::from_secs(10);
    while observer.inflight_bytes().0 > 0 {
        assert!(Instant::now() < deadline, "{:?}", observer.inflight_bytes());
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut good = Client::connect(address, Transport::Framed, Protocol::Binary).expect("connect");
    assert!(matches!(
        good.call(&Call::GetTableNames),
        Ok(Reply::Names(_))
    ));
    drop(half);
}

/// The request timeout is per request: a client that pipelines, always with bytes of its next
/// request in flight, is never cut off for it.
#[test]
fn a_pipelining_client_is_not_timed_across_requests() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = start(
        dir.path(),
        NetOptions {
            request_timeout: Duration::from_millis(400),
            ..NetOptions::default()
        },
    );
    let mut socket = TcpStream::connect(server.local_addr()).expect("connect");
    let request = framed(&Call::GetTableNames, 1);
    let began = Instant::now();
    socket.write_all(&request).expect("first");
    let mut answered = 0;
    while began.elapsed() < Duration::from_millis(1500) {
        // The next request goes out before this reply is read.
        socket.write_all(&request).expect("pipelined");
        let _ = read_reply(&mut socket);
        answered += 1;
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = read_reply(&mut socket);
    assert!(answered > 20, "{answered}");
    assert_eq!(server.stats().slow_requests.load(Ordering::Relaxed), 0);
}
