//! The cache's memory: one preallocated array of 64-bit words. Blocks are copied in and out
//! eight bytes at a time with relaxed atomic loads and stores (plain moves on x86-64), so slots
//! can be written and read by different threads without `unsafe`. Visibility comes from
//! publication: a writer fills a slot, then publishes its entry under the backing map's mutex;
//! a reader finds the entry under the same mutex before it reads.

use bytes::Bytes;
use keel_sync::atomic::{AtomicU64, Ordering::Relaxed};

#[derive(Debug)]
pub(crate) struct Area {
    words: Box<[AtomicU64]>,
}

impl Area {
    /// `len` bytes (rounded up to whole words), zeroed.
    pub(crate) fn new(len: usize) -> Area {
        Area {
            words: (0..len.div_ceil(8)).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// Copies `data` into the slot at `offset` (a multiple of 8: slots are whole KiB).
    pub(crate) fn write(&self, offset: usize, data: &[u8]) {
        debug_assert_eq!(offset % 8, 0);
        let first = offset / 8;
        for (i, chunk) in data.chunks(8).enumerate() {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.words[first + i].store(u64::from_le_bytes(word), Relaxed);
        }
    }

    /// Copies `len` bytes out of the slot at `offset`.
    pub(crate) fn read(&self, offset: usize, len: usize) -> Bytes {
        let first = offset / 8;
        let mut out = Vec::with_capacity(len.div_ceil(8) * 8);
        for word in &self.words[first..first + len.div_ceil(8)] {
            out.extend_from_slice(&word.load(Relaxed).to_le_bytes());
        }
        out.truncate(len);
        Bytes::from(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_any_length() {
        let area = Area::new(4096);
        for len in [0, 1, 7, 8, 9, 1000, 1024] {
            let data: Vec<u8> = (0..len).map(|i| (i * 7 + len) as u8).collect();
            area.write(1024, &data);
            assert_eq!(area.read(1024, len).as_ref(), data.as_slice());
        }
    }
}
