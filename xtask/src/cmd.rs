//! Running cargo: the pieces `ci` is made of.

use std::path::PathBuf;
use std::process::Command;

/// Every optional feature of the workspace except keel-bench's `peers` (other engines, which
/// CI leaves out: RocksDB's C++ alone would take most of its time budget). Used where
/// `--all-features` would be; a crate adding a feature adds it here.
pub(crate) const CI_FEATURES: &str =
    "keel-fs/fault-injection,keel-wal/tracing,keel-region/tracing,keel-server/cli,keel-server/otlp";

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
/// build without it never rots (`--all-features` covers the build with it); keel-server's
/// library is linted without its binary's dependencies (feature `cli`), which it must not use.
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
    ]))?;
    run(cargo(&[
        "clippy",
        "-p",
        "keel-server",
        "--lib",
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

/// The crates that are never published: test helpers, automation and the load drivers.
pub(crate) const UNPUBLISHED: [&str; 3] = ["keel-testkit", "xtask", "keel-bench"];

/// `cargo package` for every published crate, verified: each is packaged and then built from its
/// own tarball, with its Keel dependencies from the other tarballs (a README, LICENSE or path
/// that exists only in the repository fails here, not on crates.io).
pub(crate) fn package() -> Result<(), String> {
    forget_packaged_keel_crates();
    // Verification builds registry packages, which cargo takes to be immutable: a Keel crate
    // built by an earlier run (same name, same version) would be reused however its sources
    // changed. So it builds in a target directory of its own, from which every Keel artifact
    // is removed first (the external dependencies stay built).
    let target = workspace_root().join("target").join("package-check");
    forget_keel_artifacts(&target.join("debug"));
    let target_arg = target.to_string_lossy().to_string();
    let mut args = vec![
        "package",
        "--locked",
        "--workspace",
        "--allow-dirty",
        "--target-dir",
        &target_arg,
    ];
    for crate_name in UNPUBLISHED {
        args.extend(["--exclude", crate_name]);
    }
    run(cargo(&args))
}

/// Builds every crate's examples and runs each one; an example checks its own result and
/// exits non-zero on a mismatch, which fails this step.
pub(crate) fn examples() -> Result<(), String> {
    run(cargo(&[
        "build",
        "--release",
        "--locked",
        "--workspace",
        "--examples",
    ]))?;
    let root = workspace_root();
    let mut names = Vec::new();
    let crates = std::fs::read_dir(root.join("crates")).map_err(|e| format!("crates/: {e}"))?;
    for entry in crates.flatten() {
        let Ok(files) = std::fs::read_dir(entry.path().join("examples")) else {
            continue;
        };
        for file in files.flatten() {
            let path = file.path();
            if path.extension().is_some_and(|e| e == "rs")
                && let Some(stem) = path.file_stem()
            {
                names.push(stem.to_string_lossy().to_string());
            }
        }
    }
    names.sort();
    if names.is_empty() {
        return Err("no examples found under crates/*/examples".into());
    }
    for name in names {
        run(Command::new(
            root.join("target")
                .join("release")
                .join("examples")
                .join(&name),
        ))?;
    }
    Ok(())
}

/// Cargo unpacks the packages it verifies from a temporary local registry into
/// `$CARGO_HOME/registry/src/<that registry>/` and never unpacks a version again once there: a
/// second run with changed sources would verify against the first run's copies (same name,
/// same version). So the unpacked and cached Keel packages of every registry but crates.io's
/// are removed first; crates.io's own sources are left alone.
fn forget_packaged_keel_crates() {
    let home = std::env::var_os("CARGO_HOME").map_or_else(
        || PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cargo"),
        PathBuf::from,
    );
    for kind in ["src", "cache"] {
        let Ok(registries) = std::fs::read_dir(home.join("registry").join(kind)) else {
            continue;
        };
        for registry in registries.flatten() {
            if registry
                .file_name()
                .to_string_lossy()
                .starts_with("index.crates.io")
            {
                continue;
            }
            let Ok(entries) = std::fs::read_dir(registry.path()) else {
                continue;
            };
            for entry in entries.flatten() {
                if entry.file_name().to_string_lossy().starts_with("keel-") {
                    let path = entry.path();
                    let _ = if path.is_dir() {
                        std::fs::remove_dir_all(&path)
                    } else {
                        std::fs::remove_file(&path)
                    };
                }
            }
        }
    }
}

/// Removes every Keel crate's build artifacts and fingerprints under `profile_dir`.
fn forget_keel_artifacts(profile_dir: &std::path::Path) {
    for sub in [".fingerprint", "deps", "build", "incremental"] {
        let Ok(entries) = std::fs::read_dir(profile_dir.join(sub)) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().to_string();
            if name.starts_with("keel-")
                || name.starts_with("keel_")
                || name.starts_with("libkeel_")
            {
                let path = entry.path();
                let _ = if path.is_dir() {
                    std::fs::remove_dir_all(&path)
                } else {
                    std::fs::remove_file(&path)
                };
            }
        }
    }
}
