//! Keel's HBase-compatible server. [`Handler`] executes the Thrift1 `Hbase` service's calls
//! (decoded by keel-thrift) on a keel-region [`keel_region::Engine`] with the semantics
//! HBase's own gateway has, so happybase and other Thrift1 clients see what they expect.
//! [`ThriftServer`] serves it over TCP (keel-rpc queues, keel-bufpool buffers), and
//! [`StatusServer`] shows what it does: Prometheus metrics, an HTML status page and JSON. The
//! `keel` binary runs them; see `docs/server.md`.
//!
//! ```
//! use std::sync::Arc;
//! use keel_region::{Engine, EngineOptions};
//! use keel_server::{Handler, HandlerOptions, NetOptions, ThriftServer};
//!
//! let dir = tempfile::tempdir()?;
//! let store = Arc::new(Engine::open(dir.path(), EngineOptions::default())?);
//! let server = ThriftServer::start(
//!     Arc::new(Handler::new(store, HandlerOptions::default())),
//!     NetOptions { listen: "127.0.0.1:0".parse()?, ..NetOptions::default() },
//! )?;
//! println!("Thrift1 clients (happybase) connect to {}", server.local_addr());
//! server.shutdown();
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

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
