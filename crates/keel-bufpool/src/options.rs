//! [`PoolOptions`]: the pool's sizes, with HBase's defaults.

/// Default [`PoolOptions::max_allocation`]: 256 MiB, HBase's `hbase.ipc.max.request.size`.
pub const DEFAULT_MAX_ALLOCATION: usize = 256 * 1024 * 1024;

/// How a [`crate::BufferPool`] is sized.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolOptions {
    /// Bytes per pooled buffer. HBase `hbase.server.allocator.buffer.size`, default 65 KiB
    /// (66 560), so that a "64 KiB block plus its last cell" fits one buffer (HBASE-22483).
    pub buffer_size: usize,
    /// Most buffers the pool ever creates. HBase `hbase.server.allocator.max.buffer.count`,
    /// default handlers × ⌊2 MiB / buffer size⌋ × 2 = 30 × 31 × 2 = 1 860 (≈ 118 MiB).
    pub max_buffers: usize,
    /// Requests (and request tails) smaller than this go to the heap instead of taking a whole
    /// pooled buffer. HBase `hbase.server.allocator.minimal.allocate.size`, default
    /// buffer size / 6.
    pub min_allocate_size: usize,
    /// Create every buffer when the pool is built instead of on first use.
    pub preallocate: bool,
    /// Largest single allocation accepted; larger requests get [`crate::PoolError::TooLarge`]
    /// instead of an attempt to allocate. HBase `hbase.ipc.max.request.size`, 256 MiB.
    pub max_allocation: usize,
}

impl Default for PoolOptions {
    fn default() -> Self {
        PoolOptions::with_buffer_size(65 * 1024)
    }
}

impl PoolOptions {
    /// HBase's defaults for `buffer_size`: the maximum count keeps HBase's 2 MiB per handler
    /// (30 handlers, × 2), the minimum allocation is a sixth of a buffer, created lazily.
    pub fn with_buffer_size(buffer_size: usize) -> PoolOptions {
        let buffer_size = buffer_size.max(1);
        let per_handler = ((2 * 1024 * 1024) / buffer_size).max(1);
        PoolOptions {
            buffer_size,
            max_buffers: 30 * per_handler * 2,
            min_allocate_size: buffer_size / 6,
            preallocate: false,
            max_allocation: DEFAULT_MAX_ALLOCATION,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_match_hbase() {
        let options = PoolOptions::default();
        assert_eq!(options.buffer_size, 66_560);
        assert_eq!(options.max_buffers, 1_860);
        assert_eq!(options.min_allocate_size, 11_093);
        assert!(!options.preallocate);
        assert_eq!(options.max_allocation, 268_435_456);
    }
}
