//! The region manifest: which store files are committed, per family, and the highest sequence
//! id they hold. Replaced atomically (temporary file, sync, rename, directory sync), so a crash
//! leaves either the old list or the new one; store files not listed are leftovers of a flush
//! that never committed and are ignored.
//!
//! Text, one item per line: `keel-region-manifest 2`, `flushed <seq>`, `next <file number>`,
//! `major <unix ms>` (when the last major compaction finished), `file <family hex> <file name>`
//! per file of its own, `ref <family hex> <parent region id> <file name> <start hex or ->
//! <end hex or ->` per file of a parent region it reads the rows `[start, end)` of (what a
//! split or a merge leaves until a compaction rewrites them), then `crc <crc32 hex>` of
//! everything before it. Version 1 (no references) is refused at open, naming it.

use std::path::{Path, PathBuf};

use bytes::Bytes;
use keel_fs::FileSystem;

use crate::checked_file;
use crate::error::RegionError;

const HEADER: &str = "keel-region-manifest 2";
const OLDER: &[&str] = &["keel-region-manifest 1"];

/// A reference to a parent region's store file: the rows `[start, end)` of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FileRef {
    pub(crate) family: Bytes,
    pub(crate) parent: u64,
    pub(crate) name: String,
    pub(crate) start: Bytes,
    pub(crate) end: Bytes,
}

impl FileRef {
    /// The referred file's path, given the referring region's directory (its parent is a
    /// sibling in `data/`).
    pub(crate) fn path(&self, region_dir: &Path) -> PathBuf {
        let data = region_dir.parent().unwrap_or(region_dir);
        data.join(region_dir_name(self.parent))
            .join(hex(&self.family))
            .join(&self.name)
    }
}

/// `data/<this>`: a region's directory name, its id in 20 digits.
pub(crate) fn region_dir_name(id: u64) -> String {
    format!("{id:020}")
}

/// The committed state of a region's store files.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Manifest {
    /// Every edit at or below this sequence id is in a listed store file.
    pub(crate) flushed: u64,
    /// The next store-file number to use.
    pub(crate) next_file: u64,
    /// When the last major compaction finished (unix ms), 0 if never recorded.
    pub(crate) last_major_ms: i64,
    /// (family, file name) of every committed store file, oldest first.
    pub(crate) files: Vec<(Bytes, String)>,
    /// Parent regions' files this region reads part of (older than its own files).
    pub(crate) refs: Vec<FileRef>,
}

pub(crate) fn path(dir: &Path) -> PathBuf {
    dir.join("MANIFEST")
}

impl Manifest {
    pub(crate) fn load(fs: &dyn FileSystem, dir: &Path) -> Result<Manifest, RegionError> {
        let Some(lines) = checked_file::load(fs, dir, "MANIFEST", HEADER, OLDER)? else {
            return Ok(Manifest::default());
        };
        let path = path(dir);
        let corrupt = |line: &str| checked_file::corrupt(&path, line);
        let mut manifest = Manifest::default();
        for line in &lines {
            let parts: Vec<&str> = line.split(' ').collect();
            match parts.as_slice() {
                ["flushed", n] => manifest.flushed = n.parse().map_err(|_| corrupt(line))?,
                ["next", n] => manifest.next_file = n.parse().map_err(|_| corrupt(line))?,
                ["major", n] => manifest.last_major_ms = n.parse().map_err(|_| corrupt(line))?,
                ["file", family, name] => {
                    let family = unhex(family).ok_or_else(|| corrupt(line))?;
                    check_file_name(name).ok_or_else(|| corrupt(line))?;
                    manifest
                        .files
                        .push((Bytes::from(family), (*name).to_string()));
                }
                ["ref", family, parent, name, start, end] => {
                    let key = |text: &str| -> Option<Bytes> {
                        if text == "-" {
                            Some(Bytes::new())
                        } else {
                            unhex(text).map(Bytes::from)
                        }
                    };
                    check_file_name(name).ok_or_else(|| corrupt(line))?;
                    manifest.refs.push(FileRef {
                        family: Bytes::from(unhex(family).ok_or_else(|| corrupt(line))?),
                        parent: parent.parse().map_err(|_| corrupt(line))?,
                        name: (*name).to_string(),
                        start: key(start).ok_or_else(|| corrupt(line))?,
                        end: key(end).ok_or_else(|| corrupt(line))?,
                    });
                }
                _ => return Err(corrupt(line)),
            }
        }
        Ok(manifest)
    }

    pub(crate) fn store(&self, fs: &dyn FileSystem, dir: &Path) -> Result<(), RegionError> {
        let mut body = format!(
            "flushed {}\nnext {}\nmajor {}\n",
            self.flushed, self.next_file, self.last_major_ms
        );
        let key = |k: &Bytes| {
            if k.is_empty() {
                "-".to_string()
            } else {
                hex(k)
            }
        };
        for r in &self.refs {
            body.push_str(&format!(
                "ref {} {} {} {} {}\n",
                hex(&r.family),
                r.parent,
                r.name,
                key(&r.start),
                key(&r.end)
            ));
        }
        for (family, name) in &self.files {
            body.push_str(&format!("file {} {name}\n", hex(family)));
        }
        checked_file::store(fs, dir, "MANIFEST", HEADER, &body)
    }
}

/// A store file's name as the region writes them (digits and `.ksf`): nothing else may come
/// from a manifest, so a damaged one cannot name a path outside its family's directory.
fn check_file_name(name: &str) -> Option<()> {
    let stem = name.strip_suffix(".ksf")?;
    (!stem.is_empty() && stem.bytes().all(|b| b.is_ascii_digit())).then_some(())
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub(crate) fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use keel_fs::StdFs;

    #[test]
    fn round_trips_and_detects_damage() {
        let dir = tempfile::tempdir().unwrap();
        let fs = StdFs;
        assert_eq!(
            Manifest::load(&fs, dir.path()).unwrap(),
            Manifest::default()
        );
        let manifest = Manifest {
            flushed: 42,
            next_file: 7,
            last_major_ms: 1_700_000_000_123,
            files: vec![
                (
                    Bytes::from_static(b"f"),
                    "00000000000000000001.ksf".to_string(),
                ),
                (
                    Bytes::from_static(b"\x00\xff fam"),
                    "00000000000000000002.ksf".to_string(),
                ),
            ],
            refs: vec![FileRef {
                family: Bytes::from_static(b"f"),
                parent: 3,
                name: "00000000000000000009.ksf".to_string(),
                start: Bytes::from_static(b"m"),
                end: Bytes::new(),
            }],
        };
        manifest.store(&fs, dir.path()).unwrap();
        assert_eq!(Manifest::load(&fs, dir.path()).unwrap(), manifest);
        assert!(!dir.path().join("MANIFEST.tmp").exists());
        let path = path(dir.path());
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[30] ^= 0x01;
        std::fs::write(&path, &bytes).unwrap();
        let err = Manifest::load(&fs, dir.path()).unwrap_err();
        assert!(matches!(err, RegionError::CorruptManifest { .. }), "{err}");
    }
}
