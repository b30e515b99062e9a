//! `cargo xtask bench thrift`: decoding speed of a typical write request — `mutateRows` of 200
//! rows × 5 columns of 100-byte values (about 150 KB) — with keel-thrift and with the Apache
//! `thrift` crate, binary and compact, in one run. Ours decodes values as slices of the frame
//! (no copy); the crate copies each into a `Vec`. Prints MB/s and the ratio ours / crate.

#![expect(clippy::print_stdout, reason = "a benchmark reports on the terminal")]

use std::hint::black_box;
use std::time::{Duration, Instant};

use bytes::Bytes;
use keel_testkit::figure;
use keel_thrift::{
    BinaryDecoder, BinaryEncoder, CompactDecoder, CompactEncoder, Decoder, Encoder, Limits,
    MessageHeader, MessageType, TType,
};
use thrift::protocol::{TBinaryInputProtocol, TCompactInputProtocol, TInputProtocol, TType as T};

const ROWS: usize = 200;
const COLUMNS: usize = 5;

/// `mutateRows(tableName, list<BatchMutation>, attributes)`.
fn request(e: &mut dyn Encoder) -> Vec<u8> {
    e.write_message_begin(&MessageHeader {
        name: "mutateRows".into(),
        kind: MessageType::Call,
        seqid: 0,
    });
    e.write_struct_begin();
    e.write_field_begin(TType::Binary, 1);
    e.write_binary(b"usertable");
    e.write_field_begin(TType::List, 2);
    e.write_list_begin(TType::Struct, ROWS);
    for r in 0..ROWS {
        e.write_struct_begin();
        e.write_field_begin(TType::Binary, 1);
        e.write_binary(format!("user{r:016}").as_bytes());
        e.write_field_begin(TType::List, 2);
        e.write_list_begin(TType::Struct, COLUMNS);
        for c in 0..COLUMNS {
            e.write_struct_begin();
            e.write_field_begin(TType::Bool, 1);
            e.write_bool(false);
            e.write_field_begin(TType::Binary, 2);
            e.write_binary(format!("family:field{c}").as_bytes());
            e.write_field_begin(TType::Binary, 3);
            e.write_binary(&[b'v'; 100]);
            e.write_field_begin(TType::Bool, 4);
            e.write_bool(true);
            e.write_struct_end();
        }
        e.write_struct_end();
    }
    e.write_field_begin(TType::Map, 3);
    e.write_map_begin(TType::Binary, TType::Binary, 0);
    e.write_struct_end();
    e.take()
}

fn ours(decoder: &mut dyn Decoder) -> usize {
    decoder.read_message_begin().expect("header");
    let mut values = 0;
    decoder.read_struct_begin().expect("args");
    while let Some(field) = decoder.read_field_begin().expect("field") {
        if field.id == 2 {
            let (_, rows) = decoder.read_list_begin().expect("list");
            for _ in 0..rows {
                decoder.read_struct_begin().expect("batch");
                while let Some(f) = decoder.read_field_begin().expect("field") {
                    if f.id == 2 {
                        let (_, columns) = decoder.read_list_begin().expect("list");
                        for _ in 0..columns {
                            decoder.read_struct_begin().expect("mutation");
                            while let Some(m) = decoder.read_field_begin().expect("field") {
                                if m.ttype == TType::Binary {
                                    values += decoder.read_binary().expect("value").len();
                                } else {
                                    decoder.skip(m.ttype).expect("skip");
                                }
                            }
                            decoder.read_struct_end().expect("end");
                        }
                        decoder.read_container_end();
                    } else {
                        decoder.skip(f.ttype).expect("skip");
                    }
                }
                decoder.read_struct_end().expect("end");
            }
            decoder.read_container_end();
        } else {
            decoder.skip(field.ttype).expect("skip");
        }
    }
    values
}

fn theirs(i: &mut dyn TInputProtocol) -> usize {
    fn skip_struct(i: &mut dyn TInputProtocol, values: &mut usize) {
        i.read_struct_begin().expect("struct");
        loop {
            let f = i.read_field_begin().expect("field");
            match f.field_type {
                T::Stop => break,
                T::String => *values += i.read_bytes().expect("bytes").len(),
                T::List => {
                    let l = i.read_list_begin().expect("list");
                    for _ in 0..l.size {
                        skip_struct(i, values);
                    }
                    i.read_list_end().expect("end");
                }
                other => i.skip(other).expect("skip"),
            }
            i.read_field_end().expect("end");
        }
        i.read_struct_end().expect("end");
    }
    i.read_message_begin().expect("header");
    let mut values = 0;
    skip_struct(i, &mut values);
    values
}

/// Decodes per second over `time`.
fn rate(time: Duration, mut decode: impl FnMut() -> usize) -> f64 {
    let started = Instant::now();
    let mut n = 0u64;
    while started.elapsed() < time {
        black_box(decode());
        n += 1;
    }
    n as f64 / started.elapsed().as_secs_f64()
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let time = Duration::from_millis(if quick { 400 } else { 3000 });
    let binary = Bytes::from(request(&mut BinaryEncoder::new()));
    let compact = Bytes::from(request(&mut CompactEncoder::new()));
    println!(
        "thrift: mutateRows of {ROWS} rows × {COLUMNS} columns; binary {} B, compact {} B",
        binary.len(),
        compact.len()
    );
    let mut figures = Vec::new();
    for (label, bytes, is_compact) in [("binary", &binary, false), ("compact", &compact, true)] {
        let ours_rate = rate(time, || {
            let mut d: Box<dyn Decoder> = if is_compact {
                Box::new(CompactDecoder::new(bytes.clone(), Limits::default()))
            } else {
                Box::new(BinaryDecoder::new(bytes.clone(), Limits::default()))
            };
            ours(&mut *d)
        });
        let theirs_rate = rate(time, || {
            let mut reader: &[u8] = bytes;
            let mut i: Box<dyn TInputProtocol> = if is_compact {
                Box::new(TCompactInputProtocol::new(&mut reader))
            } else {
                Box::new(TBinaryInputProtocol::new(&mut reader, true))
            };
            theirs(&mut *i)
        });
        let mb = bytes.len() as f64 / 1e6;
        println!(
            "  {label:<8} keel-thrift {:>8.0} MB/s   thrift crate {:>8.0} MB/s   ratio {:.2}",
            ours_rate * mb,
            theirs_rate * mb,
            ours_rate / theirs_rate
        );
        figures.push((label, ours_rate / theirs_rate));
    }
    for (label, ratio) in figures {
        println!(
            "{}",
            figure(&format!("thrift_{label}_decode_vs_crate"), ratio)
        );
    }
}
