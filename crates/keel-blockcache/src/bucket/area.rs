//! The cache's memory: an array of 64-bit words, either on the heap or in a memory-mapped file
//! (HBase's "offheap" and "file"/"mmap" engines). Blocks are copied in and out eight bytes at a
//! time with relaxed atomic loads and stores (plain moves on x86-64), so slots can be written and
//! read by different threads without data races. Visibility comes from publication: a writer
//! fills a slot, then publishes its entry under the backing map's mutex; a reader finds the entry
//! under the same mutex before it reads.

use std::fs::OpenOptions;
use std::io;
use std::path::Path;

use bytes::Bytes;
use keel_sync::atomic::{AtomicU64, Ordering::Relaxed};
use memmap2::MmapMut;

#[derive(Debug)]
pub(crate) enum Area {
    Heap(Box<[AtomicU64]>),
    Mapped(MappedWords),
}

/// A file mapped read-write, viewed as words.
#[derive(Debug)]
pub(crate) struct MappedWords {
    map: MmapMut,
    words: usize,
}

impl MappedWords {
    fn words(&self) -> &[AtomicU64] {
        let ptr = self.map.as_ptr().cast::<AtomicU64>();
        // SAFETY: the mapping is page-aligned (so aligned for `AtomicU64`), at least
        // `words * 8` bytes long (`Area::mapped` sized the file before mapping it), and lives as
        // long as `self`, which the returned slice borrows. `AtomicU64` has the size and
        // alignment of `u64` and every bit pattern is a valid value. All access to this memory
        // goes through this atomic view (the `MmapMut` is never used to read or write bytes), so
        // there are no data races; the file is this cache's own, created here.
        unsafe { std::slice::from_raw_parts(ptr, self.words) }
    }
}

impl Area {
    /// `len` bytes on the heap (rounded up to whole words), zeroed.
    pub(crate) fn heap(len: usize) -> Area {
        Area::Heap((0..len.div_ceil(8)).map(|_| AtomicU64::new(0)).collect())
    }

    /// `len` bytes in the file at `path` (created or truncated to that size), mapped read-write.
    pub(crate) fn mapped(path: &Path, len: usize) -> io::Result<Area> {
        let words = len.div_ceil(8);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)?;
        file.set_len((words * 8) as u64)?;
        // SAFETY: the file is created (truncated) here for this cache alone and is not resized
        // while mapped; no other mapping or handle of this process writes it.
        let map = unsafe { MmapMut::map_mut(&file)? };
        if map.len() < words * 8 {
            return Err(io::Error::other("mapping shorter than requested"));
        }
        Ok(Area::Mapped(MappedWords { map, words }))
    }

    fn words(&self) -> &[AtomicU64] {
        match self {
            Area::Heap(words) => words,
            Area::Mapped(mapped) => mapped.words(),
        }
    }

    /// Copies `data` into the slot at `offset` (a multiple of 8: slots are whole KiB).
    pub(crate) fn write(&self, offset: usize, data: &[u8]) {
        debug_assert_eq!(offset % 8, 0);
        let words = self.words();
        let first = offset / 8;
        for (i, chunk) in data.chunks(8).enumerate() {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            words[first + i].store(u64::from_le_bytes(word), Relaxed);
        }
    }

    /// Copies `len` bytes out of the slot at `offset`.
    pub(crate) fn read(&self, offset: usize, len: usize) -> Bytes {
        let first = offset / 8;
        let mut out = Vec::with_capacity(len.div_ceil(8) * 8);
        for word in &self.words()[first..first + len.div_ceil(8)] {
            out.extend_from_slice(&word.load(Relaxed).to_le_bytes());
        }
        out.truncate(len);
        Bytes::from(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trips(area: &Area) {
        for len in [0, 1, 7, 8, 9, 1000, 1024] {
            let data: Vec<u8> = (0..len).map(|i| (i * 7 + len) as u8).collect();
            area.write(1024, &data);
            assert_eq!(area.read(1024, len).as_ref(), data.as_slice());
        }
    }

    #[test]
    fn heap_area_round_trips_any_length() {
        round_trips(&Area::heap(4096));
    }

    #[cfg(not(miri))] // Miri cannot run mmap.
    #[test]
    fn mapped_area_round_trips_any_length() {
        let dir = tempfile::tempdir().unwrap();
        let area = Area::mapped(&dir.path().join("bucket.cache"), 4096).unwrap();
        round_trips(&area);
        assert!(Area::mapped(&dir.path().join("missing/dir/x"), 4096).is_err());
    }
}
