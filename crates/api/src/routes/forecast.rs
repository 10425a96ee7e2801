//! `GET /v1/finops/gpu/forecast?period=YYYY-MM`: the month's spend so far, its expected end with a low/high band,
//! per tenant and deployment, and the day each budget in force is expected to run out (`eai_app::forecast`).
//!
//! Read like the allocation series (the allocation's readers; a tenant's key: its own lines and budgets) and
//! under the same concurrency limit (it allocates some fifty days).

use axum::extract::State;
use axum::Json;
use eai_app::forecast::{days_fit, forecast_of, Window};
use serde::Deserialize;

use crate::auth::actions::ReadAllocation;
use crate::auth::Authorized;
use crate::error::ApiError;
use crate::extract::ApiQuery;
use crate::routes::allocation::allocation_slot;
use crate::state::AppState;
use crate::views::forecast::Forecast;

#[derive(Debug, Default, Deserialize)]
pub struct ForecastQuery {
    pub period: Option<String>,
}

/// `GET /v1/finops/gpu/forecast`.
pub async fn get(
    State(st): State<AppState>,
    auth: Authorized<ReadAllocation>,
    ApiQuery(q): ApiQuery<ForecastQuery>,
) -> Result<Json<Forecast>, ApiError> {
    let now = st.now();
    let window = Window::of(q.period.as_deref(), now).map_err(|e| ApiError::validation(vec![e]))?;
    let config = st.allocation_config();
    days_fit(config).map_err(|e| ApiError::validation(vec![e]))?;
    let _slot = allocation_slot(&st)?;
    let f = forecast_of(
        &st.source,
        st.store.as_ref(),
        window,
        config,
        auth.scope,
        now,
    )
    .await?;
    Ok(Json(Forecast::of(&f)))
}
