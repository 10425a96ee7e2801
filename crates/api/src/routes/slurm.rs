//! `POST /v1/finops/gpu/slurm/reconciliation?from&to&idle_below`: Slurm's own accounting of its GPU jobs beside
//! what was measured (SPEC §12). The body is the output of `sacct --json` (`sacct --json -a -X -S <from> -E <to>`:
//! every user's allocations, no steps, keeps it small); the answer lists, per job with GPUs in the period, the
//! GPU-seconds Slurm allocated (its `gres/gpu` times its run time inside the period), the GPU-seconds measured
//! (the samplers' `job-<id>` workloads), their busy share, their cost at the policies in force, and a status:
//! `ok`, `idle` (busy under `idle_below` of the allocated time, default 0.1), `not_measured`, `not_in_slurm`.
//!
//! Who sees what: as `GET /v1/finops/gpu/usage` (a tenant's key, the jobs of its dedicated deployments only:
//! Slurm's other jobs in the body are left out). Period rules and limits as `GET /v1/finops/gpu/allocation`.

use axum::extract::State;
use axum::Json;
use eai_engine::error::FieldError;
use eai_engine::view::ReconciliationView;
use serde::Deserialize;

use super::allocation::{allocation_slot, bucketed};
use crate::auth::actions::ReadAllocation;
use crate::auth::Authorized;
use crate::error::ApiError;
use crate::extract::{ApiQuery, Body};
use crate::state::AppState;

use eai_app::params::parse_idle_below;

#[derive(Debug, Default, Deserialize)]
pub struct ReconciliationQuery {
    pub from: Option<String>,
    pub to: Option<String>,
    pub idle_below: Option<String>,
}

pub async fn post(
    State(st): State<AppState>,
    auth: Authorized<ReadAllocation>,
    ApiQuery(q): ApiQuery<ReconciliationQuery>,
    body: Body,
) -> Result<Json<ReconciliationView>, ApiError> {
    let mut errors = Vec::new();
    let idle_below = parse_idle_below(q.idle_below.as_deref())
        .map_err(|e| errors.push(e))
        .ok();
    let period = st
        .requested_period(q.from.as_deref(), q.to.as_deref())
        .map_err(|e| errors.push(e))
        .ok();
    let doc: eai_engine::slurm::SacctDoc = body.json()?;
    let sacct = eai_engine::slurm::parse_sacct(&doc)
        .map_err(|e| errors.push(FieldError::new("body", e)))
        .ok();
    let (Some(idle_below), Some((from, to)), Some(sacct)) = (idle_below, period, sacct) else {
        return Err(ApiError::validation(errors));
    };
    let (period, config) = bucketed(&st, (from, to))?;
    let _slot = allocation_slot(&st)?;
    let r = eai_app::allocation::slurm_reconciliation_of(
        &st.source,
        st.store.as_ref(),
        period,
        config,
        auth.scope,
        sacct,
        st.now(),
        idle_below,
    )
    .await?;
    Ok(Json(ReconciliationView::new(&r)))
}
