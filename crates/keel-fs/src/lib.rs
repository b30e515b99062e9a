//! The I/O seam shared by Keel's WAL and store files.
//!
//! Durable code in Keel never calls `std::fs` directly: it takes an `Arc<dyn FileSystem>` and
//! works on [`FileHandle`]s. Production uses [`StdFs`]; tests swap in `FaultFs` (feature
//! `fault-injection`), an in-memory file system that fails the Nth write or sync, tears writes,
//! runs out of space, and builds the *crash image* a power cut would leave: every byte written
//! since a file's last successful sync is gone, and every create, rename or remove since its
//! directory's last sync is undone. Crash tests then reopen that image and check that every
//! acknowledged write survived, without killing processes or touching global state.
//!
//! The contract both implementations keep (and [`FileSystem`]'s docs spell out):
//! - a write is durable only after `sync_data`/`sync_all` on its file returned `Ok`;
//! - a create, rename or remove is durable only after `sync_dir` on its directory returned `Ok`;
//!   so is a new or removed directory, in its parent ([`FileSystem::create_dir_durable`] does
//!   both steps);
//! - a failed write may leave a prefix of its bytes in the file (a torn write);
//! - errors keep their `io::ErrorKind` (`StorageFull` for ENOSPC) and name the operation and path.
//!
//! ```
//! use std::sync::Arc;
//! use keel_fs::{FileSystem, StdFs};
//!
//! let dir = tempfile::tempdir()?;
//! let fs: Arc<dyn FileSystem> = Arc::new(StdFs);
//! let file = fs.create(&dir.path().join("log"))?;
//! file.append(b"acknowledged")?;
//! file.sync_data()?; // durable from here on
//! fs.sync_dir(dir.path())?; // and so is the file's name
//! assert_eq!(file.len()?, 12);
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! What this crate is not: no buffering, no file formats, no retries; callers own those.

mod std_fs;

#[cfg(any(test, feature = "fault-injection"))]
mod fault;

#[cfg(test)]
mod conformance_tests;

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

#[cfg(any(test, feature = "fault-injection"))]
pub use fault::{Fault, FaultFs, FaultKind, OpCounts};
pub use std_fs::StdFs;

/// A shared handle to an open file.
pub type FileRef = Arc<dyn FileHandle>;

/// Directory and file operations. Implementations are shared between threads.
pub trait FileSystem: Send + Sync + fmt::Debug {
    /// Creates `path` for reading and writing, truncating it if it exists. The parent directory
    /// must exist. The new name is durable only after [`FileSystem::sync_dir`] on the parent.
    fn create(&self, path: &Path) -> io::Result<FileRef>;

    /// Creates `path` for reading and writing; fails with `AlreadyExists` if it exists.
    fn create_new(&self, path: &Path) -> io::Result<FileRef>;

    /// Opens an existing file for reading and writing; `NotFound` if it does not exist.
    fn open(&self, path: &Path) -> io::Result<FileRef>;

    /// Renames `from` to `to`, atomically replacing `to` if it exists. Durable only after
    /// [`FileSystem::sync_dir`] on both parents.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;

    /// Removes a file. Durable only after [`FileSystem::sync_dir`] on its parent.
    fn remove(&self, path: &Path) -> io::Result<()>;

    /// The entries (files and directories) directly inside `dir`, as full paths, sorted.
    fn list(&self, dir: &Path) -> io::Result<Vec<PathBuf>>;

    /// Creates `dir` and any missing parents. Each new directory's name is durable only after
    /// [`FileSystem::sync_dir`] on its parent ([`FileSystem::create_dir_durable`] does that).
    fn create_dir_all(&self, dir: &Path) -> io::Result<()>;

    /// Removes an empty directory; fails if it holds anything. Durable only after
    /// [`FileSystem::sync_dir`] on its parent.
    fn remove_dir(&self, dir: &Path) -> io::Result<()>;

    /// Creates `dir` and any missing parents and makes every name it created durable: the
    /// parent of each new directory is synced, and so is `dir`'s own parent even when `dir`
    /// existed already (an earlier creation may never have been synced).
    fn create_dir_durable(&self, dir: &Path) -> io::Result<()> {
        let mut missing = Vec::new();
        for ancestor in dir.ancestors() {
            if ancestor.as_os_str().is_empty() || self.exists(ancestor)? {
                break;
            }
            missing.push(ancestor);
        }
        self.create_dir_all(dir)?;
        let mut parents: Vec<&Path> = missing.iter().filter_map(|d| d.parent()).collect();
        parents.extend(dir.parent());
        parents.sort();
        parents.dedup();
        for parent in parents {
            let parent = if parent.as_os_str().is_empty() {
                Path::new(".")
            } else {
                parent
            };
            self.sync_dir(parent)?;
        }
        Ok(())
    }

    /// Makes the entries of `dir` (creates, renames, removes) durable.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;

    /// True if a file or directory exists at `path`.
    fn exists(&self, path: &Path) -> io::Result<bool>;
}

/// An open file. All methods take `&self`: reads at offsets run concurrently; writes are
/// serialised by the implementation.
pub trait FileHandle: Send + Sync + fmt::Debug {
    /// The path the file was opened at.
    fn path(&self) -> &Path;

    /// Writes all of `buf` at the current end of the file and returns the offset it starts at.
    /// On error a prefix of `buf` may have been written (a torn write).
    fn append(&self, buf: &[u8]) -> io::Result<u64>;

    /// Writes all of `buf` at `offset`, extending the file if needed. On error a prefix of `buf`
    /// may have been written.
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()>;

    /// Reads up to `buf.len()` bytes at `offset`; returns how many were read (0 at or past the
    /// end of the file).
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize>;

    /// Reads exactly `buf.len()` bytes at `offset`, or fails with `UnexpectedEof` naming the file
    /// and the offset.
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let mut done = 0;
        while done < buf.len() {
            let at = offset + done as u64;
            match self.read_at(&mut buf[done..], at) {
                Ok(0) => return Err(ends_early(self.path(), buf.len(), offset, at)),
                Ok(n) => done += n,
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                Err(err) => return Err(err),
            }
        }
        Ok(())
    }

    /// Reads exactly `len` bytes at `offset` onto the end of `buf`, or fails as
    /// [`FileHandle::read_exact_at`] does and leaves `buf` as it was. The default zero-fills
    /// the new room and reads into it; [`StdFs`]'s files read straight into `buf`'s spare
    /// capacity, so a block read does not first write every byte it is about to overwrite
    /// (that fill was 8% of a store-file scan).
    fn read_exact_at_appending(
        &self,
        buf: &mut Vec<u8>,
        len: usize,
        offset: u64,
    ) -> io::Result<()> {
        appending(buf, |buf, start| {
            let end = make_room(buf, len, self.path())?;
            buf.resize(end, 0);
            self.read_exact_at(&mut buf[start..], offset)
        })
    }

    /// Makes the file's data durable (fdatasync).
    fn sync_data(&self) -> io::Result<()>;

    /// Makes the file's data and metadata durable (fsync).
    fn sync_all(&self) -> io::Result<()>;

    /// The file's length in bytes.
    fn len(&self) -> io::Result<u64>;

    /// True if the file is empty.
    fn is_empty(&self) -> io::Result<bool> {
        Ok(self.len()? == 0)
    }

    /// Sets the file's length, cutting or zero-extending it.
    fn truncate(&self, len: u64) -> io::Result<()>;
}

/// Runs `read(buf, start)`, which appends to `buf` from `start` (its length at the call), and
/// cuts `buf` back to `start` if it fails: a failed appending read leaves the buffer as it was.
pub(crate) fn appending(
    buf: &mut Vec<u8>,
    read: impl FnOnce(&mut Vec<u8>, usize) -> io::Result<()>,
) -> io::Result<()> {
    let start = buf.len();
    let result = read(buf, start);
    if result.is_err() {
        buf.truncate(start);
    }
    result
}

/// Reserves room for `len` more bytes in `buf` and returns the length `buf` will have once they
/// are appended, or fails with `OutOfMemory` naming `path` where a plain `reserve` would abort
/// the process: `len` may come from a file, and a length past what memory can hold is bad
/// input, not a reason to stop.
pub(crate) fn make_room(buf: &mut Vec<u8>, len: usize, path: &Path) -> io::Result<usize> {
    let end = buf.len().checked_add(len);
    match end.map(|end| (end, buf.try_reserve(len))) {
        Some((end, Ok(()))) => Ok(end),
        _ => Err(io::Error::new(
            io::ErrorKind::OutOfMemory,
            format!(
                "no room for a {len}-byte read after {} bytes of {}",
                buf.len(),
                path.display()
            ),
        )),
    }
}

/// The error of an exact read of `len` bytes at `offset` that found the file ending at `at`.
pub(crate) fn ends_early(path: &Path, len: usize, offset: u64, at: u64) -> io::Error {
    let msg = format!(
        "read {len} bytes at offset {offset} of {}: file ends at offset {at}",
        path.display()
    );
    io::Error::new(io::ErrorKind::UnexpectedEof, msg)
}

/// Wraps an I/O error with the operation and path, keeping its kind (so `StorageFull` stays
/// recognisable) and its message.
pub(crate) fn annotate(err: io::Error, op: &str, path: &Path) -> io::Error {
    io::Error::new(err.kind(), format!("{op} {}: {err}", path.display()))
}

/// The crate README's example, compiled and run as a doctest.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
