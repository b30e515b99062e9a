//! A hostile (or careless) admin over Thrift against a real `keel serve`: path-like, dotted,
//! overlong and namespaced table names, bad and duplicate families, too many families, and
//! writes to a family the table does not have through every write method. Each is refused with
//! the exception the method declares; then the server is killed (SIGKILL) and started again:
//! every table that existed still opens and every acknowledged row is there.

mod common;

use bytes::Bytes;
use common::{b, connect, start, write_config};
use keel_thrift::Client;
use keel_thrift::hbase::{
    BatchMutation, Call, ColumnDescriptor, HbaseError, Mutation, Reply, TAppend, TIncrement,
};

fn family(name: &str) -> ColumnDescriptor {
    ColumnDescriptor {
        name: b(name),
        ..ColumnDescriptor::default()
    }
}

fn create(c: &mut Client, table: &[u8], families: Vec<ColumnDescriptor>) -> Result<Reply, String> {
    c.call(&Call::CreateTable {
        table: Bytes::copy_from_slice(table),
        families,
    })
    .map_err(|e| format!("{e:?}"))
}

fn put(column: &str, value: &str) -> Mutation {
    Mutation {
        column: b(column),
        value: Some(b(value)),
        write_to_wal: true,
        ..Mutation::default()
    }
}

fn mutate(
    c: &mut Client,
    table: &str,
    row: &str,
    mutations: Vec<Mutation>,
) -> Result<Reply, String> {
    c.call(&Call::MutateRows {
        table: b(table),
        batches: vec![BatchMutation {
            row: b(row),
            mutations,
        }],
        timestamp: None,
    })
    .map_err(|e| format!("{e:?}"))
}

/// A refusal the method declares: `IllegalArgument` or `IOError`, naming `says`.
fn refused(result: Result<Reply, String>, what: &str, says: &str) {
    let err = result.expect_err(what);
    assert!(
        (err.contains("IllegalArgument") || err.contains("Io")) && err.contains(says),
        "{what}: {err}"
    );
}

fn value(c: &mut Client, table: &str, row: &str, column: &str) -> Option<Bytes> {
    match c
        .call(&Call::GetVersions {
            table: b(table),
            row: b(row),
            column: b(column),
            timestamp: None,
            versions: 1,
        })
        .expect("get")
    {
        Reply::Cells(cells) => cells.first().map(|c| c.value.clone()),
        other => panic!("{other:?}"),
    }
}

#[test]
fn hostile_names_and_writes_leave_every_table_and_acknowledged_row_after_a_kill() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (port, config) = write_config(dir.path(), "");
    let mut server = start(&config);
    let mut c = connect(port);
    create(&mut c, b"t", vec![family("cf:")]).expect("create t");
    create(&mut c, b"u", vec![family("cf:"), family("other:")]).expect("create u");
    mutate(&mut c, "t", "r1", vec![put("cf:a", "t1")]).expect("put");
    mutate(&mut c, "u", "r1", vec![put("cf:a", "u1")]).expect("put");

    for name in [
        &b".."[..],
        b".",
        b"../x",
        b"a/b",
        b"/etc",
        b"-x",
        b"ns:t",
        b"a b",
        b"",
    ] {
        refused(
            create(&mut c, name, vec![family("cf:")]),
            &format!("{name:?}"),
            "table name",
        );
    }
    refused(
        create(&mut c, "x".repeat(256).as_bytes(), vec![family("cf:")]),
        "overlong",
        "255",
    );
    for bad in ["..:", "a/b:", ".hidden:", "recovered.edits:"] {
        refused(
            create(&mut c, b"v", vec![family(bad)]),
            bad,
            "column family",
        );
    }
    refused(
        create(&mut c, b"v", vec![family("cf:"), family("cf:")]),
        "duplicate families",
        "named twice",
    );
    refused(
        create(&mut c, b"v", (0..100_000).map(|_| family("cf:")).collect()),
        "a flood of families",
        "at most 256",
    );
    // Disabling or deleting a name that would be a path finds no table, and touches nothing.
    for call in [
        Call::DisableTable { table: b("..") },
        Call::DeleteTable { table: b("..") },
        Call::DeleteTable { table: b(".") },
    ] {
        assert!(c.call(&call).is_err(), "{call:?}");
    }

    // Writes to a family the table does not have, through every write method.
    refused(
        mutate(&mut c, "t", "r2", vec![put("nosuchfamily:q", "x")]),
        "mutateRows",
        "no column family",
    );
    refused(
        c.call(&Call::MutateRows {
            table: b("t"),
            batches: vec![BatchMutation {
                row: b("r2"),
                mutations: vec![put("nosuchfamily:q", "x")],
            }],
            timestamp: Some(5),
        })
        .map_err(|e| format!("{e:?}")),
        "mutateRowsTs",
        "no column family",
    );
    refused(
        c.call(&Call::CheckAndPut {
            table: b("t"),
            row: b("r3"),
            column: b("cf:a"),
            value: None,
            mutation: put("nosuchfamily:q", "x"),
        })
        .map_err(|e| format!("{e:?}")),
        "checkAndPut",
        "no column family",
    );
    refused(
        c.call(&Call::AtomicIncrement {
            table: b("t"),
            row: b("r4"),
            column: b("nosuchfamily:n"),
            amount: 1,
        })
        .map_err(|e| format!("{e:?}")),
        "atomicIncrement",
        "no column family",
    );
    refused(
        c.call(&Call::IncrementRows {
            increments: vec![TIncrement {
                table: b("t"),
                row: b("r5"),
                column: b("nosuchfamily:n"),
                amount: 1,
            }],
        })
        .map_err(|e| format!("{e:?}")),
        "increment(s)",
        "no column family",
    );
    refused(
        c.call(&Call::Append {
            append: TAppend {
                table: b("t"),
                row: b("r6"),
                columns: vec![b("nosuchfamily:q")],
                values: vec![b("x")],
            },
        })
        .map_err(|e| format!("{e:?}")),
        "append",
        "no column family",
    );
    refused(
        c.call(&Call::DeleteAll {
            table: b("t"),
            row: b("r1"),
            column: Some(b("nosuchfamily:q")),
            timestamp: None,
        })
        .map_err(|e| format!("{e:?}")),
        "deleteAll",
        "no column family",
    );
    // A batch with one bad row: the good rows of the call still land, as HBase's do.
    let mixed = c.call(&Call::MutateRows {
        table: b("t"),
        batches: vec![
            BatchMutation {
                row: b("good"),
                mutations: vec![put("cf:a", "kept")],
            },
            BatchMutation {
                row: b("bad"),
                mutations: vec![put("nosuchfamily:q", "x")],
            },
        ],
        timestamp: None,
    });
    assert!(
        matches!(&mixed, Err(e) if format!("{e:?}").contains("no column family")),
        "{mixed:?}"
    );
    mutate(&mut c, "t", "r7", vec![put("cf:a", "after")]).expect("the table still takes writes");

    server.0.kill().expect("SIGKILL");
    server.0.wait().expect("reaped");
    let _server = start(&config);
    let mut c = connect(port);
    match c.call(&Call::GetTableNames).expect("tables") {
        Reply::Names(names) => assert_eq!(names, vec![b("t"), b("u")]),
        other => panic!("{other:?}"),
    }
    assert_eq!(value(&mut c, "t", "r1", "cf:a"), Some(b("t1")));
    assert_eq!(value(&mut c, "u", "r1", "cf:a"), Some(b("u1")));
    assert_eq!(value(&mut c, "t", "r7", "cf:a"), Some(b("after")));
    assert_eq!(value(&mut c, "t", "good", "cf:a"), Some(b("kept")));
    assert_eq!(value(&mut c, "t", "r3", "cf:a"), None);
    mutate(&mut c, "u", "r2", vec![put("other:b", "v")]).expect("and writes");
}

#[test]
fn a_region_that_cannot_open_is_reported_and_the_others_serve() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (port, config) = write_config(dir.path(), "");
    let mut server = start(&config);
    let mut c = connect(port);
    create(&mut c, b"good", vec![family("cf:")]).expect("create");
    create(&mut c, b"broken", vec![family("cf:")]).expect("create");
    mutate(&mut c, "good", "r", vec![put("cf:a", "v")]).expect("put");
    server.0.kill().expect("SIGKILL");
    server.0.wait().expect("reaped");
    let manifest = dir
        .path()
        .join("data")
        .join("data")
        .join(format!("{:020}", 2))
        .join("MANIFEST");
    std::fs::write(&manifest, b"not a manifest").expect("damage");
    let _server = start(&config);
    let mut c = connect(port);
    assert_eq!(value(&mut c, "good", "r", "cf:a"), Some(b("v")));
    match c.call(&Call::GetVersions {
        table: b("broken"),
        row: b("r"),
        column: b("cf:a"),
        timestamp: None,
        versions: 1,
    }) {
        Err(keel_thrift::ClientError::Hbase(HbaseError::Io { message, .. })) => {
            assert!(message.contains("failed to open"), "{message}");
        }
        other => panic!("expected an IOError, got {other:?}"),
    }
}
