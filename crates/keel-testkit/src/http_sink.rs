//! [`HttpSink`]: the smallest HTTP/1.1 server that stands in for a collector — it accepts
//! connections, reads each POST whole (keep-alive included), hands its path and body to a
//! callback and answers `200 OK`. Tests and benchmarks point an exporter at it (OTLP/HTTP).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;

/// A running sink; it serves until the process ends.
#[derive(Debug)]
pub struct HttpSink {
    addr: SocketAddr,
}

impl HttpSink {
    /// Starts a sink on an ephemeral loopback port; `on_request(path, body)` runs for each
    /// request, on the connection's own thread.
    pub fn start(
        on_request: impl Fn(&str, &[u8]) + Send + Sync + 'static,
    ) -> std::io::Result<HttpSink> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let on_request = Arc::new(on_request);
        std::thread::Builder::new()
            .name("http-sink".into())
            .spawn(move || {
                for stream in listener.incoming().flatten() {
                    let on_request = Arc::clone(&on_request);
                    let _ = std::thread::Builder::new()
                        .name("http-sink-conn".into())
                        .spawn(move || serve(stream, &*on_request));
                }
            })?;
        Ok(HttpSink { addr })
    }

    /// Its `http://host:port` base URL.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

fn serve(mut stream: TcpStream, on_request: &dyn Fn(&str, &[u8])) {
    let mut buf = Vec::new();
    while let Some((path, body)) = read_request(&mut stream, &mut buf) {
        on_request(&path, &body);
        if stream
            .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
            .is_err()
        {
            return;
        }
    }
}

/// One request: its path and body; `None` when the peer closes (or sends garbage).
fn read_request(stream: &mut TcpStream, buf: &mut Vec<u8>) -> Option<(String, Vec<u8>)> {
    let mut chunk = [0u8; 16 * 1024];
    let (head_end, len) = loop {
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..at]).to_ascii_lowercase();
            let len = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok())
                .unwrap_or(0);
            break (at + 4, len);
        }
        let n = stream.read(&mut chunk).ok().filter(|&n| n > 0)?;
        buf.extend_from_slice(&chunk[..n]);
    };
    while buf.len() < head_end + len {
        let n = stream.read(&mut chunk).ok().filter(|&n| n > 0)?;
        buf.extend_from_slice(&chunk[..n]);
    }
    let request_line = String::from_utf8_lossy(&buf[..head_end]);
    let path = request_line
        .split(' ')
        .nth(1)
        .unwrap_or_default()
        .to_string();
    let body = buf[head_end..head_end + len].to_vec();
    buf.drain(..head_end + len);
    Some((path, body))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    #[test]
    fn posts_reach_the_callback_on_one_connection() {
        let (tx, rx) = mpsc::channel();
        let tx = std::sync::Mutex::new(tx);
        let sink = HttpSink::start(move |path, body| {
            let _ = tx.lock().map(|t| t.send((path.to_string(), body.to_vec())));
        })
        .expect("start");
        let mut stream = TcpStream::connect(sink.addr).expect("connect");
        for body in ["one", "two!"] {
            write!(
                stream,
                "POST /v1/traces HTTP/1.1\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            )
            .expect("write");
            let mut reply = [0u8; 38];
            stream.read_exact(&mut reply).expect("reply");
            assert!(reply.starts_with(b"HTTP/1.1 200 OK"));
        }
        let got: Vec<_> = rx.iter().take(2).collect();
        assert_eq!(got[0], ("/v1/traces".to_string(), b"one".to_vec()));
        assert_eq!(got[1].1, b"two!".to_vec());
    }
}
