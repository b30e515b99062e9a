//! A buffered (unframed) connection's requests. Nothing says how long a request is, so each
//! chunk read is walked once by a [`MessageBoundary`] as it arrives (never the whole request
//! again: a request sent slowly costs time linear in its size), the bytes held count against
//! the in-flight budget as they arrive, and a complete request is copied into a buffer from the
//! request pool, as a framed one is read into one. A request that would overrun the budget is
//! read past without being kept and refused, as a framed one is.

use bytes::{BufMut, Bytes};
use keel_bufpool::RequestConnection;
use keel_thrift::MessageBoundary;
use keel_thrift::transport::Protocol;

use super::budget::{Budget, Reservation};
use super::connection::Reader;
use super::{MALFORMED, Shared, malformed};

/// How much of a refused request is kept to answer it: enough for its message header.
pub(super) const REFUSAL_HEAD: usize = 512;

/// What the next request came to.
pub(super) enum Request {
    /// The request, in the pool's buffers, with its bytes held against the budget.
    Whole(Vec<Bytes>, Reservation),
    /// Read past for want of budget; its first bytes, to answer it.
    Refused(Vec<u8>),
}

/// A buffered connection's reading state.
pub(super) struct Buffered {
    boundary: MessageBoundary,
    /// Bytes read and not yet handed on: the start of the current request, and after a
    /// request's end, whatever followed it (a pipelining client's next requests).
    pending: Vec<u8>,
    /// How many of `pending` the walk has seen.
    walked: usize,
    /// `pending`'s bytes, held against the in-flight budget.
    held: Reservation,
}

impl Buffered {
    /// Takes over the bytes read while the transport was being told (`first`, already in
    /// memory, so held whether or not they fit).
    pub(super) fn new(
        protocol: Protocol,
        first: Vec<u8>,
        budget: &std::sync::Arc<Budget>,
    ) -> Buffered {
        let mut held = budget.empty();
        held.resize(first.len() as u64);
        Buffered {
            boundary: MessageBoundary::new(protocol, keel_thrift::Limits::default()),
            pending: first,
            walked: 0,
            held,
        }
    }

    /// Reads until the next request is complete. `None`: the client went away, or sent
    /// something that is not a request within the limits (counted and logged as malformed).
    pub(super) fn next_request(
        &mut self,
        reader: &mut Reader<'_>,
        chunk: &mut [u8],
        shared: &Shared,
        buffers: &mut RequestConnection,
    ) -> std::io::Result<Option<Request>> {
        loop {
            // Walk what has arrived and not yet been walked.
            if self.walked < self.pending.len() {
                match self.boundary.feed(&self.pending[self.walked..]) {
                    Ok(Some(n)) => {
                        let end = self.walked + n;
                        return self.complete(end, buffers).map(Some);
                    }
                    Ok(None) => self.walked = self.pending.len(),
                    Err(_) => {
                        malformed(shared, MALFORMED);
                        return Ok(None);
                    }
                }
            }
            if self.pending.len() > shared.options.max_frame {
                malformed(shared, "a buffered request larger than the frame limit");
                return Ok(None);
            }
            let n = reader.read(chunk, !self.pending.is_empty())?;
            if n == 0 {
                return Ok(None);
            }
            if !self.held.try_grow(n as u64) {
                return self.refuse(reader, chunk, n, shared);
            }
            self.pending.extend_from_slice(&chunk[..n]);
        }
    }

    /// The request is `pending[..end]`: into a pooled buffer, with its share of the budget.
    fn complete(
        &mut self,
        end: usize,
        buffers: &mut RequestConnection,
    ) -> std::io::Result<Request> {
        let mut buf = buffers
            .allocate(end)
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        buf.put_slice(&self.pending[..end]);
        self.pending.drain(..end);
        self.walked = 0;
        let held = self.held.split_off(end as u64);
        // A large request's read buffer is not kept for the connection's life.
        if self.pending.capacity() > 4 * chunk_size() && self.pending.len() < chunk_size() {
            self.pending.shrink_to(chunk_size());
        }
        Ok(Request::Whole(buf.freeze_parts(), held))
    }

    /// The budget refused the `n` bytes just read into `chunk`: read the rest of the current
    /// request past (still walking it, to find its end), keeping only its head.
    fn refuse(
        &mut self,
        reader: &mut Reader<'_>,
        chunk: &mut [u8],
        mut n: usize,
        shared: &Shared,
    ) -> std::io::Result<Option<Request>> {
        let mut head = self.pending[..self.pending.len().min(REFUSAL_HEAD)].to_vec();
        self.pending = Vec::new();
        self.walked = 0;
        self.held.resize(0);
        loop {
            let room = REFUSAL_HEAD.saturating_sub(head.len());
            head.extend_from_slice(&chunk[..n.min(room)]);
            match self.boundary.feed(&chunk[..n]) {
                Ok(Some(end)) => {
                    // What followed is the next request's start: at most one chunk, already in
                    // memory, so held as it is.
                    self.pending.extend_from_slice(&chunk[end..n]);
                    self.held.resize(self.pending.len() as u64);
                    return Ok(Some(Request::Refused(head)));
                }
                Ok(None) if self.boundary.consumed() <= shared.options.max_frame => {}
                Ok(None) => {
                    malformed(shared, "a buffered request larger than the frame limit");
                    return Ok(None);
                }
                Err(_) => {
                    malformed(shared, MALFORMED);
                    return Ok(None);
                }
            }
            n = reader.read(chunk, true)?;
            if n == 0 {
                return Ok(None);
            }
        }
    }
}

/// The connection's read chunk (and the size a read buffer is trimmed back to): small, as
/// every connection has one, touched by its first large read — a thousand connections each
/// holding 64 KiB were most of the server's memory under the abuse suite's partial frames.
pub(super) const fn chunk_size() -> usize {
    16 * 1024
}
