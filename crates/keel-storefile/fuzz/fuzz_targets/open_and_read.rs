//! `cargo xtask fuzz storefile`: any bytes, opened as a store file and read every way a reader
//! can read; nothing may panic. The body is shared with `tests/fuzz_body.rs`, which runs it on
//! random and mutated inputs in every CI run.

#![no_main]

include!("body.rs");

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    exercise(data);
});
