//! The status port: `/metrics` parses as Prometheus text while a load runs and its counters
//! move as the load predicts; `/status.json` and `/` show the same store; only GET is served,
//! no path but the three, and loopback is the default.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use keel_region::{Engine, EngineOptions};
use keel_server::{Handler, HandlerOptions, NetOptions, StatusOptions, StatusServer, ThriftServer};
use keel_thrift::Client;
use keel_thrift::hbase::{BatchMutation, Call, ColumnDescriptor, Mutation, TScan};
use keel_thrift::transport::{Protocol, Transport};

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

struct Stack {
    _dir: tempfile::TempDir,
    thrift: ThriftServer,
    status: StatusServer,
}

fn start() -> Stack {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Arc::new(Engine::open(dir.path(), EngineOptions::default()).expect("open"));
    let handler = Arc::new(Handler::new(Arc::clone(&store), HandlerOptions::default()));
    let thrift = ThriftServer::start(
        handler,
        NetOptions {
            listen: "127.0.0.1:0".parse().expect("address"),
            ..NetOptions::default()
        },
    )
    .expect("thrift");
    let status = StatusServer::start(
        store,
        thrift.observer(),
        &StatusOptions {
            listen: "127.0.0.1:0".parse().expect("address"),
            sample_interval: Duration::from_millis(100),
            ..StatusOptions::default()
        },
    )
    .expect("status");
    Stack {
        _dir: dir,
        thrift,
        status,
    }
}

/// One HTTP/1.0 request; returns (status code, headers, body).
fn http(address: SocketAddr, method: &str, path: &str) -> (u16, String, String) {
    let mut socket = TcpStream::connect(address).expect("connect");
    write!(
        socket,
        "{method} {path} HTTP/1.0\r\nHost: localhost\r\n\r\n"
    )
    .expect("request");
    let mut response = String::new();
    socket.read_to_string(&mut response).expect("response");
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    let code = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .expect("a status line");
    (code, head.to_string(), body.to_string())
}

fn metrics(address: SocketAddr) -> prometheus_parse::Scrape {
    let (code, head, body) = http(address, "GET", "/metrics");
    assert_eq!(code, 200);
    assert!(head.contains("text/plain; version=0.0.4"), "{head}");
    let lines = body.lines().map(|l| Ok(l.to_string()));
    prometheus_parse::Scrape::parse(lines).expect("valid Prometheus text")
}

/// The value of `name` whose labels include every pair in `labels` (summed over the rest).
fn value(scrape: &prometheus_parse::Scrape, name: &str, labels: &[(&str, &str)]) -> f64 {
    scrape
        .samples
        .iter()
        .filter(|s| s.metric == name)
        .filter(|s| labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
        .map(|s| match s.value {
            prometheus_parse::Value::Counter(v)
            | prometheus_parse::Value::Gauge(v)
            | prometheus_parse::Value::Untyped(v) => v,
            _ => 0.0,
        })
        .sum()
}

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

fn put(row: &str) -> Call {
    Call::MutateRows {
        table: b("t"),
        batches: vec![BatchMutation {
            row: b(row),
            mutations: vec![Mutation {
                column: b("cf:v"),
                value: Some(b("value")),
                ..Mutation::default()
            }],
        }],
        timestamp: None,
    }
}

#[test]
fn metrics_parse_while_a_load_runs_and_move_as_it_predicts() {
    let stack = start();
    let status = stack.status.local_addr();
    let mut c = Client::connect(
        stack.thrift.local_addr(),
        Transport::Framed,
        Protocol::Binary,
    )
    .expect("connect");
    create_table(&mut c);
    let before = metrics(status);
    let appends_before = value(&before, "keel_wal_appends_total", &[]);
    let writes_before = value(
        &before,
        "keel_region_write_requests_total",
        &[("table", "t")],
    );
    let requests_before = value(&before, "keel_net_requests_total", &[]);
    // N puts, with scrapes racing them from another thread; every scrape must parse.
    const N: usize = 300;
    let thrift = stack.thrift.local_addr();
    std::thread::scope(|s| {
        let load = s.spawn(move || {
            let mut c =
                Client::connect(thrift, Transport::Framed, Protocol::Binary).expect("connect");
            for i in 0..N {
                c.call(&put(&format!("r{i:04}"))).expect("put");
            }
        });
        let mut scrapes = 0;
        while !load.is_finished() || scrapes < 3 {
            let during = metrics(status);
            assert!(value(&during, "keel_wal_appends_total", &[]) >= appends_before);
            scrapes += 1;
        }
        load.join().expect("load");
    });
    let after = metrics(status);
    assert_eq!(
        value(&after, "keel_wal_appends_total", &[]) - appends_before,
        N as f64,
        "N puts → N WAL appends"
    );
    assert_eq!(
        value(
            &after,
            "keel_region_write_requests_total",
            &[("table", "t")]
        ) - writes_before,
        N as f64
    );
    assert_eq!(
        value(&after, "keel_net_requests_total", &[]) - requests_before,
        N as f64
    );
    assert!(value(&after, "keel_region_memstore_bytes", &[("table", "t")]) > 0.0);
    assert!(value(&after, "keel_memstore_bytes", &[]) > 0.0);
    assert!(value(&after, "keel_rpc_dispatched_calls_total", &[]) >= N as f64);
    assert!(value(&after, "keel_bufpool_heap_allocations_total", &[]) >= N as f64);
    assert!(value(&after, "keel_block_cache_capacity_bytes", &[]) > 0.0);
    // The in-flight budget: its limit, and nothing held once the load has been answered.
    assert_eq!(
        value(&after, "keel_net_inflight_limit_bytes", &[]),
        (256u64 << 20) as f64
    );
    assert!(value(&after, "keel_net_inflight_bytes", &[]) >= 0.0);
    assert_eq!(value(&after, "keel_net_refused_busy_total", &[]), 0.0);
    assert_eq!(value(&after, "keel_net_slow_readers_total", &[]), 0.0);
    assert!(value(&after, "process_resident_memory_bytes", &[]) > 0.0);
    assert!(value(&after, "process_open_fds", &[]) > 0.0);
    // The call-time histogram: its count covers the calls, its buckets only grow.
    let buckets: Vec<f64> = after
        .samples
        .iter()
        .filter(|s| s.metric == "keel_rpc_total_call_time_seconds")
        .filter_map(|s| match &s.value {
            prometheus_parse::Value::Histogram(h) => Some(h.iter().map(|b| b.count).collect()),
            _ => None,
        })
        .flat_map(|counts: Vec<f64>| counts.windows(2).map(|w| w[1] - w[0]).collect::<Vec<_>>())
        .collect();
    assert!(!buckets.is_empty(), "the histogram is there");
    assert!(buckets.iter().all(|d| *d >= 0.0), "cumulative buckets");
    // Scanner calls go to the scan class; a scan moves the read counter.
    c.call(&Call::ScannerOpen {
        table: b("t"),
        scan: TScan::default(),
    })
    .expect("open");
    let later = metrics(status);
    assert!(
        value(&later, "keel_region_read_requests_total", &[("table", "t")])
            > value(&after, "keel_region_read_requests_total", &[("table", "t")])
    );
    stack.status.shutdown();
    stack.thrift.shutdown();
}

#[test]
fn json_and_page_show_the_store_and_the_history_fills() {
    let stack = start();
    let status = stack.status.local_addr();
    let mut c = Client::connect(
        stack.thrift.local_addr(),
        Transport::Framed,
        Protocol::Binary,
    )
    .expect("connect");
    create_table(&mut c);
    for i in 0..25 {
        c.call(&put(&format!("r{i}"))).expect("put");
    }
    std::thread::sleep(Duration::from_millis(400));
    let (code, head, body) = http(status, "GET", "/status.json");
    assert_eq!(code, 200);
    assert!(head.contains("application/json"));
    let json: serde_json::Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(json["tables"][0]["name"], "t");
    assert_eq!(json["tables"][0]["regions"][0]["write_requests"], 25);
    assert!(json["wal"]["appends"].as_u64().expect("appends") >= 25);
    assert!(
        json["history"].as_array().expect("history").len() >= 2,
        "the sampler ran: {}",
        json["history"]
    );
    let (code, head, page) = http(status, "GET", "/");
    assert_eq!(code, 200);
    assert!(head.contains("text/html"));
    assert!(page.contains("<tr data-table=\"t\"><td>t</td>"), "{page}");
    assert!(page.contains("<td data-metric=\"write_requests\">25</td>"));
    assert!(page.contains("<svg class=\"spark\""));
    assert!(!page.contains("<script"), "no scripts");
    assert!(
        !page.contains("http://") && !page.contains("https://"),
        "no external assets"
    );
    // HEAD is answered without a body's worth of work mattering; a query string is ignored.
    assert_eq!(http(status, "HEAD", "/metrics").0, 200);
    assert_eq!(http(status, "GET", "/metrics?x=1").0, 200);
    stack.status.shutdown();
    stack.thrift.shutdown();
}

#[test]
fn only_get_on_three_paths_and_loopback_by_default() {
    assert!(StatusOptions::default().listen.ip().is_loopback());
    assert_eq!(StatusOptions::default().listen.port(), 9095);
    let stack = start();
    let status = stack.status.local_addr();
    for method in ["POST", "PUT", "DELETE", "PATCH", "OPTIONS"] {
        let (code, head, _) = http(status, method, "/metrics");
        assert_eq!(code, 405, "{method}");
        // Header names are case-insensitive (hyper writes them lowercase).
        assert!(
            head.to_ascii_lowercase().contains("allow: get, head"),
            "{head}"
        );
    }
    for path in [
        "/../../etc/passwd",
        "/etc/passwd",
        "/metrics/../Cargo.toml",
        "/index.html",
        "/static/x.css",
        "//metrics",
    ] {
        assert_eq!(http(status, "GET", path).0, 404, "{path}");
    }
    stack.status.shutdown();
    stack.thrift.shutdown();
}

/// What an operator must not miss: a poisoned WAL and a table whose region failed to open are a
/// banner on the page, series in `/metrics` and fields in `/status.json`.
#[test]
fn a_poisoned_wal_and_a_failed_table_are_on_the_page_and_in_metrics() {
    use keel_fs::{Fault, FaultFs, FileSystem};
    use keel_region::{Durability, FamilyOptions};
    let faults = Arc::new(FaultFs::new());
    let path = std::path::Path::new("/store");
    {
        let store = Engine::open_on(faults.clone(), path, EngineOptions::default()).expect("open");
        for name in ["ok", "broken"] {
            store
                .create_table(name, vec![FamilyOptions::new("cf")])
                .expect("create");
        }
        store.close().expect("close");
    }
    // Damage table "broken" (region 2), then reopen: it fails alone.
    let manifest = path
        .join("data")
        .join(format!("{:020}", 2))
        .join("MANIFEST");
    let file = faults.create(&manifest).expect("create");
    file.append(b"garbage").expect("write");
    let store =
        Arc::new(Engine::open_on(faults.clone(), path, EngineOptions::default()).expect("open"));
    let table = store.table("ok").expect("ok");
    faults.inject(Fault::fail_sync(1).on_path("wal"));
    let cell = keel_cell::Cell::put("r", "cf", "q", 1, "v").expect("cell");
    assert!(table.mutate(vec![cell], Durability::FsyncWal).is_err());
    assert!(store.wal_poisoned().is_some());
    let handler = Arc::new(Handler::new(Arc::clone(&store), HandlerOptions::default()));
    let thrift = ThriftServer::start(
        handler,
        NetOptions {
            listen: "127.0.0.1:0".parse().expect("address"),
            ..NetOptions::default()
        },
    )
    .expect("thrift");
    let status = StatusServer::start(
        store,
        thrift.observer(),
        &StatusOptions {
            listen: "127.0.0.1:0".parse().expect("address"),
            ..StatusOptions::default()
        },
    )
    .expect("status");
    let (_, _, page) = http(status.local_addr(), "GET", "/");
    assert!(page.contains("id=\"wal-poisoned\""), "no WAL banner");
    assert!(
        page.contains("data-failed-table=\"broken\""),
        "no failed-table banner"
    );
    let scrape = metrics(status.local_addr());
    let gauge = |name: &str, table: Option<&str>| {
        scrape
            .samples
            .iter()
            .find(|s| s.metric == name && table.is_none_or(|t| s.labels.get("table") == Some(t)))
            .map(|s| match s.value {
                prometheus_parse::Value::Gauge(v) => v,
                ref other => panic!("{name}: {other:?}"),
            })
    };
    assert_eq!(gauge("keel_wal_poisoned", None), Some(1.0));
    assert_eq!(gauge("keel_table_failed_open", Some("broken")), Some(1.0));
    assert_eq!(gauge("keel_table_failed_open", Some("ok")), None);
    let (_, _, json) = http(status.local_addr(), "GET", "/status.json");
    let json: serde_json::Value = serde_json::from_str(&json).expect("json");
    assert!(
        json["wal"]["poisoned"]
            .as_str()
            .is_some_and(|c| c.contains("sync"))
    );
    let broken = json["tables"]
        .as_array()
        .expect("tables")
        .iter()
        .find(|t| t["name"] == "broken")
        .expect("broken");
    assert_eq!(broken["state"], "failed_open");
    assert!(
        broken["failure"]
            .as_str()
            .is_some_and(|f| f.contains("MANIFEST"))
    );
    status.shutdown();
    thrift.shutdown();
}

/// The status port's limits (hyper's, on one thread of its own): a header line that never ends
/// is cut off at 8 KiB, a head that never finishes is closed after the header timeout, and
/// connections beyond the cap are closed at accept — while the status page and the Thrift
/// service keep answering.
#[test]
fn the_status_port_bounds_slowloris_huge_headers_and_idle_crowds() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Arc::new(Engine::open(dir.path(), EngineOptions::default()).expect("open"));
    let handler = Arc::new(Handler::new(Arc::clone(&store), HandlerOptions::default()));
    let thrift = ThriftServer::start(
        handler,
        NetOptions {
            listen: "127.0.0.1:0".parse().expect("address"),
            ..NetOptions::default()
        },
    )
    .expect("thrift");
    let status = StatusServer::start(
        store,
        thrift.observer(),
        &StatusOptions {
            listen: "127.0.0.1:0".parse().expect("address"),
            max_connections: 8,
            header_timeout: Duration::from_millis(500),
            ..StatusOptions::default()
        },
    )
    .expect("status");
    let address = status.local_addr();
    // A header line that never ends: cut off long before it could grow.
    let mut huge = TcpStream::connect(address).expect("connect");
    let _ = huge.write_all(b"GET / HTTP/1.1\r\nX-Long: ");
    let mut sent = 0usize;
    let chunk = vec![b'a'; 64 << 10];
    while sent < (64 << 20) {
        if huge.write_all(&chunk).is_err() {
            break;
        }
        sent += chunk.len();
    }
    assert!(
        sent < (64 << 20),
        "the server read {sent} bytes of one header"
    );
    // A crowd of idle connections, and one slowloris trickling a head.
    let idle: Vec<TcpStream> = (0..20)
        .map(|_| TcpStream::connect(address).expect("connect"))
        .collect();
    let mut slow = TcpStream::connect(address).expect("connect");
    let _ = slow.write_all(b"GET /met");
    std::thread::sleep(Duration::from_millis(1200));
    // The head timeout closed them; the page answers again.
    let (code, _, _) = http(address, "GET", "/metrics");
    assert_eq!(code, 200);
    let mut buf = [0u8; 1];
    slow.set_read_timeout(Some(Duration::from_secs(2)))
        .expect("timeout");
    assert!(
        matches!(slow.read(&mut buf), Ok(0) | Err(_)),
        "the slowloris was closed"
    );
    // The Thrift side never noticed.
    let mut c =
        Client::connect(thrift.local_addr(), Transport::Framed, Protocol::Binary).expect("connect");
    assert!(c.call(&Call::GetTableNames).is_ok());
    drop(idle);
    status.shutdown();
    thrift.shutdown();
}
