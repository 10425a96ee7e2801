//! API keys and their lifecycle. The secret is shown once, in the answer that makes it; the store keeps only its
//! SHA-256, and no answer ever shows it again.
//!
//! - `POST /v1/auth/api-keys` (platform_admin): a key for a role and, except platform keys, a tenant; optional
//!   `expires_at`, and for a sampler key optional `nodes` (the only node names it may post samples of).
//! - `GET /v1/auth/api-keys` (platform_admin: every key; tenant_admin: its tenant's).
//! - `DELETE /v1/auth/api-keys/{id}`: revokes (the next call with it gets 401).
//! - `POST /v1/auth/api-keys/{id}/rotate` `{"grace_seconds"?}`: a new secret; the old one keeps working for the
//!   grace period (default 0: not at all).
//! - `GET /v1/auth/whoami` (any valid key): who the key is, so that a client (the portal) can adapt to its role.
//!
//! Every change is audited; a tenant_admin touching another tenant's key gets 404, as if it did not exist.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::Json;
use eai_engine::domain::TenantId;
use eai_engine::error::FieldError;
use eai_engine::time::Timestamp;
use eai_store::{ApiKeyRecord, NewApiKey, Role};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::auth::actions::{CreateApiKey, ListApiKeys, RevokeApiKey, RotateApiKey};
use crate::auth::{is_tenant_role, Authorized, Caller, Done};
use crate::error::ApiError;
use crate::extract::Body;
use crate::key_format::{hash_api_key, new_api_key};
use crate::state::{now, AppState};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NewKey {
    role: Option<String>,
    tenant_id: Option<String>,
    name: Option<String>,
    expires_at: Option<String>,
    nodes: Option<Vec<String>>,
}

/// A validated key request.
#[derive(Debug, PartialEq, Eq)]
pub struct KeyRequest {
    pub role: Role,
    pub tenant_id: Option<TenantId>,
    pub name: Option<String>,
    pub expires_at: Option<Timestamp>,
    pub nodes: Vec<String>,
}

impl KeyRequest {
    /// The key to store, with the hash of its secret.
    pub fn into_new_key(self, hash: String, at: Timestamp) -> NewApiKey {
        NewApiKey {
            hash,
            role: self.role,
            tenant_id: self.tenant_id,
            name: self.name,
            nodes: self.nodes,
            expires_at: self.expires_at,
            created_at: at,
        }
    }
}

/// Node names a sampler key may be bound to: 1 to 1,000 non-empty names of at most 253 characters.
fn check_nodes(role: Option<Role>, nodes: Option<&[String]>) -> Result<Vec<String>, FieldError> {
    let Some(nodes) = nodes else {
        return Ok(Vec::new());
    };
    if role != Some(Role::Sampler) {
        return Err(FieldError::new(
            "nodes",
            "only a sampler key can be bound to nodes",
        ));
    }
    if nodes.is_empty() || nodes.len() > 1000 {
        return Err(FieldError::new(
            "nodes",
            "must list 1 to 1000 node names (omit it for any node)",
        ));
    }
    let mut out: Vec<String> = Vec::with_capacity(nodes.len());
    for n in nodes {
        let n = n.trim();
        if n.is_empty() || n.chars().count() > 253 {
            return Err(FieldError::new(
                "nodes",
                "each node name must have 1 to 253 characters",
            ));
        }
        out.push(n.to_string());
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// Roles other than platform_admin and sampler need a tenant; those two take none (they act for every tenant).
pub fn key_request(
    role: Option<&str>,
    tenant_id: Option<&str>,
    name: Option<&str>,
) -> Result<KeyRequest, Vec<FieldError>> {
    key_request_full(role, tenant_id, name, None, None, now())
}

/// [`key_request`] with an expiry (a date or RFC 3339, after `now`) and a sampler's nodes.
pub fn key_request_full(
    role: Option<&str>,
    tenant_id: Option<&str>,
    name: Option<&str>,
    expires_at: Option<&str>,
    nodes: Option<&[String]>,
    now: Timestamp,
) -> Result<KeyRequest, Vec<FieldError>> {
    let mut errors = Vec::new();
    let all = Role::ALL
        .iter()
        .map(|r| r.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    let role = match role {
        None => {
            errors.push(FieldError::new("role", "is required"));
            None
        }
        Some(r) => {
            let parsed = Role::parse(r.trim());
            if parsed.is_none() {
                errors.push(FieldError::new("role", format!("must be one of {all}")));
            }
            parsed
        }
    };
    let tenant = match tenant_id {
        None => None,
        Some(t) => match t.trim().parse::<TenantId>() {
            Ok(t) => Some(t),
            Err(e) => {
                errors.push(e.field("tenant_id"));
                None
            }
        },
    };
    match (role, tenant_id) {
        (Some(r), None) if is_tenant_role(r) => errors.push(FieldError::new(
            "tenant_id",
            format!("is required for the role {}", r.as_str()),
        )),
        (Some(r), Some(_)) if !is_tenant_role(r) => errors.push(FieldError::new(
            "tenant_id",
            format!(
                "must be omitted for the role {}: it acts for every tenant",
                r.as_str()
            ),
        )),
        _ => {}
    }
    let name = match name.map(str::trim) {
        None => None,
        Some("") => {
            errors.push(FieldError::new("name", "must not be empty"));
            None
        }
        Some(n) if n.chars().count() > 200 => {
            errors.push(FieldError::new("name", "must be at most 200 characters"));
            None
        }
        Some(n) => Some(n.to_string()),
    };
    let expires_at = match expires_at.map(str::trim) {
        None => None,
        Some(t) => match Timestamp::parse_date_or_datetime(t) {
            Ok(at) if at > now => Some(at),
            Ok(_) => {
                errors.push(FieldError::new("expires_at", "must be in the future"));
                None
            }
            Err(e) => {
                errors.push(e.field("expires_at"));
                None
            }
        },
    };
    let nodes = check_nodes(role, nodes).unwrap_or_else(|e| {
        errors.push(e);
        Vec::new()
    });
    match (role, errors.is_empty()) {
        (Some(role), true) => Ok(KeyRequest {
            role,
            tenant_id: tenant,
            name,
            expires_at,
            nodes,
        }),
        _ => Err(errors),
    }
}

/// A key as listed: never its secret, nor its hash.
pub fn key_view(k: &ApiKeyRecord, now: Timestamp) -> Value {
    let status = if k.revoked() {
        "revoked"
    } else if k.expires_at.is_some_and(|e| e <= now) {
        "expired"
    } else {
        "active"
    };
    json!({
        "id": k.id,
        "role": k.role.as_str(),
        "tenant_id": k.tenant_id.map(|t| t.to_string()),
        "name": k.name,
        "status": status,
        "created_at": k.created_at.to_string(),
        "expires_at": k.expires_at.map(|t| t.to_string()),
        "revoked_at": k.revoked_at.map(|t| t.to_string()),
        "rotated_at": k.rotated_at.map(|t| t.to_string()),
        "previous_secret_valid_until": k.previous.as_ref().map(|(_, t)| *t).filter(|t| *t > now).map(|t| t.to_string()),
        "nodes": if k.nodes.is_empty() { Value::Null } else { json!(k.nodes) },
    })
}

/// Answers 201 `{"id", "key", "role", "tenant_id", "name"}`.
pub async fn create(
    State(st): State<AppState>,
    auth: Authorized<CreateApiKey>,
    body: Body,
) -> Result<Response, ApiError> {
    let outcome = async {
        let b: NewKey = body.json()?;
        let at = now();
        let req = key_request_full(
            b.role.as_deref(),
            b.tenant_id.as_deref(),
            b.name.as_deref(),
            b.expires_at.as_deref(),
            b.nodes.as_deref(),
            at,
        )
        .map_err(ApiError::validation)?;
        let key = new_api_key();
        let tenant = req.tenant_id.map(|t| t.to_string());
        let audit = auth.draft(None,
            json!({ "role": req.role.as_str(), "tenant_id": tenant, "name": req.name, "expires_at": req.expires_at.map(|t| t.to_string()), "nodes": req.nodes }),
        );
        let new = req.into_new_key(hash_api_key(&key), at);
        let rec = st.store.create_api_key(&new, &audit).await?;
        let mut body = key_view(&rec, at);
        body["key"] = json!(key);
        Ok(Done {
            status: StatusCode::CREATED,
            body,
        })
    }
    .await;
    Ok(auth.finish(&st, outcome).await)
}

/// Answers `{"items": [...]}`: every key (platform_admin) or the caller's tenant's (tenant_admin).
pub async fn list(
    State(st): State<AppState>,
    auth: Authorized<ListApiKeys>,
) -> Result<Json<Value>, ApiError> {
    let scope = auth.scope;
    let at = now();
    let items: Vec<Value> = st
        .store
        .api_keys(scope)
        .await?
        .iter()
        .map(|k| key_view(k, at))
        .collect();
    Ok(Json(json!({ "items": items })))
}

/// `DELETE /v1/auth/api-keys/{id}`: revokes the key (idempotent); answers the key as listed.
pub async fn revoke(
    State(st): State<AppState>,
    auth: Authorized<RevokeApiKey>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let scope = auth.scope;
    let outcome = async {
        let at = now();
        let audit = auth.draft(Some(id.clone()), json!({}));
        let rec = st.store.revoke_api_key(scope, &id, at, &audit).await?;
        Ok(Done {
            status: StatusCode::OK,
            body: key_view(&rec, at),
        })
    }
    .await;
    Ok(auth.finish(&st, outcome).await)
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RotateBody {
    grace_seconds: Option<u64>,
}

/// Longest grace period of a rotation: a week.
const MAX_GRACE_SECONDS: u64 = 7 * 24 * 3600;

/// `POST /v1/auth/api-keys/{id}/rotate` `{"grace_seconds"?: 0..=604800}`: a new secret for the key (shown once),
/// the old one valid `grace_seconds` more.
pub async fn rotate(
    State(st): State<AppState>,
    auth: Authorized<RotateApiKey>,
    Path(id): Path<String>,
    body: Body,
) -> Result<Response, ApiError> {
    let scope = auth.scope;
    let outcome = async {
        let b: RotateBody = body.json_or_default()?;
        let grace = b.grace_seconds.unwrap_or(0);
        if grace > MAX_GRACE_SECONDS {
            return Err(ApiError::invalid(
                "grace_seconds",
                format!("must be at most {MAX_GRACE_SECONDS} (a week)"),
            ));
        }
        let at = now();
        let until = Timestamp(at.0 + i64::try_from(grace).unwrap_or(0) * 1000);
        let key = new_api_key();
        let audit = auth.draft(Some(id.clone()), json!({ "grace_seconds": grace }));
        let rec = st
            .store
            .rotate_api_key(scope, &id, &hash_api_key(&key), at, until, &audit)
            .await?;
        let mut body = key_view(&rec, at);
        body["key"] = json!(key);
        Ok(Done {
            status: StatusCode::OK,
            body,
        })
    }
    .await;
    Ok(auth.finish(&st, outcome).await)
}

/// Answers `{"key_id", "role", "tenant_id", "tenant", "acting_tenant"}` for any valid key: nothing the caller
/// does not already hold (its tenant's registration, and the tenant `X-EAI-Tenant` signed it in to). Read-only
/// and never audited, like the other reads.
pub async fn whoami(State(st): State<AppState>, caller: Caller) -> Result<Json<Value>, ApiError> {
    let describe = |id: Option<TenantId>| {
        let st = &st;
        async move {
            let Some(id) = id else {
                return Ok::<Value, ApiError>(Value::Null);
            };
            Ok(
                match st.store.tenant(&eai_store::TenantRef::Id(id)).await? {
                    Some(t) => crate::routes::tenants::view(&t),
                    None => json!({ "id": id.to_string(), "slug": null, "name": null }),
                },
            )
        }
    };
    Ok(Json(json!({
        "key_id": caller.key_id,
        "role": caller.role.as_str(),
        "tenant_id": caller.tenant.map(|t| t.to_string()),
        "tenant": describe(caller.tenant).await?,
        "acting_tenant": describe(caller.acting_tenant).await?,
    })))
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: &str = "8f0c2a4e-1b7d-4c55-9a51-2f3e6d7c9b10";

    #[test]
    fn tenant_roles_need_a_tenant_and_platform_roles_take_none() {
        assert!(key_request(Some("finops"), Some(T), None).is_ok());
        assert!(key_request(Some("platform_admin"), None, Some("ops")).is_ok());
        assert!(key_request(Some("sampler"), None, None).is_ok());
        assert!(key_request(Some("usage_reporter"), None, None).is_ok());
        let nodes = vec!["gpu-node-3".to_string()];
        let now = Timestamp(1_790_812_800_000);
        assert_eq!(
            key_request_full(Some("sampler"), None, None, None, Some(&nodes), now)
                .expect("a sampler bound to a node")
                .nodes,
            nodes
        );
        assert_eq!(
            key_request_full(Some("viewer"), Some(T), None, None, Some(&nodes), now)
                .expect_err("not a sampler")[0]
                .field,
            "nodes"
        );
        assert_eq!(
            key_request_full(Some("viewer"), Some(T), None, Some("2020-01-01"), None, now)
                .expect_err("past")[0]
                .field,
            "expires_at"
        );
        assert_eq!(
            key_request(Some("finops"), None, None).expect_err("no tenant")[0].field,
            "tenant_id"
        );
        assert_eq!(
            key_request(Some("sampler"), Some(T), None).expect_err("tenant")[0].field,
            "tenant_id"
        );
        assert_eq!(
            key_request(Some("root"), None, None).expect_err("role")[0].field,
            "role"
        );
        assert_eq!(
            key_request(None, None, None).expect_err("role")[0].field,
            "role"
        );
        assert_eq!(
            key_request(Some("viewer"), Some("acme"), None).expect_err("uuid")[0].field,
            "tenant_id"
        );
    }
}
