//! The `keel` binary's flags are the settings table's: `keel serve --help` lists every flag the
//! table has, with its key, and a bad value is refused naming the flag.

use std::process::Command;

use keel_server::config::SETTINGS;

#[test]
fn serve_help_lists_every_setting_flag_and_bad_values_are_named() {
    let help = Command::new(env!("CARGO_BIN_EXE_keel"))
        .args(["serve", "--help"])
        .output()
        .expect("keel serve --help");
    assert!(help.status.success());
    let help = String::from_utf8_lossy(&help.stdout);
    let mut flags = 0;
    for setting in SETTINGS {
        let Some(flag) = setting.flag else { continue };
        flags += 1;
        assert!(
            help.contains(&format!("--{flag} <{}>", setting.value_name)),
            "--{flag} missing from:\n{help}"
        );
        assert!(
            help.contains(setting.key),
            "{} missing from:\n{help}",
            setting.key
        );
    }
    assert!(flags > 20, "{flags}");
    let bad = Command::new(env!("CARGO_BIN_EXE_keel"))
        .args(["serve", "--handler-count", "many", "--status-listen", "off"])
        .output()
        .expect("keel serve");
    assert!(!bad.status.success());
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(stderr.contains("--handler-count"), "{stderr}");
}
