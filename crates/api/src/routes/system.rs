//! Unauthenticated endpoints (probes, metrics, the OpenAPI document) and the envelope fallbacks.

use axum::extract::State;
use axum::http::{header, HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Json;
use secrecy::ExposeSecret;

use crate::error::{ApiError, ErrorCode};
use crate::state::AppState;
use crate::views::system::{Health, Ready};

/// The OpenAPI document of `/v1`, as the contracts folder holds it.
pub const OPENAPI: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../contracts/v1/openapi.json"
));

pub async fn openapi() -> Response {
    ([(header::CONTENT_TYPE, "application/json")], OPENAPI).into_response()
}

/// Liveness: the process answers.
pub async fn healthz() -> Json<Health> {
    Json(Health { status: "ok" })
}

/// Readiness: the store answers.
pub async fn readyz(State(st): State<AppState>) -> Result<Json<Ready>, ApiError> {
    st.store
        .ping()
        .await
        .map_err(|e| ApiError::unavailable(e.to_string()))?;
    Ok(Json(Ready {
        status: "ready",
        storage: st.store.backend(),
    }))
}

/// Prometheus text exposition. With `EAI_METRICS_TOKEN` set it asks for `Authorization: Bearer <token>`
/// (compared in constant time). The audit chain's head is read at each scrape: the scrape history anchors it.
pub async fn metrics(State(st): State<AppState>, headers: HeaderMap) -> Response {
    if let Some(want) = &st.settings.metrics_token {
        let given = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or_default();
        if !constant_time_eq(given.trim().as_bytes(), want.expose_secret().as_bytes()) {
            st.metrics.auth_failed("metrics_token");
            return ApiError::new(
                ErrorCode::Unauthorized,
                "/metrics asks for the metrics token: send `Authorization: Bearer <EAI_METRICS_TOKEN>`.",
                "/metrics demande le jeton des métriques : envoyez `Authorization: Bearer <EAI_METRICS_TOKEN>`.",
            )
            .into_response();
        }
    }
    match st.store.audit_head().await {
        Ok(Some(h)) => st.metrics.set_audit_head(h.seq, &h.hash),
        Ok(None) => {}
        Err(e) => tracing::warn!(error = %e, "cannot read the audit chain's head for /metrics"),
    }
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, eai_app::metrics::CONTENT_TYPE)],
        st.metrics.render(),
    )
        .into_response()
}

/// Equal bytes, in a time that does not depend on where they differ.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let mut diff = u8::from(a.len() != b.len());
    for (x, y) in a.iter().zip(b.iter().cycle()) {
        diff |= x ^ y;
    }
    diff == 0 && !b.is_empty()
}

pub async fn not_found(method: Method, uri: Uri) -> ApiError {
    ApiError::route_not_found(method.as_str(), uri.path())
}

pub async fn method_not_allowed(method: Method, uri: Uri) -> ApiError {
    ApiError::method_not_allowed(method.as_str(), uri.path())
}
