//! Memstore and chunk-pool options, with HBase's defaults.

/// Default [`MemStoreOptions::chunk_size`]: 2 MiB, HBase `hbase.hregion.memstore.mslab.chunksize`.
pub const DEFAULT_CHUNK_SIZE: usize = 2 * 1024 * 1024;

/// Default [`MemStoreOptions::max_copied_cell`]: 256 KiB, HBase
/// `hbase.hregion.memstore.mslab.max.allocation`.
pub const DEFAULT_MAX_COPIED_CELL: usize = 256 * 1024;

/// Default [`MemStoreOptions::pipeline_segments_limit`]: 2, HBase
/// `hbase.hregion.compacting.pipeline.segments.limit`.
pub const DEFAULT_PIPELINE_SEGMENTS_LIMIT: usize = 2;

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
    /// How many segments an in-memory flush ([`crate::MemStore::flatten`]) lets the pipeline
    /// hold: with more, it merges them all into one flat segment; otherwise it flattens only
    /// the segment it froze (HBase `hbase.hregion.compacting.pipeline.segments.limit`, 2;
    /// policy BASIC). At least 1: with 1, every in-memory flush merges everything.
    pub pipeline_segments_limit: usize,
    /// An in-memory flush copies the cells it flattens into fresh chunks, in key order, and
    /// gives the old chunks back to the pool (with MSLAB on; cells with their own allocation
    /// stay where they are). Keel's own switch, default true: HBase's BASIC flattening leaves
    /// cells where the writes put them (its EAGER compaction copies them, and also drops
    /// versions, which Keel does not). A scan then reads neighbouring rows from neighbouring
    /// bytes, and a short scan touches one or two chunks' reference counts instead of one per
    /// row, which readers on other cores bounced between them.
    pub copy_on_flatten: bool,
}

impl Default for MemStoreOptions {
    fn default() -> MemStoreOptions {
        MemStoreOptions {
            mslab: true,
            chunk_size: DEFAULT_CHUNK_SIZE,
            max_copied_cell: DEFAULT_MAX_COPIED_CELL,
            pipeline_segments_limit: DEFAULT_PIPELINE_SEGMENTS_LIMIT,
            copy_on_flatten: true,
        }
    }
}
