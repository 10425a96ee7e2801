//! Allocation policies: list (readers), create, supersede and disable (platform_admin). A policy is never
//! edited in place: superseding or disabling closes it (`effective_to`) and opens its successor.

use std::collections::BTreeMap;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::Json;
use eai_engine::domain::{CloseRefused, Policy, PolicySpec};
use eai_engine::time::Timestamp;
use eai_engine::wire::{parse_policy, parse_policy_patch, Loose};
use serde_json::json;

use crate::auth::actions::{CreatePolicy, DisablePolicy, ReadPolicies, SupersedePolicy};
use crate::auth::{Authorized, Done};
use crate::error::ApiError;
use crate::extract::Body;
use crate::state::AppState;
use crate::views::policy::{
    status, AllocationPolicy, AllocationPolicyChange, AllocationPolicyCreated,
    AllocationPolicyDisable,
};
use crate::views::{done, Items};

/// `{"items": [...]}`, oldest first.
pub async fn list(
    State(st): State<AppState>,
    _auth: Authorized<ReadPolicies>,
) -> Result<Json<Items<AllocationPolicy>>, ApiError> {
    let now = st.now();
    let items: Vec<AllocationPolicy> = st
        .store
        .policies()
        .await?
        .iter()
        .map(|p| AllocationPolicy::of(p, now))
        .collect();
    Ok(Json(items.into()))
}

pub async fn get_one(
    State(st): State<AppState>,
    _auth: Authorized<ReadPolicies>,
    Path(id): Path<String>,
) -> Result<Json<AllocationPolicy>, ApiError> {
    let p = find(&st, &id).await?;
    Ok(Json(AllocationPolicy::of(&p, st.now())))
}

async fn find(st: &AppState, id: &str) -> Result<Policy, ApiError> {
    st.store
        .policies()
        .await?
        .into_iter()
        .find(|p| p.id == id)
        .ok_or_else(|| ApiError::policy_not_found(id))
}

/// Answers 201 `{"id": "alp_1", "status": "active"}` (`scheduled` when it starts later).
pub async fn create(
    State(st): State<AppState>,
    auth: Authorized<CreatePolicy>,
    body: Body,
) -> Result<Response, ApiError> {
    let outcome = async {
        let loose: Loose = body.json()?;
        let now = st.now();
        // `effective_from` defaults to now; a backdated one is allowed since only platform_admin gets here.
        let spec = parse_policy(&loose, now).map_err(ApiError::validation)?;
        let audit = auth.draft(
            None,
            json!({ "name": spec.name, "effective_from": spec.effective_from.to_string() }),
        );
        let p = st.store.create_policy(&spec, &audit).await?;
        let created = AllocationPolicyCreated {
            status: status(&p, now),
            id: p.id,
        };
        done(StatusCode::CREATED, &created)
    }
    .await;
    Ok(auth.finish(&st, outcome).await)
}

/// Reads an optional instant field (a date or RFC 3339) out of a body.
pub(crate) fn take_instant(
    fields: &mut BTreeMap<String, Loose>,
    name: &str,
) -> Result<Option<Timestamp>, ApiError> {
    match fields.remove(name) {
        None | Some(Loose::Null) => Ok(None),
        Some(Loose::Str(s)) => Timestamp::parse_date_or_datetime(s.trim())
            .map(Some)
            .map_err(|e| ApiError::validation(vec![e.field(name)])),
        Some(_) => Err(ApiError::invalid(
            name,
            "must be a date (YYYY-MM-DD) or an RFC 3339 date-time",
        )),
    }
}

/// Checks that `old` may be closed at `at`: strictly inside its `[effective_from, effective_to)`.
fn check_closable(old: &Policy, at: Timestamp) -> Result<(), ApiError> {
    // The engine's rule (`Policy::close_at`), the one the store applies: refused here first as the request's
    // error, naming the field.
    // Before its start is the request's own error (422); at or after its end is the stored state's (409: the
    // policy is closed then already, as a second disable of a budget is).
    old.close_at(at).map(|_| ()).map_err(|e| match e {
        CloseRefused::AtOrBeforeStart { from, .. } => ApiError::invalid(
            "effective_at",
            format!("must be after the policy's effective_from ({from})"),
        ),
        CloseRefused::AlreadyClosed { to } => ApiError::conflict_on(
            "effective_at",
            format!("the policy is already closed at {to}, before this instant"),
        ),
    })
}

/// `POST /v1/finops/allocation-policies/{id}/supersede`: closes the policy at `effective_at` (default now) and
/// opens its replacement from that instant: the closed policy's fields overridden by those of the body (a
/// field given as null takes its default; `effective_from`, if given, must equal `effective_at`). Answers
/// `{"closed": policy, "opened": policy}`.
pub async fn supersede(
    State(st): State<AppState>,
    auth: Authorized<SupersedePolicy>,
    Path(id): Path<String>,
    body: Body,
) -> Result<Response, ApiError> {
    let outcome = async {
        let loose: Loose = if body.is_empty() { Loose::Object(BTreeMap::new()) } else { body.json()? };
        let Loose::Object(mut given) = loose else {
            return Err(ApiError::invalid("body", "must be a JSON object"));
        };
        let now = st.now();
        let at = match (take_instant(&mut given, "effective_at")?, take_instant(&mut given, "effective_from")?) {
            (Some(a), Some(f)) if a != f => {
                return Err(ApiError::invalid(
                    "effective_from",
                    "must be omitted or equal to effective_at: the replacement starts when the policy closes",
                ))
            }
            (Some(a), _) | (None, Some(a)) => a,
            (None, None) => now,
        };
        let old = find(&st, &id).await?;
        check_closable(&old, at)?;
        let patch = parse_policy_patch(&Loose::Object(given)).map_err(ApiError::validation)?;
        let spec = patch.apply(&old.spec, at).map_err(ApiError::validation)?;
        let audit = auth.draft(None, json!({ "effective_at": at.to_string() }));
        close_and_open(&st, &old, at, &spec, now, &audit).await
    }
    .await;
    Ok(auth.finish(&st, outcome).await)
}

/// `POST /v1/finops/allocation-policies/{id}/disable` with an optional `{"effective_at"}` (default now):
/// closes the policy then and opens a disabled copy in its place. Answers like supersede.
pub async fn disable(
    State(st): State<AppState>,
    auth: Authorized<DisablePolicy>,
    Path(id): Path<String>,
    body: Body,
) -> Result<Response, ApiError> {
    let outcome = async {
        let b: AllocationPolicyDisable = body.json_or_default()?;
        let now = st.now();
        let at = match b.effective_at.as_deref() {
            Some(s) => Timestamp::parse_date_or_datetime(s.trim())
                .map_err(|e| ApiError::validation(vec![e.field("effective_at")]))?,
            None => now,
        };
        let old = find(&st, &id).await?;
        if !old.spec.enabled {
            return Err(ApiError::conflict(format!(
                "the policy {} is already disabled",
                old.id
            )));
        }
        check_closable(&old, at)?;
        let copy = PolicySpec {
            enabled: false,
            effective_from: at,
            ..old.spec.clone()
        };
        let audit = auth.draft(None, json!({ "effective_at": at.to_string() }));
        close_and_open(&st, &old, at, &copy, now, &audit).await
    }
    .await;
    Ok(auth.finish(&st, outcome).await)
}

async fn close_and_open(
    st: &AppState,
    old: &Policy,
    at: Timestamp,
    replacement: &PolicySpec,
    now: Timestamp,
    audit: &eai_store::AuditDraft,
) -> Result<Done, ApiError> {
    let (closed, opened) = st
        .store
        .supersede_policy(&old.id, at, Some(replacement), audit)
        .await?;
    // A replacement was given: the store opened it.
    let opened = opened.ok_or_else(|| {
        ApiError::internal(format!("the store closed {} and opened nothing", old.id))
    })?;
    done(
        StatusCode::OK,
        &AllocationPolicyChange {
            closed: AllocationPolicy::of(&closed, now),
            opened: AllocationPolicy::of(&opened, now),
        },
    )
}
