//! The measured alternative to keel-server's reader side: instead of a thread per connection,
//! one thread runs a mio readiness loop over every connection (framed binary only — enough to
//! measure), reads whole frames, and dispatches each request to the same [`Handler`] through
//! the same keel-rpc executor. A handler thread encodes its reply, queues it to the loop and
//! wakes it; the loop writes replies out (registering for writability when a socket is full).

use std::collections::HashMap;
use std::io::{ErrorKind, Read, Write};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use bytes::Bytes;
use crossbeam_channel::{Receiver, Sender};
use keel_rpc::{Executor, Failure, RpcOptions, RunInfo, ShutdownMode, Task};
use keel_server::{Handler, call_class};
use keel_thrift::hbase::{Call, HbaseError, Reply, decode_call, encode_reply};
use keel_thrift::{BinaryDecoder, BinaryEncoder, Encoder, Limits, MessageHeader};
use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token, Waker};

const LISTENER: Token = Token(0);
const WAKER: Token = Token(1);
const MAX_FRAME: usize = 16 << 20;

/// A running event-loop server.
pub(crate) struct EventLoopServer {
    address: SocketAddr,
    stop: Arc<AtomicBool>,
    waker: Arc<Waker>,
    thread: Option<JoinHandle<()>>,
    executor: Arc<Executor>,
}

impl EventLoopServer {
    pub(crate) fn start(handler: Arc<Handler>, rpc: RpcOptions) -> EventLoopServer {
        let mut listener =
            TcpListener::bind("127.0.0.1:0".parse().expect("address")).expect("bind");
        let address = listener.local_addr().expect("address");
        let poll = Poll::new().expect("poll");
        poll.registry()
            .register(&mut listener, LISTENER, Interest::READABLE)
            .expect("register the listener");
        let waker = Arc::new(Waker::new(poll.registry(), WAKER).expect("waker"));
        let executor = Arc::new(Executor::new(rpc).expect("executor"));
        let stop = Arc::new(AtomicBool::new(false));
        let (replies_tx, replies_rx) = crossbeam_channel::unbounded();
        let mut state = Loop {
            poll,
            listener,
            connections: HashMap::new(),
            next_token: 2,
            handler,
            executor: Arc::clone(&executor),
            waker: Arc::clone(&waker),
            replies_tx,
            replies_rx,
        };
        let stopping = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("keel-event-loop".into())
            .spawn(move || state.run(&stopping))
            .expect("spawn the loop");
        EventLoopServer {
            address,
            stop,
            waker,
            thread: Some(thread),
            executor,
        }
    }

    pub(crate) fn local_addr(&self) -> SocketAddr {
        self.address
    }
}

impl Drop for EventLoopServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        let _ = self.waker.wake();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        self.executor.shutdown(ShutdownMode::Drain);
    }
}

struct Connection {
    stream: TcpStream,
    input: Vec<u8>,
    output: Vec<u8>,
    writable_registered: bool,
}

struct Loop {
    poll: Poll,
    listener: TcpListener,
    connections: HashMap<Token, Connection>,
    next_token: usize,
    handler: Arc<Handler>,
    executor: Arc<Executor>,
    waker: Arc<Waker>,
    replies_tx: Sender<(Token, Vec<u8>)>,
    replies_rx: Receiver<(Token, Vec<u8>)>,
}

/// One request on its way through the executor; its reply goes back to the loop.
struct Work {
    handler: Arc<Handler>,
    call: Option<Call>,
    header: MessageHeader,
    token: Token,
    replies: Sender<(Token, Vec<u8>)>,
    waker: Arc<Waker>,
}

impl Work {
    fn answer(&self, result: &Result<Reply, HbaseError>) {
        let _ = self
            .replies
            .send((self.token, framed_reply(&self.header, result)));
        let _ = self.waker.wake();
    }
}

impl Task for Work {
    fn run(&mut self, _info: &RunInfo) {
        if let Some(call) = self.call.take() {
            let result = self.handler.handle_on(self.token.0 as u64, call);
            self.answer(&result);
        }
    }

    fn fail(&mut self, failure: Failure) {
        self.answer(&Err(HbaseError::Io {
            message: format!("CallQueueTooBigException: {failure:?}"),
            can_retry: true,
        }));
    }
}

fn framed_reply(header: &MessageHeader, result: &Result<Reply, HbaseError>) -> Vec<u8> {
    let mut e = BinaryEncoder::new();
    encode_reply(&mut e, &header.name, header.seqid, result);
    let body = e.take();
    let mut framed = (body.len() as u32).to_be_bytes().to_vec();
    framed.extend_from_slice(&body);
    framed
}

impl Loop {
    fn run(&mut self, stop: &AtomicBool) {
        let mut events = Events::with_capacity(1024);
        while !stop.load(Ordering::Acquire) {
            if self
                .poll
                .poll(&mut events, Some(Duration::from_millis(100)))
                .is_err()
            {
                continue;
            }
            for event in &events {
                match event.token() {
                    LISTENER => self.accept(),
                    WAKER => {}
                    token => {
                        if event.is_readable() && !self.read(token) {
                            self.close(token);
                            continue;
                        }
                        if event.is_writable() && !self.flush(token) {
                            self.close(token);
                        }
                    }
                }
            }
            // Replies that handler threads queued (one wake-up may carry several).
            while let Ok((token, reply)) = self.replies_rx.try_recv() {
                if let Some(c) = self.connections.get_mut(&token) {
                    c.output.extend_from_slice(&reply);
                }
                if !self.flush(token) {
                    self.close(token);
                }
            }
        }
    }

    fn accept(&mut self) {
        while let Ok((mut stream, _)) = self.listener.accept() {
            let _ = stream.set_nodelay(true);
            let token = Token(self.next_token);
            self.next_token += 1;
            if self
                .poll
                .registry()
                .register(&mut stream, token, Interest::READABLE)
                .is_ok()
            {
                self.connections.insert(
                    token,
                    Connection {
                        stream,
                        input: Vec::new(),
                        output: Vec::new(),
                        writable_registered: false,
                    },
                );
            }
        }
    }

    /// Reads what arrived and dispatches every whole frame; false: close the connection.
    fn read(&mut self, token: Token) -> bool {
        let Some(c) = self.connections.get_mut(&token) else {
            return true;
        };
        let mut chunk = [0u8; 64 * 1024];
        loop {
            match c.stream.read(&mut chunk) {
                Ok(0) => return false,
                Ok(n) => c.input.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return false,
            }
        }
        while c.input.len() >= 4 {
            let len = u32::from_be_bytes([c.input[0], c.input[1], c.input[2], c.input[3]]) as usize;
            if len > MAX_FRAME {
                return false;
            }
            if c.input.len() < 4 + len {
                break;
            }
            let message = Bytes::copy_from_slice(&c.input[4..4 + len]);
            c.input.drain(..4 + len);
            let mut d = BinaryDecoder::new(message, Limits::default());
            let Ok((header, call)) = decode_call(&mut d) else {
                return false;
            };
            let size = len as u64;
            let class = call_class(&call);
            let work = Work {
                handler: Arc::clone(&self.handler),
                call: Some(call),
                header: header.clone(),
                token,
                replies: self.replies_tx.clone(),
                waker: Arc::clone(&self.waker),
            };
            if let Err(rejected) = self
                .executor
                .dispatch(keel_rpc::Call::new(class, work).with_size(size))
            {
                let reply = framed_reply(
                    &header,
                    &Err(HbaseError::Io {
                        message: format!("CallQueueTooBigException: {}", rejected.reason),
                        can_retry: true,
                    }),
                );
                c.output.extend_from_slice(&reply);
            }
        }
        let token_has_output = !c.output.is_empty();
        !token_has_output || self.flush(token)
    }

    /// Writes what is queued; false: close the connection.
    fn flush(&mut self, token: Token) -> bool {
        let Some(c) = self.connections.get_mut(&token) else {
            return true;
        };
        while !c.output.is_empty() {
            match c.stream.write(&c.output) {
                Ok(0) => return false,
                Ok(n) => {
                    c.output.drain(..n);
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return false,
            }
        }
        let want_writable = !c.output.is_empty();
        if want_writable != c.writable_registered {
            let interest = if want_writable {
                Interest::READABLE | Interest::WRITABLE
            } else {
                Interest::READABLE
            };
            if self
                .poll
                .registry()
                .reregister(&mut c.stream, token, interest)
                .is_err()
            {
                return false;
            }
            c.writable_registered = want_writable;
        }
        true
    }

    fn close(&mut self, token: Token) {
        if let Some(mut c) = self.connections.remove(&token) {
            let _ = self.poll.registry().deregister(&mut c.stream);
            self.handler.close_connection(token.0 as u64);
        }
    }
}
