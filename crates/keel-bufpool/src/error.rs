//! [`PoolError`]: what an allocation can refuse.

/// Why a buffer was not allocated.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PoolError {
    /// The request is larger than [`crate::PoolOptions::max_allocation`]: a corrupt or hostile
    /// length, refused before any memory is touched.
    #[error("request of {len} bytes exceeds the {max}-byte allocation limit")]
    TooLarge {
        /// The length asked for.
        len: usize,
        /// The limit in force.
        max: usize,
    },
}
