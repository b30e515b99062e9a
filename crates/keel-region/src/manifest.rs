//! The region manifest: which store files are committed, per family, and the highest sequence
//! id they hold. Replaced atomically (temporary file, sync, rename, directory sync), so a crash
//! leaves either the old list or the new one; store files not listed are leftovers of a flush
//! that never committed and are ignored.
//!
//! Text, one item per line: `keel-region-manifest 1`, `flushed <seq>`, `next <file number>`,
//! `major <unix ms>` (when the last major compaction finished; absent in older manifests),
//! `file <family hex> <file name>` per file, then `crc <crc32 hex>` of everything before it.

use std::path::{Path, PathBuf};

use bytes::Bytes;
use keel_fs::FileSystem;

use crate::checked_file;
use crate::error::RegionError;

const HEADER: &str = "keel-region-manifest 1";

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
}

pub(crate) fn path(dir: &Path) -> PathBuf {
    dir.join("MANIFEST")
}

impl Manifest {
    pub(crate) fn load(fs: &dyn FileSystem, dir: &Path) -> Result<Manifest, RegionError> {
        let Some(lines) = checked_file::load(fs, dir, "MANIFEST", HEADER, &[])? else {
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
                    manifest
                        .files
                        .push((Bytes::from(family), (*name).to_string()));
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
        for (family, name) in &self.files {
            body.push_str(&format!("file {} {name}\n", hex(family)));
        }
        checked_file::store(fs, dir, "MANIFEST", HEADER, &body)
    }
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
