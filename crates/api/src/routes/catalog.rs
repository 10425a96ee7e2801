//! `GET /v1/providers/catalog`: the local inference providers, one per deployment seen in GPU samples, shaped
//! as in the seed (`discovery: "api"`: seen through the API; the contract admits no other field). A tenant's
//! readers see the shared deployments and their tenant's dedicated ones, never another tenant's; platform
//! identities (platform_admin, usage_reporter: a gateway routing every tenant) see all.

use axum::extract::State;
use axum::Json;
use eai_store::{DeploymentSeen, Scope};
use serde_json::{json, Value};
use uuid::Uuid;

use crate::auth::actions::ReadCatalog;
use crate::auth::Authorized;
use crate::error::ApiError;
use crate::state::AppState;

/// A stable provider id for a deployment: uuid v5 of `eai-gpu:deployment:<id>` in the URL namespace.
pub fn provider_id(deployment_id: &str) -> Uuid {
    Uuid::new_v5(
        &Uuid::NAMESPACE_URL,
        format!("eai-gpu:deployment:{deployment_id}").as_bytes(),
    )
}

/// The deployment's in-cluster endpoint, `http://<deployment_id>:8000/v1`, with every byte of the id outside
/// the URI's unreserved set percent-encoded (a Kubernetes name passes unchanged).
pub fn base_url(deployment_id: &str) -> String {
    let mut host = String::with_capacity(deployment_id.len());
    for b in deployment_id.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            host.push(char::from(b));
        } else {
            host.push_str(&format!("%{b:02X}"));
        }
    }
    format!("http://{host}:8000/v1")
}

pub fn item(d: &DeploymentSeen) -> Value {
    json!({
        "id": "vllm",
        "label": "vLLM (local inference engine)",
        "local": true,
        "base_url": base_url(&d.deployment_id),
        "provider_id": provider_id(&d.deployment_id),
        "enabled": true,
        // Seen through the API: the deployment's GPU samples.
        "discovery": "api",
    })
}

/// Whether `scope` may see deployment `d`: a shared one (samples without an owner) or one of its own.
pub fn visible(d: &DeploymentSeen, scope: Scope) -> bool {
    match scope {
        Scope::Platform => true,
        Scope::Tenant(t) => d.owners.iter().any(|o| o.is_none_or(|o| o == t)),
    }
}

pub async fn get(
    State(st): State<AppState>,
    auth: Authorized<ReadCatalog>,
) -> Result<Json<Value>, ApiError> {
    let scope = auth.scope;
    let items: Vec<Value> = st
        .store
        .deployments_seen()
        .await?
        .iter()
        .filter(|d| visible(d, scope))
        .map(item)
        .collect();
    Ok(Json(json!({ "items": items })))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_ids_are_stable_and_distinct() {
        assert_eq!(provider_id("vllm-llama-70b"), provider_id("vllm-llama-70b"));
        assert_ne!(provider_id("vllm-llama-70b"), provider_id("vllm-mistral"));
        assert_eq!(provider_id("a").get_version_num(), 5);
    }

    #[test]
    fn base_urls_are_uris() {
        assert_eq!(base_url("vllm-llama-70b"), "http://vllm-llama-70b:8000/v1");
        assert_eq!(base_url("a b/é"), "http://a%20b%2F%C3%A9:8000/v1");
    }
}
