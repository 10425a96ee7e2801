//! `GET /v1/finops/gpu/allocation/focus?from&to[&format=csv|parquet][&version=1.3|1.2][&granularity=day|hour]`:
//! the period's allocation as FOCUS rows (1.3's columns by default, or 1.2's; one per tenant x deployment x
//! policy x UTC day or hour, plus the unallocated cost for platform callers), CSV by default or Parquet. The
//! period follows `GET /v1/finops/gpu/allocation`'s rules, and so does the scope: a tenant reader gets its own
//! rows only. The days (or hours) of an item sum to its `allocated` there, to the cent.

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use crate::auth::actions::ReadAllocation;
use crate::auth::Authorized;
use crate::error::ApiError;
use crate::extract::ApiQuery;
use crate::routes::allocation::{allocation_slot, bucketed};
use crate::state::AppState;
use eai_app::focus::{encode, rows, Format, Request};
use eai_engine::focus::{granularity, Invoices, Version};

#[derive(Debug, Default, Deserialize)]
pub struct FocusQuery {
    pub from: Option<String>,
    pub to: Option<String>,
    pub format: Option<String>,
    pub version: Option<String>,
    pub granularity: Option<String>,
}

pub async fn get(
    State(st): State<AppState>,
    auth: Authorized<ReadAllocation>,
    ApiQuery(q): ApiQuery<FocusQuery>,
) -> Result<Response, ApiError> {
    let mut errors = Vec::new();
    let format = Format::parse(q.format.as_deref())
        .map_err(|e| errors.push(e))
        .ok();
    let version = Version::parse(q.version.as_deref())
        .map_err(|e| errors.push(e))
        .ok();
    let span = granularity(q.granularity.as_deref())
        .map_err(|e| errors.push(e))
        .ok();
    let period = st
        .requested_period(q.from.as_deref(), q.to.as_deref())
        .map_err(|e| errors.push(e))
        .ok();
    let (Some(format), Some(version), Some(span), Some((from, to))) =
        (format, version, span, period)
    else {
        return Err(ApiError::validation(errors));
    };
    let (period, config) = bucketed(&st, (from, to))?;
    let _slot = allocation_slot(&st)?;
    // The statements' numbers (InvoiceId): none yet. Issued statements fill this map once they are stored.
    let statement_numbers = Invoices::new();
    let found = rows(
        &st.source,
        st.store.as_ref(),
        &Request {
            period,
            config,
            scope: auth.scope,
            granularity: span,
            issuer: &st.settings.focus_issuer,
            invoices: &statement_numbers,
        },
    )
    .await?;
    let body = encode(&found, version, format)?;
    let file = format!(
        "attachment; filename=\"focus-{}-{}.{}\"",
        period.from.date_string(),
        period.to.date_string(),
        format.extension()
    );
    Ok((
        [
            (header::CONTENT_TYPE, format.content_type().to_string()),
            (header::CONTENT_DISPOSITION, file),
        ],
        body,
    )
        .into_response())
}
