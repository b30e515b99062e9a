//! FaultFs: every fault kind, the durability model behind crash images, and capacity.

use std::io::ErrorKind;
use std::path::Path;

use super::*;

fn setup() -> (FaultFs, FileRef) {
    let fs = FaultFs::new();
    fs.create_dir_durable(Path::new("/db")).unwrap();
    let file = fs.create(Path::new("/db/a.log")).unwrap();
    fs.sync_dir(Path::new("/db")).unwrap();
    (fs, file)
}

fn read_all(fs: &FaultFs, path: &str) -> Vec<u8> {
    let file = fs.open(Path::new(path)).unwrap();
    let mut buf = vec![0; file.len().unwrap() as usize];
    file.read_exact_at(&mut buf, 0).unwrap();
    buf
}

#[test]
fn crash_image_drops_bytes_written_since_the_last_sync() {
    let (fs, file) = setup();
    file.append(b"durable").unwrap();
    file.sync_data().unwrap();
    file.append(b"-lost").unwrap();
    assert_eq!(read_all(&fs, "/db/a.log"), b"durable-lost");
    let image = fs.crash_image();
    assert_eq!(read_all(&image, "/db/a.log"), b"durable");
    // The image is independent: writing to it leaves the original alone.
    image
        .open(Path::new("/db/a.log"))
        .unwrap()
        .append(b"!")
        .unwrap();
    assert_eq!(read_all(&fs, "/db/a.log"), b"durable-lost");
}

#[test]
fn overwrites_and_truncation_below_the_synced_length_are_undone_by_a_crash() {
    let (fs, file) = setup();
    file.append(b"0123456789").unwrap();
    file.sync_all().unwrap();
    file.write_at(b"XX", 2).unwrap();
    file.truncate(5).unwrap();
    assert_eq!(read_all(&fs, "/db/a.log"), b"01XX4");
    assert_eq!(read_all(&fs.crash_image(), "/db/a.log"), b"0123456789");
    file.sync_data().unwrap();
    assert_eq!(read_all(&fs.crash_image(), "/db/a.log"), b"01XX4");
}

#[test]
fn names_are_durable_only_after_sync_dir() {
    let (fs, file) = setup();
    file.append(b"data").unwrap();
    file.sync_data().unwrap();
    let tmp = fs.create(Path::new("/db/b.tmp")).unwrap();
    tmp.append(b"new").unwrap();
    tmp.sync_data().unwrap();
    fs.rename(Path::new("/db/b.tmp"), Path::new("/db/b.sst"))
        .unwrap();
    fs.remove(Path::new("/db/a.log")).unwrap();

    let before = fs.crash_image();
    assert!(
        before.exists(Path::new("/db/a.log")).unwrap(),
        "remove not yet durable"
    );
    assert!(
        !before.exists(Path::new("/db/b.sst")).unwrap(),
        "rename not yet durable"
    );
    assert!(
        !before.exists(Path::new("/db/b.tmp")).unwrap(),
        "create never made durable"
    );

    fs.sync_dir(Path::new("/db")).unwrap();
    let after = fs.crash_image();
    assert!(!after.exists(Path::new("/db/a.log")).unwrap());
    assert_eq!(read_all(&after, "/db/b.sst"), b"new");
    assert_eq!(
        after.list(Path::new("/db")).unwrap(),
        vec![Path::new("/db/b.sst")]
    );
}

#[test]
fn fail_write_fails_the_nth_write_only_and_stores_nothing() {
    let (fs, file) = setup();
    fs.inject(Fault::fail_write(2));
    file.append(b"one").unwrap();
    let err = file.append(b"two").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Other);
    assert!(
        err.to_string()
            .contains("injected fault: write failure on /db/a.log"),
        "{err}"
    );
    file.append(b"three").unwrap();
    assert_eq!(read_all(&fs, "/db/a.log"), b"onethree");
    assert_eq!(fs.op_counts().writes, 3);
    assert_eq!(fs.op_counts().bytes_written, 8);
}

#[test]
fn short_write_stores_half_and_fails() {
    let (fs, file) = setup();
    fs.inject(Fault::short_write(1));
    let err = file.append(b"abcdefgh").unwrap_err();
    assert!(err.to_string().contains("4 of 8 bytes stored"), "{err}");
    assert_eq!(read_all(&fs, "/db/a.log"), b"abcd");
    assert_eq!(
        file.append(b"!").unwrap(),
        4,
        "the next append lands after the torn bytes"
    );
}

#[test]
fn no_space_fault_reports_storage_full() {
    let (fs, file) = setup();
    fs.inject(Fault::no_space(1));
    let err = file.write_at(b"abc", 0).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::StorageFull);
    assert!(file.is_empty().unwrap());
}

#[test]
fn capacity_stores_what_fits_then_reports_storage_full() {
    let (fs, file) = setup();
    fs.set_capacity(Some(10));
    file.append(b"12345678").unwrap();
    let err = file.append(b"abcd").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::StorageFull);
    assert_eq!(read_all(&fs, "/db/a.log"), b"12345678ab");
    // Overwriting in place needs no new space.
    file.write_at(b"XY", 0).unwrap();
    // Space freed by removing a file can be used again.
    fs.remove(Path::new("/db/a.log")).unwrap();
    let other = fs.create(Path::new("/db/c.log")).unwrap();
    other.append(b"0123456789").unwrap();
    fs.set_capacity(None);
    other.append(&[0; 100]).unwrap();
}

#[test]
fn failed_sync_makes_nothing_durable() {
    let (fs, file) = setup();
    fs.inject(Fault::fail_sync(1));
    file.append(b"maybe").unwrap();
    let err = file.sync_data().unwrap_err();
    assert!(err.to_string().contains("sync failure"), "{err}");
    assert!(read_all(&fs.crash_image(), "/db/a.log").is_empty());
    file.sync_data().unwrap();
    assert_eq!(read_all(&fs.crash_image(), "/db/a.log"), b"maybe");
}

#[test]
fn failed_sync_dir_keeps_old_names() {
    let (fs, _file) = setup();
    fs.create(Path::new("/db/new")).unwrap();
    fs.inject(Fault::fail_sync(1).on_path("/db"));
    assert!(fs.sync_dir(Path::new("/db")).is_err());
    assert!(!fs.crash_image().exists(Path::new("/db/new")).unwrap());
}

#[test]
fn fail_read_fails_the_nth_read() {
    let (fs, file) = setup();
    file.append(b"abc").unwrap();
    fs.inject(Fault::fail_read(2));
    let mut buf = [0u8; 3];
    file.read_exact_at(&mut buf, 0).unwrap();
    let err = file.read_at(&mut buf, 0).unwrap_err();
    assert!(err.to_string().contains("read failure"), "{err}");
    file.read_exact_at(&mut buf, 0).unwrap();
    assert_eq!(fs.op_counts().reads, 3);
}

#[test]
fn sticky_faults_keep_failing_and_path_filters_select_files() {
    let (fs, file) = setup();
    let other = fs.create(Path::new("/db/other.sst")).unwrap();
    fs.inject(Fault::fail_sync(2).on_path(".log").sticky());
    file.sync_data().unwrap();
    other.sync_data().unwrap();
    other.sync_data().unwrap();
    assert!(file.sync_data().is_err());
    assert!(file.sync_all().is_err());
    other.sync_data().unwrap();
    fs.clear_faults();
    file.sync_data().unwrap();
    assert_eq!(Fault::fail_sync(0).kind(), FaultKind::FailSync);
}

#[test]
fn zero_nth_means_first() {
    let (fs, file) = setup();
    fs.inject(Fault::fail_write(0));
    assert!(file.append(b"x").is_err());
    file.append(b"y").unwrap();
}

#[test]
fn contents_shows_live_bytes() {
    let (fs, file) = setup();
    file.append(b"hi").unwrap();
    assert_eq!(fs.contents(Path::new("/db/a.log")).unwrap(), b"hi");
    assert!(fs.contents(Path::new("/db/none")).is_none());
}

#[test]
fn create_dir_all_over_a_file_fails() {
    let (fs, _file) = setup();
    let err = fs.create_dir_all(Path::new("/db/a.log/sub")).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::AlreadyExists);
}

#[test]
fn clones_share_files() {
    let (fs, file) = setup();
    let twin = fs.clone();
    file.append(b"shared").unwrap();
    assert_eq!(read_all(&twin, "/db/a.log"), b"shared");
}

#[test]
fn a_directory_is_durable_only_after_its_parent_is_synced() {
    let fs = FaultFs::new();
    fs.create_dir_all(Path::new("/d/e")).unwrap();
    let file = fs.create(Path::new("/d/e/f")).unwrap();
    file.append(b"x").unwrap();
    file.sync_data().unwrap();
    fs.sync_dir(Path::new("/d/e")).unwrap();
    // The file's name is durable in /d/e, but /d and /d/e themselves are not: all of it goes.
    let image = fs.crash_image();
    assert!(!image.exists(Path::new("/d")).unwrap());
    assert!(!image.exists(Path::new("/d/e/f")).unwrap());
    // /d is durable in / now, /d/e not yet in /d.
    fs.sync_dir(Path::new("/")).unwrap();
    let image = fs.crash_image();
    assert!(image.exists(Path::new("/d")).unwrap());
    assert!(!image.exists(Path::new("/d/e")).unwrap());
    assert!(!image.exists(Path::new("/d/e/f")).unwrap());
    fs.sync_dir(Path::new("/d")).unwrap();
    assert_eq!(read_all(&fs.crash_image(), "/d/e/f"), b"x");
}

#[test]
fn create_dir_durable_syncs_every_new_level_and_relative_roots() {
    let fs = FaultFs::new();
    fs.create_dir_durable(Path::new("/a/b/c")).unwrap();
    let syncs = fs.op_counts().syncs;
    assert_eq!(syncs, 3, "/, /a and /a/b");
    assert!(fs.crash_image().exists(Path::new("/a/b/c")).unwrap());
    // Existing: only the leaf's parent again.
    fs.create_dir_durable(Path::new("/a/b/c")).unwrap();
    assert_eq!(fs.op_counts().syncs, syncs + 1);
    fs.create_dir_durable(Path::new("rel/x")).unwrap();
    assert!(fs.crash_image().exists(Path::new("rel/x")).unwrap());
}

#[test]
fn remove_dir_needs_an_empty_directory_and_a_parent_sync() {
    let fs = FaultFs::new();
    fs.create_dir_durable(Path::new("/d/e")).unwrap();
    fs.create(Path::new("/d/e/f")).unwrap();
    assert_eq!(
        fs.remove_dir(Path::new("/d/e")).unwrap_err().kind(),
        ErrorKind::DirectoryNotEmpty
    );
    assert_eq!(
        fs.remove_dir(Path::new("/d/none")).unwrap_err().kind(),
        ErrorKind::NotFound
    );
    fs.remove(Path::new("/d/e/f")).unwrap();
    fs.remove_dir(Path::new("/d/e")).unwrap();
    assert!(!fs.exists(Path::new("/d/e")).unwrap());
    assert!(
        fs.crash_image().exists(Path::new("/d/e")).unwrap(),
        "not yet durable"
    );
    fs.sync_dir(Path::new("/d")).unwrap();
    assert!(!fs.crash_image().exists(Path::new("/d/e")).unwrap());
}

#[test]
fn crash_at_stops_every_later_write_and_sync() {
    let (fs, file) = setup();
    file.append(b"kept").unwrap();
    file.sync_data().unwrap();
    fs.inject(Fault::crash_at(2));
    file.append(b"+1").unwrap();
    assert!(
        file.sync_data().is_err(),
        "the second write-or-sync is the crash"
    );
    assert!(file.append(b"+2").is_err());
    assert!(fs.sync_dir(Path::new("/db")).is_err());
    let mut buf = [0u8; 4];
    file.read_exact_at(&mut buf, 0).unwrap();
    assert_eq!(read_all(&fs.crash_image(), "/db/a.log"), b"kept");
}
