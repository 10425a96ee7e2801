//! The local inference providers:
//!
//! - `GET /v1/providers/catalog`: one provider per deployment, shaped as in the seed, plus what its tokens
//!   cost over the last closed month (`pricing`). A deployment registered by a platform admin is listed with its
//!   real `base_url` (`discovery: api` once confirmed by listing its models, `config` when registered without
//!   confirmation); one only seen in GPU samples with the in-cluster URL the deployment name gives
//!   (`discovery: samples`). A tenant's readers see the shared deployments and their tenant's dedicated ones,
//!   never another tenant's; platform identities (platform_admin, usage_reporter: a gateway routing every
//!   tenant) see all. `pricing` is the deployment's whole cost per million tokens (a price list a gateway
//!   compares with an external API's), not a tenant's share.
//! - `POST /v1/providers` (platform_admin): registers a deployment's OpenAI-compatible endpoint; the control
//!   plane calls `GET {base_url}/models` (vLLM's OpenAI-compatible model list) and refuses a URL that does not
//!   answer one (`verify: false` registers it unconfirmed). A new registration of a deployment replaces its
//!   previous one (audited).

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use axum::Json;
use eai_engine::allocate::Period;
use eai_engine::batch::{month, month_of};
use eai_engine::error::FieldError;
use eai_engine::provider::{models_url, parse_provider};
use eai_engine::time::Timestamp;
use eai_engine::tokens::{Aggregate, Basis, TokenCost};
use eai_engine::wire::Loose;
use eai_store::providers::{Discovery, ProviderRecord};
use eai_store::{DeploymentSeen, Scope};
use serde_json::{json, Value};
use uuid::Uuid;

use crate::auth::actions::{ReadCatalog, RegisterProvider};
use crate::auth::Authorized;
use crate::error::ApiError;
use crate::extract::Body;
use crate::state::AppState;
use crate::views::provider::{Provider, ProviderPricing};
use crate::views::{done, Items};

/// How long the control plane waits for a provider's model list.
const CONFIRM_TIMEOUT: Duration = Duration::from_secs(5);
/// How long the last closed month's prices are kept before they are computed again (late data may change them).
const PRICES_TTL_MS: i64 = 10 * 60_000;

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

/// What the catalog lists of one deployment.
#[derive(Debug, Default)]
struct Entry<'a> {
    seen: Option<&'a DeploymentSeen>,
    registered: Option<&'a ProviderRecord>,
}

fn item(deployment_id: &str, e: &Entry<'_>, price: Option<&TokenCost>, period: &str) -> Provider {
    let (base, label, enabled, discovery, models) = match e.registered {
        Some(r) => (
            r.base_url.clone(),
            r.label.clone(),
            r.enabled,
            r.discovery.as_str(),
            r.models.clone(),
        ),
        None => (base_url(deployment_id), None, true, "samples", Vec::new()),
    };
    let model = models
        .first()
        .cloned()
        .or_else(|| price.and_then(|p| p.model.clone()));
    let pricing = price
        .filter(|p| p.per_mtok.is_some())
        .map(|p| ProviderPricing {
            per_mtok: p.per_mtok.map(|r| r.to_string()),
            input_per_mtok: p.input_per_mtok.map(|r| r.to_string()),
            output_per_mtok: p.output_per_mtok.map(|r| r.to_string()),
            currency: p.currency.as_str().to_string(),
            period: period.to_string(),
            basis: "allocation",
            allocation_method: p.method.as_str(),
        });
    Provider {
        id: "vllm",
        label: label.unwrap_or_else(|| "vLLM (local inference engine)".to_string()),
        local: true,
        base_url: base,
        provider_id: provider_id(deployment_id).to_string(),
        enabled,
        discovery,
        deployment_id: deployment_id.to_string(),
        model,
        models,
        pricing,
    }
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
) -> Result<Json<Items<Provider>>, ApiError> {
    let scope = auth.scope;
    let seen = st.store.deployments_seen().await?;
    let registered = st.store.providers().await?;
    let mut entries: BTreeMap<&str, Entry<'_>> = BTreeMap::new();
    for d in &seen {
        entries.entry(d.deployment_id.as_str()).or_default().seen = Some(d);
    }
    for r in &registered {
        entries
            .entry(r.deployment_id.as_str())
            .or_default()
            .registered = Some(r);
    }
    let (period, prices) = last_month_prices(&st).await;
    let items: Vec<Provider> = entries
        .iter()
        // Registered but never seen: platform configuration every reader may see.
        .filter(|(_, e)| e.seen.is_none_or(|d| visible(d, scope)))
        .map(|(id, e)| item(id, e, prices.get(*id), &period))
        .collect();
    Ok(Json(items.into()))
}

/// The last closed UTC month (`YYYY-MM`) and its cost per million tokens per deployment (allocation basis;
/// one currency per deployment: the one it cost most in), computed at most every ten minutes. A failure is
/// logged and lists no prices: the catalog stays up.
async fn last_month_prices(st: &AppState) -> (String, HashMap<String, TokenCost>) {
    let at = st.now();
    let this = month_of(at);
    let Some((this_start, _)) = month(&this) else {
        return (this, HashMap::new());
    };
    let last = month_of(Timestamp(this_start.0 - 1));
    let mut cache = st.catalog_prices.lock().await;
    if let Some((m, computed, prices)) = cache.as_ref() {
        if *m == last && at.0 - computed.0 < PRICES_TTL_MS {
            return (last, prices.clone());
        }
    }
    let Some((from, to)) = month(&last) else {
        return (last, HashMap::new());
    };
    let config = st.allocation_config();
    let rows = match Period::new(from, to, config.bucket_ms) {
        Ok(p) => eai_app::allocation::token_costs_of(
            &st.source,
            st.store.as_ref(),
            p,
            config,
            Basis::Allocation,
            Aggregate::Deployment,
            None,
        )
        .await
        .map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    };
    let prices = match rows {
        Ok(rows) => {
            let mut by: HashMap<String, TokenCost> = HashMap::new();
            for r in rows {
                let Some(d) = r.deployment_id.clone() else {
                    continue;
                };
                match by.get(&d) {
                    Some(p) if p.cost >= r.cost => {}
                    _ => {
                        by.insert(d, r);
                    }
                }
            }
            by
        }
        Err(e) => {
            tracing::warn!(error = %e, "cannot price the catalog's providers; listing them without prices");
            return (last, HashMap::new());
        }
    };
    *cache = Some((last.clone(), at, prices.clone()));
    (last, prices)
}

/// The model ids `GET {base_url}/models` lists (an OpenAI-compatible `{"object": "list", "data": [{"id"}]}`),
/// or why the URL is refused.
async fn confirm(base_url: &str) -> Result<Vec<String>, String> {
    let url = models_url(base_url);
    let http = reqwest::Client::builder()
        .timeout(CONFIRM_TIMEOUT)
        .build()
        .map_err(|e| format!("cannot call {url}: {e}"))?;
    let answer = http
        .get(&url)
        .header("Accept", "application/json")
        .send()
        .await
        .map_err(|e| {
            let why = if e.is_timeout() {
                "no answer within 5 s".to_string()
            } else if e.is_connect() {
                "could not connect".to_string()
            } else {
                "the call failed".to_string()
            };
            format!("GET {url}: {why} (register with `verify: false` to skip the check)")
        })?;
    let status = answer.status();
    if !status.is_success() {
        return Err(format!(
            "GET {url} answered {status}: not an OpenAI-compatible endpoint (vLLM serves one at /v1)"
        ));
    }
    let body: Value = answer
        .json()
        .await
        .map_err(|_| format!("GET {url} did not answer JSON"))?;
    let ids: Option<Vec<String>> = body["data"].as_array().map(|models| {
        models
            .iter()
            .filter_map(|m| m["id"].as_str().map(str::to_string))
            .collect()
    });
    match ids {
        Some(ids) if !ids.is_empty() => Ok(ids),
        _ => Err(format!(
            "GET {url} did not list any model (an OpenAI model list has `data: [{{\"id\": …}}]`)"
        )),
    }
}

/// `POST /v1/providers`: answers 201 with the provider as the catalog lists it.
pub async fn register(
    State(st): State<AppState>,
    auth: Authorized<RegisterProvider>,
    body: Body,
) -> Result<Response, ApiError> {
    let outcome = async {
        let v: Loose = body.json()?;
        let spec = parse_provider(&v).map_err(ApiError::validation)?;
        let (discovery, models) = if spec.verify {
            let models = confirm(&spec.base_url)
                .await
                .map_err(|why| ApiError::validation(vec![FieldError::new("base_url", why)]))?;
            (Discovery::Api, models)
        } else {
            (Discovery::Config, Vec::new())
        };
        let record = ProviderRecord {
            deployment_id: spec.deployment_id,
            base_url: spec.base_url,
            label: spec.label,
            enabled: spec.enabled,
            discovery,
            models,
            registered_at: st.now(),
        };
        let audit = auth.draft(Some(record.deployment_id.clone()), json!({}));
        let stored = st.store.register_provider(&record, &audit).await?;
        let entry = Entry {
            seen: None,
            registered: Some(&stored),
        };
        done(
            StatusCode::CREATED,
            &item(&stored.deployment_id, &entry, None, ""),
        )
    }
    .await;
    Ok(auth.finish(&st, outcome).await)
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
