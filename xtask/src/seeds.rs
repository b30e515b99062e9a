//! `cargo xtask seeds`: the five seed experiments end to end, one process each — three through
//! `keel-bench seed run` (the YCSB driver: `fastpath`, `bufpool`, `idlock`), two as keel-region's
//! own benchmarks (`increment`, `tracing` in two builds) whose output `keel-bench seed import`
//! reads — then `keel-bench seed report` writes `target/seeds/report.md`, an SVG chart
//! per experiment, and the headline `figure:` lines.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use crate::cmd::{cargo, run, workspace_root};

/// Runs `command`, echoing its stdout as it comes, and returns that stdout.
fn tee(mut command: Command) -> Result<String, String> {
    let shown = format!("{command:?}").replace('"', "");
    #[expect(
        clippy::print_stdout,
        reason = "echo each step and its output like a shell script"
    )]
    {
        println!("$ {shown}");
        let mut child = command
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot run {shown}: {e}"))?;
        let mut text = String::new();
        if let Some(out) = child.stdout.take() {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                println!("{line}");
                text.push_str(&line);
                text.push('\n');
            }
        }
        let status = child.wait().map_err(|e| format!("{shown}: {e}"))?;
        if !status.success() {
            return Err(format!("{shown} failed with {status}"));
        }
        Ok(text)
    }
}

/// Runs every experiment at `size` (`quick`, `default` or `full`).
pub(crate) fn seeds(size: &str) -> Result<(), String> {
    let root = workspace_root();
    let out = root.join("target").join("seeds");
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    let out_arg = out.to_string_lossy().to_string();
    run(cargo(&[
        "build",
        "--release",
        "--locked",
        "-p",
        "keel-bench",
    ]))?;
    let keel_bench = |args: &[&str]| {
        let mut command = Command::new(root.join("target").join("release").join("keel-bench"));
        command.args(args).current_dir(&root);
        command
    };
    // The crate benchmarks' own sizes: their quick runs for CI's smoke run only. (Their quick
    // increment run lasts a fifth of a second, too short for a stable ratio; their full runs
    // take 8 s and 2 minutes.)
    let crate_args: &[&str] = if size == "quick" { &["--quick"] } else { &[] };
    let import = |name: &str, text: &str| -> Result<(), String> {
        let file = out.join(format!("{name}-output.txt"));
        std::fs::write(&file, text).map_err(|e| format!("{}: {e}", file.display()))?;
        run(keel_bench(&[
            "seed",
            "import",
            name,
            &file.to_string_lossy(),
            "--size",
            size,
            "--out",
            &out_arg,
        ]))
    };
    // 000: the fast path, whole stack over Thrift.
    run(keel_bench(&[
        "seed", "run", "fastpath", "--size", size, "--out", &out_arg,
    ]))?;
    // 001: the write path, keel-region's increment benchmark.
    let mut args = vec![
        "bench",
        "--locked",
        "-p",
        "keel-region",
        "--bench",
        "increment",
        "--",
    ];
    args.extend(crate_args);
    import("reorder", &tee(cargo(&args))?)?;
    // 002: request buffers, whole stack over Thrift.
    run(keel_bench(&[
        "seed", "run", "bufpool", "--size", size, "--out", &out_arg,
    ]))?;
    // 003: tracing, keel-region's benchmark in two builds.
    let compiled_out = crate::suites::compiled_out_build()?;
    let mut args = vec![
        "bench",
        "--locked",
        "-p",
        "keel-region",
        "--bench",
        "tracing",
        "--",
    ];
    args.extend(crate_args);
    args.extend(["--compiled-out", &compiled_out]);
    import("tracing", &tee(cargo(&args))?)?;
    // 004: id-lock pools, embedded through the YCSB driver.
    run(keel_bench(&[
        "seed", "run", "idlock", "--size", size, "--out", &out_arg,
    ]))?;
    run(keel_bench(&["seed", "report", "--out", &out_arg]))
}
