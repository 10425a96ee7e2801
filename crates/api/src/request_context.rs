//! What the rest of a request may want to know about it (its id, the locale of its error messages) without
//! threading it through every call: set by the request middleware ([`crate::telemetry::observe`]), read by the
//! error envelope and the audit. A leaf: it imports nothing of this crate.

use std::future::Future;

use axum::http::HeaderMap;

/// Language of the `message` of an error (both are always in `message_i18n`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Locale {
    En,
    Fr,
}

impl Locale {
    /// French when `Accept-Language` prefers it (first tag), else English.
    pub fn from_headers(h: &HeaderMap) -> Self {
        let first = h
            .get(axum::http::header::ACCEPT_LANGUAGE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(',').next())
            .map(|t| t.trim().to_ascii_lowercase());
        match first {
            Some(t) if t == "fr" || t.starts_with("fr-") || t.starts_with("fr;") => Locale::Fr,
            _ => Locale::En,
        }
    }
}

/// What the rest of the request may want to know about it, without threading it through every call.
#[derive(Debug, Clone)]
pub struct RequestContext {
    pub request_id: String,
    pub locale: Locale,
}

tokio::task_local! {
    static CONTEXT: RequestContext;
}

/// Runs `f` with `ctx` as the context of the request being served.
pub async fn scope<F: Future>(ctx: RequestContext, f: F) -> F::Output {
    CONTEXT.scope(ctx, f).await
}

/// The context of the request being served, if any.
pub fn current() -> Option<RequestContext> {
    CONTEXT.try_with(|c| c.clone()).ok()
}

/// The request id of the request being served.
pub fn request_id() -> Option<String> {
    current().map(|c| c.request_id)
}
