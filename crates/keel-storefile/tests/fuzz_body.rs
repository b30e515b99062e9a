//! The cargo-fuzz target's body (`fuzz/fuzz_targets/body.rs`) on inputs CI can afford: random
//! bytes, and valid files with random bytes changed, truncated or appended, so the fuzz body
//! always compiles and never panics where cargo-fuzz is not installed.

use std::sync::Arc;

use keel_cell::Cell;
use keel_fs::StdFs;
use keel_storefile::{Compression, Encoding, StoreFileWriter, WriterOptions};
use rand::Rng;

include!("../fuzz/fuzz_targets/body.rs");

#[test]
fn the_fuzz_body_survives_random_and_mutated_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("seed.ksf");
    let options = WriterOptions {
        block_size: 256,
        encoding: Encoding::Diff,
        compression: Compression::Lz4,
        index_block_size: 1,
        ..WriterOptions::default()
    };
    let mut w = StoreFileWriter::create(Arc::new(StdFs), &path, options).expect("create");
    for r in 0..300u32 {
        w.append(&Cell::put(format!("row{r:04}"), "f", "q", 1, "value").expect("cell"))
            .expect("append");
    }
    w.finish().expect("finish");
    let valid = std::fs::read(&path).expect("read");
    exercise(&valid);
    let mut rng = keel_testkit::rng();
    for round in 0..300 {
        let mut data = if round % 5 == 0 {
            (0..rng.random_range(0..200))
                .map(|_| rng.random())
                .collect()
        } else {
            valid.clone()
        };
        for _ in 0..rng.random_range(0..4) {
            if data.is_empty() {
                break;
            }
            let at = rng.random_range(0..data.len());
            match rng.random_range(0..3) {
                0 => data[at] = rng.random(),
                1 => data.truncate(at),
                _ => data.extend((0..rng.random_range(1..40)).map(|_| rng.random::<u8>())),
            }
        }
        exercise(&data);
    }
}
