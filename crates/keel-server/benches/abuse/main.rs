//! `cargo xtask bench abuse [--quick]`: the abuse suite against `keel serve` as a child process
//! (see `cases.rs`), each case on a fresh store. Prints each case's server RSS and the
//! well-behaved client's p99 idle and under attack, then the worst of each:
//! `abuse_rss_growth_mib` (peak RSS during an attack minus before it) and
//! `abuse_victim_p99_ratio` (the victim's p99 under attack ÷ idle).

#![expect(clippy::print_stdout, reason = "a benchmark reports on the terminal")]

mod cases;
mod harness;
mod runner;

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let phases = runner::Phases::new(quick);
    let exe = env!("CARGO_BIN_EXE_keel");
    harness::raise_open_files();
    let outcomes: Vec<runner::Outcome> = cases::all()
        .into_iter()
        .map(|case| runner::run(exe, case, phases))
        .collect();
    let control = runner::run(exe, Box::new(cases::CpuControl), phases);
    runner::print_table(&outcomes);
    runner::print_table(std::slice::from_ref(&control));
    for o in &outcomes {
        if o.during.failed > 0 {
            println!(
                "{}: the victim's calls failed {} times; the server's log ends:\n{}",
                o.name, o.during.failed, o.log_tail
            );
        }
    }
    for o in &outcomes {
        let healthy = o.misbehaved == 0 && o.served_after && o.alive && o.checks.is_ok();
        if !healthy {
            println!("NOT HEALTHY: {}: {o:#?}", o.name);
        }
    }
    let growth = outcomes
        .iter()
        .map(runner::Outcome::rss_growth_mib)
        .fold(0.0, f64::max);
    let ratio = outcomes
        .iter()
        .map(runner::Outcome::p99_ratio)
        .fold(0.0, f64::max);
    println!("{}", keel_testkit::figure("abuse_rss_growth_mib", growth));
    println!("{}", keel_testkit::figure("abuse_victim_p99_ratio", ratio));
}
