//! Who is calling and what they may do: API keys (`eai_live_…`, stored as SHA-256), the [`Caller`] extractor,
//! the one policy table of actions and roles ([`access`]), and the audit of every decision on a mutation.

use std::net::{IpAddr, SocketAddr};

use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::request::Parts;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use eai_engine::domain::TenantId;
use eai_store::{AuditDraft, Role, Scope, TenantRef};
use serde_json::{json, Value};

use crate::clock::now;
use crate::error::{ApiError, ErrorCode};
use crate::key_format::{check_key_format, hash_api_key};
use crate::limits;
use crate::request_context;
use crate::state::AppState;
use crate::telemetry;

/// The authenticated caller, from `Authorization: Bearer eai_live_…`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// `key_<n>`: public, safe to log and audit.
    pub key_id: String,
    pub role: Role,
    pub tenant: Option<TenantId>,
    /// For a sampler key bound to nodes: the only node names it may post samples of (empty: any).
    pub nodes: Vec<String>,
    /// A platform identity "signed in to" a tenant with `X-EAI-Tenant`: its reads are scoped as that tenant's
    /// readers' are (SPEC §7). A tenant's key may only name its own tenant.
    pub acting_tenant: Option<TenantId>,
}

/// The tenant header (SPEC §7): a slug or an id.
pub const TENANT_HEADER: &str = "x-eai-tenant";

/// The tenant `X-EAI-Tenant` names, if any, as given: a slug or an id.
fn header_tenant(parts: &Parts) -> Result<Option<TenantRef>, ApiError> {
    let Some(v) = parts.headers.get(TENANT_HEADER) else {
        return Ok(None);
    };
    let bad = || {
        ApiError::invalid(
            "X-EAI-Tenant",
            "must be a tenant slug (e.g. acme) or id (a uuid)",
        )
    };
    let text = v.to_str().map_err(|_| bad())?.trim();
    text.parse().map(Some).map_err(|_| bad())
}

/// The tenant a key acts as, given the header: a platform key may name any tenant (an id as given, registered
/// or only seen in data; a slug looked up, unknown: 404); a tenant key only its own (anything else is 403,
/// whether or not that tenant exists, so a tenant cannot probe for others' names).
async fn acting_tenant(
    state: &AppState,
    own: Option<TenantId>,
    named: Option<TenantRef>,
) -> Result<Option<TenantId>, ApiError> {
    let Some(named) = named else {
        return Ok(None);
    };
    match own {
        Some(own) => {
            let same = match &named {
                TenantRef::Id(id) => *id == own,
                TenantRef::Slug(_) => state
                    .store
                    .tenant(&TenantRef::Id(own))
                    .await?
                    .is_some_and(|t| TenantRef::Slug(t.slug) == named),
            };
            if same {
                Ok(None)
            } else {
                Err(ApiError::forbidden_because(
                    "a tenant's key may only name its own tenant in X-EAI-Tenant",
                    "la clé d'un locataire ne peut nommer que son propre locataire dans X-EAI-Tenant",
                ))
            }
        }
        None => match named {
            TenantRef::Id(id) => Ok(Some(id)),
            TenantRef::Slug(ref slug) => state
                .store
                .tenant(&named)
                .await?
                .map(|t| Some(t.id))
                .ok_or_else(|| ApiError::tenant_not_found(slug.as_str())),
        },
    }
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

/// The client's address, when the server knows it (it does when it serves with connection info).
pub fn client_ip(parts: &Parts) -> Option<IpAddr> {
    parts
        .extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip())
}

/// Why a sign-in failed (a label of `eai_auth_failures_total`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignInFailure {
    Missing,
    Malformed,
    Unknown,
    Revoked,
    Expired,
}

impl SignInFailure {
    pub fn as_str(self) -> &'static str {
        match self {
            SignInFailure::Missing => "missing",
            SignInFailure::Malformed => "malformed",
            SignInFailure::Unknown => "unknown",
            SignInFailure::Revoked => "revoked",
            SignInFailure::Expired => "expired",
        }
    }
}

/// A failed sign-in: counted, limited per address (a flood of bad keys gets 429), and audited (the address and
/// the count, never the key) when one address fails [`limits::FAILURES_AUDITED_FROM`] times within a minute.
async fn failed(state: &AppState, ip: Option<IpAddr>, why: SignInFailure) -> ApiError {
    state.metrics.auth_failed(why.as_str());
    if let Some(n) = state.limits.failed_sign_in(ip) {
        let draft = AuditDraft {
            occurred_at: now(),
            actor: "anonymous".into(),
            actor_role: None,
            tenant_id: None,
            action: "auth.repeated_failures".into(),
            decision: "deny".into(),
            resource: None,
            request_id: request_context::request_id(),
            details: json!({
                "address": ip.map(|i| i.to_string()),
                "failures": n,
                "window_seconds": limits::FAILURE_WINDOW.as_secs(),
                "last_reason": why.as_str(),
            }),
        };
        if let Err(e) = state.store.append_audit(&draft).await {
            tracing::error!(error = %e, "cannot audit repeated sign-in failures");
        }
    }
    if let Err(limited) = state.limits.check_address(ip) {
        return limited;
    }
    match why {
        SignInFailure::Expired => ApiError::key_expired(),
        _ => ApiError::unauthorized(),
    }
}

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let ip = client_ip(parts);
        let Some(token) = bearer(parts) else {
            return Err(failed(state, ip, SignInFailure::Missing).await);
        };
        if check_key_format(token).is_err() {
            return Err(failed(state, ip, SignInFailure::Malformed).await);
        }
        let Some(found) = state.store.api_key_by_hash(&hash_api_key(token)).await? else {
            return Err(failed(state, ip, SignInFailure::Unknown).await);
        };
        let key = &found.key;
        let at = now();
        let refused = if key.revoked() {
            Some(SignInFailure::Revoked)
        } else if key.expires_at.is_some_and(|e| e <= at)
            || (found.previous_secret
                && key.previous.as_ref().is_none_or(|(_, until)| *until <= at))
        {
            Some(SignInFailure::Expired)
        } else {
            None
        };
        if let Some(why) = refused {
            return Err(failed(state, ip, why).await);
        }
        state
            .limits
            .check_key(&key.id)
            .inspect_err(|_| state.metrics.rate_limited())?;
        let acting_tenant = acting_tenant(state, key.tenant_id, header_tenant(parts)?).await?;
        let tenant = key.tenant_id.or(acting_tenant).map(|t| t.to_string());
        telemetry::record_caller(&key.id, tenant.as_deref());
        Ok(Caller {
            key_id: key.id.clone(),
            role: key.role,
            tenant: key.tenant_id,
            nodes: key.nodes.clone(),
            acting_tenant,
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
    ListApiKeys,
    RevokeApiKey,
    RotateApiKey,
    ReadAudit,
    ReadAuditHead,
    CreateTenant,
    ReadTenants,
    CreateBudget,
    SupersedeBudget,
    ReadBudgets,
    Reserve,
    CommitReservation,
    ReleaseReservation,
    ReadReservation,
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
            Action::ListApiKeys => "api_key.list",
            Action::RevokeApiKey => "api_key.revoke",
            Action::RotateApiKey => "api_key.rotate",
            Action::ReadAudit => "audit_events.read",
            Action::ReadAuditHead => "audit_head.read",
            Action::CreateTenant => "tenant.create",
            Action::ReadTenants => "tenant.read",
            Action::CreateBudget => "budget.create",
            Action::SupersedeBudget => "budget.supersede",
            Action::ReadBudgets => "budget.read",
            Action::Reserve => "reservation.create",
            Action::CommitReservation => "reservation.commit",
            Action::ReleaseReservation => "reservation.release",
            Action::ReadReservation => "reservation.read",
        }
    }

    /// Reads (and a tenant's usage) a platform identity signed in to a tenant does as that tenant does; other
    /// platform actions (samples, policies, keys of any tenant, tenants) keep their platform scope.
    pub fn follows_tenant_header(self) -> bool {
        matches!(
            self,
            Action::ReadAllocation
                | Action::ReadPolicies
                | Action::ReadCatalog
                | Action::IngestUsage
                | Action::ListApiKeys
                | Action::RevokeApiKey
                | Action::RotateApiKey
                | Action::ReadAudit
                | Action::ReadTenants
                | Action::CreateBudget
                | Action::SupersedeBudget
                | Action::ReadBudgets
                | Action::Reserve
                | Action::CommitReservation
                | Action::ReleaseReservation
                | Action::ReadReservation
        )
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
                | Action::RevokeApiKey
                | Action::RotateApiKey
                | Action::CreateTenant
                | Action::CreateBudget
                | Action::SupersedeBudget
                | Action::Reserve
                | Action::CommitReservation
                | Action::ReleaseReservation
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
    !matches!(
        role,
        Role::PlatformAdmin | Role::Sampler | Role::UsageReporter
    )
}

/// The policy table: every (action, role) pair, in one place. Each role holds the least it needs.
///
/// | action | platform_admin | finops | tenant_admin | auditor, security_officer | developer | viewer | sampler | usage_reporter |
/// |---|---|---|---|---|---|---|---|---|
/// | samples ingest | all | - | - | - | - | - | all (its nodes) | - |
/// | allocation, policy list, catalog | all | tenant | tenant | tenant | tenant | tenant | - | catalog: all |
/// | policy create/supersede/disable, key create | all | - | - | - | - | - | - | - |
/// | key list, revoke, rotate | all | - | tenant | - | - | - | - | - |
/// | usage events ingest | all (tenant in body) | - | tenant | - | tenant | - | - | all (tenant in body) |
/// | audit events | all | - | - | tenant | - | - | - | - |
/// | audit head, tenant create | all | - | - | - | - | - | - | - |
/// | tenants read | all | own | own | own | own | own | - | all |
/// | budget create, supersede, disable | all | tenant | - | - | - | - | - | - |
/// | budgets read | all | tenant | tenant | tenant | tenant | tenant | - | - |
/// | reserve, commit, release | all | - | tenant | - | tenant | - | - | all (tenant named) |
/// | reservation read | all | tenant | tenant | tenant | tenant | tenant | - | all (tenant named) |
pub fn access(action: Action, role: Role) -> Access {
    use Access::{Deny, Platform, Tenant};
    use Role::*;
    match (action, role) {
        (_, PlatformAdmin) => Platform,
        (Action::CreateBudget | Action::SupersedeBudget, Finops) => Tenant,
        (Action::CreateBudget | Action::SupersedeBudget, _) => Deny,
        (Action::ReadBudgets, Sampler | UsageReporter) => Deny,
        (Action::ReadBudgets, _) => Tenant,
        (
            Action::Reserve
            | Action::CommitReservation
            | Action::ReleaseReservation
            | Action::ReadReservation,
            UsageReporter,
        ) => Platform,
        (
            Action::Reserve | Action::CommitReservation | Action::ReleaseReservation,
            TenantAdmin | Developer,
        ) => Tenant,
        (Action::Reserve | Action::CommitReservation | Action::ReleaseReservation, _) => Deny,
        (Action::ReadReservation, Sampler) => Deny,
        (Action::ReadReservation, _) => Tenant,
        (Action::IngestSamples, Sampler) => Platform,
        (Action::IngestSamples, _) => Deny,
        (Action::ReadCatalog | Action::ReadTenants, UsageReporter) => Platform,
        (Action::ReadTenants, Sampler) => Deny,
        (Action::ReadTenants, _) => Tenant,
        (
            Action::ReadAllocation | Action::ReadPolicies | Action::ReadCatalog,
            Sampler | UsageReporter,
        ) => Deny,
        (Action::ReadAllocation | Action::ReadPolicies | Action::ReadCatalog, _) => Tenant,
        (
            Action::CreatePolicy
            | Action::SupersedePolicy
            | Action::DisablePolicy
            | Action::CreateApiKey
            | Action::ReadAuditHead
            | Action::CreateTenant,
            _,
        ) => Deny,
        (Action::ListApiKeys | Action::RevokeApiKey | Action::RotateApiKey, TenantAdmin) => Tenant,
        (Action::ListApiKeys | Action::RevokeApiKey | Action::RotateApiKey, _) => Deny,
        (Action::IngestUsage, UsageReporter) => Platform,
        (Action::IngestUsage, TenantAdmin | Developer) => Tenant,
        (Action::IngestUsage, _) => Deny,
        (Action::ReadAudit, Auditor | SecurityOfficer) => Tenant,
        (Action::ReadAudit, _) => Deny,
    }
}

/// Decides whether `caller` may do `action` and with which scope. A tenant role without a tenant gets
/// `tenant_required`, then the table decides. Every decision on a mutation is audited: a denied one here, an
/// allowed one by the store in the mutation's own transaction (with the draft of [`draft`]), or by [`finish`]
/// when it failed.
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
            (Access::Platform, _) => Ok(match caller.acting_tenant {
                Some(t) if action.follows_tenant_header() => Scope::Tenant(t),
                _ => Scope::Platform,
            }),
            (Access::Tenant, Some(t)) => Ok(Scope::Tenant(t)),
            (Access::Tenant, None) => Err(ApiError::tenant_required()),
        }
    };
    if let Err(e) = &decision {
        deny(state, caller, action, e).await?;
    }
    decision
}

/// Audits a refusal of a mutation (logged for every action).
pub async fn deny(
    state: &AppState,
    caller: &Caller,
    action: Action,
    e: &ApiError,
) -> Result<(), ApiError> {
    tracing::info!(
        action = action.name(),
        role = caller.role.as_str(),
        code = e.code.as_str(),
        "denied"
    );
    if action.is_mutation() {
        state
            .store
            .append_audit(&event(
                caller,
                action,
                "deny",
                None,
                json!({ "reason": e.code.as_str() }),
            ))
            .await?;
    }
    Ok(())
}

/// An audit event of `caller`.
fn event(
    caller: &Caller,
    action: Action,
    decision: &str,
    resource: Option<String>,
    details: Value,
) -> AuditDraft {
    AuditDraft {
        occurred_at: now(),
        actor: caller.key_id.clone(),
        actor_role: Some(caller.role.as_str().to_string()),
        // Signed in to a tenant, what is done as that tenant is on its trail; platform actions are not its.
        tenant_id: caller.tenant.or(caller
            .acting_tenant
            .filter(|_| action.follows_tenant_header())),
        action: action.name().to_string(),
        decision: decision.to_string(),
        resource,
        request_id: request_context::request_id(),
        details,
    }
}

/// The audit event of an allowed mutation, for the store to complete (ids, counts) and write in the mutation's
/// own transaction: `details` holds what the request says (never a secret); `outcome` is `ok`.
pub fn draft(
    caller: &Caller,
    action: Action,
    resource: Option<String>,
    details: Value,
) -> AuditDraft {
    let details = match details {
        Value::Object(mut m) => {
            m.insert("outcome".into(), "ok".into());
            Value::Object(m)
        }
        _ => json!({ "outcome": "ok" }),
    };
    event(caller, action, "allow", resource, details)
}

/// The answer of an allowed mutation (audited by the store with the change).
#[derive(Debug)]
pub struct Done {
    pub status: StatusCode,
    pub body: Value,
}

/// Answers an allowed mutation. A failed one stored nothing (its transaction rolled back, or it never reached
/// the store): its failure is audited here, with the error code as outcome (`deny` when the content was
/// forbidden).
pub async fn finish(
    state: &AppState,
    caller: &Caller,
    action: Action,
    outcome: Result<Done, ApiError>,
) -> Response {
    match outcome {
        Ok(d) => (d.status, Json(d.body)).into_response(),
        Err(e) => {
            let decision = if e.code == ErrorCode::Forbidden {
                "deny"
            } else {
                "allow"
            };
            let audited = state
                .store
                .append_audit(&event(
                    caller,
                    action,
                    decision,
                    None,
                    json!({ "outcome": e.code.as_str() }),
                ))
                .await;
            if let Err(a) = audited {
                return ApiError::internal(format!(
                    "audit append failed after a failed {}: {a}",
                    action.name()
                ))
                .into_response();
            }
            e.into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        // Least privilege: a sampler posts samples only, a usage reporter usage only.
        for a in [
            Action::IngestUsage,
            Action::ReadCatalog,
            Action::ReadAllocation,
            Action::CreateApiKey,
        ] {
            assert_eq!(access(a, Sampler), Access::Deny, "{a:?}");
        }
        assert_eq!(access(Action::IngestUsage, UsageReporter), Access::Platform);
        assert_eq!(access(Action::IngestSamples, UsageReporter), Access::Deny);
        assert_eq!(access(Action::ReadAllocation, UsageReporter), Access::Deny);
        assert_eq!(access(Action::RevokeApiKey, TenantAdmin), Access::Tenant);
        assert_eq!(access(Action::RevokeApiKey, Finops), Access::Deny);
        assert_eq!(access(Action::ReadAuditHead, Auditor), Access::Deny);
    }
}
