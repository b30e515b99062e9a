//! proptest strategies for cells, keys and batches.
//!
//! Rows, families and qualifiers come from tiny alphabets (including `0x00` and `0xFF`, so that
//! unsigned comparison and prefixes are exercised) and timestamps from a small range plus the
//! extremes, so generated cells often share coordinates: that is where ordering bugs live.

use bytes::Bytes;
use keel_cell::{Cell, CellKey, CellLimits, CellType, LATEST_TIMESTAMP};
use proptest::collection::vec;
use proptest::prelude::*;

fn small_bytes(min_len: usize, max_len: usize) -> impl Strategy<Value = Bytes> {
    vec(
        prop::sample::select(vec![0x00u8, b'a', b'b', 0x7F, 0x80, 0xFF]),
        min_len..=max_len,
    )
    .prop_map(Bytes::from)
}

/// A non-empty row of up to 4 bytes.
pub fn row() -> impl Strategy<Value = Bytes> {
    small_bytes(1, 4)
}

/// A non-empty family of up to 2 bytes.
pub fn family() -> impl Strategy<Value = Bytes> {
    small_bytes(1, 2)
}

/// A qualifier of up to 3 bytes (empty allowed, as in HBase).
pub fn qualifier() -> impl Strategy<Value = Bytes> {
    small_bytes(0, 3)
}

/// A timestamp: mostly small, sometimes an extreme.
pub fn timestamp() -> impl Strategy<Value = i64> {
    prop_oneof![
        8 => 0i64..4,
        1 => Just(LATEST_TIMESTAMP),
        1 => Just(i64::MIN),
        1 => Just(-1i64),
    ]
}

/// Any type a stored cell may have.
pub fn storable_type() -> impl Strategy<Value = CellType> {
    prop::sample::select(vec![
        CellType::Put,
        CellType::Delete,
        CellType::DeleteFamilyVersion,
        CellType::DeleteColumn,
        CellType::DeleteFamily,
    ])
}

/// A sequence id: small, so that equal ids are common, or the extreme.
pub fn sequence_id() -> impl Strategy<Value = u64> {
    prop_oneof![9 => 0u64..4, 1 => Just(u64::MAX)]
}

/// A valid stored cell with a value of up to 8 bytes.
pub fn cell() -> impl Strategy<Value = Cell> {
    let value = vec(any::<u8>(), 0..=8).prop_map(Bytes::from);
    (
        row(),
        family(),
        qualifier(),
        timestamp(),
        storable_type(),
        sequence_id(),
        value,
    )
        .prop_map(|(row, family, qualifier, ts, ty, seq, value)| {
            Cell::builder(row, family)
                .qualifier(qualifier)
                .timestamp(ts)
                .cell_type(ty)
                .sequence_id(seq)
                .value(value)
                .limits(CellLimits::UNLIMITED)
                .build()
                .unwrap_or_else(|err| panic!("strategy produced an invalid cell: {err}"))
        })
}

/// A batch of up to `max_len` cells in arbitrary order.
pub fn cell_batch(max_len: usize) -> impl Strategy<Value = Vec<Cell>> {
    vec(cell(), 0..=max_len)
}

/// A key: usually a stored cell's key, sometimes one of the four seek keys.
pub fn cell_key() -> impl Strategy<Value = CellKey> {
    prop_oneof![
        6 => cell().prop_map(|c| c.key().clone()),
        1 => row().prop_map(CellKey::first_on_row),
        1 => row().prop_map(CellKey::last_on_row),
        1 => (row(), family(), qualifier()).prop_map(|(r, f, q)| CellKey::first_on_column(r, f, q)),
        1 => (row(), family(), qualifier()).prop_map(|(r, f, q)| CellKey::last_on_column(r, f, q)),
    ]
}
