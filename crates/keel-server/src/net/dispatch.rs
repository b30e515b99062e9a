//! From a decoded request to its reply: the call's class (which keel-rpc queue), the task a
//! handler runs, and [`Replies`], through which replies reach the socket in request order.

use std::io::Write;
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use bytes::Bytes;
use keel_rpc::{CallClass, Failure, RunInfo, Task};
use keel_thrift::hbase::{
    Call, CallError, HbaseError, INTERNAL_ERROR, Request, UNKNOWN_METHOD, decode_request,
    encode_application_exception, encode_reply,
};
use keel_thrift::transport::Protocol;
use keel_thrift::{
    BinaryDecoder, BinaryEncoder, CompactDecoder, CompactEncoder, Decoder, Encoder, Limits,
    MessageHeader,
};

use super::Shared;
use super::budget::{Budget, Reservation};
use crate::Handler;

/// The keel-rpc class a call is queued as: mutations write, scanner calls scan, other reads
/// read, admin calls priority (HBase's `RWQueueRpcExecutor` split).
pub fn call_class(call: &Call) -> CallClass {
    match call {
        Call::MutateRows { .. }
        | Call::MutateRow { .. }
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

pub(super) fn encoder(protocol: Protocol) -> Box<dyn Encoder> {
    match protocol {
        Protocol::Binary => Box::new(BinaryEncoder::new()),
        Protocol::Compact => Box::new(CompactEncoder::new()),
    }
}

/// A decoder over a request's bytes where they lie (one buffer, or a chain of pooled ones).
pub(super) fn decoder(protocol: Protocol, parts: Vec<Bytes>, limits: Limits) -> Box<dyn Decoder> {
    match protocol {
        Protocol::Binary => Box::new(BinaryDecoder::from_parts(parts, limits)),
        Protocol::Compact => Box::new(CompactDecoder::from_parts(parts, limits)),
    }
}

/// Where a connection's replies go, in request order, without ever holding a handler up on a
/// client that does not read. The thread that has the reply — the handler that ran the call,
/// or the reader for one it makes itself — writes as much as the socket takes without waiting
/// (its send timeout is a couple of milliseconds); what is left goes to a writer thread of the
/// connection's own, which gives the client `reply_timeout` to take it and then closes the
/// connection. The unwritten bytes stay charged to the in-flight budget until written. (A
/// handler writing its own reply saves waking another thread for it, one hand-off per call.)
pub(super) struct Replies {
    socket: TcpStream,
    framed: bool,
    /// The turn to reply, a single token: the reader takes it before it dispatches a request
    /// (or answers one itself), and it comes back once that reply is written (or the
    /// connection is given up). A client with one call in flight, as happybase, never waits
    /// for it; one that pipelines gets its replies in order — and at most one reply per
    /// connection is ever waiting to be written.
    turn_tx: crossbeam_channel::Sender<()>,
    turn_rx: crossbeam_channel::Receiver<()>,
    reply_timeout: Duration,
    stats: Arc<super::NetStats>,
}

/// How long one attempt to write may wait for the socket to take bytes.
const WRITE_ATTEMPT: Duration = Duration::from_millis(2);

impl Replies {
    pub(super) fn new(
        socket: TcpStream,
        framed: bool,
        reply_timeout: Duration,
        stats: Arc<super::NetStats>,
    ) -> std::io::Result<Arc<Replies>> {
        socket.set_write_timeout(Some(WRITE_ATTEMPT))?;
        let (turn_tx, turn_rx) = crossbeam_channel::bounded(1);
        let _ = turn_tx.send(());
        Ok(Arc::new(Replies {
            socket,
            framed,
            turn_tx,
            turn_rx,
            reply_timeout,
            stats,
        }))
    }

    /// Waits until the previous reply has been written (every dispatched call is answered
    /// exactly once, even if dropped unrun, so the turn always comes back).
    pub(super) fn take_turn(&self) {
        let _ = self.turn_rx.recv();
    }

    /// Sends one reply (framed if the connection is) and passes the turn on once it is
    /// written; `held` is what the call held against the in-flight budget, kept as the unwritten
    /// bytes until they are written.
    pub(super) fn send(self: &Arc<Replies>, reply: &[u8], held: Option<Reservation>) {
        // A frame's length is 32 bits. No reply comes near it (results are bounded by
        // `max_result_size`), but a length must never be truncated into a different frame.
        if self.framed && u32::try_from(reply.len()).is_err() {
            self.give_up();
            return;
        }
        let mut frame = Vec::with_capacity(reply.len() + 4);
        if self.framed {
            frame.extend_from_slice(&(reply.len() as u32).to_be_bytes());
        }
        frame.extend_from_slice(reply);
        match self.write_some(&frame) {
            Ok(n) if n == frame.len() => self.pass_turn(),
            Ok(n) => {
                let mut held = held;
                if let Some(held) = &mut held {
                    held.resize((frame.len() - n) as u64);
                }
                let replies = Arc::clone(self);
                let spawned = std::thread::Builder::new()
                    .name("keel-reply".to_string())
                    .stack_size(64 << 10)
                    .spawn(move || replies.finish(frame, n, held));
                if spawned.is_err() {
                    self.give_up();
                }
            }
            Err(_) => self.give_up(),
        }
    }

    /// Writes what the socket takes without waiting more than one attempt's time; the bytes
    /// written, or the error that says the client is gone.
    fn write_some(&self, bytes: &[u8]) -> std::io::Result<usize> {
        let mut done = 0;
        while done < bytes.len() {
            match (&self.socket).write(&bytes[done..]) {
                Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
                Ok(n) => done += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    break;
                }
                Err(e) => return Err(e),
            }
        }
        Ok(done)
    }

    /// The writer thread's job: the rest of one reply, within the reply timeout.
    fn finish(&self, frame: Vec<u8>, mut done: usize, held: Option<Reservation>) {
        let deadline = Instant::now() + self.reply_timeout;
        let mut pause = Duration::from_millis(1);
        while done < frame.len() {
            match self.write_some(&frame[done..]) {
                Ok(0) => {
                    if Instant::now() >= deadline {
                        self.stats.slow_readers.fetch_add(1, Ordering::Relaxed);
                        drop(held);
                        self.give_up();
                        return;
                    }
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(50));
                }
                Ok(n) => {
                    done += n;
                    pause = Duration::from_millis(1);
                }
                Err(_) => {
                    drop(held);
                    self.give_up();
                    return;
                }
            }
        }
        drop(held);
        self.pass_turn();
    }

    /// The client is gone or will not read: the connection is closed (its reader sees that
    /// at once) and the turn passed on, so nothing waits for this reply.
    fn give_up(&self) {
        let _ = self.socket.shutdown(std::net::Shutdown::Both);
        self.pass_turn();
    }

    fn pass_turn(&self) {
        let _ = self.turn_tx.send(());
    }
}

/// One call on a handler thread: run it, encode the reply, write it to the connection.
struct Work {
    connection: u64,
    handler: Arc<Handler>,
    call: Option<Call>,
    /// The call's operation attributes (acted on or refused by the handler).
    attributes: Vec<(Bytes, Bytes)>,
    header: MessageHeader,
    protocol: Protocol,
    replies: Arc<Replies>,
    answered: bool,
    /// The request's bytes and decoded size against the in-flight budget, until it is run.
    held: Option<Reservation>,
    /// The replies' share of the budget.
    reply_budget: Arc<Budget>,
    stats: Arc<super::NetStats>,
}

impl Work {
    fn answer(&mut self, result: &Result<keel_thrift::hbase::Reply, HbaseError>) {
        let mut e = encoder(self.protocol);
        encode_reply(&mut *e, &self.header.name, self.header.seqid, result);
        self.answered = true;
        // The call and its request go before the reply is written.
        self.call = None;
        self.held = None;
        let mut reply = e.take();
        // A reply waits for its client in memory: it must fit the replies' share of the
        // in-flight budget, or the client gets a refusal it may retry instead. (Large replies
        // may fill only three quarters of it, so unread multi-MB replies never cost
        // well-behaved clients their small answers.)
        let held = match self.reply_budget.try_reserve(reply.len() as u64) {
            Some(held) => Some(held),
            None => {
                self.stats.refused_busy.fetch_add(1, Ordering::Relaxed);
                let mut e = encoder(self.protocol);
                let refused: Result<keel_thrift::hbase::Reply, HbaseError> = Err(HbaseError::Io {
                    message: format!(
                        "CallQueueTooBigException: a reply of {} bytes does not fit the {} bytes of replies in flight keel.server.inflight.bytes allows ({} used); retry later",
                        reply.len(),
                        self.reply_budget.max(),
                        self.reply_budget.used()
                    ),
                    can_retry: true,
                });
                encode_reply(&mut *e, &self.header.name, self.header.seqid, &refused);
                reply = e.take();
                None
            }
        };
        self.replies.send(&reply, held);
    }
}

impl Drop for Work {
    /// A call dropped without being run or failed still gets a reply, so its connection's
    /// turn comes back.
    fn drop(&mut self) {
        if !self.answered {
            self.answer(&Err(HbaseError::Io {
                message: "the call was dropped unanswered".to_string(),
                can_retry: true,
            }));
        }
    }
}

impl Task for Work {
    fn run(&mut self, _info: &RunInfo) {
        if let Some(call) = self.call.take() {
            let attributes = std::mem::take(&mut self.attributes);
            let result = self
                .handler
                .handle_request(self.connection, call, &attributes);
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
                self.answered = true;
                self.held = None;
                self.replies.send(&e.take(), None);
                return;
            }
            Failure::TimedOut { waited } => {
                format!("CallDroppedException: waited {waited:?} in the call queue")
            }
            Failure::Dropped { waited } => {
                format!("CallDroppedException: dropped after {waited:?} in an overloaded queue")
            }
            Failure::ShuttingDown | Failure::Refused(keel_rpc::RejectReason::ShuttingDown) => {
                "the server is shutting down".to_string()
            }
            Failure::Refused(reason) => format!("CallQueueTooBigException: {reason}"),
        };
        self.answer(&Err(HbaseError::Io {
            message,
            can_retry: true,
        }));
    }
}

/// Decodes one request and sees it answered: dispatched to the executor (whose handler writes
/// the reply), or answered here (an unknown method, a refusal). `held` holds the request's bytes
/// against the in-flight budget; its decoded size is charged too, within what the budget has
/// left (and at most `max_decoded` per request), or the call is refused with HBase's
/// `CallQueueTooBigException` wording and the connection stays usable. False if it is malformed
/// (the connection is then closed: its byte stream can no longer be trusted).
pub(super) fn respond(
    shared: &Shared,
    connection: u64,
    protocol: Protocol,
    message: Vec<Bytes>,
    mut held: Reservation,
    replies: &Arc<Replies>,
) -> bool {
    let size = message.iter().map(|part| part.len() as u64).sum();
    let limit = usize::try_from(shared.budget.available())
        .unwrap_or(usize::MAX)
        .min(shared.options.max_decoded);
    let mut d = decoder(
        protocol,
        message,
        Limits {
            max_decoded: limit,
            ..Limits::default()
        },
    );
    let decoded = decode_request(&mut *d);
    let decoded_bytes = d.decoded() as u64;
    drop(d);
    let (header, call, attributes) = match decoded {
        Ok(Request {
            header,
            call,
            attributes,
        }) => (header, call, attributes),
        Err(CallError::UnknownMethod(header)) => {
            let mut e = encoder(protocol);
            encode_application_exception(
                &mut *e,
                &header.name,
                header.seqid,
                &format!("Invalid method name: '{}'", header.name),
                UNKNOWN_METHOD,
            );
            replies.take_turn();
            replies.send(&e.take(), None);
            return true;
        }
        Err(CallError::Oversized { header, .. }) => {
            refuse_busy(shared, protocol, &header, replies);
            return true;
        }
        Err(CallError::Wire(_)) => return false,
    };
    if !held.try_grow(decoded_bytes) {
        drop(call);
        refuse_busy(shared, protocol, &header, replies);
        return true;
    }
    shared.stats.requests.fetch_add(1, Ordering::Relaxed);
    let class = call_class(&call);
    replies.take_turn();
    let work = Work {
        connection,
        handler: Arc::clone(&shared.handler),
        call: Some(call),
        attributes,
        header: header.clone(),
        protocol,
        replies: Arc::clone(replies),
        answered: false,
        held: Some(held),
        reply_budget: Arc::clone(&shared.reply_budget),
        stats: Arc::clone(&shared.stats),
    };
    match shared
        .executor
        .dispatch(keel_rpc::Call::new(class, work).with_size(size))
    {
        Ok(()) => true,
        Err(rejected) => {
            shared.stats.rejected.fetch_add(1, Ordering::Relaxed);
            if let Some(n) = shared.logs.rejected.due() {
                tracing::warn!(
                    reason = %rejected.reason,
                    rejected = n,
                    "call queue full: refusing calls (CallQueueTooBigException)"
                );
            }
            // The refused call's task answers it (writing the reply, passing the turn on).
            rejected.call.fail(Failure::Refused(rejected.reason));
            true
        }
    }
}

/// Answers a call the in-flight budget has no room for, as HBase answers a full call queue:
/// an `IOError` the client may retry.
pub(super) fn refuse_busy(
    shared: &Shared,
    protocol: Protocol,
    header: &MessageHeader,
    replies: &Arc<Replies>,
) {
    shared.stats.refused_busy.fetch_add(1, Ordering::Relaxed);
    if let Some(n) = shared.logs.busy.due() {
        tracing::warn!(
            in_flight = shared.budget.used(),
            limit = shared.budget.max(),
            refused = n,
            "in-flight request bytes at their limit: refusing calls (CallQueueTooBigException)"
        );
    }
    let mut e = encoder(protocol);
    let result: Result<keel_thrift::hbase::Reply, HbaseError> = Err(HbaseError::Io {
        message: format!(
            "CallQueueTooBigException: Call queue is full on {}: {} bytes of requests in flight, the most keel.server.inflight.bytes allows them ({}); retry later",
            shared.local,
            shared.budget.used(),
            shared.budget.max()
        ),
        can_retry: true,
    });
    encode_reply(&mut *e, &header.name, header.seqid, &result);
    replies.take_turn();
    replies.send(&e.take(), None);
}
