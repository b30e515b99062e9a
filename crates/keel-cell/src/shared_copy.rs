//! A copy of a short slice as [`Bytes`] that clones without allocating.

use bytes::Bytes;

/// Slices up to this many bytes are copied inline into the one allocation that also holds the
/// reference count (rows are this short nearly always: YCSB's are 23 bytes).
pub const INLINE_COPY_MAX: usize = 64;

/// `slice` copied into a [`Bytes`] whose clones (and slices) only bump a reference count.
///
/// Why not `Bytes::copy_from_slice`: that `Bytes` owns a plain boxed buffer, and its first
/// clone allocates a shared header and moves the buffer under it, so a copy that is then
/// cloned once (a get's row, held by its seek keys and its scanners) costs two allocations.
/// Here a slice of at most [`INLINE_COPY_MAX`] bytes lies inline in the same allocation as the
/// count: one allocation, whatever the clones. A longer slice takes `copy_from_slice`'s way.
pub fn shared_copy(slice: &[u8]) -> Bytes {
    if slice.is_empty() {
        return Bytes::new();
    }
    if slice.len() > INLINE_COPY_MAX {
        return Bytes::copy_from_slice(slice);
    }
    let mut inline = Inline {
        bytes: [0; INLINE_COPY_MAX],
        len: slice.len() as u8,
    };
    inline.bytes[..slice.len()].copy_from_slice(slice);
    Bytes::from_owner(inline)
}

/// The owner `Bytes::from_owner` keeps beside its count: the bytes and how many are used.
struct Inline {
    bytes: [u8; INLINE_COPY_MAX],
    len: u8,
}

impl AsRef<[u8]> for Inline {
    fn as_ref(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_every_length_exactly_and_its_clones_and_slices_agree() {
        let source: Vec<u8> = (0..=200u8).collect();
        for len in [
            0,
            1,
            23,
            INLINE_COPY_MAX - 1,
            INLINE_COPY_MAX,
            INLINE_COPY_MAX + 1,
            201,
        ] {
            let copy = shared_copy(&source[..len]);
            assert_eq!(&copy[..], &source[..len], "length {len}");
            let clone = copy.clone();
            drop(copy);
            assert_eq!(&clone[..], &source[..len], "a clone outlives the original");
            if len > 2 {
                assert_eq!(&clone.slice(1..len - 1)[..], &source[1..len - 1]);
            }
        }
    }
}
