//! Registered providers on SQLite: bind, send, decode (the rules: `crate::providers`).

use rusqlite::{params, Connection, TransactionBehavior};

use super::codec::Ctx;
use super::tx::append_in;
use crate::providers::{audit_details, provider_json, provider_parse, ProviderRecord};
use crate::{audit, AuditDraft, Result};

const UPSERT: &str = "INSERT INTO providers (deployment_id, body, registered_at_ms) VALUES (?1, ?2, ?3) \
    ON CONFLICT (deployment_id) DO UPDATE SET body = excluded.body, registered_at_ms = excluded.registered_at_ms";
const ALL: &str =
    "SELECT deployment_id, body, registered_at_ms FROM providers ORDER BY deployment_id";

/// Stores (or replaces) the deployment's registration and its audit event, in one transaction.
pub fn register(
    conn: &mut Connection,
    p: &ProviderRecord,
    draft: &AuditDraft,
) -> Result<ProviderRecord> {
    let body = provider_json(p)?;
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("begin provider registration")?;
    tx.execute(UPSERT, params![p.deployment_id, body, p.registered_at.0])
        .ctx("store a provider")?;
    append_in(
        &tx,
        &audit::completed(draft, Some(p.deployment_id.clone()), audit_details(p)),
    )?;
    tx.commit().ctx("commit provider registration")?;
    Ok(p.clone())
}

/// Every registration, by deployment id.
pub fn providers(conn: &Connection) -> Result<Vec<ProviderRecord>> {
    let rows: Vec<(String, String, i64)> = conn
        .prepare_cached(ALL)
        .and_then(|mut st| {
            st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                .collect()
        })
        .ctx("read providers")?;
    rows.into_iter()
        .map(|(d, body, at)| provider_parse(d, &body, at))
        .collect()
}
