//! Row starts: an in-memory index inside each cached data block, so that a seek within the
//! block jumps over whole rows by binary search instead of walking every cell header before its
//! row.
//!
//! A 64 KiB block of ten-column YCSB rows holds about 600 cells; a get walked half of them, one
//! header (one cache line) each, and a profile of YCSB C put half its time in that walk. RocksDB
//! keeps restart points in its blocks for this; HBase walks. Keel builds the points when a
//! block is loaded into the cache (the file format is unchanged) and appends them to the cached
//! bytes: `cells | entries | shared | skip (u32 LE) | count (u32 LE)`, an entry being the offset
//! (u32 LE) of a cell that starts a row, at least [`SPACING`] bytes after the previous one, and
//! eight bytes of that row (zero-padded, as a u64 LE): those after the `skip` bytes every row of
//! the block shares, which `shared` holds. The index is at most 12/256 of the block (plus at
//! most [`MAX_SKIP`] shared bytes) and the walk after a jump is at most about [`SPACING`] bytes
//! plus one row. The binary search compares the sought row's eight bytes with the entries', all
//! in the index's few cache lines, and reads a row in the block (a cache miss per probe: a third
//! of the seek's time before) only when they are equal.
//!
//! The shared prefix is skipped because a block's rows are neighbours: YCSB's keys (`user`
//! and 19 digits) share their first five to nine bytes within a block, so the first eight bytes
//! decided almost no probe there. It is kept beside the entries, not read from the block's
//! first row: that read was a cache miss at every seek.
//!
//! A seek lands on the start of the row it seeks when that row's start is recorded (with rows
//! of a kilobyte or more, every row's is), not on the start before it: the row read to break
//! the tie is the one the seek reads next, and the rows in between are not walked.

use bytes::Bytes;

/// The least distance between two recorded row starts.
pub(crate) const SPACING: usize = 256;

const COUNT_LEN: usize = 4;

/// The trailer's length of the shared prefix.
const SKIP_LEN: usize = 4;

/// An entry: a u32 offset and a u64 row prefix.
const ENTRY_LEN: usize = 12;

/// The most shared bytes the index keeps and skips: rows sharing more tie on more prefixes,
/// which costs reads of rows, never a wrong jump.
pub(crate) const MAX_SKIP: usize = 64;

/// The first eight bytes of `row`, zero-padded, as a number that orders as the bytes do. If two
/// rows' prefixes differ, the rows differ the same way (a zero pad is below any byte a longer row
/// has there, and a shorter row is a prefix of the longer up to that point); if they are equal,
/// the rows must be compared.
#[inline]
pub(crate) fn row_prefix(row: &[u8]) -> u64 {
    let mut bytes = [0u8; 8];
    let n = row.len().min(8);
    bytes[..n].copy_from_slice(&row[..n]);
    u64::from_be_bytes(bytes)
}

/// The offset and row prefix of entry `i`.
#[inline]
fn entry(starts: &[u8], i: usize) -> (usize, u64) {
    let at = i * ENTRY_LEN;
    let mut offset = [0u8; 4];
    offset.copy_from_slice(&starts[at..at + 4]);
    let mut prefix = [0u8; 8];
    prefix.copy_from_slice(&starts[at + 4..at + ENTRY_LEN]);
    (
        u32::from_le_bytes(offset) as usize,
        u64::from_le_bytes(prefix),
    )
}

/// How many leading bytes every row of the block shares (the entries' prefixes follow them).
fn skip_of(starts: &[u8]) -> usize {
    let Some(at) = starts.len().checked_sub(SKIP_LEN) else {
        return 0;
    };
    let mut skip = [0u8; SKIP_LEN];
    skip.copy_from_slice(&starts[at..]);
    u32::from_le_bytes(skip) as usize
}

/// The entries in `starts` (as [`split`] returns them).
fn entry_count(starts: &[u8]) -> usize {
    starts.len().saturating_sub(SKIP_LEN + skip_of(starts)) / ENTRY_LEN
}

/// The bytes every row of the block starts with, `skip_of(starts)` of them.
fn shared_of(starts: &[u8]) -> &[u8] {
    let at = entry_count(starts) * ENTRY_LEN;
    starts.get(at..at + skip_of(starts)).unwrap_or_default()
}

/// The offsets recorded in `starts` (as [`split`] returns them), in order.
#[cfg(test)]
pub(crate) fn offsets(starts: &[u8]) -> Vec<usize> {
    (0..entry_count(starts))
        .map(|i| entry(starts, i).0)
        .collect()
}

/// `cells` (a plain block) with its row starts appended. Only well-formed cell headers are
/// walked: at a damaged one the index stops, and the decode that reaches it reports the damage.
pub(crate) fn with_row_starts(block: Bytes) -> Bytes {
    let cells = &block[..];
    let mut starts: Vec<(u32, std::ops::Range<usize>)> = Vec::new();
    let mut pos = 0;
    let mut first_row: Option<std::ops::Range<usize>> = None;
    let mut last_row: Option<std::ops::Range<usize>> = None;
    let mut last_start = 0;
    while let Some((row, end)) = cell_row_at(cells, pos) {
        let new_row = last_row
            .as_ref()
            .is_none_or(|last| cells[last.clone()] != cells[row.clone()]);
        if new_row && pos >= last_start + SPACING {
            // A plain block is far below 4 GiB (its length is a u32 on disk).
            starts.push((pos as u32, row.clone()));
            last_start = pos;
        }
        first_row.get_or_insert_with(|| row.clone());
        last_row = Some(row);
        pos = end;
    }
    // The rows walked are sorted, so every one shares what the first and the last share.
    let shared = match (first_row, last_row) {
        (Some(first), Some(last)) => {
            let skip = cells[first.clone()]
                .iter()
                .zip(&cells[last])
                .take_while(|(a, b)| a == b)
                .count()
                .min(MAX_SKIP);
            first.start..first.start + skip
        }
        _ => 0..0,
    };
    let skip = shared.len();
    let mut index = Vec::with_capacity(starts.len() * ENTRY_LEN + skip + SKIP_LEN + COUNT_LEN);
    for (offset, row) in &starts {
        index.extend_from_slice(&offset.to_le_bytes());
        index.extend_from_slice(&row_prefix(&cells[row.clone()][skip..]).to_le_bytes());
    }
    index.extend_from_slice(&cells[shared]);
    // At most `MAX_SKIP`, so it fits.
    index.extend_from_slice(&(skip as u32).to_le_bytes());
    index.extend_from_slice(&(starts.len() as u32).to_le_bytes());
    // Appended in place when the block's buffer is this `Bytes`' alone and has the room (the
    // reader leaves [`max_len`] spare); copied with the cells into a new one otherwise.
    match block.try_into_mut() {
        Ok(mut cells) if cells.capacity() - cells.len() >= index.len() => {
            cells.extend_from_slice(&index);
            cells.freeze()
        }
        Ok(cells) => joined(&cells, &index),
        Err(cells) => joined(&cells, &index),
    }
}

/// `cells` and then `index`, in a new buffer.
fn joined(cells: &[u8], index: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(cells.len() + index.len());
    out.extend_from_slice(cells);
    out.extend_from_slice(index);
    Bytes::from(out)
}

/// The most bytes [`with_row_starts`] appends to a block of `cells_len` bytes: an entry per
/// [`SPACING`] bytes and one more, the shared prefix, and the trailer.
pub(crate) fn max_len(cells_len: usize) -> usize {
    (cells_len / SPACING + 1) * ENTRY_LEN + MAX_SKIP + SKIP_LEN + COUNT_LEN
}

/// Where a cached block's parts lie: its cells are `..starts.start`, its row starts `starts`;
/// `None` if the trailer is not one [`with_row_starts`] wrote. Offsets, not slices: a reader
/// keeps the one `Bytes` the cache handed out, and every slice would be one more reference
/// count on the shared block.
pub(crate) fn bounds(block: &[u8]) -> Option<std::ops::Range<usize>> {
    let count_at = block.len().checked_sub(COUNT_LEN)?;
    let count = u32::from_le_bytes(block[count_at..].try_into().ok()?) as usize;
    let skip_at = count_at.checked_sub(SKIP_LEN)?;
    let skip = u32::from_le_bytes(block[skip_at..count_at].try_into().ok()?) as usize;
    let index_len = count
        .checked_mul(ENTRY_LEN)?
        .checked_add(skip)?
        .checked_add(SKIP_LEN)?;
    let starts_at = count_at.checked_sub(index_len)?;
    Some(starts_at..count_at)
}

/// Splits a cached block into its cells and its row starts ([`bounds`]).
#[cfg(test)]
fn split(block: &[u8]) -> Option<(&[u8], &[u8])> {
    let starts = bounds(block)?;
    Some((&block[..starts.start], &block[starts]))
}

/// Where a seek for a key of `row` may start: the last recorded row start whose row sorts at
/// or before `row`, if any. Every cell before it is of an earlier row.
pub(crate) fn seek_start(cells: &[u8], starts: &[u8], row: &[u8]) -> Option<usize> {
    let count = entry_count(starts);
    if count == 0 {
        return None;
    }
    // Every recorded row starts with the block's shared prefix: a row that does not sorts
    // before or after all of them.
    let shared = shared_of(starts);
    let skip = shared.len();
    let head = &row[..row.len().min(skip)];
    match keel_cell::compare_bytes(head, &shared[..head.len()]) {
        std::cmp::Ordering::Less => return None,
        std::cmp::Ordering::Greater => return Some(entry(starts, count - 1).0),
        // A proper prefix of the shared bytes sorts before every recorded row.
        std::cmp::Ordering::Equal if row.len() < skip => return None,
        std::cmp::Ordering::Equal => {}
    }
    let sought = row_prefix(&row[skip..]);
    let at_or_before = |i: usize| {
        let (offset, prefix) = entry(starts, i);
        match prefix.cmp(&sought) {
            std::cmp::Ordering::Less => true,
            std::cmp::Ordering::Greater => false,
            std::cmp::Ordering::Equal => cell_row_at(cells, offset)
                .is_some_and(|(this, _)| keel_cell::compare_bytes(&cells[this], row).is_le()),
        }
    };
    // Rows grow with offsets, so the starts at or before `row` are a prefix.
    let (mut lo, mut hi) = (0, count);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if at_or_before(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo.checked_sub(1).map(|i| entry(starts, i).0)
}

/// The byte range in `cells` of the last recorded row start's row: every key of a row before
/// it lies in this block, never the next. `None` when no row start is recorded.
pub(crate) fn last_recorded_row(cells: &[u8], starts: &[u8]) -> Option<std::ops::Range<usize>> {
    let count = entry_count(starts);
    let (offset, _) = entry(starts, count.checked_sub(1)?);
    cell_row_at(cells, offset).map(|(row, _)| row)
}

/// The byte range of the row of the (plain) cell encoded at `pos`, and where the next cell
/// starts; `None` at the block's end or on a damaged header.
pub(crate) fn cell_row_at(block: &[u8], pos: usize) -> Option<(std::ops::Range<usize>, usize)> {
    cell_coordinates_at(block, pos).map(|(c, end)| (c.row, end))
}

/// Where the row, family and qualifier of an encoded cell lie in its block.
pub(crate) struct Coordinates {
    pub(crate) row: std::ops::Range<usize>,
    pub(crate) family: std::ops::Range<usize>,
    pub(crate) qualifier: std::ops::Range<usize>,
}

/// The coordinates of the (plain) cell encoded at `pos`, read from its header alone, and where
/// the next cell starts; `None` at the block's end or on a damaged header.
pub(crate) fn cell_coordinates_at(block: &[u8], pos: usize) -> Option<(Coordinates, usize)> {
    let header = block.get(pos..pos.checked_add(keel_cell::CELL_HEADER_LEN)?)?;
    let row_len = usize::from(u16::from_le_bytes([header[0], header[1]]));
    let family_len = usize::from(header[2]);
    let qualifier_len = u32::from_le_bytes([header[4], header[5], header[6], header[7]]) as usize;
    let value_len = u32::from_le_bytes([header[8], header[9], header[10], header[11]]) as usize;
    let row_start = pos + header.len();
    let family_start = row_start.checked_add(row_len)?;
    let qualifier_start = family_start.checked_add(family_len)?;
    let value_start = qualifier_start.checked_add(qualifier_len)?;
    let end = value_start.checked_add(value_len)?;
    (end <= block.len()).then_some((
        Coordinates {
            row: row_start..family_start,
            family: family_start..qualifier_start,
            qualifier: qualifier_start..value_start,
        },
        end,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use keel_cell::Cell;

    fn block(rows: &[(&str, usize)]) -> Vec<u8> {
        let mut out = Vec::new();
        for (row, columns) in rows {
            for q in 0..*columns {
                let cell = Cell::builder(row.to_string(), "f")
                    .qualifier(format!("q{q:02}"))
                    .timestamp(1)
                    .value(vec![7u8; 40])
                    .build()
                    .expect("test setup");
                cell.encode(&mut out);
            }
        }
        out
    }

    #[test]
    fn row_starts_go_in_place_when_the_buffer_has_room_and_are_the_same_either_way() {
        let rows: Vec<(String, usize)> = (0..300)
            .map(|i| (format!("row{i:04}"), 1 + i % 5))
            .collect();
        let borrowed: Vec<(&str, usize)> = rows.iter().map(|(r, c)| (r.as_str(), *c)).collect();
        let cells = block(&borrowed);
        let copied = with_row_starts(Bytes::copy_from_slice(&cells));
        // As the reader leaves it: a payload sliced out of a buffer with the room after it.
        let mut buffer = Vec::with_capacity(8 + cells.len() + max_len(cells.len()));
        buffer.extend_from_slice(b"header..");
        buffer.extend_from_slice(&cells);
        let start = buffer.as_ptr() as usize;
        let payload = Bytes::from(buffer).slice(8..8 + cells.len());
        let in_place = with_row_starts(payload);
        assert_eq!(in_place, copied);
        assert_eq!(
            in_place.as_ptr() as usize,
            start + 8,
            "appended, not copied"
        );
        assert!(copied.len() - cells.len() <= max_len(cells.len()));
        // Shared with another holder, or without room: copied.
        let shared = Bytes::copy_from_slice(&cells);
        let other = shared.clone();
        assert_eq!(with_row_starts(shared), copied);
        assert_eq!(other, cells);
    }

    #[test]
    fn every_jump_lands_on_a_row_start_at_or_before_the_row_sought() {
        let rows: Vec<(String, usize)> =
            (0..60).map(|i| (format!("row{i:03}"), 1 + i % 7)).collect();
        let borrowed: Vec<(&str, usize)> = rows.iter().map(|(r, c)| (r.as_str(), *c)).collect();
        let cells = block(&borrowed);
        let cached = with_row_starts(Bytes::copy_from_slice(&cells));
        let (plain, starts) = split(&cached).expect("own trailer");
        assert_eq!(plain, &cells[..]);
        assert!(
            offsets(starts).len() >= cells.len() / SPACING / 2,
            "too few starts: {}",
            offsets(starts).len()
        );
        // Every cell boundary and its row, walked by headers.
        let mut boundaries = Vec::new();
        let mut pos = 0;
        while let Some((row, end)) = cell_row_at(plain, pos) {
            boundaries.push((pos, plain[row].to_vec()));
            pos = end;
        }
        for sought in [
            "row", "row000", "row017", "row0175", "row059", "row999", "zzz",
        ] {
            let sought = sought.as_bytes();
            match seek_start(plain, starts, sought) {
                None => {
                    for at in offsets(starts) {
                        let (row, _) = cell_row_at(plain, at).expect("a start is a cell");
                        assert!(&plain[row] > sought);
                    }
                }
                Some(at) => {
                    let i = boundaries
                        .iter()
                        .position(|(pos, _)| *pos == at)
                        .expect("a jump lands on a cell boundary");
                    assert!(boundaries[i].1.as_slice() <= sought);
                    assert!(
                        i == 0 || boundaries[i - 1].1 != boundaries[i].1,
                        "a row's first cell"
                    );
                }
            }
        }
    }

    /// Rows that tie on their first eight bytes, and short rows with zero bytes, where the
    /// prefixes cannot decide and the rows in the block must be read: the jump must be the
    /// last recorded start at or before the row sought, exactly as comparing whole rows finds
    /// it.
    #[test]
    fn rows_that_share_their_first_eight_bytes_are_compared_whole() {
        let mut names: Vec<Vec<u8>> = (0..40)
            .map(|i| format!("com.example/page{i:03}").into_bytes())
            .collect();
        names.extend([
            b"ab".to_vec(),
            b"ab\0".to_vec(),
            b"ab\0\x01".to_vec(),
            b"b".to_vec(),
        ]);
        names.sort();
        let cells = encode_rows(&names, 6, 30);
        let cached = with_row_starts(Bytes::copy_from_slice(&cells));
        let (plain, starts) = split(&cached).expect("own trailer");
        let recorded = offsets(starts);
        assert!(recorded.len() > 10);
        let mut sought: Vec<Vec<u8>> = names.clone();
        sought.extend([
            b"".to_vec(),
            b"a".to_vec(),
            b"ab\0\0".to_vec(),
            b"com.example/page0155".to_vec(),
            b"com.example/".to_vec(),
            b"com.example/page999".to_vec(),
            b"zz".to_vec(),
        ]);
        assert_jumps_match_whole_rows(plain, starts, &sought);
    }

    /// `columns` cells of `value_len` bytes for each of `names` (sorted), encoded.
    fn encode_rows(names: &[Vec<u8>], columns: usize, value_len: usize) -> Vec<u8> {
        let mut cells = Vec::new();
        for name in names {
            for q in 0..columns {
                Cell::builder(Bytes::from(name.clone()), "f")
                    .qualifier(format!("q{q}"))
                    .timestamp(1)
                    .value(vec![1u8; value_len])
                    .build()
                    .expect("test setup")
                    .encode(&mut cells);
            }
        }
        cells
    }

    /// For each row sought, the jump is the last recorded start at or before it, exactly as
    /// comparing whole rows finds it.
    fn assert_jumps_match_whole_rows(plain: &[u8], starts: &[u8], sought: &[Vec<u8>]) {
        let recorded = offsets(starts);
        for row in sought {
            let whole = recorded.iter().copied().rfind(|at| {
                let (this, _) = cell_row_at(plain, *at).expect("a start is a cell");
                plain[this] <= row[..]
            });
            assert_eq!(seek_start(plain, starts, row), whole, "{row:?}");
        }
    }

    /// Rows sharing a long prefix in the block (the bytes the entries skip), sought from
    /// inside it, at its edges and from outside it on either side.
    #[test]
    fn a_shared_prefix_is_skipped_and_rows_outside_it_sort_around_the_block() {
        let names: Vec<Vec<u8>> = (0..50)
            .map(|i| format!("user0123456789{:05}", i * 2003).into_bytes())
            .collect();
        let cells = encode_rows(&names, 4, 60);
        let cached = with_row_starts(Bytes::copy_from_slice(&cells));
        let (plain, starts) = split(&cached).expect("own trailer");
        assert_eq!(skip_of(starts), 14, "user0123456789 is shared");
        let recorded = offsets(starts);
        assert!(recorded.len() > 10);
        let mut sought = names.clone();
        for extra in [
            "",
            "a",
            "user",
            "user0123",
            "user0123456789",
            "user01234567890",
            "user0123456789000",
            "user0123456789010000",
            "user0123456789999",
            "user0123456789z",
            "user1",
            "user01234567889",
            "zz",
        ] {
            sought.push(extra.as_bytes().to_vec());
        }
        sought.push(b"user0123456789\0".to_vec());
        assert_jumps_match_whole_rows(plain, starts, &sought);
    }

    /// Rows sharing more than [`MAX_SKIP`] bytes: the index keeps that many, the prefixes after
    /// them tie more often, and every jump is still the one whole rows give.
    #[test]
    fn a_long_shared_prefix_is_kept_up_to_its_bound() {
        let common = "x".repeat(MAX_SKIP + 30);
        let names: Vec<Vec<u8>> = (0..40)
            .map(|i| format!("{common}{:04}", i * 7).into_bytes())
            .collect();
        let cells = encode_rows(&names, 3, 50);
        let cached = with_row_starts(Bytes::copy_from_slice(&cells));
        let (plain, starts) = split(&cached).expect("own trailer");
        assert_eq!(skip_of(starts), MAX_SKIP);
        assert_eq!(shared_of(starts), &common.as_bytes()[..MAX_SKIP]);
        assert!(offsets(starts).len() > 10);
        let mut sought = names.clone();
        sought.push(common.as_bytes()[..MAX_SKIP + 3].to_vec());
        sought.push(format!("{common}0100").into_bytes());
        sought.push(format!("{common}9").into_bytes());
        sought.push(b"x".to_vec());
        sought.push(b"y".to_vec());
        assert_jumps_match_whole_rows(plain, starts, &sought);
    }

    #[test]
    fn a_damaged_block_is_indexed_up_to_the_damage_only() {
        let mut cells = block(&[("a", 20), ("b", 20)]);
        let half = cells.len() / 2;
        cells.truncate(half + 3);
        let cached = with_row_starts(Bytes::copy_from_slice(&cells));
        let (plain, starts) = split(&cached).expect("own trailer");
        assert_eq!(plain.len(), cells.len());
        for at in offsets(starts) {
            assert!(cell_row_at(plain, at).is_some());
        }
    }
}
