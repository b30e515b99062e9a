//! The status port (default `127.0.0.1:9095`): what HBase operators find in the region
//! server's web UI and its JMX metrics, in the formats their tools read.
//! - `/metrics`: Prometheus text format (`status/prometheus.rs`).
//! - `/`: an HTML status page (`status/page.rs`), no scripts or external assets.
//! - `/status.json`: the same data for scripts ([`Snapshot`]).
//!
//! It runs on its own threads (one serving HTTP with `tiny_http`, one sampling the history), and
//! reads only counters and snapshots, so a slow scrape never delays a call. It answers `GET`
//! (and `HEAD`) on those three paths and nothing else — no files are ever served — and binds
//! loopback unless told otherwise.

mod history;
mod page;
mod prometheus;
mod snapshot;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub use history::Sample;
use keel_region::RegionServer;
pub use snapshot::Snapshot;

use crate::NetObserver;

/// Where the status port listens and how much history it keeps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusOptions {
    /// Where to listen (`127.0.0.1:9095`; `keel.status.listen`, `--status-listen`). HBase's
    /// region server UI is on 16030; 9095 sits beside the Thrift port, 9090, as the HBase Thrift
    /// server's own info port does.
    pub listen: SocketAddr,
    /// How often throughput and p99 are sampled for the page (5 s).
    pub sample_interval: Duration,
    /// Samples kept (120: ten minutes at 5 s).
    pub samples: usize,
}

impl Default for StatusOptions {
    fn default() -> StatusOptions {
        StatusOptions {
            listen: SocketAddr::from(([127, 0, 0, 1], 9095)),
            sample_interval: history::DEFAULT_INTERVAL,
            samples: history::DEFAULT_SAMPLES,
        }
    }
}

struct Sources {
    store: Arc<RegionServer>,
    net: NetObserver,
    history: history::History,
    started: Instant,
}

impl Sources {
    fn snapshot(&self) -> Snapshot {
        snapshot::collect(
            &self.store,
            &self.net,
            self.started.elapsed(),
            self.history.samples(),
        )
    }
}

/// A running status port.
pub struct StatusServer {
    local: SocketAddr,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
    sources: Arc<Sources>,
}

impl std::fmt::Debug for StatusServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StatusServer")
            .field("local", &self.local)
            .finish_non_exhaustive()
    }
}

impl StatusServer {
    /// Binds `options.listen` and serves the store's and the network side's status.
    pub fn start(
        store: Arc<RegionServer>,
        net: NetObserver,
        options: &StatusOptions,
    ) -> std::io::Result<StatusServer> {
        let http = tiny_http::Server::http(options.listen).map_err(std::io::Error::other)?;
        let local = http
            .server_addr()
            .to_ip()
            .ok_or_else(|| std::io::Error::other("the status port is not an IP socket"))?;
        let sources = Arc::new(Sources {
            store,
            net,
            history: history::History::new(options.samples),
            started: Instant::now(),
        });
        let stop = Arc::new(AtomicBool::new(false));
        let serving = {
            let (sources, stop) = (Arc::clone(&sources), Arc::clone(&stop));
            std::thread::Builder::new()
                .name("keel-status-http".into())
                .spawn(move || serve(&http, &sources, &stop))?
        };
        let sampling = {
            let (sources, stop) = (Arc::clone(&sources), Arc::clone(&stop));
            let interval = options.sample_interval;
            std::thread::Builder::new()
                .name("keel-status-sampler".into())
                .spawn(move || {
                    while !stop.load(Ordering::Acquire) {
                        sources.history.sample(&sources.net, sources.started);
                        sleep_unless_stopped(interval, &stop);
                    }
                })?
        };
        Ok(StatusServer {
            local,
            stop,
            threads: vec![serving, sampling],
            sources,
        })
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// What `/status.json` would show now.
    pub fn snapshot(&self) -> Snapshot {
        self.sources.snapshot()
    }

    /// Stops serving and joins its threads.
    pub fn shutdown(mut self) {
        self.stop_now();
    }

    fn stop_now(&mut self) {
        self.stop.store(true, Ordering::Release);
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

impl Drop for StatusServer {
    fn drop(&mut self) {
        self.stop_now();
    }
}

fn sleep_unless_stopped(total: Duration, stop: &AtomicBool) {
    let until = Instant::now() + total;
    while !stop.load(Ordering::Acquire) {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return;
        }
        std::thread::sleep(left.min(Duration::from_millis(50)));
    }
}

fn header(name: &str, value: &str) -> tiny_http::Header {
    // Both are ASCII literals chosen here, which tiny_http always accepts.
    tiny_http::Header::from_bytes(name.as_bytes(), value.as_bytes())
        .unwrap_or_else(|()| unreachable!("a valid header: {name}"))
}

/// A response: status, content type, body.
fn respond(
    request: &tiny_http::Request,
    sources: &Sources,
) -> (u16, &'static str, String, Option<tiny_http::Header>) {
    let method = request.method();
    if !matches!(method, tiny_http::Method::Get | tiny_http::Method::Head) {
        return (
            405,
            "text/plain; charset=utf-8",
            "only GET is served here\n".into(),
            Some(header("Allow", "GET, HEAD")),
        );
    }
    let path = request.url().split(['?', '#']).next().unwrap_or("");
    match path {
        "/" => (
            200,
            "text/html; charset=utf-8",
            page::render(&sources.snapshot()),
            None,
        ),
        "/metrics" => (
            200,
            "text/plain; version=0.0.4; charset=utf-8",
            prometheus::render(&sources.snapshot(), &sources.net.rpc()),
            None,
        ),
        "/status.json" => (
            200,
            "application/json",
            serde_json::to_string_pretty(&sources.snapshot())
                .unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}")),
            None,
        ),
        _ => (
            404,
            "text/plain; charset=utf-8",
            "not found: this port serves /, /metrics and /status.json\n".into(),
            None,
        ),
    }
}

fn serve(http: &tiny_http::Server, sources: &Sources, stop: &AtomicBool) {
    while !stop.load(Ordering::Acquire) {
        let request = match http.recv_timeout(Duration::from_millis(100)) {
            Ok(Some(request)) => request,
            Ok(None) => continue,
            Err(_) => return,
        };
        let (status, content_type, body, extra) = respond(&request, sources);
        let mut response = tiny_http::Response::from_string(body)
            .with_status_code(status)
            .with_header(header("Content-Type", content_type))
            .with_header(header("Cache-Control", "no-store"))
            .with_header(header("X-Content-Type-Options", "nosniff"));
        if let Some(extra) = extra {
            response = response.with_header(extra);
        }
        // A client that went away mid-response is its own problem.
        let _ = request.respond(response);
    }
}
