//! Seed 004, HBASE-17747: soft vs weak id-lock pool, embedded, 100% block-cache hits,
//! read-only. The seed's YCSB setup scaled to this machine: records of one 1 KiB field, loaded,
//! flushed and major-compacted once, then served from a warm cache by two stores that differ
//! only in the pool (weak, HBase's old choice; soft, HBASE-17747's), 8 threads of uniform
//! reads, many short interleaved rounds (the side that runs first alternating), reported as
//! the median of the rounds' soft ÷ weak ratios with their spread. Twice: with HBase's on-heap
//! LRU cache (whose id locks are taken only to load a block, so the pool should not matter on
//! hits) and with the bucket cache (HBase's "offheap", whose every read takes its slot's id
//! lock). Beside the throughput, the data that explains it: lock objects made per read by
//! each pool (from the stores' counters), and what one uncontended id read lock costs in each
//! pool, timed on its own.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use keel_blockcache::IdReadWriteLock;
use keel_region::{AreaKind, BlockCacheKind, Engine, EngineOptions, PoolKind};

use super::{Row, SeedResult, Size};
use crate::ycsb::props::Props;
use crate::ycsb::runner::{RunOptions, run};
use crate::ycsb::targets::{Embedded, Layout};
use crate::ycsb::workload::CoreWorkload;

/// The median and the lowest and highest of `values`.
fn median_spread(values: &[f64]) -> (f64, f64, f64) {
    let low = values.iter().copied().fold(f64::INFINITY, f64::min);
    let high = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (super::median(values.iter().copied()), low, high)
}

/// The interquartile range of `values` (nearest-rank quartiles).
fn quartiles(values: &[f64]) -> (f64, f64) {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    let at = |q: f64| v[((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1];
    (at(0.25), at(0.75))
}

/// Nanoseconds per uncontended id read lock taken and released, over `ids` ids in turn, in a
/// pool of `kind` (one thread; the best of three passes).
fn read_lock_ns(kind: PoolKind, ids: u64) -> f64 {
    let locks = IdReadWriteLock::<u64>::new(kind);
    let passes = (2_000_000 / ids.max(1)).max(1);
    let mut best = f64::INFINITY;
    for _ in 0..3 {
        let started = std::time::Instant::now();
        for _ in 0..passes {
            for id in 0..ids {
                drop(std::hint::black_box(locks.read(&id)));
            }
        }
        best = best.min(started.elapsed().as_nanos() as f64 / (passes * ids) as f64);
    }
    best
}

fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), target)?;
        }
    }
    Ok(())
}

fn open(
    dir: &Path,
    kind: &BlockCacheKind,
    pool: Option<PoolKind>,
    cache: u64,
) -> Result<Engine, String> {
    Engine::open(
        dir,
        EngineOptions {
            block_cache_kind: kind.clone(),
            block_cache_bytes: cache,
            block_cache_lock_pool: pool,
            memory_bytes: 8 * cache.max(1 << 30),
            ..EngineOptions::default()
        },
    )
    .map_err(|e| format!("opening {}: {e}", dir.display()))
}

/// Runs the experiment.
pub fn run_seed(size: Size) -> Result<SeedResult, String> {
    let (records, round, rounds) = match size {
        Size::Quick => (2_000, Duration::from_millis(200), 4),
        Size::Default => (100_000, Duration::from_secs(2), 16),
        Size::Full => (1_000_000, Duration::from_secs(5), 24),
    };
    let mut p = Props::new();
    p.load_str(&format!(
        "recordcount={records}\noperationcount=1000000000\nfieldcount=1\nfieldlength=1024\n\
         readproportion=1\nupdateproportion=0\nthreadcount=8\n"
    ));
    let workload = CoreWorkload::new(&p).map_err(|e| e.to_string())?;
    let cache = (records as u64 * 2048).max(64 << 20);
    // Load, flush and major-compact once; each configuration then opens its own copy.
    let base = tempfile::tempdir().map_err(|e| e.to_string())?;
    let prepared = base.path().join("prepared");
    {
        let store = Arc::new(open(&prepared, &BlockCacheKind::Lru, None, 0)?);
        let target = Embedded::new(&store, &workload.table, "family", Layout::Columns)?;
        let mut load = RunOptions::from_props(&p, true).map_err(|e| e.to_string())?;
        (load.status, load.progress) = (false, false);
        run(&workload, &target, &load)?;
        let table = store.table(&workload.table).map_err(|e| e.to_string())?;
        table.flush().map_err(|e| e.to_string())?;
        table.major_compact().map_err(|e| e.to_string())?;
    }
    let setups = [
        ("on-heap LRU cache", BlockCacheKind::Lru),
        (
            "bucket cache, heap area (HBase's offheap)",
            BlockCacheKind::Bucket(AreaKind::Heap),
        ),
    ];
    let mut rows = Vec::new();
    let mut notes = Vec::new();
    let mut headline = f64::NAN;
    let mut last_read_us = f64::NAN;
    let mut lru_ratio = f64::NAN;
    for (s, (name, kind)) in setups.iter().enumerate() {
        let pools = [
            PoolKind::Weak,
            PoolKind::Soft {
                max_entries: 100_000,
            },
        ];
        let mut stores = Vec::new();
        for (i, pool) in pools.iter().enumerate() {
            let dir = base.path().join(format!("setup{s}-{i}"));
            copy_dir(&prepared, &dir).map_err(|e| format!("copying the data: {e}"))?;
            let store = Arc::new(open(&dir, kind, Some(*pool), cache)?);
            let target = Embedded::new(&store, &workload.table, "family", Layout::Columns)?;
            // Warm: every record read twice (the bucket cache's writers insert in the background).
            let mut warm = RunOptions::from_props(&p, false).map_err(|e| e.to_string())?;
            (warm.status, warm.progress) = (false, false);
            let all = CoreWorkload::new(&{
                let mut q = p.clone();
                q.set("requestdistribution", "sequential");
                q.set("operationcount", &(2 * records).to_string());
                q.set("threadcount", "1");
                q
            })
            .map_err(|e| e.to_string())?;
            warm.threads = 1;
            run(&all, &target, &warm)?;
            std::thread::sleep(Duration::from_millis(500));
            stores.push((*pool, store, target));
        }
        let mut per_pool: Vec<Vec<f64>> = vec![Vec::new(); 2];
        let mut hits_before = Vec::new();
        let mut lock_before = Vec::new();
        for (_, store, _) in &stores {
            hits_before.push(store.block_cache_stats().unwrap_or_default());
            lock_before.push(store.block_cache_lock_stats().unwrap_or_default().created);
        }
        for r in 0..rounds {
            let order: [usize; 2] = if r % 2 == 0 { [0, 1] } else { [1, 0] };
            for i in order {
                let (_, _, target) = &stores[i];
                let mut options = RunOptions::from_props(&p, false).map_err(|e| e.to_string())?;
                (options.status, options.progress) = (false, false);
                options.max_execution = Some(round);
                let report = run(&workload, target, &options)?;
                per_pool[i].push(report.throughput());
            }
        }
        for (i, (pool, store, _)) in stores.iter().enumerate() {
            let after = store.block_cache_stats().unwrap_or_default();
            let (hits, misses) = (
                after.hits - hits_before[i].hits,
                after.misses - hits_before[i].misses,
            );
            let locks = store.block_cache_lock_stats().unwrap_or_default();
            let (before, after) = (lock_before[i], locks.created);
            notes.push(format!(
                "{name}, {pool:?}: hit ratio in the rounds {:.4} ({hits} hits, {misses} misses); \
                 {} lock objects created in the rounds, {:.2} per 1 000 reads ({after} in all)",
                hits as f64 / (hits + misses).max(1) as f64,
                after - before,
                (after - before) as f64 * 1000.0 / hits.max(1) as f64,
            ));
        }
        let (seed_soft, seed_weak) = if s == 0 {
            (
                [268_122.88, 284_483.97, 283_008.47, 268_476.58],
                [275_652.63, 248_664.33, 264_297.58, 253_694.31],
            )
        } else {
            (
                [217_398.73, 232_581.16, 225_765.03, 229_071.14],
                [199_073.76, 210_060.77, 216_729.41, 221_610.16],
            )
        };
        // The seed published four rounds: Keel's first four sit beside them.
        for r in 0..rounds.min(4) {
            rows.push(Row {
                measure: format!("{name}: round {} reads/s", r + 1),
                keel_a: per_pool[1][r],
                keel_b: per_pool[0][r],
                seed_a: Some(seed_soft[r]),
                seed_b: Some(seed_weak[r]),
            });
        }
        let (soft_median, ..) = median_spread(&per_pool[1]);
        let (weak_median, ..) = median_spread(&per_pool[0]);
        rows.push(Row {
            measure: format!("{name}: median reads/s of {rounds} rounds (the seed: average of 4)"),
            keel_a: soft_median,
            keel_b: weak_median,
            seed_a: Some(if s == 0 {
                276_022.974_356
            } else {
                226_204.013_586
            }),
            seed_b: Some(if s == 0 {
                260_577.212_104
            } else {
                211_868.525_664
            }),
        });
        let ratios: Vec<f64> = per_pool[1]
            .iter()
            .zip(&per_pool[0])
            .map(|(soft, weak)| soft / weak)
            .collect();
        let (median, low, high) = median_spread(&ratios);
        let (q1, q3) = quartiles(&ratios);
        notes.push(format!(
            "{name}: soft ÷ weak per round (each round runs both, the first alternating): median \
             {median:.3}, interquartile {q1:.3}–{q3:.3}, range {low:.3}–{high:.3} over {rounds} \
             rounds; the effect ({:+.1}%) is {} the interquartile half-width ({:.1}%)",
            (median - 1.0) * 100.0,
            if (median - 1.0).abs() > (q3 - q1) / 2.0 {
                "larger than"
            } else {
                "within"
            },
            (q3 - q1) / 2.0 * 100.0
        ));
        if s == 0 {
            lru_ratio = median;
        }
        if s == 1 {
            headline = median;
            // CPU time per read: the cores' time over the reads they served.
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
            last_read_us = cores / weak_median.max(1.0) * 1e6;
        }
    }
    // What the pools cost per read, on their own: the allocation the soft pool saves.
    let ids = records as u64;
    let weak_ns = read_lock_ns(PoolKind::Weak, ids);
    let soft_ns = read_lock_ns(
        PoolKind::Soft {
            max_entries: 100_000,
        },
        ids,
    );
    let per_read_ns = last_read_us * 1000.0;
    notes.push(if weak_ns > soft_ns {
        format!(
            "One uncontended id read lock over {ids} ids, one thread: weak pool {weak_ns:.0} ns \
             (a lock object made and freed each time), soft pool {soft_ns:.0} ns (kept). The soft \
             pool saves {:.0} ns per read, against a read that costs the machine about {:.1} µs \
             here: at most {:.1}%, with no garbage collector (whose card marking and \
             young-generation churn were the seed's cost).",
            weak_ns - soft_ns,
            last_read_us,
            (weak_ns - soft_ns) / per_read_ns * 100.0
        )
    } else {
        format!(
            "One uncontended id read lock over {ids} ids, one thread: weak pool {weak_ns:.0} ns \
             (a lock object made and freed each time), soft pool {soft_ns:.0} ns (kept). The soft \
             pool costs {:.0} ns more per read: it keeps an object for every id it has seen, and a \
             lookup in that map misses the cache more often than the weak pool's allocation and \
             free cost (its map holds only the locks in use). With no garbage collector, whose \
             card marking and young-generation churn were the seed's cost, the allocation the soft \
             pool saves is cheaper than what it adds ({:.1}% of a {:.1} µs read).",
            soft_ns - weak_ns,
            (soft_ns - weak_ns) / per_read_ns * 100.0,
            last_read_us
        )
    });
    notes.push(format!(
        "The on-heap LRU cache takes no id lock on a hit, so its soft ÷ weak ratio ({lru_ratio:.3}) \
         measures only the difference between the two stores (each its own copy of the data, \
         opened one after the other): the bucket cache's ratio relative to it is {:.3}.",
        headline / lru_ratio
    ));
    Ok(SeedResult {
        id: "seed004".into(),
        name: "idlock".into(),
        hbase: "HBASE-17747".into(),
        title: "soft vs weak id-lock pool, embedded, 100% block-cache hits, read only".into(),
        seed_labels: None,
        labels: ("soft".into(), "weak".into()),
        setup: format!(
            "keel-region embedded through the YCSB driver: {records} records of one 1 KiB field, flushed and \
             major-compacted, fully cached; 8 threads of uniform reads, {rounds} interleaved rounds of {round:?} \
             per pool, with the on-heap LRU cache and with the bucket cache"
        ),
        figure: ("seed004_soft_vs_weak".into(), headline),
        rows,
        notes,
        series: Vec::new(),
        tables: Vec::new(),
        size,
    })
}
