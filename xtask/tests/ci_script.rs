//! `.ci/run`'s install checks: under `CI=true` a tool that could not be installed stops the run
//! with a message naming it, before any test runs; elsewhere the run goes on and says the tests
//! that need it will skip. happybase's install is made to fail by pointing pip at an index that
//! refuses connections, in a fresh virtualenv; `KEEL_CI_CHECK_ONLY` stops the script after its
//! checks, so this test never starts a CI run of its own.

use std::path::PathBuf;
use std::process::{Command, Output};

fn run_script(ci: bool, venv: &std::path::Path) -> Output {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut command = Command::new("bash");
    command
        .arg(root.join(".ci/run"))
        .env("KEEL_CI_CHECK_ONLY", "1")
        .env("KEEL_CI_VENV", venv)
        // Nothing can be downloaded: an index on a port nobody listens on, no retries, no cache.
        .env("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
        .env("PIP_RETRIES", "0")
        .env("PIP_TIMEOUT", "1")
        .env("PIP_NO_CACHE_DIR", "1")
        .env("PIP_DISABLE_PIP_VERSION_CHECK", "1");
    if ci {
        command.env("CI", "true");
    } else {
        command.env_remove("CI");
    }
    command.output().expect("bash runs .ci/run")
}

#[test]
fn a_failed_install_stops_ci_and_names_what_failed() {
    let dir = std::env::temp_dir().join(format!("keel-ci-script-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let under_ci = run_script(true, &dir.join("venv-ci"));
    let stderr = String::from_utf8_lossy(&under_ci.stderr);
    assert!(!under_ci.status.success(), "CI=true went on: {stderr}");
    assert!(
        stderr.contains("could not install happybase"),
        "the message names happybase: {stderr}"
    );
    assert!(stderr.contains("under CI=true"), "{stderr}");

    let local = run_script(false, &dir.join("venv-local"));
    let stderr = String::from_utf8_lossy(&local.stderr);
    assert!(local.status.success(), "a local run stopped: {stderr}");
    assert!(
        stderr.contains("could not install happybase") && stderr.contains("skipped"),
        "a local run says what will skip: {stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
