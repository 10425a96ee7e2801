//! `GET /v1/audit/events?after&limit`: the audit hash chain, oldest first (platform_admin: all of it; auditor
//! and security_officer: their tenant's events). `GET /v1/audit/head` (platform_admin): the newest event's
//! `{seq, hash}`, to anchor outside the database (`eai-gpu audit verify --expect-head SEQ:HASH` checks it).

use axum::extract::State;
use axum::Json;
use eai_store::AuditEvent;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::auth::actions::{ReadAudit, ReadAuditHead};
use crate::auth::Authorized;
use crate::error::ApiError;
use crate::extract::ApiQuery;
use crate::state::AppState;

pub const DEFAULT_LIMIT: u64 = 100;
pub const MAX_LIMIT: u64 = 1_000;

#[derive(Debug, Default, Deserialize)]
pub struct AuditQuery {
    /// Events with `seq > after` (default 0: from the start).
    pub after: Option<u64>,
    /// At most this many (default 100, at most 1,000).
    pub limit: Option<u64>,
}

pub fn view(e: &AuditEvent) -> Value {
    let d = &e.draft;
    json!({
        "seq": e.seq,
        "occurred_at": d.occurred_at.to_string(),
        "actor": d.actor,
        "actor_role": d.actor_role,
        "tenant_id": d.tenant_id.map(|t| t.to_string()),
        "action": d.action,
        "decision": d.decision,
        "resource": d.resource,
        "request_id": d.request_id,
        "details": d.details,
        "prev_hash": e.prev_hash,
        "hash": e.hash,
    })
}

/// `{"seq", "hash"}` of the chain's newest event (`{"seq": 0, "hash": <64 zeros>}` for an empty chain).
pub async fn head(
    State(st): State<AppState>,
    _auth: Authorized<ReadAuditHead>,
) -> Result<Json<Value>, ApiError> {
    let head = st.store.audit_head().await?;
    let (seq, hash) = head.map_or((0, eai_store::audit::GENESIS_HASH.to_string()), |h| {
        (h.seq, h.hash)
    });
    st.metrics.set_audit_head(seq, &hash);
    Ok(Json(json!({ "seq": seq, "hash": hash })))
}

/// `{"items": [...]}`: pass the last `seq` as `after` to read on.
pub async fn list(
    State(st): State<AppState>,
    auth: Authorized<ReadAudit>,
    ApiQuery(q): ApiQuery<AuditQuery>,
) -> Result<Json<Value>, ApiError> {
    let scope = auth.scope;
    let after = q.after.unwrap_or(0);
    let limit = q.limit.unwrap_or(DEFAULT_LIMIT);
    if limit == 0 || limit > MAX_LIMIT {
        return Err(ApiError::invalid(
            "limit",
            format!("must be between 1 and {MAX_LIMIT}"),
        ));
    }
    let events = st.store.audit_events(scope, after, limit).await?;
    let items: Vec<Value> = events.iter().map(view).collect();
    Ok(Json(json!({ "items": items })))
}
