//! `keel serve`'s OTLP export (build feature `otlp`): its `tracing` spans go to an
//! OpenTelemetry collector over OTLP/HTTP with protobuf, as HBase 2.5+ exports its spans with
//! OpenTelemetry. The SDK's batch processor runs on its own thread with a blocking HTTP client,
//! so no async runtime comes near the data path; a span costs the thread that ends it one
//! hand-off into the batch queue. Traces are sampled at their root (`keel.otlp.sampling.ratio`,
//! OpenTelemetry's `parentbased_traceidratio`): a child follows its parent.

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, SpanExporter, WithExportConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{Sampler, SdkTracerProvider};
use tracing_subscriber::registry::LookupSpan;

/// The running exporter. [`Exporter::shutdown`] sends what is still queued.
pub(crate) struct Exporter {
    provider: SdkTracerProvider,
}

impl Exporter {
    /// Flushes the queued spans to the collector and stops the batch thread.
    pub(crate) fn shutdown(self) {
        if let Err(e) = self.provider.shutdown() {
            tracing::warn!("OTLP export: {e}");
        }
    }
}

/// The traces URL for `endpoint`: a collector's base URL (no path) gets OTLP's `/v1/traces`,
/// as OpenTelemetry's `OTEL_EXPORTER_OTLP_ENDPOINT` does; a URL with a path is used as given.
fn traces_url(endpoint: &str) -> String {
    let after_scheme = endpoint
        .split_once("://")
        .map_or(endpoint, |(_, rest)| rest);
    match after_scheme.find('/') {
        Some(at) if after_scheme.len() > at + 1 => endpoint.to_string(),
        _ => format!("{}/v1/traces", endpoint.trim_end_matches('/')),
    }
}

/// A layer that exports the spans it sees to `endpoint`, keeping `ratio` of the traces, and the
/// exporter to shut down when the server stops.
pub(crate) fn layer<S>(
    endpoint: &str,
    ratio: f64,
) -> Result<(impl tracing_subscriber::Layer<S>, Exporter), String>
where
    S: tracing::Subscriber + for<'a> LookupSpan<'a>,
{
    let url = traces_url(endpoint);
    let exporter = SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(&url)
        .build()
        .map_err(|e| format!("keel.otlp.endpoint {url}: {e}"))?;
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_sampler(Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(
            ratio,
        ))))
        .with_resource(Resource::builder().with_service_name("keel").build())
        .build();
    let tracer = provider.tracer("keel");
    Ok((
        tracing_opentelemetry::layer().with_tracer(tracer),
        Exporter { provider },
    ))
}

#[cfg(test)]
mod tests {
    use super::traces_url;

    #[test]
    fn a_base_url_gets_the_traces_path() {
        assert_eq!(traces_url("http://c:4318"), "http://c:4318/v1/traces");
        assert_eq!(traces_url("http://c:4318/"), "http://c:4318/v1/traces");
        assert_eq!(
            traces_url("http://c:4318/custom/traces"),
            "http://c:4318/custom/traces"
        );
    }
}
