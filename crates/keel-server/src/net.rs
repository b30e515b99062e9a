//! The network side: a TCP listener, a reader thread per connection that tells buffered from
//! framed and binary from compact by the first bytes, reads each framed request into a
//! keel-bufpool buffer, decodes it (keel-thrift), classifies it and queues it on keel-rpc's
//! executor — mutations on the write queues, scanner calls on the scan queues, other reads on
//! the read queues, admin calls on the priority pool. The handler that runs a call writes its
//! reply to the socket itself, in request order (`dispatch::Replies`).
//!
//! Threads rather than an event loop, by measurement (`cargo xtask bench server`, part 3): with
//! handlers writing their own replies, a thread per connection served 1.2× the gets per second
//! of a single-thread mio loop at 16 and 64 connections and matched it on puts; the loop had
//! the lower single-connection latency. See `docs/server.md`.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use keel_bufpool::{PoolOptions, RequestPool, Strategy};
use keel_rpc::{Executor, RpcOptions, ShutdownMode};

use crate::Handler;

mod budget;
mod buffered;
mod connection;
mod dispatch;

use connection::serve_connection;
pub use dispatch::call_class;

/// How the server listens and what it accepts.
#[derive(Debug, Clone)]
pub struct NetOptions {
    /// Where to listen (HBase's Thrift port on loopback: 127.0.0.1:9090).
    pub listen: SocketAddr,
    /// Largest request frame (16 MiB); a larger one gets an error reply and the connection is
    /// closed.
    pub max_frame: usize,
    /// Connections served at once; more are refused (closed at once).
    pub max_connections: usize,
    /// A connection idle (between requests) this long is closed. HBase
    /// `hbase.thrift.connection.max-idletime` (10 minutes).
    pub idle_timeout: Duration,
    /// Once a request's first bytes have arrived, the rest must arrive within this time, or the
    /// connection is closed: a client trickling bytes cannot hold a reader forever. HBase
    /// `hbase.thrift.server.socket.read.timeout` (60 s).
    pub request_timeout: Duration,
    /// Bytes in flight across the server (`keel.server.inflight.bytes`, 256 MiB): half for
    /// requests being received (a frame is reserved before its body is read) and decoded calls
    /// (their estimated memory), half for replies not yet written. A request or reply that does
    /// not fit is refused with HBase's `CallQueueTooBigException` wording.
    pub max_inflight_bytes: u64,
    /// Most memory one request may decode to, estimated (`keel-thrift`'s `Limits::max_decoded`;
    /// 4 × the largest frame).
    pub max_decoded: usize,
    /// How long a client has to read a reply; then its connection is closed. A handler never
    /// waits for it: what the socket does not take at once is written by the connection's own
    /// writer (`keel.server.reply.timeout`, 30 s).
    pub reply_timeout: Duration,
    /// The executor's layout (handlers, queues, read and scan shares; HBase's keys).
    pub rpc: RpcOptions,
    /// The request buffer pool's sizes and limits.
    pub pool: PoolOptions,
    /// Which request-buffer design reads requests (`keel.server.request.buffers`; default the
    /// fixed-size pool, as HBase's `hbase.server.allocator.pool.enabled = true`).
    pub buffers: Strategy,
}

impl Default for NetOptions {
    fn default() -> NetOptions {
        NetOptions {
            listen: SocketAddr::from(([127, 0, 0, 1], 9090)),
            max_frame: 16 << 20,
            max_connections: 1000,
            idle_timeout: Duration::from_secs(600),
            request_timeout: Duration::from_secs(60),
            max_inflight_bytes: 256 << 20,
            max_decoded: 64 << 20,
            reply_timeout: Duration::from_secs(30),
            rpc: RpcOptions::default(),
            pool: PoolOptions::default(),
            buffers: Strategy::default(),
        }
    }
}

/// Logs a limit hit at most once per interval (with how many there were since), so a flood
/// of refusals never floods the log.
#[derive(Debug, Default)]
struct LogEvery {
    last_ms: std::sync::atomic::AtomicI64,
    since: AtomicU64,
}

impl LogEvery {
    const INTERVAL_MS: i64 = 10_000;

    /// `Some(hits since the last line)` when a line is due.
    fn due(&self) -> Option<u64> {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        let hits = self.since.fetch_add(1, Ordering::Relaxed) + 1;
        let last = self.last_ms.load(Ordering::Relaxed);
        if now - last < Self::INTERVAL_MS {
            return None;
        }
        if self
            .last_ms
            .compare_exchange(last, now, Ordering::AcqRel, Ordering::Relaxed)
            .is_err()
        {
            return None;
        }
        self.since.fetch_sub(hits, Ordering::Relaxed);
        Some(hits)
    }
}

#[derive(Debug, Default)]
struct LimitLogs {
    connections: LogEvery,
    malformed: LogEvery,
    rejected: LogEvery,
    slow: LogEvery,
    idle: LogEvery,
    busy: LogEvery,
}

/// Counters of the network side.
#[derive(Debug, Default)]
pub struct NetStats {
    /// Connections accepted.
    pub connections: AtomicU64,
    /// Connections refused over the limit.
    pub refused_connections: AtomicU64,
    /// Requests decoded.
    pub requests: AtomicU64,
    /// Requests the executor refused (queue full) or dropped.
    pub rejected: AtomicU64,
    /// Malformed or oversized requests (the connection was closed).
    pub malformed: AtomicU64,
    /// Requests that did not arrive whole within the request timeout (closed).
    pub slow_requests: AtomicU64,
    /// Connections closed after the idle timeout.
    pub idle_closed: AtomicU64,
    /// Requests refused because the in-flight bytes were at their limit (the connection stays).
    pub refused_busy: AtomicU64,
    /// Connections closed because their client did not read a reply within the reply timeout.
    pub slow_readers: AtomicU64,
}

/// Reads a [`ThriftServer`]'s counters: its connections, its executor and its request pool.
#[derive(Clone)]
pub struct NetObserver(Arc<Shared>);

impl std::fmt::Debug for NetObserver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NetObserver").finish_non_exhaustive()
    }
}

impl NetObserver {
    /// The network counters.
    pub fn stats(&self) -> &NetStats {
        &self.0.stats
    }

    /// Connections open now.
    pub fn open_connections(&self) -> usize {
        self.0.open.load(Ordering::Acquire)
    }

    /// The executor's metrics: layout, queue lengths, counters, histograms.
    pub fn rpc(&self) -> keel_rpc::RpcMetrics {
        self.0.executor.metrics()
    }

    /// Which request-buffer design reads requests.
    pub fn buffer_strategy(&self) -> Strategy {
        self.0.pool.strategy()
    }

    /// The request buffer pool's counters.
    pub fn pool_stats(&self) -> keel_bufpool::PoolStats {
        self.0.pool.stats()
    }

    /// The options the server runs with.
    pub fn options(&self) -> &NetOptions {
        &self.0.options
    }

    /// The address it listens on (the bound one: a requested port 0 is resolved).
    pub fn local_addr(&self) -> SocketAddr {
        self.0.local
    }

    /// Bytes of requests and replies in flight now, and the most there may be.
    pub fn inflight_bytes(&self) -> (u64, u64) {
        (
            self.0.budget.used() + self.0.reply_budget.used(),
            self.0.budget.max() + self.0.reply_budget.max(),
        )
    }
}

/// A running server.
pub struct ThriftServer {
    shared: Arc<Shared>,
    local: SocketAddr,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
    executor: Arc<Executor>,
    stats: Arc<NetStats>,
}

impl std::fmt::Debug for ThriftServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ThriftServer")
            .field("local", &self.local)
            .finish_non_exhaustive()
    }
}

struct Shared {
    /// The address the listener is bound to.
    local: SocketAddr,
    logs: LimitLogs,
    /// The open connections' sockets, so a shutdown can close them (a reader blocked in
    /// `read` then returns).
    sockets: keel_sync::Mutex<std::collections::HashMap<u64, TcpStream>>,
    next_connection: AtomicU64,
    handler: Arc<Handler>,
    executor: Arc<Executor>,
    pool: RequestPool,
    /// Requests being received and decoded: half of `max_inflight_bytes`.
    budget: Arc<budget::Budget>,
    /// Replies not yet written: the other half, so clients that do not read cannot starve
    /// requests of room.
    reply_budget: Arc<budget::Budget>,
    options: NetOptions,
    stats: Arc<NetStats>,
    open: AtomicUsize,
    stop: Arc<AtomicBool>,
}

impl ThriftServer {
    /// Binds and starts serving `handler`.
    pub fn start(handler: Arc<Handler>, options: NetOptions) -> std::io::Result<ThriftServer> {
        let listener = TcpListener::bind(options.listen)?;
        let local = listener.local_addr()?;
        listener.set_nonblocking(true)?;
        let executor =
            Arc::new(Executor::new(options.rpc.clone()).map_err(|e| {
                std::io::Error::new(std::io::ErrorKind::InvalidInput, e.to_string())
            })?);
        let stop = Arc::new(AtomicBool::new(false));
        let stats = Arc::new(NetStats::default());
        let shared = Arc::new(Shared {
            local,
            logs: LimitLogs::default(),
            sockets: keel_sync::Mutex::new(std::collections::HashMap::new()),
            // 0 is the handler's embedded caller.
            next_connection: AtomicU64::new(1),
            handler,
            executor: Arc::clone(&executor),
            pool: RequestPool::new(options.buffers, options.pool),
            budget: budget::Budget::new(options.max_inflight_bytes / 2),
            reply_budget: budget::Budget::new(options.max_inflight_bytes / 2),
            options,
            stats: Arc::clone(&stats),
            open: AtomicUsize::new(0),
            stop: Arc::clone(&stop),
        });
        let accepting = Arc::clone(&shared);
        let accept = std::thread::Builder::new()
            .name("keel-accept".to_string())
            .spawn(move || accept_loop(&listener, &accepting))?;
        Ok(ThriftServer {
            shared,
            local,
            stop,
            accept: Some(accept),
            executor,
            stats,
        })
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// The network counters.
    pub fn stats(&self) -> &NetStats {
        &self.stats
    }

    /// The request buffer pool's counters (pooled vs heap allocations, buffers created).
    pub fn pool_stats(&self) -> keel_bufpool::PoolStats {
        self.shared.pool.stats()
    }

    /// A handle that reads the server's counters from another thread (the status port), and
    /// stays valid after a shutdown.
    pub fn observer(&self) -> NetObserver {
        NetObserver(Arc::clone(&self.shared))
    }

    /// The executor (its metrics).
    pub fn executor(&self) -> &Executor {
        &self.executor
    }

    /// Stops accepting, lets the calls in flight finish, and stops the executor.
    pub fn shutdown(mut self) {
        self.stop_now();
    }

    fn stop_now(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
        // Calls already queued run to the end and their replies go out; then every
        // connection is closed.
        self.executor.shutdown(ShutdownMode::Drain);
        for socket in self.shared.sockets.lock().values() {
            let _ = socket.shutdown(std::net::Shutdown::Both);
        }
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while self.shared.open.load(Ordering::Acquire) > 0 && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for ThriftServer {
    fn drop(&mut self) {
        self.stop_now();
    }
}

fn accept_loop(listener: &TcpListener, shared: &Arc<Shared>) {
    while !shared.stop.load(Ordering::Acquire) {
        match listener.accept() {
            Ok((socket, _)) => {
                if shared.open.load(Ordering::Acquire) >= shared.options.max_connections {
                    shared
                        .stats
                        .refused_connections
                        .fetch_add(1, Ordering::Relaxed);
                    if let Some(n) = shared.logs.connections.due() {
                        tracing::warn!(
                            limit = shared.options.max_connections,
                            refused = n,
                            "connection limit reached; refusing connections"
                        );
                    }
                    drop(socket);
                    continue;
                }
                shared.stats.connections.fetch_add(1, Ordering::Relaxed);
                shared.open.fetch_add(1, Ordering::AcqRel);
                let id = shared.next_connection.fetch_add(1, Ordering::Relaxed);
                if let Ok(clone) = socket.try_clone() {
                    shared.sockets.lock().insert(id, clone);
                }
                let conn = Arc::clone(shared);
                let spawned = std::thread::Builder::new()
                    .name("keel-conn".to_string())
                    // Decoding nests at most 64 deep (keel-thrift's limit): a small stack
                    // keeps a thousand connections cheap in address space.
                    .stack_size(512 << 10)
                    .spawn(move || {
                        serve_connection(socket, id, &conn);
                        // Its scanners go with it.
                        conn.handler.close_connection(id);
                        conn.sockets.lock().remove(&id);
                        conn.open.fetch_sub(1, Ordering::AcqRel);
                    });
                if spawned.is_err() {
                    // No thread for it: the connection is dropped with the closure.
                    shared.sockets.lock().remove(&id);
                    shared.open.fetch_sub(1, Ordering::AcqRel);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

const MALFORMED: &str = "a malformed, oversized or non-Thrift request";

/// Counts a malformed request (its connection is closed) and logs it once per interval.
fn malformed(shared: &Shared, what: &str) {
    shared.stats.malformed.fetch_add(1, Ordering::Relaxed);
    if let Some(n) = shared.logs.malformed.due() {
        tracing::warn!(closed = n, "closing connections that sent {what}");
    }
}
