//! Every `Hbase` method the server knows, and every declared error reply, over TCP through
//! keel-thrift's client, in each of the four transport × protocol combinations.

use std::sync::Arc;

use bytes::Bytes;
use keel_region::{Engine, EngineOptions};
use keel_server::{Handler, HandlerOptions, NetOptions, ThriftServer};
use keel_thrift::hbase::{
    BatchMutation, Call, ColumnDescriptor, HbaseError, Mutation, Reply, TAppend, TIncrement, TScan,
};
use keel_thrift::transport::{Protocol, Transport};
use keel_thrift::{Client, ClientError};

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

fn put(row: &str, column: &str, value: &[u8]) -> BatchMutation {
    BatchMutation {
        row: b(row),
        mutations: vec![Mutation {
            column: b(column),
            value: Some(Bytes::copy_from_slice(value)),
            ..Mutation::default()
        }],
    }
}

/// What a call must come back as.
enum Expect {
    Ok(Reply),
    /// A reply of this shape (values checked elsewhere).
    Shape(fn(&Reply) -> bool),
    Io,
    IllegalArgument,
    AlreadyExists,
}

fn calls(t: &Bytes) -> Vec<(Call, Expect)> {
    let table = || t.clone();
    vec![
        (
            Call::CreateTable {
                table: table(),
                families: vec![ColumnDescriptor {
                    name: b("cf:"),
                    ..ColumnDescriptor::default()
                }],
            },
            Expect::Ok(Reply::Void),
        ),
        (
            Call::CreateTable {
                table: table(),
                families: vec![ColumnDescriptor {
                    name: b("cf:"),
                    ..ColumnDescriptor::default()
                }],
            },
            Expect::AlreadyExists,
        ),
        (
            Call::GetTableNames,
            Expect::Shape(|r| matches!(r, Reply::Names(n) if !n.is_empty())),
        ),
        (
            Call::IsTableEnabled { table: table() },
            Expect::Ok(Reply::Bool(true)),
        ),
        (
            Call::GetColumnDescriptors { table: table() },
            Expect::Shape(|r| matches!(r, Reply::Families(f) if f.len() == 1)),
        ),
        (
            Call::GetTableRegions { table: table() },
            Expect::Shape(|r| matches!(r, Reply::Regions(v) if v.len() == 1)),
        ),
        (
            Call::MutateRows {
                table: table(),
                batches: vec![put("a", "cf:q", b"1"), put("b", "cf:q", b"2")],
                timestamp: None,
            },
            Expect::Ok(Reply::Void),
        ),
        (
            Call::MutateRows {
                table: table(),
                batches: vec![put("a", "cf", b"no qualifier")],
                timestamp: None,
            },
            Expect::IllegalArgument,
        ),
        (
            Call::GetRows {
                table: table(),
                rows: vec![b("a"), b("missing"), b("b")],
                columns: Some(vec![b("cf:q")]),
                timestamp: None,
            },
            Expect::Shape(|r| matches!(r, Reply::Rows(rows) if rows.len() == 2)),
        ),
        (
            Call::GetVersions {
                table: table(),
                row: b("a"),
                column: b("cf:q"),
                timestamp: None,
                versions: 3,
            },
            Expect::Shape(|r| matches!(r, Reply::Cells(c) if c.len() == 1 && c[0].value == "1")),
        ),
        (
            Call::AtomicIncrement {
                table: table(),
                row: b("n"),
                column: b("cf:count"),
                amount: 5,
            },
            Expect::Ok(Reply::I64(5)),
        ),
        (
            Call::AtomicIncrement {
                table: table(),
                row: b("a"),
                column: b("cf:q"),
                amount: 1,
            },
            Expect::Io,
        ),
        (
            Call::IncrementRows {
                increments: vec![TIncrement {
                    table: table(),
                    row: b("n"),
                    column: b("cf:count"),
                    amount: 2,
                }],
            },
            Expect::Ok(Reply::Void),
        ),
        (
            Call::Append {
                append: TAppend {
                    table: table(),
                    row: b("a"),
                    columns: vec![b("cf:q")],
                    values: vec![b("+")],
                },
            },
            Expect::Shape(|r| matches!(r, Reply::Cells(c) if c[0].value == "1+")),
        ),
        (
            Call::CheckAndPut {
                table: table(),
                row: b("a"),
                column: b("cf:q"),
                value: Some(b("1+")),
                mutation: Mutation {
                    column: b("cf:q"),
                    value: Some(b("swapped")),
                    ..Mutation::default()
                },
            },
            Expect::Ok(Reply::Bool(true)),
        ),
        (
            Call::GetRowOrBefore {
                table: table(),
                row: b("az"),
                family: b("cf"),
            },
            Expect::Shape(|r| matches!(r, Reply::Cells(c) if c[0].value == "swapped")),
        ),
        (
            Call::GetRegionInfo {
                row: Bytes::from(format!("{},,0", String::from_utf8_lossy(t))),
            },
            Expect::Shape(|r| matches!(r, Reply::Region(_))),
        ),
        (Call::GetThriftServerType, Expect::Ok(Reply::I32(1))),
        (
            Call::ScannerOpen {
                table: table(),
                scan: TScan::default(),
            },
            Expect::Shape(|r| matches!(r, Reply::I32(_))),
        ),
        (
            Call::ScannerGet { id: -5, rows: 10 },
            Expect::IllegalArgument,
        ),
        (Call::ScannerClose { id: -5 }, Expect::IllegalArgument),
        (
            Call::DeleteAll {
                table: table(),
                row: b("a"),
                column: None,
                timestamp: None,
            },
            Expect::Ok(Reply::Void),
        ),
        (
            Call::GetRows {
                table: table(),
                rows: vec![b("a")],
                columns: None,
                timestamp: None,
            },
            Expect::Shape(|r| matches!(r, Reply::Rows(rows) if rows.is_empty())),
        ),
        (
            Call::Compact {
                table: table(),
                major: true,
            },
            Expect::Ok(Reply::Void),
        ),
        (
            Call::DisableTable { table: table() },
            Expect::Ok(Reply::Void),
        ),
        (
            Call::IsTableEnabled { table: table() },
            Expect::Ok(Reply::Bool(false)),
        ),
        (
            Call::EnableTable { table: table() },
            Expect::Ok(Reply::Void),
        ),
        (
            Call::DeleteTable {
                table: b("missing"),
            },
            Expect::Io,
        ),
        (
            Call::GetRows {
                table: b("missing"),
                rows: vec![b("a")],
                columns: None,
                timestamp: None,
            },
            Expect::Io,
        ),
        (
            Call::DisableTable { table: table() },
            Expect::Ok(Reply::Void),
        ),
        (
            Call::DeleteTable { table: table() },
            Expect::Ok(Reply::Void),
        ),
    ]
}

#[test]
fn every_method_and_error_reply_in_every_transport_and_protocol() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Arc::new(Engine::open(dir.path(), EngineOptions::default()).expect("open"));
    let handler = Arc::new(Handler::new(store, HandlerOptions::default()));
    let options = NetOptions {
        listen: "127.0.0.1:0".parse().expect("address"),
        ..NetOptions::default()
    };
    let server = ThriftServer::start(handler, options).expect("start");
    for (transport, protocol) in [
        (Transport::Buffered, Protocol::Binary),
        (Transport::Buffered, Protocol::Compact),
        (Transport::Framed, Protocol::Binary),
        (Transport::Framed, Protocol::Compact),
    ] {
        let mut client =
            Client::connect(server.local_addr(), transport, protocol).expect("connect");
        let table = b(&format!("t_{transport:?}_{protocol:?}"));
        for (call, expect) in calls(&table) {
            let method = call.method();
            let got = client.call(&call);
            let ok = match (&expect, &got) {
                (Expect::Ok(want), Ok(reply)) => want == reply,
                (Expect::Shape(check), Ok(reply)) => check(reply),
                (Expect::Io, Err(ClientError::Hbase(HbaseError::Io { .. })))
                | (
                    Expect::IllegalArgument,
                    Err(ClientError::Hbase(HbaseError::IllegalArgument(_))),
                )
                | (Expect::AlreadyExists, Err(ClientError::Hbase(HbaseError::AlreadyExists(_)))) => {
                    true
                }
                _ => false,
            };
            assert!(ok, "{transport:?}/{protocol:?} {method}: got {got:?}");
        }
    }
    server.shutdown();
}
