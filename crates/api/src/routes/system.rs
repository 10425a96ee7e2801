//! Unauthenticated endpoints (probes, metrics, the OpenAPI document) and the envelope fallbacks.

use axum::extract::State;
use axum::http::{header, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use crate::error::ApiError;
use crate::state::AppState;

/// The OpenAPI document of `/v1`, as the contracts folder holds it.
pub const OPENAPI: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../contracts/v1/openapi.json"
));

pub async fn openapi() -> Response {
    ([(header::CONTENT_TYPE, "application/json")], OPENAPI).into_response()
}

/// Liveness: the process answers.
pub async fn healthz() -> Json<serde_json::Value> {
    Json(json!({ "status": "ok" }))
}

/// Readiness: the store answers.
pub async fn readyz(State(st): State<AppState>) -> Result<Json<serde_json::Value>, ApiError> {
    st.store
        .ping()
        .await
        .map_err(|e| ApiError::unavailable(e.to_string()))?;
    Ok(Json(
        json!({ "status": "ready", "storage": st.store.backend() }),
    ))
}

/// Prometheus text exposition.
pub async fn metrics(State(st): State<AppState>) -> Response {
    (
        StatusCode::OK,
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        st.metrics.render(),
    )
        .into_response()
}

pub async fn not_found(method: Method, uri: Uri) -> ApiError {
    ApiError::route_not_found(method.as_str(), uri.path())
}

pub async fn method_not_allowed(method: Method, uri: Uri) -> ApiError {
    ApiError::method_not_allowed(method.as_str(), uri.path())
}
