//! Probes: `Health` (liveness) and `Ready` (readiness).

use serde::Serialize;

/// `GET /healthz`: `{"status": "ok"}`.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Health {
    pub status: &'static str,
}

/// `GET /readyz`: the store answers; which backend it is.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Ready {
    pub status: &'static str,
    pub storage: &'static str,
}
