//! The buffered (unframed) transport, happybase's default: a request whose end is found as its
//! bytes arrive, read into the request pool like a framed one, held against the in-flight budget
//! while it arrives, and refused cleanly (the connection kept) when it does not fit.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use bytes::Bytes;
use keel_server::NetOptions;
use keel_thrift::hbase::{
    BatchMutation, Call, ColumnDescriptor, HbaseError, Mutation, Reply, decode_reply,
};
use keel_thrift::transport::{Protocol, Transport};
use keel_thrift::{BinaryDecoder, BinaryEncoder, Client, Encoder, Limits, MessageBoundary};

mod common;
use common::{b, serve};

fn buffered(call: &Call, seqid: i32) -> Vec<u8> {
    let mut e = BinaryEncoder::new();
    call.encode(&mut e, seqid);
    e.take()
}

fn put(value_len: usize) -> Call {
    Call::MutateRows {
        table: b("t"),
        batches: vec![BatchMutation {
            row: b("r"),
            mutations: vec![Mutation {
                column: b("cf:v"),
                value: Some(Bytes::from(vec![b'x'; value_len])),
                ..Mutation::default()
            }],
        }],
        timestamp: None,
    }
}

/// Reads one unframed reply (its end found the way the server finds a request's) and decodes it.
fn read_reply(socket: &mut TcpStream) -> (i32, Result<Reply, HbaseError>) {
    let mut boundary = MessageBoundary::new(Protocol::Binary, Limits::default());
    let mut reply = Vec::new();
    let mut byte = [0u8; 1];
    loop {
        socket.read_exact(&mut byte).expect("a reply byte");
        reply.push(byte[0]);
        if boundary.feed(&byte).expect("a well-formed reply").is_some() {
            break;
        }
    }
    let mut d = BinaryDecoder::new(Bytes::from(reply), Limits::default());
    let (header, result) = decode_reply(&mut d).expect("decodes");
    (header.seqid, result.expect("not an application exception"))
}

fn create_table(address: std::net::SocketAddr) {
    let mut c = Client::connect(address, Transport::Buffered, Protocol::Binary).expect("connect");
    c.call(&Call::CreateTable {
        table: b("t"),
        families: vec![ColumnDescriptor {
            name: b("cf:"),
            ..ColumnDescriptor::default()
        }],
    })
    .expect("create");
}

#[test]
fn a_request_sent_in_pieces_is_read_into_the_pool_and_the_next_one_follows() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = serve(dir.path(), NetOptions::default());
    let address = server.local_addr();
    create_table(address);
    let before = server.pool_stats();
    let mut socket = TcpStream::connect(address).expect("connect");
    socket.set_nodelay(true).expect("nodelay");
    let mut stream = buffered(&put(2 << 20), 1);
    let get = buffered(
        &Call::GetRows {
            table: b("t"),
            rows: vec![b("r")],
            columns: None,
            timestamp: None,
        },
        2,
    );
    // The last piece ends the put and carries the whole get: two requests in one read.
    stream.extend_from_slice(&get);
    for (i, piece) in stream.chunks(8 << 10).enumerate() {
        socket.write_all(piece).expect("piece");
        if i % 32 == 0 {
            std::thread::sleep(Duration::from_millis(2));
        }
    }
    assert!(matches!(read_reply(&mut socket), (1, Ok(Reply::Void))));
    let (seqid, rows) = read_reply(&mut socket);
    let Ok(Reply::Rows(rows)) = rows else {
        panic!("{rows:?}")
    };
    assert_eq!(seqid, 2);
    let value = &rows[0].columns.as_ref().expect("columns")[0].1.value;
    assert_eq!(value.len(), 2 << 20);
    // The put (2 MiB, more than one 65 KiB buffer) was read into a chain of pooled buffers.
    let after = server.pool_stats();
    assert!(
        after.pooled_allocations - before.pooled_allocations >= 30,
        "{before:?} → {after:?}"
    );
    server.shutdown();
}

#[test]
fn a_request_past_the_budget_is_refused_and_the_connection_stays() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = serve(
        dir.path(),
        NetOptions {
            // Half of it for requests: 4 MiB.
            max_inflight_bytes: 8 << 20,
            ..NetOptions::default()
        },
    );
    let address = server.local_addr();
    create_table(address);
    let mut socket = TcpStream::connect(address).expect("connect");
    socket.write_all(&buffered(&put(6 << 20), 5)).expect("put");
    match read_reply(&mut socket) {
        (5, Err(HbaseError::Io { message, can_retry })) => {
            assert!(message.contains("CallQueueTooBigException"), "{message}");
            assert!(can_retry);
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    // The same connection goes on, and a request that fits is served.
    socket.write_all(&buffered(&put(1 << 20), 6)).expect("put");
    socket
        .write_all(&buffered(&Call::GetTableNames, 7))
        .expect("names");
    assert!(matches!(read_reply(&mut socket), (6, Ok(Reply::Void))));
    assert!(matches!(read_reply(&mut socket), (7, Ok(Reply::Names(_)))));
    assert!(server.stats().refused_busy.load(Ordering::Relaxed) >= 1);
    let deadline = Instant::now() + Duration::from_secs(5);
    while server.observer().inflight_bytes().0 > 0 {
        assert!(Instant::now() < deadline, "the budget is given back");
        std::thread::sleep(Duration::from_millis(10));
    }
    server.shutdown();
}

/// Many half-sent unframed requests: what has arrived is held against the budget as it arrives,
/// so together they never pass it; once their senders time out a well-behaved client is served.
#[test]
fn half_sent_requests_are_held_within_the_budget() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = serve(
        dir.path(),
        NetOptions {
            max_inflight_bytes: 8 << 20,
            request_timeout: Duration::from_millis(1500),
            ..NetOptions::default()
        },
    );
    let address = server.local_addr();
    let observer = server.observer();
    let request = buffered(&put(4 << 20), 1);
    let half: Vec<TcpStream> = (0..20)
        .map(|_| {
            let mut socket = TcpStream::connect(address).expect("connect");
            let _ = socket.write_all(&request[..2 << 20]);
            socket
        })
        .collect();
    // Held as it arrives (how soon depends on the machine's load), and never past the budget.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let (used, max) = observer.inflight_bytes();
        assert!(used <= max, "{used} > {max}");
        if used >= 1 << 20 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "requests are being received ({used})"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while observer.inflight_bytes().0 > 0 {
        assert!(Instant::now() < deadline, "{:?}", observer.inflight_bytes());
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut good = Client::connect(address, Transport::Buffered, Protocol::Binary).expect("c");
    assert!(matches!(
        good.call(&Call::GetTableNames),
        Ok(Reply::Names(_))
    ));
    drop(half);
    server.shutdown();
}
