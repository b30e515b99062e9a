//! Small text files replaced atomically and checked on load (the region manifest and the
//! server catalog): written to `<name>.tmp`, synced, renamed, directory synced; the last line is
//! `crc <crc32 hex>` of everything before it, and the first line names the format.

use std::path::Path;

use keel_fs::FileSystem;

use crate::error::{RegionError, io};

/// The largest checked file: read back with at most this many bytes, so never written larger
/// (a change that would pass it is refused when it is made, not discovered at the next open).
pub(crate) const MAX_BYTES: usize = 64 << 20;

/// The lines after `header` of `dir/name`, or `None` if there is no such file. A first line
/// in `older` is an `UnsupportedFormat` error naming it; a missing or wrong checksum, another
/// header, a file above [`MAX_BYTES`] or non-UTF-8 bytes are `CorruptManifest` errors.
pub(crate) fn load(
    fs: &dyn FileSystem,
    dir: &Path,
    name: &str,
    header: &'static str,
    older: &[&str],
) -> Result<Option<Vec<String>>, RegionError> {
    let path = dir.join(name);
    if !fs.exists(&path).map_err(|e| io("stat", &path, e))? {
        return Ok(None);
    }
    let file = fs.open(&path).map_err(|e| io("open", &path, e))?;
    let len = file.len().map_err(|e| io("stat", &path, e))?;
    let len = usize::try_from(len)
        .ok()
        .filter(|&l| l <= MAX_BYTES)
        .ok_or_else(|| {
            corrupt(
                &path,
                &format!("{len} bytes, above the {MAX_BYTES}-byte limit"),
            )
        })?;
    let mut bytes = vec![0u8; len];
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
    match lines.next() {
        Some(first) if first == header => {}
        Some(first) if older.contains(&first) => {
            return Err(RegionError::UnsupportedFormat {
                path,
                found: first.to_string(),
                supported: header,
            });
        }
        _ => return Err(corrupt("unknown header")),
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
    if text.len() > MAX_BYTES {
        return Err(RegionError::FileTooLarge {
            path,
            bytes: text.len(),
            max: MAX_BYTES,
        });
    }
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
