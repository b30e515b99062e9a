//! The region manifest: which store files are committed, per family, and the highest sequence
//! id they hold. Replaced atomically (temporary file, sync, rename, directory sync), so a crash
//! leaves either the old list or the new one; store files not listed are leftovers of a flush
//! that never committed and are ignored.
//!
//! Text, one item per line: `keel-region-manifest 1`, `flushed <seq>`, `next <file number>`,
//! `file <family hex> <file name>` per file, then `crc <crc32 hex>` of everything before it.

use std::path::{Path, PathBuf};

use bytes::Bytes;
use keel_fs::FileSystem;

use crate::error::{RegionError, io};

const HEADER: &str = "keel-region-manifest 1";

/// The committed state of a region's store files.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Manifest {
    /// Every edit at or below this sequence id is in a listed store file.
    pub(crate) flushed: u64,
    /// The next store-file number to use.
    pub(crate) next_file: u64,
    /// (family, file name) of every committed store file, oldest first.
    pub(crate) files: Vec<(Bytes, String)>,
}

pub(crate) fn path(dir: &Path) -> PathBuf {
    dir.join("MANIFEST")
}

impl Manifest {
    pub(crate) fn load(fs: &dyn FileSystem, dir: &Path) -> Result<Manifest, RegionError> {
        let path = path(dir);
        if !fs.exists(&path).map_err(|e| io("stat", &path, e))? {
            return Ok(Manifest::default());
        }
        let file = fs.open(&path).map_err(|e| io("open", &path, e))?;
        let len = file.len().map_err(|e| io("stat", &path, e))?;
        let mut bytes = vec![0u8; usize::try_from(len).unwrap_or(usize::MAX).min(64 << 20)];
        file.read_exact_at(&mut bytes, 0)
            .map_err(|e| io("read", &path, e))?;
        let corrupt = |what: &str| RegionError::CorruptManifest {
            path: path.clone(),
            what: what.to_string(),
        };
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
        if lines.next() != Some(HEADER) {
            return Err(corrupt("unknown header"));
        }
        let mut manifest = Manifest::default();
        for line in lines {
            let parts: Vec<&str> = line.split(' ').collect();
            match parts.as_slice() {
                ["flushed", n] => manifest.flushed = n.parse().map_err(|_| corrupt(line))?,
                ["next", n] => manifest.next_file = n.parse().map_err(|_| corrupt(line))?,
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
        let mut text = format!(
            "{HEADER}\nflushed {}\nnext {}\n",
            self.flushed, self.next_file
        );
        for (family, name) in &self.files {
            text.push_str(&format!("file {} {name}\n", hex(family)));
        }
        let crc = crc32fast::hash(text.as_bytes());
        text.push_str(&format!("crc {crc:08x}\n"));
        let path = path(dir);
        let tmp = dir.join("MANIFEST.tmp");
        let file = fs.create(&tmp).map_err(|e| io("create", &tmp, e))?;
        file.append(text.as_bytes())
            .map_err(|e| io("write", &tmp, e))?;
        file.sync_data().map_err(|e| io("sync", &tmp, e))?;
        fs.rename(&tmp, &path).map_err(|e| io("rename", &tmp, e))?;
        fs.sync_dir(dir).map_err(|e| io("sync_dir", dir, e))?;
        Ok(())
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
