//! The spans and events the region emits, and the trace context carried across threads: the
//! WAL writer's spans follow the appends they carry, and a flush the flusher thread makes
//! because a write was refused follows that write's span. One test, because the subscriber is
//! process-global (the flusher and WAL threads must see it).

#![cfg(feature = "tracing")]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use keel_region::matcher::ReadQuery;
use keel_region::{Engine, EngineOptions, FamilyOptions, RegionLimits};
use tracing::span::{Attributes, Id};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

#[derive(Default)]
struct Seen {
    /// Span name → the names of its parents, once per span created.
    spans: Vec<(String, Option<String>)>,
    /// (span, the span it follows from).
    follows: Vec<(String, String)>,
    /// (event message, the span it happened in).
    events: Vec<(String, Option<String>)>,
    names: HashMap<u64, String>,
}

#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Seen>>);

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Recorder {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let parent = ctx
            .span(id)
            .and_then(|s| s.parent())
            .map(|p| p.name().to_string());
        let mut seen = self.0.lock().expect("lock");
        seen.names
            .insert(id.into_u64(), attrs.metadata().name().to_string());
        seen.spans
            .push((attrs.metadata().name().to_string(), parent));
    }

    fn on_follows_from(&self, span: &Id, follows: &Id, _ctx: Context<'_, S>) {
        let mut seen = self.0.lock().expect("lock");
        let name = |id: &Id| seen.names.get(&id.into_u64()).cloned().unwrap_or_default();
        let pair = (name(span), name(follows));
        seen.follows.push(pair);
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        struct Message(String);
        impl tracing::field::Visit for Message {
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                if field.name() == "message" {
                    self.0 = format!("{value:?}");
                }
            }
        }
        let mut message = Message(String::new());
        event.record(&mut message);
        let within = ctx.lookup_current().map(|s| s.name().to_string());
        self.0
            .lock()
            .expect("lock")
            .events
            .push((message.0, within));
    }
}

fn wait_until(mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(Instant::now() < deadline, "not reached in time");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn spans_and_events_cover_the_paths_and_follow_across_threads() {
    let recorder = Recorder::default();
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(recorder.clone()))
        .expect("the only subscriber in this process");
    let seen = || recorder.0.lock().expect("lock");

    let dir = tempfile::tempdir().expect("tempdir");
    let options = EngineOptions {
        limits: RegionLimits {
            flush_size: 8 * 1024,
            block_multiplier: 2,
            ..RegionLimits::default()
        },
        // Long enough that only a request wakes the flusher in time.
        flush_check_interval: Duration::from_secs(3600),
        ..EngineOptions::default()
    };
    let server = Engine::open(dir.path(), options).expect("open");
    let t = server
        .create_table("t", vec![FamilyOptions::new("f")])
        .expect("create");

    // A write: its steps are children of its span; the WAL writer's span follows its append.
    t.put(b"a", b"f", b"q", b"1").expect("put");
    wait_until(|| {
        seen()
            .follows
            .iter()
            .any(|(s, f)| s == "wal.write" && f == "wal.append")
    });
    {
        let seen = seen();
        for step in [
            "region.row_lock",
            "wal.append",
            "wal.sync_wait",
            "mvcc.wait",
        ] {
            assert!(
                seen.spans.iter().any(
                    |(name, parent)| name == step && parent.as_deref() == Some("region.mutate")
                ),
                "{step} under region.mutate: {:?}",
                seen.spans
            );
        }
    }

    // Reads of a store file through the cache: a miss (and a block read), then hits, in gets.
    t.flush().expect("flush");
    let query = ReadQuery::latest(u64::MAX, 0);
    for _ in 0..3 {
        assert_eq!(t.get(b"a", &query).expect("get").len(), 1);
    }
    {
        let seen = seen();
        let count = |message: &str| {
            seen.events
                .iter()
                .filter(|(m, within)| m == message && within.as_deref() == Some("region.get"))
                .count()
        };
        assert!(count("block cache miss") >= 1, "{:?}", seen.events);
        assert!(count("block read") >= 1, "{:?}", seen.events);
        assert!(count("block cache hit") >= 2, "{:?}", seen.events);
    }

    // A write past the blocking size asks for a flush and waits for it; the flusher thread's
    // flush follows from that write.
    let value = vec![0u8; 1024];
    let mut n = 0;
    while t.region().stats().blocked_writes == 0 {
        t.put(format!("r{n}").as_bytes(), b"f", b"q", &value)
            .expect("put");
        n += 1;
        assert!(n < 1000, "no write waited for a flush");
    }
    wait_until(|| {
        seen()
            .follows
            .iter()
            .any(|(s, f)| s == "region.flush" && f == "region.mutate")
    });

    // Compactions have their span.
    t.major_compact().expect("compact");
    assert!(
        seen()
            .spans
            .iter()
            .any(|(name, _)| name == "region.compact")
    );
    drop(t);
    server.close().expect("close");
}
