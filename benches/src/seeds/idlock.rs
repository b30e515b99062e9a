//! Seed 004, HBASE-17747: soft vs weak id-lock pool, embedded, 100% block-cache hits,
//! read-only. The seed's YCSB setup scaled to this machine: records of one 1 KiB field, loaded,
//! flushed and major-compacted once, then served from a warm cache by two stores that differ
//! only in the pool (weak, HBase's old choice; soft, HBASE-17747's), 8 threads of uniform
//! reads, four interleaved rounds. Twice: with HBase's on-heap LRU cache (whose id locks are
//! taken only to load a block, so the pool should not matter on hits) and with the bucket
//! cache (HBase's "offheap", whose every read takes its slot's id lock).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use keel_region::{AreaKind, BlockCacheKind, PoolKind, RegionServer, ServerOptions};

use super::{Row, SeedResult, Size};
use crate::ycsb::props::Props;
use crate::ycsb::runner::{RunOptions, run};
use crate::ycsb::targets::{Embedded, Layout};
use crate::ycsb::workload::CoreWorkload;

const ROUNDS: usize = 4;

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
) -> Result<RegionServer, String> {
    RegionServer::open(
        dir,
        ServerOptions {
            block_cache_kind: kind.clone(),
            block_cache_bytes: cache,
            block_cache_lock_pool: pool,
            memory_bytes: 8 * cache.max(1 << 30),
            ..ServerOptions::default()
        },
    )
    .map_err(|e| format!("opening {}: {e}", dir.display()))
}

/// Runs the experiment.
pub fn run_seed(size: Size) -> Result<SeedResult, String> {
    let (records, round) = match size {
        Size::Quick => (2_000, Duration::from_millis(300)),
        Size::Default => (100_000, Duration::from_secs(5)),
        Size::Full => (1_000_000, Duration::from_secs(30)),
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
        for (_, store, _) in &stores {
            hits_before.push(store.block_cache_stats().unwrap_or_default());
        }
        for r in 0..ROUNDS {
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
            notes.push(format!(
                "{name}, {pool:?}: hit ratio in the rounds {:.4} ({hits} hits, {misses} misses); {} lock objects created in all",
                hits as f64 / (hits + misses).max(1) as f64,
                locks.created
            ));
        }
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
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
        for r in 0..ROUNDS {
            rows.push(Row {
                measure: format!("{name}: round {} reads/s", r + 1),
                keel_a: per_pool[1][r],
                keel_b: per_pool[0][r],
                seed_a: Some(seed_soft[r]),
                seed_b: Some(seed_weak[r]),
            });
        }
        rows.push(Row {
            measure: format!("{name}: average reads/s"),
            keel_a: mean(&per_pool[1]),
            keel_b: mean(&per_pool[0]),
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
        if s == 1 {
            headline = mean(&per_pool[1]) / mean(&per_pool[0]);
        }
    }
    Ok(SeedResult {
        id: "seed004".into(),
        name: "idlock".into(),
        hbase: "HBASE-17747".into(),
        title: "soft vs weak id-lock pool, embedded, 100% block-cache hits, read only".into(),
        seed_labels: None,
        labels: ("soft".into(), "weak".into()),
        setup: format!(
            "keel-region embedded through the YCSB driver: {records} records of one 1 KiB field, flushed and \
             major-compacted, fully cached; 8 threads of uniform reads, {ROUNDS} interleaved rounds of {round:?} \
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
