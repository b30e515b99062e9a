//! The status port (default `127.0.0.1:9095`): what HBase operators find in the region
//! server's web UI and its JMX metrics, in the formats their tools read.
//! - `/metrics`: Prometheus text format (`status/prometheus.rs`).
//! - `/`: an HTML status page (`status/page.rs`), no scripts or external assets.
//! - `/status.json`: the same data for scripts ([`Snapshot`]).
//!
//! It never shares fate with the data port. It runs on two threads of its own — one sampling the
//! history, one serving HTTP with hyper on a single-threaded tokio runtime — and reads only
//! counters and snapshots, so a slow scrape never delays a call. Its limits hold whatever a
//! client does: at most `max_connections` at once (more are closed at accept, never queued),
//! a request head of at most 8 KiB (hyper's smallest read buffer; longer is a 431 and a close),
//! `header_timeout` for the head to arrive (a client streaming a header line without end is
//! closed), and `connection_timeout` for a whole connection, reply included. So neither a
//! slowloris, nor many idle clients, nor a huge header can take memory, threads or handlers
//! from the Thrift service. hyper is the HTTP stack because it is the well-kept one with these
//! limits built in, and one thread serving every connection bounds better than a thread per
//! connection (`tiny_http`, before: no header limit, no timeouts, a thread each). It answers
//! `GET` (and `HEAD`) on those three paths and nothing else — no files are ever served — and
//! binds loopback unless told otherwise.

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
use keel_region::Engine;
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
    /// Connections served at once (32); more are closed at accept.
    pub max_connections: usize,
    /// How long a request's head may take to arrive (5 s).
    pub header_timeout: Duration,
    /// How long one connection may last, its replies included (10 s).
    pub connection_timeout: Duration,
}

impl Default for StatusOptions {
    fn default() -> StatusOptions {
        StatusOptions {
            listen: SocketAddr::from(([127, 0, 0, 1], 9095)),
            sample_interval: history::DEFAULT_INTERVAL,
            samples: history::DEFAULT_SAMPLES,
            max_connections: 32,
            header_timeout: Duration::from_secs(5),
            connection_timeout: Duration::from_secs(10),
        }
    }
}

struct Sources {
    store: Arc<Engine>,
    /// The status port listens on a loopback address: admin operations are served.
    loopback: bool,
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
    /// Ends the HTTP thread's accept loop.
    stop_http: Option<tokio::sync::oneshot::Sender<()>>,
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
    /// Binds `options.listen` and serves the store's and the network side's status: `GET /`,
    /// `/metrics` and `/status.json`; and, on a loopback address only, the admin operations
    /// `POST /admin/split?table=T&region=ID[&at=ROW]` and `POST /admin/merge?table=T&a=ID&b=ID`
    /// (row keys percent-encoded).
    pub fn start(
        store: Arc<Engine>,
        net: NetObserver,
        options: &StatusOptions,
    ) -> std::io::Result<StatusServer> {
        let listener = std::net::TcpListener::bind(options.listen)?;
        listener.set_nonblocking(true)?;
        let local = listener.local_addr()?;
        let sources = Arc::new(Sources {
            store,
            loopback: local.ip().is_loopback(),
            net,
            history: history::History::new(options.samples),
            started: Instant::now(),
        });
        let stop = Arc::new(AtomicBool::new(false));
        let (stop_http, stopped) = tokio::sync::oneshot::channel();
        let serving = {
            let sources = Arc::clone(&sources);
            let limits = Limits::from(options);
            std::thread::Builder::new()
                .name("keel-status-http".into())
                .spawn(move || serve(listener, sources, limits, stopped))?
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
            stop_http: Some(stop_http),
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
        if let Some(stop_http) = self.stop_http.take() {
            let _ = stop_http.send(());
        }
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

/// The HTTP side's limits.
#[derive(Debug, Clone, Copy)]
struct Limits {
    max_connections: usize,
    header_timeout: Duration,
    connection_timeout: Duration,
}

impl From<&StatusOptions> for Limits {
    fn from(options: &StatusOptions) -> Limits {
        Limits {
            max_connections: options.max_connections.max(1),
            header_timeout: options.header_timeout,
            connection_timeout: options.connection_timeout,
        }
    }
}

/// `%XX`-decoded bytes of a query value (`+` is a space).
fn percent_decode(text: &str) -> Option<Vec<u8>> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    Some(out)
}

/// An admin operation (`POST /admin/split` or `/admin/merge`), answered as text.
fn admin(path: &str, query: &str, sources: &Sources) -> (u16, &'static str, String) {
    let text = "text/plain; charset=utf-8";
    if !sources.loopback {
        return (
            403,
            text,
            "admin operations are served only on a loopback status address\n".into(),
        );
    }
    let mut args = std::collections::HashMap::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let Some(v) = percent_decode(v) else {
            return (400, text, format!("bad percent-encoding in {k}\n"));
        };
        args.insert(k.to_string(), v);
    }
    let utf8 = |k: &str| args.get(k).map(|v| String::from_utf8_lossy(v).into_owned());
    let id = |k: &str| utf8(k).and_then(|v| v.parse::<u64>().ok());
    let Some(table) = utf8("table") else {
        return (400, text, "table= is needed\n".into());
    };
    let result = match path {
        "/admin/split" => {
            let Some(region) = id("region") else {
                return (400, text, "region=<id> is needed\n".into());
            };
            let at = args.get("at").cloned().map(bytes::Bytes::from);
            sources
                .store
                .split_region(&table, region, at)
                .map(|[a, b]| {
                    format!(
                        "split {table} region {region} into {} [{}, {}) and {} [{}, {})\n",
                        a.id,
                        keel_cell::escape_bytes(&a.start_key),
                        keel_cell::escape_bytes(&a.end_key),
                        b.id,
                        keel_cell::escape_bytes(&b.start_key),
                        keel_cell::escape_bytes(&b.end_key)
                    )
                })
        }
        "/admin/merge" => {
            let (Some(a), Some(b)) = (id("a"), id("b")) else {
                return (400, text, "a=<id>&b=<id> are needed\n".into());
            };
            sources.store.merge_regions(&table, a, b).map(|m| {
                format!(
                    "merged {table} regions {a} and {b} into {} [{}, {})\n",
                    m.id,
                    keel_cell::escape_bytes(&m.start_key),
                    keel_cell::escape_bytes(&m.end_key)
                )
            })
        }
        _ => {
            return (
                404,
                text,
                "admin operations: POST /admin/split, POST /admin/merge\n".into(),
            );
        }
    };
    match result {
        Ok(done) => (200, text, done),
        Err(e) => (409, text, format!("{e}\n")),
    }
}

/// A response: status, content type, body, and an `Allow` header for a refused method.
fn respond(
    method: &hyper::Method,
    path: &str,
    query: &str,
    sources: &Sources,
) -> (u16, &'static str, String) {
    if *method == hyper::Method::POST && path.starts_with("/admin/") {
        return admin(path, query, sources);
    }
    if !matches!(*method, hyper::Method::GET | hyper::Method::HEAD) {
        return (
            405,
            "text/plain; charset=utf-8",
            "only GET is served here\n".into(),
        );
    }
    match path {
        "/" => (
            200,
            "text/html; charset=utf-8",
            page::render(&sources.snapshot()),
        ),
        "/metrics" => (
            200,
            "text/plain; version=0.0.4; charset=utf-8",
            prometheus::render(&sources.snapshot(), &sources.net.rpc()),
        ),
        "/status.json" => (
            200,
            "application/json",
            serde_json::to_string_pretty(&sources.snapshot())
                .unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}")),
        ),
        _ => (
            404,
            "text/plain; charset=utf-8",
            "not found: this port serves /, /metrics and /status.json\n".into(),
        ),
    }
}

type Body = http_body_util::Full<bytes::Bytes>;

fn response(
    request: &hyper::Request<hyper::body::Incoming>,
    sources: &Sources,
) -> hyper::Response<Body> {
    let (status, content_type, body) = respond(
        request.method(),
        request.uri().path(),
        request.uri().query().unwrap_or(""),
        sources,
    );
    let mut response = hyper::Response::new(Body::from(body));
    *response.status_mut() =
        hyper::StatusCode::from_u16(status).unwrap_or(hyper::StatusCode::INTERNAL_SERVER_ERROR);
    let headers = response.headers_mut();
    let static_value = hyper::header::HeaderValue::from_static;
    headers.insert(hyper::header::CONTENT_TYPE, static_value(content_type));
    headers.insert(hyper::header::CACHE_CONTROL, static_value("no-store"));
    headers.insert(
        hyper::header::X_CONTENT_TYPE_OPTIONS,
        static_value("nosniff"),
    );
    if status == 405 {
        headers.insert(hyper::header::ALLOW, static_value("GET, HEAD"));
    }
    response
}

/// The HTTP thread: a single-threaded runtime serving every connection, within `limits`, until
/// `stopped` fires.
fn serve(
    listener: std::net::TcpListener,
    sources: Arc<Sources>,
    limits: Limits,
    mut stopped: tokio::sync::oneshot::Receiver<()>,
) {
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
    else {
        return;
    };
    runtime.block_on(async move {
        let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
            return;
        };
        let permits = Arc::new(tokio::sync::Semaphore::new(limits.max_connections));
        loop {
            let accepted = tokio::select! {
                _ = &mut stopped => return,
                accepted = listener.accept() => accepted,
            };
            let Ok((stream, _)) = accepted else {
                continue;
            };
            // Over the limit: closed at once, never queued.
            let Ok(permit) = Arc::clone(&permits).try_acquire_owned() else {
                drop(stream);
                continue;
            };
            let sources = Arc::clone(&sources);
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |request| {
                    let response = response(&request, &sources);
                    async move { Ok::<_, std::convert::Infallible>(response) }
                });
                let connection = hyper::server::conn::http1::Builder::new()
                    .timer(hyper_util::rt::TokioTimer::new())
                    .header_read_timeout(limits.header_timeout)
                    .max_buf_size(8192)
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service);
                let _ = tokio::time::timeout(limits.connection_timeout, connection).await;
                drop(permit);
            });
        }
    });
}
