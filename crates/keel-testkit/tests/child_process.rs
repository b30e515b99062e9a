//! The crash-child helper: a child that reports progress can be killed mid-run, and every report
//! it flushed before the kill reaches the parent.

use std::time::Duration;

use keel_testkit::{ChildProcess, child_role, report};
use rand::Rng;

/// Rounds of spawn-and-kill; `cargo xtask crash testkit-child --rounds N` raises it.
fn rounds() -> u32 {
    std::env::var("KEEL_CRASH_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(3)
}

#[test]
fn reports_survive_a_kill_in_order() {
    if child_role().as_deref() == Some("counter") {
        for i in 0u64.. {
            report(&i.to_string());
            std::thread::sleep(Duration::from_micros(200));
        }
    }
    let mut rng = keel_testkit::rng();
    for _ in 0..rounds() {
        let kill_after = rng.random_range(1..50);
        let mut child = ChildProcess::spawn("reports_survive_a_kill_in_order", "counter").unwrap();
        let mut seen = child
            .wait_for_reports(kill_after, Duration::from_secs(30))
            .unwrap();
        seen.extend(child.kill_and_collect().unwrap());
        let numbers: Vec<u64> = seen.iter().map(|s| s.parse().unwrap()).collect();
        assert!(numbers.len() >= kill_after);
        for (i, n) in numbers.iter().enumerate() {
            assert_eq!(*n, i as u64, "reports arrive complete and in order");
        }
    }
}

#[test]
fn a_child_that_exits_is_reported_with_its_status() {
    if child_role().as_deref() == Some("short") {
        report("only");
        return;
    }
    let mut child = ChildProcess::spawn_with_env(
        "a_child_that_exits_is_reported_with_its_status",
        "short",
        &[("KEEL_UNUSED", "1")],
    )
    .unwrap();
    let (status, reports) = child.wait().unwrap();
    assert!(status.success());
    assert_eq!(reports, vec!["only".to_string()]);
}

#[test]
fn waiting_for_reports_that_never_come_is_an_error() {
    if child_role().as_deref() == Some("silent") {
        return;
    }
    let mut child =
        ChildProcess::spawn("waiting_for_reports_that_never_come_is_an_error", "silent").unwrap();
    let err = child
        .wait_for_reports(1, Duration::from_secs(30))
        .unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::TimedOut);
    assert!(child.kill_and_collect().unwrap().is_empty());
}
