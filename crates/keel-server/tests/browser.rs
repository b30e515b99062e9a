//! The status page in a real browser: headless Chromium loads `/` from a running server and
//! shows its tables and numbers, and a screenshot is saved. (The page has no scripts, which
//! `tests/status.rs` checks; Chromium's `--dump-dom` and `--screenshot` themselves need
//! JavaScript on, so it cannot be turned off here.) `.ci/run` installs
//! Debian's `chromium`; where no Chromium can be found (`KEEL_CHROMIUM`, or `chromium`,
//! `chromium-browser`, `google-chrome` on the PATH) the test says it is skipped, or under CI
//! (`CI=true`) fails.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use keel_region::{Engine, EngineOptions};
use keel_server::{Handler, HandlerOptions, NetOptions, StatusOptions, StatusServer, ThriftServer};
use keel_thrift::Client;
use keel_thrift::hbase::{BatchMutation, Call, ColumnDescriptor, Mutation};
use keel_thrift::transport::{Protocol, Transport};

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

fn chromium() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("KEEL_CHROMIUM") {
        return Some(PathBuf::from(path));
    }
    let paths = std::env::var_os("PATH")?;
    [
        "chromium",
        "chromium-browser",
        "google-chrome",
        "google-chrome-stable",
    ]
    .iter()
    .flat_map(|name| std::env::split_paths(&paths).map(move |dir| dir.join(name)))
    .find(|candidate| candidate.is_file())
}

/// Runs headless Chromium with `args` on `url` (no sandbox: CI runs as root; no background
/// networking: the machine's network is closed), killed after a minute.
fn run_chromium(browser: &Path, profile: &Path, args: &[&str], url: &str) -> Output {
    let child = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(url)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("chromium starts");
    let id = child.id();
    let watchdog = std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(200));
            if !Path::new(&format!("/proc/{id}")).exists() {
                return;
            }
        }
        let _ = Command::new("kill").args(["-9", &id.to_string()]).status();
    });
    let output = child.wait_with_output().expect("chromium ran");
    let _ = watchdog.join();
    output
}

#[test]
fn the_status_page_in_headless_chromium() {
    let Some(browser) = chromium() else {
        let why =
            "no Chromium found (set KEEL_CHROMIUM, or install Debian's chromium; .ci/run does)";
        assert!(
            !keel_testkit::under_ci(),
            "{why}: under CI a missing tool fails the test"
        );
        println!("skipped: {why}");
        return;
    };
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
        Arc::clone(&store),
        thrift.observer(),
        &StatusOptions {
            listen: "127.0.0.1:0".parse().expect("address"),
            sample_interval: Duration::from_millis(150),
            ..StatusOptions::default()
        },
    )
    .expect("status");
    let mut c =
        Client::connect(thrift.local_addr(), Transport::Framed, Protocol::Binary).expect("connect");
    c.call(&Call::CreateTable {
        table: b("users"),
        families: vec![ColumnDescriptor {
            name: b("info:"),
            ..ColumnDescriptor::default()
        }],
    })
    .expect("create");
    // Writes spread over a second, so the sparklines have a shape.
    for i in 0..42 {
        c.call(&Call::MutateRows {
            table: b("users"),
            batches: vec![BatchMutation {
                row: b(&format!("user{i:03}")),
                mutations: vec![Mutation {
                    column: b("info:name"),
                    value: Some(b(&format!("name {i}"))),
                    ..Mutation::default()
                }],
            }],
            timestamp: None,
        })
        .expect("put");
        std::thread::sleep(Duration::from_millis(25));
    }
    store.table("users").expect("users").flush().expect("flush");
    std::thread::sleep(Duration::from_millis(400));
    let url = format!("http://{}/", status.local_addr());
    let profile = tempfile::tempdir().expect("profile");

    let dom = run_chromium(&browser, profile.path(), &["--dump-dom"], &url);
    let dom_text = String::from_utf8_lossy(&dom.stdout);
    assert!(
        dom_text.contains("Keel region server"),
        "Chromium rendered the page: {dom_text}\n{}",
        String::from_utf8_lossy(&dom.stderr)
    );
    assert!(dom_text.contains("<tr data-table=\"users\"><td>users</td>"));
    assert!(dom_text.contains("<td data-metric=\"write_requests\">42</td>"));
    assert!(dom_text.contains(">enabled<"));
    assert!(
        dom_text.contains("<td>1</td>"),
        "one store file after the flush"
    );
    assert!(dom_text.contains("Write-ahead log") && dom_text.contains("Block cache"));
    assert!(
        dom_text.contains("points=\"0.0,"),
        "a sparkline with points"
    );

    let shot = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("status-page.png");
    let _ = std::fs::remove_file(&shot);
    let profile = tempfile::tempdir().expect("a second profile");
    let output = run_chromium(
        &browser,
        profile.path(),
        &[
            &format!("--screenshot={}", shot.display()),
            "--window-size=1200,1500",
            "--hide-scrollbars",
        ],
        &url,
    );
    let png = std::fs::read(&shot).unwrap_or_else(|e| {
        panic!(
            "no screenshot at {} ({e}): {}",
            shot.display(),
            String::from_utf8_lossy(&output.stderr)
        )
    });
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "a PNG");
    assert!(
        png.len() > 20_000,
        "a page's worth of pixels ({} bytes)",
        png.len()
    );
    println!("screenshot: {}", shot.display());
    status.shutdown();
    thrift.shutdown();
}
