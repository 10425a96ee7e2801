//! The routes of the control plane and the one function that assembles them: [`router`].

use axum::extract::DefaultBodyLimit;
use axum::routing::{delete, get, post};
use axum::{middleware, Router};

use crate::idempotency;
use crate::state::AppState;
use crate::telemetry;

pub mod allocation;
pub mod allocation_series;
pub mod anomalies;
pub mod audit;
pub mod budgets;
pub mod catalog;
pub mod explain;
pub mod focus;
pub mod forecast;
pub mod gpu_usage;
pub mod keys;
pub mod policies;
pub mod portal;
pub mod recommendations;
pub mod samples;
pub mod slurm;
pub mod statements;
pub mod system;
pub mod tenants;
pub mod token_costs;
pub mod usage_events;

/// The whole HTTP API as a value: every route, the envelope fallbacks (404, 405), the `Idempotency-Key` layer,
/// the body limit and the request middleware (request id, traceparent, span, metrics).
pub fn router(state: AppState) -> Router {
    let max_body = state.settings.max_body_bytes;
    Router::new()
        .route("/v1/finops/gpu/samples", post(samples::ingest))
        .route("/v1/finops/gpu/allocation", get(allocation::get))
        .route("/v1/finops/gpu/allocation/focus", get(focus::get))
        .route("/v1/finops/gpu/allocation/explain", get(explain::get))
        .route("/v1/finops/gpu/usage", get(gpu_usage::get))
        .route("/v1/finops/gpu/recommendations", get(recommendations::get))
        .route("/v1/finops/gpu/slurm/reconciliation", post(slurm::post))
        .route(
            "/v1/finops/gpu/allocation/series",
            get(allocation_series::get),
        )
        .route("/v1/finops/gpu/token-costs", get(token_costs::get))
        .route("/v1/finops/gpu/forecast", get(forecast::get))
        .route("/v1/finops/gpu/anomalies", get(anomalies::get))
        .route(
            "/v1/finops/gpu/statements",
            get(statements::list).post(statements::issue_month),
        )
        .route(
            "/v1/finops/gpu/statements/{number}",
            get(statements::get_one),
        )
        .route(
            "/v1/finops/allocation-policies",
            get(policies::list).post(policies::create),
        )
        .route(
            "/v1/finops/allocation-policies/{id}",
            get(policies::get_one),
        )
        .route(
            "/v1/finops/allocation-policies/{id}/supersede",
            post(policies::supersede),
        )
        .route(
            "/v1/finops/allocation-policies/{id}/disable",
            post(policies::disable),
        )
        .route("/v1/providers/catalog", get(catalog::get))
        .route("/v1/providers", post(catalog::register))
        .route("/v1/usage/events", post(usage_events::ingest))
        .route("/v1/auth/api-keys", get(keys::list).post(keys::create))
        .route("/v1/auth/api-keys/{id}", delete(keys::revoke))
        .route("/v1/auth/api-keys/{id}/rotate", post(keys::rotate))
        .route("/v1/auth/whoami", get(keys::whoami))
        .route(
            "/v1/finops/budgets",
            get(budgets::list).post(budgets::create),
        )
        .route("/v1/finops/budgets/{id}", get(budgets::get_one))
        .route(
            "/v1/finops/budgets/{id}/supersede",
            post(budgets::supersede),
        )
        .route("/v1/finops/budgets/{id}/disable", post(budgets::disable))
        .route("/v1/finops/reservations", post(budgets::reserve))
        .route(
            "/v1/finops/reservations/{id}",
            get(budgets::get_reservation),
        )
        .route("/v1/finops/reservations/{id}/commit", post(budgets::commit))
        .route(
            "/v1/finops/reservations/{id}/release",
            post(budgets::release),
        )
        .route("/v1/tenants", get(tenants::list).post(tenants::create))
        .route("/v1/tenants/{key}", get(tenants::get_one))
        .route("/v1/audit/events", get(audit::list))
        .route("/v1/audit/head", get(audit::head))
        .route("/openapi.json", get(system::openapi))
        .route("/healthz", get(system::healthz))
        .route("/readyz", get(system::readyz))
        .route("/metrics", get(system::metrics))
        .merge(portal::routes())
        .fallback(system::not_found)
        .method_not_allowed_fallback(system::method_not_allowed)
        // Inside the body limit (it reads the body within it), outside every handler.
        .layer(middleware::from_fn_with_state(
            state.clone(),
            idempotency::guard,
        ))
        .layer(DefaultBodyLimit::max(max_body))
        .layer(middleware::from_fn_with_state(
            state.clone(),
            telemetry::observe,
        ))
        .with_state(state)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    /// Every handler of a resource takes `Authorized<A>` (its check cannot be forgotten): read from the sources
    /// of `routes/`, so that a new handler that signs its caller in without an action, or calls the old
    /// `authorize`, fails here. The open routes are `system.rs` (health, OpenAPI, the token-guarded metrics,
    /// fallbacks) and `portal.rs` (static assets); `whoami` only tells a key about itself.
    #[test]
    fn every_resource_handler_is_authorized_for_its_action() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/routes");
        let mut handlers = 0;
        for entry in std::fs::read_dir(&dir).expect("routes/") {
            let path = entry.expect("an entry").path();
            let file = path
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default();
            if matches!(file, "mod.rs" | "system.rs" | "portal.rs") {
                continue;
            }
            let text = std::fs::read_to_string(&path).expect("a source file");
            assert!(
                !text.contains("authorize("),
                "{file} calls authorize itself"
            );
            for handler in text.split("pub async fn ").skip(1) {
                let name = handler.split('(').next().unwrap_or_default();
                let signature = handler.split(") ->").next().unwrap_or_default();
                handlers += 1;
                if file == "keys.rs" && name == "whoami" {
                    assert!(signature.contains("caller: Caller"), "{signature}");
                    continue;
                }
                assert!(
                    signature.contains(": Authorized<"),
                    "{file}: {name} does not take Authorized<A>: {signature}"
                );
            }
        }
        assert!(handlers >= 28, "only {handlers} handlers found");
    }
}
