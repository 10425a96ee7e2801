//! Registered local inference providers (`POST /v1/providers`): one per deployment, the last registration
//! wins. The rules both stores follow: what is stored (one JSON body per deployment, written as
//! [`provider_json`] writes it and read back with [`provider_parse`]) and the audit event of a registration.
//! The backends only bind, send and decode.

use eai_engine::time::Timestamp;
use serde::{Deserialize, Serialize};

use crate::codec::corrupt;
use crate::records::{from_json, to_json};
use crate::Result;

/// How the control plane knows a provider's endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Discovery {
    /// Registered, and confirmed by listing its models (`GET {base_url}/models`).
    Api,
    /// Registered without confirmation (`verify: false`).
    Config,
}

impl Discovery {
    pub fn as_str(self) -> &'static str {
        match self {
            Discovery::Api => "api",
            Discovery::Config => "config",
        }
    }
}

/// A registered provider.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderRecord {
    pub deployment_id: String,
    pub base_url: String,
    pub label: Option<String>,
    pub enabled: bool,
    pub discovery: Discovery,
    /// The model ids its `GET /models` listed when it was confirmed (empty when not verified).
    pub models: Vec<String>,
    pub registered_at: Timestamp,
}

#[derive(Debug, Serialize, Deserialize)]
struct Body {
    base_url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    label: Option<String>,
    enabled: bool,
    discovery: Discovery,
    #[serde(default)]
    models: Vec<String>,
}

/// The stored body of a provider (the deployment id and the time are columns).
pub fn provider_json(p: &ProviderRecord) -> Result<String> {
    to_json(
        &Body {
            base_url: p.base_url.clone(),
            label: p.label.clone(),
            enabled: p.enabled,
            discovery: p.discovery,
            models: p.models.clone(),
        },
        "provider",
    )
}

/// A stored row back.
pub fn provider_parse(
    deployment_id: String,
    body: &str,
    registered_at_ms: i64,
) -> Result<ProviderRecord> {
    let b: Body = from_json(body, "provider")?;
    if b.base_url.is_empty() {
        return Err(corrupt("providers.body", body));
    }
    Ok(ProviderRecord {
        deployment_id,
        base_url: b.base_url,
        label: b.label,
        enabled: b.enabled,
        discovery: b.discovery,
        models: b.models,
        registered_at: Timestamp(registered_at_ms),
    })
}

/// What the audit event of a registration says besides its resource (the deployment).
pub fn audit_details(p: &ProviderRecord) -> serde_json::Value {
    serde_json::json!({
        "base_url": p.base_url,
        "discovery": p.discovery.as_str(),
        "models": p.models,
        "enabled": p.enabled,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_provider_round_trips_through_its_body() {
        let p = ProviderRecord {
            deployment_id: "vllm-llama-70b".into(),
            base_url: "http://vllm:8000/v1".into(),
            label: Some("Llama 70B".into()),
            enabled: true,
            discovery: Discovery::Api,
            models: vec!["meta-llama/Llama-3.1-70B-Instruct".into()],
            registered_at: Timestamp(1_000),
        };
        let body = provider_json(&p).expect("json");
        assert_eq!(
            provider_parse("vllm-llama-70b".into(), &body, 1_000).expect("parse"),
            p
        );
        assert!(provider_parse("x".into(), "{", 0).is_err());
    }
}
