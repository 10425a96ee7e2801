//! `GET /v1/audit/events?after&limit`: the audit hash chain, oldest first (platform_admin: all of it; auditor
//! and security_officer: their tenant's events). `GET /v1/audit/head` (platform_admin): the newest event's
//! `{seq, hash}`, to anchor outside the database (`eai-gpu audit verify --expect-head SEQ:HASH` checks it).

use axum::extract::State;
use axum::Json;
use serde::Deserialize;

use crate::auth::actions::{ReadAudit, ReadAuditHead};
use crate::auth::Authorized;
use crate::error::ApiError;
use crate::extract::ApiQuery;
use crate::state::AppState;
use crate::views::audit::{AuditEvent, AuditHead};
use crate::views::Items;

pub const DEFAULT_LIMIT: u64 = 100;
pub const MAX_LIMIT: u64 = 1_000;

#[derive(Debug, Default, Deserialize)]
pub struct AuditQuery {
    /// Events with `seq > after` (default 0: from the start).
    pub after: Option<u64>,
    /// At most this many (default 100, at most 1,000).
    pub limit: Option<u64>,
}

/// `{"seq", "hash"}` of the chain's newest event (`{"seq": 0, "hash": <64 zeros>}` for an empty chain).
pub async fn head(
    State(st): State<AppState>,
    _auth: Authorized<ReadAuditHead>,
) -> Result<Json<AuditHead>, ApiError> {
    let head = st.store.audit_head().await?;
    let (seq, hash) = head.map_or((0, eai_store::audit::GENESIS_HASH.to_string()), |h| {
        (h.seq, h.hash)
    });
    st.metrics.set_audit_head(seq, &hash);
    Ok(Json(AuditHead { seq, hash }))
}

/// `{"items": [...]}`: pass the last `seq` as `after` to read on.
pub async fn list(
    State(st): State<AppState>,
    auth: Authorized<ReadAudit>,
    ApiQuery(q): ApiQuery<AuditQuery>,
) -> Result<Json<Items<AuditEvent>>, ApiError> {
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
    let items: Vec<AuditEvent> = events.iter().map(AuditEvent::of).collect();
    Ok(Json(items.into()))
}
