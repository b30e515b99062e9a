//! Dev-only helpers shared by Keel's tests and benchmarks. Never a normal dependency.
//!
//! - [`seed`] and [`rng`]: one seeded random source per test that prints its seed and replays
//!   from `KEEL_SEED`, so a randomized failure can be run again exactly.
//! - [`strategies`]: proptest strategies for cells, keys and cell batches, drawn from small
//!   alphabets so that equal rows, columns and timestamps (the interesting cases) are common.
//! - [`ChildProcess`]: re-runs the current test binary as a child process that reports progress
//!   on its stdout, so a test can kill it at a chosen moment and check what survived.
//! - [`figure`]: the `figure: <name> = <value>` line every `cargo xtask bench` ends with.
//! - [`Zipfian`]: YCSB's zipfian generator (θ = 0.99) for benchmark workloads.
//! - [`CountingAllocator`]: a global allocator that counts allocations, for benchmarks that
//!   report allocations per operation.
//!
//! This crate sits at level 0 with keel-cell (it depends on nothing else in Keel), so any crate
//! can dev-depend on it without a cycle.

mod child;
mod counting_alloc;
mod http_sink;
mod seed;
pub mod strategies;
mod zipfian;

pub use child::{CHILD_ROLE_ENV, ChildProcess, REPORT_PREFIX, child_role, report};
pub use counting_alloc::{CountingAllocator, allocations};
pub use http_sink::HttpSink;
pub use seed::{SEED_ENV, rng, seed};
pub use zipfian::Zipfian;

/// The environment variable that sets how many schedules each shuttle model explores.
pub const MODEL_ITERS_ENV: &str = "KEEL_MODEL_ITERS";

/// Schedules per property and scheduler for a shuttle model: `KEEL_MODEL_ITERS` if set (as
/// `cargo xtask model --iterations N` sets it), otherwise `default`.
pub fn model_iterations(default: usize) -> usize {
    std::env::var(MODEL_ITERS_ENV)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Whether this is a CI run (`CI` set to `true` or `1`, as `.ci/run`'s callers and most CI
/// services set it). A test that needs a tool the machine lacks must then fail, not skip: a
/// skipped test is not a pass.
pub fn under_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v.eq_ignore_ascii_case("true") || v == "1")
}

/// Formats a headline benchmark figure the way `cargo xtask bench` reports it:
/// `figure: <snake_case_name> = <value>`, with four significant decimals at most.
pub fn figure(name: &str, value: f64) -> String {
    debug_assert!(
        name.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'),
        "figure names are snake_case: {name}"
    );
    format!("figure: {name} = {value:.4}")
}

/// Copies the directory tree `from` into `to` (created if needed): benchmarks start each run from
/// a fresh copy of data prepared once.
pub fn copy_dir(from: &std::path::Path, to: &std::path::Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn model_iterations_default_when_unset() {
        if std::env::var_os(super::MODEL_ITERS_ENV).is_none() {
            assert_eq!(super::model_iterations(7), 7);
        }
    }

    #[test]
    fn figure_line_format() {
        assert_eq!(
            super::figure("decode_speedup", 1.5),
            "figure: decode_speedup = 1.5000"
        );
    }
}
