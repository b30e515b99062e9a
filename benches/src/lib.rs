//! Keel's load drivers. [`ycsb`] is a YCSB-compatible driver — CoreWorkload's properties,
//! generators and report, against Keel embedded or a running `keel serve` — which the seed
//! experiments ([`seeds`], `cargo xtask seeds`) are built on.

#![warn(missing_docs)]

pub mod seeds;
pub mod ycsb;

/// The workspace README's examples, compiled and run as doctests (keel-bench is the one crate
/// that sees the whole workspace and is never published).
#[doc = include_str!("../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
