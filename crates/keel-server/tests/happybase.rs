//! happybase against `keel serve`, the way a Python application uses HBase: `.ci/run` creates a
//! virtual environment with happybase from PyPI and names its Python in
//! `KEEL_HAPPYBASE_PYTHON`; this starts the `keel` binary on a free loopback port with a
//! temporary data directory and runs `happybase_check.py` (tables, puts, gets, scans, batches,
//! counters, deletes, versions, timestamps, filters) over both transports. Without that
//! variable it uses `python3` if it has happybase, and otherwise says why it is skipped — or,
//! under CI (`CI=true`), fails: a skipped test is not a pass.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn python() -> Option<PathBuf> {
    if let Ok(path) = std::env::var("KEEL_HAPPYBASE_PYTHON") {
        return Some(PathBuf::from(path));
    }
    let found = Command::new("python3")
        .args(["-c", "import happybase"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    found.then(|| PathBuf::from("python3"))
}

/// The server process, killed however the test ends (a leaked one would hold the test
/// runner's output open).
struct Running(std::process::Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The README's Python example, pointed at `port`.
fn readme_example(port: u16) -> String {
    let readme =
        std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../README.md"))
            .expect("README.md");
    let start = readme
        .find("```python\n")
        .expect("a python block in the README")
        + 10;
    let end = start + readme[start..].find("```").expect("its end");
    let block = &readme[start..end];
    assert!(
        block.contains("port=9090"),
        "the example names the default port"
    );
    block.replace("port=9090", &format!("port={port}"))
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("address").port()
}

#[test]
fn happybase_works_against_keel_serve() {
    let Some(python) = python() else {
        let why = "no Python with happybase (set KEEL_HAPPYBASE_PYTHON, or `pip install happybase`; .ci/run does)";
        assert!(
            !keel_testkit::under_ci(),
            "{why}: under CI a missing tool fails the test"
        );
        eprintln!("skipped: {why}");
        return;
    };
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/happybase_check.py");
    for (transport, protocol) in [("buffered", "binary"), ("framed", "compact")] {
        let dir = tempfile::tempdir().expect("tempdir");
        let port = free_port();
        let _server = Running(
            Command::new(env!("CARGO_BIN_EXE_keel"))
                .args([
                    "serve",
                    "--listen",
                    &format!("127.0.0.1:{port}"),
                    // Tests run side by side: no fixed status port.
                    "--status-listen",
                    "127.0.0.1:0",
                    // Table `split` is created pre-split into four regions: happybase must see
                    // one table.
                    "--table-regions",
                    "split=keys:g,n,t",
                    "--data-dir",
                ])
                .arg(dir.path())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("keel serve starts"),
        );
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "keel serve never listened");
            std::thread::sleep(Duration::from_millis(20));
        }
        let mut output = Command::new(&python)
            .arg(&script)
            .args([port.to_string().as_str(), transport, protocol])
            .output()
            .expect("python runs");
        if output.status.success() && transport == "buffered" {
            // The README's own example, as a new user would paste it.
            output = Command::new(&python)
                .args(["-c", &readme_example(port)])
                .output()
                .expect("python runs");
            assert!(
                String::from_utf8_lossy(&output.stdout).contains("{b'cf:q': b'value'}"),
                "the README's example printed {:?} ({})",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
        }
        assert!(
            output.status.success(),
            "happybase ({transport}, {protocol}) failed:\n{}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
}
