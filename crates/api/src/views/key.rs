//! API keys and the caller: `ApiKey`, `ApiKeyCreated` (the key and its secret, shown once), `WhoAmI` with its
//! `TenantOfKey`s (the list is [`super::Items`]).

use eai_engine::domain::TenantId;
use eai_engine::time::Timestamp;
use eai_store::ApiKeyRecord;
use serde::{Deserialize, Serialize};

/// A key as listed: never its secret nor its hash.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ApiKey {
    pub id: String,
    pub role: &'static str,
    pub tenant_id: Option<String>,
    pub name: Option<String>,
    pub status: &'static str,
    pub created_at: String,
    pub expires_at: Option<String>,
    pub revoked_at: Option<String>,
    pub rotated_at: Option<String>,
    pub previous_secret_valid_until: Option<String>,
    /// The nodes a sampler key is bound to (null: any node).
    pub nodes: Option<Vec<String>>,
}

impl ApiKey {
    /// The key as `eai_app::keys::key_view` shows it to the CLI, at `now`.
    pub fn of(k: &ApiKeyRecord, now: Timestamp) -> Self {
        let status = if k.revoked() {
            "revoked"
        } else if k.expires_at.is_some_and(|e| e <= now) {
            "expired"
        } else {
            "active"
        };
        ApiKey {
            id: k.id.clone(),
            role: k.role.as_str(),
            tenant_id: k.tenant_id.map(|t| t.to_string()),
            name: k.name.clone(),
            status,
            created_at: k.created_at.to_string(),
            expires_at: k.expires_at.map(|t| t.to_string()),
            revoked_at: k.revoked_at.map(|t| t.to_string()),
            rotated_at: k.rotated_at.map(|t| t.to_string()),
            previous_secret_valid_until: k
                .previous
                .as_ref()
                .map(|(_, t)| *t)
                .filter(|t| *t > now)
                .map(|t| t.to_string()),
            nodes: (!k.nodes.is_empty()).then(|| k.nodes.clone()),
        }
    }
}

/// A created or rotated key: the key as listed, and its secret (shown this once).
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ApiKeyCreated {
    #[serde(flatten)]
    pub listed: ApiKey,
    pub key: String,
}

/// A tenant as a key sees it: `slug` and `name` null when the tenant is not registered.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct TenantOfKey {
    pub id: String,
    pub slug: Option<String>,
    pub name: Option<String>,
}

impl TenantOfKey {
    /// `tenant`: its registration, when there is one.
    pub fn of(id: TenantId, tenant: Option<&eai_engine::domain::Tenant>) -> Self {
        TenantOfKey {
            id: id.to_string(),
            slug: tenant.map(|t| t.slug.as_str().to_string()),
            name: tenant.map(|t| t.name.clone()),
        }
    }
}

/// `GET /v1/auth/whoami`.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct WhoAmI {
    pub key_id: String,
    pub role: &'static str,
    pub tenant_id: Option<String>,
    /// The key's tenant (null for platform identities).
    pub tenant: Option<TenantOfKey>,
    /// The tenant a platform key is signed in to with `X-EAI-Tenant`, else null.
    pub acting_tenant: Option<TenantOfKey>,
}

/// The body of `POST /v1/auth/api-keys`, read as given (`eai_app::keys::key_request_full` checks it).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ApiKeyCreate {
    pub role: Option<String>,
    pub tenant_id: Option<String>,
    pub name: Option<String>,
    pub expires_at: Option<String>,
    pub nodes: Option<Vec<String>>,
}

/// The body of `POST /v1/auth/api-keys/{id}/rotate` (optional).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ApiKeyRotate {
    pub grace_seconds: Option<u64>,
}
