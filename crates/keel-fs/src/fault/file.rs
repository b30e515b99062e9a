//! An open file of a [`super::FaultFs`].

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;

use super::plan::{FaultKind, OpClass};
use super::{InodeId, State, injected};
use crate::FileHandle;

#[derive(Debug)]
pub(super) struct FaultFile {
    state: Arc<Mutex<State>>,
    inode: InodeId,
    path: PathBuf,
}

impl FaultFile {
    pub(super) fn new(state: Arc<Mutex<State>>, inode: InodeId, path: PathBuf) -> FaultFile {
        FaultFile { state, inode, path }
    }

    /// One write, through the fault plan and the capacity limit. `offset: None` appends.
    /// Returns the offset written at.
    fn write(&self, buf: &[u8], offset: Option<u64>) -> io::Result<u64> {
        let mut state = self.state.lock();
        state.counts.writes += 1;
        let fault = state.observe(OpClass::Write, &self.path);
        let used = state.used_bytes();
        let capacity = state.capacity_bytes;
        let inode = state
            .inodes
            .get_mut(&self.inode)
            .ok_or_else(|| self.gone())?;
        let at = match offset {
            Some(at) => usize::try_from(at).map_err(|_| self.too_far(at))?,
            None => inode.len(),
        };
        let end = at
            .checked_add(buf.len())
            .ok_or_else(|| self.too_far(at as u64))?;

        // How many bytes this write stores, and the error it ends with, if any.
        let (stored, error) = match fault {
            Some(FaultKind::FailWrite) => (
                0,
                Some(injected(io::ErrorKind::Other, "write failure", &self.path)),
            ),
            Some(FaultKind::Crash) => (
                0,
                Some(injected(io::ErrorKind::Other, "crashed", &self.path)),
            ),
            Some(FaultKind::NoSpace) => (
                0,
                Some(injected(
                    io::ErrorKind::StorageFull,
                    "no space left",
                    &self.path,
                )),
            ),
            Some(FaultKind::ShortWrite) => {
                let half = buf.len() / 2;
                let what = format!("short write ({half} of {} bytes stored)", buf.len());
                (
                    half,
                    Some(injected(io::ErrorKind::Other, &what, &self.path)),
                )
            }
            _ => {
                let growth = end.saturating_sub(inode.len()) as u64;
                let room = capacity.map_or(u64::MAX, |cap| cap.saturating_sub(used));
                if growth > room {
                    let fits = (inode.len() as u64 + room).saturating_sub(at as u64) as usize;
                    let what = format!(
                        "no space left ({fits} of {} bytes stored, capacity {} bytes)",
                        buf.len(),
                        capacity.unwrap_or(0)
                    );
                    (
                        fits.min(buf.len()),
                        Some(injected(io::ErrorKind::StorageFull, &what, &self.path)),
                    )
                } else {
                    (buf.len(), None)
                }
            }
        };
        if stored > 0 {
            inode.write(at, &buf[..stored]);
        }
        state.counts.bytes_written += stored as u64;
        match error {
            Some(err) => Err(err),
            None => Ok(at as u64),
        }
    }

    fn sync(&self) -> io::Result<()> {
        let mut state = self.state.lock();
        state.counts.syncs += 1;
        if state.observe(OpClass::Sync, &self.path).is_some() {
            return Err(injected(io::ErrorKind::Other, "sync failure", &self.path));
        }
        let inode = state
            .inodes
            .get_mut(&self.inode)
            .ok_or_else(|| self.gone())?;
        inode.sync();
        Ok(())
    }

    fn gone(&self) -> io::Error {
        io::Error::new(
            io::ErrorKind::NotFound,
            format!("{}: inode is gone", self.path.display()),
        )
    }

    fn too_far(&self, offset: u64) -> io::Error {
        let msg = format!(
            "{}: offset {offset} is beyond what memory can hold",
            self.path.display()
        );
        io::Error::new(io::ErrorKind::InvalidInput, msg)
    }
}

impl FileHandle for FaultFile {
    fn path(&self) -> &Path {
        &self.path
    }

    fn append(&self, buf: &[u8]) -> io::Result<u64> {
        self.write(buf, None)
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.write(buf, Some(offset)).map(|_| ())
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let mut state = self.state.lock();
        state.counts.reads += 1;
        if state.observe(OpClass::Read, &self.path).is_some() {
            return Err(injected(io::ErrorKind::Other, "read failure", &self.path));
        }
        let inode = state.inodes.get(&self.inode).ok_or_else(|| self.gone())?;
        let data = inode.data();
        let Ok(start) = usize::try_from(offset) else {
            return Ok(0);
        };
        if start >= data.len() {
            return Ok(0);
        }
        let n = buf.len().min(data.len() - start);
        buf[..n].copy_from_slice(&data[start..start + n]);
        Ok(n)
    }

    fn sync_data(&self) -> io::Result<()> {
        self.sync()
    }

    fn sync_all(&self) -> io::Result<()> {
        self.sync()
    }

    fn len(&self) -> io::Result<u64> {
        let state = self.state.lock();
        Ok(state
            .inodes
            .get(&self.inode)
            .ok_or_else(|| self.gone())?
            .len() as u64)
    }

    fn truncate(&self, len: u64) -> io::Result<()> {
        let mut state = self.state.lock();
        let len = usize::try_from(len).map_err(|_| self.too_far(len))?;
        let inode = state
            .inodes
            .get_mut(&self.inode)
            .ok_or_else(|| self.gone())?;
        inode.truncate(len);
        Ok(())
    }
}
