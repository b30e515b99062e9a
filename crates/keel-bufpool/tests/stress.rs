//! 64 threads allocate, fill, verify and free buffers of random sizes from an 8-buffer pool (one
//! thread alone can exhaust it); a buffer handed to two owners at once would show up as corrupted
//! contents, a lost one as a missing free buffer at the end.

use std::sync::Arc;
use std::thread;

use bytes::{Buf, BufMut};
use keel_bufpool::{BufferPool, PoolOptions};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

#[test]
fn sixty_four_threads_never_share_or_lose_a_buffer() {
    let pool = BufferPool::new(PoolOptions {
        buffer_size: 4096,
        max_buffers: 8,
        min_allocate_size: 512,
        preallocate: false,
        max_allocation: keel_bufpool::DEFAULT_MAX_ALLOCATION,
    });
    let rounds = if std::env::var_os("KEEL_TEST_FAST").is_some() {
        100
    } else {
        400
    };
    let seed = keel_testkit::seed();
    let pool = Arc::new(pool);
    let threads: Vec<_> = (0..64u64)
        .map(|t| {
            let pool = Arc::clone(&pool);
            thread::spawn(move || {
                let mut rng = StdRng::seed_from_u64(seed ^ (t << 16));
                let mut held = Vec::new();
                for round in 0..rounds {
                    let len = rng.random_range(0..12_000);
                    let stamp = (t as u8) ^ (round as u8);
                    let mut buf = pool.allocate(len).unwrap();
                    buf.put_bytes(stamp, len);
                    if rng.random_ratio(1, 4) {
                        thread::yield_now();
                    }
                    if rng.random_ratio(1, 3) {
                        held.push((buf.freeze(), stamp, len));
                    } else {
                        assert_eq!(buf.remaining(), len);
                        while buf.has_remaining() {
                            assert!(buf.chunk().iter().all(|b| *b == stamp), "buffer shared");
                            let n = buf.chunk().len();
                            buf.advance(n);
                        }
                    }
                    if (held.len() > 3 || rng.random_ratio(1, 5))
                        && let Some((frozen, stamp, len)) = held.pop()
                    {
                        let bytes = frozen.into_contiguous();
                        assert_eq!(bytes.len(), len);
                        assert!(bytes.iter().all(|b| *b == stamp), "frozen buffer shared");
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let stats = pool.stats();
    assert!(stats.live_buffers <= 8);
    assert_eq!(
        stats.free_buffers, stats.live_buffers,
        "every buffer came back: {stats:?}"
    );
    assert!(
        stats.exhaustions > 0,
        "the test is meant to exhaust the pool: {stats:?}"
    );
}
