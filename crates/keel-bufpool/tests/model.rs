//! Shuttle model of the pool's lock-free free list (`cargo xtask model bufpool`): three threads
//! allocate, stamp, verify, freeze and drop buffers from a two-buffer pool under the random and
//! PCT schedulers. A buffer handed to two owners would mix stamps; a lost or doubled return would
//! break the final accounting.

#![cfg(shuttle)]

use bytes::{Buf, BufMut};
use keel_bufpool::{BufferPool, PoolOptions};
use shuttle::thread;

fn iterations() -> usize {
    keel_testkit::model_iterations(2_000)
}

fn model() {
    let pool = BufferPool::new(PoolOptions {
        buffer_size: 8,
        max_buffers: 2,
        min_allocate_size: 1,
        preallocate: false,
        max_allocation: keel_bufpool::DEFAULT_MAX_ALLOCATION,
    });
    let threads: Vec<_> = (0..3u8)
        .map(|t| {
            let pool = pool.clone();
            thread::spawn(move || {
                for round in 0..2u8 {
                    let stamp = t * 16 + round;
                    let mut buf = pool.allocate(8).unwrap();
                    buf.put_bytes(stamp, 8);
                    thread::yield_now();
                    if round == 0 {
                        while buf.has_remaining() {
                            assert!(buf.chunk().iter().all(|b| *b == stamp), "buffer shared");
                            let n = buf.chunk().len();
                            buf.advance(n);
                        }
                    } else {
                        let frozen = buf.freeze().into_contiguous();
                        thread::yield_now();
                        assert!(frozen.iter().all(|b| *b == stamp), "frozen buffer shared");
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let stats = pool.stats();
    assert!(stats.live_buffers <= 2);
    assert_eq!(
        stats.free_buffers, stats.live_buffers,
        "every buffer came back once: {stats:?}"
    );
}

#[test]
fn free_list_hands_each_buffer_to_one_owner_and_gets_it_back_once() {
    shuttle::check_random(model, iterations());
    shuttle::check_pct(model, iterations(), 3);
}
