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
    /// For the root, which lives as long as its reader: each entry's row as a number, so a
    /// search compares numbers in one dense array and decodes an entry only on a tie.
    rows: Option<std::sync::Arc<RowPrefixes>>,
}

/// The entries' rows, past the bytes every one of them starts with, as big-endian numbers of
/// their next eight bytes ([`crate::row_starts`] does the same within a block). Numbers order
/// as the rows do wherever they differ; equal numbers are decided by the entries themselves.
/// A get of a row in a file of a thousand blocks searched the root entry by entry, a cache
/// miss and a decode apiece (8% of YCSB C with ten columns a record).
#[derive(Debug)]
struct RowPrefixes {
    shared: Vec<u8>,
    prefixes: Vec<u64>,
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
            rows: None,
        })
    }

    /// This block with its rows as numbers ([`RowPrefixes`]): for a block kept and searched
    /// many times (the root). Fails as the entries' decoding fails.
    pub(crate) fn with_row_prefixes(mut self, path: &Path) -> Result<IndexBlock> {
        let rows: Vec<Bytes> = (0..self.count)
            .map(|i| self.entry(path, i).map(|e| e.key.row_bytes()))
            .collect::<Result<_>>()?;
        let shared_len = rows.iter().skip(1).fold(rows[0].len(), |shared, row| {
            let same = rows[0][..shared]
                .iter()
                .zip(row.iter())
                .take_while(|(a, b)| a == b)
                .count();
            shared.min(same)
        });
        let prefixes = rows
            .iter()
            .map(|row| crate::row_starts::row_prefix(&row[shared_len..]))
            .collect();
        self.rows = Some(std::sync::Arc::new(RowPrefixes {
            shared: rows[0][..shared_len].to_vec(),
            prefixes,
        }));
        Ok(self)
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
        let sought = match &self.rows {
            None => None,
            Some(rows) => {
                // Every entry's row starts with the shared bytes: a row that does not sorts
                // before or after all of them.
                let shared = &rows.shared[..];
                let row = key.row();
                let head = &row[..row.len().min(shared.len())];
                match keel_cell::compare_bytes(head, &shared[..head.len()]) {
                    Ordering::Less => return Ok(0),
                    Ordering::Greater => return Ok(self.count - 1),
                    // A proper prefix of the shared bytes sorts before every entry's row.
                    Ordering::Equal if row.len() < shared.len() => return Ok(0),
                    Ordering::Equal => {}
                }
                Some((
                    &rows.prefixes,
                    crate::row_starts::row_prefix(&row[shared.len()..]),
                ))
            }
        };
        // Invariant: entries before lo are ≤ key; entries at or after hi are > key.
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let order = match sought {
                Some((prefixes, sought)) if prefixes[mid] != sought => prefixes[mid].cmp(&sought),
                _ => self.compare_entry(path, mid, key)?,
            };
            match order {
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A row from a few bytes that collide often, after a common prefix.
    fn row_strategy() -> impl Strategy<Value = Vec<u8>> {
        prop::collection::vec(prop::sample::select(vec![0u8, b'a', b'b', 0xFF]), 0..12)
    }

    fn key(row: &[u8], qualifier: u8, timestamp: i64) -> CellKey {
        CellKey::new(
            Bytes::copy_from_slice(row),
            Bytes::from_static(b"f"),
            Bytes::copy_from_slice(&[qualifier]),
            timestamp,
            CellType::Put,
        )
        .expect("test key")
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// The root's search by row numbers lands on the entry a search decoding every entry
        /// finds: with rows sharing a prefix or not, rows shorter than it, ties within eight
        /// bytes past it, and equal rows with other columns and timestamps.
        #[test]
        fn a_search_by_row_numbers_matches_the_plain_search(
            common in prop::sample::select(vec![&b""[..], b"u", b"user0000"]),
            rows in prop::collection::vec((row_strategy(), 0u8..3, 0i64..3), 1..40),
            sought in prop::collection::vec((any::<bool>(), row_strategy(), 0u8..3, 0i64..3), 1..20),
        ) {
            let mut keys: Vec<CellKey> = rows
                .iter()
                .map(|(row, q, ts)| key(&[common, &row[..]].concat(), *q, *ts))
                .collect();
            keys.sort();
            keys.dedup();
            let entries: Vec<IndexEntry> = keys
                .into_iter()
                .enumerate()
                .map(|(i, key)| IndexEntry { key, offset: i as u64, len: 1 })
                .collect();
            let path = Path::new("index");
            let payload = Bytes::from(encode_index_block(&entries));
            let plain = IndexBlock::parse(path, 0, payload.clone()).expect("parse");
            let numbered = IndexBlock::parse(path, 0, payload)
                .expect("parse")
                .with_row_prefixes(path)
                .expect("rows");
            for (prefixed, row, q, ts) in sought {
                let row = if prefixed { [common, &row[..]].concat() } else { row };
                for key in [
                    key(&row, q, ts),
                    CellKey::first_on_row(Bytes::from(row.clone())),
                    CellKey::last_on_row(Bytes::from(row.clone())),
                ] {
                    prop_assert_eq!(
                        numbered.search(path, &key).expect("search"),
                        plain.search(path, &key).expect("search"),
                        "{:?}", key
                    );
                }
            }
        }
    }
}
