//! Keel's HBase-compatible server. For now its core: [`Handler`] executes the Thrift1 `Hbase`
//! service's calls (decoded by keel-thrift) on a keel-region [`keel_region::RegionServer`] with
//! the semantics HBase's own gateway has, so happybase and other Thrift1 clients see what they
//! expect. The network side (connections, keel-rpc queues, keel-bufpool buffers, the `keel`
//! binary) comes next; see `docs/server.md`.

#![warn(missing_docs)]

pub mod columns;
pub mod config;
mod handler;
mod net;

pub use handler::{Handler, HandlerOptions};
pub use net::{NetOptions, NetStats, ThriftServer};
