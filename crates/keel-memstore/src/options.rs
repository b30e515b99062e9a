//! Memstore and chunk-pool options, with HBase's defaults.

/// Default [`MemStoreOptions::chunk_size`]: 2 MiB, HBase `hbase.hregion.memstore.mslab.chunksize`.
pub const DEFAULT_CHUNK_SIZE: usize = 2 * 1024 * 1024;

/// Default [`MemStoreOptions::max_copied_cell`]: 256 KiB, HBase
/// `hbase.hregion.memstore.mslab.max.allocation`.
pub const DEFAULT_MAX_COPIED_CELL: usize = 256 * 1024;

/// How a memstore keeps its cells' bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemStoreOptions {
    /// Copy cell bytes into shared chunks (MSLAB) instead of one heap allocation per cell
    /// (HBase `hbase.hregion.memstore.mslab.enabled`, default true).
    pub mslab: bool,
    /// Bytes per chunk (HBase `hbase.hregion.memstore.mslab.chunksize`, 2 MiB).
    pub chunk_size: usize,
    /// Cells whose row, family, qualifier and value together exceed this get their own heap
    /// allocation even with MSLAB on (HBase `hbase.hregion.memstore.mslab.max.allocation`,
    /// 256 KiB); it must not exceed `chunk_size`.
    pub max_copied_cell: usize,
}

impl Default for MemStoreOptions {
    fn default() -> MemStoreOptions {
        MemStoreOptions {
            mslab: true,
            chunk_size: DEFAULT_CHUNK_SIZE,
            max_copied_cell: DEFAULT_MAX_COPIED_CELL,
        }
    }
}
