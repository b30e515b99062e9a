//! Runs one abuse case against a fresh server: the victim's latency idle, then during the
//! attack with the server's RSS sampled, then the checks that it recovered.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::cases::Case;
use crate::harness::{RssPeak, Server, VictimRun, rss_mib, victim};

/// How long each phase runs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Phases {
    /// The victim alone.
    pub(crate) idle: Duration,
    /// From the attack's start to the victim's measurement (connections opening, frames
    /// arriving).
    pub(crate) warm: Duration,
    /// The victim under attack.
    pub(crate) during: Duration,
}

impl Phases {
    pub(crate) fn new(quick: bool) -> Phases {
        if quick {
            Phases {
                idle: Duration::from_millis(1500),
                warm: Duration::from_millis(700),
                during: Duration::from_millis(2500),
            }
        } else {
            Phases {
                idle: Duration::from_secs(4),
                warm: Duration::from_secs(1),
                during: Duration::from_secs(8),
            }
        }
    }
}

/// What one case measured.
#[derive(Debug, Clone)]
pub(crate) struct Outcome {
    pub(crate) name: &'static str,
    pub(crate) rss_before_mib: f64,
    pub(crate) rss_peak_mib: f64,
    pub(crate) idle: VictimRun,
    pub(crate) during: VictimRun,
    /// Times the server did what it must not (0 expected).
    pub(crate) misbehaved: u64,
    /// The victim's first call after the attack, answered (within 10 s).
    pub(crate) served_after: bool,
    /// The server still running at the end.
    pub(crate) alive: bool,
    /// The case's own checks after the attack.
    pub(crate) checks: Result<(), String>,
    /// The server's last log lines.
    pub(crate) log_tail: String,
}

impl Outcome {
    pub(crate) fn rss_growth_mib(&self) -> f64 {
        (self.rss_peak_mib - self.rss_before_mib).max(0.0)
    }

    /// The victim's p99 under attack ÷ idle.
    pub(crate) fn p99_ratio(&self) -> f64 {
        self.during.p99_us as f64 / self.idle.p99_us.max(1) as f64
    }
}

pub(crate) fn run(exe: &str, mut case: Box<dyn Case>, phases: Phases) -> Outcome {
    let mut server = Server::start(exe);
    server.create_table();
    case.setup(&server);
    let idle = victim(&server, phases.idle);
    let rss_before_mib = rss_mib(server.pid());
    let stop = Arc::new(AtomicBool::new(false));
    let peak = RssPeak::start(server.pid());
    let attackers = case.attack(&server, &stop);
    std::thread::sleep(phases.warm);
    let during = victim(&server, phases.during);
    stop.store(true, Ordering::Relaxed);
    let misbehaved = attackers
        .into_iter()
        .map(|a| a.join().expect("an attacker thread panicked"))
        .sum();
    let rss_peak_mib = peak.peak_mib().max(rss_before_mib);
    drop(peak);
    let served_after = (0..20).any(|_| {
        let after = victim(&server, Duration::from_millis(500));
        after.served > 0 && after.failed == 0
    });
    let checks = case.after(&server);
    Outcome {
        name: case.name(),
        rss_before_mib,
        rss_peak_mib,
        idle,
        during,
        misbehaved,
        served_after,
        alive: server.alive(),
        checks,
        log_tail: server.log_tail(20),
    }
}

/// One line per case, for people.
#[expect(clippy::print_stdout, reason = "the suite's report, on the terminal")]
pub(crate) fn print_table(outcomes: &[Outcome]) {
    println!(
        "{:<58} {:>9} {:>9} {:>9} {:>10} {:>10} {:>7} {:>8}",
        "case", "rss MiB", "peak", "growth", "p99 idle", "p99 abuse", "ratio", "failed"
    );
    for o in outcomes {
        println!(
            "{:<58} {:>9.1} {:>9.1} {:>9.1} {:>8}µs {:>8}µs {:>7.2} {:>8}",
            o.name,
            o.rss_before_mib,
            o.rss_peak_mib,
            o.rss_growth_mib(),
            o.idle.p99_us,
            o.during.p99_us,
            o.p99_ratio(),
            o.during.failed
        );
    }
}
