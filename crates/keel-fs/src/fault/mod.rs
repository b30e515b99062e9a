//! [`FaultFs`]: an in-memory [`FileSystem`] that injects faults and builds crash images.
//!
//! Model of durability (strict POSIX, stricter than most real file systems so tests stay honest):
//! a file's bytes are durable as of its last successful `sync_data`/`sync_all`; the names in a
//! directory (creates, renames, removes) are durable as of that directory's last successful
//! `sync_dir`. [`FaultFs::crash_image`] returns the file system a power cut would leave: the
//! durable names, each with its durable bytes. A directory is a name in its parent like any
//! other: its creation or removal is durable once the parent is synced, and a crash that loses
//! a directory loses everything under it.

mod file;
mod inode;
mod plan;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;

use self::file::FaultFile;
use self::inode::Inode;
use self::plan::{Armed, OpClass};
pub use self::plan::{Fault, FaultKind};
use crate::{FileRef, FileSystem};

type InodeId = u64;

/// How many operations of each kind a [`FaultFs`] has seen, including failed ones.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OpCounts {
    /// Appends and positional writes.
    pub writes: u64,
    /// Bytes those writes stored.
    pub bytes_written: u64,
    /// `sync_data`, `sync_all` and `sync_dir` calls.
    pub syncs: u64,
    /// Reads.
    pub reads: u64,
}

/// An in-memory file system with injectable faults and crash images. Cloning shares the same
/// files (like a second handle to one disk); [`FaultFs::crash_image`] makes an independent one.
#[derive(Clone, Debug, Default)]
pub struct FaultFs {
    state: Arc<Mutex<State>>,
}

#[derive(Debug, Default)]
struct State {
    names: BTreeMap<PathBuf, InodeId>,
    durable_names: BTreeMap<PathBuf, InodeId>,
    dirs: BTreeSet<PathBuf>,
    /// Directories whose creation was made durable by a sync of their parent.
    durable_dirs: BTreeSet<PathBuf>,
    inodes: HashMap<InodeId, Inode>,
    next_inode: InodeId,
    faults: Vec<Armed>,
    capacity_bytes: Option<u64>,
    counts: OpCounts,
}

impl FaultFs {
    /// An empty file system with no faults and unlimited space.
    pub fn new() -> FaultFs {
        FaultFs::default()
    }

    /// Arms a fault; it counts operations from now on.
    pub fn inject(&self, fault: Fault) {
        self.state.lock().faults.push(Armed::new(fault));
    }

    /// Disarms every fault.
    pub fn clear_faults(&self) {
        self.state.lock().faults.clear();
    }

    /// Limits the total size of all files; a write that would exceed it stores what fits and
    /// fails with ENOSPC (`io::ErrorKind::StorageFull`). `None` removes the limit.
    pub fn set_capacity(&self, capacity_bytes: Option<u64>) {
        self.state.lock().capacity_bytes = capacity_bytes;
    }

    /// Operation counts so far.
    pub fn op_counts(&self) -> OpCounts {
        self.state.lock().counts
    }

    /// The file system a crash at this instant would leave: only durable names, each with only
    /// its durable bytes; no faults, no capacity limit, fresh counters.
    pub fn crash_image(&self) -> FaultFs {
        let state = self.state.lock();
        // A durable directory survives only if every directory above it does too.
        let survives = |dir: &Path| {
            dir.ancestors()
                .all(|a| is_root(a) || state.durable_dirs.contains(a))
        };
        let dirs: BTreeSet<PathBuf> = state
            .durable_dirs
            .iter()
            .filter(|d| survives(d))
            .cloned()
            .collect();
        let mut image = State {
            durable_dirs: dirs.clone(),
            dirs,
            ..State::default()
        };
        for (path, id) in &state.durable_names {
            if !path.parent().is_none_or(survives) {
                continue;
            }
            let bytes = state
                .inodes
                .get(id)
                .map(Inode::durable_bytes)
                .unwrap_or_default();
            let new_id = image.alloc(Inode::durable_from(bytes));
            image.names.insert(path.clone(), new_id);
            image.durable_names.insert(path.clone(), new_id);
        }
        FaultFs {
            state: Arc::new(Mutex::new(image)),
        }
    }

    /// The live bytes of a file, for assertions; `None` if there is no such file.
    pub fn contents(&self, path: &Path) -> Option<Vec<u8>> {
        let state = self.state.lock();
        let id = state.names.get(path)?;
        state.inodes.get(id).map(|inode| inode.data().to_vec())
    }

    fn open_file(&self, path: &Path, id: InodeId) -> FileRef {
        Arc::new(FaultFile::new(self.state.clone(), id, path.to_path_buf()))
    }
}

impl State {
    fn alloc(&mut self, inode: Inode) -> InodeId {
        self.next_inode += 1;
        self.inodes.insert(self.next_inode, inode);
        self.next_inode
    }

    fn dir_exists(&self, dir: &Path) -> bool {
        is_root(dir) || self.dirs.contains(dir)
    }

    fn check_parent(&self, op: &str, path: &Path) -> io::Result<()> {
        let parent = path.parent().unwrap_or(Path::new(""));
        if self.dir_exists(parent) {
            Ok(())
        } else {
            Err(not_found(op, path, "parent directory does not exist"))
        }
    }

    /// Counts one operation against every armed fault; the first that fires wins.
    fn observe(&mut self, class: OpClass, path: &Path) -> Option<FaultKind> {
        let mut fired = None;
        for armed in &mut self.faults {
            if let Some(kind) = armed.observe(class, path) {
                fired = fired.or(Some(kind));
            }
        }
        fired
    }

    fn used_bytes(&self) -> u64 {
        let live: BTreeSet<InodeId> = self.names.values().copied().collect();
        live.iter()
            .filter_map(|id| self.inodes.get(id))
            .map(|i| i.len() as u64)
            .sum()
    }
}

/// The roots every FaultFs has: `/`, and the empty path (or `.`) that relative paths start from.
fn is_root(dir: &Path) -> bool {
    dir.as_os_str().is_empty() || dir == Path::new("/") || dir == Path::new(".")
}

/// `.` and the empty path name the same directory.
fn normalize(dir: &Path) -> &Path {
    if dir == Path::new(".") {
        Path::new("")
    } else {
        dir
    }
}

fn not_found(op: &str, path: &Path, why: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!("{op} {}: {why}", path.display()),
    )
}

fn injected(kind: io::ErrorKind, what: &str, path: &Path) -> io::Error {
    io::Error::new(
        kind,
        format!("injected fault: {what} on {}", path.display()),
    )
}

impl FileSystem for FaultFs {
    fn create(&self, path: &Path) -> io::Result<FileRef> {
        let mut state = self.state.lock();
        state.check_parent("create", path)?;
        let id = match state.names.get(path).copied() {
            Some(id) => {
                if let Some(inode) = state.inodes.get_mut(&id) {
                    inode.truncate(0);
                }
                id
            }
            None => {
                let id = state.alloc(Inode::new());
                state.names.insert(path.to_path_buf(), id);
                id
            }
        };
        drop(state);
        Ok(self.open_file(path, id))
    }

    fn create_new(&self, path: &Path) -> io::Result<FileRef> {
        let mut state = self.state.lock();
        state.check_parent("create_new", path)?;
        if state.names.contains_key(path) || state.dirs.contains(path) {
            let msg = format!("create_new {}: file exists", path.display());
            return Err(io::Error::new(io::ErrorKind::AlreadyExists, msg));
        }
        let id = state.alloc(Inode::new());
        state.names.insert(path.to_path_buf(), id);
        drop(state);
        Ok(self.open_file(path, id))
    }

    fn open(&self, path: &Path) -> io::Result<FileRef> {
        let id = self.state.lock().names.get(path).copied();
        let id = id.ok_or_else(|| not_found("open", path, "no such file"))?;
        Ok(self.open_file(path, id))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut state = self.state.lock();
        state.check_parent("rename", to)?;
        let id = state
            .names
            .remove(from)
            .ok_or_else(|| not_found("rename", from, "no such file"))?;
        state.names.insert(to.to_path_buf(), id);
        Ok(())
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        let mut state = self.state.lock();
        state
            .names
            .remove(path)
            .ok_or_else(|| not_found("remove", path, "no such file"))?;
        Ok(())
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        let state = self.state.lock();
        if !state.dir_exists(dir) {
            return Err(not_found("list", dir, "no such directory"));
        }
        let is_child = |p: &&PathBuf| p.parent() == Some(dir);
        let files = state.names.keys().filter(is_child);
        let dirs = state.dirs.iter().filter(is_child);
        let mut entries: Vec<PathBuf> = files.chain(dirs).cloned().collect();
        entries.sort();
        Ok(entries)
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        let mut state = self.state.lock();
        for ancestor in dir.ancestors() {
            if state.names.contains_key(ancestor) {
                let msg = format!(
                    "create_dir_all {}: {} is a file",
                    dir.display(),
                    ancestor.display()
                );
                return Err(io::Error::new(io::ErrorKind::AlreadyExists, msg));
            }
        }
        for ancestor in dir.ancestors() {
            if !state.dir_exists(ancestor) {
                state.dirs.insert(ancestor.to_path_buf());
            }
        }
        Ok(())
    }

    fn remove_dir(&self, dir: &Path) -> io::Result<()> {
        let mut state = self.state.lock();
        if is_root(dir) || !state.dirs.contains(dir) {
            return Err(not_found("remove_dir", dir, "no such directory"));
        }
        let is_child = |p: &PathBuf| p.parent() == Some(dir);
        if state.names.keys().any(is_child) || state.dirs.iter().any(is_child) {
            let msg = format!("remove_dir {}: directory not empty", dir.display());
            return Err(io::Error::new(io::ErrorKind::DirectoryNotEmpty, msg));
        }
        state.dirs.remove(dir);
        Ok(())
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        let dir = normalize(dir);
        let mut state = self.state.lock();
        state.counts.syncs += 1;
        if state.observe(OpClass::Sync, dir).is_some() {
            return Err(injected(io::ErrorKind::Other, "sync_dir failure", dir));
        }
        if !state.dir_exists(dir) {
            return Err(not_found("sync_dir", dir, "no such directory"));
        }
        let State {
            names,
            durable_names,
            dirs,
            durable_dirs,
            ..
        } = &mut *state;
        durable_names.retain(|path, _| path.parent() != Some(dir));
        for (path, id) in names.iter().filter(|(p, _)| p.parent() == Some(dir)) {
            durable_names.insert(path.clone(), *id);
        }
        durable_dirs.retain(|path| path.parent() != Some(dir));
        for path in dirs.iter().filter(|p| p.parent() == Some(dir)) {
            durable_dirs.insert(path.clone());
        }
        Ok(())
    }

    fn exists(&self, path: &Path) -> io::Result<bool> {
        let state = self.state.lock();
        Ok(state.names.contains_key(path) || state.dir_exists(path))
    }
}
