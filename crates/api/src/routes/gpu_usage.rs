//! `GET /v1/finops/gpu/usage?from&to&group_by&filter`: a period's GPU time and cost per pod, node, GPU, namespace,
//! deployment, tenant, model or share method (`group_by`: one or several, comma-separated; default `deployment`), kept to
//! `filter` (`dimension:value`, comma-separated; values of one dimension: any of them, several dimensions: all).
//! Each row: samples and estimated samples, GPU-seconds, busy and estimated GPU-seconds, memory GB-seconds,
//! energy, unpriced GPU-seconds, and its cost per currency: each deployment-hour's cost shared over its rows by
//! GPU-seconds, each deployment's cost apportioned over them (largest remainder), so that the rows of a deployment
//! sum to its cost in the allocation to the cent (see `eai_engine::breakdown`).
//!
//! Who sees what: a platform reader every deployment; a tenant reader the rows of its dedicated deployments only
//! (a shared deployment's time is split by usage, not by pod: the allocation and its explanation show its share).
//! Period rules and limits as `GET /v1/finops/gpu/allocation`.

use axum::extract::State;
use axum::Json;
use eai_engine::view::BreakdownView;
use serde::Deserialize;

use super::allocation::{allocation_slot, bucketed};
use crate::auth::actions::ReadAllocation;
use crate::auth::Authorized;
use crate::error::ApiError;
use crate::extract::ApiQuery;
use crate::state::AppState;

#[derive(Debug, Default, Deserialize)]
pub struct BreakdownQuery {
    pub from: Option<String>,
    pub to: Option<String>,
    pub group_by: Option<String>,
    pub filter: Option<String>,
}

use eai_app::params::{parse_filter, parse_group_by};

pub async fn get(
    State(st): State<AppState>,
    auth: Authorized<ReadAllocation>,
    ApiQuery(q): ApiQuery<BreakdownQuery>,
) -> Result<Json<BreakdownView>, ApiError> {
    let mut errors = Vec::new();
    let group_by = parse_group_by(q.group_by.as_deref())
        .map_err(|e| errors.push(e))
        .ok();
    let filter = parse_filter(q.filter.as_deref())
        .map_err(|e| errors.push(e))
        .ok();
    let period = st
        .requested_period(q.from.as_deref(), q.to.as_deref())
        .map_err(|e| errors.push(e))
        .ok();
    let (Some(group_by), Some(filter), Some((from, to))) = (group_by, filter, period) else {
        return Err(ApiError::validation(errors));
    };
    let (period, config) = bucketed(&st, (from, to))?;
    let _slot = allocation_slot(&st)?;
    let b = eai_app::allocation::breakdown_of(
        &st.source,
        st.store.as_ref(),
        period,
        config,
        auth.scope,
        group_by,
        filter,
    )
    .await?;
    Ok(Json(BreakdownView::new(&b, period.from, period.to)))
}
