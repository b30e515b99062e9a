//! FaultFs against a model: random appends, overwrites, truncations, syncs and crashes on one
//! file; after every step the live bytes match the model's, and a crash image holds exactly the
//! bytes of the last successful sync.

use std::path::Path;

use keel_fs::{Fault, FaultFs, FileSystem};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    Append(Vec<u8>),
    WriteAt(u8, Vec<u8>),
    Truncate(u8),
    Sync,
    FailingSync,
    TornAppend(Vec<u8>),
    Crash,
}

fn op() -> impl Strategy<Value = Op> {
    let bytes = proptest::collection::vec(any::<u8>(), 1..8);
    prop_oneof![
        4 => bytes.clone().prop_map(Op::Append),
        2 => (any::<u8>(), bytes.clone()).prop_map(|(at, b)| Op::WriteAt(at % 40, b)),
        1 => any::<u8>().prop_map(|len| Op::Truncate(len % 40)),
        3 => Just(Op::Sync),
        1 => Just(Op::FailingSync),
        1 => bytes.prop_map(Op::TornAppend),
        1 => Just(Op::Crash),
    ]
}

fn contents(fs: &FaultFs) -> Vec<u8> {
    fs.contents(Path::new("/f")).expect("the file exists")
}

proptest! {
    #[test]
    fn crash_images_hold_exactly_the_last_synced_bytes(ops in proptest::collection::vec(op(), 1..40)) {
        let mut fs = FaultFs::new();
        let mut file = fs.create(Path::new("/f")).unwrap();
        fs.sync_dir(Path::new("/")).unwrap();
        let (mut live, mut durable) = (Vec::<u8>::new(), Vec::<u8>::new());
        for op in ops {
            match op {
                Op::Append(bytes) => {
                    file.append(&bytes).unwrap();
                    live.extend(bytes);
                }
                Op::WriteAt(at, bytes) => {
                    let at = usize::from(at);
                    file.write_at(&bytes, at as u64).unwrap();
                    if live.len() < at + bytes.len() {
                        live.resize(at + bytes.len(), 0);
                    }
                    live[at..at + bytes.len()].copy_from_slice(&bytes);
                }
                Op::Truncate(len) => {
                    file.truncate(u64::from(len)).unwrap();
                    live.resize(usize::from(len), 0);
                }
                Op::Sync => {
                    file.sync_data().unwrap();
                    durable = live.clone();
                }
                Op::FailingSync => {
                    fs.inject(Fault::fail_sync(1));
                    prop_assert!(file.sync_all().is_err());
                }
                Op::TornAppend(bytes) => {
                    fs.inject(Fault::short_write(1));
                    prop_assert!(file.append(&bytes).is_err());
                    live.extend(&bytes[..bytes.len() / 2]);
                }
                Op::Crash => {
                    fs = fs.crash_image();
                    file = fs.open(Path::new("/f")).unwrap();
                    live = durable.clone();
                }
            }
            prop_assert_eq!(&contents(&fs), &live);
            prop_assert_eq!(contents(&fs.crash_image()), durable.clone());
        }
    }
}
