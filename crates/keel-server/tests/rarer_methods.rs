//! The `Hbase` methods happybase does not call but other Thrift1 clients do: `get`,
//! `deleteAll*`, `checkAndPut`, `getRowOrBefore`, `getRegionInfo`, `getThriftServerType`, and
//! the compat-0.90 scanner openers (decoded into `ScannerOpen`; here through the handler).

use keel_server::HandlerOptions;
use keel_thrift::hbase::{Call, HbaseError, Mutation, Reply, TCell, TScan, prefix_stop_row};

mod common;
use common::{b, columns_of, fixture, mutate, put, rows};

fn row(h: &keel_server::Handler, row: &str) -> Vec<(String, String)> {
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

fn cells(reply: Reply) -> Vec<(String, i64)> {
    match reply {
        Reply::Cells(cells) => cells
            .into_iter()
            .map(|TCell { value, timestamp }| {
                (String::from_utf8_lossy(&value).into_owned(), timestamp)
            })
            .collect(),
        other => panic!("cells expected, got {other:?}"),
    }
}

fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
    items
        .iter()
        .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
        .collect()
}

#[test]
fn get_is_the_latest_version_of_one_column() {
    let f = fixture(HandlerOptions::default());
    let h = &f.handler;
    mutate(h, "r", vec![put("cf:a", "old")], Some(10)).expect("put");
    mutate(h, "r", vec![put("cf:a", "new")], Some(20)).expect("put");
    let get = |column: &str| {
        cells(
            h.handle(Call::GetVersions {
                table: b("t"),
                row: b("r"),
                column: b(column),
                timestamp: None,
                versions: 1,
            })
            .expect("get"),
        )
    };
    assert_eq!(get("cf:a"), vec![("new".to_string(), 20)]);
    assert!(get("cf:missing").is_empty());
}

#[test]
fn delete_all_covers_a_column_a_family_or_the_row_up_to_its_timestamp() {
    let f = fixture(HandlerOptions::default());
    let h = &f.handler;
    let delete_all = |column: Option<&str>, timestamp: Option<i64>| {
        h.handle(Call::DeleteAll {
            table: b("t"),
            row: b("r"),
            column: column.map(b),
            timestamp,
        })
        .expect("deleteAll")
    };
    mutate(
        h,
        "r",
        vec![put("cf:a", "1"), put("cf:b", "2"), put("cf2:x", "3")],
        Some(10),
    )
    .expect("put");
    mutate(h, "r", vec![put("cf:a", "later")], Some(30)).expect("put");
    // deleteAllTs at 20 removes cf:a's versions up to 20 only.
    delete_all(Some("cf:a"), Some(20));
    let versions = cells(
        h.handle(Call::GetVersions {
            table: b("t"),
            row: b("r"),
            column: b("cf:a"),
            timestamp: None,
            versions: 10,
        })
        .expect("getVer"),
    );
    assert_eq!(versions, vec![("later".to_string(), 30)]);
    // deleteAll with no timestamp: every version now.
    delete_all(Some("cf:a"), None);
    assert_eq!(
        row(h, "r"),
        pairs(&[("cf:b", "2"), ("cf2:x", "3")]),
        "cf:a is gone, the rest stays"
    );
    // A column without a colon is the whole family (at 40, so a later put at 50 shows).
    delete_all(Some("cf"), Some(40));
    assert_eq!(row(h, "r"), pairs(&[("cf2:x", "3")]));
    // deleteAllRowTs below the cells' timestamp leaves them; deleteAllRow removes the row.
    mutate(h, "r", vec![put("cf:c", "4")], Some(50)).expect("put");
    delete_all(None, Some(5));
    assert_eq!(row(h, "r"), pairs(&[("cf:c", "4"), ("cf2:x", "3")]));
    delete_all(None, None);
    assert!(row(h, "r").is_empty());
    // Other rows are untouched.
    mutate(h, "s", vec![put("cf:a", "kept")], None).expect("put");
    delete_all(None, None);
    assert_eq!(row(h, "s"), pairs(&[("cf:a", "kept")]));
    let missing = h.handle(Call::DeleteAll {
        table: b("nope"),
        row: b("r"),
        column: None,
        timestamp: None,
    });
    assert!(matches!(missing, Err(HbaseError::Io { .. })), "{missing:?}");
}

#[test]
fn check_and_put_compares_the_latest_value_under_the_row_lock() {
    let f = fixture(HandlerOptions::default());
    let h = &f.handler;
    let check_and_put = |expected: Option<&str>, column: &str, value: &str| {
        h.handle(Call::CheckAndPut {
            table: b("t"),
            row: b("r"),
            column: b("cf:a"),
            value: expected.map(b),
            mutation: put(column, value),
        })
    };
    // Expecting no value: applies once, then the column has one.
    assert_eq!(
        check_and_put(None, "cf:a", "1").expect("call"),
        Reply::Bool(true)
    );
    assert_eq!(
        check_and_put(None, "cf:a", "2").expect("call"),
        Reply::Bool(false)
    );
    // An empty expected value means the same as none (HBase's checkAndMutate).
    assert_eq!(
        check_and_put(Some(""), "cf:a", "2").expect("call"),
        Reply::Bool(false)
    );
    // ...so it matches a column that has no value.
    let on_missing = h.handle(Call::CheckAndPut {
        table: b("t"),
        row: b("r"),
        column: b("cf:never"),
        value: Some(b("")),
        mutation: put("cf2:x", "x"),
    });
    assert_eq!(on_missing.expect("call"), Reply::Bool(true));
    // Equal: applies, and may write another column of the row.
    assert_eq!(
        check_and_put(Some("1"), "cf2:x", "y").expect("call"),
        Reply::Bool(true)
    );
    assert_eq!(
        check_and_put(Some("2"), "cf:a", "3").expect("call"),
        Reply::Bool(false)
    );
    assert_eq!(row(h, "r"), pairs(&[("cf:a", "1"), ("cf2:x", "y")]));
    // A put without a qualifier is refused before anything is read.
    let bad = check_and_put(Some("1"), "cf", "z");
    assert!(
        matches!(bad, Err(HbaseError::IllegalArgument(_))),
        "{bad:?}"
    );
    // writeToWAL=false is honoured, and the value written is the one sent.
    let no_wal = h.handle(Call::CheckAndPut {
        table: b("t"),
        row: b("r"),
        column: b("cf:a"),
        value: Some(b("1")),
        mutation: Mutation {
            write_to_wal: false,
            ..put("cf:a", "unlogged")
        },
    });
    assert_eq!(no_wal.expect("call"), Reply::Bool(true));
    assert_eq!(row(h, "r"), pairs(&[("cf:a", "unlogged"), ("cf2:x", "y")]));
}

#[test]
fn check_and_put_lets_exactly_one_of_many_racing_writers_win() {
    let f = fixture(HandlerOptions::default());
    let h = &f.handler;
    let winners: usize = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|i| {
                s.spawn(move || {
                    h.handle(Call::CheckAndPut {
                        table: b("t"),
                        row: b("lock"),
                        column: b("cf:owner"),
                        value: None,
                        mutation: put("cf:owner", &format!("writer{i}")),
                    })
                    .expect("call")
                        == Reply::Bool(true)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|j| usize::from(j.join().expect("writer")))
            .sum()
    });
    assert_eq!(winners, 1);
}

#[test]
fn row_or_before_finds_the_last_row_at_or_before() {
    let f = fixture(HandlerOptions::default());
    let h = &f.handler;
    mutate(
        h,
        "b",
        vec![put("cf:a", "at b"), put("cf2:x", "other")],
        Some(5),
    )
    .expect("put");
    mutate(h, "d", vec![put("cf:a", "at d")], Some(6)).expect("put");
    let before = |row: &str, family: &str| {
        cells(
            h.handle(Call::GetRowOrBefore {
                table: b("t"),
                row: b(row),
                family: b(family),
            })
            .expect("getRowOrBefore"),
        )
    };
    assert_eq!(before("d", "cf"), vec![("at d".to_string(), 6)], "at");
    assert_eq!(before("c", "cf"), vec![("at b".to_string(), 5)], "before");
    assert_eq!(before("zz", "cf:"), vec![("at d".to_string(), 6)]);
    assert_eq!(before("c", "cf2"), vec![("other".to_string(), 5)]);
    assert!(before("a", "cf").is_empty(), "nothing before the first row");
}

#[test]
fn region_info_and_server_type() {
    let f = fixture(HandlerOptions::default());
    let h = &f.handler;
    let regions = match h
        .handle(Call::GetTableRegions { table: b("t") })
        .expect("regions")
    {
        Reply::Regions(regions) => regions,
        other => panic!("{other:?}"),
    };
    for meta_row in ["t,,99999999999999", "t,somerow,", "t"] {
        match h.handle(Call::GetRegionInfo { row: b(meta_row) }) {
            Ok(Reply::Region(region)) => assert_eq!(region, regions[0], "{meta_row}"),
            other => panic!("{meta_row}: {other:?}"),
        }
    }
    let missing = h.handle(Call::GetRegionInfo { row: b("nope,,1") });
    assert!(
        matches!(&missing, Err(HbaseError::Io { message, .. }) if message.contains("nope,,1")),
        "{missing:?}"
    );
    assert_eq!(
        h.handle(Call::GetThriftServerType).expect("type"),
        Reply::I32(1)
    );
}

#[test]
fn a_prefix_scanner_returns_exactly_the_rows_with_the_prefix() {
    let f = fixture(HandlerOptions::default());
    let h = &f.handler;
    for r in ["ab", "ab\u{7f}", "abc", "abz", "ac", "aa"] {
        mutate(h, r, vec![put("cf:a", r)], None).expect("put");
    }
    let id = match h
        .handle(Call::ScannerOpen {
            table: b("t"),
            scan: TScan {
                start_row: Some(b("ab")),
                stop_row: Some(prefix_stop_row(b"ab")),
                ..TScan::default()
            },
        })
        .expect("open")
    {
        Reply::I32(id) => id,
        other => panic!("{other:?}"),
    };
    let got = rows(h.handle(Call::ScannerGet { id, rows: 100 }).expect("rows"));
    let names: Vec<_> = got
        .iter()
        .map(|r| String::from_utf8_lossy(&r.row).into_owned())
        .collect();
    // Byte order: 0x7f sorts after 'z'.
    assert_eq!(names, ["ab", "abc", "abz", "ab\u{7f}"]);
}
