//! What a change runs inside its transaction, shared by every kind of record of the PostgreSQL backend: the
//! transaction itself ([`begin`]: read committed or a read-only snapshot, acting for a [`Scope`] through
//! `app.tenant_id` / `app.platform`), and the writes that go with many changes: usage events with the rows
//! derived from them ([`upsert_in`]: claims, spend, the outbox; a reservation's commit writes one too), the
//! replica rows ([`write_outbox`]) and the audit chain's next link ([`append_in`], last before the commit).

use eai_engine::domain::{TenantId, UsageEvent};
use tokio_postgres::types::ToSql;
use tokio_postgres::{IsolationLevel, Transaction};
use uuid::Uuid;

use super::pool::{PgConn, Stmts};
use super::{derived, owner_uuid, tenant_uuid, Ctx};
use crate::audit;
use crate::budgets::SpendDeltas;
use crate::codec::{now_ms, to_i64};
use crate::outbox::OutboxRows;
use crate::plan::changes;
use crate::plan::usage::{writer_scope, UsageChanges, UsagePlan};
use crate::records as rec;
use crate::{AuditDraft, AuditEvent, Result, Scope, StoreError};

// --- the transaction ------------------------------------------------------------------------------------------

/// How a transaction reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mode {
    /// Read committed, read-write.
    Write,
    /// One consistent snapshot, read-only.
    Snapshot,
}

/// Begins a transaction acting for `scope`: sets `app.tenant_id` or `app.platform` for this transaction only.
pub(super) async fn begin<'c>(
    conn: &'c mut PgConn,
    scope: Scope,
    mode: Mode,
) -> Result<(Transaction<'c>, &'c mut Stmts)> {
    let PgConn { client, stmts, .. } = conn;
    let b = client.build_transaction();
    let b = match mode {
        Mode::Write => b.isolation_level(IsolationLevel::ReadCommitted),
        Mode::Snapshot => b
            .isolation_level(IsolationLevel::RepeatableRead)
            .read_only(true),
    };
    let tx = b.start().await.ctx("begin")?;
    set_scope(&tx, stmts, scope).await?;
    Ok((tx, stmts))
}

pub(super) const SET_SCOPE: &str =
    "SELECT set_config('app.tenant_id', $1, true), set_config('app.platform', $2, true)";

/// The arguments of [`SET_SCOPE`] for `scope`.
pub(super) fn scope_args(scope: Scope) -> Result<(String, &'static str)> {
    Ok(match scope {
        Scope::Platform => (String::new(), "on"),
        Scope::Tenant(t) => (tenant_uuid(t)?.hyphenated().to_string(), "off"),
    })
}

/// Sets who the rest of the transaction acts for (may be called again inside it).
pub(super) async fn set_scope(tx: &Transaction<'_>, stmts: &mut Stmts, scope: Scope) -> Result<()> {
    let (tenant, platform) = scope_args(scope)?;
    let st = stmts.get(tx, SET_SCOPE).await?;
    tx.execute(&st, &[&tenant, &platform])
        .await
        .ctx("set the transaction's scope")?;
    Ok(())
}

// --- usage events ---------------------------------------------------------------------------------------------

const EVENTS_UPSERT: &str = "INSERT INTO eai.usage_events AS u \
     (event_id, tenant_id, occurred_at_ms, deployment_id, body) \
     SELECT x.event_id, x.tenant_id, x.occurred_at_ms, x.deployment_id, x.body::jsonb \
     FROM unnest($1::uuid[], $2::uuid[], $3::bigint[], $4::text[], $5::text[]) \
     AS x(event_id, tenant_id, occurred_at_ms, deployment_id, body) \
     ON CONFLICT (tenant_id, event_id) DO UPDATE SET occurred_at_ms = EXCLUDED.occurred_at_ms, \
     deployment_id = EXCLUDED.deployment_id, body = EXCLUDED.body";
/// The stored events a batch is about to replace (of the tenant the transaction acts for).
const EVENTS_OLD: &str =
    "SELECT body::text FROM eai.usage_events WHERE tenant_id = $2 AND event_id = ANY($1::uuid[])";
/// Two-key advisory locks: a key space apart from the one-key locks of GPUs, the audit chain and migrations.
const EVENTS_LOCK: &str = "SELECT pg_advisory_xact_lock($1::int4, k) FROM unnest($2::int4[]) AS k";
/// The class of usage event locks ("eaiu").
const EVENT_LOCK_CLASS: i32 = 0x6561_6975;

/// Upserts `events` inside the caller's transaction, tenant by tenant (each under its own scope: the scope is
/// the last tenant's afterwards), with their claims, their spend and their outbox rows.
pub(super) async fn upsert_in(
    tx: &Transaction<'_>,
    st: &mut Stmts,
    events: &[UsageEvent],
    with_outbox: bool,
) -> Result<()> {
    let plan = UsagePlan::new(events)?;
    let mut outbox = with_outbox.then(|| plan.outbox());
    let mut keys: Vec<i32> = plan
        .tenants
        .values()
        .flatten()
        .map(|e| event_lock_key(&e.tenant_id, &e.event_id))
        .collect();
    keys.sort_unstable();
    keys.dedup();
    let s = st.get(tx, EVENTS_LOCK).await?;
    tx.execute(&s, &[&EVENT_LOCK_CLASS, &keys])
        .await
        .ctx("lock usage event ids")?;
    for (tenant, group) in &plan.tenants {
        let (scope_sql, old_sql, upsert_sql) = (
            st.get(tx, SET_SCOPE).await?,
            st.get(tx, EVENTS_OLD).await?,
            st.get(tx, EVENTS_UPSERT).await?,
        );
        let (tenant_arg, platform_arg) = scope_args(writer_scope(*tenant))?;
        let ids: Vec<Uuid> = group.iter().map(|e| e.event_id).collect();
        let tenants: Vec<Uuid> = group.iter().map(|e| e.tenant_id.0).collect();
        let at: Vec<i64> = group.iter().map(|e| e.occurred_at.0).collect();
        let dep: Vec<Option<&str>> = group.iter().map(|e| e.deployment_id.as_deref()).collect();
        let body = group
            .iter()
            .map(|e| rec::event_json(e))
            .collect::<Result<Vec<String>>>()?;
        // Pipelined, in this order: act for the tenant, read the events about to be replaced (the tenant's own:
        // another tenant's are invisible, and the upsert refuses them), upsert.
        let (scoped, old, upserted) = tokio::join!(
            async {
                tx.execute(&scope_sql, &[&tenant_arg, &platform_arg])
                    .await
                    .ctx("set the transaction's scope")
            },
            async {
                tx.query(&old_sql, &[&ids, &tenant.0])
                    .await
                    .ctx("read the usage events a batch replaces")
            },
            async {
                tx.execute(&upsert_sql, &[&ids, &tenants, &at, &dep, &body])
                    .await
            }
        );
        scoped?;
        match upserted {
            Ok(n) if n == group.len() as u64 => {}
            Ok(n) => {
                return Err(StoreError::Internal(format!(
                    "upsert usage events: {n} rows written of {}",
                    group.len()
                )))
            }
            Err(e) => return Err(e).ctx("upsert usage events"),
        }
        // The transaction is not committed: a refused replacement undoes the upsert.
        let replaced = old?
            .iter()
            .map(|r| rec::event_parse(r.try_get(0).ctx("read a replaced usage event")?))
            .collect::<Result<Vec<_>>>()?;
        let UsageChanges { claims, spend } = UsagePlan::replacing(group, &replaced)?;
        derived::write_claims(tx, st, &claims, outbox.as_mut()).await?;
        write_spend(tx, st, &spend).await?;
    }
    if let Some(rows) = outbox {
        write_outbox(tx, st, rows).await?;
    }
    Ok(())
}

/// The key of an event's transaction advisory lock (with [`EVENT_LOCK_CLASS`]): the 32 bytes of its tenant and
/// id folded to 32 bits. Two events that fold alike only wait for each other.
pub(super) fn event_lock_key(tenant: &TenantId, id: &Uuid) -> i32 {
    let mut k = [0u8; 4];
    for (i, x) in tenant.0.as_bytes().iter().chain(id.as_bytes()).enumerate() {
        k[i % 4] ^= x;
    }
    i32::from_le_bytes(k)
}

// --- spend ----------------------------------------------------------------------------------------------------

const SPEND_ADD: &str = "INSERT INTO eai.spend AS s (tenant_id, month_ms, currency, cost, tokens) \
     VALUES ($1, $2, $3, $4, $5) ON CONFLICT (tenant_id, month_ms, currency) \
     DO UPDATE SET cost = s.cost + EXCLUDED.cost, tokens = s.tokens + EXCLUDED.tokens";

/// Adds a transaction's spend changes into the stored rows (SQL-side sums: exact numerics). Called under the
/// scope of the events' tenant.
pub(super) async fn write_spend(
    tx: &Transaction<'_>,
    st: &mut Stmts,
    deltas: &SpendDeltas,
) -> Result<()> {
    for (key, d) in deltas.changed() {
        let s = st.get(tx, SPEND_ADD).await?;
        tx.execute(
            &s,
            &[
                &tenant_uuid(key.tenant_id)?,
                &key.month.0,
                &key.currency.as_str(),
                &d.cost,
                &d.tokens,
            ],
        )
        .await
        .ctx("write spend")?;
    }
    Ok(())
}

// --- replica outbox -------------------------------------------------------------------------------------------

const OUTBOX_INSERT: &str = "INSERT INTO eai.outbox (table_name, rows, created_at_ms) \
     SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[])";

/// Stores the replica rows of a change in its transaction, on the platform path (the outbox's only policy):
/// call it last, once the change holds its locks (see [`crate::outbox`]).
pub(super) async fn write_outbox(
    tx: &Transaction<'_>,
    st: &mut Stmts,
    rows: OutboxRows,
) -> Result<()> {
    if rows.is_empty() {
        return Ok(());
    }
    let (tables, texts): (Vec<&str>, Vec<String>) = rows.entries()?.into_iter().unzip();
    let at = vec![now_ms(); tables.len()];
    set_scope(tx, st, Scope::Platform).await?;
    let s = st.get(tx, OUTBOX_INSERT).await?;
    tx.execute(&s, &[&tables, &texts, &at])
        .await
        .ctx("write the outbox")?;
    Ok(())
}

// --- audit ----------------------------------------------------------------------------------------------------

/// Serializes appends to the audit chain (advisory locks are per database).
const AUDIT_LOCK: i64 = 0x6561_695f_6175_6474; // "eai_audt"
const AUDIT_LOCK_SQL: &str = "SELECT pg_advisory_xact_lock($1)";
pub(super) const AUDIT_LAST: &str =
    "SELECT seq, hash FROM eai.audit_events ORDER BY seq DESC LIMIT 1";
const AUDIT_INSERT: &str = "INSERT INTO eai.audit_events (seq, prev_hash, hash, tenant_id, body) \
     VALUES ($1, $2, $3, $4, $5)";

/// Appends an event to the chain inside the caller's transaction, on the platform path (the chain links every
/// tenant's events): the chain's advisory lock is held until the transaction ends, so that concurrent appends
/// never fork it. Call it last, just before the commit.
pub(super) async fn append_in(
    tx: &Transaction<'_>,
    st: &mut Stmts,
    draft: &AuditDraft,
) -> Result<AuditEvent> {
    rec::check_owner(draft.tenant_id)?;
    // One round trip, pipelined in this order: the platform path, the chain's lock, then its last event (read
    // once the lock is held, as if each statement waited for the one before).
    let (tenant_arg, platform_arg) = scope_args(Scope::Platform)?;
    let (scope_sql, lock, last) = (
        st.get(tx, SET_SCOPE).await?,
        st.get(tx, AUDIT_LOCK_SQL).await?,
        st.get(tx, AUDIT_LAST).await?,
    );
    let scope_params: [&(dyn ToSql + Sync); 2] = [&tenant_arg, &platform_arg];
    let lock_params: [&(dyn ToSql + Sync); 1] = [&AUDIT_LOCK];
    let (_, _, last) = tokio::try_join!(
        tx.execute(&scope_sql, &scope_params),
        tx.execute(&lock, &lock_params),
        tx.query_opt(&last, &[]),
    )
    .ctx("lock the audit chain and read its last event")?;
    let last = last.map(|r| (r.get(0), r.get(1)));
    let e = changes::audit_next(changes::audit_last(last)?, draft)?;
    let s = st.get(tx, AUDIT_INSERT).await?;
    tx.execute(
        &s,
        &[
            &to_i64(e.seq, "audit seq")?,
            &e.prev_hash,
            &e.hash,
            &owner_uuid(draft.tenant_id)?,
            &audit::canonical_json(draft),
        ],
    )
    .await
    .ctx("append an audit event")?;
    Ok(e)
}
