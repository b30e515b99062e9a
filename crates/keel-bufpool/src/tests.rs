//! Allocation rules, writing and reading across segments, freezing, exhaustion and return.
//! These also run under Miri (`cargo xtask miri`) to check the two `unsafe impl BufMut`.

use bytes::{Buf, BufMut};

use super::*;
use crate::alternatives::{PerConnection, PlainAllocation, SharedAveragePool};

fn small_pool(max_buffers: usize) -> BufferPool {
    BufferPool::new(PoolOptions {
        buffer_size: 64,
        max_buffers,
        min_allocate_size: 10,
        preallocate: false,
        max_allocation: DEFAULT_MAX_ALLOCATION,
    })
}

fn fill(buf: &mut impl BufMut, len: usize, seed: u8) {
    let data: Vec<u8> = (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect();
    buf.put_slice(&data);
}

fn drain(mut buf: impl Buf) -> Vec<u8> {
    let mut out = Vec::new();
    while buf.has_remaining() {
        let chunk = buf.chunk();
        out.extend_from_slice(chunk);
        let n = chunk.len();
        buf.advance(n);
    }
    out
}

fn expected(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

#[test]
fn small_requests_come_from_the_heap() {
    let pool = small_pool(4);
    let buf = pool.allocate(9).unwrap();
    assert_eq!(
        (buf.pooled_segments(), buf.segment_count(), buf.capacity()),
        (0, 1, 9)
    );
    let stats = pool.stats();
    assert_eq!(
        (
            stats.heap_allocations,
            stats.heap_bytes,
            stats.buffers_created
        ),
        (1, 9, 0)
    );
}

#[test]
fn a_buffer_sized_request_takes_one_pooled_buffer_and_gives_it_back() {
    let pool = small_pool(4);
    let mut buf = pool.allocate(64).unwrap();
    assert_eq!((buf.pooled_segments(), buf.segment_count()), (1, 1));
    fill(&mut buf, 64, 1);
    assert_eq!(buf.remaining_mut(), 0);
    assert_eq!(drain(&mut buf), expected(64, 1));
    drop(buf);
    let stats = pool.stats();
    assert_eq!(
        (
            stats.buffers_created,
            stats.free_buffers,
            stats.heap_allocations
        ),
        (1, 1, 0)
    );
    // Reused, not created again.
    let again = pool.allocate(30).unwrap();
    assert_eq!(again.pooled_segments(), 1);
    assert_eq!(pool.stats().buffers_created, 1);
}

#[test]
fn large_requests_chain_pooled_buffers_with_a_small_heap_tail() {
    let pool = small_pool(8);
    // 64 + 64 + 5: the 5-byte tail is below the minimum and goes to the heap.
    let mut buf = pool.allocate(133).unwrap();
    assert_eq!((buf.pooled_segments(), buf.segment_count()), (2, 3));
    fill(&mut buf, 133, 7);
    let chunks: Vec<usize> = buf.written_chunks().map(<[u8]>::len).collect();
    assert_eq!(chunks, [64, 64, 5]);
    assert_eq!(drain(&mut buf), expected(133, 7));
    // 64 + 20: a tail at or above the minimum takes a whole pooled buffer.
    let buf = pool.allocate(84).unwrap();
    assert_eq!((buf.pooled_segments(), buf.segment_count()), (2, 2));
}

#[test]
fn partial_writes_and_reads_interleave() {
    let pool = small_pool(4);
    let mut buf = pool.allocate(100).unwrap();
    buf.put_slice(&[1; 70]);
    assert_eq!(buf.written(), 70);
    let mut head = [0u8; 60];
    buf.copy_to_slice(&mut head);
    assert_eq!(head, [1; 60]);
    buf.put_slice(&[2; 30]);
    assert_eq!(buf.remaining(), 40);
    let rest = drain(&mut buf);
    assert_eq!(&rest[..10], &[1; 10]);
    assert_eq!(&rest[10..], &[2; 30]);
}

#[test]
#[should_panic(expected = "advance_mut")]
fn writing_past_the_capacity_panics() {
    let pool = small_pool(4);
    let mut buf = pool.allocate(12).unwrap();
    // SAFETY: deliberately misused to check the bound; the assertion fires before any effect.
    unsafe { buf.advance_mut(13) };
}

#[test]
fn exhaustion_falls_back_to_the_heap_and_recovers() {
    let pool = small_pool(2);
    let held = [pool.allocate(64).unwrap(), pool.allocate(64).unwrap()];
    let overflow = pool.allocate(64).unwrap();
    assert_eq!(overflow.pooled_segments(), 0);
    let stats = pool.stats();
    assert_eq!(
        (
            stats.exhaustions,
            stats.heap_allocations,
            stats.live_buffers
        ),
        (1, 1, 2)
    );
    // A chain that runs out part way takes what it can and puts the rest on the heap.
    drop(held);
    let _one = pool.allocate(64).unwrap();
    let partial = pool.allocate(192).unwrap();
    assert_eq!((partial.pooled_segments(), partial.segment_count()), (1, 2));
    assert_eq!(
        pool.stats().buffers_created,
        2,
        "never more than max_buffers"
    );
}

#[test]
fn frozen_bytes_share_the_pooled_buffer_until_the_last_clone_drops() {
    let pool = small_pool(4);
    let mut buf = pool.allocate(40).unwrap();
    fill(&mut buf, 40, 3);
    let frozen = buf.freeze();
    assert_eq!(frozen.parts().len(), 1);
    let bytes = frozen.clone().into_contiguous();
    assert_eq!(bytes.as_ref(), expected(40, 3).as_slice());
    let slice = bytes.slice(5..10);
    drop((frozen, bytes));
    assert_eq!(
        pool.stats().free_buffers,
        0,
        "a slice still holds the buffer"
    );
    assert_eq!(slice.as_ref(), &expected(40, 3)[5..10]);
    drop(slice);
    assert_eq!(pool.stats().free_buffers, 1);
}

#[test]
fn into_bytes_shares_one_segment_and_copies_a_chain() {
    let pool = small_pool(4);
    // One pooled segment: shared, back in the pool when the last slice drops.
    let mut one = pool.allocate(40).unwrap();
    fill(&mut one, 40, 4);
    let bytes = one.into_bytes();
    assert_eq!(bytes.as_ref(), expected(40, 4).as_slice());
    assert_eq!(pool.stats().free_buffers, 0);
    drop(bytes);
    assert_eq!(pool.stats().free_buffers, 1);
    // Nothing written: empty, and the buffer goes straight back.
    let empty = pool.allocate(40).unwrap().into_bytes();
    assert!(empty.is_empty());
    assert_eq!(pool.stats().free_buffers, 1);
    // A chain: one copy, and every pooled buffer back at once.
    let len = pool.options().buffer_size * 2 + 10;
    let mut chain = pool.allocate(len).unwrap();
    assert!(chain.segment_count() > 1);
    fill(&mut chain, len, 5);
    let bytes = chain.into_bytes();
    assert_eq!(bytes.as_ref(), expected(len, 5).as_slice());
    let s = pool.stats();
    assert_eq!(s.free_buffers, s.live_buffers, "{s:?}");
}

#[test]
fn freezing_a_chain_keeps_only_written_segments() {
    let pool = small_pool(4);
    let mut buf = pool.allocate(192).unwrap();
    fill(&mut buf, 100, 9);
    let frozen = buf.freeze();
    assert_eq!(
        frozen.parts().len(),
        2,
        "the unwritten third buffer went back at once"
    );
    assert_eq!(pool.stats().free_buffers, 1);
    assert_eq!(frozen.remaining(), 100);
    assert_eq!(
        frozen.clone().into_contiguous().as_ref(),
        expected(100, 9).as_slice()
    );
    assert_eq!(drain(frozen), expected(100, 9));
    assert_eq!(pool.stats().free_buffers, 3);
}

#[test]
fn preallocation_and_allocate_one() {
    let pool = BufferPool::new(PoolOptions {
        preallocate: true,
        ..small_pool(3).options()
    });
    let stats = pool.stats();
    assert_eq!((stats.buffers_created, stats.free_buffers), (3, 3));
    let one = pool.allocate_one();
    assert_eq!((one.capacity(), one.pooled_segments()), (64, 1));
    let held = [pool.allocate_one(), pool.allocate_one()];
    let heap = pool.allocate_one();
    assert_eq!((heap.capacity(), heap.pooled_segments()), (64, 0));
    drop((one, held, heap));
    assert_eq!(pool.stats().free_buffers, 3);
    assert!(format!("{pool:?}").contains("free_buffers: 3"));
}

#[test]
fn hostile_lengths_are_refused_by_every_design() {
    let pool = BufferPool::new(PoolOptions {
        max_allocation: 100,
        ..small_pool(1).options()
    });
    assert_eq!(
        pool.allocate(101).unwrap_err(),
        PoolError::TooLarge { len: 101, max: 100 }
    );
    assert!(pool.allocate(100).is_ok());
    let err = BufferPool::default().allocate(usize::MAX).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "request of {} bytes exceeds the 268435456-byte allocation limit",
            usize::MAX
        )
    );
    assert!(
        PlainAllocation::default()
            .acquire(&mut (), usize::MAX)
            .is_err()
    );
    let per_connection = PerConnection::default();
    assert!(
        per_connection
            .acquire(&mut per_connection.connect(), usize::MAX)
            .is_err()
    );
    let shared = SharedAveragePool::new(2);
    assert!(shared.acquire(&mut (), usize::MAX).is_err());
    assert_eq!(shared.stats().buffers_created, 0);
}

#[test]
fn zero_length_requests_work() {
    let pool = small_pool(1);
    let buf = pool.allocate(0).unwrap();
    assert_eq!(
        (buf.capacity(), buf.remaining(), buf.remaining_mut()),
        (0, 0, 0)
    );
    assert!(buf.freeze().parts().is_empty());
}

/// Every design reads back what was written and gives its buffer back.
#[test]
fn every_design_round_trips_a_request() {
    fn round_trip<R: RequestBuffers>(design: &R) {
        let mut connection = design.connect();
        // Miri interprets every byte: keep the large requests, but fewer of them.
        let lens: &[usize] = if cfg!(miri) {
            &[10, 70_000]
        } else {
            &[10, 5_000, 70_000, 200, 70_000]
        };
        for (i, &len) in lens.iter().enumerate() {
            let mut buf = design.acquire(&mut connection, len).unwrap();
            assert_eq!(buf.remaining_mut(), len, "{}", design.name());
            fill(&mut buf, len, i as u8);
            assert_eq!(buf.remaining_mut(), 0);
            let mut read = Vec::new();
            while buf.has_remaining() {
                let n = buf.chunk().len();
                read.extend_from_slice(buf.chunk());
                buf.advance(n);
            }
            assert_eq!(read, expected(len, i as u8), "{}", design.name());
            design.release(&mut connection, buf);
        }
    }
    round_trip(&BufferPool::default());
    round_trip(&PlainAllocation::default());
    round_trip(&PerConnection::default());
    round_trip(&SharedAveragePool::new(60));
}

#[test]
fn alternatives_count_creations_like_the_seed() {
    let plain = PlainAllocation::default();
    let per_connection = PerConnection::default();
    let shared = SharedAveragePool::new(2);
    let (mut a, mut b) = (per_connection.connect(), per_connection.connect());
    for len in [1_000, 1_200, 900, 1_100] {
        for connection in [&mut a, &mut b] {
            let buf = per_connection.acquire(connection, len).unwrap();
            per_connection.release(connection, buf);
        }
        let buf = plain.acquire(&mut (), len).unwrap();
        plain.release(&mut (), buf);
        let buf = shared.acquire(&mut (), len).unwrap();
        shared.release(&mut (), buf);
    }
    assert_eq!(plain.stats().buffers_created, 4);
    assert_eq!(plain.stats().buffers_discarded, 4);
    // Each connection: created for 1 000, replaced when 1 200 did not fit, reused after.
    assert_eq!(per_connection.stats().buffers_created, 4);
    assert_eq!(per_connection.stats().buffers_discarded, 2);
    // The shared pool's first buffer (16 KiB running average) serves every request.
    assert_eq!(shared.stats().buffers_created, 1);
    // A request too big for the pooled buffer discards it; buffers above 1 MiB are never kept.
    let big = shared.acquire(&mut (), 2 * 1024 * 1024).unwrap();
    assert_eq!(shared.stats().buffers_discarded, 1);
    shared.release(&mut (), big);
    assert_eq!(shared.stats().buffers_discarded, 2);
    assert_eq!(shared.stats().free_buffers, 0);
}
