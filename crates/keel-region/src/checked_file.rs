//! Small text files replaced atomically and checked on load (the region manifest and the
//! server catalog): written to `<name>.tmp`, synced, renamed, directory synced; the last line is
//! `crc <crc32 hex>` of everything before it, and the first line names the format.

use std::path::Path;

use keel_fs::FileSystem;

use crate::error::{RegionError, io};

/// The lines after `header` of `dir/name`, or `None` if there is no such file. A missing or
/// wrong checksum, another header, or non-UTF-8 bytes are `CorruptManifest` errors.
pub(crate) fn load(
    fs: &dyn FileSystem,
    dir: &Path,
    name: &str,
    header: &str,
) -> Result<Option<Vec<String>>, RegionError> {
    let path = dir.join(name);
    if !fs.exists(&path).map_err(|e| io("stat", &path, e))? {
        return Ok(None);
    }
    let file = fs.open(&path).map_err(|e| io("open", &path, e))?;
    let len = file.len().map_err(|e| io("stat", &path, e))?;
    let mut bytes = vec![0u8; usize::try_from(len).unwrap_or(usize::MAX).min(64 << 20)];
    file.read_exact_at(&mut bytes, 0)
        .map_err(|e| io("read", &path, e))?;
    let corrupt = |what: &str| corrupt(&path, what);
    let text = std::str::from_utf8(&bytes).map_err(|_| corrupt("not UTF-8"))?;
    let body_end = text
        .rfind("crc ")
        .ok_or_else(|| corrupt("no checksum line"))?;
    let stored = u32::from_str_radix(text[body_end + 4..].trim(), 16)
        .map_err(|_| corrupt("bad checksum"))?;
    if stored != crc32fast::hash(&bytes[..body_end]) {
        return Err(corrupt("checksum mismatch"));
    }
    let mut lines = text[..body_end].lines();
    if lines.next() != Some(header) {
        return Err(corrupt("unknown header"));
    }
    Ok(Some(lines.map(str::to_string).collect()))
}

/// Replaces `dir/name` with `header`, `body` (lines ending in `\n`) and the checksum line.
pub(crate) fn store(
    fs: &dyn FileSystem,
    dir: &Path,
    name: &str,
    header: &str,
    body: &str,
) -> Result<(), RegionError> {
    let mut text = format!("{header}\n{body}");
    let crc = crc32fast::hash(text.as_bytes());
    text.push_str(&format!("crc {crc:08x}\n"));
    let path = dir.join(name);
    let tmp = dir.join(format!("{name}.tmp"));
    let file = fs.create(&tmp).map_err(|e| io("create", &tmp, e))?;
    file.append(text.as_bytes())
        .map_err(|e| io("write", &tmp, e))?;
    file.sync_data().map_err(|e| io("sync", &tmp, e))?;
    fs.rename(&tmp, &path).map_err(|e| io("rename", &tmp, e))?;
    fs.sync_dir(dir).map_err(|e| io("sync_dir", dir, e))?;
    Ok(())
}

/// The error for a damaged line or file.
pub(crate) fn corrupt(path: &Path, what: &str) -> RegionError {
    RegionError::CorruptManifest {
        path: path.to_path_buf(),
        what: what.to_string(),
    }
}
