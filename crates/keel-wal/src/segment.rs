//! [`SegmentWriter`]: creates a segment and appends framed records to it. The building block of
//! the group-commit writer; on its own it is what tests and tools use to write a WAL.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use keel_fs::{FileRef, FileSystem};

use crate::error::WalError;
use crate::format::{WalEntry, encode_header, encode_record, segment_name};

/// Default largest entry payload: 64 MiB (six maximum-size cells with room to spare).
pub const DEFAULT_MAX_ENTRY_SIZE: usize = 64 * 1024 * 1024;

/// Appends records to one segment file.
#[derive(Debug)]
pub struct SegmentWriter {
    file: FileRef,
    path: PathBuf,
    first_lsn: u64,
    next_lsn: u64,
    max_entry_size: usize,
    scratch: Vec<u8>,
    len: u64,
}

impl SegmentWriter {
    /// Creates `dir/{first_lsn:020}.wal`, writes and syncs its header, and syncs the directory
    /// so the new name survives a crash.
    pub fn create(
        fs: &Arc<dyn FileSystem>,
        dir: &Path,
        first_lsn: u64,
        max_entry_size: usize,
    ) -> Result<SegmentWriter, WalError> {
        let path = dir.join(segment_name(first_lsn));
        let io = |op| {
            let path = path.clone();
            move |source| WalError::Io { op, path, source }
        };
        let file = fs.create_new(&path).map_err(io("create"))?;
        file.append(&encode_header(first_lsn))
            .map_err(io("write header"))?;
        file.sync_data().map_err(io("sync header"))?;
        fs.sync_dir(dir).map_err(|source| WalError::Io {
            op: "sync directory",
            path: dir.to_path_buf(),
            source,
        })?;
        Ok(SegmentWriter {
            file,
            path,
            first_lsn,
            next_lsn: first_lsn,
            max_entry_size,
            scratch: Vec::new(),
            len: crate::format::HEADER_LEN as u64,
        })
    }

    /// The segment file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// LSN of the segment's first record.
    pub fn first_lsn(&self) -> u64 {
        self.first_lsn
    }

    /// LSN the next record will get.
    pub fn next_lsn(&self) -> u64 {
        self.next_lsn
    }

    /// Appends one entry as a record (not yet durable: see [`SegmentWriter::sync`]); returns its LSN.
    pub fn append(&mut self, entry: &WalEntry) -> Result<u64, WalError> {
        let size = entry.encoded_len();
        if size > self.max_entry_size {
            return Err(WalError::EntryTooLarge {
                size,
                max: self.max_entry_size,
            });
        }
        let mut payload = Vec::with_capacity(size);
        entry.encode(&mut payload);
        self.scratch.clear();
        encode_record(&payload, &mut self.scratch);
        self.file
            .append(&self.scratch)
            .map_err(|source| WalError::Io {
                op: "append",
                path: self.path.clone(),
                source,
            })?;
        self.len += self.scratch.len() as u64;
        let lsn = self.next_lsn;
        self.next_lsn += 1;
        Ok(lsn)
    }

    /// Appends `count` records already framed by [`crate::format::encode_record`], in one write.
    pub(crate) fn append_framed(&mut self, records: &[u8], count: u64) -> Result<(), WalError> {
        self.file.append(records).map_err(|source| WalError::Io {
            op: "append",
            path: self.path.clone(),
            source,
        })?;
        self.len += records.len() as u64;
        self.next_lsn += count;
        Ok(())
    }

    /// Bytes in the segment so far.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// True if the segment holds only its header.
    pub fn is_empty(&self) -> bool {
        self.next_lsn == self.first_lsn
    }

    /// Makes every appended record durable (fdatasync).
    pub fn sync(&self) -> Result<(), WalError> {
        self.file.sync_data().map_err(|source| WalError::Io {
            op: "sync",
            path: self.path.clone(),
            source,
        })
    }
}
