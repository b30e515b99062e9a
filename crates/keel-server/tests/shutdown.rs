//! `keel serve` stops gracefully on SIGTERM: calls in flight are answered, memstores are
//! flushed — so even writes acknowledged without the WAL (`writeToWAL=false`) survive a
//! restart — and the process exits 0. It also reads its settings from a `keel.toml`. And a
//! SIGKILL under a happybase-style write load loses no acknowledged write.

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::{b, connect, start, write_config};
use keel_thrift::Client;
use keel_thrift::hbase::{BatchMutation, Call, ColumnDescriptor, Mutation, Reply};
use keel_thrift::transport::{Protocol, Transport};

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

#[test]
fn sigterm_finishes_flushes_and_a_restart_finds_every_write() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (port, config) = write_config(dir.path(), "\"hbase.regionserver.handler.count\" = 4\n");
    let mut server = start(&config);
    let mut c = connect(port);
    create_table(&mut c);
    for i in 0..100 {
        c.call(&Call::MutateRows {
            table: b("t"),
            batches: vec![BatchMutation {
                row: b(&format!("r{i:03}")),
                mutations: vec![Mutation {
                    column: b("cf:v"),
                    value: Some(b("v")),
                    write_to_wal: false,
                    ..Mutation::default()
                }],
            }],
            timestamp: None,
        })
        .expect("put without the WAL");
    }
    let status = Command::new("kill")
        .args(["-TERM", &server.0.id().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    let deadline = Instant::now() + Duration::from_secs(30);
    let exit = loop {
        if let Some(exit) = server.0.try_wait().expect("wait") {
            break exit;
        }
        assert!(Instant::now() < deadline, "keel serve did not stop");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(exit.success(), "exit {exit:?}");
    // The restart finds every write, though none was logged.
    let _server = start(&config);
    let mut c = connect(port);
    let rows: Vec<Bytes> = (0..100).map(|i| b(&format!("r{i:03}"))).collect();
    match c
        .call(&Call::GetRows {
            table: b("t"),
            rows,
            columns: None,
            timestamp: None,
        })
        .expect("get")
    {
        Reply::Rows(found) => assert_eq!(found.len(), 100),
        other => panic!("{other:?}"),
    }
}

/// What one writer had acknowledged when the server died.
#[derive(Default)]
struct Acknowledged {
    /// (row, value) of every acknowledged put.
    puts: Vec<(Bytes, Bytes)>,
    /// Acknowledged increments of this writer's counter.
    increments: i64,
}

fn write_until_refused(port: u16, writer: usize) -> Acknowledged {
    let mut acked = Acknowledged::default();
    let Ok(mut c) = Client::connect(("127.0.0.1", port), Transport::Framed, Protocol::Binary)
    else {
        return acked;
    };
    for n in 0.. {
        // happybase's batch(): two rows per mutateRows, three columns each.
        let rows: Vec<(Bytes, Bytes)> = (0..2)
            .map(|k| {
                (
                    b(&format!("w{writer}-{n:06}-{k}")),
                    b(&format!("value {writer}/{n}/{k}")),
                )
            })
            .collect();
        let put = Call::MutateRows {
            table: b("t"),
            batches: rows
                .iter()
                .map(|(row, value)| BatchMutation {
                    row: row.clone(),
                    mutations: ["cf:a", "cf:b", "cf:c"]
                        .iter()
                        .map(|column| Mutation {
                            column: b(column),
                            value: Some(value.clone()),
                            ..Mutation::default()
                        })
                        .collect(),
                })
                .collect(),
            timestamp: None,
        };
        if c.call(&put).is_err() {
            return acked;
        }
        acked.puts.extend(rows);
        let increment = Call::AtomicIncrement {
            table: b("t"),
            row: b("counters"),
            column: b(&format!("cf:w{writer}")),
            amount: 1,
        };
        if c.call(&increment).is_err() {
            return acked;
        }
        acked.increments += 1;
    }
    acked
}

#[test]
fn sigkill_under_a_write_load_loses_no_acknowledged_write() {
    let regions = sigkill_under_load("", Duration::from_millis(1500));
    assert_eq!(regions, 1, "no split was asked for");
}

/// The same kill, with flushes and splits running under the load: a flush every 64 KiB and
/// a split once a region's store passes 128 KiB, so the kill can land mid-flush, mid-split
/// or mid-compaction of daughters. Every acknowledged write is still found, once.
#[test]
fn sigkill_while_regions_split_under_load_loses_no_acknowledged_write() {
    let regions = sigkill_under_load(
        "\"hbase.hregion.memstore.flush.size\" = 65536\n\"hbase.hregion.max.filesize\" = 262144\n",
        Duration::from_millis(4000),
    );
    assert!(regions > 1, "the load split the table ({regions} regions)");
}

/// Runs eight happybase-style writers against `keel serve` with `extra` settings for `load`,
/// SIGKILLs it, restarts it and checks every acknowledged write. Returns the table's region
/// count after the restart.
fn sigkill_under_load(extra: &str, load: Duration) -> usize {
    let dir = tempfile::tempdir().expect("tempdir");
    let (port, config) = write_config(dir.path(), extra);
    let mut server = start(&config);
    let mut c = connect(port);
    create_table(&mut c);
    let writers: Vec<_> = (0..8)
        .map(|w| std::thread::spawn(move || write_until_refused(port, w)))
        .collect();
    std::thread::sleep(load);
    server.0.kill().expect("SIGKILL");
    server.0.wait().expect("reaped");
    let acked: Vec<Acknowledged> = writers
        .into_iter()
        .map(|w| w.join().expect("writer"))
        .collect();
    let total: usize = acked.iter().map(|a| a.puts.len()).sum();
    assert!(total > 100, "the load ran ({total} acknowledged rows)");
    let _server = start(&config);
    let mut c = connect(port);
    for (writer, a) in acked.iter().enumerate() {
        for chunk in a.puts.chunks(200) {
            let reply = c
                .call(&Call::GetRows {
                    table: b("t"),
                    rows: chunk.iter().map(|(row, _)| row.clone()).collect(),
                    columns: None,
                    timestamp: None,
                })
                .expect("get");
            let Reply::Rows(found) = reply else {
                panic!("{reply:?}")
            };
            assert_eq!(
                found.len(),
                chunk.len(),
                "writer {writer}: acknowledged rows lost"
            );
            for (result, (row, value)) in found.iter().zip(chunk) {
                assert_eq!(&result.row, row);
                let columns = result.columns.as_ref().expect("columns");
                assert_eq!(columns.len(), 3, "{row:?}: a row is all or nothing");
                assert!(columns.iter().all(|(_, cell)| cell.value == value));
            }
        }
        // The counter holds every acknowledged increment, and at most the one in flight more.
        let reply = c
            .call(&Call::GetVersions {
                table: b("t"),
                row: b("counters"),
                column: b(&format!("cf:w{writer}")),
                timestamp: None,
                versions: 1,
            })
            .expect("counter");
        let Reply::Cells(cells) = reply else {
            panic!("{reply:?}")
        };
        let value = cells.first().map_or(0, |cell| {
            i64::from_be_bytes(cell.value[..].try_into().expect("an 8-byte counter"))
        });
        assert!(
            value == a.increments || value == a.increments + 1,
            "writer {writer}: counter {value}, acknowledged {}",
            a.increments
        );
    }
    match c
        .call(&Call::GetTableRegions { table: b("t") })
        .expect("regions")
    {
        Reply::Regions(regions) => regions.len(),
        other => panic!("{other:?}"),
    }
}
