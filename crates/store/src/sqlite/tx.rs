//! What a change writes inside its transaction, shared by every kind of record of the SQLite backend (each
//! change is one `IMMEDIATE` transaction of the one writer, begun by the change itself): usage events with the
//! rows derived from them ([`upsert_in`]: claims, spend, the outbox; a reservation's commit writes one too), the
//! replica rows ([`write_outbox`]) and the audit chain's next link ([`append_in`], last before the commit).

use eai_engine::domain::UsageEvent;
use rusqlite::{params, Connection, OptionalExtension};

use super::claims::apply_claims;
use super::codec::{dec_text, now_ms, to_i64, Ctx};
use crate::audit;
use crate::budgets::{self as b, SpendDeltas};
use crate::outbox::OutboxRows;
use crate::plan::changes;
use crate::plan::usage::UsagePlan;
use crate::records as rec;
use crate::{AuditDraft, AuditEvent, Result};

// --- usage events ---------------------------------------------------------------------------------------------

/// Upserts `events` inside the caller's transaction, as [`UsagePlan`] says, with their claims, their spend
/// and their outbox rows.
pub(super) fn upsert_in(tx: &Connection, events: &[UsageEvent], with_outbox: bool) -> Result<()> {
    let plan = UsagePlan::new(events)?;
    let mut outbox = with_outbox.then(|| plan.outbox());
    for (tenant, group) in &plan.tenants {
        let tenant = tenant.to_string();
        let mut replaced = Vec::new();
        for e in group {
            let id = e.event_id.hyphenated().to_string();
            let stored: Option<String> = tx
                .prepare_cached(
                    "SELECT body FROM usage_events WHERE tenant_id = ?1 AND event_id = ?2",
                )
                .and_then(|mut st| st.query_row([&tenant, &id], |r| r.get(0)).optional())
                .ctx("read a usage event")?;
            if let Some(old) = stored {
                replaced.push(rec::event_parse(&old)?);
            }
        }
        let changes = UsagePlan::replacing(group, &replaced)?;
        for e in group {
            let body = rec::event_json(e)?;
            tx.prepare_cached(
                "INSERT INTO usage_events (event_id, tenant_id, occurred_at_ms, deployment_id, body) VALUES (?1, ?2, ?3, ?4, ?5) \
                 ON CONFLICT (tenant_id, event_id) DO UPDATE SET occurred_at_ms = excluded.occurred_at_ms, \
                 deployment_id = excluded.deployment_id, body = excluded.body",
            )
            .and_then(|mut st| {
                st.execute(params![
                    e.event_id.hyphenated().to_string(),
                    tenant,
                    e.occurred_at.0,
                    e.deployment_id,
                    body
                ])
            })
            .ctx("upsert a usage event")?;
        }
        apply_claims(tx, changes.claims, outbox.as_mut())?;
        apply_spend(tx, &changes.spend)?;
    }
    if let Some(o) = outbox {
        write_outbox(tx, o)?;
    }
    Ok(())
}

// --- spend ----------------------------------------------------------------------------------------------------

/// Adds a transaction's spend changes into the stored rows.
pub fn apply_spend(tx: &Connection, deltas: &SpendDeltas) -> Result<()> {
    for (key, delta) in deltas.changed() {
        let (tenant, currency) = (key.tenant_id.to_string(), key.currency.as_str().to_string());
        let stored: Option<(String, String)> = tx
            .prepare_cached(
                "SELECT cost, tokens FROM spend WHERE tenant_id = ?1 AND month_ms = ?2 AND currency = ?3",
            )
            .and_then(|mut st| {
                st.query_row(params![tenant, key.month.0, currency], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })
                .optional()
            })
            .ctx("read spend")?;
        let now = match stored {
            Some((cost, tokens)) => b::amounts_parse(&cost, &tokens, "spend")?.plus(*delta),
            None => *delta,
        };
        tx.prepare_cached(
            "INSERT INTO spend (tenant_id, month_ms, currency, cost, tokens) VALUES (?1, ?2, ?3, ?4, ?5) \
             ON CONFLICT (tenant_id, month_ms, currency) DO UPDATE SET cost = excluded.cost, tokens = excluded.tokens",
        )
        .and_then(|mut st| {
            st.execute(params![
                tenant,
                key.month.0,
                currency,
                dec_text(now.cost),
                dec_text(now.tokens)
            ])
        })
        .ctx("write spend")?;
    }
    Ok(())
}

// --- replica outbox -------------------------------------------------------------------------------------------

/// Stores the replica rows of a change, in the change's transaction (last, see [`crate::outbox`]).
pub fn write_outbox(tx: &Connection, rows: OutboxRows) -> Result<()> {
    if rows.is_empty() {
        return Ok(());
    }
    let at = now_ms();
    for (table, text) in rows.entries()? {
        tx.prepare_cached(
            "INSERT INTO outbox (table_name, rows, created_at_ms) VALUES (?1, ?2, ?3)",
        )
        .and_then(|mut st| st.execute(params![table, text, at]))
        .ctx("write the outbox")?;
    }
    Ok(())
}

// --- audit ----------------------------------------------------------------------------------------------------

/// Appends an event to the chain inside the caller's write transaction (SQLite has one writer: the
/// transaction is the chain's lock).
pub fn append_in(tx: &Connection, draft: &AuditDraft) -> Result<AuditEvent> {
    let last: Option<(i64, String)> = tx
        .prepare_cached("SELECT seq, hash FROM audit_events ORDER BY seq DESC LIMIT 1")
        .and_then(|mut st| st.query_row([], |r| Ok((r.get(0)?, r.get(1)?))).optional())
        .ctx("read the chain's last event")?;
    let e = changes::audit_next(changes::audit_last(last)?, draft)?;
    tx.prepare_cached(
        "INSERT INTO audit_events (seq, prev_hash, hash, tenant_id, body) VALUES (?1, ?2, ?3, ?4, ?5)",
    )
    .and_then(|mut st| {
        st.execute(params![
            to_i64(e.seq, "audit seq").map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(std::io::Error::other(e.to_string()))))?,
            e.prev_hash,
            e.hash,
            draft.tenant_id.map(|t| t.to_string()),
            audit::canonical_json(draft)
        ])
    })
    .ctx("append an audit event")?;
    Ok(e)
}
