//! Unit tests: ordering, read points, snapshots, sizes, and MSLAB chunk lifetime.

use std::sync::Arc;

use bytes::Bytes;
use keel_cell::{Cell, CellKey};

use crate::{ChunkPool, MemStore, MemStoreError, MemStoreOptions, SegmentSize};

fn cell(row: &str, qualifier: &str, timestamp: i64, sequence_id: u64, value: &str) -> Cell {
    let mut cell = Cell::put(
        Bytes::copy_from_slice(row.as_bytes()),
        "f",
        Bytes::copy_from_slice(qualifier.as_bytes()),
        timestamp,
        Bytes::copy_from_slice(value.as_bytes()),
    )
    .expect("valid cell");
    cell.set_sequence_id(sequence_id);
    cell
}

fn small_chunks(mslab: bool) -> MemStoreOptions {
    MemStoreOptions {
        mslab,
        chunk_size: 256,
        max_copied_cell: 64,
        ..MemStoreOptions::default()
    }
}

#[test]
fn scan_is_ordered_and_hides_cells_above_the_read_point() {
    let memstore = MemStore::new(MemStoreOptions::default());
    memstore.add([
        cell("b", "q", 1, 3, "b1"),
        cell("a", "q", 1, 1, "a1"),
        cell("a", "q", 2, 2, "a2"),
    ]);
    let values = |read_point| -> Vec<Bytes> {
        memstore
            .scanner(.., read_point)
            .map(|cell| cell.value_bytes())
            .collect()
    };
    assert_eq!(values(0), Vec::<Bytes>::new());
    assert_eq!(values(1), vec![Bytes::from("a1")]);
    assert_eq!(values(2), vec![Bytes::from("a2"), Bytes::from("a1")]);
    assert_eq!(
        values(3),
        vec![Bytes::from("a2"), Bytes::from("a1"), Bytes::from("b1")]
    );
}

#[test]
fn get_returns_one_column_newest_first() {
    let memstore = MemStore::new(MemStoreOptions::default());
    memstore.add([
        cell("r", "a", 1, 1, "a1"),
        cell("r", "b", 1, 2, "b1"),
        cell("r", "b", 5, 3, "b5"),
        cell("s", "b", 1, 4, "s"),
    ]);
    let got = memstore.get(&"r".into(), b"f", b"b", 10);
    let values: Vec<_> = got.iter().map(|cell| cell.value_bytes()).collect();
    assert_eq!(values, vec![Bytes::from("b5"), Bytes::from("b1")]);
    assert!(memstore.get(&"r".into(), b"f", b"b", 2).len() == 1);
}

#[test]
fn seek_and_peek_move_the_scanner() {
    let memstore = MemStore::new(MemStoreOptions::default());
    memstore.add((0..10).map(|i| cell(&format!("r{i}"), "q", 1, 1, "v")));
    let mut scanner = memstore.scanner(.., 1);
    scanner.seek(&CellKey::first_on_row("r5"));
    assert_eq!(scanner.peek().map(|c| c.row_bytes()), Some("r5".into()));
    assert_eq!(scanner.next().map(|c| c.row_bytes()), Some("r5".into()));
    scanner.seek(&CellKey::first_on_row("r2"));
    assert_eq!(scanner.next().map(|c| c.row_bytes()), Some("r2".into()));
    let bounded: Vec<_> = memstore
        .scanner(CellKey::first_on_row("r3")..CellKey::first_on_row("r6"), 1)
        .map(|c| c.row_bytes())
        .collect();
    assert_eq!(bounded, vec![Bytes::from("r3"), "r4".into(), "r5".into()]);
    // A seek to where the scanner was opened is free and changes nothing; once the scanner has
    // moved, the same seek goes back.
    let start = CellKey::first_on_row("r3");
    let mut opened = memstore.scanner(start.clone()..=CellKey::first_on_row("r7"), 1);
    opened.seek(&start);
    assert_eq!(opened.next().map(|c| c.row_bytes()), Some("r3".into()));
    assert_eq!(opened.next().map(|c| c.row_bytes()), Some("r4".into()));
    opened.seek(&start);
    assert_eq!(opened.next().map(|c| c.row_bytes()), Some("r3".into()));
    let mut elsewhere = memstore.scanner(start.clone().., 1);
    elsewhere.seek(&CellKey::first_on_row("r6"));
    assert_eq!(elsewhere.next().map(|c| c.row_bytes()), Some("r6".into()));
}

#[test]
fn snapshot_is_seen_until_cleared_and_repeats_while_pending() {
    let memstore = MemStore::new(MemStoreOptions::default());
    memstore.add([cell("a", "q", 1, 1, "old")]);
    let snapshot = memstore.snapshot();
    memstore.add([cell("b", "q", 1, 2, "new")]);
    assert_eq!(memstore.scanner(.., 2).count(), 2, "active + snapshot");
    assert_eq!(snapshot.scanner().count(), 1);

    let again = memstore.snapshot();
    assert_eq!(
        again.id(),
        snapshot.id(),
        "a failed flush retries the same one"
    );
    assert_eq!(again.scanner().count(), 1);

    assert_eq!(
        memstore.clear_snapshot(snapshot.id() + 7),
        Err(MemStoreError::NoSuchSnapshot {
            id: snapshot.id() + 7,
            pending: Some(snapshot.id())
        })
    );
    let released = memstore.clear_snapshot(snapshot.id()).expect("pending");
    assert_eq!(released.cell_count, 1);
    assert_eq!(memstore.scanner(.., 2).count(), 1);
    assert!(memstore.clear_snapshot(snapshot.id()).is_err());
    let next = memstore.snapshot();
    assert_ne!(next.id(), snapshot.id());
    assert_eq!(next.size().cell_count, 1);
}

#[test]
fn the_newest_segment_wins_on_an_identical_key() {
    let memstore = MemStore::new(MemStoreOptions::default());
    memstore.add([cell("a", "q", 1, 1, "first")]);
    let _snapshot = memstore.snapshot();
    memstore.add([cell("a", "q", 1, 1, "second")]);
    let values: Vec<_> = memstore.scanner(.., 1).map(|c| c.value_bytes()).collect();
    assert_eq!(values, vec![Bytes::from("second")]);
}

/// A skip list's row hints are bookkeeping the memstore holds, so its size counts them: none
/// while the list is small, then the first level (1 024 slots of 16 bytes) once a row's first
/// cell goes in after another row's.
#[test]
fn sizes_count_the_row_hints() {
    let memstore = MemStore::new(MemStoreOptions::default());
    let row = |i: usize| format!("r{:05}", (i * 7_919) % 1_000_003);
    for i in 0..1_024 {
        memstore.add([cell(&row(i), "q", 1, i as u64 + 1, "v")]);
    }
    let cells = 1_024 * crate::CELL_OVERHEAD_BYTES;
    assert_eq!(memstore.active_size().overhead_bytes, cells);
    // The next row's cell, after another row's in the list: its hint allocates the first level.
    memstore.add([cell("r99999", "q", 1, 5_000, "v")]);
    let size = memstore.active_size();
    assert_eq!(
        size.overhead_bytes,
        cells + crate::CELL_OVERHEAD_BYTES + 1024 * 16
    );
    // The flattened pipeline holds no hints: its size counts cells only.
    memstore.flatten();
    assert_eq!(
        memstore.pipeline_size().overhead_bytes,
        cells + crate::CELL_OVERHEAD_BYTES
    );
    let snapshot = memstore.snapshot();
    assert_eq!(snapshot.size().cell_count, 1_025);
}

#[test]
fn sizes_track_adds_snapshots_and_clears() {
    let memstore = MemStore::new(MemStoreOptions::default());
    assert_eq!(memstore.size(), SegmentSize::EMPTY);
    memstore.add([cell("row", "q", 7, 5, "value"), cell("r", "qq", 3, 9, "v")]);
    let size = memstore.active_size();
    assert_eq!(size.cell_count, 2);
    assert_eq!(size.data_bytes, (3 + 1 + 1 + 5) + (1 + 1 + 2 + 1));
    assert_eq!(size.overhead_bytes, 2 * crate::CELL_OVERHEAD_BYTES);
    assert_eq!((size.min_timestamp, size.max_timestamp), (3, 7));
    assert_eq!(size.min_sequence_id, 5);
    let snapshot = memstore.snapshot();
    assert_eq!(snapshot.size(), size);
    assert_eq!(memstore.active_size(), SegmentSize::EMPTY);
    assert_eq!(memstore.snapshot_size(), size);
    memstore.clear_snapshot(snapshot.id()).expect("pending");
    assert_eq!(memstore.size(), SegmentSize::EMPTY);
}

#[test]
fn mslab_cells_share_chunks_and_big_cells_do_not() {
    let memstore = MemStore::new(small_chunks(true));
    memstore.add((0..20).map(|i| cell(&format!("r{i:02}"), "q", 1, 1, "0123456789")));
    // 20 cells × 15 bytes = 300 bytes: two 256-byte chunks.
    assert_eq!(memstore.chunk_pool().stats().created, 2);
    memstore.add([cell("big", "q", 1, 1, &"x".repeat(100))]);
    assert_eq!(
        memstore.chunk_pool().stats().created,
        2,
        "over max_copied_cell"
    );
    let off = MemStore::new(small_chunks(false));
    off.add((0..20).map(|i| cell(&format!("r{i:02}"), "q", 1, 1, "0123456789")));
    assert_eq!(off.chunk_pool().stats().created, 0);
    assert_eq!(off.scanner(.., 1).count(), 20);
}

#[test]
fn stored_cells_do_not_pin_the_callers_buffer() {
    for mslab in [true, false] {
        let memstore = MemStore::new(small_chunks(mslab));
        let request = Bytes::from(vec![b'v'; 40]);
        let mut put = Cell::put("r", "f", "q", 1, request.slice(0..10)).expect("valid");
        put.set_sequence_id(1);
        memstore.add([put]);
        assert!(
            request.is_unique(),
            "mslab={mslab}: the request buffer is free again"
        );
    }
}

#[test]
fn chunks_are_reused_only_after_every_reader_lets_go() {
    let pool = Arc::new(ChunkPool::new(256, 8));
    let memstore = MemStore::with_pool(small_chunks(true), Arc::clone(&pool));
    memstore.add((0..10).map(|i| cell(&format!("r{i}"), "q", 1, 1, "0123456789")));
    let mut reader = memstore.scanner(.., 1);
    let held = reader.next().expect("a cell");
    let snapshot = memstore.snapshot();
    memstore.clear_snapshot(snapshot.id()).expect("pending");
    drop(snapshot);
    assert_eq!(pool.stats().pooled, 1);

    // New writes must not reuse the chunk the reader still points into.
    memstore.add((0..10).map(|i| cell(&format!("w{i}"), "q", 1, 2, "ZZZZZZZZZZ")));
    assert_eq!(pool.stats().reused, 0);
    assert_eq!(held.value(), b"0123456789");
    assert_eq!(
        reader.count(),
        9,
        "an open scanner still reads the cleared snapshot"
    );
    drop(held);

    let snapshot = memstore.snapshot();
    memstore.clear_snapshot(snapshot.id()).expect("pending");
    drop(snapshot);
    memstore.add([cell("again", "q", 1, 3, "v")]);
    assert_eq!(
        pool.stats().reused,
        1,
        "free now: reused instead of allocated"
    );
}

#[test]
fn the_pool_keeps_at_most_its_bound() {
    let pool = Arc::new(ChunkPool::new(64, 2));
    let memstore = MemStore::with_pool(small_chunks(true), Arc::clone(&pool));
    memstore.add((0..40).map(|i| cell(&format!("r{i:02}"), "q", 1, 1, "0123456789")));
    let created = pool.stats().created;
    assert!(created > 2, "{created}");
    let snapshot = memstore.snapshot();
    memstore.clear_snapshot(snapshot.id()).expect("pending");
    let stats = pool.stats();
    assert_eq!(stats.pooled, 2);
    assert_eq!(stats.discarded, created - 2);
}

#[test]
fn visit_borrows_in_scanner_order_and_stops_on_break() {
    let memstore = MemStore::new(MemStoreOptions::default());
    memstore.add([cell("a", "q", 1, 1, "a"), cell("c", "q", 1, 1, "c")]);
    let _snapshot = memstore.snapshot();
    memstore.add([cell("b", "q", 1, 2, "b"), cell("d", "q", 1, 9, "hidden")]);
    let mut seen = Vec::new();
    memstore.visit(.., 5, |key, value| {
        seen.push((key.row_bytes(), value.to_vec()));
        std::ops::ControlFlow::Continue(())
    });
    let rows: Vec<_> = seen.iter().map(|(row, _)| row.clone()).collect();
    assert_eq!(rows, vec![Bytes::from("a"), "b".into(), "c".into()]);
    let mut first_two = 0;
    memstore.visit(.., 5, |_, _| {
        first_two += 1;
        if first_two == 2 {
            std::ops::ControlFlow::Break(())
        } else {
            std::ops::ControlFlow::Continue(())
        }
    });
    assert_eq!(first_two, 2);
}

#[test]
fn rollback_removes_exactly_the_written_cells_and_their_size() {
    for mslab in [false, true] {
        let store = MemStore::new(small_chunks(mslab));
        store.add([cell("a", "q", 1, 1, "keep")]);
        let before = store.active_size();
        let written = vec![
            cell("a", "q", 2, 5, "gone"),
            cell("b", "q", 2, 5, "gone too"),
        ];
        store.add(written.clone());
        // A cell with the same coordinates but another sequence id is not the written one.
        let stranger = cell("a", "q", 2, 6, "x");
        assert_eq!(store.rollback(&[stranger]), 0);
        assert_eq!(store.rollback(&written), 2);
        assert_eq!(store.rollback(&written), 0, "already gone");
        let after = store.active_size();
        assert_eq!(
            (after.data_bytes, after.cell_count),
            (before.data_bytes, before.cell_count)
        );
        let left: Vec<Cell> = store.scanner(.., u64::MAX).collect();
        assert_eq!(left.len(), 1);
        assert_eq!(left[0].value(), b"keep");
    }
}

#[test]
fn flattening_copies_cells_into_key_order_and_frees_the_old_chunks() {
    for copy in [true, false] {
        let pool = Arc::new(ChunkPool::new(4096, 8));
        let options = MemStoreOptions {
            copy_on_flatten: copy,
            ..small_chunks(true)
        };
        let memstore = MemStore::with_pool(options, Arc::clone(&pool));
        // Written in reverse key order: a chunk holds them back to front.
        memstore.add(
            (0..40)
                .rev()
                .map(|i| cell(&format!("r{i:02}"), "q", 1, 1, "0123456789")),
        );
        memstore.add([cell("r99", "q", 1, 1, &"x".repeat(100))]);
        assert!(memstore.flatten());
        let cells: Vec<Cell> = memstore.scanner(.., 1).collect();
        assert_eq!(cells.len(), 41);
        let rows: Vec<&[u8]> = cells.iter().map(Cell::row).collect();
        assert!(rows.is_sorted(), "copy={copy}");
        let addresses: Vec<usize> = cells[..40]
            .iter()
            .map(|c| c.row().as_ptr() as usize)
            .collect();
        // Over `max_copied_cell`: it keeps its own allocation either way.
        assert_eq!(cells[40].value().len(), 100);
        if copy {
            assert!(addresses.is_sorted(), "the copy lies in key order");
            assert_eq!(pool.stats().pooled, 1, "the written chunk went back");
            assert_eq!(pool.stats().created, 2);
        } else {
            assert!(
                addresses.is_sorted_by(|a, b| a > b),
                "where the writes put them"
            );
            assert_eq!(pool.stats().pooled, 0);
            assert_eq!(pool.stats().created, 1);
        }
        drop(cells);
        // The flattened cells live on until their flush, and their chunks then go back.
        let snapshot = memstore.snapshot();
        assert_eq!(snapshot.size().cell_count, 41);
        memstore.clear_snapshot(snapshot.id()).expect("pending");
        drop(snapshot);
        assert_eq!(pool.stats().pooled, 1 + u64::from(copy));
        memstore.add([cell("again", "q", 1, 2, "v")]);
        assert_eq!(
            pool.stats().reused,
            1,
            "copy={copy}: a free chunk is reused"
        );
    }
}
