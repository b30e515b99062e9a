//! The abuse suite's harness: `keel serve` as a child process under resource limits (so a
//! regression that would exhaust memory fails a case instead of taking the machine down), its
//! resident memory sampled from `/proc`, and a well-behaved client's latency before and during
//! each attack.

use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use bytes::Bytes;
use hdrhistogram::Histogram;
use keel_thrift::Client;
use keel_thrift::hbase::{BatchMutation, Call, ColumnDescriptor, Mutation, Reply};
use keel_thrift::transport::{Protocol, Transport};

/// The child's address-space cap (`RLIMIT_AS`): far above what a bounded server reaches with
/// a thousand connection threads' stacks reserved, far below the machine.
pub(crate) const ADDRESS_SPACE_LIMIT: u64 = 8 << 30;
/// Open files for the child (`RLIMIT_NOFILE`): a thousand connections and the store.
pub(crate) const OPEN_FILES: u64 = 8192;

/// The server's settings for the suite: a 64 MiB in-flight budget (so its bound is visible
/// against RSS), replies given 2 s, results of at most 4 MiB per call.
pub(crate) const SETTINGS: &[&str] = &[
    "--max-inflight-bytes",
    "67108864",
    "--reply-timeout-ms",
    "2000",
    "--request-timeout-ms",
    "8000",
    "--max-result-size",
    "4194304",
    "--handler-count",
    "8",
];

/// `keel serve` under `prlimit`, on free ports, with a fresh store.
pub(crate) struct Server {
    child: Child,
    pub(crate) port: u16,
    pub(crate) status_port: u16,
    _dir: tempfile::TempDir,
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("address").port()
}

impl Server {
    /// Starts `keel` (the executable at `exe`) and waits until it serves.
    pub(crate) fn start(exe: &str) -> Server {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = std::fs::File::create(dir.path().join("keel.log")).expect("log file");
        let port = free_port();
        let status_port = free_port();
        let child = Command::new("prlimit")
            .arg(format!("--as={ADDRESS_SPACE_LIMIT}"))
            .arg(format!("--nofile={OPEN_FILES}:{OPEN_FILES}"))
            .arg("--")
            .arg(exe)
            .arg("serve")
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .args(["--status-listen", &format!("127.0.0.1:{status_port}")])
            .arg("--data-dir")
            .arg(dir.path().join("data"))
            .args(SETTINGS)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| {
                panic!("prlimit (util-linux) runs keel serve under resource limits: {e}")
            });
        let mut server = Server {
            child,
            port,
            status_port,
            _dir: dir,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while server.try_client().is_none() {
            if let Some(status) = server.child.try_wait().expect("wait") {
                panic!("keel serve exited at start: {status}");
            }
            assert!(Instant::now() < deadline, "keel serve never listened");
            std::thread::sleep(Duration::from_millis(20));
        }
        server
    }

    fn try_client(&self) -> Option<Client> {
        let mut c = Client::connect(
            ("127.0.0.1", self.port),
            Transport::Framed,
            Protocol::Binary,
        )
        .ok()?;
        c.set_timeout(Some(Duration::from_secs(5))).ok()?;
        Some(c)
    }

    /// A framed binary client whose calls give up after 5 s.
    pub(crate) fn client(&self) -> Client {
        self.try_client().expect("connect")
    }

    /// The last lines the server logged (its stderr), for a report on a failed case.
    pub(crate) fn log_tail(&self, lines: usize) -> String {
        let log = std::fs::read_to_string(self._dir.path().join("keel.log")).unwrap_or_default();
        let all: Vec<&str> = log.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether the process is still running.
    pub(crate) fn alive(&mut self) -> bool {
        self.child.try_wait().expect("wait").is_none()
    }

    /// Creates table `t` (family `cf`) with the victim's row.
    pub(crate) fn create_table(&self) {
        let mut c = self.client();
        c.call(&Call::CreateTable {
            table: b("t"),
            families: vec![ColumnDescriptor {
                name: b("cf:"),
                ..ColumnDescriptor::default()
            }],
        })
        .expect("create");
        put(&mut c, "victim", "cf:v", Bytes::from_static(b"small"));
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

pub(crate) fn put(c: &mut Client, row: &str, column: &str, value: Bytes) {
    c.call(&Call::MutateRows {
        table: b("t"),
        batches: vec![BatchMutation {
            row: b(row),
            mutations: vec![Mutation {
                column: b(column),
                value: Some(value),
                ..Mutation::default()
            }],
        }],
        timestamp: None,
    })
    .expect("put");
}

/// A process's resident memory in MiB, from `/proc/<pid>/status` (`VmRSS`).
pub(crate) fn rss_mib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| {
            rest.trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<f64>()
                .ok()
        })
        .map_or(0.0, |kib| kib / 1024.0)
}

/// Samples a process's RSS every 10 ms and keeps the peak.
pub(crate) struct RssPeak {
    stop: Arc<AtomicBool>,
    peak_kib: Arc<AtomicU64>,
    thread: Option<JoinHandle<()>>,
}

impl RssPeak {
    pub(crate) fn start(pid: u32) -> RssPeak {
        let stop = Arc::new(AtomicBool::new(false));
        let peak_kib = Arc::new(AtomicU64::new(0));
        let thread = {
            let (stop, peak_kib) = (Arc::clone(&stop), Arc::clone(&peak_kib));
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    peak_kib.fetch_max((rss_mib(pid) * 1024.0) as u64, Ordering::Relaxed);
                    std::thread::sleep(Duration::from_millis(10));
                }
            })
        };
        RssPeak {
            stop,
            peak_kib,
            thread: Some(thread),
        }
    }

    /// The peak so far, in MiB.
    pub(crate) fn peak_mib(&self) -> f64 {
        self.peak_kib.load(Ordering::Relaxed) as f64 / 1024.0
    }
}

impl Drop for RssPeak {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// What the well-behaved client saw over one phase.
#[derive(Debug, Clone)]
pub(crate) struct VictimRun {
    /// Calls answered.
    pub(crate) served: u64,
    /// Calls that failed or timed out (it reconnects after each).
    pub(crate) failed: u64,
    /// The answered calls' p99, in microseconds.
    pub(crate) p99_us: u64,
}

/// The well-behaved client: one connection reading the small row `victim` every 2 ms, for
/// `duration`.
pub(crate) fn victim(server: &Server, duration: Duration) -> VictimRun {
    let mut latencies = Histogram::<u64>::new(3).expect("histogram");
    let mut failed = 0;
    let mut client = server.try_client();
    let get = Call::GetRows {
        table: b("t"),
        rows: vec![b("victim")],
        columns: None,
        timestamp: None,
    };
    let began = Instant::now();
    while began.elapsed() < duration {
        let Some(c) = client.as_mut() else {
            failed += 1;
            std::thread::sleep(Duration::from_millis(50));
            client = server.try_client();
            continue;
        };
        let start = Instant::now();
        match c.call(&get) {
            Ok(Reply::Rows(rows)) if rows.len() == 1 => {
                latencies.saturating_record(start.elapsed().as_micros() as u64);
            }
            _ => {
                failed += 1;
                client = server.try_client();
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    VictimRun {
        served: latencies.len(),
        failed,
        p99_us: latencies.value_at_quantile(0.99),
    }
}

/// Raises this process's open-file limit to what the attacks need (up to the hard limit):
/// a thousand sockets at once.
pub(crate) fn raise_open_files() {
    let pid = std::process::id().to_string();
    let hard = Command::new("prlimit")
        .args([
            "--pid",
            &pid,
            "--nofile",
            "--output",
            "HARD",
            "--noheadings",
        ])
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse::<u64>().ok())
        .unwrap_or(OPEN_FILES);
    let want = OPEN_FILES.min(hard);
    let status = Command::new("prlimit")
        .args(["--pid", &pid, &format!("--nofile={want}:{hard}")])
        .status()
        .expect("prlimit (util-linux) sets the open-file limit");
    assert!(status.success(), "prlimit --nofile failed");
}
