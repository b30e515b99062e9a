//! Flush: memstore snapshots to store files, committed in one manifest update.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use keel_storefile::{StoreFileReader, StoreFileWriter};

use super::{CLOSED, FILE_IDS, Region};
use crate::error::RegionError;
use crate::trace::span;

impl Region {
    /// Asks whoever flushes this region (the server's flusher) to do it soon.
    pub fn request_flush(&self) {
        self.flush_requested.store(true, Ordering::Release);
        self.flush_cause.note();
        self.account.wake();
    }

    /// Asks the flusher to flatten `memstore` when its active segment has passed the in-memory
    /// flush size: a few loads per write, and a wake-up once per request.
    pub(super) fn note_active_size(&self, memstore: &keel_memstore::MemStore) {
        let Some(threshold) = self.limits.in_memory_flush_size(self.stores.len()) else {
            return;
        };
        let size = memstore.active_size();
        if size.data_bytes + size.overhead_bytes >= threshold
            && !self.flatten_requested.swap(true, Ordering::AcqRel)
        {
            self.account.wake();
        }
    }

    /// Whether an in-memory flush was asked for and has not happened yet.
    pub fn flatten_requested(&self) -> bool {
        self.flatten_requested.load(Ordering::Acquire)
    }

    /// Flattens every store whose active segment has passed the in-memory flush size
    /// (`RegionLimits::in_memory_compaction`; keel-memstore's `MemStore::flatten`): what the
    /// server's flusher does when [`Region::flatten_requested`]. A region opened on its own is
    /// flattened by its owner, as it is flushed by its owner. Returns the stores flattened.
    pub fn flatten_memstores(&self) -> usize {
        self.flatten_requested.store(false, Ordering::Release);
        let Some(threshold) = self.limits.in_memory_flush_size(self.stores.len()) else {
            return 0;
        };
        let flattened = self
            .stores
            .values()
            .filter(|store| {
                let size = store.memstore.active_size();
                size.data_bytes + size.overhead_bytes >= threshold && store.memstore.flatten()
            })
            .count();
        self.counters
            .in_memory_flushes
            .fetch_add(flattened as u64, Ordering::Relaxed);
        flattened
    }

    /// Whether a flush was asked for and has not happened yet.
    pub fn flush_requested(&self) -> bool {
        self.flush_requested.load(Ordering::Acquire)
    }

    /// Whether a due flush should wait because a family has `blocking_store_files` files or
    /// more (HBase delays it up to `blocking_wait` while compaction catches up). Starts the
    /// wait's clock on the first call; a flush ends it.
    pub(crate) fn flush_should_wait(&self) -> bool {
        if !self.too_many_store_files() {
            return false;
        }
        let mut since = self.flush_delayed_since.lock();
        let started = *since.get_or_insert_with(Instant::now);
        let wait = started.elapsed() < self.limits.blocking_wait;
        if wait {
            self.counters.flush_delays.fetch_add(1, Ordering::Relaxed);
        }
        wait
    }

    /// Writes every memstore to a new store file per family and commits them in one manifest
    /// update, then lets the WAL drop what they hold. Returns the flushed sequence id.
    pub fn flush(&self) -> Result<u64, RegionError> {
        self.flush_paced(None)
    }

    /// [`Region::flush`], writing its store files no faster than `pace` allows.
    pub(super) fn flush_paced(
        &self,
        pace: Option<&crate::limits::Throttle>,
    ) -> Result<u64, RegionError> {
        let _span = span!(INFO, "region.flush", region = self.id);
        self.flush_cause.follow();
        let _one_at_a_time = self.flushing.lock();
        if self.state.load(Ordering::Acquire) == CLOSED {
            // Closed after a final flush: nothing is left, and its directory may be gone.
            return Ok(self.flushed_sequence());
        }
        let (snapshots, flush_seq) = {
            let _exclusive = self.updates.write();
            let snapshots: Vec<_> = self
                .stores
                .iter()
                .map(|(name, store)| (name.clone(), store.memstore.snapshot()))
                .collect();
            let mut pending = self.snapshot_bytes.lock();
            if pending.is_none() {
                // A failed flush leaves its snapshot pending and the memstore hands the same one
                // back; only a fresh snapshot takes the active segment's charges.
                *pending = Some(self.active_bytes.swap(0, Ordering::Relaxed));
            }
            (snapshots, self.mvcc.write_point())
        };
        let mut written = Vec::new();
        for (name, snapshot) in &snapshots {
            let store = &self.stores[name];
            if snapshot.size().cell_count == 0 {
                continue;
            }
            let number = self.next_file_id.fetch_add(1, Ordering::Relaxed);
            let file_name = format!("{number:020}.ksf");
            let path = store.dir.join(&file_name);
            let mut writer =
                StoreFileWriter::create(Arc::clone(&self.fs), &path, store.files_options.clone())?;
            let mut run = pace.map(crate::limits::Throttle::start);
            for cell in snapshot.scanner() {
                writer.append(&cell)?;
                if let Some(run) = &mut run {
                    let bytes = crate::limits::charge(std::slice::from_ref(&cell));
                    // A pace is never cancelled: a closing region's flush must finish.
                    let _ = run.wrote(bytes, || 0.0);
                }
            }
            writer.finish()?;
            written.push((name.clone(), file_name, path));
        }
        let mut flushed_bytes = 0;
        let mut manifest = self.manifest.lock();
        let mut next = manifest.clone();
        next.flushed = next.flushed.max(flush_seq);
        next.next_file = self.next_file_id.load(Ordering::Relaxed);
        for (name, file_name, _) in &written {
            next.files.push((name.clone(), file_name.clone()));
        }
        next.store(&*self.fs, &self.dir)?;
        *manifest = next;
        drop(manifest);
        let mut readers = HashMap::new();
        for (name, _, path) in written {
            let reader = StoreFileReader::open(
                &*self.fs,
                &path,
                FILE_IDS.fetch_add(1, Ordering::Relaxed),
                Arc::clone(&self.stores[&name].source),
            )?;
            flushed_bytes += reader.info().file_len;
            readers.insert(name, Arc::new(reader));
        }
        for (name, snapshot) in snapshots {
            // One step under the store's file-list lock, which reads hold while they take their
            // sources: a read sees the snapshot's cells in the memstore or in the new file,
            // never in neither (nor in both).
            let store = &self.stores[&name];
            let mut files = store.files.write();
            if let Some(reader) = readers.remove(&name) {
                files.push(reader);
            }
            let _ = store.memstore.clear_snapshot(snapshot.id());
        }
        if let Some(charged) = self.snapshot_bytes.lock().take() {
            self.account.release(charged);
        }
        self.flush_requested.store(false, Ordering::Release);
        *self.flush_delayed_since.lock() = None;
        self.counters.flushes.fetch_add(1, Ordering::Relaxed);
        self.counters
            .flushed_bytes
            .fetch_add(flushed_bytes, Ordering::Relaxed);
        self.wal.mark_flushed(self.id, flush_seq)?;
        Ok(flush_seq)
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;

    use keel_fs::{FaultFs, FileSystem};
    use keel_wal::{Wal, WalOptions};

    use super::*;
    use crate::{FamilyOptions, RegionLimits};

    #[test]
    fn the_pipeline_limit_reaches_every_stores_memstore() {
        let fs: Arc<dyn FileSystem> = Arc::new(FaultFs::new());
        let wal = Wal::open(Arc::clone(&fs), Path::new("/wal"), WalOptions::default());
        let families = vec![FamilyOptions::new("a"), FamilyOptions::new("b")];
        let region = Region::open(
            fs,
            Path::new("/r"),
            Arc::new(wal.expect("wal")),
            1,
            families,
        )
        .expect("region");
        let limits = RegionLimits {
            pipeline_segments_limit: 5,
            flatten_copies: false,
            ..RegionLimits::default()
        };
        let region = region.with_limits(limits);
        assert_eq!(region.stores.len(), 2);
        for store in region.stores.values() {
            assert_eq!(store.memstore.options().pipeline_segments_limit, 5);
            assert!(!store.memstore.options().copy_on_flatten);
        }
    }
}
