//! `GET /v1/finops/gpu/allocation?from&to`: the allocation of a period, computed by the engine from the stored
//! rollups, every tenant's usage and the policies, then scoped to the caller's tenant.
//!
//! Period rules: `from` and `to` are dates (`YYYY-MM-DD`, UTC) or RFC 3339 date-times. A date `from` starts at
//! its midnight; a date `to` is inclusive of that day (the period ends at the next midnight), so that
//! `from=2026-10-01&to=2026-10-31` is October. A date-time `to` is exclusive. Defaults: `to` = now rounded up
//! to the next hour, `from` = 30 days before `to`. The period is widened to whole allocation buckets, spans at
//! most 366 days and must not be empty.

use axum::extract::State;
use axum::Json;
use eai_engine::allocate::{AllocationConfig, Period};
use eai_engine::scope::scoped_to;
use eai_engine::time::Timestamp;
use eai_engine::view::AllocationView;
use eai_store::Scope;
use serde::Deserialize;

use crate::auth::actions::ReadAllocation;
use crate::auth::Authorized;
use crate::error::ApiError;
use crate::extract::ApiQuery;
use crate::state::AppState;

#[derive(Debug, Default, Deserialize)]
pub struct AllocationQuery {
    pub from: Option<String>,
    pub to: Option<String>,
}

pub async fn get(
    State(st): State<AppState>,
    auth: Authorized<ReadAllocation>,
    ApiQuery(q): ApiQuery<AllocationQuery>,
) -> Result<Json<AllocationView>, ApiError> {
    let scope = auth.scope;
    let (from, to) = st
        .requested_period(q.from.as_deref(), q.to.as_deref())
        .map_err(|e| ApiError::validation(vec![e]))?;
    let (period, config) = bucketed(&st, (from, to))?;
    let _slot = allocation_slot(&st)?;
    let allocation =
        eai_app::allocation::compute_from(&st.source, st.store.as_ref(), period, config).await?;
    let allocation = match scope {
        Scope::Platform => allocation,
        Scope::Tenant(t) => scoped_to(&allocation, t),
    };
    let view = AllocationView::new(&allocation);
    Ok(Json(view))
}

/// `[from, to)` widened to this server's allocation buckets, with its allocation settings.
pub fn bucketed(
    st: &AppState,
    (from, to): (Timestamp, Timestamp),
) -> Result<(Period, AllocationConfig), ApiError> {
    let config = st.allocation_config();
    let period =
        Period::new(from, to, config.bucket_ms).map_err(|e| ApiError::validation(vec![e]))?;
    Ok((period, config))
}

/// One of the EAI_MAX_CONCURRENT_ALLOCATIONS computations that may run at once (held until dropped); beyond,
/// 429 with Retry-After (counted).
pub fn allocation_slot(st: &AppState) -> Result<tokio::sync::OwnedSemaphorePermit, ApiError> {
    st.limits
        .allocation_slot()
        .inspect_err(|_| st.metrics.rate_limited())
}
