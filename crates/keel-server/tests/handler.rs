//! The gateway's semantics, call by call, on a real embedded store.

use std::time::Duration;

use bytes::Bytes;
use keel_server::HandlerOptions;
use keel_thrift::hbase::{
    Call, ColumnDescriptor, HbaseError, Reply, TAppend, TCell, TIncrement, TScan,
};

mod common;
use common::{b, columns_of, delete, fixture, mutate, put, rows};

#[test]
fn tables_and_families() {
    let f = fixture(HandlerOptions::default());
    let h = &f.handler;
    assert_eq!(
        h.handle(Call::GetTableNames).expect("names"),
        Reply::Names(vec![b("t")])
    );
    let again = h.handle(Call::CreateTable {
        table: b("t"),
        families: vec![ColumnDescriptor {
            name: b("cf:"),
            ..ColumnDescriptor::default()
        }],
    });
    assert!(
        matches!(again, Err(HbaseError::AlreadyExists(_))),
        "{again:?}"
    );
    let no_families = h.handle(Call::CreateTable {
        table: b("u"),
        families: vec![],
    });
    assert!(
        matches!(no_families, Err(HbaseError::IllegalArgument(_))),
        "{no_families:?}"
    );
    match h
        .handle(Call::GetColumnDescriptors { table: b("t") })
        .expect("families")
    {
        Reply::Families(families) => {
            let names: Vec<&[u8]> = families.iter().map(|(k, _)| &k[..]).collect();
            assert_eq!(names, vec![&b"cf:"[..], &b"cf2:"[..]]);
            assert_eq!(families[0].1.max_versions, 3);
            assert_eq!(families[0].1.time_to_live, i32::MAX, "-1 means forever");
        }
        other => panic!("{other:?}"),
    }
    match h
        .handle(Call::GetTableRegions { table: b("t") })
        .expect("regions")
    {
        Reply::Regions(regions) => assert_eq!(regions.len(), 1),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        h.handle(Call::GetTableRegions { table: b("nope") })
            .expect("regions"),
        Reply::Regions(vec![])
    );
    assert!(matches!(
        h.handle(Call::GetRows {
            table: b("nope"),
            rows: vec![b("r")],
            columns: None,
            timestamp: None
        }),
        Err(HbaseError::Io { .. })
    ));
    // Disable, check, delete (an enabled table cannot be deleted).
    assert!(matches!(
        h.handle(Call::DeleteTable { table: b("t") }),
        Err(HbaseError::Io { .. })
    ));
    h.handle(Call::DisableTable { table: b("t") })
        .expect("disable");
    assert_eq!(
        h.handle(Call::IsTableEnabled { table: b("t") })
            .expect("enabled?"),
        Reply::Bool(false)
    );
    h.handle(Call::EnableTable { table: b("t") })
        .expect("enable");
    assert_eq!(
        h.handle(Call::IsTableEnabled { table: b("t") })
            .expect("enabled?"),
        Reply::Bool(true)
    );
    h.handle(Call::Compact {
        table: b("t"),
        major: true,
    })
    .expect("compact");
    h.handle(Call::DisableTable { table: b("t") })
        .expect("disable");
    h.handle(Call::DeleteTable { table: b("t") })
        .expect("delete");
    assert_eq!(
        h.handle(Call::GetTableNames).expect("names"),
        Reply::Names(vec![])
    );
}

#[test]
fn puts_gets_columns_timestamps_and_versions() {
    let f = fixture(HandlerOptions::default());
    let h = &f.handler;
    mutate(
        h,
        "r1",
        vec![put("cf:a", "1"), put("cf:b", "2"), put("cf2:x", "3")],
        Some(10),
    )
    .expect("put");
    mutate(h, "r1", vec![put("cf:a", "1b")], Some(20)).expect("put");
    mutate(h, "r2", vec![put("cf:", "empty qualifier")], None).expect("put");
    // A put without a colon is refused.
    let bad = mutate(h, "r1", vec![put("cf", "x")], None);
    assert!(
        matches!(bad, Err(HbaseError::IllegalArgument(_))),
        "{bad:?}"
    );
    // Found rows in request order, missing ones skipped; a whole family by name; fam:qual.
    let got = rows(
        h.handle(Call::GetRows {
            table: b("t"),
            rows: vec![b("r2"), b("missing"), b("r1")],
            columns: Some(vec![b("cf")]),
            timestamp: None,
        })
        .expect("get"),
    );
    assert_eq!(got.len(), 2);
    assert_eq!(&got[0].row[..], b"r2");
    assert_eq!(
        columns_of(&got[0]),
        vec![("cf:".to_string(), "empty qualifier".to_string())]
    );
    assert_eq!(
        columns_of(&got[1]),
        vec![("cf:a".into(), "1b".into()), ("cf:b".into(), "2".into())]
    );
    let one = rows(
        h.handle(Call::GetRows {
            table: b("t"),
            rows: vec![b("r1")],
            columns: Some(vec![b("cf2:x")]),
            timestamp: None,
        })
        .expect("get"),
    );
    assert_eq!(columns_of(&one[0]), vec![("cf2:x".into(), "3".into())]);
    // *Ts reads see [0, ts): at 20 the version written at 20 is not visible yet.
    let old = rows(
        h.handle(Call::GetRows {
            table: b("t"),
            rows: vec![b("r1")],
            columns: Some(vec![b("cf:a")]),
            timestamp: Some(20),
        })
        .expect("get"),
    );
    assert_eq!(columns_of(&old[0]), vec![("cf:a".into(), "1".into())]);
    // getVer: newest first, at most what was asked.
    let versions = h
        .handle(Call::GetVersions {
            table: b("t"),
            row: b("r1"),
            column: b("cf:a"),
            timestamp: None,
            versions: i32::MAX,
        })
        .expect("versions");
    assert_eq!(
        versions,
        Reply::Cells(vec![
            TCell {
                value: b("1b"),
                timestamp: 20
            },
            TCell {
                value: b("1"),
                timestamp: 10
            }
        ])
    );
    let newest = h
        .handle(Call::GetVersions {
            table: b("t"),
            row: b("r1"),
            column: b("cf:a"),
            timestamp: None,
            versions: 1,
        })
        .expect("versions");
    assert_eq!(
        newest,
        Reply::Cells(vec![TCell {
            value: b("1b"),
            timestamp: 20
        }])
    );
    let before = h
        .handle(Call::GetVersions {
            table: b("t"),
            row: b("r1"),
            column: b("cf:a"),
            timestamp: Some(20),
            versions: 5,
        })
        .expect("versions");
    assert_eq!(
        before,
        Reply::Cells(vec![TCell {
            value: b("1"),
            timestamp: 10
        }])
    );
}

#[test]
fn deletes_follow_puts_and_cover_columns_and_families() {
    let f = fixture(HandlerOptions::default());
    let h = &f.handler;
    mutate(
        h,
        "r",
        vec![put("cf:a", "1"), put("cf:b", "2"), put("cf2:x", "3")],
        Some(10),
    )
    .expect("put");
    // One call with a delete listed before a put of the same column, both at 30: the puts go
    // first, so the delete (≤ 30) removes the new value too.
    mutate(h, "r", vec![delete("cf:a"), put("cf:a", "new")], Some(30)).expect("mixed");
    let got = rows(
        h.handle(Call::GetRows {
            table: b("t"),
            rows: vec![b("r")],
            columns: None,
            timestamp: None,
        })
        .expect("get"),
    );
    assert_eq!(
        columns_of(&got[0]),
        vec![("cf:b".into(), "2".into()), ("cf2:x".into(), "3".into())]
    );
    // A family delete removes every cell of the family.
    mutate(h, "r", vec![delete("cf")], None).expect("family delete");
    let got = rows(
        h.handle(Call::GetRows {
            table: b("t"),
            rows: vec![b("r")],
            columns: None,
            timestamp: None,
        })
        .expect("get"),
    );
    assert_eq!(columns_of(&got[0]), vec![("cf2:x".into(), "3".into())]);
}

#[test]
fn counters_appends_and_increment_rows() {
    let f = fixture(HandlerOptions::default());
    let h = &f.handler;
    let inc = |amount| {
        h.handle(Call::AtomicIncrement {
            table: b("t"),
            row: b("c"),
            column: b("cf:n"),
            amount,
        })
    };
    assert_eq!(inc(5).expect("inc"), Reply::I64(5));
    assert_eq!(inc(-2).expect("inc"), Reply::I64(3));
    h.handle(Call::IncrementRows {
        increments: vec![TIncrement {
            table: b("t"),
            row: b("c"),
            column: b("cf:n"),
            amount: 10,
        }],
    })
    .expect("rows");
    assert_eq!(inc(0).expect("inc"), Reply::I64(13));
    mutate(h, "s", vec![put("cf:n", "not eight bytes")], None).expect("put");
    assert!(matches!(
        h.handle(Call::AtomicIncrement {
            table: b("t"),
            row: b("s"),
            column: b("cf:n"),
            amount: 1
        }),
        Err(HbaseError::Io { .. })
    ));
    match h
        .handle(Call::Append {
            append: TAppend {
                table: b("t"),
                row: b("a"),
                columns: vec![b("cf:l")],
                values: vec![b("x")],
            },
        })
        .expect("append")
    {
        Reply::Cells(cells) => assert_eq!(cells[0].value, b("x")),
        other => panic!("{other:?}"),
    }
    match h
        .handle(Call::Append {
            append: TAppend {
                table: b("t"),
                row: b("a"),
                columns: vec![b("cf:l")],
                values: vec![b("yz")],
            },
        })
        .expect("append")
    {
        Reply::Cells(cells) => assert_eq!(cells[0].value, b("xyz")),
        other => panic!("{other:?}"),
    }
}

#[test]
fn scanners_page_sort_reverse_filter_and_expire() {
    let f = fixture(HandlerOptions {
        scanner_lease: Duration::from_millis(300),
        ..HandlerOptions::default()
    });
    let h = &f.handler;
    for i in 0..10 {
        let value = if i % 2 == 0 { "even" } else { "odd" };
        mutate(
            h,
            &format!("row{i}"),
            vec![put("cf:v", value), put("cf:a", "a")],
            None,
        )
        .expect("put");
    }
    let open = |scan: TScan| match h
        .handle(Call::ScannerOpen {
            table: b("t"),
            scan,
        })
        .expect("open")
    {
        Reply::I32(id) => id,
        other => panic!("{other:?}"),
    };
    let get = |id, n| rows(h.handle(Call::ScannerGet { id, rows: n }).expect("get"));
    let id = open(TScan {
        start_row: Some(b("row2")),
        stop_row: Some(b("row7")),
        ..TScan::default()
    });
    let first = get(id, 3);
    assert_eq!(
        first.iter().map(|r| r.row.clone()).collect::<Vec<_>>(),
        vec![b("row2"), b("row3"), b("row4")]
    );
    assert_eq!(get(id, 10).len(), 2);
    assert!(get(id, 10).is_empty(), "exhausted: an empty list");
    h.handle(Call::ScannerClose { id }).expect("close");
    assert!(matches!(
        h.handle(Call::ScannerGet { id, rows: 1 }),
        Err(HbaseError::IllegalArgument(_))
    ));
    assert!(matches!(
        h.handle(Call::ScannerClose { id }),
        Err(HbaseError::IllegalArgument(_))
    ));
    // Reversed, from row5 down to (not including) row2; sorted columns.
    let id = open(TScan {
        start_row: Some(b("row5")),
        stop_row: Some(b("row2")),
        reversed: Some(true),
        sort_columns: Some(true),
        ..TScan::default()
    });
    let back = get(id, 10);
    assert_eq!(
        back.iter().map(|r| r.row.clone()).collect::<Vec<_>>(),
        vec![b("row5"), b("row4"), b("row3")]
    );
    assert!(back[0].columns.is_none());
    let sorted: Vec<Bytes> = back[0]
        .sorted_columns
        .as_ref()
        .expect("sorted")
        .iter()
        .map(|c| c.column_name.clone())
        .collect();
    assert_eq!(sorted, vec![b("cf:a"), b("cf:v")]);
    // happybase's filter string.
    let id = open(TScan {
        filter_string: Some(b("SingleColumnValueFilter ('cf', 'v', =, 'binary:odd')")),
        columns: Some(vec![b("cf:v")]),
        ..TScan::default()
    });
    let odd = get(id, 100);
    assert_eq!(odd.len(), 5);
    assert!(
        odd.iter()
            .all(|r| columns_of(r) == vec![("cf:v".to_string(), "odd".to_string())])
    );
    let bad = h.handle(Call::ScannerOpen {
        table: b("t"),
        scan: TScan {
            filter_string: Some(b("NoSuchFilter ('r')")),
            ..TScan::default()
        },
    });
    assert!(
        matches!(bad, Err(HbaseError::IllegalArgument(_))),
        "{bad:?}"
    );
    // Abandoned scanners are closed once their lease runs out.
    assert!(h.open_scanners() >= 2);
    std::thread::sleep(Duration::from_millis(400));
    assert_eq!(h.open_scanners(), 0);
    assert!(matches!(
        h.handle(Call::ScannerGet { id, rows: 1 }),
        Err(HbaseError::IllegalArgument(_))
    ));
}

#[test]
fn the_scanner_limit_is_enforced() {
    let f = fixture(HandlerOptions {
        max_open_scanners: 2,
        ..HandlerOptions::default()
    });
    let h = &f.handler;
    for _ in 0..2 {
        h.handle(Call::ScannerOpen {
            table: b("t"),
            scan: TScan::default(),
        })
        .expect("open");
    }
    let third = h.handle(Call::ScannerOpen {
        table: b("t"),
        scan: TScan::default(),
    });
    assert!(matches!(third, Err(HbaseError::Io { .. })), "{third:?}");
}

#[test]
fn scanners_are_bounded_and_closed_per_connection() {
    let f = fixture(HandlerOptions {
        max_scanners_per_connection: 2,
        ..HandlerOptions::default()
    });
    let h = &f.handler;
    let open = |connection| {
        h.handle_on(
            connection,
            Call::ScannerOpen {
                table: b("t"),
                scan: TScan::default(),
            },
        )
    };
    open(1).expect("first");
    open(1).expect("second");
    assert!(
        matches!(open(1), Err(HbaseError::Io { .. })),
        "a third on one connection"
    );
    open(2).expect("another connection has its own share");
    assert_eq!(h.open_scanners(), 3);
    assert_eq!(h.close_connection(1), 2);
    assert_eq!(h.open_scanners(), 1);
    open(1).expect("room again");
}

/// A scanner answers only its own connection — another gets the unknown-id error — and its
/// lease runs out on a timer, with no other scanner call needed to notice.
#[test]
fn scanners_belong_to_their_connection_and_expire_on_a_timer() {
    let f = fixture(HandlerOptions {
        scanner_lease: Duration::from_millis(200),
        ..HandlerOptions::default()
    });
    let h = &f.handler;
    mutate(h, "r1", vec![put("cf:a", "1")], None).expect("put");
    let id = match h.handle_on(
        1,
        Call::ScannerOpen {
            table: b("t"),
            scan: TScan::default(),
        },
    ) {
        Ok(Reply::I32(id)) => id,
        other => panic!("{other:?}"),
    };
    let stranger = h.handle_on(2, Call::ScannerGet { id, rows: 1 });
    let unknown = h.handle_on(
        2,
        Call::ScannerGet {
            id: id + 1000,
            rows: 1,
        },
    );
    assert_eq!(
        format!("{stranger:?}").replace(&id.to_string(), "N"),
        format!("{unknown:?}").replace(&(id + 1000).to_string(), "N"),
        "another connection learns nothing"
    );
    assert!(h.handle_on(2, Call::ScannerClose { id }).is_err());
    assert_eq!(
        rows(
            h.handle_on(1, Call::ScannerGet { id, rows: 1 })
                .expect("owner")
        )
        .len(),
        1
    );
    std::thread::sleep(Duration::from_millis(800));
    // Counted without calling `open_scanners` (which also expires): the timer did it.
    assert!(
        matches!(
            h.handle_on(1, Call::ScannerGet { id, rows: 1 }),
            Err(HbaseError::IllegalArgument(_))
        ),
        "expired by the lease timer"
    );
}

/// `scannerGetList` stops at `max_result_size` bytes whatever the row count asked (at least one
/// row comes back), and a `getRows` gathering more is refused.
#[test]
fn results_are_bounded_by_bytes() {
    let f = fixture(HandlerOptions {
        max_result_size: 10_000,
        ..HandlerOptions::default()
    });
    let h = &f.handler;
    let value = "v".repeat(1000);
    for i in 0..50 {
        mutate(h, &format!("r{i:02}"), vec![put("cf:a", &value)], None).expect("put");
    }
    let id = match h.handle(Call::ScannerOpen {
        table: b("t"),
        scan: TScan::default(),
    }) {
        Ok(Reply::I32(id)) => id,
        other => panic!("{other:?}"),
    };
    let mut seen = 0;
    loop {
        let got = rows(
            h.handle(Call::ScannerGet { id, rows: i32::MAX })
                .expect("get"),
        );
        if got.is_empty() {
            break;
        }
        assert!(
            (1..=11).contains(&got.len()),
            "{} rows in one answer",
            got.len()
        );
        seen += got.len();
    }
    assert_eq!(seen, 50, "paged through everything");
    let all: Vec<Bytes> = (0..50).map(|i| b(&format!("r{i:02}"))).collect();
    let refused = h.handle(Call::GetRows {
        table: b("t"),
        rows: all.clone(),
        columns: None,
        timestamp: None,
    });
    assert!(
        matches!(&refused, Err(HbaseError::Io { message, .. }) if message.contains("MultiActionResultTooLarge")),
        "{refused:?}"
    );
    let fine = h.handle(Call::GetRows {
        table: b("t"),
        rows: all[..5].to_vec(),
        columns: None,
        timestamp: None,
    });
    assert_eq!(rows(fine.expect("five rows")).len(), 5);
}
