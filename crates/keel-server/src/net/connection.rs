//! One connection's reader: detects the transport and protocol, reads each request whole into
//! keel-bufpool buffers (a framed one straight from the socket, a buffered one — see
//! [`super::buffered`] — once its end is found) under the idle and request timeouts, and hands
//! it to [`respond`].

use std::io::Read;
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes};
use keel_thrift::hbase::{INTERNAL_ERROR, encode_application_exception};
use keel_thrift::transport::{Protocol, Transport, detect, frame_len};

use super::budget::Reservation;
use super::buffered::{Buffered, REFUSAL_HEAD, Request, chunk_size};
use super::dispatch::{Replies, decoder, encoder, refuse_busy, respond};
use super::{MALFORMED, Shared, malformed};

/// A connection's reading side, with its two clocks: between requests the idle timeout; once a
/// request has begun, the rest of it must come within the request timeout.
pub(super) struct Reader<'a> {
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
    pub(super) fn read(&mut self, buf: &mut [u8], mid_request: bool) -> std::io::Result<usize> {
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

/// Serves one connection until it closes, fails or the server stops; then waits for its call
/// in flight, if any, to be answered (so that closing its scanners afterwards is final).
pub(super) fn serve_connection(socket: TcpStream, id: u64, shared: &Shared) {
    let mut replies = None;
    let _ = read_requests(socket, id, shared, &mut replies);
    if let Some(replies) = replies {
        replies.take_turn();
    }
}

fn read_requests(
    socket: TcpStream,
    id: u64,
    shared: &Shared,
    replies: &mut Option<Arc<Replies>>,
) -> std::io::Result<()> {
    socket.set_nodelay(true)?;
    socket.set_read_timeout(Some(shared.options.idle_timeout))?;
    let mut reader = Reader {
        socket: socket.try_clone()?,
        shared,
        began: None,
        timeout: shared.options.idle_timeout,
    };
    let mut socket = Some(socket);
    let mut pending: Vec<u8> = Vec::new();
    let mut chunk = vec![0u8; chunk_size()];
    let mut kind: Option<(Transport, Protocol)> = None;
    let mut buffered: Option<Buffered> = None;
    let mut buffers = shared.pool.connect();
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
                    if k.0 == Transport::Buffered {
                        let first = std::mem::take(&mut pending);
                        buffered = Some(Buffered::new(k.1, first, &shared.budget));
                    }
                    if let Some(socket) = socket.take() {
                        *replies = Some(Replies::new(
                            socket,
                            k.0 == Transport::Framed,
                            shared.options.reply_timeout,
                            Arc::clone(&shared.stats),
                        )?);
                    }
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
        let Some(replies) = replies.as_ref() else {
            return Ok(());
        };
        // One whole request, with its bytes held against the in-flight budget.
        let message: (Vec<Bytes>, Reservation) = match transport {
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
                        replies.take_turn();
                        replies.send(&out.take(), None);
                        return Ok(());
                    }
                };
                pending.drain(..4);
                // The frame's bytes are reserved before any is read; when they do not fit the
                // frame is read past without keeping it and the call refused.
                let Some(held) = shared.budget.try_reserve(len as u64) else {
                    match skip_frame(&mut reader, &mut pending, &mut chunk, len, protocol)? {
                        Some(header) => refuse_busy(shared, protocol, &header, replies),
                        None => return Ok(()),
                    }
                    reader.began = None;
                    continue;
                };
                // The frame goes into a pooled buffer (HBASE-14490): what is already here,
                // then the rest straight from the socket.
                let mut buf = buffers
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
                (buf.freeze_parts(), held)
            }
            Transport::Buffered => {
                let Some(buffered) = buffered.as_mut() else {
                    return Ok(());
                };
                match buffered.next_request(&mut reader, &mut chunk, shared, &mut buffers)? {
                    Some(Request::Whole(parts, held)) => (parts, held),
                    Some(Request::Refused(head)) => {
                        let mut header = decoder(
                            protocol,
                            vec![Bytes::from(head)],
                            keel_thrift::Limits::default(),
                        );
                        match header.read_message_begin() {
                            Ok(header) => refuse_busy(shared, protocol, &header, replies),
                            Err(_) => return Ok(()),
                        }
                        reader.began = None;
                        continue;
                    }
                    None => return Ok(()),
                }
            }
        };
        let (message, held) = message;
        if !respond(shared, id, protocol, message, held, replies) {
            malformed(shared, "a malformed request");
            return Ok(());
        }
        // The next request's clock starts with its own first bytes (a client that pipelines
        // is not timed across requests).
        reader.began = None;
    }
}

/// Reads past a frame of `len` bytes without keeping it (some may already be in `pending`);
/// returns its message header, if its first bytes hold one, so the refusal can answer it. `None`
/// if the client went away.
fn skip_frame(
    reader: &mut Reader<'_>,
    pending: &mut Vec<u8>,
    chunk: &mut [u8],
    len: usize,
    protocol: Protocol,
) -> std::io::Result<Option<keel_thrift::MessageHeader>> {
    const HEAD: usize = REFUSAL_HEAD;
    let mut head: Vec<u8> = Vec::with_capacity(HEAD.min(len));
    let have = pending.len().min(len);
    head.extend_from_slice(&pending[..have.min(HEAD)]);
    pending.drain(..have);
    let mut left = len - have;
    while left > 0 {
        let want = left.min(chunk.len());
        let n = reader.read(&mut chunk[..want], true)?;
        if n == 0 {
            return Ok(None);
        }
        let room = HEAD.min(len).saturating_sub(head.len());
        head.extend_from_slice(&chunk[..n.min(room)]);
        left -= n;
    }
    let mut d = decoder(
        protocol,
        vec![Bytes::from(head)],
        keel_thrift::Limits::default(),
    );
    Ok(d.read_message_begin().ok())
}
