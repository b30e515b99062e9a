//! Re-running the current test binary as a child process, for kill-and-recover tests.
//!
//! The pattern: a test checks [`child_role`] first. In the parent it is `None`; the test spawns
//! itself with [`ChildProcess::spawn`] and a role, reads the child's [`report`]s, kills it at a
//! moment of its choosing and checks what survived. In the child the role is set, and the same
//! test function does the child's work instead (write, report each acknowledged write, repeat).
//!
//! ```no_run
//! use keel_testkit::{ChildProcess, child_role, report};
//!
//! #[test]
//! fn acknowledged_writes_survive_kill() {
//!     if child_role().as_deref() == Some("writer") {
//!         for i in 0.. { /* write i durably */ report(&i.to_string()); }
//!     }
//!     let mut child = ChildProcess::spawn("acknowledged_writes_survive_kill", "writer").unwrap();
//!     child.wait_for_reports(100, std::time::Duration::from_secs(10)).unwrap();
//!     let acked = child.kill_and_collect().unwrap();
//!     // reopen and check every acked write is there
//! }
//! ```

use std::io::{self, BufRead, BufReader, Write};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The environment variable that tells a re-executed test binary which role to play.
pub const CHILD_ROLE_ENV: &str = "KEEL_TESTKIT_CHILD_ROLE";

/// Prefix that marks a report line on the child's stdout (the test harness prints other lines).
pub const REPORT_PREFIX: &str = "KEEL-REPORT ";

/// The role this process was started with by [`ChildProcess::spawn`], or `None` in a parent.
pub fn child_role() -> Option<String> {
    std::env::var(CHILD_ROLE_ENV).ok()
}

/// Sends one report line from a child to its parent, flushed before returning, so that a report
/// the parent can read is one the child had finished making when it was killed.
///
/// # Panics
/// If stdout is closed (the parent is gone): the child has nobody to report to.
pub fn report(line: &str) {
    debug_assert!(!line.contains('\n'), "a report is one line");
    let mut out = io::stdout().lock();
    let written = out
        .write_all(format!("{REPORT_PREFIX}{line}\n").as_bytes())
        .and_then(|()| out.flush());
    if let Err(err) = written {
        panic!("keel-testkit child: cannot report to the parent: {err}");
    }
}

/// A running copy of the current test binary, playing a role.
#[derive(Debug)]
pub struct ChildProcess {
    child: Child,
    reports: Receiver<String>,
    reader: Option<JoinHandle<()>>,
}

impl ChildProcess {
    /// Starts the current test binary running only `test_name` (its full path inside the binary,
    /// as `cargo test -- --exact` takes it) with [`CHILD_ROLE_ENV`] set to `role`.
    pub fn spawn(test_name: &str, role: &str) -> io::Result<ChildProcess> {
        ChildProcess::spawn_with_env(test_name, role, &[])
    }

    /// As [`ChildProcess::spawn`], with extra environment variables for the child.
    pub fn spawn_with_env(
        test_name: &str,
        role: &str,
        env: &[(&str, &str)],
    ) -> io::Result<ChildProcess> {
        let exe = std::env::current_exe()?;
        let mut command = Command::new(exe);
        command
            .args([test_name, "--exact", "--nocapture", "--test-threads=1"])
            .env(CHILD_ROLE_ENV, role)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        for (key, value) in env {
            command.env(key, value);
        }
        let mut child = command.spawn()?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| io::Error::other("child has no stdout"))?;
        let (sender, reports) = mpsc::channel();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                // The harness may have printed "test name ... " on the same line first.
                let Some(at) = line.find(REPORT_PREFIX) else {
                    continue;
                };
                let report = &line[at + REPORT_PREFIX.len()..];
                if sender.send(report.to_string()).is_err() {
                    break;
                }
            }
        });
        Ok(ChildProcess {
            child,
            reports,
            reader: Some(reader),
        })
    }

    /// The next report, waiting at most `timeout`; `None` on timeout or once the child's stdout
    /// has closed.
    pub fn next_report(&mut self, timeout: Duration) -> Option<String> {
        self.reports.recv_timeout(timeout).ok()
    }

    /// Waits until `count` reports arrived and returns them; an error if the child stops or
    /// `timeout` passes first.
    pub fn wait_for_reports(&mut self, count: usize, timeout: Duration) -> io::Result<Vec<String>> {
        let deadline = Instant::now() + timeout;
        let mut got = Vec::with_capacity(count);
        while got.len() < count {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.next_report(left) {
                Some(report) => got.push(report),
                None => {
                    return Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!(
                            "child sent {} of {count} reports before {timeout:?}",
                            got.len()
                        ),
                    ));
                }
            }
        }
        Ok(got)
    }

    /// Kills the child with SIGKILL (no destructors, no flushing: a crash), waits for it, and
    /// returns every report it made that was not yet read.
    pub fn kill_and_collect(&mut self) -> io::Result<Vec<String>> {
        match self.child.kill() {
            Ok(()) => {}
            // Already exited: nothing to kill.
            Err(err) if err.kind() == io::ErrorKind::InvalidInput => {}
            Err(err) => return Err(err),
        }
        self.child.wait()?;
        Ok(self.drain())
    }

    /// Waits for the child to exit by itself and returns its status and unread reports.
    pub fn wait(&mut self) -> io::Result<(ExitStatus, Vec<String>)> {
        let status = self.child.wait()?;
        Ok((status, self.drain()))
    }

    fn drain(&mut self) -> Vec<String> {
        if let Some(reader) = self.reader.take() {
            // The reader ends at EOF, which the child's exit guarantees; a panic in it only
            // means lost lines, which the caller sees as missing reports.
            let _joined = reader.join();
        }
        self.reports.try_iter().collect()
    }
}

impl Drop for ChildProcess {
    fn drop(&mut self) {
        // Never leave a child running after a failed test. Errors mean it is already gone.
        let _killed = self.child.kill();
        let _reaped = self.child.wait();
    }
}
