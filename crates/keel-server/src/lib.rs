//! Keel's HBase-compatible server. [`Handler`] executes the Thrift1 `Hbase` service's calls
//! (decoded by keel-thrift) on a keel-region [`keel_region::RegionServer`] with the semantics
//! HBase's own gateway has, so happybase and other Thrift1 clients see what they expect.
//! [`ThriftServer`] serves it over TCP (keel-rpc queues, keel-bufpool buffers), and
//! [`StatusServer`] shows what it does: Prometheus metrics, an HTML status page and JSON. The
//! `keel` binary runs them; see `docs/server.md`.

#![warn(missing_docs)]

pub mod columns;
pub mod config;
mod handler;
mod net;
mod scanners;
pub mod status;

pub use handler::{Handler, HandlerOptions};
pub use net::{NetObserver, NetOptions, NetStats, ThriftServer, call_class};
pub use status::{StatusOptions, StatusServer};

/// The crate README's example, compiled and run as a doctest.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
