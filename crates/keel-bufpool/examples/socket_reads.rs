//! Pooled socket reads on keel-bufpool alone: a loopback server reads length-prefixed frames
//! from four client connections into buffers from one shared `BufferPool` (the way keel-server
//! reads Thrift frames), checks each frame's bytes, and drops it, which returns its buffers.
//! At the end every pooled buffer is back on the free list and the pool never made more than
//! the frames in flight needed.
//!
//! `cargo run -p keel-bufpool --example socket_reads`

#![expect(clippy::print_stdout, reason = "an example reports what it did")]

use std::error::Error;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};

use bytes::{Buf, BufMut};
use keel_bufpool::{BufferPool, PoolOptions};

const CONNECTIONS: usize = 4;
const FRAMES: usize = 200;

/// Frame `i` of connection `c`: its length and its bytes, a pattern the reader can check.
fn frame(c: usize, i: usize) -> Vec<u8> {
    let len = [40, 3_000, 9_000, 20_000, 70_000][(c + i) % 5];
    (0..len).map(|j| (j + 7 * i + 13 * c) as u8).collect()
}

fn send(address: std::net::SocketAddr, c: usize) -> std::io::Result<()> {
    let mut stream = TcpStream::connect(address)?;
    stream.write_all(&[c as u8])?;
    for i in 0..FRAMES {
        let body = frame(c, i);
        stream.write_all(&(body.len() as u32).to_be_bytes())?;
        stream.write_all(&body)?;
    }
    Ok(())
}

/// Reads every frame of one connection into pooled buffers; returns the frames it checked.
fn serve(pool: &BufferPool, mut stream: TcpStream, c: usize) -> Result<usize, String> {
    let mut chunk = [0u8; 8192];
    for i in 0..FRAMES {
        let mut len = [0u8; 4];
        stream.read_exact(&mut len).map_err(|e| e.to_string())?;
        let len = u32::from_be_bytes(len) as usize;
        // The length is the client's: the pool refuses one above its limit before allocating.
        let mut buf = pool.allocate(len).map_err(|e| e.to_string())?;
        let mut left = len;
        while left > 0 {
            let n = stream
                .read(&mut chunk[..left.min(8192)])
                .map_err(|e| e.to_string())?;
            if n == 0 {
                return Err("the client hung up mid-frame".into());
            }
            buf.put_slice(&chunk[..n]);
            left -= n;
        }
        let mut frozen = buf.freeze();
        let mut got = vec![0u8; frozen.remaining()];
        frozen.copy_to_slice(&mut got);
        if got != frame(c, i) {
            return Err(format!("connection {c} frame {i}: the bytes differ"));
        }
    }
    Ok(FRAMES)
}

fn main() -> Result<(), Box<dyn Error>> {
    // Small buffers so that large frames take chains of them.
    let pool = BufferPool::new(PoolOptions {
        max_buffers: 64,
        ..PoolOptions::with_buffer_size(16 * 1024)
    });
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let address = listener.local_addr()?;
    let checked = std::thread::scope(|s| -> Result<usize, String> {
        let clients: Vec<_> = (0..CONNECTIONS)
            .map(|c| s.spawn(move || send(address, c)))
            .collect();
        let mut servers = Vec::new();
        for _ in 0..CONNECTIONS {
            let (mut stream, _) = listener.accept().map_err(|e| e.to_string())?;
            // Connections arrive in any order: each client names itself in its first byte.
            let mut id = [0u8; 1];
            stream.read_exact(&mut id).map_err(|e| e.to_string())?;
            let c = usize::from(id[0]);
            let pool = &pool;
            servers.push(s.spawn(move || serve(pool, stream, c)));
        }
        let mut checked = 0;
        for server in servers {
            checked += server.join().map_err(|_| "a server panicked")??;
        }
        for client in clients {
            client
                .join()
                .map_err(|_| "a client panicked")?
                .map_err(|e| e.to_string())?;
        }
        Ok(checked)
    })?;
    let stats = pool.stats();
    println!(
        "{checked} frames read into pooled buffers: {} pooled buffers handed out, {} heap \
         allocations (small frames and tails), {} buffers made, {} free at the end",
        stats.pooled_allocations, stats.heap_allocations, stats.live_buffers, stats.free_buffers
    );
    if checked != CONNECTIONS * FRAMES {
        return Err(format!("checked {checked} frames of {}", CONNECTIONS * FRAMES).into());
    }
    if stats.free_buffers != stats.live_buffers || stats.buffers_discarded != 0 {
        return Err(format!("buffers not all returned: {stats:?}").into());
    }
    if stats.pooled_allocations == 0 || stats.live_buffers > 64 {
        return Err(format!("the pool was not used as it should be: {stats:?}").into());
    }
    Ok(())
}
