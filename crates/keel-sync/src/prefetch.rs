//! A cache-line prefetch hint for walks whose next reads are known before they are needed.

/// Asks the CPU to start loading the cache line that holds `bytes[0]` into its caches, and
/// returns at once. A hint only: it changes nothing any read returns, never faults (an empty
/// slice is ignored), and is nothing at all on targets other than x86-64.
///
/// For a walk that learns where its next reads lie before it makes them: a skip list's walk
/// knows a cell's bytes when it reaches the cell's node, long before the caller compares them,
/// and a block's walk knows the bytes after the cell it decodes. The loads then overlap
/// instead of each waiting in turn for memory.
///
/// ```
/// let block = vec![7u8; 4096];
/// keel_sync::prefetch(&block[1024..]);
/// keel_sync::prefetch(&[]);
/// assert_eq!(block[1024], 7);
/// ```
#[inline]
pub fn prefetch(bytes: &[u8]) {
    #[cfg(target_arch = "x86_64")]
    if let Some(byte) = bytes.first() {
        // SAFETY: PREFETCHT0 is part of SSE, which every x86-64 CPU has; it reads nothing the
        // program can observe, never faults (even on an address that is not mapped) and
        // writes nothing. The pointer comes from a live reference in any case.
        unsafe {
            core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(
                std::ptr::from_ref(byte).cast(),
            );
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = bytes;
}

/// [`prefetch`] of the cache line `value` starts in, for a linked structure's next node: the
/// walk knows the node's address one step before it reads the node, and a reference to it
/// (rather than bytes) is what it holds. The same hint: nothing is read or written.
///
/// ```
/// let next = Box::new([1u64; 8]);
/// keel_sync::prefetch_value(&*next);
/// assert_eq!(next[0], 1);
/// ```
#[inline]
pub fn prefetch_value<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: as in `prefetch`: the instruction reads nothing observable and never faults, and
    // the pointer comes from a live reference.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(
            std::ptr::from_ref(value).cast(),
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}

#[cfg(test)]
mod tests {
    use super::{prefetch, prefetch_value};

    #[test]
    fn prefetch_value_changes_nothing() {
        let cell = std::sync::atomic::AtomicU64::new(7);
        prefetch_value(&cell);
        assert_eq!(cell.load(std::sync::atomic::Ordering::Relaxed), 7);
    }

    #[test]
    fn prefetch_changes_nothing_it_touches() {
        let mut block: Vec<u8> = (0..=255).cycle().take(4096).collect();
        let before = block.clone();
        for at in [0, 1, 63, 64, 4000, 4095, 4096] {
            prefetch(&block[at..]);
        }
        prefetch(&[]);
        assert_eq!(block, before);
        block[4095] = 1;
        prefetch(&block[4095..]);
        assert_eq!(block[4095], 1, "a write after a prefetch is read back");
    }
}
