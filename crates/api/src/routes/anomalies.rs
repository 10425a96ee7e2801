//! `GET /v1/finops/gpu/anomalies?from&to`: the spend anomalies recorded for the hours of the period (SPEC §13;
//! found by `eai_app::anomalies`), newest hour first.
//!
//! Who sees what: the allocation's readers; a platform reader every deployment's, a tenant reader those of its
//! dedicated deployments only (as `GET /v1/finops/gpu/usage`). Period rules as `GET /v1/finops/gpu/allocation`.

use axum::extract::State;
use axum::Json;
use serde::Deserialize;

use crate::auth::actions::ReadAllocation;
use crate::auth::Authorized;
use crate::error::ApiError;
use crate::extract::ApiQuery;
use crate::state::AppState;
use crate::views::anomaly::{Anomaly, AnomalyList};

#[derive(Debug, Default, Deserialize)]
pub struct AnomalyQuery {
    pub from: Option<String>,
    pub to: Option<String>,
}

/// `GET /v1/finops/gpu/anomalies`.
pub async fn get(
    State(st): State<AppState>,
    auth: Authorized<ReadAllocation>,
    ApiQuery(q): ApiQuery<AnomalyQuery>,
) -> Result<Json<AnomalyList>, ApiError> {
    let (from, to) = st
        .requested_period(q.from.as_deref(), q.to.as_deref())
        .map_err(|e| ApiError::validation(vec![e]))?;
    let found = st.store.anomalies(auth.scope, from, to).await?;
    Ok(Json(AnomalyList {
        from: from.to_string(),
        to: to.to_string(),
        items: found.iter().map(Anomaly::of).collect(),
    }))
}
