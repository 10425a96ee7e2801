//! What a token costs, and cost over time:
//!
//! - `GET /v1/finops/gpu/token-costs?from&to&basis=allocation|usage&aggregate=deployment|tenant|model`: cost
//!   per million tokens, blended, input and output (the rules: `eai_engine::tokens`).
//! - `GET /v1/finops/gpu/allocation/series?from&to&step=hour|day|week|month`: cost, allocated, unallocated and
//!   tokens per step, the steps summing to the period exactly (`eai_engine::steps`).
//!
//! Periods follow `GET /v1/finops/gpu/allocation`'s rules. A tenant's readers see only their share: their
//! allocated cost and their tokens (the deployment's measures only shape the input/output split).

use std::collections::BTreeMap;

use axum::extract::State;
use axum::Json;
use eai_engine::allocate::{AllocationConfig, Period};
use eai_engine::domain::{TenantId, UsageEvent, VLLM_SOURCE};
use eai_engine::error::FieldError;
use eai_engine::money::Currency;
use eai_engine::report::Allocation;
use eai_engine::steps::{self, Step, StepRow};
use eai_engine::tokens::{distinct_events, rate, Aggregate, Basis, TokenCost};
use eai_engine::view::quantity;
use eai_store::Scope;
use rust_decimal::Decimal;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::auth::actions::ReadAllocation;
use crate::auth::Authorized;
use crate::error::ApiError;
use crate::extract::ApiQuery;
use crate::routes::allocation::{allocation_slot, bucketed, requested_period};
use crate::state::AppState;
use eai_app::allocation::{allocate_inputs, cut, read_inputs};

/// At most this many steps in one series.
pub const MAX_STEPS: usize = 1_000;

#[derive(Debug, Default, Deserialize)]
pub struct TokenCostQuery {
    pub from: Option<String>,
    pub to: Option<String>,
    pub basis: Option<String>,
    pub aggregate: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
pub struct SeriesQuery {
    pub from: Option<String>,
    pub to: Option<String>,
    pub step: Option<String>,
}

/// The period a request asks for, widened to whole allocation buckets.
fn period_of(
    st: &AppState,
    from: Option<&str>,
    to: Option<&str>,
) -> Result<(Period, AllocationConfig), ApiError> {
    let bounds = requested_period(from, to, st.now(), st.settings.max_range_days)
        .map_err(|e| ApiError::validation(vec![e]))?;
    bucketed(st, bounds)
}

fn parsed<T: std::str::FromStr<Err = FieldError> + Default>(
    v: Option<&str>,
    errors: &mut Vec<FieldError>,
) -> T {
    match v.map(str::parse::<T>) {
        Some(Ok(t)) => t,
        Some(Err(e)) => {
            errors.push(e);
            T::default()
        }
        None => T::default(),
    }
}

fn tenant_of(scope: Scope) -> Option<TenantId> {
    match scope {
        Scope::Platform => None,
        Scope::Tenant(t) => Some(t),
    }
}

fn money(c: Currency, d: Decimal) -> String {
    c.amount_text(d)
}

fn token_cost_view(r: &TokenCost) -> Value {
    let amount = |d: Option<Decimal>| d.map(|d| money(r.currency, d));
    let rate = |d: Option<Decimal>| d.map(|d| d.to_string());
    let mut v = json!({
        "deployment_id": r.deployment_id,
        "tenant_id": r.tenant_id.map(|t| t.to_string()),
        "model": r.model,
        "currency": r.currency.as_str(),
        "cost": money(r.currency, r.cost),
        "input_cost": amount(r.input_cost),
        "output_cost": amount(r.output_cost),
        "tokens_in": quantity(r.tokens.input, 4),
        "tokens_out": quantity(r.tokens.output, 4),
        "cached_tokens_in": quantity(r.tokens.cached_input, 4),
        "effective_tokens_in": quantity(r.tokens.effective_input, 4),
        "tokens": quantity(r.tokens.total(), 4),
        "token_source": r.token_source.as_str(),
        "allocation_method": r.method.as_str(),
        "output_token_weight": r.output_token_weight.map(|w| w.round_dp(6).normalize().to_string()),
        "cost_per_mtok": rate(r.per_mtok),
        "input_cost_per_mtok": rate(r.input_per_mtok),
        "output_cost_per_mtok": rate(r.output_per_mtok),
    });
    if !r.parts.is_empty() {
        v["deployments"] = r.parts.iter().map(token_cost_view).collect();
    }
    v
}

/// `GET /v1/finops/gpu/token-costs`.
pub async fn get(
    State(st): State<AppState>,
    auth: Authorized<ReadAllocation>,
    ApiQuery(q): ApiQuery<TokenCostQuery>,
) -> Result<Json<Value>, ApiError> {
    let mut errors = Vec::new();
    let basis: Basis = parsed(q.basis.as_deref(), &mut errors);
    let aggregate: Aggregate = parsed(q.aggregate.as_deref(), &mut errors);
    if !errors.is_empty() {
        return Err(ApiError::validation(errors));
    }
    let (period, config) = period_of(&st, q.from.as_deref(), q.to.as_deref())?;
    let _slot = allocation_slot(&st)?;
    let answer = eai_app::allocation::token_costs_of(
        &st.source,
        st.store.as_ref(),
        period,
        config,
        basis,
        aggregate,
        tenant_of(auth.scope),
    )
    .await?;
    let items: Vec<Value> = answer.iter().map(token_cost_view).collect();
    Ok(Json(json!({
        "from": period.from.to_string(),
        "to": period.to.to_string(),
        "basis": basis.as_str(),
        "aggregate": aggregate.as_str(),
        "items": items,
    })))
}

/// Tokens per deployment of one step: a deployment's vLLM counters where it has any in the period, else its
/// tenants' events (a tenant's readers: their own events).
#[derive(Debug, Default, Clone, Copy)]
struct StepTokens {
    input: Decimal,
    output: Decimal,
}

fn step_tokens(
    events: &[UsageEvent],
    tenant: Option<TenantId>,
    bounds: &[(eai_engine::time::Timestamp, eai_engine::time::Timestamp)],
) -> Vec<BTreeMap<String, StepTokens>> {
    let measured: std::collections::HashSet<&str> = events
        .iter()
        .filter(|e| e.source == VLLM_SOURCE)
        .filter_map(|e| e.deployment_id.as_deref())
        .collect();
    let mut out = vec![BTreeMap::<String, StepTokens>::new(); bounds.len()];
    for e in distinct_events(events) {
        let Some(d) = e.deployment_id.as_deref() else {
            continue;
        };
        let counts = match tenant {
            Some(t) => e.tenant_id == t && eai_engine::domain::weighs_split(&e.source),
            None if measured.contains(d) => e.source == VLLM_SOURCE,
            None => eai_engine::domain::weighs_split(&e.source),
        };
        if !counts {
            continue;
        }
        let i = bounds.partition_point(|(_, to)| *to <= e.occurred_at);
        if let Some(step) = out.get_mut(i).filter(|_| i < bounds.len()) {
            let s = step.entry(d.to_string()).or_default();
            s.input += e.unit("tokens_in").unwrap_or_default();
            s.output += e.unit("tokens_out").unwrap_or_default();
        }
    }
    out
}

fn totals_view(rows: &[StepRow]) -> Vec<Value> {
    let mut sums: BTreeMap<Currency, (Decimal, Decimal, Decimal)> = BTreeMap::new();
    for r in rows {
        let s = sums.entry(r.currency).or_default();
        s.0 += r.cost;
        s.1 += r.allocated;
        s.2 += r.unallocated;
    }
    sums.into_iter()
        .map(|(c, (cost, al, un))| {
            json!({
                "currency": c.as_str(),
                "cost": money(c, cost),
                "allocated": money(c, al),
                "unallocated": money(c, un),
            })
        })
        .collect()
}

fn step_view(
    from: eai_engine::time::Timestamp,
    to: eai_engine::time::Timestamp,
    rows: &[StepRow],
    tokens: &BTreeMap<String, StepTokens>,
) -> Value {
    let mut deployments: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for r in rows {
        let t = tokens.get(&r.deployment_id).copied().unwrap_or_default();
        deployments
            .entry(r.deployment_id.clone())
            .or_default()
            .push(json!({
                "deployment_id": r.deployment_id,
                "currency": r.currency.as_str(),
                "cost": money(r.currency, r.cost),
                "allocated": money(r.currency, r.allocated),
                "unallocated": money(r.currency, r.unallocated),
                "tokens_in": quantity(t.input, 4),
                "tokens_out": quantity(t.output, 4),
                "tokens": quantity(t.input + t.output, 4),
                "cost_per_mtok": rate(r.cost, t.input + t.output).map(|r| r.to_string()),
            }));
    }
    // Tokens on a deployment that cost nothing in the step.
    for (d, t) in tokens {
        if !deployments.contains_key(d) {
            deployments.entry(d.clone()).or_default().push(json!({
                "deployment_id": d,
                "currency": null,
                "cost": null,
                "allocated": null,
                "unallocated": null,
                "tokens_in": quantity(t.input, 4),
                "tokens_out": quantity(t.output, 4),
                "tokens": quantity(t.input + t.output, 4),
                "cost_per_mtok": null,
            }));
        }
    }
    let (input, output) = tokens
        .values()
        .fold((Decimal::ZERO, Decimal::ZERO), |a, t| {
            (a.0 + t.input, a.1 + t.output)
        });
    json!({
        "from": from.to_string(),
        "to": to.to_string(),
        "totals": totals_view(rows),
        "tokens_in": quantity(input, 4),
        "tokens_out": quantity(output, 4),
        "tokens": quantity(input + output, 4),
        "deployments": deployments.into_values().flatten().collect::<Vec<_>>(),
    })
}

/// `GET /v1/finops/gpu/allocation/series`.
pub async fn series(
    State(st): State<AppState>,
    auth: Authorized<ReadAllocation>,
    ApiQuery(q): ApiQuery<SeriesQuery>,
) -> Result<Json<Value>, ApiError> {
    let step = match q.step.as_deref() {
        None => Step::Day,
        Some(s) => s
            .parse::<Step>()
            .map_err(|e| ApiError::validation(vec![e]))?,
    };
    let (period, config) = period_of(&st, q.from.as_deref(), q.to.as_deref())?;
    let bounds = steps::bounds(period.from, period.to, step);
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
    let tenant = tenant_of(auth.scope);
    let inputs = read_inputs(&st.source, st.store.as_ref(), period).await?;
    let events = st
        .store
        .usage_events(auth.scope, period.from, period.to)
        .await?;
    let b = bounds.clone();
    let rows = tokio::task::spawn_blocking(move || {
        let whole = allocate_inputs(&inputs, period, config);
        let parts: Vec<Allocation> = b
            .iter()
            .map(|(f, t)| {
                let p = Period { from: *f, to: *t };
                allocate_inputs(&cut(&inputs, *f, *t), p, config)
            })
            .collect();
        (steps::apportion_steps(&whole, &parts, tenant), whole)
    })
    .await
    .map_err(|e| ApiError::internal(format!("the series task failed: {e}")))?;
    let (per_step, _whole) = rows;
    let tokens = step_tokens(&events, tenant, &bounds);
    let all: Vec<StepRow> = per_step.iter().flatten().cloned().collect();
    let (input, output) = tokens
        .iter()
        .flat_map(|m| m.values())
        .fold((Decimal::ZERO, Decimal::ZERO), |a, t| {
            (a.0 + t.input, a.1 + t.output)
        });
    let steps_json: Vec<Value> = bounds
        .iter()
        .zip(per_step.iter().zip(&tokens))
        .map(|((f, t), (rows, tok))| step_view(*f, *t, rows, tok))
        .collect();
    Ok(Json(json!({
        "from": period.from.to_string(),
        "to": period.to.to_string(),
        "step": step.as_str(),
        "totals": totals_view(&all),
        "tokens_in": quantity(input, 4),
        "tokens_out": quantity(output, 4),
        "tokens": quantity(input + output, 4),
        "steps": steps_json,
    })))
}
