//! `GET /v1/finops/gpu/token-costs?from&to&basis=allocation|usage&aggregate=deployment|tenant|model`: cost per
//! million tokens, blended, input and output (the rules: `eai_engine::tokens`).
//!
//! Periods follow `GET /v1/finops/gpu/allocation`'s rules. A tenant's readers see only their share: their
//! allocated cost and their tokens (the deployment's measures only shape the input/output split).

use axum::extract::State;
use axum::Json;
use eai_engine::allocate::{AllocationConfig, Period};
use eai_engine::domain::TenantId;
use eai_engine::error::FieldError;
use eai_engine::money::Currency;
use eai_engine::tokens::{Aggregate, Basis, TokenCost};
use eai_engine::view::quantity;
use eai_store::Scope;
use rust_decimal::Decimal;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::auth::actions::ReadAllocation;
use crate::auth::Authorized;
use crate::error::ApiError;
use crate::extract::ApiQuery;
use crate::routes::allocation::{allocation_slot, bucketed};
use crate::state::AppState;

#[derive(Debug, Default, Deserialize)]
pub struct TokenCostQuery {
    pub from: Option<String>,
    pub to: Option<String>,
    pub basis: Option<String>,
    pub aggregate: Option<String>,
}

/// The period a request asks for, widened to whole allocation buckets.
pub(crate) fn period_of(
    st: &AppState,
    from: Option<&str>,
    to: Option<&str>,
) -> Result<(Period, AllocationConfig), ApiError> {
    let bounds = st
        .requested_period(from, to)
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

pub(crate) fn tenant_of(scope: Scope) -> Option<TenantId> {
    match scope {
        Scope::Platform => None,
        Scope::Tenant(t) => Some(t),
    }
}

pub(crate) fn money(c: Currency, d: Decimal) -> String {
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
