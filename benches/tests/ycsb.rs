//! The YCSB driver against YCSB's published behaviour: key names, Zipfian skew as the formula
//! predicts, `latest` favouring new keys, the acknowledged window never handing out an
//! unacknowledged key, workload files, the report line by line, and whole runs against Keel
//! embedded and over Thrift.

use std::collections::HashMap;
use std::sync::Arc;

use keel_bench::ycsb::db::Status;
use keel_bench::ycsb::generators::{
    AcknowledgedCounter, Histogram, ScrambledZipfian, SkewedLatest, Zipfian, fnv_hash64,
};
use keel_bench::ycsb::measure::{Measurements, Report, java_double, ordinal};
use keel_bench::ycsb::props::{Props, preset};
use keel_bench::ycsb::runner::{RunOptions, run, timestamp};
use keel_bench::ycsb::targets::{Embedded, Layout, Thrift, decode_record, encode_record};
use keel_bench::ycsb::workload::CoreWorkload;
use keel_region::{Engine, EngineOptions};
use rand::SeedableRng;
use rand::rngs::StdRng;

fn workload(text: &str) -> CoreWorkload {
    let mut p = Props::new();
    p.load_str(text);
    CoreWorkload::new(&p).expect("a valid workload")
}

#[test]
fn key_names_are_ycsbs() {
    let w = workload("recordcount=10\n");
    assert_eq!(w.key_name(0), "user6284781860667377211", "YCSB's key 0");
    assert_eq!(w.key_name(1), format!("user{}", fnv_hash64(1)));
    assert_ne!(w.key_name(1), w.key_name(2));
    let ordered = workload("recordcount=10\ninsertorder=ordered\nzeropadding=5\n");
    assert_eq!(ordered.key_name(42), "user00042");
    assert_eq!(
        ordered.key_name(123_456),
        "user123456",
        "padding never truncates"
    );
    assert!(fnv_hash64(i64::MAX) >= 0 || fnv_hash64(i64::MAX) == i64::MIN);
}

/// ζ(n, θ) by its definition.
fn zeta(n: i64, theta: f64) -> f64 {
    (1..=n).map(|i| 1.0 / (i as f64).powf(theta)).sum()
}

#[test]
fn zipfian_skew_matches_the_formula() {
    let n = 1000;
    let z = Zipfian::new(0, n - 1);
    let mut rng = StdRng::seed_from_u64(7);
    let draws = 400_000;
    let mut counts = vec![0u64; n as usize];
    for _ in 0..draws {
        let v = z.next(&mut rng);
        assert!((0..n).contains(&v));
        counts[v as usize] += 1;
    }
    // Items 0 and 1 are drawn exactly as Zipf's law says: 1/ζ(n) and 2^-θ/ζ(n).
    let first = counts[0] as f64 / draws as f64;
    assert!((first - 1.0 / zeta(n, 0.99)).abs() < 0.004, "{first}");
    let second = counts[1] as f64 / draws as f64;
    assert!(
        (second - 0.5_f64.powf(0.99) / zeta(n, 0.99)).abs() < 0.004,
        "{second}"
    );
    // The top 1% of items (0..10) get Σ 1/i^θ / ζ(n) of the draws, within the few percent
    // that Gray et al.'s closed form (YCSB's, kept as is) adds to the head beyond item 1.
    let predicted = zeta(10, 0.99) / zeta(n, 0.99);
    let top: u64 = counts[..10].iter().sum();
    let share = top as f64 / draws as f64;
    assert!(
        share / predicted > 0.98 && share / predicted < 1.06,
        "top 1% share {share:.4}, formula {predicted:.4}"
    );
    // Beyond the head, popularity keeps falling: the top 10% takes more than the next 10%.
    let next: u64 = counts[10..100].iter().sum();
    let after: u64 = counts[100..190].iter().sum();
    assert!(next > after);
    // Scrambled: the same skew, spread over the range by hashing.
    let s = ScrambledZipfian::new(0, n - 1);
    let mut counts: HashMap<i64, u64> = HashMap::new();
    for _ in 0..draws {
        let v = s.next(&mut rng);
        assert!((0..n).contains(&v));
        *counts.entry(v).or_default() += 1;
    }
    let mut sorted: Vec<u64> = counts.values().copied().collect();
    sorted.sort_unstable_by(|a, b| b.cmp(a));
    let hottest = sorted[0] as f64 / draws as f64;
    // Item 0 of the 10^10-item Zipfian: 1/26.469 ≈ 3.78% (more if others hash onto it).
    assert!(hottest > 0.035, "the hottest key takes {hottest:.4}");
    let top_ten = counts
        .keys()
        .copied()
        .filter(|k| counts[k] >= sorted[9])
        .collect::<Vec<_>>();
    assert!(
        top_ten.iter().any(|&k| k > n / 2),
        "popular keys are spread over the range, not clustered at low ids: {top_ten:?}"
    );
}

#[test]
fn latest_favours_the_newest_acknowledged_keys() {
    let acked = AcknowledgedCounter::new(1000);
    for _ in 0..1000 {
        let id = acked.next();
        acked.acknowledge(id).expect("acknowledge");
    }
    assert_eq!(acked.last(), 1999);
    let latest = SkewedLatest::new(&acked);
    let mut rng = StdRng::seed_from_u64(3);
    let draws = 100_000;
    let mut newest_ten = 0;
    for _ in 0..draws {
        let k = latest.next(&mut rng, &acked);
        assert!(k <= 1999, "never past the last acknowledged key");
        if k >= 1990 {
            newest_ten += 1;
        }
    }
    let share = newest_ten as f64 / draws as f64;
    let predicted = zeta(10, 0.99) / zeta(1999, 0.99);
    assert!(
        (share - predicted).abs() < 0.02,
        "newest 10 keys: {share:.3}, formula {predicted:.3}"
    );
}

#[test]
fn the_acknowledged_window_never_hands_out_an_unacknowledged_key() {
    let acked = Arc::new(AcknowledgedCounter::new(100));
    let done: Arc<parking_lot::Mutex<std::collections::BTreeSet<i64>>> = Arc::default();
    std::thread::scope(|s| {
        for t in 0..4 {
            let (acked, done) = (Arc::clone(&acked), Arc::clone(&done));
            s.spawn(move || {
                let mut rng = StdRng::seed_from_u64(t);
                for _ in 0..5000 {
                    let id = acked.next();
                    // Inserts finish out of order.
                    if rand::Rng::random_bool(&mut rng, 0.3) {
                        std::thread::yield_now();
                    }
                    done.lock().insert(id);
                    acked.acknowledge(id).expect("within the window");
                }
            });
        }
        let (acked, done) = (Arc::clone(&acked), Arc::clone(&done));
        s.spawn(move || {
            let mut checked = 99;
            while checked < 100 + 4 * 5000 - 1 {
                let last = acked.last();
                let done = done.lock();
                // Every id up to `last` has finished.
                assert!(
                    (checked + 1..=last).all(|id| done.contains(&id)),
                    "last {last} but an id below it is unfinished"
                );
                checked = checked.max(last);
            }
        });
    });
    assert_eq!(acked.last(), 100 + 4 * 5000 - 1);
    // The window is bounded: with id 0 never acknowledged, the window fills, and an id whose
    // slot is still taken is YCSB's "too many unacknowledged insertion keys".
    let w = AcknowledgedCounter::new(0);
    assert_eq!(w.next(), 0);
    for _ in 1..(1 << 20) {
        let id = w.next();
        w.acknowledge(id).expect("room in the window");
    }
    assert_eq!(w.last(), -1, "id 0 was never acknowledged");
    let _aliases_zero = w.next();
    let aliases_one = w.next();
    assert!(w.acknowledge(aliases_one).is_err());
}

#[test]
fn workload_files_presets_and_overrides() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("workloadx");
    std::fs::write(
        &file,
        "# a comment\n! another\nrecordcount = 500\noperationcount: 42\nreadproportion=0.4\nupdateproportion=0.6\nrequestdistribution=hotspot\n",
    )
    .expect("write");
    let mut p = Props::new();
    p.load_file(&file).expect("load");
    p.set_arg("operationcount=77").expect("-p");
    assert_eq!(p.int("recordcount", 0).expect("int"), 500);
    assert_eq!(p.int("operationcount", 0).expect("int"), 77, "-p wins");
    let w = CoreWorkload::new(&p).expect("workload");
    assert_eq!((w.record_count, w.operation_count), (500, 77));
    assert!(p.set_arg("novalue").is_err());
    let mut bad = Props::new();
    bad.set("recordcount", "many");
    assert!(CoreWorkload::new(&bad).is_err());
    bad = Props::new();
    bad.set("requestdistribution", "gaussian");
    assert!(CoreWorkload::new(&bad).is_err());
    for name in ["a", "b", "c", "d", "e", "f", "workloada"] {
        let mut p = Props::new();
        p.load_str(preset(name).expect("a preset"));
        let w = CoreWorkload::new(&p).expect("preset workload");
        assert_eq!(w.record_count, 1000, "{name}");
    }
    assert!(preset("g").is_none());
}

#[test]
fn histogram_field_lengths_follow_ycsbs_arithmetic() {
    // Buckets 0, 1, 2 with counts 0, 3, 1: a draw of 0 stops in bucket 0 (one block), 1–3 stop
    // in bucket 1 (two blocks); YCSB's walk never reaches the last bucket here.
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("hist.txt");
    std::fs::write(&file, "BlockSize\t100\n0\t0\n1\t3\n2\t1\n").expect("write");
    let h = Histogram::parse(&std::fs::read_to_string(&file).expect("read")).expect("parse");
    assert_eq!(h.mean(), 125.0, "YCSB's mean: 100 × (1·3 + 2·1) ÷ 4");
    let mut rng = StdRng::seed_from_u64(7);
    let mut counts = HashMap::new();
    for _ in 0..40_000 {
        *counts.entry(h.next(&mut rng)).or_insert(0u32) += 1;
    }
    assert_eq!(counts.len(), 2, "{counts:?}");
    let quarter = f64::from(counts[&100]) / 40_000.0;
    assert!((quarter - 0.25).abs() < 0.01, "{quarter}");
    // A draw past every bucket but the last gives the last bucket's index in blocks.
    let tail = Histogram::new(vec![1, 0, 0, 5], 10).expect("histogram");
    let mut seen: Vec<i64> = (0..2_000).map(|_| tail.next(&mut rng)).collect();
    seen.sort_unstable();
    seen.dedup();
    assert_eq!(seen, [10, 30]);
    // The workload reads it through `fieldlengthhistogram`.
    let w = workload(&format!(
        "fieldcount=50\nfieldlengthdistribution=histogram\nfieldlengthhistogram={}\n",
        file.display()
    ));
    let lengths: Vec<usize> = w
        .all_values(&mut rng)
        .iter()
        .map(|(_, v)| v.len())
        .collect();
    assert!(
        lengths.iter().all(|l| [100, 200].contains(l)),
        "{lengths:?}"
    );
    assert!(lengths.contains(&200));
    // Bad files say what is wrong and where.
    for (text, wanted) in [
        ("", "empty"),
        ("Blocks\t4\n0\t1\n", "line 1"),
        ("BlockSize\tfour\n", "line 1"),
        ("BlockSize\t4\n1\t1\n", "bucket 1 where bucket 0"),
        ("BlockSize\t4\n0\t1\n1\n", "line 3"),
        ("BlockSize\t4\n0\t0\n", "no counts"),
        ("BlockSize\t4\n0\t-2\n", "negative"),
    ] {
        let e = Histogram::parse(text).expect_err(text);
        assert!(e.contains(wanted), "{text:?}: {e}");
    }
    let mut missing = Props::new();
    missing.load_str("fieldlengthdistribution=histogram\nfieldlengthhistogram=/no/such/hist.txt\n");
    let e = CoreWorkload::new(&missing)
        .expect_err("missing file")
        .to_string();
    assert!(e.contains("/no/such/hist.txt"), "{e}");
}

#[test]
fn the_report_is_ycsbs_line_by_line() {
    let mut m = Measurements::default();
    for us in [100, 200, 300, 400] {
        m.record("READ", us, Some(Status::Ok));
    }
    m.record("READ", 900, Some(Status::NotFound));
    m.record("UPDATE", 50, Some(Status::Ok));
    m.record("Intended-READ", 150, None);
    let report = Report::new(&m, 2000, 6, &[95.0, 99.0]);
    let text = report.text();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines,
        [
            "[OVERALL], RunTime(ms), 2000",
            "[OVERALL], Throughput(ops/sec), 3.0",
            "[READ], Operations, 5",
            "[READ], AverageLatency(us), 380.0",
            "[READ], MinLatency(us), 100",
            "[READ], MaxLatency(us), 900",
            "[READ], 95thPercentileLatency(us), 900",
            "[READ], 99thPercentileLatency(us), 900",
            "[READ], Return=OK, 4",
            "[READ], Return=NOT_FOUND, 1",
            "[UPDATE], Operations, 1",
            "[UPDATE], AverageLatency(us), 50.0",
            "[UPDATE], MinLatency(us), 50",
            "[UPDATE], MaxLatency(us), 50",
            "[UPDATE], 95thPercentileLatency(us), 50",
            "[UPDATE], 99thPercentileLatency(us), 50",
            "[UPDATE], Return=OK, 1",
            "[Intended-READ], Operations, 1",
            "[Intended-READ], AverageLatency(us), 150.0",
            "[Intended-READ], MinLatency(us), 150",
            "[Intended-READ], MaxLatency(us), 150",
            "[Intended-READ], 95thPercentileLatency(us), 150",
            "[Intended-READ], 99thPercentileLatency(us), 150",
        ]
    );
    for (x, java) in [
        (62500.0, "62500.0"),
        (28.157188626351626, "28.157188626351626"),
        (0.00042, "4.2E-4"),
        (1.0e7, "1.0E7"),
        (12_345_678.9, "1.23456789E7"),
        (0.001, "0.001"),
        (0.0, "0.0"),
    ] {
        assert_eq!(java_double(x), java, "{x}");
    }
    for (p, label) in [
        (50.0, "50th"),
        (95.0, "95th"),
        (99.0, "99th"),
        (1.0, "1st"),
        (2.0, "2nd"),
        (3.0, "3rd"),
        (11.0, "11th"),
        (12.0, "12th"),
        (13.0, "13th"),
        (21.0, "21st"),
        (99.9, "99.9"),
    ] {
        assert_eq!(ordinal(p), label);
    }
    assert_eq!(timestamp(0), "1970-01-01 00:00:00:000");
    assert_eq!(timestamp(1_796_000_123_456), "2026-11-30 00:55:23:456");
    assert_eq!(
        timestamp(951_782_400_123),
        "2000-02-29 00:00:00:123",
        "a leap day"
    );
    let record = vec![
        ("field0".to_string(), bytes::Bytes::from_static(b"abc")),
        ("field1".to_string(), bytes::Bytes::new()),
    ];
    assert_eq!(decode_record(&encode_record(&record)), Some(record));
    assert_eq!(decode_record(b"\x00\x00\x00\x09abc"), None);
}

fn quick_options(load: bool, threads: usize) -> RunOptions {
    RunOptions {
        load,
        threads,
        target_ops: 0.0,
        max_execution: None,
        status_interval: std::time::Duration::from_secs(3600),
        percentiles: vec![95.0, 99.0],
        status: false,
        progress: false,
    }
}

#[test]
fn whole_runs_against_keel_embedded_in_both_layouts() {
    for layout in [Layout::Columns, Layout::Cell] {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Arc::new(Engine::open(dir.path(), EngineOptions::default()).expect("open"));
        let w = workload(
            "recordcount=300\noperationcount=600\nreadproportion=0.4\nupdateproportion=0.2\n\
             insertproportion=0.1\nscanproportion=0.1\nreadmodifywriteproportion=0.2\n\
             requestdistribution=zipfian\nfieldcount=4\nfieldlength=20\nmaxscanlength=10\n",
        );
        let target = Embedded::new(&store, &w.table, "family", layout).expect("target");
        let load = run(&w, &target, &quick_options(true, 3)).expect("load");
        assert_eq!(load.operations, 300);
        let insert = load
            .ops
            .iter()
            .find(|o| o.name == "INSERT")
            .expect("INSERT");
        assert_eq!(insert.returns, vec![("OK".to_string(), 300)]);
        let runs = run(&w, &target, &quick_options(false, 3)).expect("run");
        assert_eq!(runs.operations, 600);
        // Every read finds its record: keys come only from acknowledged inserts.
        let read = runs.ops.iter().find(|o| o.name == "READ").expect("READ");
        assert_eq!(read.returns.len(), 1, "{layout:?}: {:?}", read.returns);
        assert_eq!(read.returns[0].0, "OK");
        for name in ["UPDATE", "INSERT", "SCAN", "READ-MODIFY-WRITE", "CLEANUP"] {
            assert!(
                runs.ops.iter().any(|o| o.name == name),
                "{layout:?}: {name}"
            );
        }
        assert_eq!(
            w.insert_keys().last(),
            299 + runs
                .ops
                .iter()
                .find(|o| o.name == "INSERT")
                .map_or(0, |o| o.operations) as i64
        );
    }
}

#[test]
fn a_target_rate_paces_the_run_and_reports_intended_latency() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Arc::new(Engine::open(dir.path(), EngineOptions::default()).expect("open"));
    let w = workload("recordcount=100\noperationcount=200\n");
    let target = Embedded::new(&store, &w.table, "family", Layout::Columns).expect("target");
    run(&w, &target, &quick_options(true, 1)).expect("load");
    let options = RunOptions {
        target_ops: 1000.0,
        ..quick_options(false, 2)
    };
    let report = run(&w, &target, &options).expect("run");
    // 200 operations at 1000/s take about 200 ms, never much less.
    assert!(report.runtime_ms >= 180, "{} ms", report.runtime_ms);
    assert!(report.ops.iter().any(|o| o.name == "Intended-READ"));
    let max = RunOptions {
        max_execution: Some(std::time::Duration::from_millis(50)),
        ..options
    };
    let w = workload("recordcount=100\noperationcount=100000\n");
    run(&w, &target, &quick_options(true, 1)).expect("load");
    let cut = run(&w, &target, &max).expect("run");
    assert!(cut.operations < 100_000, "maxexecutiontime stopped it");
}

#[test]
fn a_run_over_thrift_against_keel_serve() {
    use keel_server::{Handler, HandlerOptions, NetOptions, ThriftServer};
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Arc::new(Engine::open(dir.path(), EngineOptions::default()).expect("open"));
    let server = ThriftServer::start(
        Arc::new(Handler::new(store, HandlerOptions::default())),
        NetOptions {
            listen: "127.0.0.1:0".parse().expect("address"),
            ..NetOptions::default()
        },
    )
    .expect("server");
    for layout in [Layout::Columns, Layout::Cell] {
        let w = workload(
            "table=t1\nrecordcount=200\noperationcount=300\nreadproportion=0.5\nupdateproportion=0.3\n\
             scanproportion=0.1\nreadmodifywriteproportion=0.1\nreadallfields=false\nfieldcount=3\n",
        );
        let table = if layout == Layout::Cell { "t2" } else { "t1" };
        let w = if layout == Layout::Cell {
            workload(&format!(
                "table={table}\nrecordcount=200\noperationcount=300\nreadproportion=0.5\nupdateproportion=0.5\nfieldcount=3\n"
            ))
        } else {
            w
        };
        let target = Thrift::new(server.local_addr(), &w.table, "family", layout).expect("target");
        let load = run(&w, &target, &quick_options(true, 2)).expect("load");
        assert_eq!(load.operations, 200);
        let runs = run(&w, &target, &quick_options(false, 2)).expect("run");
        assert_eq!(runs.operations, 300);
        let read = runs.ops.iter().find(|o| o.name == "READ").expect("READ");
        assert_eq!(
            read.returns,
            vec![("OK".to_string(), read.operations)],
            "{layout:?}"
        );
    }
    server.shutdown();
}

/// The peers (only with `--features peers`; CI leaves them out).
#[cfg(feature = "peers")]
#[test]
fn runs_against_the_peers() {
    use keel_bench::ycsb::db::Target;
    use keel_bench::ycsb::peers::{Fjall, PeerDurability, RocksDb};
    for peer in ["fjall", "rocksdb"] {
        let dir = tempfile::tempdir().expect("tempdir");
        let w = workload(
            "recordcount=300\noperationcount=600\nreadproportion=0.4\nupdateproportion=0.3\n\
             scanproportion=0.1\ninsertproportion=0.1\nreadmodifywriteproportion=0.1\nfieldcount=4\n",
        );
        let target: Box<dyn Target> = if peer == "fjall" {
            Box::new(Fjall::open(dir.path(), &w.table, PeerDurability::Sync).expect("fjall"))
        } else {
            Box::new(RocksDb::open(dir.path(), PeerDurability::Fsync).expect("rocksdb"))
        };
        assert_eq!(
            run(&w, &*target, &quick_options(true, 2))
                .expect("load")
                .operations,
            300
        );
        let runs = run(&w, &*target, &quick_options(false, 2)).expect("run");
        assert_eq!(runs.operations, 600);
        let read = runs.ops.iter().find(|o| o.name == "READ").expect("READ");
        assert_eq!(
            read.returns,
            vec![("OK".to_string(), read.operations)],
            "{peer}"
        );
    }
}
