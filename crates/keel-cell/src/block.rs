//! [`BlockKey`]: the identity of a stored block, shared by the crate that reads blocks
//! (keel-storefile) and the crate that caches them (keel-blockcache), so the two meet on one
//! type without depending on each other.

/// A block's identity: the store file it belongs to (an id unique among open files, chosen by
/// whoever opens them) and its byte offset there.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BlockKey {
    /// The store file's id.
    pub file_id: u64,
    /// The block's offset in the file.
    pub offset: u64,
}
