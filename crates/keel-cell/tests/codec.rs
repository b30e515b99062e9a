//! The binary encoding: round trips, zero-copy decoding, and a typed error (never a panic) for
//! every kind of malformed input, each error branch with its own test.

use bytes::Bytes;
use keel_cell::{
    BATCH_FORMAT_VERSION, BATCH_HEADER_LEN, CELL_HEADER_LEN, Cell, CellError, CellLimits, CellRef,
    DecodeError, decode_batch, encode_batch, encoded_batch_len,
};
use keel_testkit::strategies;
use proptest::prelude::*;

fn encode_one(cell: &Cell) -> Bytes {
    let mut buf = Vec::new();
    cell.encode(&mut buf);
    Bytes::from(buf)
}

fn encode_many(cells: &[Cell]) -> Bytes {
    let mut buf = Vec::new();
    encode_batch(cells, &mut buf);
    Bytes::from(buf)
}

const UNLIMITED: CellLimits = CellLimits::UNLIMITED;

proptest! {
    #[test]
    fn cell_round_trips(cell in strategies::cell()) {
        let buf = encode_one(&cell);
        prop_assert_eq!(buf.len(), cell.encoded_len());
        let (decoded, end) = Cell::decode(&buf, 0, &UNLIMITED).unwrap();
        prop_assert_eq!(end, buf.len());
        prop_assert_eq!(decoded, cell);
    }

    #[test]
    fn batch_round_trips(cells in strategies::cell_batch(20)) {
        let buf = encode_many(&cells);
        prop_assert_eq!(buf.len(), encoded_batch_len(&cells));
        prop_assert_eq!(decode_batch(&buf, &UNLIMITED).unwrap(), cells);
    }

    /// Any single-byte change, truncation or extension either decodes to valid cells or yields a
    /// `DecodeError`; it never panics.
    #[test]
    fn mutated_batches_never_panic(
        cells in strategies::cell_batch(6),
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
        cut in any::<prop::sample::Index>(),
        extra in proptest::collection::vec(any::<u8>(), 0..3),
    ) {
        let mut bytes = encode_many(&cells).to_vec();
        for (at, byte) in flips {
            let i = at.index(bytes.len());
            bytes[i] ^= byte;
        }
        let flipped = Bytes::from(bytes.clone());
        check_decodes_or_errors(&flipped);
        let truncated = flipped.slice(..cut.index(flipped.len()));
        check_decodes_or_errors(&truncated);
        bytes.extend(extra);
        check_decodes_or_errors(&Bytes::from(bytes));
    }

    /// The borrowed, in-place and pushing decoders accept exactly what the owned one accepts, with the
    /// same fields and the same error, at every offset of valid and damaged encodings alike.
    #[test]
    fn borrowed_and_owned_decoding_agree(
        cells in strategies::cell_batch(4),
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..3),
        limit in prop_oneof![Just(CellLimits::UNLIMITED), Just(CellLimits::default())],
    ) {
        let mut bytes = encode_many(&cells).to_vec();
        for (at, byte) in flips {
            let i = at.index(bytes.len());
            bytes[i] ^= byte;
        }
        let buf = Bytes::from(bytes);
        for offset in 0..=buf.len() + 1 {
            let owned = Cell::decode(&buf, offset, &limit);
            let borrowed = CellRef::decode(&buf, offset, &limit);
            // In place: the same cell and end, or the same error with the slot untouched.
            let before = Cell::put("before", "f", "q", 1, "v").expect("test setup");
            let mut slot = Some(before.clone());
            match (Cell::decode_into(&buf, offset, &limit, &mut slot), &owned) {
                (Ok(end), Ok((cell, owned_end))) => {
                    prop_assert_eq!(end, *owned_end);
                    prop_assert_eq!(slot.as_ref(), Some(cell));
                }
                (Err(a), Err(b)) => {
                    prop_assert_eq!(&a, b);
                    prop_assert_eq!(slot, Some(before.clone()));
                }
                (a, b) => prop_assert!(false, "in place {a:?} but owned {b:?}"),
            }
            // Pushed: the same cell and end after what `out` held, or the same error with
            // `out` untouched.
            let mut out = vec![before.clone()];
            match (Cell::decode_push(&buf, offset, &limit, &mut out), &owned) {
                (Ok(end), Ok((cell, owned_end))) => {
                    prop_assert_eq!(end, *owned_end);
                    prop_assert_eq!(&out[..], &[before.clone(), cell.clone()][..]);
                }
                (Err(a), Err(b)) => {
                    prop_assert_eq!(&a, b);
                    prop_assert_eq!(&out[..], &[before.clone()][..]);
                }
                (a, b) => prop_assert!(false, "pushed {a:?} but owned {b:?}"),
            }
            match (owned, borrowed) {
                (Ok((cell, end)), Ok((view, view_end))) => {
                    prop_assert_eq!(end, view_end);
                    prop_assert_eq!(cell.borrowed(), view);
                    prop_assert_eq!(&view.to_cell(), &cell);
                    prop_assert_eq!(&view.slice_cell(&buf), &cell);
                    prop_assert_eq!(view.cmp_key(cell.key()), std::cmp::Ordering::Equal);
                }
                (Err(a), Err(b)) => prop_assert_eq!(a, b),
                (a, b) => prop_assert!(false, "owned {a:?} but borrowed {b:?}"),
            }
        }
    }

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let bytes = Bytes::from(bytes);
        check_decodes_or_errors(&bytes);
        let _borrowed = CellRef::decode(&bytes, 0, &CellLimits::default());
        let _single = Cell::decode(&bytes, 0, &CellLimits::default());
        let _past_end = Cell::decode(&bytes, bytes.len() + 5, &CellLimits::default());
    }
}

/// Whatever the decoder accepts must satisfy every cell rule and re-encode to the same bytes.
fn check_decodes_or_errors(buf: &Bytes) {
    if let Ok(cells) = decode_batch(buf, &CellLimits::default()) {
        for cell in &cells {
            let rebuilt = Cell::builder(cell.row_bytes(), cell.family_bytes())
                .qualifier(cell.qualifier_bytes())
                .timestamp(cell.timestamp())
                .cell_type(cell.cell_type())
                .sequence_id(cell.sequence_id())
                .value(cell.value_bytes())
                .build();
            assert_eq!(
                rebuilt.as_ref(),
                Ok(cell),
                "decoder accepted a cell the builder rejects"
            );
        }
        assert_eq!(&encode_many(&cells), buf);
    }
}

#[test]
fn encoding_is_little_endian_at_documented_offsets() {
    let cell = Cell::builder("row", "fam")
        .qualifier("q")
        .timestamp(0x0102_0304_0506_0708)
        .sequence_id(0x1112_1314_1516_1718)
        .value("value")
        .build()
        .unwrap();
    let buf = encode_one(&cell);
    assert_eq!(&buf[0..2], &[3, 0], "row length u16 LE");
    assert_eq!(buf[2], 3, "family length");
    assert_eq!(buf[3], 4, "type code Put");
    assert_eq!(&buf[4..8], &[1, 0, 0, 0], "qualifier length u32 LE");
    assert_eq!(&buf[8..12], &[5, 0, 0, 0], "value length u32 LE");
    assert_eq!(&buf[12..20], &[8, 7, 6, 5, 4, 3, 2, 1], "timestamp i64 LE");
    assert_eq!(
        &buf[20..28],
        &[0x18, 0x17, 0x16, 0x15, 0x14, 0x13, 0x12, 0x11],
        "seq u64 LE"
    );
    assert_eq!(&buf[CELL_HEADER_LEN..], b"rowfamqvalue");
    let batch = encode_many(&[cell]);
    assert_eq!(
        &batch[..BATCH_HEADER_LEN],
        &[BATCH_FORMAT_VERSION, 1, 0, 0, 0]
    );
}

#[test]
fn decoding_slices_the_input_buffer() {
    let buf = encode_many(&[Cell::put("row", "f", "q", 1, "a long enough value").unwrap()]);
    let cells = decode_batch(&buf, &UNLIMITED).unwrap();
    let value = cells[0].value();
    let base = buf.as_ptr() as usize;
    let at = value.as_ptr() as usize;
    assert!(
        at >= base && at < base + buf.len(),
        "the value points into the input"
    );
}

#[test]
fn cells_decode_one_after_another() {
    let a = Cell::put("a", "f", "", 1, "x").unwrap();
    let b = Cell::delete_family("b", "f", 2).unwrap();
    let mut buf = Vec::new();
    a.encode(&mut buf);
    b.encode(&mut buf);
    let buf = Bytes::from(buf);
    let (first, next) = Cell::decode(&buf, 0, &UNLIMITED).unwrap();
    let (second, end) = Cell::decode(&buf, next, &UNLIMITED).unwrap();
    assert_eq!((first, second, end), (a, b, buf.len()));
}

// One test per error branch.

#[test]
fn truncated_header_is_reported_with_offset() {
    let buf = encode_one(&Cell::put("r", "f", "q", 1, "v").unwrap());
    let err = Cell::decode(&buf.slice(..10), 0, &UNLIMITED).unwrap_err();
    assert_eq!(
        err,
        DecodeError::Truncated {
            what: "cell header",
            offset: 0,
            needed: 28,
            available: 10
        }
    );
    assert_eq!(
        err.to_string(),
        "truncated cell header at offset 0: needs 28 bytes, 10 available"
    );
}

#[test]
fn truncated_body_names_the_field() {
    let buf = encode_one(&Cell::put("row", "fam", "qual", 1, "value").unwrap());
    let cases = [
        (CELL_HEADER_LEN + 1, "row", CELL_HEADER_LEN),
        (CELL_HEADER_LEN + 4, "family", CELL_HEADER_LEN + 3),
        (CELL_HEADER_LEN + 7, "qualifier", CELL_HEADER_LEN + 6),
        (buf.len() - 1, "value", CELL_HEADER_LEN + 10),
    ];
    for (len, field, offset) in cases {
        let err = Cell::decode(&buf.slice(..len), 0, &UNLIMITED).unwrap_err();
        assert!(
            matches!(err, DecodeError::Truncated { what, offset: o, .. } if what == field && o == offset),
            "cut at {len}: {err:?}"
        );
    }
}

#[test]
fn decoding_past_the_end_is_truncation() {
    let err = Cell::decode(&Bytes::from_static(b"abc"), 10, &UNLIMITED).unwrap_err();
    assert_eq!(
        err,
        DecodeError::Truncated {
            what: "cell header",
            offset: 10,
            needed: 28,
            available: 0
        }
    );
}

#[test]
fn unknown_type_code_is_invalid_cell() {
    let mut buf = encode_one(&Cell::put("r", "f", "q", 1, "v").unwrap()).to_vec();
    buf[3] = 5;
    let err = Cell::decode(&Bytes::from(buf), 0, &UNLIMITED).unwrap_err();
    assert_eq!(
        err,
        DecodeError::InvalidCell {
            offset: 0,
            source: CellError::UnknownType { code: 5 }
        }
    );
    assert_eq!(
        err.to_string(),
        "invalid cell at offset 0: unknown cell type code 5"
    );
}

#[test]
fn seek_key_type_is_invalid_cell() {
    let mut buf = encode_one(&Cell::put("r", "f", "q", 1, "v").unwrap()).to_vec();
    buf[3] = 255;
    let err = Cell::decode(&Bytes::from(buf), 0, &UNLIMITED).unwrap_err();
    assert!(matches!(
        err,
        DecodeError::InvalidCell {
            source: CellError::NotStorable { .. },
            ..
        }
    ));
}

#[test]
fn empty_row_and_family_are_invalid_cells() {
    let mut buf = encode_one(&Cell::put("r", "f", "", 1, "").unwrap()).to_vec();
    // Re-label the one-byte row as part of the family: row length 0, family length 2.
    buf[0] = 0;
    buf[2] = 2;
    let err = Cell::decode(&Bytes::from(buf.clone()), 0, &UNLIMITED).unwrap_err();
    assert_eq!(
        err,
        DecodeError::InvalidCell {
            offset: 0,
            source: CellError::EmptyRow
        }
    );
    // Row length 2, family length 0.
    buf[0] = 2;
    buf[2] = 0;
    let err = Cell::decode(&Bytes::from(buf), 0, &UNLIMITED).unwrap_err();
    assert!(matches!(
        err,
        DecodeError::InvalidCell {
            source: CellError::EmptyFamily { .. },
            ..
        }
    ));
}

#[test]
fn oversized_row_and_family_are_invalid_cells() {
    // Row length field 0xFFFF exceeds 32 767 even when the bytes are present.
    let mut buf = encode_one(&Cell::put("r", "f", "", 1, "").unwrap()).to_vec();
    buf[0] = 0xFF;
    buf[1] = 0xFF;
    buf.splice(
        CELL_HEADER_LEN..CELL_HEADER_LEN,
        std::iter::repeat_n(b'r', 0xFFFF - 1),
    );
    let err = Cell::decode(&Bytes::from(buf), 0, &UNLIMITED).unwrap_err();
    assert!(matches!(
        err,
        DecodeError::InvalidCell {
            source: CellError::RowTooLong { len: 65_535, .. },
            ..
        }
    ));
    let mut buf = encode_one(&Cell::put("r", "f", "", 1, "").unwrap()).to_vec();
    buf[2] = 200;
    buf.splice(
        CELL_HEADER_LEN + 1..CELL_HEADER_LEN + 1,
        std::iter::repeat_n(b'f', 199),
    );
    let err = Cell::decode(&Bytes::from(buf), 0, &UNLIMITED).unwrap_err();
    assert!(matches!(
        err,
        DecodeError::InvalidCell {
            source: CellError::FamilyTooLong { len: 200, .. },
            ..
        }
    ));
}

#[test]
fn cell_over_the_configured_limit_is_invalid() {
    let cell = Cell::put("r", "f", "q", 1, vec![0u8; 100]).unwrap();
    let buf = encode_many(&[cell.clone(), cell]);
    let limits = CellLimits { max_cell_size: 100 };
    let err = decode_batch(&buf, &limits).unwrap_err();
    assert!(matches!(
        err,
        DecodeError::InvalidCell {
            offset: BATCH_HEADER_LEN,
            source: CellError::CellTooLarge {
                size: 131,
                max: 100,
                ..
            }
        }
    ));
    assert!(decode_batch(&buf, &CellLimits { max_cell_size: 131 }).is_ok());
}

#[test]
fn unsupported_batch_version() {
    let mut buf = encode_many(&[]).to_vec();
    buf[0] = 2;
    let err = decode_batch(&Bytes::from(buf), &UNLIMITED).unwrap_err();
    assert_eq!(
        err,
        DecodeError::UnsupportedVersion {
            version: 2,
            offset: 0
        }
    );
}

#[test]
fn truncated_batch_header() {
    assert_eq!(
        decode_batch(&Bytes::new(), &UNLIMITED).unwrap_err(),
        DecodeError::Truncated {
            what: "batch version",
            offset: 0,
            needed: 1,
            available: 0
        }
    );
    assert_eq!(
        decode_batch(&Bytes::from_static(&[1, 0, 0]), &UNLIMITED).unwrap_err(),
        DecodeError::Truncated {
            what: "batch cell count",
            offset: 1,
            needed: 4,
            available: 2
        }
    );
}

#[test]
fn impossible_count_is_rejected_before_allocating() {
    let buf = Bytes::from_static(&[1, 0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0]);
    assert_eq!(
        decode_batch(&buf, &UNLIMITED).unwrap_err(),
        DecodeError::ImpossibleCount {
            count: u32::MAX,
            offset: 1,
            available: 3
        }
    );
}

#[test]
fn count_larger_than_cells_present_is_truncation() {
    let cells = [
        Cell::put("r", "f", "q", 1, vec![0u8; 100]).unwrap(),
        Cell::put("s", "f", "q", 1, vec![0u8; 100]).unwrap(),
    ];
    let mut buf = encode_many(&cells).to_vec();
    buf[1] = 3;
    let err = decode_batch(&Bytes::from(buf.clone()), &UNLIMITED).unwrap_err();
    assert!(
        matches!(
            err,
            DecodeError::Truncated {
                what: "cell header",
                ..
            }
        ),
        "{err:?}"
    );
}

#[test]
fn trailing_bytes_after_the_batch() {
    let mut buf = encode_many(&[Cell::put("r", "f", "q", 1, "v").unwrap()]).to_vec();
    let end = buf.len();
    buf.extend_from_slice(b"junk");
    assert_eq!(
        decode_batch(&Bytes::from(buf), &UNLIMITED).unwrap_err(),
        DecodeError::TrailingBytes {
            offset: end,
            len: 4
        }
    );
}
