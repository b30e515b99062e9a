//! Every method of `Hbase.thrift`, called over TCP with an input that fails, and its reply read
//! the way a generated client reads it: a result struct's field 0 is the value and fields 1..n
//! are the exceptions the method's `throws` clause declares — any other field is skipped, so an
//! undeclared exception reaches the caller as "missing result" (or, for a `void` method, as
//! success). Every failure must arrive as a declared exception or a `TApplicationException`
//! carrying its message.
//!
//! The `throws` table below is copied from Apache's `Hbase.thrift` (current master; 1.x for
//! `getRowOrBefore`), not taken from keel-thrift.

use std::io::{Read, Write};
use std::net::TcpStream;

use bytes::Bytes;
use keel_server::NetOptions;
use keel_thrift::{BinaryDecoder, BinaryEncoder, Decoder, Encoder, Limits, MessageHeader};
use keel_thrift::{MessageType, TType};

mod common;
use common::serve;

/// (method, declared exception field ids → names).
const THROWS: &[(&str, &[(i16, &str)])] = &[
    ("enableTable", &[(1, "IOError")]),
    ("disableTable", &[(1, "IOError")]),
    ("isTableEnabled", &[(1, "IOError")]),
    ("compact", &[(1, "IOError")]),
    ("majorCompact", &[(1, "IOError")]),
    ("getTableNames", &[(1, "IOError")]),
    ("getTableNamesWithIsTableEnabled", &[(1, "IOError")]),
    ("getColumnDescriptors", &[(1, "IOError")]),
    ("getTableRegions", &[(1, "IOError")]),
    (
        "createTable",
        &[(1, "IOError"), (2, "IllegalArgument"), (3, "AlreadyExists")],
    ),
    ("deleteTable", &[(1, "IOError")]),
    ("get", &[(1, "IOError")]),
    ("getVer", &[(1, "IOError")]),
    ("getVerTs", &[(1, "IOError")]),
    ("getRow", &[(1, "IOError")]),
    ("getRowWithColumns", &[(1, "IOError")]),
    ("getRowTs", &[(1, "IOError")]),
    ("getRowWithColumnsTs", &[(1, "IOError")]),
    ("getRows", &[(1, "IOError")]),
    ("getRowsWithColumns", &[(1, "IOError")]),
    ("getRowsTs", &[(1, "IOError")]),
    ("getRowsWithColumnsTs", &[(1, "IOError")]),
    ("mutateRow", &[(1, "IOError"), (2, "IllegalArgument")]),
    ("mutateRowTs", &[(1, "IOError"), (2, "IllegalArgument")]),
    ("mutateRows", &[(1, "IOError"), (2, "IllegalArgument")]),
    ("mutateRowsTs", &[(1, "IOError"), (2, "IllegalArgument")]),
    ("atomicIncrement", &[(1, "IOError"), (2, "IllegalArgument")]),
    ("deleteAll", &[(1, "IOError")]),
    ("deleteAllTs", &[(1, "IOError")]),
    ("deleteAllRow", &[(1, "IOError")]),
    ("increment", &[(1, "IOError")]),
    ("incrementRows", &[(1, "IOError")]),
    ("deleteAllRowTs", &[(1, "IOError")]),
    ("scannerOpenWithScan", &[(1, "IOError")]),
    ("scannerOpen", &[(1, "IOError")]),
    ("scannerOpenWithStop", &[(1, "IOError")]),
    ("scannerOpenWithPrefix", &[(1, "IOError")]),
    ("scannerOpenTs", &[(1, "IOError")]),
    ("scannerOpenWithStopTs", &[(1, "IOError")]),
    ("scannerGet", &[(1, "IOError"), (2, "IllegalArgument")]),
    ("scannerGetList", &[(1, "IOError"), (2, "IllegalArgument")]),
    ("scannerClose", &[(1, "IOError"), (2, "IllegalArgument")]),
    ("getRegionInfo", &[(1, "IOError")]),
    ("append", &[(1, "IOError")]),
    ("checkAndPut", &[(1, "IOError"), (2, "IllegalArgument")]),
    ("getRowOrBefore", &[(1, "IOError")]),
    ("grant", &[(1, "IOError")]),
    ("revoke", &[(1, "IOError")]),
];

/// An argument as the test writes it.
enum Arg {
    Bin(&'static [u8]),
    I32(i32),
    I64(i64),
    Bins(&'static [&'static [u8]]),
    /// A struct written by a closure.
    Struct(fn(&mut BinaryEncoder)),
    /// A list of structs.
    Structs(i32, fn(&mut BinaryEncoder)),
}

use Arg::{Bin, Bins, I32, I64, Struct, Structs};

const MISSING: &[u8] = b"no_such_table";
const NOT_UTF8: &[u8] = b"\xff\xfe";

fn put_without_qualifier(e: &mut BinaryEncoder) {
    // Mutation {1 isDelete=false, 2 column "cf" (no qualifier), 3 value}
    e.write_struct_begin();
    e.write_field_begin(TType::Bool, 1);
    e.write_bool(false);
    e.write_field_begin(TType::Binary, 2);
    e.write_binary(b"cf");
    e.write_field_begin(TType::Binary, 3);
    e.write_binary(b"v");
    e.write_struct_end();
}

fn batch_without_qualifier(e: &mut BinaryEncoder) {
    e.write_struct_begin();
    e.write_field_begin(TType::Binary, 1);
    e.write_binary(b"r");
    e.write_field_begin(TType::List, 2);
    e.write_list_begin(TType::Struct, 1);
    put_without_qualifier(e);
    e.write_struct_end();
}

fn existing_table(e: &mut BinaryEncoder) {
    // ColumnDescriptor {1 name "cf:"}
    e.write_struct_begin();
    e.write_field_begin(TType::Binary, 1);
    e.write_binary(b"cf:");
    e.write_struct_end();
}

fn scan_with_bad_filter(e: &mut BinaryEncoder) {
    // TScan {6 filterString}
    e.write_struct_begin();
    e.write_field_begin(TType::Binary, 6);
    e.write_binary(b"NoSuchFilter('x')");
    e.write_struct_end();
}

fn increment_of_a_family(e: &mut BinaryEncoder) {
    // TIncrement {1 table, 2 row, 3 column "cf" (no qualifier), 4 amount}
    e.write_struct_begin();
    e.write_field_begin(TType::Binary, 1);
    e.write_binary(b"t");
    e.write_field_begin(TType::Binary, 2);
    e.write_binary(b"r");
    e.write_field_begin(TType::Binary, 3);
    e.write_binary(b"cf");
    e.write_field_begin(TType::I64, 4);
    e.write_i64(1);
    e.write_struct_end();
}

fn append_mismatched(e: &mut BinaryEncoder) {
    // TAppend {1 table, 2 row, 3 columns [a, b], 4 values [x]}
    e.write_struct_begin();
    e.write_field_begin(TType::Binary, 1);
    e.write_binary(b"t");
    e.write_field_begin(TType::Binary, 2);
    e.write_binary(b"r");
    e.write_field_begin(TType::List, 3);
    e.write_list_begin(TType::Binary, 2);
    e.write_binary(b"cf:a");
    e.write_binary(b"cf:b");
    e.write_field_begin(TType::List, 4);
    e.write_list_begin(TType::Binary, 1);
    e.write_binary(b"x");
    e.write_struct_end();
}

fn a_put(e: &mut BinaryEncoder) {
    e.write_struct_begin();
    e.write_field_begin(TType::Binary, 2);
    e.write_binary(b"cf:q");
    e.write_field_begin(TType::Binary, 3);
    e.write_binary(b"v");
    e.write_struct_end();
}

fn permission(e: &mut BinaryEncoder) {
    // TAccessControlEntity {1 username, 2 scope TABLE, 4 actions, 5 tableName}
    e.write_struct_begin();
    e.write_field_begin(TType::Binary, 1);
    e.write_string("alice");
    e.write_field_begin(TType::I32, 2);
    e.write_i32(0);
    e.write_field_begin(TType::Binary, 4);
    e.write_string("RW");
    e.write_field_begin(TType::Binary, 5);
    e.write_binary(b"t");
    e.write_struct_end();
}

/// Each method with arguments that make it fail (field id, value).
fn failing_calls() -> Vec<(&'static str, Vec<(i16, Arg)>)> {
    let cols: &'static [&'static [u8]] = &[b"cf:a"];
    vec![
        ("enableTable", vec![(1, Bin(MISSING))]),
        ("disableTable", vec![(1, Bin(MISSING))]),
        ("isTableEnabled", vec![(1, Bin(MISSING))]),
        ("compact", vec![(1, Bin(MISSING))]),
        ("majorCompact", vec![(1, Bin(MISSING))]),
        ("getColumnDescriptors", vec![(1, Bin(MISSING))]),
        // A missing table has no regions (an empty list, as HBase); a name that is not UTF-8
        // is an error.
        ("getTableRegions", vec![(1, Bin(NOT_UTF8))]),
        (
            "createTable",
            vec![(1, Bin(b"t")), (2, Structs(1, existing_table))],
        ),
        ("deleteTable", vec![(1, Bin(MISSING))]),
        (
            "get",
            vec![(1, Bin(MISSING)), (2, Bin(b"r")), (3, Bin(b"cf:a"))],
        ),
        (
            "getVer",
            vec![
                (1, Bin(MISSING)),
                (2, Bin(b"r")),
                (3, Bin(b"cf:a")),
                (4, I32(1)),
            ],
        ),
        (
            "getVerTs",
            vec![
                (1, Bin(MISSING)),
                (2, Bin(b"r")),
                (3, Bin(b"cf:a")),
                (4, I64(5)),
                (5, I32(1)),
            ],
        ),
        ("getRow", vec![(1, Bin(MISSING)), (2, Bin(b"r"))]),
        (
            "getRowWithColumns",
            vec![(1, Bin(MISSING)), (2, Bin(b"r")), (3, Bins(cols))],
        ),
        (
            "getRowTs",
            vec![(1, Bin(MISSING)), (2, Bin(b"r")), (3, I64(5))],
        ),
        (
            "getRowWithColumnsTs",
            vec![
                (1, Bin(MISSING)),
                (2, Bin(b"r")),
                (3, Bins(cols)),
                (4, I64(5)),
            ],
        ),
        ("getRows", vec![(1, Bin(MISSING)), (2, Bins(&[b"r"]))]),
        (
            "getRowsWithColumns",
            vec![(1, Bin(MISSING)), (2, Bins(&[b"r"])), (3, Bins(cols))],
        ),
        (
            "getRowsTs",
            vec![(1, Bin(MISSING)), (2, Bins(&[b"r"])), (3, I64(5))],
        ),
        (
            "getRowsWithColumnsTs",
            vec![
                (1, Bin(MISSING)),
                (2, Bins(&[b"r"])),
                (3, Bins(cols)),
                (4, I64(5)),
            ],
        ),
        (
            "mutateRow",
            vec![(1, Bin(MISSING)), (2, Bin(b"r")), (3, Structs(1, a_put))],
        ),
        (
            "mutateRowTs",
            vec![
                (1, Bin(MISSING)),
                (2, Bin(b"r")),
                (3, Structs(1, a_put)),
                (4, I64(5)),
            ],
        ),
        (
            "mutateRows",
            vec![(1, Bin(b"t")), (2, Structs(1, batch_without_qualifier))],
        ),
        (
            "mutateRowsTs",
            vec![
                (1, Bin(b"t")),
                (2, Structs(1, batch_without_qualifier)),
                (3, I64(5)),
            ],
        ),
        (
            "atomicIncrement",
            vec![(1, Bin(b"t")), (2, Bin(b"r")), (3, Bin(b"cf")), (4, I64(1))],
        ),
        (
            "deleteAll",
            vec![(1, Bin(MISSING)), (2, Bin(b"r")), (3, Bin(b"cf:a"))],
        ),
        (
            "deleteAllTs",
            vec![
                (1, Bin(MISSING)),
                (2, Bin(b"r")),
                (3, Bin(b"cf:a")),
                (4, I64(5)),
            ],
        ),
        ("deleteAllRow", vec![(1, Bin(MISSING)), (2, Bin(b"r"))]),
        ("increment", vec![(1, Struct(increment_of_a_family))]),
        (
            "incrementRows",
            vec![(1, Structs(1, increment_of_a_family))],
        ),
        (
            "deleteAllRowTs",
            vec![(1, Bin(MISSING)), (2, Bin(b"r")), (3, I64(5))],
        ),
        (
            "scannerOpenWithScan",
            vec![(1, Bin(b"t")), (2, Struct(scan_with_bad_filter))],
        ),
        (
            "scannerOpen",
            vec![(1, Bin(MISSING)), (2, Bin(b"")), (3, Bins(cols))],
        ),
        (
            "scannerOpenWithStop",
            vec![
                (1, Bin(MISSING)),
                (2, Bin(b"")),
                (3, Bin(b"z")),
                (4, Bins(cols)),
            ],
        ),
        (
            "scannerOpenWithPrefix",
            vec![(1, Bin(MISSING)), (2, Bin(b"a")), (3, Bins(cols))],
        ),
        (
            "scannerOpenTs",
            vec![
                (1, Bin(MISSING)),
                (2, Bin(b"")),
                (3, Bins(cols)),
                (4, I64(5)),
            ],
        ),
        (
            "scannerOpenWithStopTs",
            vec![
                (1, Bin(MISSING)),
                (2, Bin(b"")),
                (3, Bin(b"z")),
                (4, Bins(cols)),
                (5, I64(5)),
            ],
        ),
        ("scannerGet", vec![(1, I32(424_242))]),
        ("scannerGetList", vec![(1, I32(424_242)), (2, I32(10))]),
        ("scannerClose", vec![(1, I32(424_242))]),
        (
            "getRegionInfo",
            vec![(1, Bin(b"no_such_table,r,99999999999999"))],
        ),
        ("append", vec![(1, Struct(append_mismatched))]),
        (
            "checkAndPut",
            vec![
                (1, Bin(MISSING)),
                (2, Bin(b"r")),
                (3, Bin(b"cf:a")),
                (6, Struct(a_put)),
            ],
        ),
        (
            "getRowOrBefore",
            vec![(1, Bin(MISSING)), (2, Bin(b"r")), (3, Bin(b"cf"))],
        ),
        ("grant", vec![(1, Struct(permission))]),
        ("revoke", vec![(1, Struct(permission))]),
    ]
}

fn request(method: &str, args: &[(i16, Arg)]) -> Vec<u8> {
    let mut e = BinaryEncoder::new();
    e.write_message_begin(&MessageHeader {
        name: method.to_string(),
        kind: MessageType::Call,
        seqid: 0,
    });
    e.write_struct_begin();
    for (id, arg) in args {
        match arg {
            Bin(b) => {
                e.write_field_begin(TType::Binary, *id);
                e.write_binary(b);
            }
            I32(v) => {
                e.write_field_begin(TType::I32, *id);
                e.write_i32(*v);
            }
            I64(v) => {
                e.write_field_begin(TType::I64, *id);
                e.write_i64(*v);
            }
            Bins(items) => {
                e.write_field_begin(TType::List, *id);
                e.write_list_begin(TType::Binary, items.len());
                for item in *items {
                    e.write_binary(item);
                }
            }
            Struct(write) => {
                e.write_field_begin(TType::Struct, *id);
                write(&mut e);
            }
            Structs(n, write) => {
                e.write_field_begin(TType::List, *id);
                e.write_list_begin(TType::Struct, *n as usize);
                for _ in 0..*n {
                    write(&mut e);
                }
            }
        }
    }
    e.write_struct_end();
    let body = e.take();
    let mut frame = (body.len() as u32).to_be_bytes().to_vec();
    frame.extend_from_slice(&body);
    frame
}

/// What a generated client makes of a reply.
#[derive(Debug, PartialEq)]
enum Outcome {
    /// The value (or, for `void`, nothing and no exception).
    Success,
    /// A declared exception, with its message.
    Declared(String, String),
    /// A `TApplicationException`, with its message.
    Application(String),
    /// Field 0 absent and no declared exception set: "missing result" for a non-void method.
    Missing,
}

fn read_as_generated_client(reply: Vec<u8>, method: &str) -> Outcome {
    let declared: &[(i16, &str)] = THROWS
        .iter()
        .find(|(m, _)| *m == method)
        .map(|(_, t)| *t)
        .expect("listed");
    let mut d = BinaryDecoder::new(Bytes::from(reply), Limits::default());
    let header = d.read_message_begin().expect("header");
    assert_eq!(header.name, method);
    d.read_struct_begin().expect("struct");
    let mut outcome = Outcome::Missing;
    let mut message = String::new();
    while let Some(f) = d.read_field_begin().expect("field") {
        match (header.kind, f.id, f.ttype) {
            (MessageType::Exception, 1, TType::Binary) => message = d.read_string().expect("s"),
            (MessageType::Reply, 0, _) => {
                d.skip(f.ttype).expect("skip");
                outcome = Outcome::Success;
            }
            (MessageType::Reply, id, TType::Struct) if declared.iter().any(|(i, _)| *i == id) => {
                let name = declared.iter().find(|(i, _)| *i == id).expect("found").1;
                d.read_struct_begin().expect("exception");
                let mut text = String::new();
                while let Some(g) = d.read_field_begin().expect("field") {
                    if (g.id, g.ttype) == (1, TType::Binary) {
                        text = d.read_string().expect("message");
                    } else {
                        d.skip(g.ttype).expect("skip");
                    }
                }
                d.read_struct_end().expect("end");
                outcome = Outcome::Declared(name.to_string(), text);
            }
            // Anything else is unknown to the generated code and skipped.
            _ => d.skip(f.ttype).expect("skip"),
        }
    }
    if header.kind == MessageType::Exception {
        return Outcome::Application(message);
    }
    outcome
}

#[test]
fn every_method_fails_with_an_exception_its_client_can_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = serve(dir.path(), NetOptions::default());
    let mut socket = TcpStream::connect(server.local_addr()).expect("connect");
    // Table t (family cf) exists, so "already exists", a bad filter, a missing qualifier and a
    // mismatched append fail for those reasons rather than for a missing table.
    socket
        .write_all(&request(
            "createTable",
            &[(1, Bin(b"t")), (2, Structs(1, existing_table))],
        ))
        .expect("create");
    let _ = read_frame(&mut socket);
    let calls = failing_calls();
    let covered: Vec<&str> = calls.iter().map(|(m, _)| *m).collect();
    for (method, _) in THROWS {
        let can_fail = !matches!(*method, "getTableNames" | "getTableNamesWithIsTableEnabled");
        assert!(
            !can_fail || covered.contains(method),
            "{method} is not walked"
        );
    }
    for (method, args) in calls {
        socket.write_all(&request(method, &args)).expect("request");
        let outcome = read_as_generated_client(read_frame(&mut socket), method);
        match &outcome {
            Outcome::Declared(_, message) | Outcome::Application(message) => {
                assert!(!message.is_empty(), "{method}: {outcome:?}");
            }
            other => panic!("{method}: a failing call read as {other:?}"),
        }
    }
    // The calls that cannot fail read as success, as do the two without exceptions.
    for method in [
        "getTableNames",
        "getTableNamesWithIsTableEnabled",
        "getThriftServerType",
        "getClusterId",
    ] {
        socket.write_all(&request(method, &[])).expect("request");
        let reply = read_frame(&mut socket);
        if THROWS.iter().any(|(m, _)| *m == method) {
            assert_eq!(read_as_generated_client(reply, method), Outcome::Success);
        }
    }
}

fn read_frame(socket: &mut TcpStream) -> Vec<u8> {
    let mut len = [0u8; 4];
    socket.read_exact(&mut len).expect("length");
    let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
    socket.read_exact(&mut body).expect("body");
    body
}
