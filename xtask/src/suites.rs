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
const BENCHES: &[Suite] = &[
    Suite {
        name: "cell",
        about: "keel-cell batch decode, zero-copy slicing vs copying every field",
        package: "keel-cell",
        target: "codec",
    },
    Suite {
        name: "mvcc",
        about: "keel-mvcc begin/complete vs an HBase-style mutex queue; row-lock costs",
        package: "keel-mvcc",
        target: "mvcc",
    },
    Suite {
        name: "bufpool",
        about: "HBASE-14490's experiment: request buffers per design, YCSB put/read sizes",
        package: "keel-bufpool",
        target: "bufpool",
    },
    Suite {
        name: "wal",
        about: "keel-wal group commit vs the raw fdatasync rate; SyncWal/FsyncWal, 1-64 threads",
        package: "keel-wal",
        target: "wal",
    },
    Suite {
        name: "blockcache",
        about: "keel-blockcache id-lock pools (weak/soft/strong/striped) at a 100% hit load",
        package: "keel-blockcache",
        target: "idlock",
    },
    Suite {
        name: "memstore",
        about: "keel-memstore inserts, gets and scans vs RwLock<BTreeMap> and a bare skiplist; MSLAB allocations",
        package: "keel-memstore",
        target: "memstore",
    },
    Suite {
        name: "increment",
        about: "HBASE-15158's IncrementPerformanceTest: 80 threads, hot rows, new vs legacy write order",
        package: "keel-region",
        target: "increment",
    },
    Suite {
        name: "tracing",
        about: "HBASE-27153/27155: 20% writes / 80% reads with tracing compiled out, off, and recording",
        package: "keel-region",
        target: "tracing",
    },
    Suite {
        name: "compaction",
        about: "keel-region: write amplification, foreground p99 while a compaction runs vs without, and the block cache after a compaction",
        package: "keel-region",
        target: "compaction",
    },
    Suite {
        name: "admin",
        about: "keel-region: a table's reads while another table with 64 MiB of memstore is disabled vs without",
        package: "keel-region",
        target: "admin",
    },
    Suite {
        name: "filters",
        about: "keel-region: a PrefixFilter full scan vs the same rows by range; counting rows with FirstKeyOnly AND KeyOnly vs a full scan",
        package: "keel-region",
        target: "filters",
    },
    Suite {
        name: "regions",
        about: "keel-region: loading a table pre-split into 8 regions vs one region (write throughput)",
        package: "keel-region",
        target: "regions",
    },
    Suite {
        name: "layouts",
        about: "keel-region: short scans and gets of records stored as ten columns vs as one cell (same bytes, store files)",
        package: "keel-region",
        target: "layouts",
    },
    Suite {
        name: "peers",
        about: "Keel vs fjall, sled, redb (and RocksDB in the full run) on YCSB A, C, E, F and increments, sync and fsync",
        package: "keel-bench",
        target: "peers",
    },
    Suite {
        name: "thrift",
        about: "keel-thrift: decoding a mutateRows request, binary and compact, vs the thrift crate",
        package: "keel-thrift",
        target: "codec",
    },
    Suite {
        name: "server",
        about: "keel-server over TCP vs embedded: gets/puts/scans at 1, 16, 64 connections; bufpool on vs off; (full) fast path vs RW queue",
        package: "keel-server",
        target: "server",
    },
    Suite {
        name: "abuse",
        about: "keel serve under attack (slow readers, empty-struct floods, partial frames, reverse scans, scanner theft, status slowloris): server RSS growth and a well-behaved client's p99 vs idle",
        package: "keel-server",
        target: "abuse",
    },
    Suite {
        name: "storefile",
        about: "keel-storefile write/scan MB/s vs a raw read, gets with and without bloom, size per encoding",
        package: "keel-storefile",
        target: "storefile",
    },
    Suite {
        name: "rpc",
        about: "HBASE-26551's experiment: FastPathRwQueue vs RwQueue, Balanced, FastPathBalanced, a channel",
        package: "keel-rpc",
        target: "rpc",
    },
];

/// Benchmarks whose binary takes `--plot` (draw the last run's CSV as an SVG chart).
const PLOTS: &[&str] = &["rpc"];

/// `cargo xtask miri`: the crates with `unsafe` code, whose unit tests Miri interprets.
pub(crate) const MIRI_PACKAGES: &[&str] = &[
    "keel-bufpool",
    "keel-blockcache",
    "keel-fs",
    "keel-memstore",
    "keel-sync",
    "keel-testkit",
];

/// Which unit tests Miri runs per package (all when absent), as the test binary's arguments:
/// keel-blockcache's only `unsafe` is the memory-mapped area, which Miri cannot run, so it
/// checks the area's heap twin and the word copies both share, rather than interpreting every
/// threaded cache test for minutes; keel-memstore's is the arena skip list and the scanner's
/// in-place reading of it, so every unit test but the flat segment's, the row filter's and the
/// row hints' table's (no `unsafe`, and minutes under Miri) and the key-order proptest; keel-sync's only `unsafe`
/// is the prefetch hint; keel-testkit's is the counting allocator; keel-fs's is the `pread`
/// into a buffer's spare capacity, which reads real files (see [`MIRI_REAL_FILES`]).
const MIRI_FILTERS: &[(&str, &[&str])] = &[
    ("keel-blockcache", &["bucket::area"]),
    ("keel-fs", &["conformance_tests::appending"]),
    (
        "keel-memstore",
        &[
            "--skip",
            "flat::",
            "--skip",
            "row_filter::",
            "--skip",
            "row_hints::",
            "--skip",
            "mem_keys_sort_as_their_cell_keys",
        ],
    ),
    ("keel-sync", &["prefetch"]),
    ("keel-testkit", &["counting_alloc"]),
];

/// Packages whose Miri tests touch the host's files (a temporary directory), which Miri allows
/// only with isolation off.
const MIRI_REAL_FILES: &[&str] = &["keel-fs"];

/// Runs the unit tests of every crate with `unsafe` under Miri, or says why it cannot: Miri
/// needs a nightly toolchain with the `miri` component, which a fresh machine may not have, so
/// its absence is a skip (exit 0), never a failure.
pub(crate) fn miri() -> Result<(), String> {
    if !installed(
        &["+nightly", "miri", "--version"],
        "miri: skipped: no nightly toolchain with the miri component \
         (`rustup component add --toolchain nightly miri`)",
    ) {
        return Ok(());
    }
    for package in MIRI_PACKAGES {
        let mut command = std::process::Command::new("cargo");
        command
            .args(["+nightly", "miri", "test", "-p", package, "--lib"])
            .current_dir(crate::cmd::workspace_root());
        if let Some((_, filter)) = MIRI_FILTERS.iter().find(|(p, _)| p == package) {
            command.arg("--").args(*filter);
        }
        if MIRI_REAL_FILES.contains(package) {
            command.env("MIRIFLAGS", "-Zmiri-disable-isolation");
        }
        run(command)?;
    }
    Ok(())
}

/// Whether `cargo <probe>` runs (an optional tool is installed); if not, says `skip_message`.
fn installed(probe: &[&str], skip_message: &str) -> bool {
    let status = std::process::Command::new("cargo")
        .args(probe)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status();
    let ok = status.is_ok_and(|s| s.success());
    if !ok {
        #[expect(clippy::print_stdout, reason = "tell the user why nothing ran")]
        {
            println!("{skip_message}");
        }
    }
    ok
}

/// `cargo xtask fuzz <name>`: cargo-fuzz targets, as (name, crate directory, fuzz target).
/// The fourth field is a seed corpus directory within the crate: valid inputs to mutate from.
const FUZZ: &[(&str, &str, &str, &str)] = &[
    (
        "storefile",
        "crates/keel-storefile",
        "open_and_read",
        "fixtures",
    ),
    ("thrift", "crates/keel-thrift", "decode", "fuzz/seeds"),
];

/// Fuzzes one target for `seconds` with cargo-fuzz, or says why it cannot: cargo-fuzz and a
/// nightly toolchain are optional on a fresh machine, so their absence is a skip (exit 0). The
/// target's body also runs in every CI run as an ordinary test on random inputs.
pub(crate) fn fuzz(name: &str, seconds: u32) -> Result<(), String> {
    let Some((_, dir, target, seeds)) = FUZZ.iter().find(|(n, ..)| *n == name) else {
        let known: Vec<&str> = FUZZ.iter().map(|(n, ..)| *n).collect();
        return Err(format!(
            "unknown fuzz target {name:?}; known: {}",
            known.join(", ")
        ));
    };
    if !installed(
        &["+nightly", "fuzz", "--version"],
        "fuzz: skipped: needs cargo-fuzz and a nightly toolchain \
         (`cargo install cargo-fuzz`, `rustup toolchain install nightly`)",
    ) {
        return Ok(());
    }
    // libFuzzer wants its corpus directory to exist (it is git-ignored, so a fresh clone has
    // none).
    let crate_dir = crate::cmd::workspace_root().join(dir);
    std::fs::create_dir_all(crate_dir.join("fuzz/corpus").join(target))
        .map_err(|e| format!("creating the fuzz corpus directory: {e}"))?;
    let mut command = std::process::Command::new("cargo");
    command
        .args([
            "+nightly",
            "fuzz",
            "run",
            target,
            &format!("fuzz/corpus/{target}"),
            seeds,
            "--",
            &format!("-max_total_time={seconds}"),
        ])
        .current_dir(crate_dir);
    run(command)
}

/// `cargo xtask crash <name>`: kill a child process mid-work, recover, check.
const CRASHES: &[Suite] = &[
    Suite {
        name: "testkit-child",
        about: "keel-testkit's kill-a-child harness: every report flushed before SIGKILL arrives",
        package: "keel-testkit",
        target: "child_process",
    },
    Suite {
        name: "wal",
        about: "keel-wal: SIGKILL a child appending from 8 threads; every ack replays",
        package: "keel-wal",
        target: "crash",
    },
    Suite {
        name: "region",
        about: "keel-region: SIGKILL a child writing, incrementing and flushing; every ack survives",
        package: "keel-region",
        target: "crash",
    },
];

/// `cargo xtask soak`: long mixed loads with their own invariant checks, run for minutes.
const SOAKS: &[Suite] = &[Suite {
    name: "region",
    about: "keel-region: writes, deletes, increments, scans, flushes, compactions and restarts under tight limits",
    package: "keel-region",
    target: "soak",
}];

/// Runs one soak suite for `minutes` (CI runs each as a seconds-long smoke test).
pub(crate) fn soak(name: &str, minutes: f64) -> Result<(), String> {
    let suite = find(SOAKS, "soak", name)?;
    if minutes.is_nan() || minutes <= 0.0 {
        return Err(format!("--minutes must be positive, not {minutes}"));
    }
    let mut command = release_test(suite);
    command.args(["--", "--nocapture"]);
    command.env(
        "KEEL_SOAK_SECONDS",
        format!("{}", (minutes * 60.0).ceil() as u64),
    );
    run(command)
}

/// `cargo xtask model`: shuttle models, built with `--cfg shuttle` (keel-sync then hands out
/// shuttle's primitives) into their own target directory so normal builds stay untouched.
const MODELS: &[Suite] = &[
    Suite {
        name: "mvcc",
        about: "keel-mvcc: read point order, half batches, wake-ups, row-lock exclusion, cleanup",
        package: "keel-mvcc",
        target: "model",
    },
    Suite {
        name: "bufpool",
        about: "keel-bufpool: the lock-free free list hands out and takes back each buffer once",
        package: "keel-bufpool",
        target: "model",
    },
    Suite {
        name: "wal",
        about: "keel-wal: group commit never acks before its write/sync; no waiter left asleep",
        package: "keel-wal",
        target: "model",
    },
    Suite {
        name: "blockcache",
        about: "keel-blockcache id locks: shared objects, weak cleanup, soft bound, exclusion",
        package: "keel-blockcache",
        target: "model",
    },
    Suite {
        name: "region",
        about: "keel-region: a flush or a close racing writers loses no acknowledged write",
        package: "keel-region",
        target: "model",
    },
    Suite {
        name: "rpc",
        about: "keel-rpc: every call runs once, no call stranded beside a parked handler, shutdown",
        package: "keel-rpc",
        target: "model",
    },
];

fn find<'a>(table: &'a [Suite], kind: &str, name: &str) -> Result<&'a Suite, String> {
    table.iter().find(|s| s.name == name).ok_or_else(|| {
        let known: Vec<String> = table
            .iter()
            .map(|s| format!("  {:<16} {}", s.name, s.about))
            .collect();
        format!(
            "unknown {kind} {name:?}; known {kind} names:\n{}",
            known.join("\n")
        )
    })
}

pub(crate) fn bench(name: &str, quick: bool, plot: bool) -> Result<(), String> {
    let suite = find(BENCHES, "bench", name)?;
    if plot && !PLOTS.contains(&name) {
        return Err(format!(
            "bench {name} draws no chart; --plot works for: {}",
            PLOTS.join(", ")
        ));
    }
    // The tracing benchmark's baseline: the same benchmark with keel-region's `tracing`
    // feature off.
    let compiled_out = match name {
        "tracing" => Some(compiled_out_build()?),
        _ => None,
    };
    let mut args = vec![
        "bench",
        "--locked",
        "-p",
        suite.package,
        "--bench",
        suite.target,
    ];
    // The full peers comparison includes RocksDB, whose C++ build (minutes, libclang) the
    // quick run skips.
    if name == "peers" && !quick {
        args.extend(["--features", "keel-bench/peers"]);
    }
    if quick || plot {
        args.push("--");
    }
    if quick {
        args.push("--quick");
    }
    if plot {
        args.push("--plot");
    }
    if let Some(exe) = &compiled_out {
        if !quick && !plot {
            args.push("--");
        }
        args.extend(["--compiled-out", exe]);
    }
    run(cargo(&args))
}

/// Builds the tracing benchmark without keel-region's `tracing` feature (in its own target
/// directory, so the two builds never evict each other) and returns the executable's path.
pub(crate) fn compiled_out_build() -> Result<String, String> {
    let mut command = cargo(&[
        "bench",
        "--locked",
        "-p",
        "keel-region",
        "--bench",
        "tracing",
        "--no-default-features",
        "--no-run",
        "--target-dir",
        "target/tracing-compiled-out",
        "--message-format=json-render-diagnostics",
    ]);
    command.stderr(std::process::Stdio::inherit());
    let output = command
        .output()
        .map_err(|e| format!("cannot build the compiled-out benchmark: {e}"))?;
    if !output.status.success() {
        return Err("building the compiled-out tracing benchmark failed".to_string());
    }
    let text = String::from_utf8_lossy(&output.stdout);
    text.lines()
        .filter(|line| {
            line.contains("\"name\":\"tracing\"") && line.contains("\"kind\":[\"bench\"]")
        })
        .find_map(|line| {
            let start = line.find("\"executable\":\"")? + "\"executable\":\"".len();
            let end = start + line[start..].find('"')?;
            Some(line[start..end].to_string())
        })
        .ok_or_else(|| "cargo did not report the compiled-out benchmark's executable".to_string())
}

/// `cargo test --release` of one suite's test target.
fn release_test(suite: &Suite) -> std::process::Command {
    cargo(&[
        "test",
        "--release",
        "--locked",
        "-p",
        suite.package,
        "--test",
        suite.target,
    ])
}

pub(crate) fn crash(name: &str, rounds: Option<u32>) -> Result<(), String> {
    let suite = find(CRASHES, "crash", name)?;
    let mut command = release_test(suite);
    if let Some(rounds) = rounds {
        command.env("KEEL_CRASH_ROUNDS", rounds.to_string());
    }
    run(command)
}

/// Runs every shuttle model (or the one named); `iterations` overrides each model's count.
pub(crate) fn model(name: Option<&str>, iterations: Option<u32>) -> Result<(), String> {
    let suites: Vec<&Suite> = match name {
        Some(name) => vec![find(MODELS, "model", name)?],
        None => MODELS.iter().collect(),
    };
    let rustflags = std::env::var("RUSTFLAGS").unwrap_or_default();
    for suite in suites {
        let mut command = cargo(&[
            "test",
            "--release",
            "--locked",
            "--target-dir",
            "target/shuttle",
            "-p",
            suite.package,
            "--test",
            suite.target,
        ]);
        command.env("RUSTFLAGS", format!("{rustflags} --cfg shuttle").trim());
        if let Some(iterations) = iterations {
            command.env("KEEL_MODEL_ITERS", iterations.to_string());
        }
        run(command)?;
    }
    Ok(())
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
        let err = find(MODELS, "model", "nope").unwrap_err();
        assert!(err.contains("mvcc"), "{err}");
    }

    #[test]
    fn every_suite_names_an_existing_target() {
        let root = crate::cmd::workspace_root();
        for (table, section) in [
            (BENCHES, "bench"),
            (CRASHES, "test"),
            (MODELS, "test"),
            (SOAKS, "test"),
        ] {
            for suite in table {
                // keel-bench (the load drivers) lives in `benches/`; every other package in
                // `crates/<name>`.
                let dir = if suite.package == "keel-bench" {
                    root.join("benches")
                } else {
                    root.join("crates").join(suite.package)
                };
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
