//! How readers get blocks: a [`BlockSource`] keyed by (file id, block offset). The default
//! [`DirectSource`] reads every time; a cache (keel-blockcache, plugged in by the region)
//! implements it so that only one thread loads a given block on a miss.

use std::fmt::Debug;

use bytes::Bytes;

use crate::error::Result;

/// Identifies a block across files: keel-cell's type, which keel-blockcache keys its caches by.
pub use keel_cell::BlockKey;

/// Where a reader gets a block's verified, decompressed, decoded payload.
pub trait BlockSource: Send + Sync + Debug {
    /// Returns the payload of block `key`, calling `load` (which reads, verifies and decodes the
    /// block) if the source does not have it. A caching source should make concurrent misses on
    /// one key wait for a single `load` (a "load once" hook), and must not cache a failed load.
    fn get_or_load(&self, key: BlockKey, load: &mut dyn FnMut() -> Result<Bytes>) -> Result<Bytes>;

    /// Whether blocks loaded through this source are kept for later reads (a cache). A data
    /// block loaded through a keeping source carries an index of its row starts, built once
    /// at load, which lets every later seek in it jump over whole rows; through a source that
    /// keeps nothing, building it would cost more than the one seek it serves. Default: true.
    fn keeps_blocks(&self) -> bool {
        true
    }

    /// Block `key` if the source holds it, loading and keeping nothing: for a read that
    /// passes over a file once (a compaction), which takes the blocks already kept and reads
    /// the others without pushing out the blocks that reads come back to (HBase's compaction
    /// scanners read with `cacheBlocks` off). Only a source that keeps blocks
    /// ([`BlockSource::keeps_blocks`]) is asked. Default: `None`.
    fn kept(&self, key: BlockKey) -> Option<Bytes> {
        let _ = key;
        None
    }
}

/// No cache: every request reads the file.
#[derive(Debug, Clone, Copy, Default)]
pub struct DirectSource;

impl BlockSource for DirectSource {
    fn get_or_load(&self, _: BlockKey, load: &mut dyn FnMut() -> Result<Bytes>) -> Result<Bytes> {
        load()
    }

    fn keeps_blocks(&self) -> bool {
        false
    }
}
