//! The request middleware: request id (echoed or generated), W3C `traceparent` (honoured and propagated with a
//! new span id), one tracing span per request with the `eai.*` fields, the locale of error messages, and the
//! HTTP metrics. Spans are exported when the binary sets up an exporter (`eai_telemetry::export`).

use std::net::SocketAddr;
use std::time::Instant;

use axum::extract::{ConnectInfo, MatchedPath, Request, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rand::RngCore;
use tracing::Instrument;

use crate::request_context::{self, Locale, RequestContext};
use crate::state::AppState;

pub const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");
pub const TRACEPARENT: HeaderName = HeaderName::from_static("traceparent");

/// A W3C trace context: the caller's trace id, and the span id this service uses for the request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceContext {
    pub trace_id: String,
    pub parent_id: Option<String>,
    pub span_id: String,
    pub flags: String,
}

impl TraceContext {
    /// Continues the incoming `traceparent` if it is valid, else starts a new trace.
    pub fn continue_or_start(incoming: Option<&str>) -> Self {
        match incoming.and_then(parse_traceparent) {
            Some((trace_id, parent_id, flags)) => TraceContext {
                trace_id,
                parent_id: Some(parent_id),
                span_id: random_hex(8),
                flags,
            },
            None => TraceContext {
                trace_id: random_hex(16),
                parent_id: None,
                span_id: random_hex(8),
                flags: "00".into(),
            },
        }
    }

    pub fn header(&self) -> String {
        format!("00-{}-{}-{}", self.trace_id, self.span_id, self.flags)
    }
}

fn is_lower_hex(s: &str, len: usize) -> bool {
    s.len() == len
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// `version-traceid-parentid-flags` (W3C Trace Context level 1). Returns (trace id, parent id, flags).
pub fn parse_traceparent(v: &str) -> Option<(String, String, String)> {
    let parts: Vec<&str> = v.trim().split('-').collect();
    if parts.len() < 4 {
        return None;
    }
    let (version, trace, parent, flags) = (parts[0], parts[1], parts[2], parts[3]);
    // Version 00 has exactly four parts; a later version may append more, never version ff.
    if !is_lower_hex(version, 2) || version == "ff" || (version == "00" && parts.len() != 4) {
        return None;
    }
    if !is_lower_hex(trace, 32) || trace.bytes().all(|b| b == b'0') {
        return None;
    }
    if !is_lower_hex(parent, 16) || parent.bytes().all(|b| b == b'0') {
        return None;
    }
    if !is_lower_hex(flags, 2) {
        return None;
    }
    Some((trace.to_string(), parent.to_string(), flags.to_string()))
}

fn random_hex(bytes: usize) -> String {
    let mut b = vec![0u8; bytes];
    rand::thread_rng().fill_bytes(&mut b);
    hex::encode(b)
}

/// An incoming request id is echoed when it is 1 to 128 visible ASCII characters (no space, no control
/// character: safe in a header and a log line); else a uuid v4 is made.
pub fn sane_request_id(v: Option<&str>) -> Option<String> {
    let v = v?.trim();
    let ok = !v.is_empty() && v.len() <= 128 && v.bytes().all(|b| b.is_ascii_graphic());
    ok.then(|| v.to_string())
}

/// A trace attribute from a header (`x-eai-project`…) or the W3C `baggage` (`eai.project=…`): at most 128
/// visible characters, so that logs cannot be forged through it.
fn trace_attribute(h: &HeaderMap, header: &str, baggage_key: &str) -> Option<String> {
    let clean = |v: &str| {
        let v = v.trim();
        (!v.is_empty() && v.len() <= 128 && v.bytes().all(|b| b.is_ascii_graphic()))
            .then(|| v.to_string())
    };
    if let Some(v) = h.get(header).and_then(|v| v.to_str().ok()).and_then(clean) {
        return Some(v);
    }
    let baggage = h.get("baggage")?.to_str().ok()?;
    baggage.split(',').find_map(|entry| {
        let (k, v) = entry.split_once('=')?;
        let v = v.split(';').next()?;
        (k.trim() == baggage_key).then(|| clean(v)).flatten()
    })
}

fn method_label(m: &Method) -> &'static str {
    match *m {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        _ => "OTHER",
    }
}

/// The middleware around every route, the fallbacks included.
pub async fn observe(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let start = Instant::now();
    let headers = req.headers();
    let request_id = sane_request_id(headers.get(&REQUEST_ID).and_then(|v| v.to_str().ok()))
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let mut trace =
        TraceContext::continue_or_start(headers.get(&TRACEPARENT).and_then(|v| v.to_str().ok()));
    let locale = Locale::from_headers(headers);
    let project = trace_attribute(headers, "x-eai-project", "eai.project");
    let agent_id = trace_attribute(headers, "x-eai-agent-id", "eai.agent_id");
    let run_id = trace_attribute(headers, "x-eai-run-id", "eai.run_id");
    let method = method_label(req.method());
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or("unmatched", |p| p.as_str())
        .to_string();

    let span = tracing::info_span!(
        "http_request",
        otel.name = format!("{method} {route}"),
        otel.kind = "server",
        http.method = method,
        http.route = %route,
        http.status = tracing::field::Empty,
        request_id = %request_id,
        trace_id = tracing::field::Empty,
        span_id = tracing::field::Empty,
        parent_span_id = trace.parent_id.as_deref().unwrap_or(""),
        eai.tenant_id = tracing::field::Empty,
        eai.project = tracing::field::Empty,
        eai.agent_id = tracing::field::Empty,
        eai.run_id = tracing::field::Empty,
        eai.key_id = tracing::field::Empty,
    );
    // Exported spans continue the caller's trace, and their ids are the ones answered in `traceparent`.
    if let Some(parent) = &trace.parent_id {
        let sampled = u8::from_str_radix(&trace.flags, 16).is_ok_and(|f| f & 1 == 1);
        eai_telemetry::continue_trace(&span, &trace.trace_id, parent, sampled);
    }
    if let Some((trace_id, span_id, sampled)) = eai_telemetry::ids(&span) {
        trace.trace_id = trace_id;
        trace.span_id = span_id;
        trace.flags = if sampled { "01" } else { "00" }.into();
    }
    span.record("trace_id", trace.trace_id.as_str());
    span.record("span_id", trace.span_id.as_str());
    if let Some(p) = &project {
        span.record("eai.project", p.as_str());
    }
    if let Some(a) = &agent_id {
        span.record("eai.agent_id", a.as_str());
    }
    if let Some(r) = &run_id {
        span.record("eai.run_id", r.as_str());
    }

    let ctx = RequestContext {
        request_id: request_id.clone(),
        locale,
    };
    // Routes that take no key (probes, metrics, the OpenAPI document, the portal's files) are limited per client
    // address; the API's routes per key once it is checked, and per address when it is not valid.
    let unauthenticated = !route.starts_with("/v1/");
    let ip = req
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip());
    let limits = state.limits.clone();
    let metrics = state.metrics.clone();
    let mut response = request_context::scope(ctx, async move {
        if unauthenticated {
            if let Err(e) = limits.check_address(ip) {
                metrics.rate_limited();
                return e.into_response();
            }
        }
        next.run(req).await
    })
    .instrument(span.clone())
    .await;

    let status = response.status();
    span.record("http.status", status.as_u16());
    let elapsed = start.elapsed();
    state
        .metrics
        .observe_request(method, &route, status.as_u16(), elapsed);
    span.in_scope(|| {
        let ms = u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX);
        if status.is_server_error() {
            tracing::warn!(
                status = status.as_u16(),
                duration_ms = ms,
                "request answered"
            );
        } else {
            tracing::info!(
                status = status.as_u16(),
                duration_ms = ms,
                "request answered"
            );
        }
    });

    let h = response.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&request_id) {
        h.insert(REQUEST_ID, v);
    }
    if let Ok(v) = HeaderValue::from_str(&trace.header()) {
        h.insert(TRACEPARENT, v);
    }
    response
}

/// Records the caller's tenant (and key id) on the request span once it is known.
pub fn record_caller(key_id: &str, tenant: Option<&str>) {
    let span = tracing::Span::current();
    span.record("eai.key_id", key_id);
    if let Some(t) = tenant {
        span.record("eai.tenant_id", t);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traceparent_is_parsed_strictly() {
        let ok = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let (t, p, f) = parse_traceparent(ok).expect("valid");
        assert_eq!(
            (t.as_str(), p.as_str(), f.as_str()),
            ("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7", "01")
        );
        assert!(
            parse_traceparent("00-00000000000000000000000000000000-00f067aa0ba902b7-01").is_none()
        );
        assert!(
            parse_traceparent("ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").is_none()
        );
        assert!(
            parse_traceparent("00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01").is_none()
        );
        assert!(
            parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x")
                .is_none()
        );
        assert!(parse_traceparent("garbage").is_none());
    }

    #[test]
    fn a_continued_trace_keeps_its_id_with_a_new_span() {
        let ctx = TraceContext::continue_or_start(Some(
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        ));
        assert_eq!(ctx.trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_ne!(ctx.span_id, "00f067aa0ba902b7");
        assert!(ctx
            .header()
            .starts_with("00-4bf92f3577b34da6a3ce929d0e0e4736-"));
        assert!(ctx.header().ends_with("-01"));
    }

    #[test]
    fn request_ids_are_echoed_only_when_sane() {
        assert_eq!(sane_request_id(Some("abc-123")), Some("abc-123".into()));
        assert_eq!(sane_request_id(Some("bad id\nx")), None);
        assert_eq!(sane_request_id(Some(&"x".repeat(129))), None);
        assert_eq!(sane_request_id(None), None);
    }

    #[test]
    fn baggage_gives_trace_attributes() {
        let mut h = HeaderMap::new();
        h.insert(
            "baggage",
            HeaderValue::from_static("eai.project=alpha;p=1, eai.run_id=r-9"),
        );
        assert_eq!(
            trace_attribute(&h, "x-eai-project", "eai.project"),
            Some("alpha".into())
        );
        assert_eq!(
            trace_attribute(&h, "x-eai-run-id", "eai.run_id"),
            Some("r-9".into())
        );
        assert_eq!(trace_attribute(&h, "x-eai-agent-id", "eai.agent_id"), None);
    }

    #[test]
    fn locale_follows_accept_language() {
        let mut h = HeaderMap::new();
        assert_eq!(Locale::from_headers(&h), Locale::En);
        h.insert(
            "accept-language",
            HeaderValue::from_static("fr-FR,fr;q=0.9,en;q=0.8"),
        );
        assert_eq!(Locale::from_headers(&h), Locale::Fr);
    }
}
