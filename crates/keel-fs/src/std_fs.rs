//! [`StdFs`]: the [`FileSystem`] over `std::fs`, with positional I/O.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::{FileHandle, FileRef, FileSystem, annotate, ends_early};

/// The real file system. Every error names the operation and the path.
#[derive(Clone, Copy, Debug, Default)]
pub struct StdFs;

impl StdFs {
    fn open_with(path: &Path, options: &OpenOptions, op: &str) -> io::Result<FileRef> {
        let file = options.open(path).map_err(|e| annotate(e, op, path))?;
        let end = file.metadata().map_err(|e| annotate(e, op, path))?.len();
        Ok(Arc::new(StdFile {
            file,
            path: path.to_path_buf(),
            end: Mutex::new(end),
        }))
    }
}

impl FileSystem for StdFs {
    fn create(&self, path: &Path) -> io::Result<FileRef> {
        let mut options = OpenOptions::new();
        options.read(true).write(true).create(true).truncate(true);
        StdFs::open_with(path, &options, "create")
    }

    fn create_new(&self, path: &Path) -> io::Result<FileRef> {
        let mut options = OpenOptions::new();
        options.read(true).write(true).create_new(true);
        StdFs::open_with(path, &options, "create_new")
    }

    fn open(&self, path: &Path) -> io::Result<FileRef> {
        let mut options = OpenOptions::new();
        options.read(true).write(true);
        StdFs::open_with(path, &options, "open")
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        fs::rename(from, to).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("rename {} to {}: {e}", from.display(), to.display()),
            )
        })
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        fs::remove_file(path).map_err(|e| annotate(e, "remove", path))
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        let mut paths = Vec::new();
        for entry in fs::read_dir(dir).map_err(|e| annotate(e, "list", dir))? {
            paths.push(entry.map_err(|e| annotate(e, "list", dir))?.path());
        }
        paths.sort();
        Ok(paths)
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        fs::create_dir_all(dir).map_err(|e| annotate(e, "create_dir_all", dir))
    }

    fn remove_dir(&self, dir: &Path) -> io::Result<()> {
        fs::remove_dir(dir).map_err(|e| annotate(e, "remove_dir", dir))
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| annotate(e, "sync_dir", dir))
    }

    fn exists(&self, path: &Path) -> io::Result<bool> {
        path.try_exists().map_err(|e| annotate(e, "exists", path))
    }
}

/// An open std file. `end` is the append position; it is held locked across every write so
/// that appends from several threads never interleave or overlap.
#[derive(Debug)]
struct StdFile {
    file: File,
    path: PathBuf,
    end: Mutex<u64>,
}

impl StdFile {
    /// After a failed write some bytes may have landed: re-read the true end so the next append
    /// goes after them, as documented (torn bytes stay until the caller truncates them).
    fn resync_end(&self, end: &mut u64) {
        if let Ok(meta) = self.file.metadata() {
            *end = meta.len();
        }
    }

    /// Reads at `offset` into `buf`'s spare capacity until `buf` is `end` bytes long.
    fn pread_until(&self, buf: &mut Vec<u8>, end: usize, offset: u64) -> io::Result<()> {
        let start = buf.len();
        while buf.len() < end {
            let at = offset + (buf.len() - start) as u64;
            let at_off = libc::off_t::try_from(at).map_err(|_| {
                let err = io::Error::new(io::ErrorKind::InvalidInput, "offset out of range");
                annotate(err, &format!("read at offset {at} of"), &self.path)
            })?;
            let want = end - buf.len();
            let spare = &mut buf.spare_capacity_mut()[..want];
            // SAFETY: `spare` is `want` bytes of `buf`'s allocation that nothing else refers to
            // while this exclusive borrow lives; pread writes at most `want` bytes there (and
            // may leave them uninitialised, which `MaybeUninit` allows); the descriptor stays
            // open while `self.file` lives.
            let n = unsafe {
                libc::pread(
                    self.file.as_raw_fd(),
                    spare.as_mut_ptr().cast::<libc::c_void>(),
                    want,
                    at_off,
                )
            };
            match usize::try_from(n) {
                Ok(0) => return Err(ends_early(&self.path, end - start, offset, at)),
                Ok(n) => {
                    assert!(n <= want, "pread returned {n} bytes for a {want}-byte read");
                    // SAFETY: pread initialised the first `n` bytes of the spare capacity, and
                    // `buf.len() + n <= end <= buf.capacity()`.
                    unsafe { buf.set_len(buf.len() + n) };
                }
                // A negative count: the error is in errno.
                Err(_) => {
                    let err = io::Error::last_os_error();
                    if err.kind() != io::ErrorKind::Interrupted {
                        return Err(annotate(
                            err,
                            &format!("read at offset {at} of"),
                            &self.path,
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}

impl FileHandle for StdFile {
    fn path(&self) -> &Path {
        &self.path
    }

    fn append(&self, buf: &[u8]) -> io::Result<u64> {
        let mut end = self.end.lock();
        let offset = *end;
        match self.file.write_all_at(buf, offset) {
            Ok(()) => {
                *end = offset + buf.len() as u64;
                Ok(offset)
            }
            Err(err) => {
                self.resync_end(&mut end);
                Err(annotate(
                    err,
                    &format!("append {} bytes at offset {offset} to", buf.len()),
                    &self.path,
                ))
            }
        }
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        let mut end = self.end.lock();
        match self.file.write_all_at(buf, offset) {
            Ok(()) => {
                *end = (*end).max(offset + buf.len() as u64);
                Ok(())
            }
            Err(err) => {
                self.resync_end(&mut end);
                Err(annotate(
                    err,
                    &format!("write {} bytes at offset {offset} to", buf.len()),
                    &self.path,
                ))
            }
        }
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        self.file
            .read_at(buf, offset)
            .map_err(|e| annotate(e, &format!("read at offset {offset} of"), &self.path))
    }

    fn read_exact_at_appending(
        &self,
        buf: &mut Vec<u8>,
        len: usize,
        offset: u64,
    ) -> io::Result<()> {
        crate::appending(buf, |buf, _| {
            let end = crate::make_room(buf, len, &self.path)?;
            self.pread_until(buf, end, offset)
        })
    }

    fn sync_data(&self) -> io::Result<()> {
        self.file
            .sync_data()
            .map_err(|e| annotate(e, "sync_data", &self.path))
    }

    fn sync_all(&self) -> io::Result<()> {
        self.file
            .sync_all()
            .map_err(|e| annotate(e, "sync_all", &self.path))
    }

    fn len(&self) -> io::Result<u64> {
        Ok(self
            .file
            .metadata()
            .map_err(|e| annotate(e, "len", &self.path))?
            .len())
    }

    fn truncate(&self, len: u64) -> io::Result<()> {
        let mut end = self.end.lock();
        self.file
            .set_len(len)
            .map_err(|e| annotate(e, &format!("truncate to {len} bytes"), &self.path))?;
        *end = len;
        Ok(())
    }
}
