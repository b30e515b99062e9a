//! proptest: any interleaving of appends (every durability), syncs, rolls, flushes (with
//! truncation), clean reopens and power cuts. After a clean close, replay equals the
//! acknowledged sequence above each region's flush point; after a power cut it is a prefix of
//! that sequence holding at least everything made durable (FsyncWal, sync, close) — no gap, no
//! duplicate, no garbage.

mod common;

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use common::*;
use keel_fs::{FaultFs, FileSystem};
use keel_wal::{Durability, ReplayOptions, Wal, WalOptions};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    Append(u64, Durability, usize),
    Sync,
    Roll,
    Flush(u64),
    Reopen,
    Crash,
}

fn op() -> impl Strategy<Value = Op> {
    let durability = prop::sample::select(vec![
        Durability::SkipWal,
        Durability::AsyncWal,
        Durability::SyncWal,
        Durability::FsyncWal,
    ]);
    prop_oneof![
        10 => (0u64..3, durability, 0usize..200).prop_map(|(r, d, n)| Op::Append(r, d, n)),
        2 => Just(Op::Sync),
        2 => Just(Op::Roll),
        2 => (0u64..3).prop_map(Op::Flush),
        1 => Just(Op::Reopen),
        1 => Just(Op::Crash),
    ]
}

/// The model: every logged (region, sequence id) in LSN order, how many are durable, the next
/// sequence id per region, and the flush points.
#[derive(Default)]
struct Model {
    logged: Vec<(u64, u64)>,
    durable: usize,
    next_seq: HashMap<u64, u64>,
    flushed: HashMap<u64, u64>,
}

impl Model {
    fn visible(&self, upto: usize) -> Vec<(u64, u64)> {
        self.logged[..upto]
            .iter()
            .copied()
            .filter(|(r, s)| *s > self.flushed.get(r).copied().unwrap_or(0))
            .collect()
    }
}

fn replay_pairs(fs: &Arc<dyn FileSystem>, flushed: &HashMap<u64, u64>) -> Vec<(u64, u64)> {
    let options = ReplayOptions {
        flushed: flushed.clone(),
        ..ReplayOptions::default()
    };
    let (entries, _, err) = read_all(fs, options);
    assert!(err.is_none(), "replay failed: {err:?}");
    entries.iter().map(|e| (e.region, e.sequence_id)).collect()
}

fn options() -> WalOptions {
    WalOptions {
        roll_size: 1_500,
        ..WalOptions::default()
    }
}

proptest! {
    #[test]
    fn replay_equals_the_acknowledged_sequence(ops in proptest::collection::vec(op(), 1..60)) {
        let mut fault = FaultFs::new();
        let mut fs: Arc<dyn FileSystem> = Arc::new(fault.clone());
        let mut wal = Some(Wal::open(Arc::clone(&fs), Path::new(DIR), options()).unwrap());
        let mut model = Model::default();
        for op in ops {
            let w = wal.as_ref().expect("open");
            match op {
                Op::Append(region, durability, len) => {
                    let seq = *model.next_seq.entry(region).and_modify(|s| *s += 1).or_insert(1);
                    w.append(&entry(region, seq, len), durability).unwrap();
                    if durability != Durability::SkipWal {
                        model.logged.push((region, seq));
                    }
                    if durability == Durability::FsyncWal {
                        model.durable = model.logged.len();
                    }
                }
                Op::Sync => {
                    w.sync().unwrap();
                    model.durable = model.logged.len();
                }
                Op::Roll => w.roll(),
                Op::Flush(region) => {
                    let seq = model.next_seq.get(&region).copied().unwrap_or(0);
                    w.mark_flushed(region, seq).unwrap();
                    model.flushed.insert(region, seq);
                }
                Op::Reopen => {
                    wal.take().expect("open").close().unwrap();
                    model.durable = model.logged.len();
                    prop_assert_eq!(replay_pairs(&fs, &model.flushed), model.visible(model.logged.len()));
                    wal = Some(Wal::open(Arc::clone(&fs), Path::new(DIR), options()).unwrap());
                }
                Op::Crash => {
                    let image = fault.crash_image();
                    drop(wal.take());
                    fault = image;
                    fs = Arc::new(fault.clone());
                    let after = replay_pairs(&fs, &model.flushed);
                    let all = model.visible(model.logged.len());
                    prop_assert_eq!(&after[..], &all[..after.len()], "not a prefix of what was logged");
                    prop_assert!(after.len() >= model.visible(model.durable).len(), "a durable entry was lost");
                    // What survived is the log now (flushed entries are invisible either way).
                    model.logged = after;
                    model.durable = model.logged.len();
                    wal = Some(Wal::open(Arc::clone(&fs), Path::new(DIR), options()).unwrap());
                }
            }
        }
        wal.take().expect("open").close().unwrap();
        prop_assert_eq!(replay_pairs(&fs, &model.flushed), model.visible(model.logged.len()));
    }
}
