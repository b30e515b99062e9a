//! The benchmark and crash-suite dispatch tables. Each crate that brings a benchmark or a
//! kill-and-recover suite adds one row here; nothing else in xtask changes.

use crate::cmd::{cargo, run};

/// One runnable suite: a cargo target in a package.
#[derive(Debug)]
struct Suite {
    /// The name given to `cargo xtask bench` / `cargo xtask crash`.
    name: &'static str,
    /// One line for the listing.
    about: &'static str,
    package: &'static str,
    /// A `[[bench]]` target for benchmarks, a `[[test]]` target for crash suites.
    target: &'static str,
}

/// `cargo xtask bench <name>`: each ends with `figure: <name> = <value>` lines.
const BENCHES: &[Suite] = &[Suite {
    name: "cell",
    about: "keel-cell batch decode, zero-copy slicing vs copying every field",
    package: "keel-cell",
    target: "codec",
}];

/// `cargo xtask crash <name>`: kill a child process mid-work, recover, check.
const CRASHES: &[Suite] = &[Suite {
    name: "testkit-child",
    about: "keel-testkit's kill-a-child harness: every report flushed before SIGKILL arrives",
    package: "keel-testkit",
    target: "child_process",
}];

fn find<'a>(table: &'a [Suite], kind: &str, name: &str) -> Result<&'a Suite, String> {
    table.iter().find(|s| s.name == name).ok_or_else(|| {
        let known: Vec<String> = table
            .iter()
            .map(|s| format!("  {:<16} {}", s.name, s.about))
            .collect();
        format!(
            "unknown {kind} {name:?}; known {kind}es:\n{}",
            known.join("\n")
        )
    })
}

pub(crate) fn bench(name: &str, quick: bool) -> Result<(), String> {
    let suite = find(BENCHES, "bench", name)?;
    let mut args = vec![
        "bench",
        "--locked",
        "-p",
        suite.package,
        "--bench",
        suite.target,
    ];
    if quick {
        args.extend(["--", "--quick"]);
    }
    run(cargo(&args))
}

pub(crate) fn crash(name: &str, rounds: Option<u32>) -> Result<(), String> {
    let suite = find(CRASHES, "crash", name)?;
    let args = [
        "test",
        "--release",
        "--locked",
        "-p",
        suite.package,
        "--test",
        suite.target,
    ];
    let mut command = cargo(&args);
    if let Some(rounds) = rounds {
        command.env("KEEL_CRASH_ROUNDS", rounds.to_string());
    }
    run(command)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_names_list_the_known_ones() {
        let err = find(BENCHES, "bench", "nope").unwrap_err();
        assert!(err.contains("unknown bench \"nope\""), "{err}");
        assert!(err.contains("cell"), "{err}");
        let err = find(CRASHES, "crash", "nope").unwrap_err();
        assert!(err.contains("testkit-child"), "{err}");
    }

    #[test]
    fn every_suite_names_an_existing_target() {
        let root = crate::cmd::workspace_root();
        for (table, section) in [(BENCHES, "bench"), (CRASHES, "test")] {
            for suite in table {
                let dir = root.join("crates").join(suite.package);
                let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
                let file = dir
                    .join(format!("{section}s"))
                    .join(format!("{}.rs", suite.target));
                assert!(
                    manifest.contains(&format!("name = \"{}\"", suite.target)) || file.exists(),
                    "{} names {section} target {} that {} lacks",
                    suite.name,
                    suite.target,
                    suite.package
                );
            }
        }
    }
}
