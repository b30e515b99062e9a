//! `keel admin split|merge` against a running `keel serve`: the operator splits a region at a
//! row and merges it back through the loopback status port, while Thrift clients see one table
//! throughout; a bad request is refused with the reason.

mod common;

use std::process::{Command, Stdio};

use bytes::Bytes;
use common::{Running, b, connect, create_table, free_port, write_config};
use keel_thrift::hbase::{BatchMutation, Call, Mutation, Reply, TRegionInfo};

fn regions(c: &mut keel_thrift::Client) -> Vec<TRegionInfo> {
    match c
        .call(&Call::GetTableRegions { table: b("t") })
        .expect("regions")
    {
        Reply::Regions(r) => r,
        other => panic!("{other:?}"),
    }
}

fn admin(status: u16, args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_keel"))
        .args(["admin", "--status", &format!("127.0.0.1:{status}")])
        .args(args)
        .output()
        .expect("keel admin runs");
    (
        out.status.success(),
        String::from_utf8_lossy(if out.status.success() {
            &out.stdout
        } else {
            &out.stderr
        })
        .into_owned(),
    )
}

#[test]
fn an_operator_splits_and_merges_a_running_servers_regions() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (port, config) = write_config(dir.path(), "");
    let status = free_port();
    let _server = Running(
        Command::new(env!("CARGO_BIN_EXE_keel"))
            .args([
                "serve",
                "--status-listen",
                &format!("127.0.0.1:{status}"),
                "--config",
            ])
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("keel serve starts"),
    );
    let mut c = connect(port);
    create_table(&mut c, "t");
    let rows: Vec<String> = (0..26).map(|i| format!("{}", (b'a' + i) as char)).collect();
    c.call(&Call::MutateRows {
        table: b("t"),
        batches: rows
            .iter()
            .map(|r| BatchMutation {
                row: b(r),
                mutations: vec![Mutation {
                    column: b("cf:v"),
                    value: Some(b(r)),
                    ..Mutation::default()
                }],
            })
            .collect(),
        timestamp: None,
    })
    .expect("put");
    let id = regions(&mut c)[0].id.to_string();
    let (ok, said) = admin(status, &["split", "t", &id, "m n"]);
    assert!(ok, "{said}");
    assert!(said.contains("split t region"), "{said}");
    let split = regions(&mut c);
    assert_eq!(split.len(), 2);
    assert_eq!(split[1].start_key, Bytes::from_static(b"m n"));
    // The table still reads as one.
    let scanned = match c
        .call(&Call::GetRows {
            table: b("t"),
            rows: rows.iter().map(|r| b(r)).collect(),
            columns: None,
            timestamp: None,
        })
        .expect("get")
    {
        Reply::Rows(r) => r.len(),
        other => panic!("{other:?}"),
    };
    assert_eq!(scanned, 26);
    // Refused: a row outside the region, a region that is not there.
    let (ok, said) = admin(status, &["split", "t", &split[0].id.to_string(), "z"]);
    assert!(!ok && said.contains("cannot split"), "{said}");
    let (ok, said) = admin(status, &["merge", "t", "1", "999"]);
    assert!(!ok, "{said}");
    let (ok, said) = admin(
        status,
        &[
            "merge",
            "t",
            &split[0].id.to_string(),
            &split[1].id.to_string(),
        ],
    );
    assert!(ok, "{said}");
    assert_eq!(regions(&mut c).len(), 1);
}
