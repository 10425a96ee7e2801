//! The audit chain: `AuditEvent`, `AuditHead` (the list is [`super::Items`]).

use serde::Serialize;

/// One event of the chain, with the hashes that link it.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct AuditEvent {
    pub seq: u64,
    pub occurred_at: String,
    pub actor: String,
    pub actor_role: Option<String>,
    pub tenant_id: Option<String>,
    pub action: String,
    pub decision: String,
    pub resource: Option<String>,
    pub request_id: Option<String>,
    /// The facts of the event, a JSON object (never a secret).
    pub details: serde_json::Value,
    pub prev_hash: String,
    pub hash: String,
}

impl AuditEvent {
    pub fn of(e: &eai_store::AuditEvent) -> Self {
        let d = &e.draft;
        AuditEvent {
            seq: e.seq,
            occurred_at: d.occurred_at.to_string(),
            actor: d.actor.clone(),
            actor_role: d.actor_role.clone(),
            tenant_id: d.tenant_id.map(|t| t.to_string()),
            action: d.action.clone(),
            decision: d.decision.clone(),
            resource: d.resource.clone(),
            request_id: d.request_id.clone(),
            details: d.details.clone(),
            prev_hash: e.prev_hash.clone(),
            hash: e.hash.clone(),
        }
    }
}

/// The chain's newest event: `{"seq": 0, "hash": <64 zeros>}` for an empty chain.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct AuditHead {
    pub seq: u64,
    pub hash: String,
}
