//! Keel's load drivers. [`ycsb`] is a YCSB-compatible driver — CoreWorkload's properties,
//! generators and report, against Keel embedded or a running `keel serve` — which the seed
//! experiments ([`seeds`], `cargo xtask seeds`) are built on.

#![warn(missing_docs)]

pub mod seeds;
pub mod ycsb;
