//! `GET /v1/finops/gpu/recommendations?from&to&idle_utilization&idle_share&low_utilization`: what to do about a
//! period's idle and oversized GPUs, with the savings at the policies in force (SPEC §13, see
//! `eai_engine::recommend`). Thresholds: the query's (decimals from 0 to 1, 6 places at most), else the server's
//! (`EAI_RECOMMEND_*`).
//!
//! Who sees what: as `GET /v1/finops/gpu/usage` (a tenant's key, its dedicated deployments only). Period rules
//! and limits as `GET /v1/finops/gpu/allocation` (one of the EAI_MAX_CONCURRENT_ALLOCATIONS slots).

use axum::extract::State;
use axum::Json;
use eai_engine::recommend::parse_threshold;
use serde::Deserialize;

use super::allocation::{allocation_slot, bucketed};
use crate::auth::actions::ReadAllocation;
use crate::auth::Authorized;
use crate::error::ApiError;
use crate::extract::ApiQuery;
use crate::state::AppState;
use crate::views::recommendation::RecommendationList;

#[derive(Debug, Default, Deserialize)]
pub struct RecommendationQuery {
    pub from: Option<String>,
    pub to: Option<String>,
    pub idle_utilization: Option<String>,
    pub idle_share: Option<String>,
    pub low_utilization: Option<String>,
}

pub async fn get(
    State(st): State<AppState>,
    auth: Authorized<ReadAllocation>,
    ApiQuery(q): ApiQuery<RecommendationQuery>,
) -> Result<Json<RecommendationList>, ApiError> {
    let mut errors = Vec::new();
    let mut t = st.settings.recommend;
    for (field, given, slot) in [
        (
            "idle_utilization",
            &q.idle_utilization,
            &mut t.idle_utilization,
        ),
        ("idle_share", &q.idle_share, &mut t.idle_share),
        (
            "low_utilization",
            &q.low_utilization,
            &mut t.low_utilization,
        ),
    ] {
        if let Some(s) = given {
            match parse_threshold(field, s) {
                Ok(d) => *slot = d,
                Err(e) => errors.push(e),
            }
        }
    }
    let period = st
        .requested_period(q.from.as_deref(), q.to.as_deref())
        .map_err(|e| errors.push(e))
        .ok();
    let Some((from, to)) = period.filter(|_| errors.is_empty()) else {
        return Err(ApiError::validation(errors));
    };
    let (period, _) = bucketed(&st, (from, to))?;
    let _slot = allocation_slot(&st)?;
    let items = eai_app::recommend::recommendations_of(
        &st.source,
        st.store.as_ref(),
        period,
        auth.scope,
        t,
    )
    .await?;
    Ok(Json(RecommendationList::new(
        period.from,
        period.to,
        &t,
        &items,
    )))
}
