//! Every keel-bufpool request-buffer design behind the real server, over both transports: several connections put rows
//! from 10 bytes to 200 KiB (for the fixed pool: the heap below its minimum, one pooled buffer,
//! a chain of pooled buffers above one) and read each back whole; afterwards every buffer a design
//! made is back with it or discarded, never leaked.

use std::time::{Duration, Instant};

use bytes::Bytes;
use keel_bufpool::{PoolStats, Strategy};
use keel_server::{NetOptions, ThriftServer};
use keel_thrift::Client;
use keel_thrift::hbase::{BatchMutation, Call, Mutation, Reply};
use keel_thrift::transport::{Protocol, Transport};

mod common;
use common::{b, create_table, serve};

fn start(dir: &std::path::Path, buffers: Strategy) -> ThriftServer {
    serve(
        dir,
        NetOptions {
            buffers,
            ..NetOptions::default()
        },
    )
}

fn value(client: usize, i: usize) -> Bytes {
    let len = [10, 3_000, 40_000, 70_000, 200_000][(client + i) % 5];
    Bytes::from(
        (0..len)
            .map(|j| (j as u8).wrapping_add((client * 31 + i) as u8))
            .collect::<Vec<_>>(),
    )
}

/// Waits for the handlers to drop the last requests' bytes, then checks the design's books.
fn buffers_all_accounted_for(server: &ThriftServer, strategy: Strategy) -> PoolStats {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let s = server.pool_stats();
        let settled = match strategy {
            Strategy::FixedPool => s.free_buffers == s.live_buffers && s.buffers_discarded == 0,
            // A closed connection's buffer goes with it.
            Strategy::Plain | Strategy::PerConnection => s.buffers_created == s.buffers_discarded,
            Strategy::SharedAverage | Strategy::SizeClass => {
                s.buffers_created - s.buffers_discarded == s.free_buffers as u64
            }
        };
        if settled {
            return s;
        }
        assert!(
            Instant::now() < deadline,
            "{strategy}: buffers unaccounted for: {s:?}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn every_design_serves_requests_of_every_size_and_gets_its_buffers_back() {
    // Both transports: a buffered request is read into the pool once its end is found.
    let cases = Strategy::ALL
        .into_iter()
        .flat_map(|s| [(s, Transport::Framed), (s, Transport::Buffered)]);
    for (strategy, transport) in cases {
        let dir = tempfile::tempdir().expect("tempdir");
        let server = start(dir.path(), strategy);
        let address = server.local_addr();
        let mut admin = Client::connect(address, Transport::Framed, Protocol::Binary).expect("c");
        create_table(&mut admin, "t");
        drop(admin);
        std::thread::scope(|s| {
            for client in 0..4 {
                s.spawn(move || {
                    let mut c =
                        Client::connect(address, transport, Protocol::Binary).expect("connect");
                    for i in 0..12 {
                        let row = b(&format!("c{client}-r{i}"));
                        c.call(&Call::MutateRows {
                            table: b("t"),
                            batches: vec![BatchMutation {
                                row: row.clone(),
                                mutations: vec![Mutation {
                                    column: b("cf:v"),
                                    value: Some(value(client, i)),
                                    ..Mutation::default()
                                }],
                            }],
                            timestamp: None,
                        })
                        .expect("put");
                        let Ok(Reply::Rows(rows)) = c.call(&Call::GetRows {
                            table: b("t"),
                            rows: vec![row],
                            columns: None,
                            timestamp: None,
                        }) else {
                            panic!("{strategy}: get failed");
                        };
                        let got = &rows[0].columns.as_ref().expect("columns")[0].1.value;
                        assert!(
                            *got == value(client, i),
                            "{strategy}: row {client}/{i} differs"
                        );
                    }
                });
            }
        });
        let stats = buffers_all_accounted_for(&server, strategy);
        assert!(
            server.observer().buffer_strategy() == strategy,
            "the observer names the design"
        );
        match strategy {
            Strategy::FixedPool => {
                assert!(stats.pooled_allocations > 0, "{stats:?}");
                assert!(stats.heap_allocations > 0, "{stats:?}");
            }
            // Reuse: fewer buffers than the 97 requests.
            Strategy::PerConnection | Strategy::SharedAverage => {
                assert!(stats.buffers_created < 64, "{strategy}: {stats:?}")
            }
            Strategy::Plain => assert!(stats.buffers_created >= 96, "{stats:?}"),
            // The small requests (gets, tiny puts) each get a fresh buffer; the large reuse.
            Strategy::SizeClass => {
                assert!(stats.pooled_allocations > 0, "{stats:?}");
                assert!(stats.buffers_created >= 48, "{stats:?}");
            }
        }
        server.shutdown();
    }
}
