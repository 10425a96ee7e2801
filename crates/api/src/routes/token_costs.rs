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
use eai_engine::tokens::{Aggregate, Basis};
use eai_store::Scope;
use rust_decimal::Decimal;
use serde::Deserialize;

use crate::auth::actions::ReadAllocation;
use crate::auth::Authorized;
use crate::error::ApiError;
use crate::extract::ApiQuery;
use crate::routes::allocation::{allocation_slot, bucketed};
use crate::state::AppState;
use crate::views::token_cost::{TokenCost, TokenCostList};

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

/// `GET /v1/finops/gpu/token-costs`.
pub async fn get(
    State(st): State<AppState>,
    auth: Authorized<ReadAllocation>,
    ApiQuery(q): ApiQuery<TokenCostQuery>,
) -> Result<Json<TokenCostList>, ApiError> {
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
    Ok(Json(TokenCostList {
        from: period.from.to_string(),
        to: period.to.to_string(),
        basis: basis.as_str(),
        aggregate: aggregate.as_str(),
        items: answer.iter().map(TokenCost::of).collect(),
    }))
}
