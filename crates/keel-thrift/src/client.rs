//! A blocking `Hbase` client on the same codec: one request at a time over a TCP connection,
//! buffered or framed, binary or compact. Tests and the load driver use it; so can anyone who
//! wants a small synchronous Thrift1 client.

use std::io::{BufWriter, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};

use bytes::Bytes;

use crate::error::ThriftError;
use crate::hbase::{Call, HbaseError, Reply, decode_reply};
use crate::protocol::{Decoder, Encoder};
use crate::transport::{Protocol, Transport, frame_len};
use crate::{BinaryDecoder, BinaryEncoder, CompactDecoder, CompactEncoder, Limits};

/// What a call can fail with.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The connection failed (or the server closed it).
    #[error("connection: {0}")]
    Io(#[from] std::io::Error),
    /// The reply was malformed.
    #[error("malformed reply: {0}")]
    Wire(#[from] ThriftError),
    /// The server answered with one of the service's declared exceptions.
    #[error(transparent)]
    Hbase(#[from] HbaseError),
    /// The server answered with a `TApplicationException`.
    #[error("application exception {kind}: {message}")]
    Application {
        /// Its message.
        message: String,
        /// Its type (`UNKNOWN_METHOD` = 1, …).
        kind: i32,
    },
    /// The reply was for another method or sequence id.
    #[error("reply to {got} where {expected} was called")]
    Mismatch {
        /// What was called.
        expected: String,
        /// What the reply named.
        got: String,
    },
}

/// A connection to a Thrift1 `Hbase` server.
#[derive(Debug)]
pub struct Client {
    stream: BufWriter<TcpStream>,
    transport: Transport,
    protocol: Protocol,
    limits: Limits,
    /// Largest reply frame accepted.
    max_frame: usize,
    seqid: i32,
    /// Bytes received past the last reply (buffered transport).
    pending: Vec<u8>,
}

impl Client {
    /// Connects to `address`, speaking `protocol` over `transport`.
    pub fn connect(
        address: impl ToSocketAddrs,
        transport: Transport,
        protocol: Protocol,
    ) -> std::io::Result<Client> {
        let stream = TcpStream::connect(address)?;
        stream.set_nodelay(true)?;
        Ok(Client {
            stream: BufWriter::new(stream),
            transport,
            protocol,
            limits: Limits::default(),
            max_frame: 16 << 20,
            seqid: 0,
            pending: Vec::new(),
        })
    }

    /// Gives every read and write of a reply or request at most `timeout` (`None`: wait for
    /// ever, the default); a call that runs out fails with an I/O error.
    pub fn set_timeout(&mut self, timeout: Option<std::time::Duration>) -> std::io::Result<()> {
        self.stream.get_ref().set_read_timeout(timeout)?;
        self.stream.get_ref().set_write_timeout(timeout)
    }

    fn encoder(&self) -> Box<dyn Encoder> {
        match self.protocol {
            Protocol::Binary => Box::new(BinaryEncoder::new()),
            Protocol::Compact => Box::new(CompactEncoder::new()),
        }
    }

    fn decoder(&self, bytes: Bytes) -> Box<dyn Decoder> {
        match self.protocol {
            Protocol::Binary => Box::new(BinaryDecoder::new(bytes, self.limits)),
            Protocol::Compact => Box::new(CompactDecoder::new(bytes, self.limits)),
        }
    }

    /// Sends `call` and waits for its reply.
    pub fn call(&mut self, call: &Call) -> Result<Reply, ClientError> {
        self.seqid = self.seqid.wrapping_add(1);
        let mut e = self.encoder();
        call.encode(&mut *e, self.seqid);
        let message = e.take();
        if self.transport == Transport::Framed {
            self.stream
                .write_all(&(message.len() as u32).to_be_bytes())?;
        }
        self.stream.write_all(&message)?;
        self.stream.flush()?;
        let (header, outcome) = match self.transport {
            Transport::Framed => {
                let mut prefix = [0u8; 4];
                self.stream.get_mut().read_exact(&mut prefix)?;
                let len = frame_len(prefix, self.max_frame)?;
                let mut body = vec![0u8; len];
                self.stream.get_mut().read_exact(&mut body)?;
                decode_reply(&mut *self.decoder(Bytes::from(body)))?
            }
            Transport::Buffered => self.read_buffered()?,
        };
        if header.name != call.method() {
            return Err(ClientError::Mismatch {
                expected: call.method().to_string(),
                got: header.name,
            });
        }
        match outcome {
            Ok(Ok(reply)) => Ok(reply),
            Ok(Err(error)) => Err(error.into()),
            Err((message, kind)) => Err(ClientError::Application { message, kind }),
        }
    }

    /// Reads until a whole reply decodes (a buffered connection has no frame to say where it
    /// ends).
    fn read_buffered(&mut self) -> Result<crate::hbase::DecodedReply, ClientError> {
        let mut chunk = [0u8; 64 * 1024];
        loop {
            if !self.pending.is_empty() {
                let bytes = Bytes::from(self.pending.clone());
                let mut d = self.decoder(bytes);
                match decode_reply(&mut *d) {
                    Ok(reply) => {
                        let used = d.position();
                        self.pending.drain(..used);
                        return Ok(reply);
                    }
                    Err(e) if e.is_incomplete() => {}
                    Err(e) => return Err(e.into()),
                }
            }
            let n = self.stream.get_mut().read(&mut chunk)?;
            if n == 0 {
                return Err(std::io::Error::from(std::io::ErrorKind::UnexpectedEof).into());
            }
            if self.pending.len() + n > self.max_frame {
                return Err(ThriftError::TooLarge {
                    offset: 0,
                    what: "reply",
                    size: (self.pending.len() + n) as i64,
                    limit: self.max_frame,
                }
                .into());
            }
            self.pending.extend_from_slice(&chunk[..n]);
        }
    }
}
