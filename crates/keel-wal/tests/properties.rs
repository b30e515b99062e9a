//! proptest: random logs, then random damage (a truncation, bit flips anywhere, or garbage
//! appended). Replay never panics or loops, and what it returns before stopping is always an
//! exact prefix of what was written: no gap, no duplicate, no garbage. A clean truncation of the
//! last segment is a tolerated tail; any damage is refused under `AbsoluteConsistency` unless it
//! left the bytes valid.

mod common;

use common::*;
use keel_wal::{RecoveryMode, ReplayOptions, WalEntry};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Damage {
    None,
    TruncateLast(prop::sample::Index),
    Flip(prop::sample::Index, prop::sample::Index, u8),
    Garbage(Vec<u8>),
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        1 => Just(Damage::None),
        3 => any::<prop::sample::Index>().prop_map(Damage::TruncateLast),
        3 => (any::<prop::sample::Index>(), any::<prop::sample::Index>(), 1u8..=255)
            .prop_map(|(f, o, x)| Damage::Flip(f, o, x)),
        1 => proptest::collection::vec(any::<u8>(), 1..40).prop_map(Damage::Garbage),
    ]
}

/// Entries over three regions, sequence ids increasing per region, sizes 0..300.
fn log() -> impl Strategy<Value = (Vec<WalEntry>, usize)> {
    (
        proptest::collection::vec((0u64..3, 0usize..300), 1..40),
        1usize..15,
    )
        .prop_map(|(spec, per)| {
            let mut next = [1u64; 3];
            let entries = spec
                .into_iter()
                .map(|(region, len)| {
                    let seq = next[region as usize];
                    next[region as usize] += 1 + (len as u64 % 3);
                    entry(region, seq, len)
                })
                .collect();
            (entries, per)
        })
}

proptest! {
    #[test]
    fn replay_returns_a_prefix_whatever_the_damage((written, per) in log(), damage in damage()) {
        let (_, fs) = fault_fs();
        let paths = write_segments(&fs, &written, per);
        let last = paths.last().expect("at least one segment").clone();
        match &damage {
            Damage::None => {}
            Damage::TruncateLast(at) => {
                let len = file_len(&fs, &last) as usize;
                fs.open(&last).unwrap().truncate(at.index(len + 1) as u64).unwrap();
            }
            Damage::Flip(file, offset, xor) => {
                let path = &paths[file.index(paths.len())];
                let len = file_len(&fs, path) as usize;
                let at = offset.index(len) as u64;
                let mut byte = [0u8];
                fs.open(path).unwrap().read_exact_at(&mut byte, at).unwrap();
                poke(&fs, path, at, &[byte[0] ^ xor]);
            }
            Damage::Garbage(bytes) => {
                fs.open(&last).unwrap().append(bytes).unwrap();
            }
        }
        for mode in [RecoveryMode::TolerateTailCorruption, RecoveryMode::AbsoluteConsistency] {
            let options = ReplayOptions { mode, ..ReplayOptions::default() };
            let (read, cut, err) = read_all(&fs, options);
            prop_assert!(read.len() <= written.len());
            prop_assert_eq!(&read[..], &written[..read.len()], "not a prefix ({:?})", mode);
            if matches!(damage, Damage::None) {
                prop_assert!(err.is_none() && cut.is_none());
                prop_assert_eq!(read.len(), written.len());
            }
            if mode == RecoveryMode::AbsoluteConsistency {
                prop_assert!(cut.is_none(), "strict mode never cuts");
            }
            if let (Damage::TruncateLast(_), RecoveryMode::TolerateTailCorruption) = (&damage, mode) {
                // A truncation of the last segment is always a tolerated tail.
                prop_assert!(err.is_none(), "truncation refused: {:?}", err);
                let before_last: usize = (paths.len() - 1) * per;
                prop_assert!(read.len() >= before_last.min(written.len()));
            }
        }
    }
}
