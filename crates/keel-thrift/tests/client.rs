//! The blocking client against a scripted server thread: every transport and protocol, values,
//! declared exceptions, application exceptions, and a server that hangs up.

use std::io::{Read, Write};
use std::net::TcpListener;

use bytes::Bytes;
use keel_thrift::hbase::{
    Call, HbaseError, Reply, UNKNOWN_METHOD, decode_call, encode_application_exception,
    encode_reply,
};
use keel_thrift::transport::{Protocol, Transport, detect, frame_len};
use keel_thrift::{
    BinaryDecoder, BinaryEncoder, Client, ClientError, CompactDecoder, CompactEncoder, Decoder,
    Encoder, Limits,
};

/// Serves one connection: answers each call with the next of `answers` (`None`: hang up).
fn serve(listener: TcpListener, answers: Vec<Option<Result<Reply, HbaseError>>>) {
    let (mut socket, _) = listener.accept().expect("accept");
    let mut buf: Vec<u8> = Vec::new();
    let mut chunk = [0u8; 4096];
    for answer in answers {
        // Read until one whole request decodes.
        let (transport, protocol, header, call, used) = loop {
            if let Ok(Some((transport, protocol))) = detect(&buf) {
                let body = match transport {
                    Transport::Framed if buf.len() >= 4 => {
                        let len =
                            frame_len([buf[0], buf[1], buf[2], buf[3]], 1 << 20).expect("frame");
                        (buf.len() >= 4 + len).then(|| (buf[4..4 + len].to_vec(), 4 + len))
                    }
                    Transport::Buffered => Some((buf.clone(), 0)),
                    _ => None,
                };
                if let Some((bytes, framed_len)) = body {
                    let mut d: Box<dyn Decoder> = match protocol {
                        Protocol::Binary => {
                            Box::new(BinaryDecoder::new(Bytes::from(bytes), Limits::default()))
                        }
                        Protocol::Compact => {
                            Box::new(CompactDecoder::new(Bytes::from(bytes), Limits::default()))
                        }
                    };
                    match decode_call(&mut *d) {
                        Ok((header, call)) => {
                            let used = if framed_len > 0 {
                                framed_len
                            } else {
                                d.position()
                            };
                            break (transport, protocol, header, Some(call), used);
                        }
                        Err(keel_thrift::hbase::CallError::UnknownMethod(header)) => {
                            let used = if framed_len > 0 {
                                framed_len
                            } else {
                                d.position()
                            };
                            break (transport, protocol, header, None, used);
                        }
                        Err(keel_thrift::hbase::CallError::Wire(e)) if e.is_incomplete() => {}
                        Err(e) => panic!("server: {e}"),
                    }
                }
            }
            let n = socket.read(&mut chunk).expect("read");
            if n == 0 {
                return;
            }
            buf.extend_from_slice(&chunk[..n]);
        };
        buf.drain(..used);
        let Some(answer) = answer else {
            return;
        };
        let mut e: Box<dyn Encoder> = match protocol {
            Protocol::Binary => Box::new(BinaryEncoder::new()),
            Protocol::Compact => Box::new(CompactEncoder::new()),
        };
        match call {
            Some(_) => encode_reply(&mut *e, &header.name, header.seqid, &answer),
            None => encode_application_exception(
                &mut *e,
                &header.name,
                header.seqid,
                "unknown",
                UNKNOWN_METHOD,
            ),
        }
        let reply = e.take();
        if transport == Transport::Framed {
            socket
                .write_all(&(reply.len() as u32).to_be_bytes())
                .expect("write");
        }
        socket.write_all(&reply).expect("write");
    }
}

#[test]
fn calls_get_their_replies_over_every_transport_and_protocol() {
    for transport in [Transport::Buffered, Transport::Framed] {
        for protocol in [Protocol::Binary, Protocol::Compact] {
            let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
            let address = listener.local_addr().expect("address");
            let big = Bytes::from(vec![7u8; 300_000]);
            let answers = vec![
                Some(Ok(Reply::Names(vec![
                    Bytes::from_static(b"t1"),
                    big.clone(),
                ]))),
                Some(Err(HbaseError::AlreadyExists("t1".into()))),
                Some(Ok(Reply::I64(42))),
                None,
            ];
            let server = std::thread::spawn(move || serve(listener, answers));
            let mut client = Client::connect(address, transport, protocol).expect("connect");
            match client.call(&Call::GetTableNames).expect("names") {
                Reply::Names(names) => assert_eq!(names, vec![Bytes::from_static(b"t1"), big]),
                other => panic!("{other:?}"),
            }
            let err = client
                .call(&Call::CreateTable {
                    table: Bytes::from_static(b"t1"),
                    families: vec![],
                })
                .expect_err("exists");
            assert!(
                matches!(err, ClientError::Hbase(HbaseError::AlreadyExists(_))),
                "{err}"
            );
            let value = client
                .call(&Call::AtomicIncrement {
                    table: Bytes::from_static(b"t"),
                    row: Bytes::from_static(b"r"),
                    column: Bytes::from_static(b"cf:n"),
                    amount: 1,
                })
                .expect("increment");
            assert_eq!(value, Reply::I64(42));
            // The server hangs up: an error, not a hang or a panic.
            let err = client.call(&Call::GetTableNames).expect_err("closed");
            assert!(matches!(err, ClientError::Io(_)), "{err}");
            server.join().expect("server");
        }
    }
}
