//! proptest: any sequence of allocations, writes, freezes, clones and drops keeps the pool
//! within its bound, accounts for every buffer exactly once (free + held = created), and reads
//! back exactly what was written.

use bytes::{Buf, BufMut};
use keel_bufpool::{BufferPool, FrozenBuf, PoolBuf, PoolOptions};
use proptest::prelude::*;

const BUFFER: usize = 64;
const MAX: usize = 4;
const MIN: usize = 10;

#[derive(Clone, Debug)]
enum Op {
    Allocate(usize),
    Write(usize, usize),
    Freeze(usize),
    CloneFrozen(usize),
    DropBuf(usize),
    DropFrozen(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0usize..300).prop_map(Op::Allocate),
        3 => (any::<usize>(), 0usize..150).prop_map(|(i, n)| Op::Write(i, n)),
        2 => any::<usize>().prop_map(Op::Freeze),
        1 => any::<usize>().prop_map(Op::CloneFrozen),
        2 => any::<usize>().prop_map(Op::DropBuf),
        2 => any::<usize>().prop_map(Op::DropFrozen),
    ]
}

/// A live buffer with the bytes the model expects in it.
struct Live {
    buf: PoolBuf,
    expected: Vec<u8>,
}

/// Pooled buffers a frozen buffer keeps: the pooled segments that held written bytes.
fn pooled_in_use(pooled_segments: usize, written: usize) -> usize {
    pooled_segments.min(written.div_ceil(BUFFER))
}

proptest! {
    #[test]
    fn every_buffer_is_accounted_for_exactly_once(ops in proptest::collection::vec(op(), 1..60)) {
        let pool = BufferPool::new(PoolOptions {
            buffer_size: BUFFER,
            max_buffers: MAX,
            min_allocate_size: MIN,
            preallocate: false,
            max_allocation: keel_bufpool::DEFAULT_MAX_ALLOCATION,
        });
        let mut live: Vec<Live> = Vec::new();
        // Frozen groups: the clones sharing one frozen buffer, its pooled count and contents.
        let mut frozen: Vec<(Vec<FrozenBuf>, usize, Vec<u8>)> = Vec::new();
        let mut counter = 0u8;
        for op in ops {
            match op {
                Op::Allocate(len) => {
                    let buf = pool.allocate(len).unwrap();
                    prop_assert_eq!(buf.capacity(), len);
                    live.push(Live { buf, expected: Vec::new() });
                }
                Op::Write(i, n) if !live.is_empty() => {
                    let index = i % live.len();
                    let entry = &mut live[index];
                    let n = n.min(entry.buf.remaining_mut());
                    let data: Vec<u8> = (0..n).map(|_| { counter = counter.wrapping_add(1); counter }).collect();
                    entry.buf.put_slice(&data);
                    entry.expected.extend(data);
                }
                Op::Freeze(i) if !live.is_empty() => {
                    let entry = live.swap_remove(i % live.len());
                    let held = pooled_in_use(entry.buf.pooled_segments(), entry.buf.written());
                    frozen.push((vec![entry.buf.freeze()], held, entry.expected));
                }
                Op::CloneFrozen(i) if !frozen.is_empty() => {
                    let group = i % frozen.len();
                    let copy = frozen[group].0[0].clone();
                    frozen[group].0.push(copy);
                }
                Op::DropBuf(i) if !live.is_empty() => {
                    let entry = live.swap_remove(i % live.len());
                    let mut buf = entry.buf;
                    let mut read = Vec::new();
                    while buf.has_remaining() {
                        let n = buf.chunk().len();
                        read.extend_from_slice(buf.chunk());
                        buf.advance(n);
                    }
                    prop_assert_eq!(read, entry.expected);
                }
                Op::DropFrozen(i) if !frozen.is_empty() => {
                    let group = i % frozen.len();
                    let mut clone = frozen[group].0.pop().expect("groups are never empty");
                    let contiguous = clone.clone().into_contiguous();
                    prop_assert_eq!(contiguous.as_ref(), frozen[group].2.as_slice());
                    let mut read = Vec::new();
                    while clone.has_remaining() {
                        let n = clone.chunk().len();
                        read.extend_from_slice(clone.chunk());
                        clone.advance(n);
                    }
                    prop_assert_eq!(&read, &frozen[group].2);
                    if frozen[group].0.is_empty() {
                        frozen.swap_remove(group);
                    }
                }
                _ => {}
            }
            let stats = pool.stats();
            let held_live: usize = live.iter().map(|l| l.buf.pooled_segments()).sum();
            let held_frozen: usize = frozen.iter().map(|(_, held, _)| held).sum();
            prop_assert!(stats.live_buffers <= MAX, "over the bound: {stats:?}");
            prop_assert_eq!(stats.free_buffers + held_live + held_frozen, stats.live_buffers);
            prop_assert_eq!(stats.buffers_created as usize, stats.live_buffers);
            prop_assert_eq!(stats.buffers_discarded, 0);
        }
        drop(live);
        drop(frozen);
        let stats = pool.stats();
        prop_assert_eq!(stats.free_buffers, stats.live_buffers, "every buffer came back");
    }
}
