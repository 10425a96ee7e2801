//! Who is calling and what they may do: API keys (`eai_live_…`, stored as SHA-256), the [`Caller`] extractor,
//! the one policy table ([`actions`]: one type per action, naming the roles that may do it), the
//! [`Authorized`] extractor every handler takes for its action, and the audit of every decision on a mutation.

use std::marker::PhantomData;
use std::net::{IpAddr, SocketAddr};

use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::request::Parts;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use eai_engine::domain::TenantId;
use eai_store::{AuditDraft, Role, Scope, StoreError, TenantRef};
use serde_json::{json, Value};

use crate::error::{ApiError, ErrorCode};
use crate::key_format::{check_key_format, hash_api_key};
use crate::limits;
use crate::request_context;
use crate::state::AppState;
use crate::telemetry;
use eai_engine::time::Timestamp;

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
    /// When it signed in (the request's time, by the server's clock): the time of what it does (its audit).
    pub at: Timestamp,
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

/// The bearer token of `Authorization`, its scheme read case-insensitively and the token trimmed.
pub(crate) fn bearer(parts: &Parts) -> Option<&str> {
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
            occurred_at: state.now(),
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

/// A caller already signed in by a layer before the handler (`crate::idempotency`): the handler's own
/// [`Caller`] extraction reuses it, so that a request is counted once (rate limit, failures) and signed in at
/// one instant. Only this crate's layers insert it.
#[derive(Debug, Clone)]
pub(crate) struct SignedIn(pub(crate) Caller);

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        if let Some(SignedIn(caller)) = parts.extensions.get::<SignedIn>() {
            return Ok(caller.clone());
        }
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
        let at = state.now();
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
            .check_key(&key.id, key.role)
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
            at,
        })
    }
}

/// What a request wants to do, as a type: its name, whether it changes anything, and who may do it. A handler
/// names its action in the type of its [`Authorized`] argument and receives its caller and scope from it: the
/// check cannot be forgotten, nor made for another action than the one the handler audits.
pub trait Action: Send + Sync + std::fmt::Debug + 'static {
    /// The name in audit events and error messages.
    const NAME: &'static str;
    /// Mutations are audited, allowed or denied.
    const MUTATION: bool;
    /// Reads (and a tenant's usage) a platform identity signed in to a tenant (`X-EAI-Tenant`) does as that
    /// tenant does; other platform actions (samples, policies, keys of any tenant, tenants) keep their platform
    /// scope.
    const FOLLOWS_TENANT_HEADER: bool;
    /// The roles that may do it for every tenant ([`Access::Platform`]).
    const PLATFORM: &'static [Role];
    /// The roles that may do it for their own tenant only ([`Access::Tenant`]); any other role is denied.
    const TENANT: &'static [Role];
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

pub use eai_app::keys::is_tenant_role;

/// What `role` may do with action `A`: the row of `A` in the policy table ([`actions`]).
pub fn access<A: Action>(role: Role) -> Access {
    if A::PLATFORM.contains(&role) {
        Access::Platform
    } else if A::TENANT.contains(&role) {
        Access::Tenant
    } else {
        Access::Deny
    }
}

macro_rules! actions {
    ($(
        $(#[$doc:meta])*
        $ty:ident {
            name: $name:literal,
            mutation: $mutation:literal,
            follows_tenant_header: $header:literal,
            platform: [$($p:ident),*],
            tenant: [$($t:ident),*] $(,)?
        }
    )*) => {
        $(
            $(#[$doc])*
            #[derive(Debug, Clone, Copy)]
            pub struct $ty;

            impl Action for $ty {
                const NAME: &'static str = $name;
                const MUTATION: bool = $mutation;
                const FOLLOWS_TENANT_HEADER: bool = $header;
                const PLATFORM: &'static [Role] = &[$(Role::$p),*];
                const TENANT: &'static [Role] = &[$(Role::$t),*];
            }
        )*

        /// Every action by name, with its row of the policy table.
        pub const ALL: &[(&str, fn(Role) -> Access)] = &[$(($name, access::<$ty>)),*];
    };
}

/// The policy table: every action and the roles that may do it, in one place. Each role holds the least it
/// needs.
///
/// | action | platform_admin | finops | tenant_admin | auditor, security_officer | developer | viewer | sampler | usage_reporter |
/// |---|---|---|---|---|---|---|---|---|
/// | samples ingest | all | - | - | - | - | - | all (its nodes) | - |
/// | allocation, statements read, policy list, catalog | all | tenant | tenant | tenant | tenant | tenant | - | catalog: all |
/// | statements issue | all | - | - | - | - | - | - | - |
/// | policy create/supersede/disable, key create, provider register | all | - | - | - | - | - | - | - |
/// | key list, revoke, rotate | all | - | tenant | - | - | - | - | - |
/// | usage events ingest | all (tenant in body) | - | tenant | - | tenant | - | vLLM counters only | all (tenant in body), no vLLM counters |
/// | audit events | all | - | - | tenant | - | - | - | - |
/// | audit head, tenant create | all | - | - | - | - | - | - | - |
/// | tenants read | all | own | own | own | own | own | - | all |
/// | budget create, supersede, disable | all | tenant | - | - | - | - | - | - |
/// | budgets read | all | tenant | tenant | tenant | tenant | tenant | - | - |
/// | reserve, commit, release | all | - | tenant | - | tenant | - | - | all (tenant named) |
/// | reservation read | all | tenant | tenant | tenant | tenant | tenant | - | all (tenant named) |
pub mod actions {
    use super::{access, Access, Action};
    use eai_store::Role;

    actions! {
        /// `POST /v1/finops/gpu/samples` (a sampler: only its nodes' samples).
        IngestSamples {
            name: "gpu_samples.ingest", mutation: true, follows_tenant_header: false,
            platform: [PlatformAdmin, Sampler], tenant: [],
        }
        /// `GET /v1/finops/gpu/allocation` (and its `explain`).
        ReadAllocation {
            name: "gpu_allocation.read", mutation: false, follows_tenant_header: true,
            platform: [PlatformAdmin],
            tenant: [Finops, TenantAdmin, Auditor, SecurityOfficer, Developer, Viewer],
        }
        /// `POST /v1/finops/gpu/statements`.
        IssueStatements {
            name: "gpu_statement.issue", mutation: true, follows_tenant_header: false,
            platform: [PlatformAdmin], tenant: [],
        }
        /// `GET /v1/finops/gpu/statements[/{number}]` (the allocation's readers).
        ReadStatements {
            name: "gpu_statement.read", mutation: false, follows_tenant_header: true,
            platform: [PlatformAdmin],
            tenant: [Finops, TenantAdmin, Auditor, SecurityOfficer, Developer, Viewer],
        }
        /// `GET /v1/finops/allocation-policies[/{id}]`.
        ReadPolicies {
            name: "allocation_policy.list", mutation: false, follows_tenant_header: true,
            platform: [PlatformAdmin],
            tenant: [Finops, TenantAdmin, Auditor, SecurityOfficer, Developer, Viewer],
        }
        /// `POST /v1/finops/allocation-policies`.
        CreatePolicy {
            name: "allocation_policy.create", mutation: true, follows_tenant_header: false,
            platform: [PlatformAdmin], tenant: [],
        }
        /// `POST /v1/finops/allocation-policies/{id}/supersede`.
        SupersedePolicy {
            name: "allocation_policy.supersede", mutation: true, follows_tenant_header: false,
            platform: [PlatformAdmin], tenant: [],
        }
        /// `POST /v1/finops/allocation-policies/{id}/disable`.
        DisablePolicy {
            name: "allocation_policy.disable", mutation: true, follows_tenant_header: false,
            platform: [PlatformAdmin], tenant: [],
        }
        /// `GET /v1/providers/catalog`.
        ReadCatalog {
            name: "providers.catalog", mutation: false, follows_tenant_header: true,
            platform: [PlatformAdmin, UsageReporter],
            tenant: [Finops, TenantAdmin, Auditor, SecurityOfficer, Developer, Viewer],
        }
        /// `POST /v1/providers`.
        RegisterProvider {
            name: "provider.register", mutation: true, follows_tenant_header: false,
            platform: [PlatformAdmin], tenant: [],
        }
        /// `POST /v1/usage/events` (a platform identity names the tenant in the body; a sampler posts only its
        /// vLLM servers' counters, `source: vllm`, which name no tenant).
        IngestUsage {
            name: "usage_events.ingest", mutation: true, follows_tenant_header: true,
            platform: [PlatformAdmin, UsageReporter, Sampler], tenant: [TenantAdmin, Developer],
        }
        /// `POST /v1/auth/api-keys`.
        CreateApiKey {
            name: "api_key.create", mutation: true, follows_tenant_header: false,
            platform: [PlatformAdmin], tenant: [],
        }
        /// `GET /v1/auth/api-keys`.
        ListApiKeys {
            name: "api_key.list", mutation: false, follows_tenant_header: true,
            platform: [PlatformAdmin], tenant: [TenantAdmin],
        }
        /// `DELETE /v1/auth/api-keys/{id}`.
        RevokeApiKey {
            name: "api_key.revoke", mutation: true, follows_tenant_header: true,
            platform: [PlatformAdmin], tenant: [TenantAdmin],
        }
        /// `POST /v1/auth/api-keys/{id}/rotate`.
        RotateApiKey {
            name: "api_key.rotate", mutation: true, follows_tenant_header: true,
            platform: [PlatformAdmin], tenant: [TenantAdmin],
        }
        /// `GET /v1/audit/events`.
        ReadAudit {
            name: "audit_events.read", mutation: false, follows_tenant_header: true,
            platform: [PlatformAdmin], tenant: [Auditor, SecurityOfficer],
        }
        /// `GET /v1/audit/head`.
        ReadAuditHead {
            name: "audit_head.read", mutation: false, follows_tenant_header: false,
            platform: [PlatformAdmin], tenant: [],
        }
        /// `POST /v1/tenants`.
        CreateTenant {
            name: "tenant.create", mutation: true, follows_tenant_header: false,
            platform: [PlatformAdmin], tenant: [],
        }
        /// `GET /v1/tenants[/{key}]` (a tenant's roles: their own tenant).
        ReadTenants {
            name: "tenant.read", mutation: false, follows_tenant_header: true,
            platform: [PlatformAdmin, UsageReporter],
            tenant: [Finops, TenantAdmin, Auditor, SecurityOfficer, Developer, Viewer],
        }
        /// `POST /v1/finops/budgets`.
        CreateBudget {
            name: "budget.create", mutation: true, follows_tenant_header: true,
            platform: [PlatformAdmin], tenant: [Finops],
        }
        /// `POST /v1/finops/budgets/{id}/supersede` and `/disable`.
        SupersedeBudget {
            name: "budget.supersede", mutation: true, follows_tenant_header: true,
            platform: [PlatformAdmin], tenant: [Finops],
        }
        /// `GET /v1/finops/budgets[/{id}]`.
        ReadBudgets {
            name: "budget.read", mutation: false, follows_tenant_header: true,
            platform: [PlatformAdmin],
            tenant: [Finops, TenantAdmin, Auditor, SecurityOfficer, Developer, Viewer],
        }
        /// `POST /v1/finops/reservations`.
        Reserve {
            name: "reservation.create", mutation: true, follows_tenant_header: true,
            platform: [PlatformAdmin, UsageReporter], tenant: [TenantAdmin, Developer],
        }
        /// `POST /v1/finops/reservations/{id}/commit`.
        CommitReservation {
            name: "reservation.commit", mutation: true, follows_tenant_header: true,
            platform: [PlatformAdmin, UsageReporter], tenant: [TenantAdmin, Developer],
        }
        /// `POST /v1/finops/reservations/{id}/release`.
        ReleaseReservation {
            name: "reservation.release", mutation: true, follows_tenant_header: true,
            platform: [PlatformAdmin, UsageReporter], tenant: [TenantAdmin, Developer],
        }
        /// `GET /v1/finops/reservations/{id}`.
        ReadReservation {
            name: "reservation.read", mutation: false, follows_tenant_header: true,
            platform: [PlatformAdmin, UsageReporter],
            tenant: [Finops, TenantAdmin, Auditor, SecurityOfficer, Developer, Viewer],
        }
    }
}

/// An authenticated caller allowed to do `A`, and the scope it does it in: the argument of every handler of
/// `A` (in the manner of meilisearch's `GuardedData`). Extracting it signs the caller in ([`Caller`]), then
/// decides with `A`'s row of the policy table: a tenant role without a tenant gets `tenant_required`, a role
/// the row does not name `forbidden`; a refused mutation is audited. A handler thus never runs unauthorized,
/// and audits (with [`Authorized::draft`], [`Authorized::finish`]) under the action it was authorized for.
#[derive(Debug, Clone)]
pub struct Authorized<A: Action> {
    pub caller: Caller,
    /// Whose rows the handler may read and write: every tenant's, or one tenant's.
    pub scope: Scope,
    action: PhantomData<A>,
}

impl<A: Action> FromRequestParts<AppState> for Authorized<A> {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let caller = Caller::from_request_parts(parts, state).await?;
        let scope = authorize::<A>(state, &caller).await?;
        Ok(Authorized {
            caller,
            scope,
            action: PhantomData,
        })
    }
}

impl<A: Action> Authorized<A> {
    /// The audit event of the allowed mutation, for the store to complete (ids, counts) and write in the
    /// mutation's own transaction: `details` holds what the request says (never a secret); `outcome` is `ok`.
    pub fn draft(&self, resource: Option<String>, details: Value) -> AuditDraft {
        let details = match details {
            Value::Object(mut m) => {
                m.insert("outcome".into(), "ok".into());
                Value::Object(m)
            }
            _ => json!({ "outcome": "ok" }),
        };
        event::<A>(&self.caller, "allow", resource, details)
    }

    /// Answers the allowed mutation. A failed one stored nothing (its transaction rolled back, or it never
    /// reached the store): its failure is audited here, with the error code as outcome (`deny` when the content
    /// was forbidden).
    pub async fn finish(&self, state: &AppState, outcome: Result<Done, ApiError>) -> Response {
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
                    .append_audit(&event::<A>(
                        &self.caller,
                        decision,
                        None,
                        json!({ "outcome": e.code.as_str() }),
                    ))
                    .await;
                if let Err(a) = audited {
                    let cause = format!("audit append failed after a failed {}: {a}", A::NAME);
                    return match a {
                        // The store is down or full: the failure cannot be recorded either, and nothing of
                        // the request was: 503, send it again (the cause is logged).
                        StoreError::Unavailable(_) | StoreError::Full(_) => {
                            ApiError::from(a).logged_as(cause)
                        }
                        _ => ApiError::internal(cause),
                    }
                    .into_response();
                }
                e.into_response()
            }
        }
    }
}

/// Decides whether `caller` may do `A` and with which scope. A tenant role without a tenant gets
/// `tenant_required`, then the table decides. Every decision on a mutation is audited: a denied one here, an
/// allowed one by the store in the mutation's own transaction (with [`Authorized::draft`]), or by
/// [`Authorized::finish`] when it failed.
async fn authorize<A: Action>(state: &AppState, caller: &Caller) -> Result<Scope, ApiError> {
    let decision = decide::<A>(caller);
    if let Err(e) = &decision {
        deny::<A>(state, caller, e).await?;
    }
    decision
}

/// The decision of [`authorize`], without its audit.
fn decide<A: Action>(caller: &Caller) -> Result<Scope, ApiError> {
    if is_tenant_role(caller.role) && caller.tenant.is_none() {
        return Err(ApiError::tenant_required());
    }
    match (access::<A>(caller.role), caller.tenant) {
        (Access::Deny, _) => Err(ApiError::forbidden(caller.role.as_str(), A::NAME)),
        (Access::Platform, _) => Ok(match caller.acting_tenant {
            Some(t) if A::FOLLOWS_TENANT_HEADER => Scope::Tenant(t),
            _ => Scope::Platform,
        }),
        (Access::Tenant, Some(t)) => Ok(Scope::Tenant(t)),
        (Access::Tenant, None) => Err(ApiError::tenant_required()),
    }
}

/// Audits a refusal of a mutation (logged for every action).
async fn deny<A: Action>(state: &AppState, caller: &Caller, e: &ApiError) -> Result<(), ApiError> {
    tracing::info!(
        action = A::NAME,
        role = caller.role.as_str(),
        code = e.code.as_str(),
        "denied"
    );
    if A::MUTATION {
        state
            .store
            .append_audit(&event::<A>(
                caller,
                "deny",
                None,
                json!({ "reason": e.code.as_str() }),
            ))
            .await?;
    }
    Ok(())
}

/// An audit event of `caller` doing `A`.
fn event<A: Action>(
    caller: &Caller,
    decision: &str,
    resource: Option<String>,
    details: Value,
) -> AuditDraft {
    AuditDraft {
        occurred_at: caller.at,
        actor: caller.key_id.clone(),
        actor_role: Some(caller.role.as_str().to_string()),
        // Signed in to a tenant, what is done as that tenant is on its trail; platform actions are not its.
        tenant_id: caller
            .tenant
            .or(caller.acting_tenant.filter(|_| A::FOLLOWS_TENANT_HEADER)),
        action: A::NAME.to_string(),
        decision: decision.to_string(),
        resource,
        request_id: request_context::request_id(),
        details,
    }
}

/// The answer of an allowed mutation (audited by the store with the change).
#[derive(Debug)]
pub struct Done {
    pub status: StatusCode,
    pub body: Value,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The policy table as it was written before actions were types (one `match` over (action, role)): the
    /// rows of [`actions`] must give exactly these decisions.
    fn table(action: &str, role: Role) -> Access {
        use Access::{Deny, Platform, Tenant};
        use Role::*;
        match (action, role) {
            (_, PlatformAdmin) => Platform,
            ("budget.create" | "budget.supersede", Finops) => Tenant,
            ("budget.create" | "budget.supersede", _) => Deny,
            ("budget.read", Sampler | UsageReporter) => Deny,
            ("budget.read", _) => Tenant,
            (
                "reservation.create"
                | "reservation.commit"
                | "reservation.release"
                | "reservation.read",
                UsageReporter,
            ) => Platform,
            (
                "reservation.create" | "reservation.commit" | "reservation.release",
                TenantAdmin | Developer,
            ) => Tenant,
            ("reservation.create" | "reservation.commit" | "reservation.release", _) => Deny,
            ("reservation.read", Sampler) => Deny,
            ("reservation.read", _) => Tenant,
            ("gpu_samples.ingest", Sampler) => Platform,
            ("gpu_samples.ingest", _) => Deny,
            ("providers.catalog" | "tenant.read", UsageReporter) => Platform,
            ("tenant.read", Sampler) => Deny,
            ("tenant.read", _) => Tenant,
            (
                "gpu_allocation.read"
                | "gpu_statement.read"
                | "allocation_policy.list"
                | "providers.catalog",
                Sampler | UsageReporter,
            ) => Deny,
            (
                "gpu_allocation.read"
                | "gpu_statement.read"
                | "allocation_policy.list"
                | "providers.catalog",
                _,
            ) => Tenant,
            (
                "allocation_policy.create"
                | "allocation_policy.supersede"
                | "allocation_policy.disable"
                | "api_key.create"
                | "audit_head.read"
                | "tenant.create"
                | "provider.register"
                | "gpu_statement.issue",
                _,
            ) => Deny,
            ("api_key.list" | "api_key.revoke" | "api_key.rotate", TenantAdmin) => Tenant,
            ("api_key.list" | "api_key.revoke" | "api_key.rotate", _) => Deny,
            ("usage_events.ingest", UsageReporter | Sampler) => Platform,
            ("usage_events.ingest", TenantAdmin | Developer) => Tenant,
            ("usage_events.ingest", _) => Deny,
            ("audit_events.read", Auditor | SecurityOfficer) => Tenant,
            ("audit_events.read", _) => Deny,
            (other, _) => panic!("unknown action {other}"),
        }
    }

    const ROLES: [Role; 9] = [
        Role::PlatformAdmin,
        Role::Finops,
        Role::TenantAdmin,
        Role::Auditor,
        Role::Developer,
        Role::Viewer,
        Role::SecurityOfficer,
        Role::Sampler,
        Role::UsageReporter,
    ];

    #[test]
    fn every_action_gives_every_role_what_the_policy_table_says() {
        assert_eq!(actions::ALL.len(), 26);
        let mut names: Vec<&str> = actions::ALL.iter().map(|(n, _)| *n).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), actions::ALL.len(), "one row per action");
        for (name, access) in actions::ALL {
            for role in ROLES {
                assert_eq!(access(role), table(name, role), "{name} {role:?}");
            }
        }
    }

    fn caller(role: Role, tenant: Option<&str>, acting: Option<&str>) -> Caller {
        let t = |s: &str| s.parse::<TenantId>().expect("tenant");
        Caller {
            key_id: "key_1".into(),
            role,
            tenant: tenant.map(t),
            nodes: Vec::new(),
            acting_tenant: acting.map(t),
            at: Timestamp(0),
        }
    }

    #[test]
    fn the_decision_gives_the_scope_of_the_action() {
        use actions::*;
        let a = "8f0c2a4e-1b7d-4c55-9a51-2f3e6d7c9b10";
        let ta: TenantId = a.parse().expect("tenant");
        // A tenant role acts in its tenant; without one it is refused whatever the action.
        let viewer = caller(Role::Viewer, Some(a), None);
        assert_eq!(
            decide::<ReadAllocation>(&viewer).ok(),
            Some(Scope::Tenant(ta))
        );
        let e = decide::<CreatePolicy>(&viewer).expect_err("forbidden");
        assert_eq!(e.code, ErrorCode::Forbidden);
        let lost = caller(Role::Viewer, None, None);
        let e = decide::<ReadAllocation>(&lost).expect_err("no tenant");
        assert_eq!(e.code, ErrorCode::TenantRequired);
        // A platform identity signed in to a tenant reads as that tenant, and keeps its platform scope for
        // platform actions.
        let admin = caller(Role::PlatformAdmin, None, Some(a));
        assert_eq!(
            decide::<ReadAllocation>(&admin).ok(),
            Some(Scope::Tenant(ta))
        );
        assert_eq!(decide::<CreatePolicy>(&admin).ok(), Some(Scope::Platform));
        assert_eq!(decide::<IngestSamples>(&admin).ok(), Some(Scope::Platform));
        let sampler = caller(Role::Sampler, None, None);
        assert_eq!(
            decide::<IngestSamples>(&sampler).ok(),
            Some(Scope::Platform)
        );
        // A sampler posts usage events, but only its vLLM servers' counters (the route checks the source).
        assert_eq!(decide::<IngestUsage>(&sampler).ok(), Some(Scope::Platform));
    }
}
