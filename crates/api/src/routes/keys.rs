//! `POST /v1/auth/api-keys` (platform_admin): creates an API key for a role and, except platform keys, a
//! tenant. The key is shown once in the answer; the store keeps only its SHA-256.
//! `GET /v1/auth/whoami` (any valid key): who the key is, so that a client (the portal) can adapt to its role.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use axum::Json;
use eai_engine::domain::TenantId;
use eai_engine::error::FieldError;
use eai_store::Role;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::auth::{
    authorize, finish, hash_api_key, is_tenant_role, new_api_key, Action, Caller, Done,
};
use crate::error::ApiError;
use crate::extract::Body;
use crate::state::{now, AppState};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NewKey {
    role: Option<String>,
    tenant_id: Option<String>,
    name: Option<String>,
}

/// A validated key request.
#[derive(Debug, PartialEq, Eq)]
pub struct KeyRequest {
    pub role: Role,
    pub tenant_id: Option<TenantId>,
    pub name: Option<String>,
}

/// Roles other than platform_admin and sampler need a tenant; those two take none (they act for every tenant).
pub fn key_request(
    role: Option<&str>,
    tenant_id: Option<&str>,
    name: Option<&str>,
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
    match (role, errors.is_empty()) {
        (Some(role), true) => Ok(KeyRequest {
            role,
            tenant_id: tenant,
            name,
        }),
        _ => Err(errors),
    }
}

/// Answers 201 `{"id", "key", "role", "tenant_id", "name"}`.
pub async fn create(
    State(st): State<AppState>,
    caller: Caller,
    body: Body,
) -> Result<Response, ApiError> {
    authorize(&st, &caller, Action::CreateApiKey).await?;
    let outcome = async {
        let b: NewKey = body.json()?;
        let req = key_request(b.role.as_deref(), b.tenant_id.as_deref(), b.name.as_deref())
            .map_err(ApiError::validation)?;
        let key = new_api_key();
        let rec = st.store.create_api_key(&hash_api_key(&key), req.role, req.tenant_id, req.name.as_deref(), now()).await?;
        let tenant = rec.tenant_id.map(|t| t.to_string());
        Ok(Done {
            status: StatusCode::CREATED,
            body: json!({ "id": rec.id, "key": key, "role": rec.role.as_str(), "tenant_id": tenant, "name": rec.name }),
            resource: Some(rec.id.clone()),
            details: json!({ "role": rec.role.as_str(), "tenant_id": tenant, "name": rec.name }),
        })
    }
    .await;
    Ok(finish(&st, &caller, Action::CreateApiKey, outcome).await)
}

/// Answers `{"key_id", "role", "tenant_id"}` for any valid key: nothing the caller does not already hold.
/// Read-only and never audited, like the other reads.
pub async fn whoami(caller: Caller) -> Json<Value> {
    Json(json!({
        "key_id": caller.key_id,
        "role": caller.role.as_str(),
        "tenant_id": caller.tenant.map(|t| t.to_string()),
    }))
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
