//! One behavioural suite run against both StdFs (in a temporary directory) and FaultFs, so the
//! two cannot drift apart.

use std::io::ErrorKind;
use std::path::Path;

use crate::{FaultFs, FileSystem, StdFs};

fn conformance(fs: &dyn FileSystem, root: &Path) {
    let dir = root.join("d");
    fs.create_dir_all(&dir.join("sub")).unwrap();
    fs.create_dir_all(&dir).unwrap();
    assert!(fs.exists(&dir).unwrap());

    // create, append, read back.
    let a = dir.join("a");
    let file = fs.create(&a).unwrap();
    assert_eq!(file.path(), a.as_path());
    assert_eq!(file.append(b"hello").unwrap(), 0);
    assert_eq!(file.append(b" world").unwrap(), 5);
    assert_eq!(file.len().unwrap(), 11);
    let mut buf = [0u8; 5];
    file.read_exact_at(&mut buf, 6).unwrap();
    assert_eq!(&buf, b"world");
    assert_eq!(
        file.read_at(&mut buf, 11).unwrap(),
        0,
        "read at the end reads nothing"
    );
    assert_eq!(
        file.read_at(&mut buf, 9).unwrap(),
        2,
        "short read near the end"
    );
    let err = file.read_exact_at(&mut buf, 8).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::UnexpectedEof);
    assert!(err.to_string().contains("offset 8"), "{err}");

    // read_exact_at_appending adds to what the buffer holds; a read past the end fails as
    // read_exact_at does and leaves the buffer as it was.
    let mut grown = b"> ".to_vec();
    file.read_exact_at_appending(&mut grown, 5, 6).unwrap();
    assert_eq!(grown, b"> world");
    let err = file.read_exact_at_appending(&mut grown, 5, 8).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::UnexpectedEof);
    assert!(err.to_string().contains("offset 8"), "{err}");
    assert!(err.to_string().contains("ends at offset 11"), "{err}");
    assert_eq!(grown, b"> world");
    file.read_exact_at_appending(&mut grown, 0, 11).unwrap();
    assert_eq!(grown, b"> world");
    // A length no memory can hold is refused as an error, not an abort, buffer untouched.
    for len in [usize::MAX, usize::MAX / 2] {
        let err = file
            .read_exact_at_appending(&mut grown, len, 0)
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::OutOfMemory, "{err}");
        assert!(
            err.to_string().contains(&format!("{len}-byte read")),
            "{err}"
        );
        assert_eq!(grown, b"> world");
    }

    // write_at past the end zero-fills; appends continue after it.
    file.write_at(b"!", 13).unwrap();
    assert_eq!(file.len().unwrap(), 14);
    assert_eq!(file.append(b"?").unwrap(), 14);
    let mut gap = [9u8; 2];
    file.read_exact_at(&mut gap, 11).unwrap();
    assert_eq!(gap, [0, 0]);

    // truncate, sync.
    file.truncate(5).unwrap();
    assert_eq!(file.len().unwrap(), 5);
    assert_eq!(file.append(b"!").unwrap(), 5);
    file.sync_data().unwrap();
    file.sync_all().unwrap();
    fs.sync_dir(&dir).unwrap();

    // A second handle sees the same bytes; create on an existing file truncates it.
    let again = fs.open(&a).unwrap();
    assert_eq!(again.len().unwrap(), 6);
    assert!(!again.is_empty().unwrap());
    let recreated = fs.create(&a).unwrap();
    assert!(recreated.is_empty().unwrap());

    // create_new refuses an existing name; open refuses a missing one.
    assert_eq!(
        fs.create_new(&a).unwrap_err().kind(),
        ErrorKind::AlreadyExists
    );
    let missing = fs.open(&dir.join("missing")).unwrap_err();
    assert_eq!(missing.kind(), ErrorKind::NotFound);
    assert!(
        missing.to_string().contains("missing"),
        "errors name the path: {missing}"
    );
    let orphan = fs.create(&root.join("no-such-dir").join("f")).unwrap_err();
    assert_eq!(orphan.kind(), ErrorKind::NotFound);

    // rename replaces, remove removes, list is sorted and includes directories.
    let b = dir.join("b");
    fs.create_new(&b).unwrap().append(b"bee").unwrap();
    fs.rename(&b, &a).unwrap();
    assert_eq!(fs.open(&a).unwrap().len().unwrap(), 3);
    assert!(!fs.exists(&b).unwrap());
    assert_eq!(fs.rename(&b, &a).unwrap_err().kind(), ErrorKind::NotFound);
    fs.create(&dir.join("c")).unwrap();
    assert_eq!(
        fs.list(&dir).unwrap(),
        vec![a.clone(), dir.join("c"), dir.join("sub")]
    );
    fs.remove(&dir.join("c")).unwrap();
    assert_eq!(
        fs.remove(&dir.join("c")).unwrap_err().kind(),
        ErrorKind::NotFound
    );
    assert_eq!(fs.list(&dir).unwrap(), vec![a, dir.join("sub")]);
    assert_eq!(
        fs.list(&root.join("nope")).unwrap_err().kind(),
        ErrorKind::NotFound
    );

    // remove_dir takes only empty directories; create_dir_durable makes missing levels.
    assert!(fs.remove_dir(&dir).is_err(), "not empty");
    fs.remove_dir(&dir.join("sub")).unwrap();
    assert!(!fs.exists(&dir.join("sub")).unwrap());
    assert_eq!(
        fs.remove_dir(&dir.join("sub")).unwrap_err().kind(),
        ErrorKind::NotFound
    );
    fs.create_dir_durable(&dir.join("x/y")).unwrap();
    assert!(fs.exists(&dir.join("x/y")).unwrap());
    fs.create_dir_durable(&dir.join("x/y")).unwrap();
}

#[test]
fn std_fs_conforms() {
    let tmp = tempfile::tempdir().unwrap();
    conformance(&StdFs, tmp.path());
}

#[test]
fn fault_fs_conforms() {
    let fs = FaultFs::new();
    fs.create_dir_all(Path::new("/root")).unwrap();
    conformance(&fs, Path::new("/root"));
}

/// Reads of random ranges of a random file, into buffers whose spare capacity holds stale bytes,
/// agree with the file's bytes for both ways of reading and both file systems.
#[test]
fn appending_reads_return_the_file_bytes() {
    use rand::{Rng, SeedableRng, rngs::StdRng};
    let tmp = tempfile::tempdir().unwrap();
    let fault = FaultFs::new();
    let systems: [(&dyn FileSystem, &Path); 2] = [(&StdFs, tmp.path()), (&fault, Path::new(""))];
    let mut rng = StdRng::seed_from_u64(keel_testkit::seed());
    // Smaller under Miri, which interprets every byte.
    let (size, reads) = if cfg!(miri) {
        (20_000, 10)
    } else {
        (300_000, 200)
    };
    let content: Vec<u8> = (0..size).map(|_| rng.random()).collect();
    for (fs, root) in systems {
        let file = fs.create(&root.join("data")).unwrap();
        file.append(&content).unwrap();
        let mut buf = Vec::new();
        for _ in 0..reads {
            let offset = rng.random_range(0..content.len());
            let len = rng.random_range(0..=(content.len() - offset).min(70_000));
            // Stale bytes in the capacity the read will fill, and a prefix it must keep.
            buf.clear();
            buf.resize(len + 64, 0xA5);
            buf.truncate(7);
            file.read_exact_at_appending(&mut buf, len, offset as u64)
                .unwrap();
            assert_eq!(&buf[..7], &[0xA5; 7]);
            assert_eq!(&buf[7..], &content[offset..offset + len]);
        }
        let before = buf.clone();
        let past = file
            .read_exact_at_appending(&mut buf, 10, content.len() as u64 - 5)
            .unwrap_err();
        assert_eq!(past.kind(), ErrorKind::UnexpectedEof);
        assert_eq!(buf, before, "a failed read leaves the buffer as it was");
    }
}

#[test]
fn concurrent_appends_never_overlap() {
    use std::sync::Arc;
    let tmp = tempfile::tempdir().unwrap();
    let fault = FaultFs::new();
    let systems: [(&dyn FileSystem, &Path); 2] = [(&StdFs, tmp.path()), (&fault, Path::new(""))];
    for (fs, root) in systems {
        let file = fs.create(&root.join("log")).unwrap();
        let threads: Vec<_> = (0..4u8)
            .map(|t| {
                let file = Arc::clone(&file);
                std::thread::spawn(move || {
                    for _ in 0..200 {
                        file.append(&[t; 16]).unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let mut all = vec![0u8; 4 * 200 * 16];
        file.read_exact_at(&mut all, 0).unwrap();
        for record in all.chunks(16) {
            assert!(
                record.iter().all(|b| *b == record[0]),
                "a record was interleaved"
            );
        }
    }
}
