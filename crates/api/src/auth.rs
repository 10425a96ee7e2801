//! Who is calling and what they may do: API keys (`eai_live_…`, stored as SHA-256), the [`Caller`] extractor,
//! the one policy table of actions and roles ([`access`]), and the audit of every decision on a mutation.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use eai_engine::domain::TenantId;
use eai_store::{AuditDraft, Role, Scope};
use rand::RngCore;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::error::ApiError;
use crate::state::{now, AppState};
use crate::telemetry;

/// Every API key starts with this.
pub const KEY_PREFIX: &str = "eai_live_";

/// A new API key: `eai_live_` + 32 random bytes in hex. Shown once; only its hash is stored.
pub fn new_api_key() -> String {
    let mut b = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut b);
    format!("{KEY_PREFIX}{}", hex::encode(b))
}

/// Hex SHA-256 of the full key text: what the store keeps and looks up.
pub fn hash_api_key(key: &str) -> String {
    hex::encode(Sha256::digest(key.as_bytes()))
}

/// A key we are willing to hash and look up: the prefix, then 24 to 200 characters of `[A-Za-z0-9_-]`.
/// The reason never repeats the key.
pub fn check_key_format(key: &str) -> Result<(), &'static str> {
    let Some(secret) = key.strip_prefix(KEY_PREFIX) else {
        return Err("it must start with eai_live_");
    };
    if secret.len() < 24 || secret.len() > 200 {
        return Err("it must have 24 to 200 characters after eai_live_");
    }
    if !secret
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        return Err("it may only hold letters, digits, _ and -");
    }
    Ok(())
}

/// The authenticated caller, from `Authorization: Bearer eai_live_…`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// `key_<n>`: public, safe to log and audit.
    pub key_id: String,
    pub role: Role,
    pub tenant: Option<TenantId>,
}

fn bearer(parts: &Parts) -> Option<&str> {
    let v = parts
        .headers
        .get(header::AUTHORIZATION)?
        .to_str()
        .ok()?
        .trim();
    let (scheme, token) = v.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let token = bearer(parts).ok_or_else(ApiError::unauthorized)?;
        check_key_format(token).map_err(|_| ApiError::unauthorized())?;
        let record = state.store.api_key_by_hash(&hash_api_key(token)).await?;
        let record = match record {
            Some(r) if !r.revoked => r,
            _ => return Err(ApiError::unauthorized()),
        };
        let tenant = record.tenant_id.map(|t| t.to_string());
        telemetry::record_caller(&record.id, tenant.as_deref());
        Ok(Caller {
            key_id: record.id,
            role: record.role,
            tenant: record.tenant_id,
        })
    }
}

/// What a request wants to do. Each action has one row in the policy table ([`access`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    IngestSamples,
    ReadAllocation,
    ReadPolicies,
    CreatePolicy,
    SupersedePolicy,
    DisablePolicy,
    ReadCatalog,
    IngestUsage,
    CreateApiKey,
    ReadAudit,
}

impl Action {
    /// The name in audit events and error messages.
    pub fn name(self) -> &'static str {
        match self {
            Action::IngestSamples => "gpu_samples.ingest",
            Action::ReadAllocation => "gpu_allocation.read",
            Action::ReadPolicies => "allocation_policy.list",
            Action::CreatePolicy => "allocation_policy.create",
            Action::SupersedePolicy => "allocation_policy.supersede",
            Action::DisablePolicy => "allocation_policy.disable",
            Action::ReadCatalog => "providers.catalog",
            Action::IngestUsage => "usage_events.ingest",
            Action::CreateApiKey => "api_key.create",
            Action::ReadAudit => "audit_events.read",
        }
    }

    /// Mutations are audited, allowed or denied.
    pub fn is_mutation(self) -> bool {
        matches!(
            self,
            Action::IngestSamples
                | Action::CreatePolicy
                | Action::SupersedePolicy
                | Action::DisablePolicy
                | Action::IngestUsage
                | Action::CreateApiKey
        )
    }
}

/// What a role may do with an action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Deny,
    /// Every tenant (platform identities).
    Platform,
    /// The caller's tenant only.
    Tenant,
}

/// Roles bound to a tenant. A key of one of them without a tenant gets `tenant_required` everywhere.
pub fn is_tenant_role(role: Role) -> bool {
    !matches!(role, Role::PlatformAdmin | Role::Sampler)
}

/// The policy table: every (action, role) pair, in one place.
///
/// | action | platform_admin | finops, tenant_admin | auditor, security_officer | developer | viewer | sampler |
/// |---|---|---|---|---|---|---|
/// | samples ingest | all | - | - | - | - | all |
/// | allocation, policy list | all | tenant | tenant | tenant | tenant | - |
/// | policy create/supersede/disable, key create | all | - | - | - | - | - |
/// | catalog | all | tenant | tenant | tenant | tenant | all |
/// | usage events ingest | all (tenant in body) | tenant_admin only | - | tenant | - | all (tenant in body) |
/// | audit events | all | - | tenant | - | - | - |
pub fn access(action: Action, role: Role) -> Access {
    use Access::{Deny, Platform, Tenant};
    use Role::*;
    match (action, role) {
        (_, PlatformAdmin) => Platform,
        (Action::IngestSamples, Sampler) => Platform,
        (Action::IngestSamples, _) => Deny,
        (Action::ReadAllocation | Action::ReadPolicies, Sampler) => Deny,
        (Action::ReadAllocation | Action::ReadPolicies, _) => Tenant,
        (
            Action::CreatePolicy
            | Action::SupersedePolicy
            | Action::DisablePolicy
            | Action::CreateApiKey,
            _,
        ) => Deny,
        (Action::ReadCatalog, Sampler) => Platform,
        (Action::ReadCatalog, _) => Tenant,
        (Action::IngestUsage, Sampler) => Platform,
        (Action::IngestUsage, TenantAdmin | Developer) => Tenant,
        (Action::IngestUsage, _) => Deny,
        (Action::ReadAudit, Auditor | SecurityOfficer) => Tenant,
        (Action::ReadAudit, _) => Deny,
    }
}

/// Decides whether `caller` may do `action` and with which scope. A tenant role without a tenant gets
/// `tenant_required`, then the table decides. Every decision on a mutation is audited; a denied one is
/// audited here, an allowed one by [`finish`] once its outcome is known.
pub async fn authorize(
    state: &AppState,
    caller: &Caller,
    action: Action,
) -> Result<Scope, ApiError> {
    let decision = if is_tenant_role(caller.role) && caller.tenant.is_none() {
        Err(ApiError::tenant_required())
    } else {
        match (access(action, caller.role), caller.tenant) {
            (Access::Deny, _) => Err(ApiError::forbidden(caller.role.as_str(), action.name())),
            (Access::Platform, _) => Ok(Scope::Platform),
            (Access::Tenant, Some(t)) => Ok(Scope::Tenant(t)),
            (Access::Tenant, None) => Err(ApiError::tenant_required()),
        }
    };
    if let Err(e) = &decision {
        tracing::info!(
            action = action.name(),
            role = caller.role.as_str(),
            code = e.code.as_str(),
            "denied"
        );
        if action.is_mutation() {
            audit(
                state,
                caller,
                action,
                "deny",
                None,
                json!({ "reason": e.code.as_str() }),
            )
            .await?;
        }
    }
    decision
}

/// Appends one event to the audit chain for `caller`.
pub async fn audit(
    state: &AppState,
    caller: &Caller,
    action: Action,
    decision: &str,
    resource: Option<String>,
    details: Value,
) -> Result<(), ApiError> {
    let draft = AuditDraft {
        occurred_at: now(),
        actor: caller.key_id.clone(),
        actor_role: Some(caller.role.as_str().to_string()),
        tenant_id: caller.tenant,
        action: action.name().to_string(),
        decision: decision.to_string(),
        resource,
        request_id: telemetry::request_id(),
        details,
    };
    state.store.append_audit(&draft).await?;
    Ok(())
}

/// The result of an allowed mutation: the answer, and what the audit event records of it.
#[derive(Debug)]
pub struct Done {
    pub status: StatusCode,
    pub body: Value,
    /// What was acted on (`alp_3`, `key_2`).
    pub resource: Option<String>,
    /// Facts for the audit event (counts, ids; never a secret).
    pub details: Value,
}

/// Audits an allowed mutation with its outcome (`ok` or the error code), then answers.
pub async fn finish(
    state: &AppState,
    caller: &Caller,
    action: Action,
    outcome: Result<Done, ApiError>,
) -> Response {
    let (resource, details) = match &outcome {
        Ok(d) => {
            let mut details = d.details.clone();
            match details.as_object_mut() {
                Some(m) => {
                    m.insert("outcome".into(), "ok".into());
                }
                None => details = json!({ "outcome": "ok" }),
            }
            (d.resource.clone(), details)
        }
        Err(e) => (None, json!({ "outcome": e.code.as_str() })),
    };
    if let Err(e) = audit(state, caller, action, "allow", resource, details).await {
        // An unaudited mutation breaks the contract: say so rather than answer success.
        return ApiError::internal(format!("audit append failed after {}: {e}", action.name()))
            .into_response();
    }
    match outcome {
        Ok(d) => (d.status, Json(d.body)).into_response(),
        Err(e) => e.into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_have_the_prefix_and_64_hex_digits() {
        let k = new_api_key();
        assert!(k.starts_with(KEY_PREFIX));
        assert_eq!(k.len(), KEY_PREFIX.len() + 64);
        assert!(check_key_format(&k).is_ok());
        assert_ne!(k, new_api_key());
        assert_eq!(hash_api_key(&k).len(), 64);
    }

    #[test]
    fn malformed_keys_are_refused_before_any_lookup() {
        assert!(check_key_format("Bearer").is_err());
        assert!(check_key_format("eai_live_short").is_err());
        assert!(check_key_format("eai_live_0123456789abcdef0123456789abcdef'--").is_err());
    }

    #[test]
    fn the_policy_table() {
        use Role::*;
        assert_eq!(access(Action::IngestSamples, Sampler), Access::Platform);
        assert_eq!(access(Action::ReadAllocation, Sampler), Access::Deny);
        assert_eq!(access(Action::CreatePolicy, Finops), Access::Deny);
        assert_eq!(
            access(Action::CreatePolicy, PlatformAdmin),
            Access::Platform
        );
        for r in [
            Finops,
            TenantAdmin,
            Auditor,
            Developer,
            Viewer,
            SecurityOfficer,
        ] {
            assert_eq!(access(Action::ReadAllocation, r), Access::Tenant, "{r:?}");
            assert_eq!(access(Action::ReadPolicies, r), Access::Tenant, "{r:?}");
            assert_eq!(access(Action::CreateApiKey, r), Access::Deny, "{r:?}");
        }
        assert_eq!(access(Action::ReadAudit, Auditor), Access::Tenant);
        assert_eq!(access(Action::ReadAudit, SecurityOfficer), Access::Tenant);
        assert_eq!(access(Action::ReadAudit, Finops), Access::Deny);
        assert_eq!(access(Action::IngestUsage, Developer), Access::Tenant);
        assert_eq!(access(Action::IngestUsage, Viewer), Access::Deny);
    }
}
