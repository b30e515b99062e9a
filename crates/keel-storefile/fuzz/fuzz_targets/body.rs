// The fuzz body (included by the fuzz target and by `tests/fuzz_body.rs`): writes `data` to a
// file, opens it, scans it, gets and seeks. Errors are fine; panics are the bug.

/// Opens `data` as a store file and reads it every way; never panics on any input.
pub fn exercise(data: &[u8]) {
    use std::sync::Arc;
    let Ok(dir) = tempfile::tempdir() else { return };
    let path = dir.path().join("fuzzed.ksf");
    if std::fs::write(&path, data).is_err() {
        return;
    }
    let fs = keel_fs::StdFs;
    let Ok(reader) =
        keel_storefile::StoreFileReader::open(&fs, &path, 1, Arc::new(keel_storefile::DirectSource))
    else {
        return;
    };
    let mut scanner = reader.scanner();
    for _ in 0..100_000 {
        if !matches!(scanner.next(), Ok(Some(_))) {
            break;
        }
    }
    for row in [&b""[..], b"a", b"row", b"\xff\xff"] {
        let _ = reader.get(row);
    }
    let mut s = reader.scanner();
    let _ = s.seek(&keel_cell::CellKey::first_on_row(bytes::Bytes::from_static(b"m")));
    let _ = s.reseek(&keel_cell::CellKey::last_on_row(bytes::Bytes::from_static(b"z")));
    let _ = s.peek();
}
