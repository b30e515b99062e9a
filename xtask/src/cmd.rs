//! Running cargo: the pieces `ci` is made of.

use std::path::PathBuf;
use std::process::Command;

/// Every optional feature of the workspace except keel-bench's `peers` (other engines, which
/// CI leaves out: RocksDB's C++ alone would take most of its time budget). Used where
/// `--all-features` would be; a crate adding a feature adds it here.
pub(crate) const CI_FEATURES: &str = "keel-fs/fault-injection,keel-wal/tracing,keel-region/tracing";

/// The workspace root: xtask lives one level below it.
pub(crate) fn workspace_root() -> PathBuf {
    let manifest_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest_dir
        .parent()
        .map(PathBuf::from)
        .unwrap_or(manifest_dir)
}

/// A cargo command rooted at the workspace, using the cargo that runs xtask.
pub(crate) fn cargo(args: &[&str]) -> Command {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let mut command = Command::new(cargo);
    command.args(args).current_dir(workspace_root());
    command
}

/// Runs a command, echoing it first; an error if it cannot start or exits non-zero.
pub(crate) fn run(mut command: Command) -> Result<(), String> {
    let shown = format!("{command:?}").replace('"', "");
    #[expect(
        clippy::print_stdout,
        reason = "echo each step like a shell script would"
    )]
    {
        println!("$ {shown}");
    }
    let status = command
        .status()
        .map_err(|e| format!("cannot run {shown}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{shown} failed with {status}"))
    }
}

pub(crate) fn fmt(check: bool) -> Result<(), String> {
    let mut args = vec!["fmt", "--all"];
    if check {
        args.extend(["--", "--check"]);
    }
    run(cargo(&args))
}

pub(crate) fn lint() -> Result<(), String> {
    run(cargo(&[
        "clippy",
        "--workspace",
        "--all-targets",
        "--features",
        CI_FEATURES,
        "--locked",
        "--",
        "-D",
        "warnings",
    ]))
}

/// Crates whose optional instrumentation can be compiled out are linted that way too, so the
/// build without it never rots (`--all-features` covers the build with it).
pub(crate) fn lint_without_optional_features() -> Result<(), String> {
    run(cargo(&[
        "clippy",
        "-p",
        "keel-region",
        "--all-targets",
        "--no-default-features",
        "--locked",
        "--",
        "-D",
        "warnings",
    ]))
}

pub(crate) fn doc() -> Result<(), String> {
    let mut command = cargo(&[
        "doc",
        "--workspace",
        "--no-deps",
        "--features",
        CI_FEATURES,
        "--locked",
    ]);
    command.env("RUSTDOCFLAGS", "-D warnings");
    run(command)
}

fn nextest_available() -> bool {
    cargo(&["nextest", "--version"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Tests: doctests first (unless `fast`), then unit and integration tests, so a CI log ends on
/// the test runner's summary line.
pub(crate) fn test(fast: bool) -> Result<(), String> {
    if !fast {
        run(cargo(&[
            "test",
            "--workspace",
            "--features",
            CI_FEATURES,
            "--locked",
            "--doc",
        ]))?;
    }
    let mut command = if nextest_available() {
        cargo(&[
            "nextest",
            "run",
            "--workspace",
            "--features",
            CI_FEATURES,
            "--locked",
            "--no-fail-fast",
        ])
    } else {
        cargo(&[
            "test",
            "--workspace",
            "--features",
            CI_FEATURES,
            "--locked",
            "--lib",
            "--bins",
            "--tests",
        ])
    };
    if fast {
        command
            .env("PROPTEST_CASES", "32")
            .env("KEEL_TEST_FAST", "1");
    }
    run(command)
}
