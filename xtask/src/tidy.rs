//! The workspace's own rules, checked by `cargo xtask tidy` and by a `#[test]` (so a plain
//! `cargo test` predicts CI):
//!
//! - every member's Keel dependencies are allowed by the dependency table in
//!   `docs/architecture.md`, and that table's "built"/"planned" status matches the workspace;
//! - internal entries in `[workspace.dependencies]` carry a version unless unpublished;
//! - every member opts into the workspace lints;
//! - every optional feature is linted and tested by CI, or named as left out;
//! - every crate under `crates/` has its design note `docs/<name without keel->.md`;
//! - every source file starts with a module doc comment (`//!`);
//! - library crates do not print to stdout;
//! - every crate with `unsafe` code is in `cargo xtask miri`'s list, so Miri checks it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const TABLE_BEGIN: &str = "<!-- tidy:levels begin -->";
const TABLE_END: &str = "<!-- tidy:levels end -->";

/// One row of the dependency table.
#[derive(Debug)]
struct Allowed {
    built: bool,
    /// `None` means any Keel crate.
    deps: Option<BTreeSet<String>>,
}

/// A workspace member as read from its manifest.
#[derive(Debug)]
struct Member {
    name: String,
    dir: PathBuf,
    manifest: toml::Table,
}

/// Runs every check; returns the problems found (empty means tidy).
pub(crate) fn check(root: &Path) -> Vec<String> {
    let mut problems = Vec::new();
    let members = match read_members(root) {
        Ok(members) => members,
        Err(err) => return vec![err],
    };
    match read_levels(root) {
        Ok(levels) => check_levels(&members, &levels, &mut problems),
        Err(err) => problems.push(err),
    }
    check_workspace_versions(root, &members, &mut problems);
    check_unused_workspace_deps(root, &members, &mut problems);
    for member in &members {
        check_lints_opt_in(member, &mut problems);
        check_ci_features(member, &mut problems);
        check_sources(root, member, &mut problems);
        if member.dir.starts_with(root.join("crates")) {
            let note = member.name.trim_start_matches("keel-");
            if !root.join("docs").join(format!("{note}.md")).exists() {
                problems.push(format!("{} has no design note docs/{note}.md", member.name));
            }
        }
    }
    problems
}

/// Features CI deliberately leaves out (`crate/feature`).
const LEFT_OUT_OF_CI: &[&str] = &["keel-bench/peers"];

/// Every optional feature is in `cmd::CI_FEATURES` (CI's stand-in for `--all-features`) or
/// named as left out.
fn check_ci_features(member: &Member, problems: &mut Vec<String>) {
    let Some(features) = member.manifest.get("features").and_then(|f| f.as_table()) else {
        return;
    };
    let listed: Vec<&str> = crate::cmd::CI_FEATURES.split(',').collect();
    for name in features.keys().filter(|k| *k != "default") {
        let full = format!("{}/{name}", member.name);
        if !listed.contains(&full.as_str()) && !LEFT_OUT_OF_CI.contains(&full.as_str()) {
            problems.push(format!(
                "feature {full} is neither in xtask's CI_FEATURES nor left out on purpose"
            ));
        }
    }
}

fn read_toml(path: &Path) -> Result<toml::Table, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    text.parse::<toml::Table>()
        .map_err(|e| format!("{}: {e}", path.display()))
}

fn read_members(root: &Path) -> Result<Vec<Member>, String> {
    let mut dirs = vec![root.join("xtask"), root.join("benches")];
    let crates = root.join("crates");
    let entries = std::fs::read_dir(&crates).map_err(|e| format!("{}: {e}", crates.display()))?;
    for entry in entries {
        let path = entry.map_err(|e| e.to_string())?.path();
        if path.join("Cargo.toml").exists() {
            dirs.push(path);
        }
    }
    dirs.sort();
    let mut members = Vec::new();
    for dir in dirs {
        let manifest = read_toml(&dir.join("Cargo.toml"))?;
        let name = manifest
            .get("package")
            .and_then(|p| p.get("name"))
            .and_then(|n| n.as_str())
            .ok_or_else(|| format!("{}: no package.name", dir.display()))?
            .to_string();
        members.push(Member {
            name,
            dir,
            manifest,
        });
    }
    Ok(members)
}

/// Parses the table between the tidy markers in docs/architecture.md:
/// `| crate | level | built or planned | allowed Keel deps (comma list, "—" or "any") |`.
fn read_levels(root: &Path) -> Result<BTreeMap<String, Allowed>, String> {
    let path = root.join("docs/architecture.md");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let start = text
        .find(TABLE_BEGIN)
        .ok_or("docs/architecture.md: no tidy:levels table")?;
    let end = text
        .find(TABLE_END)
        .ok_or("docs/architecture.md: tidy:levels table not closed")?;
    let mut levels = BTreeMap::new();
    for line in text[start..end].lines().filter(|l| l.starts_with('|')) {
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        let [krate, _level, status, deps] = cells[..] else {
            return Err(format!("docs/architecture.md: bad levels row: {line}"));
        };
        let krate = krate.trim_matches('`');
        if krate == "Crate" || krate.starts_with("---") {
            continue;
        }
        let built = match status {
            "built" => true,
            "planned" => false,
            other => {
                return Err(format!(
                    "docs/architecture.md: status {other:?} for {krate}"
                ));
            }
        };
        let deps = match deps {
            "any" => None,
            "—" | "-" | "" => Some(BTreeSet::new()),
            list => Some(
                list.split(',')
                    .map(|d| d.trim().trim_matches('`').to_string())
                    .collect(),
            ),
        };
        levels.insert(krate.to_string(), Allowed { built, deps });
    }
    Ok(levels)
}

fn keel_deps(manifest: &toml::Table, section: &str) -> BTreeSet<String> {
    manifest
        .get(section)
        .and_then(|s| s.as_table())
        .map(|t| {
            t.keys()
                .filter(|k| k.starts_with("keel-"))
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}

fn check_levels(
    members: &[Member],
    levels: &BTreeMap<String, Allowed>,
    problems: &mut Vec<String>,
) {
    let names: BTreeSet<&str> = members.iter().map(|m| m.name.as_str()).collect();
    for (krate, allowed) in levels {
        if allowed.built != names.contains(krate.as_str()) {
            let (said, is) = if allowed.built {
                ("built", "missing")
            } else {
                ("planned", "present")
            };
            problems.push(format!(
                "architecture.md says {krate} is {said} but it is {is}"
            ));
        }
    }
    for member in members {
        let Some(allowed) = levels.get(&member.name) else {
            problems.push(format!(
                "{} is not in the architecture.md levels table",
                member.name
            ));
            continue;
        };
        let Some(deps) = &allowed.deps else { continue };
        // Every allowed edge is a real one: a stale entry hides what the crate really needs.
        let mut used = keel_deps(&member.manifest, "dependencies");
        used.extend(keel_deps(&member.manifest, "dev-dependencies"));
        for dep in deps.iter().filter(|d| !used.contains(*d)) {
            problems.push(format!(
                "architecture.md allows {} to depend on {dep}, but its manifest does not name it",
                member.name
            ));
        }
        for section in ["dependencies", "build-dependencies", "dev-dependencies"] {
            for dep in keel_deps(&member.manifest, section) {
                // Tests may always use keel-testkit, and the crate itself with test features on.
                let dev_ok =
                    section == "dev-dependencies" && (dep == "keel-testkit" || dep == member.name);
                if !deps.contains(&dep) && !dev_ok {
                    problems.push(format!(
                        "{} [{section}] names {dep}, which architecture.md does not allow it",
                        member.name
                    ));
                }
            }
        }
    }
}

/// Every dependency table of a manifest: the plain ones and each `[target.'cfg(..)'.*]`.
fn dependency_tables(manifest: &toml::Table) -> Vec<&toml::Table> {
    const SECTIONS: [&str; 3] = ["dependencies", "build-dependencies", "dev-dependencies"];
    let mut tables: Vec<&toml::Table> = SECTIONS
        .iter()
        .filter_map(|s| manifest.get(*s).and_then(|t| t.as_table()))
        .collect();
    if let Some(targets) = manifest.get("target").and_then(|t| t.as_table()) {
        for target in targets.values().filter_map(|t| t.as_table()) {
            tables.extend(
                SECTIONS
                    .iter()
                    .filter_map(|s| target.get(*s).and_then(|t| t.as_table())),
            );
        }
    }
    tables
}

/// Every `[workspace.dependencies]` entry is used by some member: an unused one is a version
/// pin nobody needs, and a sign that a dependency was dropped but not forgotten.
fn check_unused_workspace_deps(root: &Path, members: &[Member], problems: &mut Vec<String>) {
    let manifest = match read_toml(&root.join("Cargo.toml")) {
        Ok(m) => m,
        Err(err) => return problems.push(err),
    };
    let Some(declared) = manifest
        .get("workspace")
        .and_then(|w| w.get("dependencies"))
        .and_then(|d| d.as_table())
    else {
        return;
    };
    let used: BTreeSet<&str> = members
        .iter()
        .flat_map(|m| dependency_tables(&m.manifest))
        .flat_map(|t| t.keys().map(String::as_str))
        .collect();
    for name in declared.keys() {
        if !used.contains(name.as_str()) {
            problems.push(format!(
                "[workspace.dependencies] {name} is used by no member"
            ));
        }
    }
}

fn check_workspace_versions(root: &Path, members: &[Member], problems: &mut Vec<String>) {
    let manifest = match read_toml(&root.join("Cargo.toml")) {
        Ok(m) => m,
        Err(err) => return problems.push(err),
    };
    let deps = manifest
        .get("workspace")
        .and_then(|w| w.get("dependencies"))
        .and_then(|d| d.as_table())
        .cloned()
        .unwrap_or_default();
    for member in members {
        let unpublished = member
            .manifest
            .get("package")
            .and_then(|p| p.get("publish"))
            .and_then(|p| p.as_bool())
            == Some(false);
        let Some(entry) = deps.get(&member.name) else {
            continue;
        };
        if !unpublished && entry.get("version").is_none() {
            problems.push(format!(
                "[workspace.dependencies] {} needs a version",
                member.name
            ));
        }
    }
}

fn check_lints_opt_in(member: &Member, problems: &mut Vec<String>) {
    let opted_in = member
        .manifest
        .get("lints")
        .and_then(|l| l.get("workspace"))
        .and_then(|w| w.as_bool())
        == Some(true);
    if !opted_in {
        problems.push(format!("{} lacks `[lints] workspace = true`", member.name));
    }
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn check_sources(root: &Path, member: &Member, problems: &mut Vec<String>) {
    let src = member.dir.join("src");
    let is_library = src.join("lib.rs").exists();
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    for file in files {
        let shown = file
            .strip_prefix(root)
            .unwrap_or(&file)
            .display()
            .to_string();
        let Ok(text) = std::fs::read_to_string(&file) else {
            problems.push(format!("{shown}: unreadable"));
            continue;
        };
        let first = text
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .unwrap_or("");
        if !first.starts_with("//!") {
            problems.push(format!("{shown}: no module doc comment (`//!`) at the top"));
        }
        let has_unsafe = text.lines().any(|line| {
            let code = line.trim_start();
            !code.starts_with("//")
                && (code.contains("unsafe {")
                    || code.contains("unsafe impl")
                    || code.contains("unsafe fn"))
        });
        if is_library && has_unsafe && !crate::suites::MIRI_PACKAGES.contains(&member.name.as_str())
        {
            problems.push(format!(
                "{shown}: unsafe code in {}, which is not in MIRI_PACKAGES (xtask/src/suites.rs)",
                member.name
            ));
        }
        let binary_source =
            file.ends_with("main.rs") || file.components().any(|c| c.as_os_str() == "bin");
        if is_library && !binary_source {
            for (number, line) in text.lines().enumerate() {
                let code = line.trim_start();
                if !code.starts_with("//") && prints_to_stdout(code) {
                    problems.push(format!(
                        "{shown}:{}: library code prints to stdout",
                        number + 1
                    ));
                }
            }
        }
    }
}

/// True if `code` calls `print!` or `println!` (but not `eprint!`/`eprintln!`, or a longer name).
fn prints_to_stdout(code: &str) -> bool {
    ["println!(", "print!("].iter().any(|mac| {
        code.match_indices(mac).any(|(at, _)| {
            let before = code[..at].chars().next_back();
            !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stdout_macros_are_told_from_stderr_ones() {
        assert!(prints_to_stdout("println!(\"x\");"));
        assert!(prints_to_stdout("let _ = 1; print!(\"x\");"));
        assert!(!prints_to_stdout("eprintln!(\"x\");"));
        assert!(!prints_to_stdout("eprint!(\"x\");"));
        assert!(!prints_to_stdout("my_println!(\"x\");"));
    }

    /// The real workspace is tidy: `cargo test` fails exactly when `cargo xtask tidy` would.
    #[test]
    fn workspace_is_tidy() {
        let problems = check(&crate::cmd::workspace_root());
        assert!(
            problems.is_empty(),
            "tidy problems:\n{}",
            problems.join("\n")
        );
    }

    fn scratch_workspace(dir: &Path, cell_deps: &str, table_extra: &str, src: &str) {
        let write = |p: &str, s: &str| {
            let path = dir.join(p);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, s).unwrap();
        };
        write(
            "Cargo.toml",
            "[workspace.dependencies]\nkeel-cell = { path = \"crates/keel-cell\" }\n",
        );
        for member in ["xtask", "benches"] {
            let name = if member == "xtask" {
                "xtask"
            } else {
                "keel-bench"
            };
            write(
                &format!("{member}/Cargo.toml"),
                &format!("[package]\nname = \"{name}\"\n[lints]\nworkspace = true\n"),
            );
            write(
                &format!("{member}/src/main.rs"),
                "//! Doc.\nfn main() { println!(\"ok\"); }\n",
            );
        }
        write(
            "crates/keel-cell/Cargo.toml",
            &format!("[package]\nname = \"keel-cell\"\n[dependencies]\n{cell_deps}\n"),
        );
        write("crates/keel-cell/src/lib.rs", src);
        write(
            "docs/architecture.md",
            &format!(
                "{TABLE_BEGIN}\n| Crate | Level | Status | May depend on |\n|---|---|---|---|\n\
                 | `keel-cell` | 0 | built | — |\n| `xtask` | tools | built | — |\n\
                 | `keel-bench` | tools | built | any |\n{table_extra}{TABLE_END}\n"
            ),
        );
    }

    #[test]
    fn each_rule_reports_its_violation() {
        let tmp = std::env::temp_dir().join(format!("keel-tidy-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&tmp);
        scratch_workspace(
            &tmp,
            "keel-wal = { path = \"../keel-wal\" }",
            "| `keel-wal` | 1 | built | `keel-cell` |\n",
            "fn f() { println!(\"no\"); }\nfn g() { unsafe { std::hint::unreachable_unchecked() } }\n",
        );
        let problems = check(&tmp).join("\n");
        for expected in [
            "architecture.md says keel-wal is built but it is missing",
            "keel-cell [dependencies] names keel-wal",
            "[workspace.dependencies] keel-cell needs a version",
            "keel-cell lacks `[lints] workspace = true`",
            "keel-cell has no design note docs/cell.md",
            "crates/keel-cell/src/lib.rs: no module doc comment",
            "crates/keel-cell/src/lib.rs:1: library code prints to stdout",
            "unsafe code in keel-cell, which is not in MIRI_PACKAGES",
        ] {
            assert!(
                problems.contains(expected),
                "missing {expected:?} in:\n{problems}"
            );
        }
        assert!(
            !problems.contains("xtask/src/main.rs"),
            "binaries may print:\n{problems}"
        );
        std::fs::remove_dir_all(&tmp).unwrap();
    }

    #[test]
    fn an_allowed_but_unused_edge_and_an_unused_workspace_dependency_are_reported() {
        let tmp = std::env::temp_dir().join(format!("keel-tidy-unused-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&tmp);
        scratch_workspace(&tmp, "", "| `keel-fs` | 0 | built | — |\n", "//! Doc.\n");
        // keel-fs may use keel-cell (planted), but does not; the workspace pins a crate nobody uses.
        let write = |p: &str, s: &str| std::fs::write(tmp.join(p), s).unwrap();
        std::fs::create_dir_all(tmp.join("crates/keel-fs/src")).unwrap();
        write(
            "crates/keel-fs/Cargo.toml",
            "[package]\nname = \"keel-fs\"\n[dependencies]\nbytes.workspace = true\n",
        );
        write("crates/keel-fs/src/lib.rs", "//! Doc.\n");
        let table = std::fs::read_to_string(tmp.join("docs/architecture.md")).unwrap();
        write(
            "docs/architecture.md",
            &table.replace(
                "| `keel-fs` | 0 | built | — |",
                "| `keel-fs` | 0 | built | `keel-cell` |",
            ),
        );
        write(
            "Cargo.toml",
            "[workspace.dependencies]\nkeel-cell = { path = \"crates/keel-cell\", version = \"0.1.0\" }\n\
             bytes = \"1\"\nleft-over = \"1\"\n",
        );
        let problems = check(&tmp).join("\n");
        assert!(
            problems.contains(
                "architecture.md allows keel-fs to depend on keel-cell, but its manifest does not name it"
            ),
            "{problems}"
        );
        assert!(
            problems.contains("[workspace.dependencies] left-over is used by no member"),
            "{problems}"
        );
        assert!(
            !problems.contains("bytes is used by no member"),
            "{problems}"
        );
        std::fs::remove_dir_all(&tmp).unwrap();
    }

    #[test]
    fn an_unlisted_crate_and_a_bad_status_are_reported() {
        let tmp = std::env::temp_dir().join(format!("keel-tidy-status-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&tmp);
        scratch_workspace(
            &tmp,
            "",
            "| `keel-mvcc` | 1 | someday | — |\n",
            "//! Doc.\n",
        );
        let problems = check(&tmp).join("\n");
        assert!(problems.contains("status \"someday\""), "{problems}");
        std::fs::remove_dir_all(&tmp).unwrap();
    }
}
