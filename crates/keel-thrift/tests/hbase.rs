//! The `Hbase` service codec: every call and reply round-trips in both protocols, the method
//! variants clients send fold into their call, unknown methods and fields are skipped, and the
//! bytes the Apache `thrift` crate writes for happybase-shaped requests decode as expected.

use bytes::Bytes;
use keel_thrift::hbase::{
    BatchMutation, Call, CallError, ColumnDescriptor, HbaseError, Mutation, Reply,
    TAccessControlEntity, TAppend, TCell, TColumn, TIncrement, TRegionInfo, TRowResult, TScan,
    UNKNOWN_METHOD, declared_exceptions, decode_call, decode_reply, decode_request,
    encode_application_exception, encode_reply,
};
use keel_thrift::transport::Protocol;
use keel_thrift::{
    BinaryDecoder, BinaryEncoder, CompactDecoder, CompactEncoder, Decoder, Encoder, Limits,
    MessageBoundary,
};

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

/// A decoder over bytes, of one protocol.
type DecoderFor = fn(Vec<u8>) -> Box<dyn Decoder>;

fn both() -> Vec<(Box<dyn Encoder>, DecoderFor)> {
    vec![
        (Box::new(BinaryEncoder::new()), |v| {
            Box::new(BinaryDecoder::new(Bytes::from(v), Limits::default()))
        }),
        (Box::new(CompactEncoder::new()), |v| {
            Box::new(CompactDecoder::new(Bytes::from(v), Limits::default()))
        }),
    ]
}

fn sample_calls() -> Vec<Call> {
    let scan = TScan {
        start_row: Some(b("a")),
        stop_row: Some(b("z")),
        timestamp: Some(99),
        columns: Some(vec![b("cf:q"), b("cf2")]),
        caching: Some(1000),
        filter_string: Some(b(
            "SingleColumnValueFilter ('cf1', 'qual1', =, 'binary:val1')",
        )),
        batch_size: Some(10),
        sort_columns: Some(true),
        reversed: Some(false),
        cache_blocks: Some(true),
    };
    vec![
        Call::GetTableNames,
        Call::CreateTable {
            table: b("t"),
            families: vec![
                ColumnDescriptor {
                    name: b("cf:"),
                    time_to_live: -1,
                    ..ColumnDescriptor::default()
                },
                ColumnDescriptor {
                    name: b("cf2:"),
                    max_versions: 1,
                    in_memory: true,
                    bloom_filter_type: "ROW".into(),
                    ..ColumnDescriptor::default()
                },
            ],
        },
        Call::DeleteTable { table: b("t") },
        Call::EnableTable { table: b("t") },
        Call::DisableTable { table: b("t") },
        Call::IsTableEnabled { table: b("t") },
        Call::Compact {
            table: b("t"),
            major: false,
        },
        Call::Compact {
            table: b("t"),
            major: true,
        },
        Call::GetColumnDescriptors { table: b("t") },
        Call::GetTableRegions { table: b("t") },
        Call::GetRows {
            table: b("t"),
            rows: vec![b("r1"), b("r2")],
            columns: None,
            timestamp: None,
        },
        Call::GetRows {
            table: b("t"),
            rows: vec![b("r1")],
            columns: None,
            timestamp: Some(5),
        },
        Call::GetRows {
            table: b("t"),
            rows: vec![b("r1")],
            columns: Some(vec![b("cf:a")]),
            timestamp: None,
        },
        Call::GetRows {
            table: b("t"),
            rows: vec![],
            columns: Some(vec![]),
            timestamp: Some(-3),
        },
        Call::GetVersions {
            table: b("t"),
            row: b("r"),
            column: b("cf:a"),
            timestamp: None,
            versions: i32::MAX,
        },
        Call::GetVersions {
            table: b("t"),
            row: b("r"),
            column: b("cf:a"),
            timestamp: Some(7),
            versions: 2,
        },
        Call::MutateRows {
            table: b("t"),
            batches: vec![BatchMutation {
                row: b("r"),
                mutations: vec![
                    Mutation {
                        is_delete: false,
                        column: b("cf:a"),
                        value: Some(b("v")),
                        write_to_wal: true,
                    },
                    Mutation {
                        is_delete: true,
                        column: b("cf"),
                        value: None,
                        write_to_wal: false,
                    },
                ],
            }],
            timestamp: None,
        },
        Call::MutateRows {
            table: b("t"),
            batches: vec![],
            timestamp: Some(12),
        },
        Call::AtomicIncrement {
            table: b("t"),
            row: b("r"),
            column: b("cf:n"),
            amount: -5,
        },
        Call::ScannerOpen {
            table: b("t"),
            scan,
        },
        Call::ScannerOpen {
            table: b("t"),
            scan: TScan::default(),
        },
        Call::ScannerGet { id: 3, rows: 1000 },
        Call::ScannerClose { id: 3 },
        Call::DeleteAll {
            table: b("t"),
            row: b("r"),
            column: Some(b("cf:a")),
            timestamp: None,
        },
        Call::DeleteAll {
            table: b("t"),
            row: b("r"),
            column: Some(b("cf")),
            timestamp: Some(7),
        },
        Call::DeleteAll {
            table: b("t"),
            row: b("r"),
            column: None,
            timestamp: None,
        },
        Call::DeleteAll {
            table: b("t"),
            row: b("r"),
            column: None,
            timestamp: Some(8),
        },
        Call::CheckAndPut {
            table: b("t"),
            row: b("r"),
            column: b("cf:a"),
            value: Some(b("old")),
            mutation: Mutation {
                column: b("cf:a"),
                value: Some(b("new")),
                ..Mutation::default()
            },
        },
        Call::CheckAndPut {
            table: b("t"),
            row: b("r"),
            column: b("cf:a"),
            value: None,
            mutation: Mutation {
                column: b("cf:b"),
                value: Some(b("x")),
                write_to_wal: false,
                ..Mutation::default()
            },
        },
        Call::GetRowOrBefore {
            table: b("t"),
            row: b("r"),
            family: b("cf"),
        },
        Call::GetRegionInfo { row: b("t,,1") },
        Call::GetThriftServerType,
        Call::MutateRow {
            table: b("t"),
            row: b("r"),
            mutations: vec![Mutation {
                is_delete: true,
                column: b("cf:a"),
                value: None,
                write_to_wal: false,
            }],
            timestamp: Some(9),
        },
        Call::MutateRow {
            table: b("t"),
            row: b("r"),
            mutations: vec![],
            timestamp: None,
        },
        Call::GetTableNamesWithIsTableEnabled,
        Call::GetClusterId,
        Call::Grant {
            info: TAccessControlEntity {
                username: "alice".into(),
                scope: 0,
                actions: "RW".into(),
                table_name: Some(b("t")),
                ns_name: None,
            },
        },
        Call::Revoke {
            info: TAccessControlEntity {
                username: "bob".into(),
                scope: 1,
                actions: "A".into(),
                table_name: None,
                ns_name: Some("ns".into()),
            },
        },
        Call::IncrementRows {
            increments: vec![TIncrement {
                table: b("t"),
                row: b("r"),
                column: b("cf:n"),
                amount: 2,
            }],
        },
        Call::Append {
            append: TAppend {
                table: b("t"),
                row: b("r"),
                columns: vec![b("cf:a")],
                values: vec![b("x")],
            },
        },
    ]
}

#[test]
fn every_call_round_trips_in_both_protocols_and_every_prefix_is_incomplete() {
    for (mut e, decoder) in both() {
        for (seqid, call) in sample_calls().into_iter().enumerate() {
            call.encode(&mut *e, seqid as i32);
            let bytes = e.take();
            let mut d = decoder(bytes.clone());
            let (header, decoded) = decode_call(&mut *d).expect("decodes");
            assert_eq!(decoded, call, "{}", call.method());
            assert_eq!(
                (header.name.as_str(), header.seqid),
                (call.method(), seqid as i32)
            );
            assert_eq!(d.position(), bytes.len());
            // The same bytes in a chain of buffers (a request read into pooled buffers) decode
            // the same, whichever way they are cut.
            for pieces in [2, 3, 7] {
                let step = bytes.len().div_ceil(pieces).max(1);
                let parts: Vec<Bytes> = bytes.chunks(step).map(Bytes::copy_from_slice).collect();
                // A compact message starts with its protocol id, 0x82; a strict binary one with 0x80.
                let mut chained: Box<dyn Decoder> = if bytes.first() == Some(&0x82) {
                    Box::new(CompactDecoder::from_parts(parts, Limits::default()))
                } else {
                    Box::new(BinaryDecoder::from_parts(parts, Limits::default()))
                };
                let (_, again) = decode_call(&mut *chained).expect("decodes from parts");
                assert_eq!(again, call, "{} in {pieces} parts", call.method());
                assert_eq!(chained.position(), bytes.len());
            }
            for cut in 0..bytes.len() {
                match decode_call(&mut *decoder(bytes[..cut].to_vec())) {
                    Err(CallError::Wire(e)) if e.is_incomplete() => {}
                    other => panic!("{} cut at {cut}: {other:?}", call.method()),
                }
            }
        }
    }
}

#[test]
fn the_boundary_walk_finds_every_call_end_however_the_bytes_arrive() {
    for (mut e, _) in both() {
        let mut stream = Vec::new();
        let mut ends = Vec::new();
        for (seqid, call) in sample_calls().into_iter().enumerate() {
            call.encode(&mut *e, seqid as i32);
            stream.extend_from_slice(&e.take());
            ends.push(stream.len());
        }
        let protocol = if stream.first() == Some(&0x82) {
            Protocol::Compact
        } else {
            Protocol::Binary
        };
        for step in [1, 2, 3, 5, 64, 4096] {
            let mut boundary = MessageBoundary::new(protocol, Limits::default());
            let mut found = Vec::new();
            for (i, piece) in stream.chunks(step).enumerate() {
                let mut at = 0;
                while let Some(n) = boundary.feed(&piece[at..]).expect("well-formed calls") {
                    at += n;
                    found.push(i * step + at);
                    if at == piece.len() {
                        break;
                    }
                }
            }
            assert_eq!(found, ends, "{protocol:?} in pieces of {step}");
        }
    }
}

#[test]
fn every_reply_and_exception_round_trips() {
    let cell = TCell {
        value: b("v"),
        timestamp: 5,
    };
    let replies = vec![
        ("mutateRows", Ok(Reply::Void)),
        ("isTableEnabled", Ok(Reply::Bool(true))),
        ("scannerOpenWithScan", Ok(Reply::I32(7))),
        ("atomicIncrement", Ok(Reply::I64(-9))),
        ("getTableNames", Ok(Reply::Names(vec![b("a"), b("b")]))),
        (
            "getColumnDescriptors",
            Ok(Reply::Families(vec![(
                b("cf:"),
                ColumnDescriptor::default(),
            )])),
        ),
        (
            "getTableRegions",
            Ok(Reply::Regions(vec![TRegionInfo {
                id: 1,
                name: b("t,,1"),
                port: 9090,
                ..TRegionInfo::default()
            }])),
        ),
        (
            "getRowsWithColumns",
            Ok(Reply::Rows(vec![
                TRowResult {
                    row: b("r"),
                    columns: Some(vec![(b("cf:a"), cell.clone())]),
                    sorted_columns: None,
                },
                TRowResult {
                    row: b("s"),
                    columns: None,
                    sorted_columns: Some(vec![TColumn {
                        column_name: b("cf:a"),
                        cell: cell.clone(),
                    }]),
                },
            ])),
        ),
        ("scannerGetList", Ok(Reply::Rows(vec![]))),
        (
            "getVerTs",
            Ok(Reply::Cells(vec![cell.clone(), cell.clone()])),
        ),
        ("getRowOrBefore", Ok(Reply::Cells(vec![cell]))),
        ("getThriftServerType", Ok(Reply::I32(1))),
        ("checkAndPut", Ok(Reply::Bool(false))),
        (
            "getRegionInfo",
            Ok(Reply::Region(TRegionInfo {
                start_key: b("a"),
                end_key: b("m"),
                id: 3,
                name: b("t,a,3"),
                version: 1,
                server_name: b("localhost"),
                port: 9090,
            })),
        ),
        (
            "getRow",
            Err(HbaseError::Io {
                message: "no table x".into(),
                can_retry: false,
            }),
        ),
        (
            "mutateRows",
            Err(HbaseError::IllegalArgument("a put needs fam:qual".into())),
        ),
        ("createTable", Err(HbaseError::AlreadyExists("t".into()))),
        (
            "getTableNamesWithIsTableEnabled",
            Ok(Reply::EnabledTables(vec![(b("a"), true), (b("b"), false)])),
        ),
        ("getClusterId", Ok(Reply::Text(b("5c1d-…")))),
    ];
    for (mut e, decoder) in both() {
        for (name, result) in &replies {
            encode_reply(&mut *e, name, 4, result);
            let bytes = e.take();
            let (header, decoded) = decode_reply(&mut *decoder(bytes)).expect("decodes");
            assert_eq!((header.name.as_str(), header.seqid), (*name, 4));
            assert_eq!(
                decoded.as_ref().expect("not an application exception"),
                result,
                "{name}"
            );
        }
    }
}

#[test]
fn unknown_methods_are_skipped_and_answered_with_an_application_exception() {
    for (mut e, decoder) in both() {
        e.write_message_begin(&keel_thrift::MessageHeader {
            name: "getNoSuchThing".into(),
            kind: keel_thrift::MessageType::Call,
            seqid: 11,
        });
        e.write_struct_begin();
        e.write_field_begin(keel_thrift::TType::List, 1);
        e.write_list_begin(keel_thrift::TType::I32, 2);
        e.write_i32(1);
        e.write_i32(2);
        e.write_struct_end();
        let bytes = e.take();
        let mut d = decoder(bytes.clone());
        match decode_call(&mut *d) {
            Err(CallError::UnknownMethod(header)) => assert_eq!(header.seqid, 11),
            other => panic!("{other:?}"),
        }
        assert_eq!(d.position(), bytes.len(), "its arguments were skipped");
        encode_application_exception(
            &mut *e,
            "getNoSuchThing",
            11,
            "Invalid method name: 'getNoSuchThing'",
            UNKNOWN_METHOD,
        );
        let (header, decoded) = decode_reply(&mut *decoder(e.take())).expect("decodes");
        assert_eq!(header.kind, keel_thrift::MessageType::Exception);
        assert_eq!(
            decoded,
            Err((
                "Invalid method name: 'getNoSuchThing'".to_string(),
                UNKNOWN_METHOD
            ))
        );
    }
}

/// Requests as happybase sends them, written with the Apache `thrift` crate: the row-level
/// variants fold into `GetRows`/`MutateRows`, unknown fields are skipped, absent optional fields
/// stay absent.
#[test]
fn happybase_shaped_requests_written_by_the_thrift_crate_decode() {
    use thrift::protocol::{
        TBinaryOutputProtocol, TFieldIdentifier, TListIdentifier, TMapIdentifier,
        TMessageIdentifier, TMessageType, TOutputProtocol, TStructIdentifier, TType as T,
    };
    let mut bytes: Vec<u8> = Vec::new();
    {
        let mut o = TBinaryOutputProtocol::new(&mut bytes, true);
        // getRowWithColumns("t", "r1", ["cf:a", "cf"], {}) with an extra unknown field 9.
        o.write_message_begin(&TMessageIdentifier::new(
            "getRowWithColumns",
            TMessageType::Call,
            0,
        ))
        .expect("the thrift crate writes");
        o.write_struct_begin(&TStructIdentifier::new("args"))
            .expect("the thrift crate writes");
        o.write_field_begin(&TFieldIdentifier::new("tableName", T::String, 1))
            .expect("the thrift crate writes");
        o.write_bytes(b"t").expect("the thrift crate writes");
        o.write_field_begin(&TFieldIdentifier::new("row", T::String, 2))
            .expect("the thrift crate writes");
        o.write_bytes(b"r1").expect("the thrift crate writes");
        o.write_field_begin(&TFieldIdentifier::new("columns", T::List, 3))
            .expect("the thrift crate writes");
        o.write_list_begin(&TListIdentifier::new(T::String, 2))
            .expect("the thrift crate writes");
        o.write_bytes(b"cf:a").expect("the thrift crate writes");
        o.write_bytes(b"cf").expect("the thrift crate writes");
        o.write_field_begin(&TFieldIdentifier::new("attributes", T::Map, 4))
            .expect("the thrift crate writes");
        o.write_map_begin(&TMapIdentifier::new(T::String, T::String, 0))
            .expect("the thrift crate writes");
        o.write_field_begin(&TFieldIdentifier::new("future", T::Double, 9))
            .expect("the thrift crate writes");
        o.write_double(1.5).expect("the thrift crate writes");
        o.write_field_stop().expect("the thrift crate writes");
        o.write_struct_end().expect("the thrift crate writes");
        // mutateRow("t", "r", [put cf:a=v (fields 1, 2, 3, 4), delete cf (1, 2, 4)], {}) at ts 42.
        o.write_message_begin(&TMessageIdentifier::new(
            "mutateRowTs",
            TMessageType::Call,
            0,
        ))
        .expect("the thrift crate writes");
        o.write_struct_begin(&TStructIdentifier::new("args"))
            .expect("the thrift crate writes");
        o.write_field_begin(&TFieldIdentifier::new("tableName", T::String, 1))
            .expect("the thrift crate writes");
        o.write_bytes(b"t").expect("the thrift crate writes");
        o.write_field_begin(&TFieldIdentifier::new("row", T::String, 2))
            .expect("the thrift crate writes");
        o.write_bytes(b"r").expect("the thrift crate writes");
        o.write_field_begin(&TFieldIdentifier::new("mutations", T::List, 3))
            .expect("the thrift crate writes");
        o.write_list_begin(&TListIdentifier::new(T::Struct, 2))
            .expect("the thrift crate writes");
        for (delete, column, value) in [(false, "cf:a", Some("v")), (true, "cf", None)] {
            o.write_struct_begin(&TStructIdentifier::new("Mutation"))
                .expect("the thrift crate writes");
            o.write_field_begin(&TFieldIdentifier::new("isDelete", T::Bool, 1))
                .expect("the thrift crate writes");
            o.write_bool(delete).expect("the thrift crate writes");
            o.write_field_begin(&TFieldIdentifier::new("column", T::String, 2))
                .expect("the thrift crate writes");
            o.write_bytes(column.as_bytes())
                .expect("the thrift crate writes");
            if let Some(value) = value {
                o.write_field_begin(&TFieldIdentifier::new("value", T::String, 3))
                    .expect("the thrift crate writes");
                o.write_bytes(value.as_bytes())
                    .expect("the thrift crate writes");
            }
            o.write_field_begin(&TFieldIdentifier::new("writeToWAL", T::Bool, 4))
                .expect("the thrift crate writes");
            o.write_bool(true).expect("the thrift crate writes");
            o.write_field_stop().expect("the thrift crate writes");
            o.write_struct_end().expect("the thrift crate writes");
        }
        o.write_field_begin(&TFieldIdentifier::new("timestamp", T::I64, 4))
            .expect("the thrift crate writes");
        o.write_i64(42).expect("the thrift crate writes");
        o.write_field_stop().expect("the thrift crate writes");
        o.write_struct_end().expect("the thrift crate writes");
        o.flush().expect("the thrift crate writes");
    }
    let mut d = BinaryDecoder::new(Bytes::from(bytes), Limits::default());
    let (_, first) = decode_call(&mut d).expect("getRowWithColumns");
    assert_eq!(
        first,
        Call::GetRows {
            table: b("t"),
            rows: vec![b("r1")],
            columns: Some(vec![b("cf:a"), b("cf")]),
            timestamp: None
        }
    );
    let (_, second) = decode_call(&mut d).expect("mutateRowTs");
    assert_eq!(
        second,
        Call::MutateRow {
            table: b("t"),
            row: b("r"),
            mutations: vec![
                Mutation {
                    is_delete: false,
                    column: b("cf:a"),
                    value: Some(b("v")),
                    write_to_wal: true
                },
                Mutation {
                    is_delete: true,
                    column: b("cf"),
                    value: None,
                    write_to_wal: true
                },
            ],
            timestamp: Some(42),
        }
    );
}

/// Writes a request to `method` whose arguments `args` writes (field by field), in `e`'s
/// protocol, the way another client's generated code would send a variant Keel folds.
fn request(e: &mut dyn Encoder, method: &str, args: impl FnOnce(&mut dyn Encoder)) -> Vec<u8> {
    e.write_message_begin(&keel_thrift::MessageHeader {
        name: method.into(),
        kind: keel_thrift::MessageType::Call,
        seqid: 1,
    });
    e.write_struct_begin();
    args(e);
    e.write_struct_end();
    e.take()
}

fn binary(e: &mut dyn Encoder, id: i16, value: &str) {
    e.write_field_begin(keel_thrift::TType::Binary, id);
    e.write_binary(value.as_bytes());
}

fn binaries(e: &mut dyn Encoder, id: i16, values: &[&str]) {
    e.write_field_begin(keel_thrift::TType::List, id);
    e.write_list_begin(keel_thrift::TType::Binary, values.len());
    for v in values {
        e.write_binary(v.as_bytes());
    }
}

fn int64(e: &mut dyn Encoder, id: i16, value: i64) {
    e.write_field_begin(keel_thrift::TType::I64, id);
    e.write_i64(value);
}

/// `get` and the compat-0.90 `scannerOpen*` methods (field ids as `Hbase.thrift`) decode as the
/// calls they amount to; a prefix becomes a range.
#[test]
fn older_variants_fold_into_their_calls() {
    let scan = |start: &str, stop: Option<Bytes>, ts: Option<i64>| Call::ScannerOpen {
        table: b("t"),
        scan: TScan {
            start_row: Some(b(start)),
            stop_row: stop,
            timestamp: ts,
            columns: Some(vec![b("cf:a")]),
            ..TScan::default()
        },
    };
    type Args = fn(&mut dyn Encoder);
    let cases: Vec<(&str, Args, Call)> = vec![
        (
            "get",
            |e| {
                binary(e, 1, "t");
                binary(e, 2, "r");
                binary(e, 3, "cf:a");
            },
            Call::GetVersions {
                table: b("t"),
                row: b("r"),
                column: b("cf:a"),
                timestamp: None,
                versions: 1,
            },
        ),
        (
            "scannerOpen",
            |e| {
                binary(e, 1, "t");
                binary(e, 2, "b");
                binaries(e, 3, &["cf:a"]);
            },
            scan("b", None, None),
        ),
        (
            "scannerOpenTs",
            |e| {
                binary(e, 1, "t");
                binary(e, 2, "b");
                binaries(e, 3, &["cf:a"]);
                int64(e, 4, 50);
            },
            scan("b", None, Some(50)),
        ),
        (
            "scannerOpenWithStop",
            |e| {
                binary(e, 1, "t");
                binary(e, 2, "b");
                binary(e, 3, "d");
                binaries(e, 4, &["cf:a"]);
            },
            scan("b", Some(b("d")), None),
        ),
        (
            "scannerOpenWithStopTs",
            |e| {
                binary(e, 1, "t");
                binary(e, 2, "b");
                binary(e, 3, "d");
                binaries(e, 4, &["cf:a"]);
                int64(e, 5, 60);
            },
            scan("b", Some(b("d")), Some(60)),
        ),
        (
            "scannerOpenWithPrefix",
            |e| {
                binary(e, 1, "t");
                binary(e, 2, "ab");
                binaries(e, 3, &["cf:a"]);
            },
            scan("ab", Some(b("ac")), None),
        ),
    ];
    for (mut e, decoder) in both() {
        for (method, args, expected) in &cases {
            let bytes = request(&mut *e, method, args);
            let (header, call) = decode_call(&mut *decoder(bytes)).expect("decodes");
            assert_eq!(header.name, *method);
            assert_eq!(&call, expected, "{method}");
        }
    }
}

#[test]
fn a_prefix_ends_where_its_rows_do() {
    use keel_thrift::hbase::prefix_stop_row;
    assert_eq!(prefix_stop_row(b"ab"), b("ac"));
    assert_eq!(prefix_stop_row(b"a\xff\xff"), b("b"));
    assert_eq!(
        prefix_stop_row(&[0x61, 0xfe]),
        Bytes::from_static(&[0x61, 0xff])
    );
    assert_eq!(
        prefix_stop_row(&[0xff, 0xff]),
        Bytes::new(),
        "no row follows"
    );
    assert_eq!(prefix_stop_row(b""), Bytes::new());
}

/// A frame of empty structs is small on the wire and huge decoded: `incrementRows` with 4
/// million empty `TIncrement`s is 4 MB on the wire, and decoded would be ~400 MB of `Vec`
/// slots. The decoder charges every element when the list header is read and refuses at once,
/// before anything is allocated; a normal request's charge stays near its size.
#[test]
fn decoded_size_is_bounded_before_it_is_allocated() {
    for (mut e, decode) in both() {
        use keel_thrift::TType;
        let flood = request(&mut *e, "incrementRows", |e| {
            e.write_field_begin(TType::List, 1);
            e.write_list_begin(TType::Struct, 4_000_000);
            for _ in 0..4_000_000 {
                e.write_struct_begin();
                e.write_struct_end();
            }
        });
        let mut d = decode(flood);
        let started = std::time::Instant::now();
        match decode_call(&mut *d) {
            Err(CallError::Oversized {
                header,
                error: keel_thrift::ThriftError::TooLarge { what, .. },
            }) => {
                assert_eq!(what, "decoded message");
                assert_eq!(
                    header.name, "incrementRows",
                    "the header comes back for the reply"
                );
            }
            other => panic!("expected a decoded-size refusal, got {other:?}"),
        }
        assert!(d.decoded() <= Limits::default().max_decoded + 4_000_000 * 32);
        assert!(
            started.elapsed() < std::time::Duration::from_secs(1),
            "refused at the header"
        );
        let normal = request(&mut *e, "incrementRows", |e| {
            e.write_field_begin(TType::List, 1);
            e.write_list_begin(TType::Struct, 2);
            for row in ["r1", "r2"] {
                e.write_struct_begin();
                binary(e, 1, "t");
                binary(e, 2, row);
                binary(e, 3, "cf:n");
                int64(e, 4, 1);
                e.write_struct_end();
            }
        });
        let mut d = decode(normal);
        assert!(matches!(
            decode_call(&mut *d),
            Ok((_, Call::IncrementRows { .. }))
        ));
        assert!(d.decoded() > 0 && d.decoded() < 1024, "{}", d.decoded());
    }
}

#[test]
fn attributes_travel_with_the_methods_that_have_them() {
    let attributes = vec![(b("_operation.attributes.id"), b("op-7")), (b("k"), b("v"))];
    for (mut e, decoder) in both() {
        for call in sample_calls() {
            call.encode_with(&mut *e, 3, &attributes);
            let request = decode_request(&mut *decoder(e.take())).expect("decodes");
            assert_eq!(request.call, call);
            // Only the methods with an attributes argument carry them.
            let has = matches!(
                call,
                Call::GetRows { .. }
                    | Call::GetVersions { .. }
                    | Call::MutateRows { .. }
                    | Call::MutateRow { .. }
                    | Call::ScannerOpen { .. }
                    | Call::DeleteAll { .. }
                    | Call::CheckAndPut { .. }
            );
            let want: &[(Bytes, Bytes)] = if has { &attributes } else { &[] };
            assert_eq!(request.attributes, want, "{}", call.method());
        }
    }
}

#[test]
fn an_undeclared_exception_goes_as_one_the_method_declares_or_as_an_application_exception() {
    for (mut e, decoder) in both() {
        // scannerOpenWithScan declares IOError only: an IllegalArgument (a bad filter string)
        // is a TApplicationException with its message, as libthrift sends an unchecked one.
        encode_reply(
            &mut *e,
            "scannerOpenWithScan",
            1,
            &Err(HbaseError::IllegalArgument(
                "Filter Name X not supported".into(),
            )),
        );
        let (_, decoded) = decode_reply(&mut *decoder(e.take())).expect("decodes");
        match decoded {
            Err((message, kind)) => {
                assert!(message.contains("Filter Name X"), "{message}");
                assert_eq!(kind, keel_thrift::hbase::INTERNAL_ERROR);
            }
            other => panic!("{other:?}"),
        }
        // AlreadyExists from a method that declares IOError: an IOError.
        encode_reply(
            &mut *e,
            "enableTable",
            1,
            &Err(HbaseError::AlreadyExists("t".into())),
        );
        let (_, decoded) = decode_reply(&mut *decoder(e.take())).expect("decodes");
        assert!(
            matches!(decoded, Ok(Err(HbaseError::Io { .. }))),
            "{decoded:?}"
        );
        // A method that declares none: an IOError becomes a TApplicationException.
        encode_reply(
            &mut *e,
            "getClusterId",
            1,
            &Err(HbaseError::Io {
                message: "down".into(),
                can_retry: false,
            }),
        );
        let (_, decoded) = decode_reply(&mut *decoder(e.take())).expect("decodes");
        assert!(
            matches!(decoded, Err((ref m, _)) if m.contains("down")),
            "{decoded:?}"
        );
        // Declared ones stay as they are.
        assert!(declared_exceptions("createTable").already_exists);
        assert!(!declared_exceptions("getRow").illegal_argument);
    }
}
