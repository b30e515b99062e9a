//! The abuse suite's cases: each sets the store up, then attacks a running `keel serve` from
//! threads that run until told to stop, counting anything the server did that it must not
//! (a stolen scanner served, a wrong answer).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use bytes::Bytes;
use keel_thrift::hbase::{BatchMutation, Call, Mutation, Reply, TScan};
use keel_thrift::{BinaryEncoder, Client, Encoder, MessageHeader, MessageType, TType};

use crate::harness::{Server, b, put};

/// One attack.
pub(crate) trait Case {
    /// Its name in the report.
    fn name(&self) -> &'static str;
    /// Prepares the store (before the idle measurement).
    fn setup(&mut self, _server: &Server) {}
    /// Starts the attack; each thread returns how often the server misbehaved.
    fn attack(&mut self, server: &Server, stop: &Arc<AtomicBool>) -> Vec<JoinHandle<u64>>;
    /// Checks made once the attack has stopped.
    fn after(&mut self, _server: &Server) -> Result<(), String> {
        Ok(())
    }
}

/// Not an attack: four threads spinning in the client process and nothing sent to the
/// server. What the victim's p99 does when the machine's two cores are merely busy — the
/// yardstick for the CPU-heavy attacks, kept out of the suite's figures.
pub(crate) struct CpuControl;

impl Case for CpuControl {
    fn name(&self) -> &'static str {
        "control: 4 busy client threads, no attack"
    }

    fn attack(&mut self, _server: &Server, stop: &Arc<AtomicBool>) -> Vec<JoinHandle<u64>> {
        (0..4)
            .map(|_| {
                spawn(stop, |stop| {
                    let mut x = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        x = std::hint::black_box(
                            x.wrapping_mul(6364136223846793005).wrapping_add(1),
                        );
                    }
                    0
                })
            })
            .collect()
    }
}

/// Every case, in the order the report lists them.
pub(crate) fn all() -> Vec<Box<dyn Case>> {
    vec![
        Box::new(SlowReaders),
        Box::new(EmptyStructFlood),
        Box::new(PartialFrames),
        Box::new(ReverseScans),
        Box::new(ScannerTheft::default()),
        Box::new(StatusSlowloris),
    ]
}

fn spawn(
    stop: &Arc<AtomicBool>,
    work: impl FnOnce(&AtomicBool) -> u64 + Send + 'static,
) -> JoinHandle<u64> {
    let stop = Arc::clone(stop);
    std::thread::spawn(move || work(&stop))
}

fn framed(call: &Call) -> Vec<u8> {
    let mut e = BinaryEncoder::new();
    call.encode(&mut e, 1);
    frame(e.take())
}

fn frame(body: Vec<u8>) -> Vec<u8> {
    let mut out = (body.len() as u32).to_be_bytes().to_vec();
    out.extend_from_slice(&body);
    out
}

fn connect(port: u16) -> Option<TcpStream> {
    let socket = TcpStream::connect(("127.0.0.1", port)).ok()?;
    socket
        .set_write_timeout(Some(Duration::from_secs(5)))
        .ok()?;
    socket
        .set_read_timeout(Some(Duration::from_secs(10)))
        .ok()?;
    Some(socket)
}

/// Clients that ask for a 12 MiB row and never read the reply, 40 at a time, a new 40 every
/// second: their replies must not hold handlers, nor more memory than the budget.
struct SlowReaders;

impl Case for SlowReaders {
    fn name(&self) -> &'static str {
        "slow readers (40 × 12 MiB replies unread)"
    }

    fn setup(&mut self, server: &Server) {
        let mut c = server.client();
        for i in 0..3 {
            put(
                &mut c,
                "big",
                &format!("cf:v{i}"),
                Bytes::from(vec![b'x'; 4 << 20]),
            );
        }
    }

    fn attack(&mut self, server: &Server, stop: &Arc<AtomicBool>) -> Vec<JoinHandle<u64>> {
        let port = server.port;
        let request = framed(&Call::GetRows {
            table: b("t"),
            rows: vec![b("big")],
            columns: None,
            timestamp: None,
        });
        vec![spawn(stop, move |stop| {
            let mut held: Vec<TcpStream> = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                held.clear();
                for _ in 0..40 {
                    if let Some(mut socket) = connect(port) {
                        let _ = socket.write_all(&request);
                        held.push(socket);
                    }
                }
                std::thread::sleep(Duration::from_secs(1));
            }
            0
        })]
    }
}

/// Frames of 16 M empty structs (an `incrementRows` list): 16 MiB on the wire, gigabytes if
/// decoded. Eight connections send them back to back.
struct EmptyStructFlood;

fn empty_struct_frame() -> Vec<u8> {
    let count = 16_000_000;
    let mut e = BinaryEncoder::new();
    e.write_message_begin(&MessageHeader {
        name: "incrementRows".into(),
        kind: MessageType::Call,
        seqid: 1,
    });
    e.write_struct_begin();
    e.write_field_begin(TType::List, 1);
    e.write_list_begin(TType::Struct, count);
    let mut body = e.take();
    // Each empty struct is its stop byte.
    body.resize(body.len() + count, 0);
    body.extend_from_slice(&[0]);
    frame(body)
}

impl Case for EmptyStructFlood {
    fn name(&self) -> &'static str {
        "empty-struct floods (8 × 16 MiB frames)"
    }

    fn attack(&mut self, server: &Server, stop: &Arc<AtomicBool>) -> Vec<JoinHandle<u64>> {
        let frame = Arc::new(empty_struct_frame());
        (0..8)
            .map(|_| {
                let (frame, port) = (Arc::clone(&frame), server.port);
                spawn(stop, move |stop| {
                    let mut reply = vec![0u8; 64 << 10];
                    while !stop.load(Ordering::Relaxed) {
                        let Some(mut socket) = connect(port) else {
                            std::thread::sleep(Duration::from_millis(50));
                            continue;
                        };
                        while !stop.load(Ordering::Relaxed) && socket.write_all(&frame).is_ok() {
                            // The refusal; whatever it is, it is small.
                            if !matches!(socket.read(&mut reply), Ok(n) if n > 0) {
                                break;
                            }
                        }
                    }
                    0
                })
            })
            .collect()
    }
}

/// 900 connections each announce a 16 MiB frame and send 64 KiB of it.
struct PartialFrames;

impl Case for PartialFrames {
    fn name(&self) -> &'static str {
        "partial frames (900 × 64 KiB of 16 MiB)"
    }

    fn attack(&mut self, server: &Server, stop: &Arc<AtomicBool>) -> Vec<JoinHandle<u64>> {
        let port = server.port;
        vec![spawn(stop, move |stop| {
            let mut start = (16u32 << 20).to_be_bytes().to_vec();
            let mut body = vec![0u8; 64 << 10];
            body[..4].copy_from_slice(&[0x80, 0x01, 0x00, 0x01]);
            start.extend_from_slice(&body);
            let mut held = Vec::new();
            for _ in 0..900 {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                if let Some(mut socket) = connect(port) {
                    let _ = socket.write_all(&start);
                    held.push(socket);
                }
            }
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(20));
            }
            0
        })]
    }
}

/// `getRowOrBefore` past the last row, and reversed scans asking for 2³¹ − 1 rows at once,
/// over 20 000 rows of 1 KiB. Each answer is checked.
struct ReverseScans;

const SCAN_ROWS: usize = 20_000;

fn scan_row(i: usize) -> String {
    format!("row{i:06}")
}

impl Case for ReverseScans {
    fn name(&self) -> &'static str {
        "reverse scans and getRowOrBefore (4 clients, 20 000 rows)"
    }

    fn setup(&mut self, server: &Server) {
        let mut c = server.client();
        for start in (0..SCAN_ROWS).step_by(500) {
            c.call(&Call::MutateRows {
                table: b("t"),
                batches: (start..start + 500)
                    .map(|i| BatchMutation {
                        row: b(&scan_row(i)),
                        mutations: vec![Mutation {
                            column: b("cf:v"),
                            value: Some(Bytes::from(vec![b'r'; 1024])),
                            ..Mutation::default()
                        }],
                    })
                    .collect(),
                timestamp: None,
            })
            .expect("load");
        }
    }

    fn attack(&mut self, server: &Server, stop: &Arc<AtomicBool>) -> Vec<JoinHandle<u64>> {
        (0..4)
            .map(|_| {
                let mut c = server.client();
                spawn(stop, move |stop| {
                    let mut wrong = 0;
                    while !stop.load(Ordering::Relaxed) {
                        // The row at or before "row\xff…": the last of the loaded rows.
                        let mut after_all = b"row".to_vec();
                        after_all.extend_from_slice(&[0xff; 16]);
                        match c.call(&Call::GetRowOrBefore {
                            table: b("t"),
                            row: Bytes::from(after_all),
                            family: b("cf"),
                        }) {
                            Ok(Reply::Cells(cells)) if cells.len() == 1 => {}
                            Ok(_) => wrong += 1,
                            Err(_) => {}
                        }
                        let Ok(Reply::I32(id)) = c.call(&Call::ScannerOpen {
                            table: b("t"),
                            scan: TScan {
                                reversed: Some(true),
                                ..TScan::default()
                            },
                        }) else {
                            continue;
                        };
                        if let Ok(Reply::Rows(rows)) =
                            c.call(&Call::ScannerGet { id, rows: i32::MAX })
                        {
                            // Newest first, and no more than about 4 MiB of them.
                            let in_order = rows.windows(2).all(|w| w[0].row > w[1].row);
                            if !in_order || rows.len() > 4200 {
                                wrong += 1;
                            }
                        }
                        let _ = c.call(&Call::ScannerClose { id });
                    }
                    wrong
                })
            })
            .collect()
    }
}

/// Another connection's scanner, by its id and every id near it: it must be neither read nor
/// closed by anyone but its owner.
#[derive(Default)]
struct ScannerTheft {
    owner: Option<(Client, i32)>,
}

impl Case for ScannerTheft {
    fn name(&self) -> &'static str {
        "scanner theft (2 clients trying 4 000 ids)"
    }

    fn setup(&mut self, server: &Server) {
        let mut c = server.client();
        for i in 0..100 {
            put(&mut c, &scan_row(i), "cf:v", b("v"));
        }
        let Ok(Reply::I32(id)) = c.call(&Call::ScannerOpen {
            table: b("t"),
            scan: TScan::default(),
        }) else {
            panic!("scanner open")
        };
        self.owner = Some((c, id));
    }

    fn attack(&mut self, server: &Server, stop: &Arc<AtomicBool>) -> Vec<JoinHandle<u64>> {
        let owned = self.owner.as_ref().map_or(0, |(_, id)| *id);
        (0..2)
            .map(|_| {
                let mut c = server.client();
                spawn(stop, move |stop| {
                    let mut stolen = 0;
                    let ids =
                        (owned.saturating_sub(1000)..owned.saturating_add(1000)).chain(0..2000);
                    for id in ids.cycle() {
                        if stop.load(Ordering::Relaxed) {
                            break;
                        }
                        if c.call(&Call::ScannerGet { id, rows: 1 }).is_ok() {
                            stolen += 1;
                        }
                        if c.call(&Call::ScannerClose { id }).is_ok() {
                            stolen += 1;
                        }
                    }
                    stolen
                })
            })
            .collect()
    }

    fn after(&mut self, _server: &Server) -> Result<(), String> {
        let (c, id) = self.owner.as_mut().expect("set up");
        match c.call(&Call::ScannerGet { id: *id, rows: 10 }) {
            Ok(Reply::Rows(rows)) if !rows.is_empty() => Ok(()),
            other => Err(format!("the owner's scanner was lost: {other:?}")),
        }
    }
}

/// 300 connections to the status port that send a header a byte at a time, and one that
/// sends a header line that never ends.
struct StatusSlowloris;

impl Case for StatusSlowloris {
    fn name(&self) -> &'static str {
        "status-port slowloris (300 slow heads, 1 endless)"
    }

    fn attack(&mut self, server: &Server, stop: &Arc<AtomicBool>) -> Vec<JoinHandle<u64>> {
        let port = server.status_port;
        let slow = spawn(stop, move |stop| {
            let mut held: Vec<TcpStream> = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                held.retain_mut(|s| s.write_all(b"a").is_ok());
                while held.len() < 300 && !stop.load(Ordering::Relaxed) {
                    let Some(mut socket) = connect(port) else {
                        break;
                    };
                    let _ = socket.write_all(b"GET / HTTP/1.1\r\nHost: keel\r\nX-Slow: ");
                    held.push(socket);
                }
                std::thread::sleep(Duration::from_millis(200));
            }
            0
        });
        let endless = spawn(stop, move |stop| {
            let line = vec![b'a'; 64 << 10];
            while !stop.load(Ordering::Relaxed) {
                let Some(mut socket) = connect(port) else {
                    std::thread::sleep(Duration::from_millis(50));
                    continue;
                };
                let _ = socket.write_all(b"GET / HTTP/1.1\r\nX-Endless: ");
                while !stop.load(Ordering::Relaxed) && socket.write_all(&line).is_ok() {}
            }
            0
        });
        vec![slow, endless]
    }

    fn after(&mut self, server: &Server) -> Result<(), String> {
        // Once the crowd has gone, the status port answers again.
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(mut socket) = connect(server.status_port) {
                let _ = socket
                    .write_all(b"GET /metrics HTTP/1.1\r\nHost: keel\r\nConnection: close\r\n\r\n");
                let mut head = [0u8; 12];
                if socket.read_exact(&mut head).is_ok() && head.starts_with(b"HTTP/1.1 200") {
                    return Ok(());
                }
            }
            if Instant::now() > deadline {
                return Err("the status port did not answer within 20 s of the attack".into());
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}
