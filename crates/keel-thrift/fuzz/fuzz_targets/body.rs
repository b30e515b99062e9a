// The fuzz body, included by the cargo-fuzz target and by `tests/fuzz_body.rs`.

/// Reads `data` every way keel-server and keel-thrift's client do. Panics only if a decoded
/// request does not survive re-encoding (or if the decoder itself panics).
pub fn exercise(data: &[u8]) {
    use keel_thrift::hbase::{decode_call, decode_reply};
    use keel_thrift::transport::{detect, frame_len};
    use keel_thrift::{BinaryDecoder, BinaryEncoder, CompactDecoder, CompactEncoder};
    use keel_thrift::{Decoder, Encoder, Limits};

    // Limits far below the defaults, so that a length field may not make the decoder reserve
    // more than the input could ever hold without the fuzzer noticing (its RSS limit).
    let limits = Limits {
        max_string: 1 << 20,
        max_container: 1 << 16,
        max_depth: 32,
        max_decoded: 16 << 20,
    };
    let _ = detect(data);
    if let [a, b, c, d, ..] = *data {
        let _ = frame_len([a, b, c, d], 1 << 20);
    }
    let bytes = bytes::Bytes::copy_from_slice(data);
    for compact in [false, true] {
        let decoder = |b: bytes::Bytes| -> Box<dyn Decoder> {
            if compact {
                Box::new(CompactDecoder::new(b, limits))
            } else {
                Box::new(BinaryDecoder::new(b, limits))
            }
        };
        let mut encoder: Box<dyn Encoder> = if compact {
            Box::new(CompactEncoder::new())
        } else {
            Box::new(BinaryEncoder::new())
        };
        if let Ok((header, call)) = decode_call(&mut *decoder(bytes.clone())) {
            call.encode(&mut *encoder, header.seqid);
            let again = decode_call(&mut *decoder(bytes::Bytes::from(encoder.take())))
                .expect("a re-encoded request decodes");
            assert_eq!(again.1, call, "a re-encoded request is the same call");
        }
        let _ = decode_reply(&mut *decoder(bytes.clone()));
    }
}
