//! The cargo-fuzz target's body (`fuzz/fuzz_targets/body.rs`) on inputs CI can afford: random
//! bytes, and every kind of valid request, in both protocols, with bytes changed, cut or
//! appended — so the fuzz body always compiles and never panics where cargo-fuzz is absent.

use bytes::Bytes;
use keel_thrift::hbase::{BatchMutation, Call, Mutation, TScan};
use keel_thrift::{BinaryEncoder, CompactEncoder, Encoder};
use rand::Rng;

include!("../fuzz/fuzz_targets/body.rs");

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

fn seeds() -> Vec<Vec<u8>> {
    let calls = [
        Call::GetTableNames,
        Call::MutateRows {
            table: b("t"),
            batches: vec![BatchMutation {
                row: b("r"),
                mutations: vec![
                    Mutation {
                        column: b("cf:a"),
                        value: Some(b("v")),
                        ..Mutation::default()
                    },
                    Mutation {
                        is_delete: true,
                        column: b("cf"),
                        ..Mutation::default()
                    },
                ],
            }],
            timestamp: Some(5),
        },
        Call::GetRows {
            table: b("t"),
            rows: vec![b("a"), b("b")],
            columns: Some(vec![b("cf:a")]),
            timestamp: None,
        },
        Call::ScannerOpen {
            table: b("t"),
            scan: TScan {
                start_row: Some(b("a")),
                columns: Some(vec![b("cf")]),
                reversed: Some(true),
                ..TScan::default()
            },
        },
        Call::CheckAndPut {
            table: b("t"),
            row: b("r"),
            column: b("cf:a"),
            value: None,
            mutation: Mutation::default(),
        },
    ];
    let mut out = Vec::new();
    for call in &calls {
        let mut binary = BinaryEncoder::new();
        call.encode(&mut binary, 1);
        out.push(binary.take());
        let mut compact = CompactEncoder::new();
        call.encode(&mut compact, 1);
        out.push(compact.take());
    }
    out
}

#[test]
fn the_fuzz_body_survives_random_and_mutated_requests() {
    let seeds = seeds();
    for seed in &seeds {
        exercise(seed);
    }
    // `KEEL_WRITE_FUZZ_SEEDS=dir` writes the seeds out: `fuzz/seeds` is made this way.
    if let Ok(dir) = std::env::var("KEEL_WRITE_FUZZ_SEEDS") {
        for (i, seed) in seeds.iter().enumerate() {
            std::fs::write(
                std::path::Path::new(&dir).join(format!("request-{i:02}")),
                seed,
            )
            .expect("write a seed");
        }
    }
    let mut rng = keel_testkit::rng();
    for round in 0..3000 {
        let mut data: Vec<u8> = if round % 5 == 0 {
            (0..rng.random_range(0..120))
                .map(|_| rng.random())
                .collect()
        } else {
            seeds[rng.random_range(0..seeds.len())].clone()
        };
        for _ in 0..rng.random_range(1..4) {
            if data.is_empty() {
                break;
            }
            let at = rng.random_range(0..data.len());
            match rng.random_range(0..3) {
                0 => data[at] = rng.random(),
                1 => data.truncate(at),
                _ => data.extend((0..rng.random_range(1..16)).map(|_| rng.random::<u8>())),
            }
        }
        exercise(&data);
    }
}
