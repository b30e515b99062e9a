//! `cargo xtask bench blockcache`: HBASE-17747's experiment. A bucket cache holding every block
//! (100 % hit ratio), threads reading zipfian-chosen 1 KiB blocks as fast as they can, once per
//! id-lock pool for the slot locks: reads/s, each pool's ratio to Weak, lock objects created per
//! 1 000 reads. Also the id locks on their own, and the LRU cache's throughput and hit ratio.

#![expect(clippy::print_stdout, reason = "a benchmark reports on the terminal")]

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use hdrhistogram::Histogram;
use keel_blockcache::{
    AreaKind, BlockCache, BlockCacheExt, BlockKey, BucketCache, BucketOptions, IdReadWriteLock,
    LruBlockCache, LruOptions, PoolKind,
};
use keel_testkit::{Zipfian, figure};
use rand::SeedableRng;
use rand::rngs::StdRng;

const BLOCKS: u64 = 16_384;
const THREADS: u64 = 8;

struct Result {
    reads_per_s: f64,
    created_per_1000: f64,
    p50_ns: u64,
}

fn run(kind: PoolKind, blocks: &[Vec<u8>], run: Duration) -> Result {
    let locks = IdReadWriteLock::<(u64, u64)>::new(kind);
    let stop = AtomicBool::new(false);
    let zipf = Zipfian::new(0, BLOCKS - 1);
    let (reads, hist) = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..THREADS)
            .map(|t| {
                let (locks, stop, zipf) = (&locks, &stop, zipf.clone());
                scope.spawn(move || {
                    let mut rng = StdRng::seed_from_u64(17_747 + t);
                    let mut hist = Histogram::<u64>::new(3).unwrap_or_else(|e| panic!("{e}"));
                    let (mut reads, mut sum) = (0u64, 0u64);
                    while !stop.load(Ordering::Relaxed) {
                        let block = zipf.next(&mut rng);
                        let timed = reads.is_multiple_of(64);
                        let start = timed.then(Instant::now);
                        {
                            let _guard = locks.read(&(1, block * 1024));
                            let data = &blocks[block as usize];
                            sum = sum.wrapping_add(u64::from(data[0]) + u64::from(data[1023]));
                        }
                        if let Some(start) = start {
                            let _ = hist.record(start.elapsed().as_nanos() as u64);
                        }
                        reads += 1;
                    }
                    std::hint::black_box(sum);
                    (reads, hist)
                })
            })
            .collect();
        std::thread::sleep(run);
        stop.store(true, Ordering::Relaxed);
        let mut total = 0;
        let mut all = Histogram::<u64>::new(3).unwrap_or_else(|e| panic!("{e}"));
        for w in workers {
            let (n, h) = w.join().unwrap_or_else(|_| panic!("reader panicked"));
            total += n;
            let _ = all.add(h);
        }
        (total, all)
    });
    let stats = locks.stats();
    let created = match kind {
        PoolKind::Striped { .. } => 0,
        _ => stats.created,
    };
    Result {
        reads_per_s: reads as f64 / run.as_secs_f64(),
        created_per_1000: created as f64 * 1000.0 / reads.max(1) as f64,
        p50_ns: hist.value_at_quantile(0.5),
    }
}

/// HBASE-17747's experiment: a bucket cache holding every block (100 % hit ratio), threads reading
/// zipfian-chosen 1 KiB blocks as fast as they can, the slot locks from `kind`'s pool.
fn run_bucket(kind: PoolKind, area: &AreaKind, run: Duration) -> Result {
    let cache = BucketCache::new(BucketOptions {
        capacity_bytes: 128 << 20,
        id_lock_pool: kind,
        area: area.clone(),
        ..BucketOptions::default()
    })
    .unwrap_or_else(|e| panic!("{e}"));
    for offset in 0..BLOCKS {
        let key = BlockKey { file_id: 1, offset };
        if !cache.insert(key, bytes::Bytes::from(vec![offset as u8; 1024]), false) {
            cache.flush_writes();
            cache.insert(key, bytes::Bytes::from(vec![offset as u8; 1024]), false);
        }
    }
    cache.flush_writes();
    assert_eq!(cache.stats().blocks, BLOCKS, "every block cached");
    let created_before = cache.slot_locks().stats().created;
    let stop = AtomicBool::new(false);
    let zipf = Zipfian::new(0, BLOCKS - 1);
    let (reads, hist) = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..THREADS)
            .map(|t| {
                let (cache, stop, zipf) = (&cache, &stop, zipf.clone());
                scope.spawn(move || {
                    let mut rng = StdRng::seed_from_u64(17_747 + t);
                    let mut hist = Histogram::<u64>::new(3).unwrap_or_else(|e| panic!("{e}"));
                    let mut reads = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        let key = BlockKey {
                            file_id: 1,
                            offset: zipf.next(&mut rng),
                        };
                        let timed = reads.is_multiple_of(64);
                        let start = timed.then(Instant::now);
                        let block = cache.get(&key, true, false);
                        if let Some(start) = start {
                            let _ = hist.record(start.elapsed().as_nanos() as u64);
                        }
                        assert!(block.is_some(), "100 % hit ratio");
                        reads += 1;
                    }
                    (reads, hist)
                })
            })
            .collect();
        std::thread::sleep(run);
        stop.store(true, Ordering::Relaxed);
        let mut total = 0;
        let mut all = Histogram::<u64>::new(3).unwrap_or_else(|e| panic!("{e}"));
        for w in workers {
            let (n, h) = w.join().unwrap_or_else(|_| panic!("reader panicked"));
            total += n;
            let _ = all.add(h);
        }
        (total, all)
    });
    let created = match kind {
        PoolKind::Striped { .. } => 0,
        _ => cache.slot_locks().stats().created - created_before,
    };
    Result {
        reads_per_s: reads as f64 / run.as_secs_f64(),
        created_per_1000: created as f64 * 1000.0 / reads.max(1) as f64,
        p50_ns: hist.value_at_quantile(0.5),
    }
}

/// LRU gets (all hits) and inserts per second with `threads` threads.
fn lru_throughput(threads: u64, run: Duration) -> (f64, f64) {
    let cache = LruBlockCache::new(LruOptions {
        capacity_bytes: 64 << 20,
        ..LruOptions::default()
    });
    let block = Bytes::from(vec![7u8; 1024]);
    for offset in 0..BLOCKS {
        cache.insert(BlockKey { file_id: 1, offset }, block.clone(), false);
    }
    let timed = |insert: bool| {
        let stop = AtomicBool::new(false);
        let ops: u64 = std::thread::scope(|scope| {
            let workers: Vec<_> = (0..threads)
                .map(|t| {
                    let (cache, stop, block) = (&cache, &stop, block.clone());
                    scope.spawn(move || {
                        let (mut n, mut offset) = (0u64, t * 1_000_003);
                        while !stop.load(Ordering::Relaxed) {
                            offset = offset.wrapping_add(7_919);
                            if insert {
                                let key = BlockKey {
                                    file_id: 2 + t,
                                    offset,
                                };
                                cache.insert(key, block.clone(), false);
                            } else {
                                let key = BlockKey {
                                    file_id: 1,
                                    offset: offset % BLOCKS,
                                };
                                std::hint::black_box(cache.get(&key, true, false));
                            }
                            n += 1;
                        }
                        n
                    })
                })
                .collect();
            std::thread::sleep(run);
            stop.store(true, Ordering::Relaxed);
            workers.into_iter().map(|w| w.join().unwrap_or(0)).sum()
        });
        ops as f64 / run.as_secs_f64()
    };
    (timed(false), timed(true))
}

/// LRU hits on a trace, with `get_or_load` caching every miss.
fn lru_hits(trace: &[u64], capacity_blocks: u64) -> u64 {
    let options = LruOptions {
        capacity_bytes: capacity_blocks * 1024,
        eviction_thread: false,
        ..LruOptions::default()
    };
    let cache = LruBlockCache::new(options);
    let block = Bytes::from(vec![1u8; 1024]);
    for &offset in trace {
        let _ = cache.get_or_load(BlockKey { file_id: 1, offset }, false, || {
            Ok::<_, ()>(block.clone())
        });
    }
    cache.stats().hits
}

fn lru_section(quick: bool) {
    let run = if quick {
        Duration::from_millis(300)
    } else {
        Duration::from_secs(1)
    };
    println!();
    println!("LRU block cache (1 KiB blocks):");
    for threads in [1, 2] {
        let (gets, inserts) = lru_throughput(threads, run);
        println!(
            "  {threads} thread(s): {gets:>12.0} gets/s (all hits), {inserts:>10.0} inserts/s (with eviction)"
        );
    }
    let n = if quick { 200_000 } else { 1_000_000 };
    let zipf = Zipfian::new(0, 99_999);
    let mut rng = StdRng::seed_from_u64(99);
    let zipfian: Vec<u64> = (0..n).map(|_| zipf.next(&mut rng)).collect();
    // The same trace with a one-pass scan over 50 000 other blocks every 100 000 reads.
    let mut polluted = Vec::with_capacity(n + n / 2);
    for (i, &offset) in zipfian.iter().enumerate() {
        polluted.push(offset);
        if i % 100_000 == 99_999 {
            polluted.extend((0..50_000).map(|s| 1_000_000 + (i as u64 / 100_000) * 50_000 + s));
        }
    }
    let capacity = 10_000;
    // Scan reads never hit (each block is read once), so both ratios are hits per zipfian read.
    let zipfian_reads = zipfian.len() as f64;
    println!(
        "  hit ratio of the zipfian reads, cache of {capacity} blocks over 100 000: {:.3}; \
         with one-pass scans of 50 000 blocks mixed in: {:.3}",
        lru_hits(&zipfian, capacity) as f64 / zipfian_reads,
        lru_hits(&polluted, capacity) as f64 / zipfian_reads
    );
}

/// Runs each of `n` configurations once per round, rounds interleaved so that a noisy moment
/// hits all alike, and keeps each one's best run (most reads per second).
fn best_of_rounds(rounds: usize, n: usize, mut run: impl FnMut(usize) -> Result) -> Vec<Result> {
    let mut best: Vec<Option<Result>> = (0..n).map(|_| None).collect();
    for _ in 0..rounds.max(1) {
        for (i, slot) in best.iter_mut().enumerate() {
            let r = run(i);
            if slot.as_ref().is_none_or(|b| r.reads_per_s > b.reads_per_s) {
                *slot = Some(r);
            }
        }
    }
    best.into_iter().flatten().collect()
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let (run_for, rounds) = if quick {
        (Duration::from_millis(300), 2)
    } else {
        (Duration::from_secs(1), 5)
    };
    let blocks: Vec<Vec<u8>> = (0..BLOCKS).map(|b| vec![b as u8; 1024]).collect();
    let kinds = [
        ("weak", PoolKind::Weak),
        (
            "soft",
            PoolKind::Soft {
                max_entries: BLOCKS as usize,
            },
        ),
        ("strong", PoolKind::Strong),
        ("striped", PoolKind::Striped { stripes: 1024 }),
    ];
    let rows = best_of_rounds(rounds, kinds.len(), |i| run(kinds[i].1, &blocks, run_for));
    println!(
        "{THREADS} threads, {BLOCKS} blocks of 1 KiB, zipfian (θ = 0.99), every read under its id read lock"
    );
    println!(
        "{:>8} {:>12} {:>8} {:>16} {:>8}",
        "pool", "reads/s", "vs weak", "objects/1000 rd", "p50"
    );
    for ((name, _), r) in kinds.iter().zip(&rows) {
        println!(
            "{name:>8} {:>12.0} {:>8.2} {:>16.2} {:>6} ns",
            r.reads_per_s,
            r.reads_per_s / rows[0].reads_per_s,
            r.created_per_1000,
            r.p50_ns
        );
    }
    // The seed experiment proper: through the bucket cache, on the heap and in a mapped file.
    let mapped = AreaKind::Mapped(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/bucket-bench.cache"),
    );
    let mut headline = None;
    for (area_name, area) in [("heap", AreaKind::Heap), ("mmap", mapped.clone())] {
        let bucket = best_of_rounds(rounds, kinds.len(), |i| {
            run_bucket(kinds[i].1, &area, run_for)
        });
        println!();
        println!(
            "Bucket cache ({area_name} area), {BLOCKS} blocks of 1 KiB all cached, {THREADS} threads, zipfian:"
        );
        println!(
            "{:>8} {:>12} {:>8} {:>16} {:>8}",
            "pool", "reads/s", "vs weak", "objects/1000 rd", "p50"
        );
        for ((name, _), r) in kinds.iter().zip(&bucket) {
            println!(
                "{name:>8} {:>12.0} {:>8.2} {:>16.2} {:>6} ns",
                r.reads_per_s,
                r.reads_per_s / bucket[0].reads_per_s,
                r.created_per_1000,
                r.p50_ns
            );
        }
        if headline.is_none() {
            headline = Some(bucket);
        }
    }
    if let AreaKind::Mapped(path) = &mapped {
        let _ = std::fs::remove_file(path);
    }
    lru_section(quick);
    let rows = headline.unwrap_or_else(|| panic!("the heap area ran"));
    let best_allocs = rows
        .iter()
        .map(|r| r.created_per_1000)
        .fold(f64::INFINITY, f64::min);
    let soft = &rows[1];
    println!(
        "{}",
        figure(
            "blockcache_soft_vs_weak",
            soft.reads_per_s / rows[0].reads_per_s
        )
    );
    println!(
        "{}",
        figure("blockcache_best_pool_allocs_per_1000_hits", best_allocs)
    );
    println!("{}", figure("blockcache_hit_p50_ns", soft.p50_ns as f64));
}
