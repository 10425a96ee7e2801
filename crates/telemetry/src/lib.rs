//! Traces across processes. Every incoming request continues the caller's W3C `traceparent`, and every
//! outgoing call (to ClickHouse, a webhook receiver, the control plane from the sampler or the Rust SDK) carries
//! the current span's, so that one trace goes from a GPU node's sampler to the database. With the `export`
//! feature, [`export::init`] sets up logging and, when `OTEL_EXPORTER_OTLP_ENDPOINT` (or
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set, OTLP/HTTP export of every span.
//!
//! Without an exporter the functions here still work: [`traceparent`] answers `None` and callers fall back to
//! ids of their own.

use opentelemetry::trace::{
    SpanContext, SpanId, TraceContextExt as _, TraceFlags, TraceId, TraceState,
};
use opentelemetry::Context;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

#[cfg(feature = "export")]
pub mod export;

/// The W3C `traceparent` of the current span (`00-<trace id>-<span id>-<flags>`), when spans are exported.
pub fn traceparent() -> Option<String> {
    traceparent_of(&tracing::Span::current())
}

/// The W3C `traceparent` of `span`, when spans are exported.
pub fn traceparent_of(span: &tracing::Span) -> Option<String> {
    let (trace_id, span_id, sampled) = ids(span)?;
    Some(format!(
        "00-{trace_id}-{span_id}-{}",
        if sampled { "01" } else { "00" }
    ))
}

/// The (trace id, span id, sampled) of `span` as lower-case hex, when spans are exported.
pub fn ids(span: &tracing::Span) -> Option<(String, String, bool)> {
    let cx = span.context();
    let sc = cx.span().span_context().clone();
    sc.is_valid().then(|| {
        (
            sc.trace_id().to_string(),
            sc.span_id().to_string(),
            sc.is_sampled(),
        )
    })
}

/// Makes `span` a child of the remote span (`trace_id`, `parent_id`, lower-case hex, already validated) of
/// another process. No effect when spans are not exported. Call it before the span is first entered.
pub fn continue_trace(span: &tracing::Span, trace_id: &str, parent_id: &str, sampled: bool) {
    let (Ok(t), Ok(p)) = (TraceId::from_hex(trace_id), SpanId::from_hex(parent_id)) else {
        return;
    };
    let flags = if sampled {
        TraceFlags::SAMPLED
    } else {
        TraceFlags::default()
    };
    let sc = SpanContext::new(t, p, flags, true, TraceState::default());
    let _ = span.set_parent(Context::new().with_remote_span_context(sc));
}
