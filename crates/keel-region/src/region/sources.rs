//! Where a region's cells come from: store-file blocks straight from the file or through the
//! shared block cache, and memstore scanners as merge sources.

use std::sync::Arc;

use bytes::Bytes;
use keel_blockcache::BlockCacheExt;
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
        // The cache's own single-flight load, through the trait object.
        let mut missed = false;
        let block = self.cache.get_or_load(key, self.in_memory, || {
            missed = true;
            event!(TRACE, file = key.file_id, offset = key.offset, "block read");
            load()
        });
        let outcome = if missed {
            "block cache miss"
        } else {
            "block cache hit"
        };
        event!(TRACE, file = key.file_id, offset = key.offset, "{outcome}");
        let _ = outcome;
        block
    }

    fn kept(&self, key: keel_storefile::BlockKey) -> Option<Bytes> {
        // Not a caching lookup: a miss here is read and not cached, so it must not lower the
        // caching hit ratio.
        self.cache.get(&key, false, false)
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

    fn keeps_blocks(&self) -> bool {
        false
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
    fn next_into(&mut self, out: &mut Vec<Cell>) -> keel_storefile::Result<()> {
        self.0.next_into(out);
        Ok(())
    }
    fn skip(&mut self) -> keel_storefile::Result<()> {
        self.0.pass_next();
        Ok(())
    }
    fn take_row(
        &mut self,
        row: &[u8],
        out: &mut Vec<Cell>,
        decide: &mut keel_storefile::Decide<'_>,
    ) -> keel_storefile::Result<()> {
        self.0.take_row(row, out, decide);
        Ok(())
    }
    fn seek(&mut self, key: &CellKey) -> keel_storefile::Result<()> {
        self.0.seek(key);
        Ok(())
    }
    fn reseek(&mut self, key: &CellKey) -> keel_storefile::Result<()> {
        self.0.reseek(key);
        Ok(())
    }
    fn seek_before_row(&mut self, row: Option<&[u8]>) -> keel_storefile::Result<()> {
        self.0.seek_before_row(row);
        Ok(())
    }
}
