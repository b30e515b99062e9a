//! Splits and merges are crash-safe (keel-fs `FaultFs`): each is run once to count its writes
//! and syncs, then again with the machine stopped at every one of them in turn. Every crash
//! image must reopen to the regions before or the regions after — never both, never neither —
//! with every acknowledged row present exactly once, and no directory left that neither the
//! catalog names nor a named region refers to.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use keel_cell::Cell;
use keel_fs::{Fault, FaultFs, FileSystem};
use keel_region::{
    Durability, Engine, EngineOptions, FamilyOptions, RegionError, RegionLimits, Scan, TableOptions,
};

const DIR: &str = "/store";

fn options() -> EngineOptions {
    EngineOptions {
        flush_check_interval: Duration::from_secs(3600),
        limits: RegionLimits {
            preclose_flush_size: 0,
            ..RegionLimits::default()
        },
        block_cache_bytes: 0,
        // No background compaction may add writes to an operation's count.
        compact_split_regions: false,
        ..EngineOptions::default()
    }
}

fn open(fs: Arc<dyn FileSystem>) -> Engine {
    Engine::open_on(fs, Path::new(DIR), options()).expect("the store opens")
}

/// The table's region boundaries and its rows.
type Observed = (Vec<(String, String)>, Vec<(String, String)>);

fn observe(server: &Engine) -> Observed {
    let t = server.table("t").expect("the table opens");
    let regions = t
        .region_infos()
        .into_iter()
        .map(|r| {
            (
                String::from_utf8_lossy(&r.start_key).into_owned(),
                String::from_utf8_lossy(&r.end_key).into_owned(),
            )
        })
        .collect();
    let rows = t
        .scan(&Scan::all(i64::MAX / 2))
        .expect("scan")
        .into_iter()
        .flatten()
        .map(|c| {
            (
                String::from_utf8_lossy(c.row()).into_owned(),
                String::from_utf8_lossy(c.value()).into_owned(),
            )
        })
        .collect();
    (regions, rows)
}

fn writes_and_syncs(fs: &FaultFs) -> u64 {
    let c = fs.op_counts();
    c.writes + c.syncs
}

/// A table of three regions (split at g and n) with rows flushed and rows only logged in each.
fn setup(server: &Engine) {
    let t = server
        .create_table_with(
            "t",
            vec![FamilyOptions::new("f")],
            TableOptions {
                split_keys: vec!["g".into(), "n".into()],
                ..TableOptions::default()
            },
        )
        .expect("create");
    let put =
        |row: &str, v: &str| Cell::put(row.to_string(), "f", "q", 5, v.to_string()).expect("cell");
    t.mutate(
        vec![
            put("a", "f"),
            put("c", "f"),
            put("h", "f"),
            put("k", "f"),
            put("p", "f"),
            put("x", "f"),
        ],
        Durability::FsyncWal,
    )
    .expect("write");
    t.flush().expect("flush");
    t.mutate(
        vec![
            put("b", "l"),
            put("d", "l"),
            put("i", "l"),
            put("m", "l"),
            put("q", "l"),
        ],
        Durability::FsyncWal,
    )
    .expect("write");
}

fn sweep(name: &str, op: impl Fn(&Engine) -> Result<(), RegionError>) {
    let clean = Arc::new(FaultFs::new());
    let server = open(clean.clone());
    setup(&server);
    let counted_from = writes_and_syncs(&clean);
    let before_image = Arc::new(clean.crash_image());
    op(&server).expect("the operation succeeds when nothing fails");
    let steps = writes_and_syncs(&clean) - counted_from;
    let after_image = Arc::new(clean.crash_image());
    drop(server);
    let before = observe(&open(before_image));
    let after = observe(&open(after_image));
    assert_ne!(before.0, after.0, "{name}: the regions changed");
    assert_eq!(before.1, after.1, "{name}: the rows did not");
    let (mut saw_before, mut saw_after) = (false, false);
    for n in 1..=steps + 1 {
        let fs = Arc::new(FaultFs::new());
        let server = open(fs.clone());
        setup(&server);
        fs.inject(Fault::crash_at(n));
        let result = op(&server);
        let image = Arc::new(fs.crash_image());
        drop(server);
        let reopened = open(image.clone());
        let state = observe(&reopened);
        assert_eq!(
            state.1, before.1,
            "{name}, crash at step {n}: the rows changed"
        );
        if state.0 == before.0 {
            saw_before = true;
            assert!(
                result.is_err() || n > steps,
                "{name}: step {n} acknowledged, then undone"
            );
        } else if state.0 == after.0 {
            saw_after = true;
        } else {
            panic!(
                "{name}, crash at step {n} of {steps}: regions {:?}, neither {:?} nor {:?}",
                state.0, before.0, after.0
            );
        }
        // Directories: the named regions, and the closed ones they still read from; after the
        // references are compacted away, only the named.
        let t = reopened.table("t").expect("t");
        let named = t.regions().len();
        let dirs = image
            .list(&Path::new(DIR).join("data"))
            .expect("data")
            .len();
        let referring = t.regions().iter().any(|r| r.has_references());
        assert!(
            dirs >= named && (referring || dirs == named),
            "{name}, step {n}: {dirs} directories for {named} regions"
        );
        t.major_compact().expect("compact");
        reopened.remove_unreferenced_regions();
        assert_eq!(
            image
                .list(&Path::new(DIR).join("data"))
                .expect("data")
                .len(),
            named,
            "{name}, step {n}: the janitor"
        );
        assert_eq!(observe(&reopened).1, before.1);
    }
    assert!(
        saw_before && saw_after,
        "{name}: the sweep saw both outcomes"
    );
}

#[test]
fn a_split_is_crash_safe() {
    sweep("split", |s| {
        let t = s.table("t").expect("t");
        let middle = t.regions()[1].id();
        s.split_region("t", middle, Some("j".into())).map(|_| ())
    });
}

#[test]
fn a_merge_is_crash_safe() {
    sweep("merge", |s| {
        let t = s.table("t").expect("t");
        let ids: Vec<u64> = t.regions().iter().map(|r| r.id()).collect();
        s.merge_regions("t", ids[0], ids[1]).map(|_| ())
    });
}
