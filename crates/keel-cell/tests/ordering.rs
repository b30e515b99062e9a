//! `CellKey`'s order is HBase's CellComparator: checked against a plain tuple oracle, and for
//! seek keys against the property that defines them.

use std::cmp::{Ordering, Reverse};

use keel_cell::{Cell, CellKey, CellType, KeyParts, compare_bytes, same_bytes};
use keel_testkit::strategies;
use proptest::prelude::*;

/// The comparator as a tuple: row, family, qualifier ascending; timestamp, type code, sequence
/// id descending. Valid for stored cells (seek keys add the "last on row" special case).
type OracleKey = (
    Vec<u8>,
    Vec<u8>,
    Vec<u8>,
    Reverse<i64>,
    Reverse<u8>,
    Reverse<u64>,
);

fn oracle(k: &CellKey) -> OracleKey {
    (
        k.row().to_vec(),
        k.family().to_vec(),
        k.qualifier().to_vec(),
        Reverse(k.timestamp()),
        Reverse(k.cell_type().code()),
        Reverse(k.sequence_id()),
    )
}

/// Seek keys of the four kinds, on a random cell's coordinates.
fn seek_key() -> impl Strategy<Value = CellKey> {
    (strategies::cell(), 0u8..4).prop_map(|(c, kind)| {
        let (row, family, qualifier) = (c.row_bytes(), c.family_bytes(), c.qualifier_bytes());
        match kind {
            0 => CellKey::first_on_row(row),
            1 => CellKey::last_on_row(row),
            2 => CellKey::first_on_column(row, family, qualifier),
            _ => CellKey::last_on_column(row, family, qualifier),
        }
    })
}

/// Bytes that make shared prefixes and the extreme values likely.
fn bytes_around_eight() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(
        prop::sample::select(vec![0u8, 1, b'a', 0x7F, 0x80, 0xFF]),
        0..12,
    )
}

proptest! {
    #[test]
    fn compare_bytes_orders_like_slices(
        prefix in bytes_around_eight(),
        a in bytes_around_eight(),
        b in bytes_around_eight(),
    ) {
        let a = [prefix.as_slice(), &a].concat();
        let b = [prefix.as_slice(), &b].concat();
        prop_assert_eq!(compare_bytes(&a, &b), a.cmp(&b));
        prop_assert_eq!(compare_bytes(&b, &a), b.cmp(&a));
        prop_assert_eq!(compare_bytes(&a, &a), Ordering::Equal);
        prop_assert_eq!(same_bytes(&a, &b), a == b);
        prop_assert!(same_bytes(&a, &a));
    }

    /// Strings of one length differing in at most one byte, wherever it is: the case the
    /// word-at-a-time windows must get right, and which independent strings seldom draw.
    #[test]
    fn one_length_strings_compare_and_match_like_slices(
        a in prop::collection::vec(prop::sample::select(vec![0u8, 1, b'a', 0x7F, 0x80, 0xFF]), 0..24),
        at in any::<prop::sample::Index>(),
        byte in prop::sample::select(vec![0u8, 1, b'a', 0x7F, 0x80, 0xFF]),
    ) {
        let mut b = a.clone();
        if !b.is_empty() {
            let i = at.index(b.len());
            b[i] = byte;
        }
        prop_assert_eq!(same_bytes(&a, &b), a == b);
        prop_assert_eq!(compare_bytes(&a, &b), a.cmp(&b));
        prop_assert_eq!(compare_bytes(&b, &a), b.cmp(&a));
    }

    #[test]
    fn borrowed_parts_compare_as_their_key(
        a in prop_oneof![strategies::cell().prop_map(|c| c.key().clone()), seek_key()],
        b in prop_oneof![strategies::cell().prop_map(|c| c.key().clone()), seek_key()],
    ) {
        let parts = KeyParts {
            row: a.row(),
            family: a.family(),
            qualifier: a.qualifier(),
            timestamp: a.timestamp(),
            type_code: a.cell_type().code(),
            sequence_id: a.sequence_id(),
        };
        prop_assert_eq!(parts.cmp_key(&b), a.cmp(&b));
        prop_assert_eq!(parts.cmp_key(&a), Ordering::Equal);
    }

    #[test]
    fn stored_cells_order_like_the_tuple_oracle(a in strategies::cell(), b in strategies::cell()) {
        prop_assert_eq!(a.key().cmp(b.key()), oracle(a.key()).cmp(&oracle(b.key())));
        prop_assert_eq!(a.key() == b.key(), a.key().cmp(b.key()) == Ordering::Equal);
    }

    #[test]
    fn sorting_matches_the_oracle(mut cells in strategies::cell_batch(40)) {
        let mut by_oracle = cells.clone();
        by_oracle.sort_by(|a, b| oracle(a.key()).cmp(&oracle(b.key())).then(a.value().cmp(b.value())));
        cells.sort();
        prop_assert_eq!(cells, by_oracle);
    }

    #[test]
    fn order_is_total_over_all_keys(a in strategies::cell_key(), b in strategies::cell_key(), c in strategies::cell_key()) {
        prop_assert_eq!(a.cmp(&b), b.cmp(&a).reverse());
        prop_assert_eq!(a.cmp(&b) == Ordering::Equal, a == b);
        if a <= b && b <= c {
            prop_assert!(a <= c);
        }
    }

    #[test]
    fn seek_keys_bound_rows_and_columns(cell in strategies::cell()) {
        let key = cell.key();
        prop_assert!(CellKey::first_on_row(key.row_bytes()) < *key);
        prop_assert!(CellKey::last_on_row(key.row_bytes()) > *key);
        let (r, f, q) = (key.row_bytes(), key.family_bytes(), key.qualifier_bytes());
        prop_assert!(CellKey::first_on_column(r.clone(), f.clone(), q.clone()) <= *key);
        prop_assert!(CellKey::last_on_column(r, f, q) >= *key);
    }

    #[test]
    fn past_family_is_after_the_family_and_before_the_next_one(a in strategies::cell(), b in strategies::cell()) {
        // Every key of `a`'s family in its row sorts before it, even the column's last;
        // every key of a later family of the row, or of a later row, after it.
        let past = CellKey::past_family(a.row(), a.family());
        let key = a.key();
        prop_assert!(*key < past);
        prop_assert!(CellKey::last_on_column(key.row_bytes(), key.family_bytes(), key.qualifier_bytes()) < past);
        prop_assert!(CellKey::last_on_row(key.row_bytes()) > past);
        let other = b.key();
        let later_family = other.row() == key.row() && other.family() > key.family();
        if later_family || other.row() > key.row() {
            prop_assert!(*other > past, "{:?} after {:?}", other, past);
        }
        if other.row() == key.row() && other.family() == key.family() || other.row() < key.row() {
            prop_assert!(*other < past);
        }
        // A later family of `a`'s own row, made from `b`'s name.
        let mut family = a.family().to_vec();
        family.extend_from_slice(b.family());
        let next = CellKey::first_on_column(key.row_bytes(), family, b.qualifier());
        prop_assert!(next >= past);
    }

    #[test]
    fn ignoring_sequence_ids_compares_coordinates(a in strategies::cell(), seq in any::<u64>()) {
        let mut b = a.clone();
        b.set_sequence_id(seq);
        prop_assert_eq!(a.key().cmp_ignoring_sequence_id(b.key()), Ordering::Equal);
    }
}

#[test]
fn delete_family_masks_come_first_within_a_column() {
    let mut cells = [
        Cell::put("r", "f", "q", 5, "v").unwrap(),
        Cell::delete("r", "f", "q", 5).unwrap(),
        Cell::delete_column("r", "f", "q", 5).unwrap(),
        Cell::builder("r", "f")
            .qualifier("q")
            .timestamp(5)
            .cell_type(CellType::DeleteFamilyVersion)
            .build()
            .unwrap(),
        Cell::builder("r", "f")
            .qualifier("q")
            .timestamp(5)
            .cell_type(CellType::DeleteFamily)
            .build()
            .unwrap(),
    ];
    cells.sort();
    let types: Vec<CellType> = cells.iter().map(Cell::cell_type).collect();
    assert_eq!(
        types,
        [
            CellType::DeleteFamily,
            CellType::DeleteColumn,
            CellType::DeleteFamilyVersion,
            CellType::Delete,
            CellType::Put
        ]
    );
}
