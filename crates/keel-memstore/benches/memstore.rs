//! `cargo xtask bench memstore`: keel-memstore against `RwLock<BTreeMap>` and a bare
//! crossbeam skiplist holding the callers' cells, in one run: inserts/s of 100-byte and 1 KiB
//! cells with 1 and 2 threads, one writer beside one scanner, new versions of loaded rows'
//! columns (YCSB's updates), point-get latency and scan MB/s over a loaded store, and heap
//! allocations per insert with MSLAB on and off (a counting allocator).

#![expect(clippy::print_stdout, reason = "a benchmark reports on the terminal")]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::Instant;

use bytes::Bytes;
use crossbeam_skiplist::SkipMap;
use hdrhistogram::Histogram;
use keel_cell::{Cell, CellKey};
use keel_memstore::{MemStore, MemStoreOptions};
use keel_sync::RwLock;
use keel_testkit::figure;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Counts heap allocations so the benchmark can report them per insert.
#[global_allocator]
static GLOBAL: keel_testkit::CountingAllocator = keel_testkit::CountingAllocator;

/// The stores compared.
trait Store: Send + Sync {
    fn insert(&self, cell: Cell);
    /// Reads up to `limit` cells from `from`; returns how many bytes of value were seen.
    fn scan(&self, from: &CellKey, limit: usize) -> usize;
    /// As `scan`, borrowing cells where the store can (keel-memstore's `visit`).
    fn scan_borrowed(&self, from: &CellKey, limit: usize) -> usize {
        self.scan(from, limit)
    }
    fn get(&self, key: &CellKey) -> bool;
    /// Called once the load is in, before the reads are timed.
    fn settle(&self) {}
}

/// A memstore whose loaded cells an in-memory flush made one flat array.
struct Flattened(MemStore);

impl Store for Flattened {
    fn insert(&self, cell: Cell) {
        self.0.insert(cell);
    }
    fn scan(&self, from: &CellKey, limit: usize) -> usize {
        self.0.scan(from, limit)
    }
    fn scan_borrowed(&self, from: &CellKey, limit: usize) -> usize {
        self.0.scan_borrowed(from, limit)
    }
    fn get(&self, key: &CellKey) -> bool {
        Store::get(&self.0, key)
    }
    fn settle(&self) {
        assert!(self.0.flatten(), "the load is flattened");
    }
}

impl Store for MemStore {
    fn insert(&self, cell: Cell) {
        self.add([cell]);
    }
    fn scan(&self, from: &CellKey, limit: usize) -> usize {
        self.scanner(from.clone().., u64::MAX)
            .take(limit)
            .map(|c| c.value().len())
            .sum()
    }
    fn scan_borrowed(&self, from: &CellKey, limit: usize) -> usize {
        let (mut bytes, mut left) = (0, limit);
        self.visit(from.clone().., u64::MAX, |_, value| {
            bytes += value.len();
            left -= 1;
            if left == 0 {
                std::ops::ControlFlow::Break(())
            } else {
                std::ops::ControlFlow::Continue(())
            }
        });
        bytes
    }
    fn get(&self, key: &CellKey) -> bool {
        !MemStore::get(
            self,
            &key.row_bytes(),
            key.family(),
            key.qualifier(),
            u64::MAX,
        )
        .is_empty()
    }
}

struct LockedBTree(RwLock<BTreeMap<CellKey, Bytes>>);

impl Store for LockedBTree {
    fn insert(&self, cell: Cell) {
        let (key, value) = cell.into_parts();
        self.0.write().insert(key, value);
    }
    fn scan(&self, from: &CellKey, limit: usize) -> usize {
        let map = self.0.read();
        map.range(from.clone()..)
            .take(limit)
            .map(|(_, v)| v.len())
            .sum()
    }
    fn get(&self, key: &CellKey) -> bool {
        let first = first_on_column_of(key);
        let map = self.0.read();
        map.range(first..)
            .next()
            .is_some_and(|(k, _)| k.row() == key.row())
    }
}

struct BareSkipList(SkipMap<CellKey, Bytes>);

impl Store for BareSkipList {
    fn insert(&self, cell: Cell) {
        let (key, value) = cell.into_parts();
        self.0.insert(key, value);
    }
    fn scan(&self, from: &CellKey, limit: usize) -> usize {
        self.0
            .range(from.clone()..)
            .take(limit)
            .map(|e| e.value().len())
            .sum()
    }
    fn get(&self, key: &CellKey) -> bool {
        let first = first_on_column_of(key);
        self.0
            .lower_bound(std::ops::Bound::Included(&first))
            .is_some_and(|e| e.key().row() == key.row())
    }
}

/// The seek key for `key`'s column.
fn first_on_column_of(key: &CellKey) -> CellKey {
    CellKey::first_on_column(key.row_bytes(), key.family(), key.qualifier())
}

fn make(kind: &str) -> Arc<dyn Store> {
    match kind {
        "memstore" => Arc::new(MemStore::new(MemStoreOptions::default())),
        "memstore_no_mslab" => Arc::new(MemStore::new(MemStoreOptions {
            mslab: false,
            ..MemStoreOptions::default()
        })),
        "memstore_flat" => Arc::new(Flattened(MemStore::new(MemStoreOptions::default()))),
        "btreemap" => Arc::new(LockedBTree(RwLock::new(BTreeMap::new()))),
        _ => Arc::new(BareSkipList(SkipMap::new())),
    }
}

const KINDS: [&str; 4] = ["memstore", "memstore_no_mslab", "skiplist", "btreemap"];

/// `count` cells with random YCSB-style rows; values slice one shared buffer so generating them
/// allocates little and the request-buffer situation (cells pointing into a big buffer) is real.
fn cells(count: usize, value_len: usize, seed: u64) -> Vec<Cell> {
    let mut rng = StdRng::seed_from_u64(seed);
    let values = Bytes::from(vec![b'v'; value_len * 64]);
    (0..count)
        .map(|i| {
            let row = format!("user{:019}", rng.random::<u64>());
            let at = (i % 64) * value_len;
            let mut cell = Cell::put(row, "f", "field0", 1, values.slice(at..at + value_len))
                .expect("valid cell");
            cell.set_sequence_id(i as u64 + 1);
            cell
        })
        .collect()
}

/// `rows` rows of ten 100-byte columns (timestamp 1), then `versions` newer versions of
/// random columns of random rows, each version newer than the last: YCSB's updates, which the
/// memstore takes as a new cell in front of the column's older ones.
fn versioned_cells(rows: usize, versions: usize) -> (Vec<Cell>, Vec<Cell>) {
    let mut rng = StdRng::seed_from_u64(6);
    let value = Bytes::from(vec![b'v'; 100]);
    let names: Vec<String> = (0..rows)
        .map(|_| format!("user{:019}", rng.random::<u64>()))
        .collect();
    let cell = |row: &str, column: usize, version: usize| {
        let mut cell = Cell::put(
            row.to_string(),
            "f",
            format!("field{column}"),
            version as i64 + 1,
            value.clone(),
        )
        .expect("valid cell");
        cell.set_sequence_id(version as u64 + 1);
        cell
    };
    let load = names
        .iter()
        .flat_map(|row| (0..10).map(move |column| (row, column)))
        .map(|(row, column)| cell(row, column, 0))
        .collect();
    let updates = (0..versions)
        .map(|i| {
            let row = &names[rng.random_range(0..rows)];
            cell(row, rng.random_range(0..10), i + 1)
        })
        .collect();
    (load, updates)
}

/// Inserts all cells with `threads` threads; returns inserts per second.
fn insert_rate(store: &Arc<dyn Store>, cells: &[Cell], threads: usize) -> f64 {
    let start = Instant::now();
    thread::scope(|scope| {
        for part in cells.chunks(cells.len().div_ceil(threads)) {
            let store = Arc::clone(store);
            scope.spawn(move || part.iter().for_each(|cell| store.insert(cell.clone())));
        }
    });
    cells.len() as f64 / start.elapsed().as_secs_f64()
}

/// What one writer beside one scanner achieved.
struct OneOne {
    writer_rate: f64,
    scans: u64,
    scan_p50_us: f64,
    scan_p99_us: f64,
}

/// One writer inserting while one scanner reads 100-cell ranges from random rows (borrowing
/// them when `kind` ends in `_visit`).
fn one_writer_one_reader(kind: &str, cells: &[Cell], preload: &[Cell]) -> OneOne {
    let borrowed = kind.ends_with("_visit");
    let store = make(kind.trim_end_matches("_visit"));
    preload.iter().for_each(|cell| store.insert(cell.clone()));
    let stop = AtomicBool::new(false);
    thread::scope(|scope| {
        let reader = scope.spawn(|| {
            let mut rng = StdRng::seed_from_u64(7);
            let mut latency = Histogram::<u64>::new(3).expect("histogram");
            while !stop.load(Ordering::Relaxed) {
                let from = CellKey::first_on_row(format!("user{:019}", rng.random::<u64>()));
                let started = Instant::now();
                if borrowed {
                    std::hint::black_box(store.scan_borrowed(&from, 100));
                } else {
                    std::hint::black_box(store.scan(&from, 100));
                }
                latency
                    .record(started.elapsed().as_nanos() as u64)
                    .expect("record");
            }
            latency
        });
        let writer_rate = insert_rate(&store, cells, 1);
        stop.store(true, Ordering::Relaxed);
        let latency = reader.join().expect("reader");
        OneOne {
            writer_rate,
            scans: latency.len(),
            scan_p50_us: latency.value_at_quantile(0.5) as f64 / 1e3,
            scan_p99_us: latency.value_at_quantile(0.99) as f64 / 1e3,
        }
    })
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let (inserts, loaded) = if quick {
        (100_000, 200_000)
    } else {
        (400_000, 1_000_000)
    };
    println!(
        "keel-memstore benchmark ({}), 2-core machine; rates are best of 3",
        if quick { "quick" } else { "full" }
    );

    println!("\ninserts/s ({inserts} cells per run):");
    println!(
        "{:<20} {:>12} {:>12} {:>12} {:>12}",
        "store", "100B 1t", "100B 2t", "1KiB 1t", "1KiB 2t"
    );
    let small = cells(inserts, 100, 1);
    let large = cells(inserts / 4, 1024, 2);
    let mut rates = BTreeMap::new();
    for kind in KINDS {
        let mut row = Vec::new();
        for (cells, threads) in [(&small, 1), (&small, 2), (&large, 1), (&large, 2)] {
            let best = (0..3)
                .map(|_| insert_rate(&make(kind), cells, threads))
                .fold(0.0, f64::max);
            row.push(best);
        }
        println!(
            "{kind:<20} {:>12.0} {:>12.0} {:>12.0} {:>12.0}",
            row[0], row[1], row[2], row[3]
        );
        rates.insert(kind, row);
    }
    let ratio = |kind: &str, base: &str, i: usize| rates[kind][i] / rates[base][i];
    println!(
        "memstore / btreemap: {:.2} {:.2} {:.2} {:.2}; memstore / bare skiplist: {:.2} {:.2} {:.2} {:.2}",
        ratio("memstore", "btreemap", 0),
        ratio("memstore", "btreemap", 1),
        ratio("memstore", "btreemap", 2),
        ratio("memstore", "btreemap", 3),
        ratio("memstore", "skiplist", 0),
        ratio("memstore", "skiplist", 1),
        ratio("memstore", "skiplist", 2),
        ratio("memstore", "skiplist", 3),
    );

    println!(
        "\none writer + one scanner (100-cell scans from random rows), {inserts} inserts of 100 B:"
    );
    let preload = cells(loaded / 4, 100, 3);
    let mut one_one = BTreeMap::new();
    for kind in ["memstore", "memstore_visit", "skiplist", "btreemap"] {
        let best = (0..3)
            .map(|_| one_writer_one_reader(kind, &small, &preload))
            .max_by(|a, b| a.writer_rate.total_cmp(&b.writer_rate))
            .expect("three runs");
        println!(
            "{kind:<20} writer {:>10.0}/s  scans {:>8}  scan p50 {:>6.1} µs  p99 {:>7.1} µs",
            best.writer_rate, best.scans, best.scan_p50_us, best.scan_p99_us
        );
        one_one.insert(kind, best);
    }
    println!(
        "memstore / btreemap: writer {:.2}, scans done {:.2}, scan p99 {:.2}",
        one_one["memstore"].writer_rate / one_one["btreemap"].writer_rate,
        one_one["memstore"].scans as f64 / one_one["btreemap"].scans as f64,
        one_one["memstore"].scan_p99_us / one_one["btreemap"].scan_p99_us,
    );

    println!(
        "\nheap allocations per insert (1 thread, 100 B cells; the cells themselves pre-built):"
    );
    let mut allocs = BTreeMap::new();
    for kind in KINDS {
        let store = make(kind);
        let before = keel_testkit::allocations();
        small.iter().for_each(|cell| store.insert(cell.clone()));
        let per = (keel_testkit::allocations() - before) as f64 / small.len() as f64;
        println!("{kind:<20} {per:.3}");
        allocs.insert(kind, per);
    }

    let (rows, versions) = if quick {
        (20_000, 200_000)
    } else {
        (100_000, 1_000_000)
    };
    println!(
        "\nnew versions of loaded rows ({rows} rows of 10 columns loaded, {versions} new \
         versions of random columns; 1 thread, inserts/s best of 3):"
    );
    let (load, updates) = versioned_cells(rows, versions);
    let mut version_rates = BTreeMap::new();
    for kind in ["memstore", "skiplist", "btreemap"] {
        let best = (0..3)
            .map(|_| {
                let store = make(kind);
                load.iter().for_each(|cell| store.insert(cell.clone()));
                insert_rate(&store, &updates, 1)
            })
            .fold(0.0, f64::max);
        println!("{kind:<20} {best:>12.0}");
        version_rates.insert(kind, best);
    }
    println!(
        "memstore / btreemap {:.2}, / bare skiplist {:.2}",
        version_rates["memstore"] / version_rates["btreemap"],
        version_rates["memstore"] / version_rates["skiplist"],
    );

    println!("\nover {loaded} loaded cells of 100 B: point get and full scan");
    let all = cells(loaded, 100, 4);
    let mut get_p50 = BTreeMap::new();
    let mut scan_rate = BTreeMap::new();
    for kind in ["memstore", "memstore_flat", "skiplist", "btreemap"] {
        let store = make(kind);
        all.iter().for_each(|cell| store.insert(cell.clone()));
        store.settle();
        let mut histogram = Histogram::<u64>::new(3).expect("histogram");
        let mut rng = StdRng::seed_from_u64(5);
        for _ in 0..200_000 {
            let key = all[rng.random_range(0..all.len())].key();
            let started = Instant::now();
            assert!(store.get(key));
            histogram
                .record(started.elapsed().as_nanos() as u64)
                .expect("record");
        }
        let scan_started = Instant::now();
        let bytes = store.scan(&CellKey::first_on_row(""), usize::MAX);
        let scan_secs = scan_started.elapsed().as_secs_f64();
        let visit_started = Instant::now();
        let visited = store.scan_borrowed(&CellKey::first_on_row(""), usize::MAX);
        let visit_secs = visit_started.elapsed().as_secs_f64();
        // Data bytes per cell: row 23 + family 1 + qualifier 6 + value 100.
        let mb = (all.len() * 130) as f64 / 1e6;
        assert_eq!((bytes, visited), (all.len() * 100, all.len() * 100));
        println!(
            "{kind:<20} get p50 {:>6} ns  p99 {:>6} ns   scan {:>8.1} MB/s  borrowed {:>8.1} MB/s",
            histogram.value_at_quantile(0.5),
            histogram.value_at_quantile(0.99),
            mb / scan_secs,
            mb / visit_secs
        );
        get_p50.insert(kind, histogram.value_at_quantile(0.5) as f64);
        scan_rate.insert(kind, mb / scan_secs);
    }
    println!(
        "memstore get p50 / skiplist {:.2}, / btreemap {:.2}; scan MB/s / skiplist {:.2}, / btreemap {:.2}",
        get_p50["memstore"] / get_p50["skiplist"],
        get_p50["memstore"] / get_p50["btreemap"],
        scan_rate["memstore"] / scan_rate["skiplist"],
        scan_rate["memstore"] / scan_rate["btreemap"],
    );

    println!();
    println!(
        "{}",
        figure(
            "memstore_insert_vs_btreemap_1w1r",
            one_one["memstore"].writer_rate / one_one["btreemap"].writer_rate
        )
    );
    println!(
        "{}",
        figure("memstore_allocs_per_insert_mslab", allocs["memstore"])
    );
    println!("{}", figure("memstore_get_p50_ns", get_p50["memstore"]));
    // In-memory flush (HBase's BASIC): the same cells as one flat array against the skip list.
    println!(
        "{}",
        figure(
            "memstore_flat_get_speedup",
            get_p50["memstore"] / get_p50["memstore_flat"]
        )
    );
    println!(
        "{}",
        figure(
            "memstore_flat_scan_speedup",
            scan_rate["memstore_flat"] / scan_rate["memstore"]
        )
    );
}
