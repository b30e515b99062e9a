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

#[cfg(test)]
mod tests {
    use super::prefetch;

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
