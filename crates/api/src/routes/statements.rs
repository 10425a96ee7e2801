//! Statements (`eai_app::statements`): a tenant's closed month, issued once, numbered, never changed.
//!
//! - `POST /v1/finops/gpu/statements` (platform_admin, `Idempotency-Key` honoured): issues the month's statements
//!   (`period`, and one `tenant_id` or every tenant with cost plus the unallocated capacity); 201 when one was
//!   issued, else 200, the ones issued before under `already_issued`. A month not over is 422 on `period`.
//! - `GET /v1/finops/gpu/statements[?period&tenant_id]` and `GET …/{number}[?format=json|csv]`: the allocation's
//!   readers (a tenant's key: its own; another's number is 404), one with its adjustments computed now.

use axum::extract::{Path, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use eai_app::statements::{issue, month_start, read, tenant_names};
use eai_engine::domain::TenantId;
use eai_engine::error::FieldError;
use eai_store::Scope;
use serde::Deserialize;
use serde_json::json;

use crate::auth::actions::{IssueStatements, ReadStatements};
use crate::auth::Authorized;
use crate::error::ApiError;
use crate::extract::{ApiQuery, Body};
use crate::routes::allocation::allocation_slot;
use crate::state::AppState;
use crate::views::done;
use crate::views::statement::{
    Statement, StatementIssue, StatementIssued, StatementList, StatementSummary,
};

fn tenant_field(s: &str, field: &str) -> Result<TenantId, FieldError> {
    s.trim().parse::<TenantId>().map_err(|e| e.field(field))
}

/// `POST /v1/finops/gpu/statements`.
pub async fn issue_month(
    State(st): State<AppState>,
    auth: Authorized<IssueStatements>,
    body: Body,
) -> Result<Response, ApiError> {
    let outcome = async {
        let b: StatementIssue = body.json()?;
        let mut errors = Vec::new();
        if b.period.is_none() {
            errors.push(FieldError::new("period", "is required"));
        }
        let tenant = b
            .tenant_id
            .as_deref()
            .map(|t| tenant_field(t, "tenant_id"))
            .transpose()
            .map_err(|e| errors.push(e))
            .ok()
            .flatten();
        let (Some(period), true) = (b.period.as_deref(), errors.is_empty()) else {
            return Err(ApiError::validation(errors));
        };
        let now = st.now();
        let config = st.allocation_config();
        let _slot = allocation_slot(&st)?;
        let audit = auth.draft(
            None,
            json!({ "period": period, "tenant_id": tenant.map(|t| t.to_string()) }),
        );
        let issued = issue(
            st.store.as_ref(),
            &st.source,
            config,
            now,
            period,
            tenant,
            &audit,
        )
        .await?;
        let names = tenant_names(st.store.as_ref(), Scope::Platform).await?;
        let status = if issued.issued.is_empty() {
            StatusCode::OK
        } else {
            StatusCode::CREATED
        };
        done(status, &StatementIssued::of(&issued, &names))
    }
    .await;
    Ok(auth.finish(&st, outcome).await)
}

#[derive(Debug, Default, Deserialize)]
pub struct ListQuery {
    pub period: Option<String>,
    pub tenant_id: Option<String>,
}

/// `GET /v1/finops/gpu/statements`: the newest month first, then in the order they were issued.
pub async fn list(
    State(st): State<AppState>,
    auth: Authorized<ReadStatements>,
    ApiQuery(q): ApiQuery<ListQuery>,
) -> Result<Json<StatementList>, ApiError> {
    let mut errors = Vec::new();
    let month = q
        .period
        .as_deref()
        .map(month_start)
        .transpose()
        .map_err(|e| match e {
            eai_store::StoreError::Refused(mut e) => errors.append(&mut e),
            _ => errors.push(FieldError::new("period", "must be a month, YYYY-MM")),
        })
        .ok()
        .flatten();
    let tenant = q
        .tenant_id
        .as_deref()
        .map(|t| tenant_field(t, "tenant_id"))
        .transpose()
        .map_err(|e| errors.push(e))
        .ok()
        .flatten();
    if !errors.is_empty() {
        return Err(ApiError::validation(errors));
    }
    let scope = auth.scope;
    let found = st.store.statements(scope, month, tenant).await?;
    let names = tenant_names(st.store.as_ref(), scope).await?;
    Ok(Json(StatementList {
        statements: found
            .iter()
            .map(|s| StatementSummary::of(s, &names))
            .collect(),
    }))
}

#[derive(Debug, Default, Deserialize)]
pub struct OneQuery {
    pub format: Option<String>,
}

/// `GET /v1/finops/gpu/statements/{number}`: JSON, or CSV with `format=csv`.
pub async fn get_one(
    State(st): State<AppState>,
    auth: Authorized<ReadStatements>,
    Path(number): Path<String>,
    ApiQuery(q): ApiQuery<OneQuery>,
) -> Result<Response, ApiError> {
    let csv = match q.format.as_deref() {
        None | Some("json") => false,
        Some("csv") => true,
        Some(other) => {
            return Err(ApiError::validation(vec![FieldError::new(
                "format",
                format!("must be `json` or `csv`, not `{other}`"),
            )]))
        }
    };
    let now = st.now();
    let config = st.allocation_config();
    let _slot = allocation_slot(&st)?;
    let shown = read(
        st.store.as_ref(),
        &st.source,
        config,
        now,
        &number,
        auth.scope,
    )
    .await?
    .ok_or_else(|| ApiError::not_found_named("statement", &number))?;
    if !csv {
        return Ok(Json(Statement::of(&shown)).into_response());
    }
    let file = format!(
        "attachment; filename=\"statement-{}.csv\"",
        shown.statement.number
    );
    Ok((
        [
            (header::CONTENT_TYPE, "text/csv; charset=utf-8".to_string()),
            (header::CONTENT_DISPOSITION, file),
        ],
        shown.csv(),
    )
        .into_response())
}
