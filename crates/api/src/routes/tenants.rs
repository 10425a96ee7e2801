//! Tenants by name (SPEC §7): `POST /v1/tenants` (platform_admin) `{"slug", "name", "id"?}` registers one
//! (201 `{"id", "slug", "name"}`; the slug is unique and never changes; audited), `GET /v1/tenants` lists them
//! (platform_admin: all; a tenant's key: its own), `GET /v1/tenants/{id or slug}` shows one (a tenant's key: its
//! own only, another is not found). A tenant id seen in data but never registered keeps working everywhere.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::Json;
use eai_engine::domain::{Tenant, TenantId, TenantSlug};
use eai_engine::error::FieldError;
use eai_store::{Scope, StoreError, TenantRef};
use serde_json::json;
use uuid::Uuid;

use crate::auth::actions::{CreateTenant, ReadTenants};
use crate::auth::Authorized;
use crate::error::ApiError;
use crate::extract::Body;
use crate::state::AppState;
use crate::views::tenant as views;
use crate::views::{done, Items};

/// A validated registration: a slug, a display name of 1 to 200 characters, and an id (a new uuid unless given).
fn tenant_request(b: &views::TenantCreate) -> Result<Tenant, Vec<FieldError>> {
    let mut errors = Vec::new();
    let slug = match b.slug.as_deref().map(str::trim) {
        None => {
            errors.push(FieldError::new("slug", "is required"));
            None
        }
        Some(s) => s.parse::<TenantSlug>().map_err(|e| errors.push(e)).ok(),
    };
    let name = match b.name.as_deref().map(str::trim) {
        None => {
            errors.push(FieldError::new("name", "is required"));
            None
        }
        Some(n) if n.is_empty() || n.chars().count() > 200 => {
            errors.push(FieldError::new("name", "must have 1 to 200 characters"));
            None
        }
        Some(n) => Some(n.to_string()),
    };
    let id = match b.id.as_deref() {
        None => Some(TenantId(Uuid::new_v4())),
        Some(s) => s
            .trim()
            .parse::<TenantId>()
            .map_err(|e| errors.push(e.field("id")))
            .ok(),
    };
    match (slug, name, id, errors.is_empty()) {
        (Some(slug), Some(name), Some(id), true) => Ok(Tenant { id, slug, name }),
        _ => Err(errors),
    }
}

/// `POST /v1/tenants`.
pub async fn create(
    State(st): State<AppState>,
    auth: Authorized<CreateTenant>,
    body: Body,
) -> Result<Response, ApiError> {
    let outcome = async {
        let b: views::TenantCreate = body.json()?;
        let t = tenant_request(&b).map_err(ApiError::validation)?;
        let audit = auth.draft(None, json!({ "slug": t.slug.as_str(), "name": t.name }));
        let stored = st
            .store
            .create_tenant(&t, &audit)
            .await
            .map_err(|e| match e {
                // Named by what the caller sent only (a generated id is not the caller's).
                StoreError::Conflict { field, .. } if field == "slug" => ApiError::conflict_on(
                    &field,
                    match &b.id {
                        Some(_) => format!(
                            "a tenant with the slug {} or the id {} is registered already",
                            t.slug, t.id
                        ),
                        None => format!("a tenant with the slug {} is registered already", t.slug),
                    },
                ),
                other => other.into(),
            })?;
        done(StatusCode::CREATED, &views::Tenant::of(&stored))
    }
    .await;
    Ok(auth.finish(&st, outcome).await)
}

/// `GET /v1/tenants`: `{"items": [...]}`, by slug.
pub async fn list(
    State(st): State<AppState>,
    auth: Authorized<ReadTenants>,
) -> Result<Json<Items<views::Tenant>>, ApiError> {
    let scope = auth.scope;
    let items: Vec<views::Tenant> = st
        .store
        .tenants(scope)
        .await?
        .iter()
        .map(views::Tenant::of)
        .collect();
    Ok(Json(items.into()))
}

/// `GET /v1/tenants/{id or slug}`.
pub async fn get_one(
    State(st): State<AppState>,
    auth: Authorized<ReadTenants>,
    Path(key): Path<String>,
) -> Result<Json<views::Tenant>, ApiError> {
    let scope = auth.scope;
    let not_found = || ApiError::tenant_not_found(&key);
    let r: TenantRef = key.parse().map_err(|_| not_found())?;
    let t = st.store.tenant(&r).await?.ok_or_else(not_found)?;
    match scope {
        Scope::Tenant(mine) if mine != t.id => Err(not_found()),
        _ => Ok(Json(views::Tenant::of(&t))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(slug: Option<&str>, name: Option<&str>, id: Option<&str>) -> views::TenantCreate {
        views::TenantCreate {
            slug: slug.map(str::to_string),
            name: name.map(str::to_string),
            id: id.map(str::to_string),
        }
    }

    #[test]
    fn a_registration_needs_a_slug_and_a_name() {
        let t = tenant_request(&req(Some("acme"), Some("Acme Corp"), None)).expect("ok");
        assert_eq!((t.slug.as_str(), t.name.as_str()), ("acme", "Acme Corp"));
        let id = "8f0c2a4e-1b7d-4c55-9a51-2f3e6d7c9b10";
        assert_eq!(
            tenant_request(&req(Some("acme"), Some("A"), Some(id)))
                .expect("ok")
                .id
                .to_string(),
            id
        );
        let e = tenant_request(&req(Some("Acme!"), None, Some("x"))).expect_err("bad");
        let fields: Vec<&str> = e.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, vec!["slug", "name", "id"]);
    }
}
