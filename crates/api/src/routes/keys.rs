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
use eai_engine::time::Timestamp;
use eai_store::NewSecret;
use serde_json::json;

use crate::auth::actions::{CreateApiKey, ListApiKeys, RevokeApiKey, RotateApiKey};
use crate::auth::{Authorized, Caller};
use crate::error::ApiError;
use crate::extract::Body;
use crate::key_format::{hash_api_key, new_api_key};
use crate::state::AppState;
use crate::views::key::{ApiKey, ApiKeyCreate, ApiKeyCreated, ApiKeyRotate, TenantOfKey, WhoAmI};
use crate::views::{done, Items};
use eai_app::keys::key_request_full;

/// Answers 201 `{"id", "key", "role", "tenant_id", "name"}`.
pub async fn create(
    State(st): State<AppState>,
    auth: Authorized<CreateApiKey>,
    body: Body,
) -> Result<Response, ApiError> {
    let outcome = async {
        let b: ApiKeyCreate = body.json()?;
        let at = st.now();
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
        let created = ApiKeyCreated {
            listed: ApiKey::of(&rec, at),
            key,
        };
        done(StatusCode::CREATED, &created)
    }
    .await;
    Ok(auth.finish(&st, outcome).await)
}

/// Answers `{"items": [...]}`: every key (platform_admin) or the caller's tenant's (tenant_admin).
pub async fn list(
    State(st): State<AppState>,
    auth: Authorized<ListApiKeys>,
) -> Result<Json<Items<ApiKey>>, ApiError> {
    let scope = auth.scope;
    let at = st.now();
    let items: Vec<ApiKey> = st
        .store
        .api_keys(scope)
        .await?
        .iter()
        .map(|k| ApiKey::of(k, at))
        .collect();
    Ok(Json(items.into()))
}

/// `DELETE /v1/auth/api-keys/{id}`: revokes the key (idempotent); answers the key as listed.
pub async fn revoke(
    State(st): State<AppState>,
    auth: Authorized<RevokeApiKey>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let scope = auth.scope;
    let outcome = async {
        let at = st.now();
        let audit = auth.draft(Some(id.clone()), json!({}));
        let rec = st.store.revoke_api_key(scope, &id, at, &audit).await?;
        done(StatusCode::OK, &ApiKey::of(&rec, at))
    }
    .await;
    Ok(auth.finish(&st, outcome).await)
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
        let b: ApiKeyRotate = body.json_or_default()?;
        let grace = b.grace_seconds.unwrap_or(0);
        if grace > MAX_GRACE_SECONDS {
            return Err(ApiError::invalid(
                "grace_seconds",
                format!("must be at most {MAX_GRACE_SECONDS} (a week)"),
            ));
        }
        let at = st.now();
        let until = Timestamp(at.0 + i64::try_from(grace).unwrap_or(0) * 1000);
        let key = new_api_key();
        let audit = auth.draft(Some(id.clone()), json!({ "grace_seconds": grace }));
        let rec = st
            .store
            .rotate_api_key(
                scope,
                &id,
                &NewSecret {
                    hash: hash_api_key(&key),
                    at,
                    grace_until: until,
                },
                &audit,
            )
            .await?;
        let rotated = ApiKeyCreated {
            listed: ApiKey::of(&rec, at),
            key,
        };
        done(StatusCode::OK, &rotated)
    }
    .await;
    Ok(auth.finish(&st, outcome).await)
}

/// Answers `{"key_id", "role", "tenant_id", "tenant", "acting_tenant"}` for any valid key: nothing the caller
/// does not already hold (its tenant's registration, and the tenant `X-EAI-Tenant` signed it in to). Read-only
/// and never audited, like the other reads.
pub async fn whoami(State(st): State<AppState>, caller: Caller) -> Result<Json<WhoAmI>, ApiError> {
    let describe = |id: Option<TenantId>| {
        let st = &st;
        async move {
            let Some(id) = id else {
                return Ok::<_, ApiError>(None);
            };
            let registered = st.store.tenant(&eai_store::TenantRef::Id(id)).await?;
            Ok(Some(TenantOfKey::of(id, registered.as_ref())))
        }
    };
    Ok(Json(WhoAmI {
        key_id: caller.key_id.clone(),
        role: caller.role.as_str(),
        tenant_id: caller.tenant.map(|t| t.to_string()),
        tenant: describe(caller.tenant).await?,
        acting_tenant: describe(caller.acting_tenant).await?,
    }))
}
