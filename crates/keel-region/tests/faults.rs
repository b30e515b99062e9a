//! I/O faults under a mixed load (keel-fs `FaultFs`): writes of two-cell rows at `FsyncWal`
//! with flushes between, and one injected fault — a failed, torn or out-of-space write, or a
//! failed sync — on the WAL, on the store files and manifest, or anywhere, at a random point.
//! The fault's error reaches the caller; then the machine "crashes" (`crash_image`: only synced
//! bytes and names survive) and the region reopens on the image: every acknowledged write is
//! there, and no write is half there.

use std::path::Path;
use std::sync::Arc;

use keel_cell::Cell;
use keel_fs::{Fault, FaultFs, FileSystem};
use keel_region::matcher::ReadQuery;
use keel_region::{Durability, FamilyOptions, Region};
use keel_wal::{Wal, WalOptions};
use rand::Rng;

fn open(fs: Arc<dyn FileSystem>) -> (Arc<Wal>, Region) {
    let wal = Arc::new(
        Wal::open(Arc::clone(&fs), Path::new("/wal"), WalOptions::default()).expect("WAL opens"),
    );
    let region = Region::open(
        fs,
        Path::new("/region"),
        Arc::clone(&wal),
        1,
        vec![FamilyOptions::new("f")],
    )
    .expect("region opens");
    (wal, region)
}

fn row(n: u32) -> Vec<Cell> {
    ["a", "b"]
        .into_iter()
        .map(|q| Cell::put(format!("row{n:04}"), "f", q, 1, format!("{n}/{q}")).expect("cell"))
        .collect()
}

#[test]
fn a_fault_anywhere_reaches_the_caller_and_loses_no_acknowledged_write() {
    let mut rng = keel_testkit::rng();
    let rounds = if cfg!(debug_assertions) { 40 } else { 200 };
    let mut faults_hit = 0;
    for round in 0..rounds {
        let faults = Arc::new(FaultFs::new());
        let (wal, region) = open(faults.clone());
        let nth = rng.random_range(1..40);
        let fault = match rng.random_range(0..4) {
            0 => Fault::fail_write(nth),
            1 => Fault::short_write(nth),
            2 => Fault::no_space(nth),
            _ => Fault::fail_sync(nth),
        };
        let fault = match rng.random_range(0..3) {
            0 => fault.on_path("wal"),
            1 => fault.on_path("region"),
            _ => fault,
        };
        faults.inject(fault.clone());
        let mut acked = Vec::new();
        let mut failed = false;
        for n in 0..60u32 {
            let outcome = if n % 7 == 6 {
                region.flush().map(|_| ())
            } else {
                region
                    .mutate(row(n), Durability::FsyncWal)
                    .map(|_| acked.push(n))
            };
            if outcome.is_err() {
                failed = true;
                break;
            }
        }
        faults_hit += usize::from(failed);
        let image: Arc<dyn FileSystem> = Arc::new(faults.crash_image());
        drop(region);
        drop(wal);
        let (wal, region) = open(image);
        let query = ReadQuery::latest(0, 0);
        for n in 0..60u32 {
            let got = region.get(row(n)[0].row(), &query).expect("get");
            if acked.contains(&n) {
                assert_eq!(
                    got.len(),
                    2,
                    "round {round} ({fault:?}): acknowledged row {n} lost"
                );
            } else {
                assert!(
                    got.is_empty() || got.len() == 2,
                    "round {round}: row {n} half there"
                );
            }
        }
        drop(region);
        Arc::try_unwrap(wal)
            .expect("sole owner")
            .close()
            .expect("close");
    }
    assert!(
        faults_hit > rounds / 2,
        "only {faults_hit} of {rounds} rounds hit their fault"
    );
}
