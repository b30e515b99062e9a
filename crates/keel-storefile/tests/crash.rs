//! Crash safety on keel-fs's `FaultFs`: the Nth write or sync fails (or a write is torn) at
//! every point of writing a file, then the machine "crashes" (`crash_image`: only durable names
//! and bytes survive). A store file is either absent under its real name or complete and equal
//! to what was written; after a successful `finish` it is always there.

use std::path::Path;
use std::sync::Arc;

use keel_cell::Cell;
use keel_fs::{Fault, FaultFs, FileSystem};
use keel_storefile::{DirectSource, StoreFileReader, StoreFileWriter, WriterOptions};

fn cells() -> Vec<Cell> {
    (0..60_000u32)
        .map(|r| Cell::put(format!("row{r:05}"), "f", "q", 1, format!("value {r}")).expect("cell"))
        .collect()
}

fn attempt(fs: &Arc<FaultFs>, path: &Path, cells: &[Cell]) -> bool {
    let options = WriterOptions {
        block_size: 1024,
        ..WriterOptions::default()
    };
    let Ok(mut w) = StoreFileWriter::create(Arc::clone(fs) as Arc<dyn FileSystem>, path, options)
    else {
        return false;
    };
    for c in cells {
        if w.append(c).is_err() {
            return false;
        }
    }
    w.finish().is_ok()
}

fn check_image(fs: &FaultFs, path: &Path, cells: &[Cell], finished: bool) {
    let image = fs.crash_image();
    if !image.exists(path).expect("exists") {
        assert!(!finished, "a finished file was lost in the crash");
        return;
    }
    let reader = StoreFileReader::open(&image, path, 1, Arc::new(DirectSource))
        .expect("a file under its real name is complete");
    let mut s = reader.scanner();
    for c in cells {
        assert_eq!(s.next().expect("scan").as_ref(), Some(c));
    }
    assert_eq!(s.next().expect("scan"), None);
}

#[test]
fn a_crash_at_any_write_or_sync_leaves_no_partial_file_under_the_real_name() {
    let cells = cells();
    let dir = Path::new("/data/store");
    let path = dir.join("file1");
    // How many writes and syncs a clean run makes.
    let clean = Arc::new(FaultFs::new());
    clean.create_dir_durable(dir).expect("mkdir");
    let before = clean.op_counts();
    assert!(attempt(&clean, &path, &cells));
    check_image(&clean, &path, &cells, true);
    let counts = clean.op_counts();
    let (writes, syncs) = (counts.writes - before.writes, counts.syncs - before.syncs);
    assert!(writes >= 3 && syncs >= 1, "{counts:?}");
    let mut faults = Vec::new();
    for n in 1..=writes {
        faults.push(Fault::fail_write(n));
        faults.push(Fault::short_write(n));
        faults.push(Fault::no_space(n));
    }
    for n in 1..=syncs {
        faults.push(Fault::fail_sync(n));
    }
    for fault in faults {
        let fs = Arc::new(FaultFs::new());
        fs.create_dir_durable(dir).expect("mkdir");
        fs.inject(fault.clone());
        let finished = attempt(&fs, &path, &cells);
        check_image(&fs, &path, &cells, finished);
        assert!(
            !finished || fault.kind() == keel_fs::FaultKind::ShortWrite,
            "{fault:?} did not fail the write"
        );
    }
}
