//! The abuse suite (the same cases as `cargo xtask bench abuse`, shortened): `keel serve` as a
//! child process under `prlimit` (address space capped, so a regression that would exhaust
//! memory fails here instead of taking CI down), one fresh store per case. Every case must end
//! with the server alive and misbehaving nowhere (no stolen scanner served, no wrong answer),
//! the well-behaved client served during the attack (no call failed, p99 under a second; it
//! used to wait out 5 s timeouts) and after it, and the server's RSS growth within
//! [`RSS_BOUND_MIB`].

#[path = "../benches/abuse/cases.rs"]
mod cases;
#[path = "../benches/abuse/harness.rs"]
mod harness;
#[path = "../benches/abuse/runner.rs"]
mod runner;

/// The suite's in-flight budget (64 MiB, see `harness::SETTINGS`) plus 64 MiB for what is not
/// in it: a thousand connections' threads and read chunks, allocator slack.
const RSS_BOUND_MIB: f64 = 128.0;

#[test]
fn every_attack_leaves_the_server_bounded_and_the_victim_served() {
    harness::raise_open_files();
    let exe = env!("CARGO_BIN_EXE_keel");
    let phases = runner::Phases::new(true);
    let mut outcomes = Vec::new();
    for case in cases::all() {
        outcomes.push(runner::run(exe, case, phases));
    }
    // The yardstick for the victim's p99 on a busy machine (printed, not asserted).
    let control = runner::run(exe, Box::new(cases::CpuControl), phases);
    runner::print_table(&outcomes);
    runner::print_table(std::slice::from_ref(&control));
    for o in &outcomes {
        let context = format!("{}: {o:#?}\nthe server's log ends:\n{}", o.name, o.log_tail);
        assert!(o.alive, "{context}");
        assert_eq!(o.misbehaved, 0, "{context}");
        assert!(o.checks.is_ok(), "{context}");
        assert!(o.served_after, "{context}");
        assert!(o.during.served > 0 && o.during.failed == 0, "{context}");
        assert!(o.during.p99_us < 1_000_000, "{context}");
        assert!(o.rss_growth_mib() <= RSS_BOUND_MIB, "{context}");
    }
}
