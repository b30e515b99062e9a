//! From a decoded request to its reply: the call's class (which keel-rpc queue), the task a
//! handler runs, and [`Replies`], through which replies reach the socket in request order.

use std::io::Write;
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use bytes::Bytes;
use keel_rpc::{CallClass, Failure, RunInfo, Task};
use keel_thrift::hbase::{
    Call, CallError, HbaseError, INTERNAL_ERROR, UNKNOWN_METHOD, decode_call,
    encode_application_exception, encode_reply,
};
use keel_thrift::transport::Protocol;
use keel_thrift::{
    BinaryDecoder, BinaryEncoder, CompactDecoder, CompactEncoder, Decoder, Encoder, Limits,
    MessageHeader,
};

use super::Shared;
use crate::Handler;

/// The keel-rpc class a call is queued as: mutations write, scanner calls scan, other reads
/// read, admin calls priority (HBase's `RWQueueRpcExecutor` split).
pub fn call_class(call: &Call) -> CallClass {
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

pub(super) fn encoder(protocol: Protocol) -> Box<dyn Encoder> {
    match protocol {
        Protocol::Binary => Box::new(BinaryEncoder::new()),
        Protocol::Compact => Box::new(CompactEncoder::new()),
    }
}

pub(super) fn decoder(protocol: Protocol, bytes: Bytes) -> Box<dyn Decoder> {
    match protocol {
        Protocol::Binary => Box::new(BinaryDecoder::new(bytes, Limits::default())),
        Protocol::Compact => Box::new(CompactDecoder::new(bytes, Limits::default())),
    }
}

/// Where a connection's replies go: straight to its socket, written by whichever thread has
/// the reply — the handler that ran the call, or the reader for a reply it makes itself — one
/// whole reply at a time and in request order. (A handler writing its own reply saves waking
/// the reader for it, one thread hand-off per call.)
pub(super) struct Replies {
    socket: keel_sync::Mutex<TcpStream>,
    framed: bool,
    /// The turn to reply, a single token: the reader takes it before it dispatches a request
    /// (or answers one itself), and it comes back once that reply is written. A client with
    /// one call in flight, as happybase, never waits for it; one that pipelines gets its
    /// replies in order.
    turn_tx: crossbeam_channel::Sender<()>,
    turn_rx: crossbeam_channel::Receiver<()>,
}

impl Replies {
    pub(super) fn new(socket: TcpStream, framed: bool) -> Arc<Replies> {
        let (turn_tx, turn_rx) = crossbeam_channel::bounded(1);
        let _ = turn_tx.send(());
        Arc::new(Replies {
            socket: keel_sync::Mutex::new(socket),
            framed,
            turn_tx,
            turn_rx,
        })
    }

    /// Waits until the previous reply has been written (every dispatched call is answered
    /// exactly once, even if dropped unrun, so the turn always comes back).
    pub(super) fn take_turn(&self) {
        let _ = self.turn_rx.recv();
    }

    /// Writes one reply (framed if the connection is) and passes the turn on. A write error
    /// means the client went away; its reader sees that on its next read.
    pub(super) fn send(&self, reply: &[u8]) {
        {
            let mut socket = self.socket.lock();
            let _ = if self.framed {
                let mut frame = Vec::with_capacity(4 + reply.len());
                frame.extend_from_slice(&(reply.len() as u32).to_be_bytes());
                frame.extend_from_slice(reply);
                socket.write_all(&frame)
            } else {
                socket.write_all(reply)
            };
        }
        let _ = self.turn_tx.send(());
    }
}

/// One call on a handler thread: run it, encode the reply, write it to the connection.
struct Work {
    connection: u64,
    handler: Arc<Handler>,
    call: Option<Call>,
    header: MessageHeader,
    protocol: Protocol,
    replies: Arc<Replies>,
    answered: bool,
}

impl Work {
    fn answer(&mut self, result: &Result<keel_thrift::hbase::Reply, HbaseError>) {
        let mut e = encoder(self.protocol);
        encode_reply(&mut *e, &self.header.name, self.header.seqid, result);
        self.answered = true;
        self.replies.send(&e.take());
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
                self.answered = true;
                self.replies.send(&e.take());
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
/// the reply), or answered here (an unknown method, a refusal). False if it is malformed (the
/// connection is then closed: its byte stream can no longer be trusted).
pub(super) fn respond(
    shared: &Shared,
    connection: u64,
    protocol: Protocol,
    message: Bytes,
    replies: &Arc<Replies>,
) -> bool {
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
            replies.take_turn();
            replies.send(&e.take());
            return true;
        }
        Err(CallError::Wire(_)) => return false,
    };
    shared.stats.requests.fetch_add(1, Ordering::Relaxed);
    let class = call_class(&call);
    replies.take_turn();
    let work = Work {
        connection,
        handler: Arc::clone(&shared.handler),
        call: Some(call),
        header: header.clone(),
        protocol,
        replies: Arc::clone(replies),
        answered: false,
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
