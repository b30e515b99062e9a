//! The seed experiments at their smallest: the three driven by the YCSB driver run for real,
//! the two imported ones parse their benchmarks' actual output, and the report and charts are
//! written.

use keel_bench::seeds::{self, Size};

/// `cargo xtask bench increment --quick`'s output (trimmed).
const INCREMENT: &str = "\
durability order        total ms     incr/s   p75 µs   p95 µs   p99 µs | per increment, µs:   lock append   sync  memst   mvcc
SyncWal   Reordered         148      54032     1127     2551     5511 |                      565.5  161.4  130.7    0.9  280.6
SyncWal   Legacy            175      45658     1687     3221     5679 |                      480.8  142.7  174.4    0.8  246.7
FsyncWal  Reordered        1074      37244     2389     4899     7911 |                      652.6  372.2  498.6    1.2  517.6
FsyncWal  Legacy           1402      28530     3085     5619     8671 |                      544.3  320.9  449.5    1.1  489.8
figure: increment_new_vs_legacy_time = 0.8450
figure: increment_new_vs_legacy_p99 = 0.9704
";

/// `cargo xtask bench tracing --quick`'s table and figures.
const TRACING: &str = "\
| build | run time ms | read p95 µs | read p99 µs |
|---|---|---|---|
| compiled out | 1453 | 52.1 | 63.5 |
| compiled in, no subscriber | 1465 | 53.0 | 65.7 |
| compiled in, recording subscriber | 1873 | 66.4 | 80.4 |
| compiled in, OTLP export | 2511 | 70.1 | 251.3 |
figure: tracing_off_vs_compiled_out_p99 = 1.0343
figure: tracing_on_vs_compiled_out_p99 = 1.2661
";

#[test]
fn imported_benchmarks_become_results() {
    let reorder = seeds::imported::reorder(INCREMENT, Size::Quick).expect("reorder");
    assert_eq!(reorder.figure, ("seed001_reorder_time_ratio".into(), 0.845));
    assert_eq!(reorder.rows[0].keel_a, 0.148);
    assert_eq!(reorder.rows[3].keel_b, 5679.0);
    assert_eq!(reorder.rows[4].measure, "FsyncWal: total time, s");
    assert_eq!(
        (reorder.rows[4].keel_a, reorder.rows[4].keel_b),
        (1.074, 1.402)
    );
    assert_eq!(reorder.rows[5].keel_b, 8671.0);
    let tracing = seeds::imported::tracing(TRACING, Size::Quick).expect("tracing");
    assert_eq!(tracing.figure.1, 1.0343);
    assert_eq!(
        (tracing.rows[2].keel_a, tracing.rows[2].keel_b),
        (65.7, 63.5)
    );
    assert_eq!(
        (tracing.rows[5].keel_a, tracing.rows[5].keel_b),
        (251.3, 63.5),
        "the OTLP export's p99 beside compiled out"
    );
    assert!(seeds::imported::reorder("nothing here", Size::Quick).is_err());
    assert!(seeds::imported::tracing(INCREMENT, Size::Quick).is_err());
}

#[test]
fn the_whole_stack_experiments_run_and_the_report_is_written() {
    let out = tempfile::tempdir().expect("tempdir");
    let fastpath = seeds::fastpath::run_seed(Size::Quick).expect("fastpath");
    assert_eq!(fastpath.figure.0, "seed000_fastpath_throughput_ratio");
    assert!(fastpath.figure.1 > 0.0 && fastpath.figure.1.is_finite());
    assert!(fastpath.rows[0].keel_a > 0.0 && fastpath.rows[0].keel_b > 0.0);
    fastpath.save(out.path()).expect("save");
    let bufpool = seeds::bufpool::run_seed(Size::Quick).expect("bufpool");
    assert_eq!(bufpool.figure.0, "seed002_buffer_creations_ratio");
    assert!(bufpool.figure.1 > 1.0, "{:?}", bufpool.figure);
    // The seed's shape: every read (about 100 bytes) creates a buffer in Ikeda's pool (B), and
    // the shared pool's buffers (A) serve every read.
    let reads = bufpool
        .rows
        .iter()
        .find(|r| r.measure.starts_with("buffers created (read phase)"))
        .expect("the read phase's creations");
    assert_eq!(reads.keel_a, 0.0, "{reads:?}");
    assert!(reads.keel_b >= 100.0, "{reads:?}");
    // Every design ran, beside the seed's two pools.
    let designs = &bufpool.tables[0];
    assert_eq!(designs.columns.len(), 7, "{:?}", designs.columns);
    assert!(designs.rows.iter().all(|(_, v)| v.len() == 7));
    let throughput = &designs.rows[0].1;
    assert!(
        throughput[..5].iter().all(|t| t.is_some_and(|t| t > 0.0)),
        "{throughput:?}"
    );
    bufpool.save(out.path()).expect("save");
    let idlock = seeds::idlock::run_seed(Size::Quick).expect("idlock");
    assert_eq!(idlock.figure.0, "seed004_soft_vs_weak");
    assert!(idlock.figure.1 > 0.0 && idlock.figure.1.is_finite());
    // Every round was served from the cache alone, for both pools in both setups.
    let hit_ratios: Vec<&String> = idlock
        .notes
        .iter()
        .filter(|n| n.contains("hit ratio in the rounds"))
        .collect();
    assert_eq!(hit_ratios.len(), 4, "{:?}", idlock.notes);
    assert!(
        hit_ratios
            .iter()
            .all(|n| n.contains("hit ratio in the rounds 1.0000")),
        "{hit_ratios:?}"
    );
    // The weak pool makes a lock object for (nearly) every bucket-cache read, the soft none.
    assert!(
        idlock
            .notes
            .iter()
            .any(|n| n.contains("Soft") && n.contains(" 0 lock objects created in the rounds")),
        "{:?}",
        idlock.notes
    );
    idlock.save(out.path()).expect("save");
    for r in [
        seeds::imported::reorder(INCREMENT, Size::Quick).expect("reorder"),
        seeds::imported::tracing(TRACING, Size::Quick).expect("tracing"),
    ] {
        r.save(out.path()).expect("save");
    }
    let results = seeds::report::write(out.path()).expect("report");
    assert_eq!(
        results.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
        ["seed000", "seed001", "seed002", "seed003", "seed004"]
    );
    let report = std::fs::read_to_string(out.path().join("report.md")).expect("report.md");
    for r in &results {
        assert!(report.contains(&format!("## {}", r.id)));
        assert!(report.contains(&r.figure.0));
        let svg = std::fs::read_to_string(out.path().join(format!("{}.svg", r.name))).expect("svg");
        assert!(svg.starts_with("<svg"), "{}", r.name);
    }
    assert!(report.contains("| throughput, ops/s (30 handlers, median of 3) |"));
    assert!(report.contains(
        "| measure | fixed-pool | plain | per-connection | shared-average | size-class |"
    ));
}
