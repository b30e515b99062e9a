//! The block index: entries (separator key, offset, on-disk length) in index blocks whose
//! payload starts with an offset table, so a lookup decodes only the O(log n) keys it compares.
//! One entry per data block at the bottom; levels are added until the root fits one block.

use std::cmp::Ordering;
use std::path::Path;

use bytes::{BufMut, Bytes};
use keel_cell::{CellKey, CellType, KeyParts};

use crate::error::Result;
use crate::format::{Cursor, get_key, put_key};

/// One index entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct IndexEntry {
    /// Every key in the block (or sub-tree) is ≥ this key, and > every key before it.
    pub(crate) key: CellKey,
    pub(crate) offset: u64,
    pub(crate) len: u32,
}

/// Where a block is in its file: what a read of it needs from an index entry, without the key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BlockAt {
    pub(crate) offset: u64,
    pub(crate) len: u32,
}

/// Serializes entries: count (u32), then one u32 offset per entry (relative to the entries),
/// then the entries.
pub(crate) fn encode_index_block(entries: &[IndexEntry]) -> Vec<u8> {
    let mut body = Vec::new();
    let mut offsets = Vec::with_capacity(entries.len());
    for e in entries {
        offsets.push(body.len() as u32);
        put_key(&mut body, &e.key);
        body.put_u64_le(e.offset);
        body.put_u32_le(e.len);
    }
    let mut out = Vec::with_capacity(4 + 4 * entries.len() + body.len());
    out.put_u32_le(entries.len() as u32);
    for o in offsets {
        out.put_u32_le(o);
    }
    out.put_slice(&body);
    out
}

/// A parsed-on-demand index block.
#[derive(Debug, Clone)]
pub(crate) struct IndexBlock {
    payload: Bytes,
    count: usize,
    offset: u64,
}

impl IndexBlock {
    pub(crate) fn parse(path: &Path, offset: u64, payload: Bytes) -> Result<IndexBlock> {
        let mut c = Cursor::new(&payload, path, offset);
        let count = c.u32()? as usize;
        if count == 0 || count.saturating_mul(4) > payload.len() {
            return Err(c.fail("index block entry count"));
        }
        Ok(IndexBlock {
            payload,
            count,
            offset,
        })
    }

    pub(crate) fn len(&self) -> usize {
        self.count
    }

    /// A cursor at entry `i`'s key.
    fn at_entry<'a>(&'a self, path: &'a Path, i: usize) -> Result<Cursor<'a>> {
        let table = 4 + 4 * self.count;
        let mut c = Cursor::new(&self.payload, path, self.offset);
        c.pos = 4 + 4 * i;
        let rel = c.u32()? as usize;
        c.pos = table
            .checked_add(rel)
            .ok_or_else(|| c.fail("index entry offset"))?;
        Ok(c)
    }

    /// Where entry `i`'s block is, read past its key in place: a walk down the index needs
    /// only this, and building the key would copy its row, family and qualifier.
    pub(crate) fn block_at(&self, path: &Path, i: usize) -> Result<BlockAt> {
        let mut c = self.at_entry(path, i)?;
        let row_len = c.u16()? as usize;
        c.take(row_len)?;
        let family_len = c.u8()? as usize;
        c.take(family_len)?;
        let qualifier_len = c.u32()? as usize;
        c.take(qualifier_len)?;
        c.u64()?;
        if CellType::from_code(c.u8()?).is_none() {
            return Err(c.fail("unknown cell type"));
        }
        c.u64()?;
        let offset = c.u64()?;
        let len = c.u32()?;
        Ok(BlockAt { offset, len })
    }

    /// How entry `i`'s key compares with `key`, read in place (no key is built).
    pub(crate) fn compare_entry(&self, path: &Path, i: usize, key: &CellKey) -> Result<Ordering> {
        let mut c = self.at_entry(path, i)?;
        let row_len = c.u16()? as usize;
        let row = c.take(row_len)?;
        let family_len = c.u8()? as usize;
        let family = c.take(family_len)?;
        let qualifier_len = c.u32()? as usize;
        let qualifier = c.take(qualifier_len)?;
        let timestamp = c.u64()? as i64;
        let type_code = c.u8()?;
        let sequence_id = c.u64()?;
        if CellType::from_code(type_code).is_none() {
            return Err(c.fail("unknown cell type"));
        }
        let parts = KeyParts {
            row,
            family,
            qualifier,
            timestamp,
            type_code,
            sequence_id,
        };
        Ok(parts.cmp_key(key))
    }

    pub(crate) fn entry(&self, path: &Path, i: usize) -> Result<IndexEntry> {
        let mut c = self.at_entry(path, i)?;
        let key = get_key(&mut c)?;
        let offset = c.u64()?;
        let len = c.u32()?;
        Ok(IndexEntry { key, offset, len })
    }

    /// The index of the entry whose sub-tree may hold the first key ≥ `key`: the last entry
    /// whose separator is ≤ `key`, or the first entry when `key` precedes them all.
    pub(crate) fn search(&self, path: &Path, key: &CellKey) -> Result<usize> {
        let (mut lo, mut hi) = (0usize, self.count);
        // Invariant: entries before lo are ≤ key; entries at or after hi are > key.
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.compare_entry(path, mid, key)? {
                Ordering::Less | Ordering::Equal => lo = mid + 1,
                Ordering::Greater => hi = mid,
            }
        }
        Ok(lo.saturating_sub(1))
    }
}

/// A separator for the block starting with `first` after a block ending with `prev_last`: the
/// first-on-row key of the shortest prefix of `first`'s row that sorts after `prev_last`'s row,
/// or `first` itself when both are on one row.
pub(crate) fn separator(prev_last: &CellKey, first: &CellKey) -> CellKey {
    if prev_last.row() >= first.row() {
        return first.clone();
    }
    let row = first.row_bytes();
    for len in 1..=row.len() {
        if row[..len] > prev_last.row()[..] {
            return CellKey::first_on_row(row.slice(..len));
        }
    }
    first.clone()
}
