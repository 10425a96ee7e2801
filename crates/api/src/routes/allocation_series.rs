//! `GET /v1/finops/gpu/allocation/series?from&to&step=hour|day|week|month`: cost, allocated, unallocated and
//! tokens per step, the steps summing to the period exactly (`eai_app::allocation_series`).
//!
//! Periods follow `GET /v1/finops/gpu/allocation`'s rules. A tenant's readers see only their share: their
//! allocated cost and their tokens.

use std::collections::BTreeMap;

use axum::extract::State;
use axum::Json;
use eai_app::allocation_series::{series_of, steps_of, StepTokens};
use eai_engine::allocation_series::{Step, StepRow};
use eai_engine::error::FieldError;
use eai_engine::money::Currency;
use eai_engine::time::Timestamp;
use eai_engine::tokens::rate;
use eai_engine::view::quantity;
use rust_decimal::Decimal;
use serde::Deserialize;

use crate::auth::actions::ReadAllocation;
use crate::auth::Authorized;
use crate::error::ApiError;
use crate::extract::ApiQuery;
use crate::routes::allocation::allocation_slot;
use crate::routes::token_costs::{money, period_of};
use crate::state::AppState;
use crate::views::series::{AllocationSeries, SeriesDeployment, SeriesStep, SeriesTotal};

/// At most this many steps in one series.
pub const MAX_STEPS: usize = 1_000;

#[derive(Debug, Default, Deserialize)]
pub struct SeriesQuery {
    pub from: Option<String>,
    pub to: Option<String>,
    pub step: Option<String>,
}

fn totals_view(rows: &[StepRow]) -> Vec<SeriesTotal> {
    let mut sums: BTreeMap<Currency, (Decimal, Decimal, Decimal)> = BTreeMap::new();
    for r in rows {
        let s = sums.entry(r.currency).or_default();
        s.0 += r.cost;
        s.1 += r.allocated;
        s.2 += r.unallocated;
    }
    sums.into_iter()
        .map(|(c, (cost, al, un))| SeriesTotal {
            currency: c.as_str().to_string(),
            cost: money(c, cost),
            allocated: money(c, al),
            unallocated: money(c, un),
        })
        .collect()
}

fn step_view(
    from: Timestamp,
    to: Timestamp,
    rows: &[StepRow],
    tokens: &BTreeMap<String, StepTokens>,
) -> SeriesStep {
    let mut deployments: BTreeMap<String, Vec<SeriesDeployment>> = BTreeMap::new();
    for r in rows {
        let t = tokens.get(&r.deployment_id).copied().unwrap_or_default();
        deployments
            .entry(r.deployment_id.clone())
            .or_default()
            .push(SeriesDeployment {
                deployment_id: r.deployment_id.clone(),
                currency: Some(r.currency.as_str().to_string()),
                cost: Some(money(r.currency, r.cost)),
                allocated: Some(money(r.currency, r.allocated)),
                unallocated: Some(money(r.currency, r.unallocated)),
                tokens_in: quantity(t.input, 4),
                tokens_out: quantity(t.output, 4),
                tokens: quantity(t.input + t.output, 4),
                cost_per_mtok: rate(r.cost, t.input + t.output).map(|r| r.to_string()),
            });
    }
    // Tokens on a deployment that cost nothing in the step.
    for (d, t) in tokens {
        if !deployments.contains_key(d) {
            deployments
                .entry(d.clone())
                .or_default()
                .push(SeriesDeployment {
                    deployment_id: d.clone(),
                    currency: None,
                    cost: None,
                    allocated: None,
                    unallocated: None,
                    tokens_in: quantity(t.input, 4),
                    tokens_out: quantity(t.output, 4),
                    tokens: quantity(t.input + t.output, 4),
                    cost_per_mtok: None,
                });
        }
    }
    let (input, output) = tokens
        .values()
        .fold((Decimal::ZERO, Decimal::ZERO), |a, t| {
            (a.0 + t.input, a.1 + t.output)
        });
    SeriesStep {
        from: from.to_string(),
        to: to.to_string(),
        totals: totals_view(rows),
        tokens_in: quantity(input, 4),
        tokens_out: quantity(output, 4),
        tokens: quantity(input + output, 4),
        deployments: deployments.into_values().flatten().collect(),
    }
}

/// `GET /v1/finops/gpu/allocation/series`.
pub async fn get(
    State(st): State<AppState>,
    auth: Authorized<ReadAllocation>,
    ApiQuery(q): ApiQuery<SeriesQuery>,
) -> Result<Json<AllocationSeries>, ApiError> {
    let step = match q.step.as_deref() {
        None => Step::Day,
        Some(s) => s
            .parse::<Step>()
            .map_err(|e| ApiError::validation(vec![e]))?,
    };
    let (period, config) = period_of(&st, q.from.as_deref(), q.to.as_deref())?;
    let bounds = steps_of(period, step);
    if bounds.len() > MAX_STEPS {
        return Err(ApiError::validation(vec![FieldError::new(
            "step",
            format!(
                "the period has {} steps of a {}; at most {MAX_STEPS}: choose a longer step or a shorter period",
                bounds.len(),
                step.as_str()
            ),
        )]));
    }
    if bounds
        .iter()
        .any(|(f, _)| f.0.rem_euclid(config.bucket_ms) != 0)
    {
        return Err(ApiError::validation(vec![FieldError::new(
            "step",
            "is shorter than the allocation bucket (EAI_ALLOCATION_BUCKET): choose a longer step",
        )]));
    }
    let _slot = allocation_slot(&st)?;
    let series = series_of(
        &st.source,
        st.store.as_ref(),
        period,
        config,
        step,
        auth.scope,
    )
    .await?;
    let (per_step, tokens) = (&series.rows, &series.tokens);
    let all: Vec<StepRow> = per_step.iter().flatten().cloned().collect();
    let (input, output) = tokens
        .iter()
        .flat_map(|m| m.values())
        .fold((Decimal::ZERO, Decimal::ZERO), |a, t| {
            (a.0 + t.input, a.1 + t.output)
        });
    let steps: Vec<SeriesStep> = series
        .bounds
        .iter()
        .zip(per_step.iter().zip(tokens))
        .map(|((f, t), (rows, tok))| step_view(*f, *t, rows, tok))
        .collect();
    Ok(Json(AllocationSeries {
        from: period.from.to_string(),
        to: period.to.to_string(),
        step: step.as_str(),
        totals: totals_view(&all),
        tokens_in: quantity(input, 4),
        tokens_out: quantity(output, 4),
        tokens: quantity(input + output, 4),
        steps,
    }))
}
