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
use rust_decimal::Decimal;
use serde::Deserialize;

use super::allocation::{allocation_slot, bucketed, requested_period};
use crate::auth::actions::ReadAllocation;
use crate::auth::Authorized;
use crate::error::ApiError;
use crate::extract::{ApiQuery, Body};
use crate::state::{now, AppState};

/// The default `idle_below`: GPUs busy less than a tenth of the time Slurm allocated them.
pub const DEFAULT_IDLE_BELOW: Decimal = Decimal::from_parts(1, 0, 0, false, 1);

#[derive(Debug, Default, Deserialize)]
pub struct ReconciliationQuery {
    pub from: Option<String>,
    pub to: Option<String>,
    pub idle_below: Option<String>,
}

/// `idle_below`: a busy share from 0 to 1.
pub fn parse_idle_below(s: Option<&str>) -> Result<Decimal, FieldError> {
    let Some(s) = s.map(str::trim).filter(|s| !s.is_empty()) else {
        return Ok(DEFAULT_IDLE_BELOW);
    };
    s.parse::<Decimal>()
        .ok()
        .filter(|d| *d >= Decimal::ZERO && *d <= Decimal::ONE)
        .ok_or_else(|| FieldError::new("idle_below", "must be a decimal from 0 to 1 (0.1: 10 %)"))
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
    let period = requested_period(
        q.from.as_deref(),
        q.to.as_deref(),
        now(),
        st.settings.max_range_days,
    )
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
    let r = crate::allocation::slurm_reconciliation_of(
        &st.source,
        st.store.as_ref(),
        period,
        config,
        auth.scope,
        sacct,
        now(),
        idle_below,
    )
    .await?;
    Ok(Json(ReconciliationView::new(&r)))
}
