//! A YCSB-compatible load driver: CoreWorkload's semantics (properties, key names, generators,
//! the acknowledged-insert window, the standard workloads A–F), YCSB's text report and status
//! line, against Keel embedded or a running `keel serve`. See `docs/bench.md`.

pub mod compare;
pub mod db;
pub mod generators;
pub mod measure;
pub mod peers;
pub mod props;
pub mod runner;
pub mod targets;
pub mod workload;
