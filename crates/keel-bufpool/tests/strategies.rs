//! `RequestPool`: every design behind one type, with buffers that go back to their design when
//! the last `Bytes` frozen from them drops — on whichever thread that happens.

use std::sync::mpsc;

use bytes::{BufMut, Bytes};
use keel_bufpool::{PoolError, PoolOptions, PoolStats, RequestPool, Strategy};

fn options() -> PoolOptions {
    PoolOptions {
        max_buffers: 16,
        ..PoolOptions::with_buffer_size(4096)
    }
}

fn stamp(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

/// Buffers a design still holds: made and not thrown away.
fn kept(s: &PoolStats) -> u64 {
    s.buffers_created - s.buffers_discarded
}

#[test]
fn names_parse_back_and_a_wrong_name_lists_the_choices() {
    for s in Strategy::ALL {
        assert_eq!(s.name().parse::<Strategy>(), Ok(s));
        assert_eq!(s.to_string(), s.name());
    }
    assert_eq!(Strategy::default(), Strategy::FixedPool);
    let e = "pooled".parse::<Strategy>().unwrap_err();
    assert!(
        e.contains("\"pooled\"") && e.contains("shared-average"),
        "{e}"
    );
}

#[test]
fn every_design_round_trips_requests_of_every_shape() {
    for strategy in Strategy::ALL {
        let pool = RequestPool::new(strategy, options());
        assert_eq!(pool.strategy(), strategy);
        let mut connection = pool.connect();
        // Empty, small, one buffer exactly, a chain with a tail.
        for (i, len) in [0, 10, 4096, 3 * 4096 + 700].into_iter().enumerate() {
            let mut buf = connection.allocate(len).unwrap();
            assert_eq!(buf.remaining_mut(), len, "{strategy}");
            let data = stamp(len, i as u8);
            buf.put_slice(&data);
            assert_eq!((buf.written(), buf.remaining_mut()), (len, 0));
            let frozen = buf.freeze();
            assert_eq!(&frozen[..], &data[..], "{strategy}, {len} bytes");
        }
    }
}

#[test]
fn dropping_the_last_slice_returns_the_buffer_for_the_next_request() {
    for strategy in Strategy::ALL {
        let pool = RequestPool::new(strategy, options());
        let mut connection = pool.connect();
        let mut buf = connection.allocate(3000).unwrap();
        buf.put_slice(&stamp(3000, 1));
        let frozen = buf.freeze();
        let slice = frozen.slice(100..200);
        drop(frozen);
        let while_held = pool.stats();
        drop(slice);
        let after = pool.stats();
        let mut again = connection.allocate(3000).unwrap();
        again.put_slice(&stamp(3000, 2));
        assert_eq!(&again.freeze()[..], &stamp(3000, 2)[..]);
        let second = pool.stats();
        match strategy {
            Strategy::Plain => {
                // Nothing is reused: the drop is a discard, and the next request a new buffer.
                assert_eq!(
                    (while_held.buffers_discarded, after.buffers_discarded),
                    (0, 1)
                );
                assert_eq!(second.buffers_created, 2);
            }
            _ => {
                assert_eq!(second.buffers_created, 1, "{strategy} reuses the buffer");
                assert_eq!(second.buffers_discarded, 0, "{strategy}");
            }
        }
        if matches!(
            strategy,
            Strategy::FixedPool | Strategy::SharedAverage | Strategy::SizeClass
        ) {
            assert_eq!(
                (while_held.free_buffers, after.free_buffers),
                (0, 1),
                "{strategy}: held by the slice, then free"
            );
        }
    }
}

#[test]
fn the_fixed_pool_reads_a_request_larger_than_a_buffer_into_a_chain() {
    let pool = RequestPool::new(Strategy::FixedPool, options());
    let mut connection = pool.connect();
    let len = 3 * 4096 + 500;
    let mut large = connection.allocate(len).unwrap();
    large.put_slice(&stamp(len, 2));
    let parts = large.freeze_parts();
    // Three pooled buffers and a heap tail (500 bytes is below the 1/6-of-a-buffer minimum),
    // each part where it lies: no copy.
    assert_eq!(
        parts.iter().map(Bytes::len).collect::<Vec<_>>(),
        [4096, 4096, 4096, 500]
    );
    assert_eq!(parts.concat(), stamp(len, 2));
    let s = pool.stats();
    assert_eq!((s.pooled_allocations, s.heap_bytes), (3, 500), "{s:?}");
    assert_eq!(pool.stats().free_buffers, 0, "held by the parts");
    drop(parts);
    assert_eq!(pool.stats().free_buffers, 3, "back when the parts go");
    // `freeze` on a chain gives one piece (a copy); the buffers still come back.
    let mut again = connection.allocate(len).unwrap();
    again.put_slice(&stamp(len, 3));
    let one = again.freeze();
    assert_eq!(&one[..], &stamp(len, 3)[..]);
    drop(one);
    assert_eq!(pool.stats().free_buffers, 3);
    // Every other design: one part.
    for strategy in [
        Strategy::Plain,
        Strategy::PerConnection,
        Strategy::SharedAverage,
    ] {
        let pool = RequestPool::new(strategy, options());
        let mut buf = pool.connect().allocate(len).unwrap();
        buf.put_slice(&stamp(len, 4));
        let parts = buf.freeze_parts();
        assert_eq!(parts.len(), 1, "{strategy}");
        assert_eq!(&parts[0][..], &stamp(len, 4)[..]);
    }
}

#[test]
fn an_unfrozen_buffer_goes_back_when_dropped() {
    for strategy in [Strategy::FixedPool, Strategy::SharedAverage] {
        let pool = RequestPool::new(strategy, options());
        let mut connection = pool.connect();
        let mut buf = connection.allocate(2000).unwrap();
        buf.put_slice(&[1; 500]);
        drop(buf);
        assert_eq!(pool.stats().free_buffers, 1, "{strategy}");
    }
}

#[test]
fn a_connection_with_two_requests_in_flight_keeps_one_buffer() {
    let pool = RequestPool::new(Strategy::PerConnection, options());
    let mut connection = pool.connect();
    let mut first = connection.allocate(1000).unwrap();
    first.put_slice(&[1; 1000]);
    let first = first.freeze();
    // The connection's buffer is still held by the first request: the second needs another.
    let mut second = connection.allocate(1000).unwrap();
    second.put_slice(&[2; 1000]);
    let second = second.freeze();
    assert_eq!(pool.stats().buffers_created, 2);
    drop(first);
    drop(second);
    let s = pool.stats();
    assert_eq!((s.buffers_created, s.buffers_discarded), (2, 1), "{s:?}");
    let third = connection.allocate(1000).unwrap();
    assert_eq!(pool.stats().buffers_created, 2, "the kept buffer is reused");
    // Another connection has its own buffer.
    let other = pool.connect().allocate(1000).unwrap();
    assert_eq!(pool.stats().buffers_created, 3);
    // Closing a connection while its request is held: the buffer is discarded on return.
    drop(connection);
    assert_eq!(pool.stats().buffers_discarded, 1);
    drop((third, other));
    let s = pool.stats();
    assert_eq!((s.buffers_created, s.buffers_discarded), (3, 3), "{s:?}");
}

#[test]
fn a_length_above_the_limit_is_refused_by_every_design() {
    for strategy in Strategy::ALL {
        let pool = RequestPool::new(
            strategy,
            PoolOptions {
                max_allocation: 10_000,
                ..options()
            },
        );
        let mut connection = pool.connect();
        assert!(
            matches!(
                connection.allocate(10_001),
                Err(PoolError::TooLarge {
                    len: 10_001,
                    max: 10_000
                })
            ),
            "{strategy}"
        );
        assert!(connection.allocate(usize::MAX).is_err(), "{strategy}");
        assert!(connection.allocate(10_000).is_ok(), "{strategy}");
    }
}

/// Readers on several threads hand each request to "handler" threads, which check it and drop
/// it there, as keel-server does. A buffer given to two requests at once would mix their stamps;
/// at the end every buffer a design made is either discarded or still kept, and nothing is lost.
#[test]
fn requests_released_on_other_threads_are_never_shared_or_lost() {
    const READERS: usize = 4;
    const REQUESTS: usize = 400;
    for strategy in Strategy::ALL {
        let pool = RequestPool::new(strategy, options());
        let (tx, rx) = mpsc::sync_channel::<(bytes::Bytes, Vec<u8>)>(8);
        let rx = std::sync::Arc::new(std::sync::Mutex::new(rx));
        std::thread::scope(|s| {
            for _ in 0..2 {
                let rx = std::sync::Arc::clone(&rx);
                s.spawn(move || {
                    loop {
                        let next = rx.lock().unwrap().recv();
                        let Ok((bytes, want)) = next else { return };
                        std::thread::yield_now();
                        assert_eq!(&bytes[..], &want[..], "{strategy}: a buffer was shared");
                    }
                });
            }
            for reader in 0..READERS {
                let tx = tx.clone();
                let mut connection = pool.connect();
                s.spawn(move || {
                    for i in 0..REQUESTS {
                        let len = [40, 900, 4096, 9000][(i + reader) % 4];
                        let want = stamp(len, (reader * 7 + i) as u8);
                        let mut buf = connection.allocate(len).unwrap();
                        buf.put_slice(&want);
                        tx.send((buf.freeze(), want)).unwrap();
                    }
                });
            }
            drop(tx);
        });
        let s = pool.stats();
        match strategy {
            Strategy::Plain => {
                assert_eq!(s.buffers_created, (READERS * REQUESTS) as u64);
                assert_eq!(kept(&s), 0, "{s:?}");
            }
            // The connections have closed, and their buffers went with them.
            Strategy::PerConnection => assert_eq!(kept(&s), 0, "{s:?}"),
            Strategy::SharedAverage | Strategy::SizeClass => {
                assert_eq!(kept(&s), s.free_buffers as u64, "{s:?}")
            }
            Strategy::FixedPool => {
                assert_eq!(s.buffers_discarded, 0);
                assert_eq!(s.free_buffers, s.live_buffers, "{s:?}");
                assert!(s.live_buffers <= 16);
            }
        }
    }
}
