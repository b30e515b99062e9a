//! `keel serve` with `keel.otlp.endpoint` exports its spans over OTLP/HTTP: a collector stand-in
//! in this test receives the POSTs, decodes them with OpenTelemetry's own protobuf types, and
//! checks the spans of a put and a scan: their names, each region span a child of its call's
//! span in the same trace, and their attributes. (Build feature `otlp`; CI builds it.)

mod common;

use std::collections::HashMap;
use std::sync::{Mutex, mpsc};
use std::time::{Duration, Instant};

use common::{b, connect, create_table, put, start, write_config};
use keel_testkit::HttpSink;
use keel_thrift::hbase::{BatchMutation, Call, Reply, TScan};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use prost::Message;

/// One exported span, as the collector decoded it.
#[derive(Debug, Clone)]
struct Span {
    name: String,
    trace_id: Vec<u8>,
    span_id: Vec<u8>,
    parent_span_id: Vec<u8>,
    attributes: HashMap<String, String>,
}

/// The spans of one OTLP export request, decoded with OpenTelemetry's own protobuf types.
fn decode(body: &[u8]) -> Vec<Span> {
    let request = ExportTraceServiceRequest::decode(body).expect("OTLP protobuf");
    request
        .resource_spans
        .iter()
        .flat_map(|r| &r.scope_spans)
        .flat_map(|s| &s.spans)
        .map(|span| Span {
            name: span.name.clone(),
            trace_id: span.trace_id.clone(),
            span_id: span.span_id.clone(),
            parent_span_id: span.parent_span_id.clone(),
            attributes: span
                .attributes
                .iter()
                .map(|kv| {
                    let value = match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
                        Some(Value::StringValue(s)) => s.clone(),
                        Some(Value::IntValue(i)) => i.to_string(),
                        Some(Value::BoolValue(b)) => b.to_string(),
                        other => format!("{other:?}"),
                    };
                    (kv.key.clone(), value)
                })
                .collect(),
        })
        .collect()
}

/// The call span for `method` and the region span under it named `child`, once both arrived.
fn call_and_child<'a>(
    spans: &'a [Span],
    method: &str,
    child: &str,
) -> Option<(&'a Span, &'a Span)> {
    spans
        .iter()
        .filter(|s| {
            s.name == "thrift.call"
                && s.attributes.get("method").map(String::as_str) == Some(method)
        })
        .find_map(|call| {
            spans
                .iter()
                .find(|s| s.name == child && s.parent_span_id == call.span_id)
                .map(|c| (call, c))
        })
}

#[test]
fn a_put_and_a_scan_are_exported_with_their_region_spans_as_children() {
    let (tx, rx) = mpsc::channel();
    let tx = Mutex::new(tx);
    let collector = HttpSink::start(move |path, body| {
        assert_eq!(path, "/v1/traces", "OTLP's traces path");
        if let Ok(tx) = tx.lock() {
            for span in decode(body) {
                // The test may have finished and dropped its receiver.
                drop(tx.send(span));
            }
        }
    })
    .expect("collector");

    let dir = tempfile::tempdir().expect("tempdir");
    let (port, config) = write_config(
        dir.path(),
        &format!(
            "\"keel.otlp.endpoint\" = \"{}\"\n\"keel.otlp.sampling.ratio\" = 1.0\n",
            collector.url()
        ),
    );
    let _server = start(&config);
    let mut client = connect(port);
    create_table(&mut client, "t");
    client
        .call(&Call::MutateRows {
            table: b("t"),
            batches: vec![BatchMutation {
                row: b("row1"),
                mutations: vec![put("cf:a", "1")],
            }],
            timestamp: None,
        })
        .expect("put");
    let Ok(Reply::I32(id)) = client.call(&Call::ScannerOpen {
        table: b("t"),
        scan: TScan::default(),
    }) else {
        panic!("scannerOpen failed");
    };
    client
        .call(&Call::ScannerGet { id, rows: 10 })
        .expect("scannerGetList");

    // The batch exporter sends on its own schedule (every 5 s by default).
    let mut spans = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    let (put_pair, scan_pair) = loop {
        while let Ok(span) = rx.recv_timeout(Duration::from_millis(200)) {
            spans.push(span);
        }
        let put_pair = call_and_child(&spans, "mutateRows", "region.batch")
            .or_else(|| call_and_child(&spans, "mutateRows", "region.mutate"))
            .map(|(a, b)| (a.clone(), b.clone()));
        let scan_pair = call_and_child(&spans, "scannerOpenWithScan", "region.scan_open")
            .map(|(a, b)| (a.clone(), b.clone()));
        if let (Some(p), Some(s)) = (&put_pair, &scan_pair) {
            break (p.clone(), s.clone());
        }
        assert!(
            Instant::now() < deadline,
            "spans exported so far: {:?}",
            spans
                .iter()
                .map(|s| (&s.name, s.attributes.get("method")))
                .collect::<Vec<_>>()
        );
    };
    for (call, region) in [&put_pair, &scan_pair] {
        assert_eq!(call.trace_id, region.trace_id, "one trace per call");
        assert!(
            call.parent_span_id.is_empty(),
            "the call's span is the trace's root"
        );
        assert!(
            region.attributes.contains_key("region"),
            "{:?}",
            region.attributes
        );
        assert!(
            call.attributes.contains_key("connection"),
            "{:?}",
            call.attributes
        );
    }
    assert_ne!(
        put_pair.0.trace_id, scan_pair.0.trace_id,
        "two calls, two traces"
    );
}
