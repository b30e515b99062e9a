//! `cargo xtask fuzz thrift`: any bytes, read the ways the server and the client read them —
//! transport detection, a frame header, a request and a reply in each protocol; nothing may
//! panic, and a request that decodes re-encodes to the same call. The body is shared with
//! `tests/fuzz_body.rs`, which runs it on random and mutated requests in every CI run.

#![no_main]

include!("body.rs");

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    exercise(data);
});
