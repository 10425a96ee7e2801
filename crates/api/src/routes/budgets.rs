//! Budgets and reservations (SPEC §9). A budget limits a tenant's spend per calendar month in one currency; it
//! is never edited in place (supersede and disable close it, like policies). A reservation holds an estimate
//! against the tenant's enforcing budgets (granted 201, or refused 402 `budget_exceeded` naming the budget and
//! what is left), then is committed with the actual amounts (one usage event, idempotent) or released.
//!
//! - `POST /v1/finops/budgets` (platform_admin: any tenant, by `tenant_id` or `X-EAI-Tenant`; finops: its own),
//!   `GET /v1/finops/budgets` and `GET /v1/finops/budgets/{id}` (a tenant's readers: theirs), with the month's
//!   `current` standing; `POST …/{id}/supersede` and `POST …/{id}/disable`.
//! - `POST /v1/finops/reservations`, `GET …/{id}`, `POST …/{id}/commit`, `POST …/{id}/release`: the gateway
//!   (usage_reporter, naming the tenant), or a tenant's tenant_admin or developer.

use std::collections::BTreeMap;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::Json;
use eai_engine::budget::{
    parse_budget, parse_commit, parse_reservation, Budget, BudgetSpec, Refusal, Standing,
};
use eai_engine::money::Currency;
use eai_engine::time::Timestamp;
use eai_engine::wire::{Loose, TenantSource};
use eai_store::budgets::{BudgetRecord, NewBudget, NewReservation, ReserveOutcome};
use eai_store::Scope;
use rand::RngCore;
use rust_decimal::Decimal;
use serde_json::json;

use crate::auth::actions::{
    CommitReservation, CreateBudget, ReadBudgets, ReadReservation, ReleaseReservation, Reserve,
    SupersedeBudget,
};
use crate::auth::{Authorized, Done};
use crate::error::{ApiError, ErrorCode};
use crate::extract::Body;
use crate::state::AppState;
use crate::views::budget::{self as views, BudgetChange, BudgetDisable};
use crate::views::{done, Items};

/// An amount with at least its currency's minor digits (`12.50`, not `12.5`).
fn amount(d: Decimal, c: Currency) -> String {
    c.amount_text(d)
}

/// Where a budget's or a reservation's tenant comes from, given the caller's scope.
fn tenant_source(scope: Scope) -> TenantSource {
    match scope {
        Scope::Tenant(t) => TenantSource::Credential(t),
        Scope::Platform => TenantSource::Body,
    }
}

/// A new webhook secret: `whsec_` and 32 random bytes in hex.
fn webhook_secret() -> String {
    let mut bytes = [0u8; 32];
    rand::thread_rng().fill_bytes(&mut bytes);
    format!("whsec_{}", hex::encode(bytes))
}

async fn standings(
    st: &AppState,
    scope: Scope,
    at: Timestamp,
) -> Result<BTreeMap<String, Standing>, ApiError> {
    Ok(st
        .store
        .budget_standings(scope, at)
        .await?
        .into_iter()
        .map(|s| (s.budget.id.clone(), s))
        .collect())
}

/// `POST /v1/finops/budgets`: 201 with the budget and, when it has a webhook, its `webhook_secret` (shown once).
pub async fn create(
    State(st): State<AppState>,
    auth: Authorized<CreateBudget>,
    body: Body,
) -> Result<Response, ApiError> {
    let scope = auth.scope;
    let outcome = async {
        let loose: Loose = body.json()?;
        let at = st.now();
        let spec = parse_budget(&loose, tenant_source(scope), at).map_err(ApiError::validation)?;
        let secret = spec.webhook_url.as_ref().map(|_| webhook_secret());
        let audit = auth.draft(None,
            json!({ "tenant_id": spec.tenant_id.to_string(), "name": spec.name, "limit": amount(spec.limit, spec.currency),
                    "currency": spec.currency.as_str(), "enforce": spec.enforce }),
        );
        let rec = st
            .store
            .create_budget(&NewBudget { spec, webhook_secret: secret.clone() }, &audit)
            .await?;
        let standing = standings(&st, Scope::Tenant(rec.budget.spec.tenant_id), at).await?;
        let budget = views::Budget {
            webhook_secret: secret,
            ..views::Budget::of(&rec.budget, standing.get(&rec.budget.id), at)
        };
        done(StatusCode::CREATED, &budget)
    }
    .await;
    Ok(auth.finish(&st, outcome).await)
}

/// `GET /v1/finops/budgets`: `{"items": [...]}`, oldest first, closed ones included.
pub async fn list(
    State(st): State<AppState>,
    auth: Authorized<ReadBudgets>,
) -> Result<Json<Items<views::Budget>>, ApiError> {
    let scope = auth.scope;
    let at = st.now();
    let standing = standings(&st, scope, at).await?;
    let items: Vec<views::Budget> = st
        .store
        .budgets(scope)
        .await?
        .iter()
        .map(|r| views::Budget::of(&r.budget, standing.get(&r.budget.id), at))
        .collect();
    Ok(Json(items.into()))
}

async fn find(st: &AppState, scope: Scope, id: &str) -> Result<BudgetRecord, ApiError> {
    st.store
        .budgets(scope)
        .await?
        .into_iter()
        .find(|r| r.budget.id == id)
        .ok_or_else(|| ApiError::not_found_named("budget", id))
}

pub async fn get_one(
    State(st): State<AppState>,
    auth: Authorized<ReadBudgets>,
    Path(id): Path<String>,
) -> Result<Json<views::Budget>, ApiError> {
    let scope = auth.scope;
    let at = st.now();
    let r = find(&st, scope, &id).await?;
    let standing = standings(&st, scope, at).await?;
    Ok(Json(views::Budget::of(
        &r.budget,
        standing.get(&r.budget.id),
        at,
    )))
}

/// A stored budget's fields as a body would give them (what a supersede body overrides).
fn fields_of(b: &Budget) -> BTreeMap<String, Loose> {
    let s = &b.spec;
    let mut f = BTreeMap::new();
    f.insert("tenant_id".into(), Loose::Str(s.tenant_id.to_string()));
    f.insert("name".into(), Loose::Str(s.name.clone()));
    let limit: BTreeMap<String, Loose> = [
        ("amount".to_string(), Loose::Str(s.limit.to_string())),
        (
            "currency".to_string(),
            Loose::Str(s.currency.as_str().to_string()),
        ),
    ]
    .into_iter()
    .collect();
    f.insert("limit".into(), Loose::Object(limit));
    if let Some(t) = s.tokens_limit {
        f.insert("tokens_limit".into(), Loose::Number(t.to_string()));
    }
    f.insert(
        "thresholds_pct".into(),
        Loose::Array(
            s.thresholds_pct
                .iter()
                .map(|p| Loose::Number(p.to_string()))
                .collect(),
        ),
    );
    f.insert("enforce".into(), Loose::Bool(s.enforce));
    if let Some(u) = &s.webhook_url {
        f.insert("webhook_url".into(), Loose::Str(u.clone()));
    }
    if let Some(t) = s.effective_to {
        f.insert("effective_to".into(), Loose::Str(t.to_string()));
    }
    f
}

fn effective_at(given: &mut BTreeMap<String, Loose>, at: Timestamp) -> Result<Timestamp, ApiError> {
    Ok(super::policies::take_instant(given, "effective_at")?.unwrap_or(at))
}

async fn close(
    st: &AppState,
    auth: &Authorized<SupersedeBudget>,
    id: &str,
    at: Timestamp,
    replacement: Option<BudgetSpec>,
) -> Result<Done, ApiError> {
    let audit = auth.draft(None, json!({ "effective_at": at.to_string() }));
    let (closed, opened) = st
        .store
        .supersede_budget(auth.scope, id, at, replacement.as_ref(), &audit)
        .await?;
    let now = st.now();
    // The successor's standing as a read would show it (the closed one has none).
    let standing = standings(st, Scope::Tenant(closed.budget.spec.tenant_id), now).await?;
    done(
        StatusCode::OK,
        &BudgetChange {
            closed: views::Budget::of(&closed.budget, standing.get(&closed.budget.id), now),
            opened: opened
                .as_ref()
                .map(|o| views::Budget::of(&o.budget, standing.get(&o.budget.id), now)),
        },
    )
}

/// `POST /v1/finops/budgets/{id}/supersede`: closes the budget at `effective_at` (default now) and opens its
/// successor from then: its fields overridden by the body's (the webhook secret carried over).
pub async fn supersede(
    State(st): State<AppState>,
    auth: Authorized<SupersedeBudget>,
    Path(id): Path<String>,
    body: Body,
) -> Result<Response, ApiError> {
    let scope = auth.scope;
    let outcome = async {
        let loose: Loose = if body.is_empty() {
            Loose::Object(BTreeMap::new())
        } else {
            body.json()?
        };
        let Loose::Object(mut given) = loose else {
            return Err(ApiError::invalid("body", "must be a JSON object"));
        };
        let at = effective_at(&mut given, st.now())?;
        let old = find(&st, scope, &id).await?;
        // A closed budget is a conflict before anything of its successor is read.
        eai_store::budgets::check_close(&old.budget, at)?;
        let mut fields = fields_of(&old.budget);
        for (k, v) in given {
            if k == "tenant_id" || k == "effective_from" {
                return Err(ApiError::invalid(
                    &k,
                    "cannot change: the successor starts at effective_at, for the same tenant",
                ));
            }
            if v == Loose::Null {
                fields.remove(&k);
            } else {
                fields.insert(k, v);
            }
        }
        fields.insert("effective_from".into(), Loose::Str(at.to_string()));
        let spec = parse_budget(
            &Loose::Object(fields),
            TenantSource::Credential(old.budget.spec.tenant_id),
            at,
        )
        .map_err(ApiError::validation)?;
        close(&st, &auth, &id, at, Some(spec)).await
    }
    .await;
    Ok(auth.finish(&st, outcome).await)
}

/// `POST /v1/finops/budgets/{id}/disable`: closes the budget at `effective_at` (default now), no successor.
pub async fn disable(
    State(st): State<AppState>,
    auth: Authorized<SupersedeBudget>,
    Path(id): Path<String>,
    body: Body,
) -> Result<Response, ApiError> {
    let scope = auth.scope;
    let outcome = async {
        let b: BudgetDisable = body.json_or_default()?;
        let at = match b.effective_at.as_deref() {
            Some(s) => Timestamp::parse_date_or_datetime(s.trim())
                .map_err(|e| ApiError::validation(vec![e.field("effective_at")]))?,
            None => st.now(),
        };
        find(&st, scope, &id).await?;
        close(&st, &auth, &id, at, None).await
    }
    .await;
    Ok(auth.finish(&st, outcome).await)
}

// --- reservations ----------------------------------------------------------------------------------------------

/// 402 `budget_exceeded`: the budget, its limit and what is left, never another tenant's figure.
fn exceeded(r: &Refusal) -> ApiError {
    let b = &r.standing.budget;
    let c = b.spec.currency;
    let (what, what_fr, field, left) = match r.by {
        "tokens" => (
            "tokens",
            "nombre de jetons",
            "estimate.tokens",
            r.standing.tokens_left().unwrap_or_default().to_string(),
        ),
        _ => (
            "cost",
            "coût",
            "estimate.cost",
            format!("{} {}", amount(r.standing.left(), c), c),
        ),
    };
    let limit = match r.by {
        "tokens" => b.spec.tokens_limit.unwrap_or_default().to_string(),
        _ => format!("{} {}", amount(b.spec.limit, c), c),
    };
    ApiError::new(
        ErrorCode::BudgetExceeded,
        format!("The estimated {what} would exceed the budget {} ({}: limit {limit}, {left} left this month).", b.id, b.spec.name),
        format!("Le {what_fr} estimé dépasserait le budget {} ({} : plafond {limit}, reste {left} ce mois-ci).", b.id, b.spec.name),
    )
    .with_details(json!([{ "field": field, "reason": format!("exceeds budget {}: {left} left of {limit}", b.id) }]))
}

/// `POST /v1/finops/reservations`: 201 `held`, or 402 `budget_exceeded`.
pub async fn reserve(
    State(st): State<AppState>,
    auth: Authorized<Reserve>,
    body: Body,
) -> Result<Response, ApiError> {
    let scope = auth.scope;
    let outcome = async {
        let loose: Loose = body.json()?;
        let at = st.now();
        let request = parse_reservation(&loose, tenant_source(scope)).map_err(ApiError::validation)?;
        let new = NewReservation::new(request, at);
        let audit = auth.draft(Some(new.id.clone()),
            json!({ "action": new.request.action, "estimate": new.request.estimate.cost.to_string() }),
        );
        match st.store.reserve(&new, &audit).await? {
            ReserveOutcome::Granted(r) => {
                done(StatusCode::CREATED, &views::Reservation::of(&r, at))
            }
            ReserveOutcome::Refused(why) => Err(exceeded(&why)),
        }
    }
    .await;
    Ok(auth.finish(&st, outcome).await)
}

pub async fn get_reservation(
    State(st): State<AppState>,
    auth: Authorized<ReadReservation>,
    Path(id): Path<String>,
) -> Result<Json<views::Reservation>, ApiError> {
    let scope = auth.scope;
    let r = st
        .store
        .reservation(scope, &id)
        .await?
        .ok_or_else(|| ApiError::not_found_named("reservation", &id))?;
    Ok(Json(views::Reservation::of(&r, st.now())))
}

/// `POST /v1/finops/reservations/{id}/commit` `{"actual": {"cost", "tokens"?}}`: records one usage event and frees
/// the hold; a committed reservation is answered as it is.
pub async fn commit(
    State(st): State<AppState>,
    auth: Authorized<CommitReservation>,
    Path(id): Path<String>,
    body: Body,
) -> Result<Response, ApiError> {
    let scope = auth.scope;
    let outcome = async {
        let loose: Loose = body.json()?;
        let (actual, currency) = parse_commit(&loose).map_err(ApiError::validation)?;
        let at = st.now();
        let existing = st
            .store
            .reservation(scope, &id)
            .await?
            .ok_or_else(|| ApiError::not_found_named("reservation", &id))?;
        if currency.is_some_and(|c| c != existing.currency) {
            return Err(ApiError::invalid(
                "actual.currency",
                format!("must be the reservation's currency, {}", existing.currency),
            ));
        }
        let audit = auth.draft(
            Some(id.clone()),
            json!({ "actual": actual.cost.to_string() }),
        );
        let r = st
            .store
            .commit_reservation(scope, &id, actual, at, &audit)
            .await?;
        done(StatusCode::OK, &views::Reservation::of(&r, at))
    }
    .await;
    Ok(auth.finish(&st, outcome).await)
}

/// `POST /v1/finops/reservations/{id}/release`: frees the hold.
pub async fn release(
    State(st): State<AppState>,
    auth: Authorized<ReleaseReservation>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let scope = auth.scope;
    let outcome = async {
        let at = st.now();
        let audit = auth.draft(Some(id.clone()), json!({}));
        let r = st.store.release_reservation(scope, &id, at, &audit).await?;
        done(StatusCode::OK, &views::Reservation::of(&r, at))
    }
    .await;
    Ok(auth.finish(&st, outcome).await)
}
