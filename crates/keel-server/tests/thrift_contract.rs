//! The rest of Apache's `ThriftHBaseServiceHandler` contract: mutateRow(Ts) against
//! mutateRows(Ts) (order of deletes and puts, a put without a qualifier), append across columns,
//! compression, the newer calls (getTableNamesWithIsTableEnabled, getClusterId, grant/revoke),
//! operation attributes, and scannerOpenWithScan's fields together.

mod common;

use bytes::Bytes;
use common::{b, columns_of, delete, fixture, mutate, put, rows};
use keel_server::HandlerOptions;
use keel_thrift::hbase::{
    Call, ColumnDescriptor, HbaseError, Reply, TAccessControlEntity, TAppend, TScan,
};

fn get(h: &keel_server::Handler, row: &str) -> Vec<(String, String)> {
    let got = rows(
        h.handle(Call::GetRows {
            table: b("t"),
            rows: vec![b(row)],
            columns: None,
            timestamp: None,
        })
        .expect("get"),
    );
    got.first().map(columns_of).unwrap_or_default()
}

#[test]
fn mutate_row_deletes_first_and_mutate_rows_puts_first() {
    // Deletes and puts at one timestamp mask the same either way (a marker masks what is not
    // newer, whatever came first), so the order shows where a write fails half-way: Apache's
    // mutateRowTs issues its Delete, then its Put (two calls, not atomic); mutateRowsTs all
    // Puts, then all Deletes.
    let f = fixture(HandlerOptions::default());
    let h = &f.handler;
    for row in ["r1", "r2"] {
        mutate(h, row, vec![put("cf:a", "old")], Some(5)).expect("put");
    }
    let bad_put = put("nope:x", "v");
    let failed = h.handle(Call::MutateRow {
        table: b("t"),
        row: b("r1"),
        mutations: vec![delete("cf:a"), bad_put.clone()],
        timestamp: Some(10),
    });
    assert!(matches!(failed, Err(HbaseError::Io { .. })), "{failed:?}");
    assert!(
        get(h, "r1").is_empty(),
        "mutateRow: the delete ran before the put failed"
    );
    let failed = mutate(h, "r2", vec![delete("cf:a"), bad_put], Some(10));
    assert!(matches!(failed, Err(HbaseError::Io { .. })), "{failed:?}");
    assert_eq!(
        get(h, "r2"),
        [("cf:a".to_string(), "old".to_string())],
        "mutateRows: the puts failed first, so the deletes never ran"
    );
}

#[test]
fn a_put_without_a_qualifier_is_skipped_by_mutate_row_and_refused_by_mutate_rows() {
    let f = fixture(HandlerOptions::default());
    let h = &f.handler;
    h.handle(Call::MutateRow {
        table: b("t"),
        row: b("r"),
        mutations: vec![put("cf", "ignored"), put("cf:b", "kept")],
        timestamp: None,
    })
    .expect("mutateRow skips it");
    assert_eq!(get(h, "r"), [("cf:b".to_string(), "kept".to_string())]);
    let refused = mutate(h, "r", vec![put("cf", "x"), put("cf:c", "y")], None);
    assert!(
        matches!(&refused, Err(HbaseError::IllegalArgument(m)) if m.contains("Invalid famAndQf")),
        "{refused:?}"
    );
    assert_eq!(
        get(h, "r").len(),
        1,
        "nothing of the refused call was written"
    );
}

#[test]
fn append_is_atomic_across_columns_and_returns_the_stored_cells() {
    let f = fixture(HandlerOptions::default());
    let h = &f.handler;
    mutate(h, "r", vec![put("cf:a", "1")], None).expect("put");
    let Ok(Reply::Cells(cells)) = h.handle(Call::Append {
        append: TAppend {
            table: b("t"),
            row: b("r"),
            columns: vec![b("cf:a"), b("cf:b")],
            values: vec![b("x"), b("y")],
        },
    }) else {
        panic!("append")
    };
    assert_eq!(
        cells.iter().map(|c| c.value.clone()).collect::<Vec<_>>(),
        [b("1x"), b("y")]
    );
    // The timestamps returned are the stored cells'.
    let Ok(Reply::Cells(stored)) = h.handle(Call::GetVersions {
        table: b("t"),
        row: b("r"),
        column: b("cf:b"),
        timestamp: None,
        versions: 1,
    }) else {
        panic!("get")
    };
    assert_eq!(stored[0].timestamp, cells[1].timestamp);
    // A column in a family the table lacks: nothing is appended.
    let refused = h.handle(Call::Append {
        append: TAppend {
            table: b("t"),
            row: b("r"),
            columns: vec![b("cf:a"), b("nope:z")],
            values: vec![b("!"), b("!")],
        },
    });
    assert!(matches!(refused, Err(HbaseError::Io { .. })), "{refused:?}");
    assert_eq!(get(h, "r")[0], ("cf:a".to_string(), "1x".to_string()));
}

#[test]
fn compression_is_stored_and_reported() {
    let f = fixture(HandlerOptions::default());
    let h = &f.handler;
    h.handle(Call::CreateTable {
        table: b("z"),
        families: vec![ColumnDescriptor {
            name: b("c:"),
            compression: "LZ4".into(),
            ..ColumnDescriptor::default()
        }],
    })
    .expect("create");
    let Ok(Reply::Families(families)) = h.handle(Call::GetColumnDescriptors { table: b("z") })
    else {
        panic!("descriptors")
    };
    assert_eq!(families[0].1.compression, "LZ4");
    let refused = h.handle(Call::CreateTable {
        table: b("y"),
        families: vec![ColumnDescriptor {
            name: b("c:"),
            compression: "SNAPPY".into(),
            ..ColumnDescriptor::default()
        }],
    });
    assert!(
        matches!(&refused, Err(HbaseError::IllegalArgument(m)) if m.contains("SNAPPY")),
        "{refused:?}"
    );
}

#[test]
fn newer_calls() {
    let f = fixture(HandlerOptions::default());
    let h = &f.handler;
    h.handle(Call::DisableTable { table: b("t") })
        .expect("disable");
    assert_eq!(
        h.handle(Call::GetTableNamesWithIsTableEnabled),
        Ok(Reply::EnabledTables(vec![(b("t"), false)]))
    );
    let Ok(Reply::Text(id)) = h.handle(Call::GetClusterId) else {
        panic!("cluster id")
    };
    assert_eq!(id.len(), 36, "{id:?}");
    assert_eq!(h.handle(Call::GetClusterId), Ok(Reply::Text(id)));
    for call in [
        Call::Grant {
            info: TAccessControlEntity::default(),
        },
        Call::Revoke {
            info: TAccessControlEntity::default(),
        },
    ] {
        assert!(matches!(
            h.handle(call),
            Err(HbaseError::Io { message, .. }) if message.contains("access control")
        ));
    }
}

#[test]
fn operation_attributes_are_acted_on_or_refused() {
    let f = fixture(HandlerOptions::default());
    let h = &f.handler;
    let call = |row: &str| Call::MutateRows {
        table: b("t"),
        batches: vec![keel_thrift::hbase::BatchMutation {
            row: b(row),
            mutations: vec![put("cf:a", "v")],
        }],
        timestamp: None,
    };
    let attr = |k: &str, v: &[u8]| vec![(b(k), Bytes::copy_from_slice(v))];
    h.handle_request(0, call("id"), &attr("_operation.attributes.id", b"op-1"))
        .expect("an operation id is taken");
    h.handle_request(0, call("rc"), &attr("_isolationlevel_", &[1]))
        .expect("READ_COMMITTED");
    for (name, value, row) in [
        ("_isolationlevel_", &[2u8][..], "ru"),
        ("_vis", &b"secret"[..], "vis"),
    ] {
        let refused = h.handle_request(0, call(row), &attr(name, value));
        assert!(
            matches!(&refused, Err(HbaseError::Io { message, .. }) if message.contains(if name == "_vis" { "_vis" } else { "isolation" })),
            "{refused:?}"
        );
        assert!(get(h, row).is_empty(), "a refused call does nothing");
    }
    assert_eq!(get(h, "id").len(), 1);
}

#[test]
fn a_scan_composes_its_filter_with_every_other_field() {
    let f = fixture(HandlerOptions::default());
    let h = &f.handler;
    for (i, row) in ["a1", "a2", "a3", "b1"].into_iter().enumerate() {
        mutate(
            h,
            row,
            vec![
                put("cf:x", &format!("x{i}")),
                put("cf:y", "y"),
                put("cf2:z", "z"),
            ],
            Some(5),
        )
        .expect("put");
    }
    let Ok(Reply::I32(id)) = h.handle(Call::ScannerOpen {
        table: b("t"),
        scan: TScan {
            start_row: Some(b("a3")),
            stop_row: Some(b("a1")),
            reversed: Some(true),
            timestamp: Some(6),
            columns: Some(vec![b("cf")]),
            filter_string: Some(b("ValueFilter(!=, 'binary:x1')")),
            batch_size: Some(1),
            caching: Some(2),
            ..TScan::default()
        },
    }) else {
        panic!("open")
    };
    let got: Vec<(String, Vec<(String, String)>)> =
        rows(h.handle(Call::ScannerGet { id, rows: 100 }).expect("get"))
            .iter()
            .map(|r| (String::from_utf8_lossy(&r.row).into_owned(), columns_of(r)))
            .collect();
    // Rows a3 down to (not including) a1, family cf only, cells older than 6, x1 filtered out,
    // one cell per result.
    let s = |a: &str, b: &str| (a.to_string(), b.to_string());
    assert_eq!(
        got,
        [
            ("a3".to_string(), vec![s("cf:x", "x2")]),
            ("a3".to_string(), vec![s("cf:y", "y")]),
            ("a2".to_string(), vec![s("cf:y", "y")]),
        ]
    );
}

#[test]
fn a_pre_split_table_shows_its_regions_and_compacts_one_by_name() {
    use keel_region::{Engine, EngineOptions};
    let dir = tempfile::tempdir().expect("tempdir");
    let mut options = EngineOptions::default();
    options
        .table_split_keys
        .insert("p".into(), vec![b("g"), b("n")]);
    let server = std::sync::Arc::new(Engine::open(dir.path(), options).expect("open"));
    let h = keel_server::Handler::new(server, HandlerOptions::default());
    h.handle(Call::CreateTable {
        table: b("p"),
        families: vec![ColumnDescriptor {
            name: b("cf:"),
            ..ColumnDescriptor::default()
        }],
    })
    .expect("create");
    let Ok(Reply::Regions(regions)) = h.handle(Call::GetTableRegions { table: b("p") }) else {
        panic!("regions")
    };
    let ranges: Vec<(Bytes, Bytes)> = regions
        .iter()
        .map(|r| (r.start_key.clone(), r.end_key.clone()))
        .collect();
    assert_eq!(ranges, [(b(""), b("g")), (b("g"), b("n")), (b("n"), b(""))]);
    // HBase's names: table,start,id.<32 hex>.
    for r in &regions {
        let name = String::from_utf8(r.name.to_vec()).expect("utf-8");
        let (prefix, encoded) = name[..name.len() - 1].rsplit_once('.').expect("encoded");
        assert_eq!(
            prefix,
            format!("p,{},{}", String::from_utf8_lossy(&r.start_key), r.id)
        );
        assert_eq!(encoded.len(), 32, "{name}");
    }
    let Ok(Reply::Region(found)) = h.handle(Call::GetRegionInfo {
        row: b("p,h,99999999999999"),
    }) else {
        panic!("region info")
    };
    assert_eq!(found, regions[1]);
    for name in [regions[2].name.clone(), b("p")] {
        h.handle(Call::Compact {
            table: name,
            major: true,
        })
        .expect("compact a region by name, or the table");
    }
    assert!(matches!(
        h.handle(Call::Compact {
            table: b("p,zz,1.00000000000000000000000000000000."),
            major: false
        }),
        Err(HbaseError::Io { .. })
    ));
}
