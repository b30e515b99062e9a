//! Where a region's cells come from: store-file blocks straight from the file or through the
//! shared block cache, and memstore scanners as merge sources.

use std::sync::Arc;

use bytes::Bytes;
use keel_cell::{Cell, CellKey};
use keel_memstore::MemStoreScanner;
use keel_storefile::KeyValueScanner;

use crate::trace::event;

/// keel-storefile's block source over a keel-blockcache cache.
#[derive(Debug)]
pub(super) struct CachedSource {
    pub(super) cache: Arc<dyn keel_blockcache::BlockCache>,
    pub(super) in_memory: bool,
}

impl keel_storefile::BlockSource for CachedSource {
    fn get_or_load(
        &self,
        key: keel_storefile::BlockKey,
        load: &mut dyn FnMut() -> keel_storefile::Result<Bytes>,
    ) -> keel_storefile::Result<Bytes> {
        let key = keel_blockcache::BlockKey {
            file_id: key.file_id,
            offset: key.offset,
        };
        // `BlockCache::get_or_load`'s single-flight load, through the trait object: look, take
        // the block's id lock, look again (not a second miss), load and cache.
        let mut missed = false;
        let block = match self.cache.get(&key, true, false) {
            Some(block) => Ok(block),
            None => {
                let _loading = self.cache.id_locks().write(&key);
                match self.cache.get(&key, true, true) {
                    Some(block) => Ok(block),
                    None => {
                        missed = true;
                        event!(TRACE, file = key.file_id, offset = key.offset, "block read");
                        load().inspect(|block| {
                            self.cache.insert(key, block.clone(), self.in_memory);
                        })
                    }
                }
            }
        };
        let outcome = if missed {
            "block cache miss"
        } else {
            "block cache hit"
        };
        event!(TRACE, file = key.file_id, offset = key.offset, "{outcome}");
        let _ = outcome;
        block
    }
}

/// keel-storefile's direct reads, with a trace event per block read.
#[derive(Debug)]
pub(super) struct TracedDirect;

impl keel_storefile::BlockSource for TracedDirect {
    fn get_or_load(
        &self,
        key: keel_storefile::BlockKey,
        load: &mut dyn FnMut() -> keel_storefile::Result<Bytes>,
    ) -> keel_storefile::Result<Bytes> {
        event!(TRACE, file = key.file_id, offset = key.offset, "block read");
        let _ = &key;
        load()
    }
}

/// A memstore scanner as a merge source.
pub(super) struct MemSource(pub(super) MemStoreScanner);

impl KeyValueScanner for MemSource {
    fn peek(&self) -> Option<&Cell> {
        self.0.peek()
    }
    fn next(&mut self) -> keel_storefile::Result<Option<Cell>> {
        Ok(Iterator::next(&mut self.0))
    }
    fn seek(&mut self, key: &CellKey) -> keel_storefile::Result<()> {
        self.0.seek(key);
        Ok(())
    }
}
