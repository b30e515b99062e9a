//! The network side: a TCP listener, a reader thread per connection that tells buffered from
//! framed and binary from compact by the first bytes, reads each framed request into a
//! keel-bufpool buffer, decodes it (keel-thrift), classifies it and queues it on keel-rpc's
//! executor — mutations on the write queues, scanner calls on the scan queues, other reads on
//! the read queues, admin calls on the priority pool — and writes the reply back. Clients such
//! as happybase keep one request in flight per connection, so replies go out in order.

use std::io::{BufWriter, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes};
use keel_bufpool::{BufferPool, PoolOptions};
use keel_rpc::{CallClass, Executor, Failure, RpcOptions, RunInfo, ShutdownMode, Task};
use keel_thrift::hbase::{
    Call, CallError, HbaseError, INTERNAL_ERROR, UNKNOWN_METHOD, decode_call,
    encode_application_exception, encode_reply,
};
use keel_thrift::transport::{Protocol, Transport, detect, frame_len};
use keel_thrift::{BinaryDecoder, BinaryEncoder, CompactDecoder, CompactEncoder, Decoder, Encoder};
use keel_thrift::{Limits, MessageHeader};

use crate::Handler;

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
    /// The executor's layout (handlers, queues, read and scan shares; HBase's keys).
    pub rpc: RpcOptions,
    /// The request buffer pool.
    pub pool: PoolOptions,
}

impl Default for NetOptions {
    fn default() -> NetOptions {
        NetOptions {
            listen: SocketAddr::from(([127, 0, 0, 1], 9090)),
            max_frame: 16 << 20,
            max_connections: 1000,
            idle_timeout: Duration::from_secs(600),
            request_timeout: Duration::from_secs(60),
            rpc: RpcOptions::default(),
            pool: PoolOptions::default(),
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
    logs: LimitLogs,
    /// The open connections' sockets, so a shutdown can close them (a reader blocked in
    /// `read` then returns).
    sockets: parking_lot::Mutex<std::collections::HashMap<u64, TcpStream>>,
    next_connection: AtomicU64,
    handler: Arc<Handler>,
    executor: Arc<Executor>,
    pool: BufferPool,
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
            logs: LimitLogs::default(),
            sockets: parking_lot::Mutex::new(std::collections::HashMap::new()),
            // 0 is the handler's embedded caller.
            next_connection: AtomicU64::new(1),
            handler,
            executor: Arc::clone(&executor),
            pool: BufferPool::new(options.pool),
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
                    .spawn(move || {
                        let _ = serve_connection(socket, id, &conn);
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

fn class_of(call: &Call) -> CallClass {
    match call {
        Call::MutateRows { .. }
        | Call::AtomicIncrement { .. }
        | Call::IncrementRows { .. }
        | Call::Append { .. }
        | Call::DeleteAll { .. }
        | Call::CheckAndPut { .. } => CallClass::Write,
        Call::ScannerOpen { .. } | Call::ScannerGet { .. } | Call::ScannerClose { .. } => {
            CallClass::Scan
        }
        Call::GetRows { .. } | Call::GetVersions { .. } | Call::GetRowOrBefore { .. } => {
            CallClass::Read
        }
        _ => CallClass::Priority,
    }
}

fn encoder(protocol: Protocol) -> Box<dyn Encoder> {
    match protocol {
        Protocol::Binary => Box::new(BinaryEncoder::new()),
        Protocol::Compact => Box::new(CompactEncoder::new()),
    }
}

fn decoder(protocol: Protocol, bytes: Bytes) -> Box<dyn Decoder> {
    match protocol {
        Protocol::Binary => Box::new(BinaryDecoder::new(bytes, Limits::default())),
        Protocol::Compact => Box::new(CompactDecoder::new(bytes, Limits::default())),
    }
}

/// One call on a handler thread: run it, encode the reply, hand it back to the connection.
struct Work {
    connection: u64,
    handler: Arc<Handler>,
    call: Option<Call>,
    header: MessageHeader,
    protocol: Protocol,
    reply: crossbeam_channel::Sender<Vec<u8>>,
}

impl Work {
    fn answer(&mut self, result: &Result<keel_thrift::hbase::Reply, HbaseError>) {
        let mut e = encoder(self.protocol);
        encode_reply(&mut *e, &self.header.name, self.header.seqid, result);
        let _ = self.reply.send(e.take());
    }
}

impl Task for Work {
    fn run(&mut self, _info: &RunInfo) {
        if let Some(call) = self.call.take() {
            let result = self.handler.handle_on(self.connection, call);
            self.answer(&result);
        }
    }

    fn fail(&mut self, failure: Failure) {
        let message = match failure {
            Failure::Panicked(what) => {
                let mut e = encoder(self.protocol);
                encode_application_exception(
                    &mut *e,
                    &self.header.name,
                    self.header.seqid,
                    &format!("internal error: {what}"),
                    INTERNAL_ERROR,
                );
                let _ = self.reply.send(e.take());
                return;
            }
            Failure::TimedOut { waited } => {
                format!("CallDroppedException: waited {waited:?} in the call queue")
            }
            Failure::Dropped { waited } => {
                format!("CallDroppedException: dropped after {waited:?} in an overloaded queue")
            }
            Failure::ShuttingDown => "the server is shutting down".to_string(),
        };
        self.answer(&Err(HbaseError::Io {
            message,
            can_retry: true,
        }));
    }
}

/// A connection's reading side, with its two clocks: between requests the idle timeout; once a
/// request has begun, the rest of it must come within the request timeout.
struct Reader<'a> {
    socket: TcpStream,
    shared: &'a Shared,
    /// When the request being read began (`None` between requests).
    began: Option<Instant>,
    /// The read timeout set on the socket now (changed only when it must be, as it costs a
    /// system call).
    timeout: Duration,
}

impl Reader<'_> {
    /// Reads what has arrived into `buf` (0: the client closed). `mid_request`: bytes of the
    /// current request are already in hand.
    fn read(&mut self, buf: &mut [u8], mid_request: bool) -> std::io::Result<usize> {
        let timeout = if mid_request {
            let began = *self.began.get_or_insert_with(Instant::now);
            match self
                .shared
                .options
                .request_timeout
                .checked_sub(began.elapsed())
            {
                Some(left) if !left.is_zero() => left,
                _ => return Err(self.timed_out(true)),
            }
        } else {
            self.began = None;
            self.shared.options.idle_timeout
        };
        // A re-armed request timeout only ever shrinks; re-arm when it shrank noticeably.
        if timeout != self.timeout
            && (timeout > self.timeout || self.timeout - timeout > Duration::from_millis(10))
        {
            self.socket.set_read_timeout(Some(timeout))?;
            self.timeout = timeout;
        }
        match self.socket.read(buf) {
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                Err(self.timed_out(mid_request))
            }
            other => other,
        }
    }

    /// Counts and (once per interval) logs a timeout; the connection is then closed.
    fn timed_out(&self, mid_request: bool) -> std::io::Error {
        let stats = &self.shared.stats;
        if mid_request {
            stats.slow_requests.fetch_add(1, Ordering::Relaxed);
            if let Some(n) = self.shared.logs.slow.due() {
                tracing::warn!(
                    timeout = ?self.shared.options.request_timeout,
                    closed = n,
                    "closing connections whose request did not arrive in time"
                );
            }
        } else {
            stats.idle_closed.fetch_add(1, Ordering::Relaxed);
            if let Some(n) = self.shared.logs.idle.due() {
                tracing::info!(
                    timeout = ?self.shared.options.idle_timeout,
                    closed = n,
                    "closing idle connections"
                );
            }
        }
        std::io::Error::from(std::io::ErrorKind::TimedOut)
    }
}

fn serve_connection(socket: TcpStream, id: u64, shared: &Shared) -> std::io::Result<()> {
    socket.set_nodelay(true)?;
    socket.set_read_timeout(Some(shared.options.idle_timeout))?;
    let mut reader = Reader {
        socket: socket.try_clone()?,
        shared,
        began: None,
        timeout: shared.options.idle_timeout,
    };
    let mut writer = BufWriter::new(socket);
    let mut pending: Vec<u8> = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    let mut kind: Option<(Transport, Protocol)> = None;
    loop {
        if shared.stop.load(Ordering::Acquire) {
            return Ok(());
        }
        // Which transport and protocol: from the first bytes.
        let (transport, protocol) = match kind {
            Some(k) => k,
            None => match detect(&pending) {
                Ok(Some(k)) => {
                    kind = Some(k);
                    k
                }
                Ok(None) => {
                    let n = reader.read(&mut chunk, !pending.is_empty())?;
                    if n == 0 {
                        return Ok(());
                    }
                    pending.extend_from_slice(&chunk[..n]);
                    continue;
                }
                Err(_) => {
                    malformed(shared, MALFORMED);
                    return Ok(());
                }
            },
        };
        // One whole request.
        let message: Bytes = match transport {
            Transport::Framed => {
                while pending.len() < 4 {
                    let n = reader.read(&mut chunk, !pending.is_empty())?;
                    if n == 0 {
                        return Ok(());
                    }
                    pending.extend_from_slice(&chunk[..n]);
                }
                let len = match frame_len(
                    [pending[0], pending[1], pending[2], pending[3]],
                    shared.options.max_frame,
                ) {
                    Ok(len) => len,
                    Err(e) => {
                        malformed(shared, MALFORMED);
                        let mut out = encoder(protocol);
                        encode_application_exception(
                            &mut *out,
                            "",
                            0,
                            &e.to_string(),
                            INTERNAL_ERROR,
                        );
                        let reply = out.take();
                        writer.write_all(&(reply.len() as u32).to_be_bytes())?;
                        writer.write_all(&reply)?;
                        writer.flush()?;
                        return Ok(());
                    }
                };
                pending.drain(..4);
                // The frame goes into a pooled buffer (HBASE-14490): what is already here,
                // then the rest straight from the socket.
                let mut buf = shared
                    .pool
                    .allocate(len)
                    .map_err(|e| std::io::Error::other(e.to_string()))?;
                let have = pending.len().min(len);
                buf.put_slice(&pending[..have]);
                pending.drain(..have);
                let mut left = len - have;
                while left > 0 {
                    let want = left.min(chunk.len());
                    let n = reader.read(&mut chunk[..want], true)?;
                    if n == 0 {
                        return Ok(());
                    }
                    buf.put_slice(&chunk[..n]);
                    left -= n;
                }
                buf.freeze().into_contiguous()
            }
            Transport::Buffered => {
                // Decode what has arrived; on `Incomplete` read more.
                let bytes = Bytes::from(std::mem::take(&mut pending));
                let mut d = decoder(protocol, bytes.clone());
                match decode_call(&mut *d) {
                    Err(CallError::Wire(e)) if e.is_incomplete() => {
                        pending = bytes.to_vec();
                        if pending.len() > shared.options.max_frame {
                            malformed(shared, MALFORMED);
                            return Ok(());
                        }
                        let n = reader.read(&mut chunk, !pending.is_empty())?;
                        if n == 0 {
                            return Ok(());
                        }
                        pending.extend_from_slice(&chunk[..n]);
                        continue;
                    }
                    _ => {
                        let used = d.position();
                        pending = bytes[used..].to_vec();
                        bytes.slice(..used)
                    }
                }
            }
        };
        let reply = respond(shared, id, protocol, message);
        let Some(reply) = reply else {
            malformed(shared, "a malformed request");
            return Ok(());
        };
        if transport == Transport::Framed {
            writer.write_all(&(reply.len() as u32).to_be_bytes())?;
        }
        writer.write_all(&reply)?;
        writer.flush()?;
    }
}

/// Decodes one request and returns its encoded reply; `None` if it is malformed (the
/// connection is then closed: its byte stream can no longer be trusted).
fn respond(
    shared: &Shared,
    connection: u64,
    protocol: Protocol,
    message: Bytes,
) -> Option<Vec<u8>> {
    let size = message.len() as u64;
    let mut d = decoder(protocol, message);
    let (header, call) = match decode_call(&mut *d) {
        Ok(decoded) => decoded,
        Err(CallError::UnknownMethod(header)) => {
            let mut e = encoder(protocol);
            encode_application_exception(
                &mut *e,
                &header.name,
                header.seqid,
                &format!("Invalid method name: '{}'", header.name),
                UNKNOWN_METHOD,
            );
            return Some(e.take());
        }
        Err(CallError::Wire(_)) => return None,
    };
    shared.stats.requests.fetch_add(1, Ordering::Relaxed);
    let (tx, rx) = crossbeam_channel::bounded(1);
    let class = class_of(&call);
    let work = Work {
        connection,
        handler: Arc::clone(&shared.handler),
        call: Some(call),
        header: header.clone(),
        protocol,
        reply: tx,
    };
    match shared
        .executor
        .dispatch(keel_rpc::Call::new(class, work).with_size(size))
    {
        Ok(()) => rx.recv().ok(),
        Err(rejected) => {
            shared.stats.rejected.fetch_add(1, Ordering::Relaxed);
            if let Some(n) = shared.logs.rejected.due() {
                tracing::warn!(
                    reason = %rejected.reason,
                    rejected = n,
                    "call queue full: refusing calls (CallQueueTooBigException)"
                );
            }
            let mut e = encoder(protocol);
            encode_reply(
                &mut *e,
                &header.name,
                header.seqid,
                &Err(HbaseError::Io {
                    message: format!("CallQueueTooBigException: {}", rejected.reason),
                    can_retry: true,
                }),
            );
            Some(e.take())
        }
    }
}
