//! `GET /v1/finops/gpu/allocation/explain?deployment_id&tenant_id&from&to`: why a deployment costs what it does,
//! bucket by bucket (measured and estimated GPU-seconds, each tenant's claim and share, each policy's rates and
//! exact cost, the idle spread, the one rounding and its largest-remainder step), computed by the engine from the
//! inputs of the allocation of the same period: its totals are the allocation's figures.
//!
//! Who sees what: a platform reader sees every tenant (or, with `tenant_id`, what that tenant would see); a
//! tenant reader sees the deployment only if its tenant is charged on it in the period, with every other tenant
//! summed into one `other_tenants` party; another tenant's deployment is a 404, as one that does not exist.
//! Period rules and limits as `GET /v1/finops/gpu/allocation`.

use axum::extract::State;
use axum::Json;
use eai_engine::domain::TenantId;
use eai_engine::error::FieldError;
use eai_engine::view::ExplanationView;
use eai_store::Scope;
use serde::Deserialize;

use super::allocation::{allocation_slot, bucketed};
use crate::auth::actions::ReadAllocation;
use crate::auth::Authorized;
use crate::error::ApiError;
use crate::extract::ApiQuery;
use crate::state::AppState;

#[derive(Debug, Default, Deserialize)]
pub struct ExplainQuery {
    pub deployment_id: Option<String>,
    pub tenant_id: Option<String>,
    pub from: Option<String>,
    pub to: Option<String>,
}

pub async fn get(
    State(st): State<AppState>,
    auth: Authorized<ReadAllocation>,
    ApiQuery(q): ApiQuery<ExplainQuery>,
) -> Result<Json<ExplanationView>, ApiError> {
    let mut errors = Vec::new();
    let deployment_id = match q.deployment_id.as_deref().map(str::trim) {
        Some(d) if !d.is_empty() => Some(d.to_string()),
        _ => {
            errors.push(FieldError::new("deployment_id", "is required"));
            None
        }
    };
    let as_tenant = match q.tenant_id.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(t) => match t.parse::<TenantId>() {
            Ok(t) => Some(t),
            Err(_) => {
                errors.push(FieldError::new("tenant_id", "must be a tenant id (a UUID)"));
                None
            }
        },
    };
    let period = st.requested_period(q.from.as_deref(), q.to.as_deref());
    let (from, to) = match period {
        Ok(p) => p,
        Err(e) => {
            errors.push(e);
            return Err(ApiError::validation(errors));
        }
    };
    let Some(deployment_id) = deployment_id.filter(|_| errors.is_empty()) else {
        return Err(ApiError::validation(errors));
    };
    // Whose view: a tenant reader always its own (asking for another tenant's is refused).
    let viewer = match (auth.scope, as_tenant) {
        (Scope::Platform, t) => t,
        (Scope::Tenant(own), None) => Some(own),
        (Scope::Tenant(own), Some(t)) if t == own => Some(own),
        (Scope::Tenant(_), Some(_)) => {
            return Err(ApiError::forbidden_because(
                "A tenant's key explains its own charges only: leave out tenant_id, or give your own.",
                "La clé d'un tenant n'explique que ses propres coûts : omettez tenant_id, ou donnez le vôtre.",
            ))
        }
    };
    let (period, config) = bucketed(&st, (from, to))?;
    let _slot = allocation_slot(&st)?;
    let explained = eai_app::allocation::explain_of(
        &st.source,
        st.store.as_ref(),
        period,
        config,
        &deployment_id,
        viewer,
    )
    .await?
    .ok_or_else(|| ApiError::nothing_to_explain(&deployment_id))?;
    Ok(Json(ExplanationView::new(
        &explained.explanation,
        &explained.pods,
    )))
}
