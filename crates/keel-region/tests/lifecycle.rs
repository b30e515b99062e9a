//! Table operations are crash-atomic (keel-fs `FaultFs`): each of create, disable, enable and
//! delete is run once to count its writes and syncs, then again with the machine stopped at
//! every one of them in turn (`Fault::crash_at`). The crash image must reopen to the state
//! before the operation or the state after it, never a mix; every table in the catalog must
//! open (a disabled one is enabled to check); no directory the catalog does not name may be
//! left in `data/`; and a table created after an interrupted delete must start empty.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use keel_cell::Cell;
use keel_fs::{Fault, FaultFs, FileSystem};
use keel_region::{
    Durability, Engine, EngineOptions, FamilyOptions, RegionError, RegionLimits, Scan, TableState,
};

const DIR: &str = "/store";

fn options() -> EngineOptions {
    EngineOptions {
        // No background flush may add writes to an operation's count.
        flush_check_interval: Duration::from_secs(3600),
        // Every disable takes the pre-flush path too.
        limits: RegionLimits {
            preclose_flush_size: 0,
            ..RegionLimits::default()
        },
        block_cache_bytes: 0,
        ..EngineOptions::default()
    }
}

fn open(fs: Arc<dyn FileSystem>) -> Engine {
    Engine::open_on(fs, Path::new(DIR), options()).expect("the store opens")
}

fn put(row: &'static str, value: &'static str) -> Cell {
    Cell::put(row, "f", "q", keel_cell::LATEST_TIMESTAMP, value).expect("cell")
}

/// Every table: whether it is enabled, and its rows (a disabled table is enabled to read it,
/// which must work: no table in the catalog may be unable to open).
type Observed = BTreeMap<String, (bool, Vec<(String, String)>)>;

fn observe(server: &Engine) -> Observed {
    let mut seen = BTreeMap::new();
    for name in server.list_tables() {
        let state = server.table_state(&name).expect("state");
        let enabled = match state {
            TableState::Enabled => true,
            TableState::Disabled => {
                server.enable_table(&name).expect("a disabled table opens");
                false
            }
            TableState::FailedOpen { reason } => panic!("table {name} cannot open: {reason}"),
        };
        let rows = server
            .table(&name)
            .expect("table")
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
        seen.insert(name, (enabled, rows));
    }
    seen
}

/// Region directories in `data/` must be exactly those of the catalog's tables.
fn data_dirs(fs: &dyn FileSystem) -> usize {
    fs.list(&Path::new(DIR).join("data"))
        .expect("data dir")
        .len()
}

fn writes_and_syncs(fs: &FaultFs) -> u64 {
    let c = fs.op_counts();
    c.writes + c.syncs
}

/// Runs `op` after `setup` once cleanly, then crashed at each of its writes and syncs; checks
/// every crash image against the states before and after.
fn sweep(
    name: &str,
    setup: impl Fn(&Engine),
    op: impl Fn(&Engine) -> Result<(), RegionError>,
    after_reopen: impl Fn(&Engine, &Observed),
) {
    let clean = Arc::new(FaultFs::new());
    let server = open(clean.clone());
    setup(&server);
    let counted_from = writes_and_syncs(&clean);
    let before_image = Arc::new(clean.crash_image());
    op(&server).expect("the operation succeeds when nothing fails");
    let steps = writes_and_syncs(&clean) - counted_from;
    let after_image = Arc::new(clean.crash_image());
    drop(server);
    assert!(steps > 0, "{name}: the operation wrote nothing");
    let before = observe(&open(before_image));
    let after = observe(&open(after_image));
    assert_ne!(before, after, "{name}: the operation changed nothing");
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
        // (`observe` enabled every table, so each lists its regions.)
        let regions: usize = reopened
            .list_tables()
            .iter()
            .map(|t| reopened.table(t).expect("table").regions().len())
            .sum();
        assert_eq!(
            data_dirs(&*image),
            regions,
            "{name}, crash at step {n}: directories the catalog does not name are left"
        );
        if state == before {
            saw_before = true;
            assert!(
                result.is_err() || n > steps,
                "{name}: step {n} acknowledged, then undone"
            );
        } else if state == after {
            saw_after = true;
        } else {
            panic!(
                "{name}, crash at step {n} of {steps}: neither before nor after:\n{state:?}\nbefore {before:?}\nafter {after:?}"
            );
        }
        after_reopen(&reopened, &state);
    }
    assert!(
        saw_before && saw_after,
        "{name}: the sweep saw both outcomes"
    );
}

fn table_with_rows(server: &Engine, name: &str) {
    let t = server
        .create_table(name, vec![FamilyOptions::new("f")])
        .expect("create");
    t.mutate(vec![put("r1", "flushed")], Durability::FsyncWal)
        .expect("write");
    t.flush().expect("flush");
    t.mutate(vec![put("r2", "logged")], Durability::FsyncWal)
        .expect("write");
}

#[test]
fn create_is_crash_atomic() {
    sweep(
        "create",
        |s| table_with_rows(s, "other"),
        |s| {
            s.create_table("t", vec![FamilyOptions::new("f")])
                .map(|_| ())
        },
        |_, _| {},
    );
}

#[test]
fn creating_a_pre_split_table_is_crash_atomic() {
    sweep(
        "create pre-split",
        |s| table_with_rows(s, "other"),
        |s| {
            s.create_table_with(
                "t",
                vec![FamilyOptions::new("f")],
                keel_region::TableOptions {
                    split_keys: vec!["g".into(), "n".into(), "t".into()],
                    ..keel_region::TableOptions::default()
                },
            )
            .map(|_| ())
        },
        |reopened, state| {
            if state.contains_key("t") {
                assert_eq!(reopened.table("t").expect("t").regions().len(), 4);
            }
        },
    );
}

/// A table of three regions with rows flushed and logged in each.
fn split_table_with_rows(server: &Engine, name: &str) {
    let t = server
        .create_table_with(
            name,
            vec![FamilyOptions::new("f")],
            keel_region::TableOptions {
                split_keys: vec!["m".into(), "t".into()],
                ..keel_region::TableOptions::default()
            },
        )
        .expect("create");
    t.mutate(
        vec![
            put("a", "flushed"),
            put("p", "flushed"),
            put("x", "flushed"),
        ],
        Durability::FsyncWal,
    )
    .expect("write");
    t.flush().expect("flush");
    t.mutate(
        vec![put("b", "logged"), put("q", "logged"), put("y", "logged")],
        Durability::FsyncWal,
    )
    .expect("write");
}

#[test]
fn disabling_and_enabling_a_table_of_regions_is_crash_atomic() {
    sweep(
        "disable regions",
        |s| split_table_with_rows(s, "t"),
        |s| s.disable_table("t"),
        |_, _| {},
    );
    sweep(
        "enable regions",
        |s| {
            split_table_with_rows(s, "t");
            s.disable_table("t").expect("disable");
        },
        |s| s.enable_table("t"),
        |_, _| {},
    );
}

#[test]
fn disable_is_crash_atomic() {
    sweep(
        "disable",
        |s| {
            table_with_rows(s, "t");
            table_with_rows(s, "other");
        },
        |s| s.disable_table("t"),
        |_, _| {},
    );
}

#[test]
fn enable_is_crash_atomic() {
    sweep(
        "enable",
        |s| {
            table_with_rows(s, "t");
            s.disable_table("t").expect("disable");
        },
        |s| s.enable_table("t"),
        |_, _| {},
    );
}

#[test]
fn delete_is_crash_atomic_and_deleted_rows_never_return() {
    sweep(
        "delete",
        |s| {
            table_with_rows(s, "t");
            table_with_rows(s, "other");
            s.disable_table("t").expect("disable");
        },
        |s| s.delete_table("t"),
        |reopened, state| {
            if !state.contains_key("t") {
                let t = reopened
                    .create_table("t", vec![FamilyOptions::new("f")])
                    .expect("create again");
                let rows = t.scan(&Scan::all(i64::MAX / 2)).expect("scan");
                assert!(rows.is_empty(), "deleted rows came back: {rows:?}");
            }
        },
    );
}
