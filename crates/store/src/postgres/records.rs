//! Usage events, allocation policies, API keys and the audit chain in PostgreSQL. Bodies and rules are
//! [`crate::records`], shared with SQLite; what is PostgreSQL's own:
//!
//! - Usage events are written tenant by tenant, each group under its own `app.tenant_id`, so the database itself
//!   refuses a row of another tenant. They are identified by `(tenant_id, event_id)`: two tenants' ids never
//!   meet. Within a batch, the last copy of an event wins (as upserting them one after the other would).
//! - Scoped reads (`usage_events`, `audit_events`) run the same SQL for every scope, with no tenant clause:
//!   under [`Scope::Tenant`] the database returns only that tenant's rows.
//! - Policies are platform-wide configuration (no tenant): the service role may insert them and set
//!   `effective_to_ms`, nothing else. API keys and audit events are append-only for it.
//! - The audit chain is appended under a transaction advisory lock, so concurrent appends never fork it, in the
//!   transaction of the change it records ([`super::tx::append_in`], last before the commit).
//!
//! The writes shared with other changes (the usage upsert inside a transaction, the outbox, the audit append)
//! are in `tx`; this module holds the changes and reads of these records themselves.

use crate::postgres::PgDb;
use crate::providers::ProviderRecord;
use crate::roles::{
    AuditStore, KeyStore, NewSecret, PolicyStore, ReplicaStore, TenantStore, UsageStore,
};
use crate::ReplicaRows;
use async_trait::async_trait;

use eai_engine::domain::{Policy, PolicySpec, Tenant, UsageEvent};
use eai_engine::time::Timestamp;

use super::pool::PgConn;
use super::tx::{append_in, begin, upsert_in, Mode, AUDIT_LAST};
use super::{owner_of, owner_uuid, sqlstate, Ctx};
use crate::audit::{self, Verifier};
use crate::codec::{corrupt, count, now_ms};
use crate::outbox::{self, OutboxStats};
use crate::plan::changes;
use crate::plan::usage::writer_scope;
use crate::records as rec;
use crate::rollups::RollupConfig;
use crate::{
    ApiKeyRecord, AuditDraft, AuditEvent, AuditHead, BrokenLink, KeyMatch, NewApiKey, OutboxEntry,
    Result, Role, Scope, TenantRef,
};

const EVENTS_IN: &str = "SELECT body::text FROM eai.usage_events \
     WHERE occurred_at_ms >= $1 AND occurred_at_ms < $2 ORDER BY occurred_at_ms, event_id";

const POLICY_INSERT: &str = "INSERT INTO eai.allocation_policies \
     (body, effective_from_ms, effective_to_ms, created_at_ms) VALUES ($1::text::jsonb, $2, $3, $4) RETURNING seq";
const POLICIES: &str = "SELECT seq, body::text, effective_from_ms, effective_to_ms \
     FROM eai.allocation_policies ORDER BY seq";
const POLICY_LOCK: &str = "SELECT seq, body::text, effective_from_ms, effective_to_ms \
     FROM eai.allocation_policies WHERE seq = $1 FOR UPDATE";
const POLICY_CLOSE: &str = "UPDATE eai.allocation_policies SET effective_to_ms = $2 WHERE seq = $1";

/// The columns [`key_of`] reads.
macro_rules! key_cols {
    () => {
        "seq, hash, role, tenant_id, name, created_at_ms, nodes, expires_at_ms, revoked_at_ms, \
         previous_hash, previous_valid_until_ms, rotated_at_ms"
    };
}
const KEY_INSERT: &str = concat!(
    "INSERT INTO eai.api_keys (hash, role, tenant_id, name, created_at_ms, revoked, nodes, expires_at_ms) \
     VALUES ($1, $2, $3, $4, $5, false, $6, $7) RETURNING ",
    key_cols!()
);
/// The key whose secret or previous secret hashes to $1: a current secret first, then the lowest `seq` (as in
/// SQLite: one answer even when a hash is one key's current and another's previous).
const KEY_BY_HASH: &str = concat!(
    "SELECT ",
    key_cols!(),
    " FROM (SELECT ",
    key_cols!(),
    ", 0 AS pref FROM eai.api_keys WHERE hash = $1 UNION ALL SELECT ",
    key_cols!(),
    ", 1 FROM eai.api_keys WHERE previous_hash = $1) k ORDER BY pref, seq LIMIT 1"
);
const KEYS_ALL: &str = concat!("SELECT ", key_cols!(), " FROM eai.api_keys ORDER BY seq");
const KEY_LOCK: &str = concat!(
    "SELECT ",
    key_cols!(),
    " FROM eai.api_keys WHERE seq = $1 FOR UPDATE"
);
const KEY_REVOKE: &str = concat!(
    "UPDATE eai.api_keys SET revoked = true, revoked_at_ms = $2 WHERE seq = $1 RETURNING ",
    key_cols!()
);
const KEY_ROTATE: &str = concat!(
    "UPDATE eai.api_keys SET hash = $2, previous_hash = $3, previous_valid_until_ms = $4, rotated_at_ms = $5 \
     WHERE seq = $1 RETURNING ",
    key_cols!()
);
const KEY_TAKEN: &str = "SELECT EXISTS (SELECT 1 FROM eai.api_keys WHERE hash = $1)";
const KEY_COUNT: &str = "SELECT count(*) FROM eai.api_keys";

const AUDIT_AFTER: &str = "SELECT seq, prev_hash, hash, body FROM eai.audit_events \
     WHERE seq > $1 ORDER BY seq LIMIT $2";
const AUDIT_ALL: &str =
    "SELECT seq, prev_hash, hash, body, tenant_id FROM eai.audit_events ORDER BY seq";

const OUTBOX_PENDING: &str = "SELECT seq, table_name, rows FROM eai.outbox ORDER BY seq LIMIT $1";
const OUTBOX_ACK: &str = "DELETE FROM eai.outbox WHERE seq <= $1";
const OUTBOX_STATS: &str = "SELECT count(*), min(created_at_ms) FROM eai.outbox";

// --- replica outbox -------------------------------------------------------------------------------------------

pub async fn outbox_pending(conn: &mut PgConn, limit: u64) -> Result<Vec<OutboxEntry>> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let (tx, st) = begin(conn, Scope::Platform, Mode::Snapshot).await?;
    let s = st.get(&tx, OUTBOX_PENDING).await?;
    let rows = tx.query(&s, &[&limit]).await.ctx("read the outbox")?;
    tx.commit().await.ctx("end read")?;
    rows.iter()
        .map(|r| outbox::entry_of(r.get(0), r.get(1), r.get(2)))
        .collect()
}

pub async fn outbox_ack(conn: &mut PgConn, through: u64) -> Result<u64> {
    let through = i64::try_from(through).unwrap_or(i64::MAX);
    let (tx, st) = begin(conn, Scope::Platform, Mode::Write).await?;
    let s = st.get(&tx, OUTBOX_ACK).await?;
    let n = tx
        .execute(&s, &[&through])
        .await
        .ctx("acknowledge outbox entries")?;
    tx.commit().await.ctx("commit outbox ack")?;
    Ok(n)
}

pub async fn outbox_stats(conn: &mut PgConn) -> Result<OutboxStats> {
    let (tx, st) = begin(conn, Scope::Platform, Mode::Snapshot).await?;
    let s = st.get(&tx, OUTBOX_STATS).await?;
    let r = tx.query_one(&s, &[]).await.ctx("read outbox stats")?;
    tx.commit().await.ctx("end read")?;
    Ok(OutboxStats {
        pending: count(r.get(0), "outbox count")?,
        oldest_ms: r.get(1),
    })
}

// --- usage events ---------------------------------------------------------------------------------------------

/// Upserts events tenant by tenant, and keeps `eai.usage_claims` their sums in the same transaction: the events
/// a batch replaces are read first (under advisory locks on their ids, taken in one statement in ascending
/// order before anything else, so that two upserts of one id run one after the other and the second takes out
/// the claim the first put in), then each new event's claim is added and each replaced one's taken out.
pub async fn upsert_usage_events(
    conn: &mut PgConn,
    events: &[UsageEvent],
    with_outbox: bool,
    draft: &AuditDraft,
) -> Result<u64> {
    let first = events.first().map(|e| e.tenant_id);
    let (tx, st) = begin(
        conn,
        first.map_or(Scope::Platform, writer_scope),
        Mode::Write,
    )
    .await?;
    upsert_in(&tx, st, events, with_outbox).await?;
    append_in(&tx, st, &changes::usage_upserted(draft, events.len())).await?;
    tx.commit().await.ctx("commit usage upsert")?;
    Ok(events.len() as u64)
}

/// Under [`Scope::Tenant`] the database returns that tenant's events only: the SQL has no tenant clause.
pub async fn usage_events(
    conn: &mut PgConn,
    scope: Scope,
    from: Timestamp,
    to: Timestamp,
) -> Result<Vec<UsageEvent>> {
    let (tx, st) = begin(conn, scope, Mode::Snapshot).await?;
    let s = st.get(&tx, EVENTS_IN).await?;
    let rows = tx
        .query(&s, &[&from.0, &to.0])
        .await
        .ctx("read usage events")?;
    tx.commit().await.ctx("end read")?;
    rows.iter().map(|r| rec::event_parse(r.get(0))).collect()
}

// --- allocation policies --------------------------------------------------------------------------------------

fn policy_of(r: &tokio_postgres::Row) -> Result<Policy> {
    rec::policy_parse(r.get(0), r.get(1), r.get(2), r.get(3))
}

/// Stores a policy and its rollup cuts, as [`changes::policy_insert`] says.
async fn insert_policy_cut(
    tx: &tokio_postgres::Transaction<'_>,
    st: &mut super::pool::Stmts,
    cfg: &RollupConfig,
    spec: &PolicySpec,
) -> Result<Policy> {
    let row = changes::policy_insert(spec)?;
    let s = st.get(tx, POLICY_INSERT).await?;
    let seq: i64 = tx
        .query_one(
            &s,
            &[
                &row.body,
                &row.effective_from_ms,
                &row.effective_to_ms,
                &now_ms(),
            ],
        )
        .await
        .ctx("insert a policy")?
        .get(0);
    super::samples::record_cuts(tx, st, cfg, &row.cuts).await?;
    Ok(Policy::new(
        count(seq, "allocation_policies.seq")?,
        spec.clone(),
    ))
}

pub async fn create_policy(
    conn: &mut PgConn,
    cfg: &RollupConfig,
    spec: &PolicySpec,
    draft: &AuditDraft,
) -> Result<Policy> {
    let (tx, st) = begin(conn, Scope::Platform, Mode::Write).await?;
    let p = insert_policy_cut(&tx, st, cfg, spec).await?;
    append_in(&tx, st, &changes::changed(draft, p.id.clone())).await?;
    tx.commit().await.ctx("commit policy create")?;
    Ok(p)
}

pub async fn policies(conn: &mut PgConn) -> Result<Vec<Policy>> {
    let (tx, st) = begin(conn, Scope::Platform, Mode::Snapshot).await?;
    let s = st.get(&tx, POLICIES).await?;
    let rows = tx.query(&s, &[]).await.ctx("read policies")?;
    tx.commit().await.ctx("end read")?;
    rows.iter().map(policy_of).collect()
}

pub async fn supersede_policy(
    conn: &mut PgConn,
    cfg: &RollupConfig,
    id: &str,
    at: Timestamp,
    replacement: Option<&PolicySpec>,
    draft: &AuditDraft,
) -> Result<(Policy, Option<Policy>)> {
    let seq = rec::policy_seq(id)?;
    let (tx, st) = begin(conn, Scope::Platform, Mode::Write).await?;
    let s = st.get(&tx, POLICY_LOCK).await?;
    let row = tx.query_opt(&s, &[&seq]).await.ctx("read a policy")?;
    let close = changes::policy_close(id, at, row.as_ref().map(policy_of).transpose()?)?;
    let s = st.get(&tx, POLICY_CLOSE).await?;
    tx.execute(&s, &[&close.seq, &close.at.0])
        .await
        .ctx("close a policy")?;
    super::samples::record_cuts(&tx, st, cfg, &close.cuts).await?;
    let opened = match replacement {
        Some(spec) => Some(insert_policy_cut(&tx, st, cfg, spec).await?),
        None => None,
    };
    append_in(&tx, st, &close.audited(draft, opened.as_ref())).await?;
    tx.commit().await.ctx("commit policy supersede")?;
    Ok((close.closed, opened))
}

// --- API keys -------------------------------------------------------------------------------------------------

pub async fn create_api_key(
    conn: &mut PgConn,
    key: &NewApiKey,
    draft: &AuditDraft,
) -> Result<ApiKeyRecord> {
    rec::check_owner(key.tenant_id)?;
    let tenant = owner_uuid(key.tenant_id)?;
    let (tx, st) = begin(conn, Scope::Platform, Mode::Write).await?;
    let s = st.get(&tx, KEY_TAKEN).await?;
    let taken: bool = tx
        .query_one(&s, &[&key.hash])
        .await
        .ctx("read an API key")?
        .get(0);
    let row = changes::key_insert(key, taken)?;
    let s = st.get(&tx, KEY_INSERT).await?;
    let row = match tx
        .query_one(
            &s,
            &[
                &key.hash,
                &key.role.as_str(),
                &tenant,
                &key.name,
                &key.created_at.0,
                &row.nodes,
                &key.expires_at.map(|t| t.0),
            ],
        )
        .await
    {
        Ok(r) => r,
        Err(e) if sqlstate(&e) == Some("23505") => return Err(rec::duplicate_key()),
        Err(e) => return Err(e).ctx("insert an API key"),
    };
    commit_key_change(tx, st, draft, key_of(&row)?, "create").await
}

/// Audits a key's change (its id as the resource) and commits it.
async fn commit_key_change(
    tx: tokio_postgres::Transaction<'_>,
    st: &mut super::pool::Stmts,
    draft: &AuditDraft,
    stored: ApiKeyRecord,
    what: &str,
) -> Result<ApiKeyRecord> {
    append_in(&tx, st, &changes::changed(draft, stored.id.clone())).await?;
    tx.commit().await.ctx(&format!("commit key {what}"))?;
    Ok(stored)
}

/// A key row of [`KEY_COLS`].
fn key_of(r: &tokio_postgres::Row) -> Result<ApiKeyRecord> {
    let role: String = r.get(2);
    let nodes: Option<String> = r.get(6);
    let prev: Option<String> = r.get(9);
    let prev_until: Option<i64> = r.get(10);
    Ok(ApiKeyRecord {
        id: rec::key_id(r.get(0)),
        hash: r.get(1),
        role: Role::parse(&role).ok_or_else(|| corrupt("api_keys.role", &role))?,
        tenant_id: owner_of(r.get(3)),
        name: r.get(4),
        created_at: Timestamp(r.get(5)),
        nodes: rec::nodes_parse(nodes.as_deref())?,
        expires_at: r.get::<_, Option<i64>>(7).map(Timestamp),
        revoked_at: r.get::<_, Option<i64>>(8).map(Timestamp),
        previous: prev.zip(prev_until.map(Timestamp)),
        rotated_at: r.get::<_, Option<i64>>(11).map(Timestamp),
    })
}

/// On the platform path: a key is looked up before its caller's tenant is known.
pub async fn api_key_by_hash(conn: &mut PgConn, hash: &str) -> Result<Option<KeyMatch>> {
    let (tx, st) = begin(conn, Scope::Platform, Mode::Snapshot).await?;
    let s = st.get(&tx, KEY_BY_HASH).await?;
    let row = tx.query_opt(&s, &[&hash]).await.ctx("read an API key")?;
    tx.commit().await.ctx("end read")?;
    Ok(changes::key_match(
        row.as_ref().map(key_of).transpose()?,
        hash,
    ))
}

pub async fn api_key_count(conn: &mut PgConn) -> Result<u64> {
    let (tx, st) = begin(conn, Scope::Platform, Mode::Snapshot).await?;
    let s = st.get(&tx, KEY_COUNT).await?;
    let n: i64 = tx.query_one(&s, &[]).await.ctx("count API keys")?.get(0);
    tx.commit().await.ctx("end read")?;
    count(n, "api key count")
}

/// Under [`Scope::Tenant`] the database returns that tenant's keys only: the SQL has no tenant clause.
pub async fn api_keys(conn: &mut PgConn, scope: Scope) -> Result<Vec<ApiKeyRecord>> {
    let (tx, st) = begin(conn, scope, Mode::Snapshot).await?;
    let s = st.get(&tx, KEYS_ALL).await?;
    let rows = tx.query(&s, &[]).await.ctx("read API keys")?;
    tx.commit().await.ctx("end read")?;
    rows.iter().map(key_of).collect()
}

/// The key `id` as `scope` may see it, locked for the change (another tenant's key is not found: the database
/// hides it from a tenant-scoped transaction).
async fn key_for_change(
    tx: &tokio_postgres::Transaction<'_>,
    st: &mut super::pool::Stmts,
    scope: Scope,
    id: &str,
) -> Result<ApiKeyRecord> {
    let seq = rec::key_seq(id)?;
    let s = st.get(tx, KEY_LOCK).await?;
    let row = tx.query_opt(&s, &[&seq]).await.ctx("read an API key")?;
    changes::key_for_change(scope, id, row.as_ref().map(key_of).transpose()?)
}

pub async fn revoke_api_key(
    conn: &mut PgConn,
    scope: Scope,
    id: &str,
    at: Timestamp,
    draft: &AuditDraft,
) -> Result<ApiKeyRecord> {
    changes::check_scope(scope, "API key", id)?;
    let (tx, st) = begin(conn, scope, Mode::Write).await?;
    let key = key_for_change(&tx, st, scope, id).await?;
    let stored = match changes::key_revoke(&key, at)? {
        Some((seq, at)) => {
            let s = st.get(&tx, KEY_REVOKE).await?;
            let row = tx
                .query_one(&s, &[&seq, &at.0])
                .await
                .ctx("revoke an API key")?;
            key_of(&row)?
        }
        None => key,
    };
    commit_key_change(tx, st, draft, stored, "revoke").await
}

pub async fn rotate_api_key(
    conn: &mut PgConn,
    scope: Scope,
    id: &str,
    secret: &NewSecret,
    draft: &AuditDraft,
) -> Result<ApiKeyRecord> {
    changes::check_scope(scope, "API key", id)?;
    let (tx, st) = begin(conn, scope, Mode::Write).await?;
    let key = key_for_change(&tx, st, scope, id).await?;
    let w = changes::key_rotate(&key, secret)?;
    let s = st.get(&tx, KEY_ROTATE).await?;
    let row = match tx
        .query_one(
            &s,
            &[
                &w.seq,
                &w.hash,
                &w.previous_hash,
                &w.previous_valid_until.0,
                &w.rotated_at.0,
            ],
        )
        .await
    {
        Ok(r) => r,
        Err(e) if sqlstate(&e) == Some("23505") => return Err(rec::duplicate_key()),
        Err(e) => return Err(e).ctx("rotate an API key"),
    };
    let stored = key_of(&row)?;
    commit_key_change(tx, st, draft, stored, "rotate").await
}

// --- tenants --------------------------------------------------------------------------------------------------

const TENANT_INSERT: &str =
    "INSERT INTO eai.tenants (tenant_id, slug, name, created_at_ms) VALUES ($1, $2, $3, $4)";
const TENANTS: &str = "SELECT tenant_id::text, slug, name FROM eai.tenants ORDER BY slug";
const TENANT_BY_ID: &str =
    "SELECT tenant_id::text, slug, name FROM eai.tenants WHERE tenant_id = $1";
const TENANT_BY_SLUG: &str = "SELECT tenant_id::text, slug, name FROM eai.tenants WHERE slug = $1";

fn tenant_of(r: &tokio_postgres::Row) -> Result<Tenant> {
    rec::tenant_parse(r.get(0), r.get(1), r.get(2))
}

pub async fn create_tenant(conn: &mut PgConn, t: &Tenant, draft: &AuditDraft) -> Result<Tenant> {
    changes::tenant_insert(t)?;
    let (tx, st) = begin(conn, Scope::Platform, Mode::Write).await?;
    let s = st.get(&tx, TENANT_INSERT).await?;
    match tx
        .execute(&s, &[&t.id.0, &t.slug.as_str(), &t.name, &now_ms()])
        .await
    {
        Ok(_) => {}
        Err(e) if sqlstate(&e) == Some("23505") => return Err(rec::tenant_taken(t)),
        Err(e) => return Err(e).ctx("insert a tenant"),
    }
    append_in(&tx, st, &changes::tenant_created(draft, t)).await?;
    tx.commit().await.ctx("commit tenant create")?;
    Ok(t.clone())
}

/// Under [`Scope::Tenant`] the database returns that tenant's row only: the SQL has no tenant clause.
pub async fn tenants(conn: &mut PgConn, scope: Scope) -> Result<Vec<Tenant>> {
    let (tx, st) = begin(conn, scope, Mode::Snapshot).await?;
    let s = st.get(&tx, TENANTS).await?;
    let rows = tx.query(&s, &[]).await.ctx("read tenants")?;
    tx.commit().await.ctx("end read")?;
    rows.iter().map(tenant_of).collect()
}

/// On the platform path: a tenant is looked up before its caller's tenant is known.
pub async fn tenant(conn: &mut PgConn, key: &TenantRef) -> Result<Option<Tenant>> {
    let (tx, st) = begin(conn, Scope::Platform, Mode::Snapshot).await?;
    let row = match key {
        TenantRef::Id(id) => {
            let s = st.get(&tx, TENANT_BY_ID).await?;
            tx.query_opt(&s, &[&id.0]).await
        }
        TenantRef::Slug(slug) => {
            let s = st.get(&tx, TENANT_BY_SLUG).await?;
            tx.query_opt(&s, &[&slug.as_str()]).await
        }
    }
    .ctx("read a tenant")?;
    tx.commit().await.ctx("end read")?;
    row.as_ref().map(tenant_of).transpose()
}

// --- audit ----------------------------------------------------------------------------------------------------

pub async fn append_audit(conn: &mut PgConn, draft: &AuditDraft) -> Result<AuditEvent> {
    let (tx, st) = begin(conn, Scope::Platform, Mode::Write).await?;
    let e = append_in(&tx, st, draft).await?;
    tx.commit().await.ctx("commit audit append")?;
    Ok(e)
}

pub async fn audit_head(conn: &mut PgConn) -> Result<Option<AuditHead>> {
    let (tx, st) = begin(conn, Scope::Platform, Mode::Snapshot).await?;
    let s = st.get(&tx, AUDIT_LAST).await?;
    let row = tx.query_opt(&s, &[]).await.ctx("read the chain's head")?;
    tx.commit().await.ctx("end read")?;
    changes::audit_head(row.map(|r| (r.get(0), r.get(1))))
}

/// Under [`Scope::Tenant`] the database returns that tenant's events only: the SQL has no tenant clause.
pub async fn audit_events(
    conn: &mut PgConn,
    scope: Scope,
    after: u64,
    limit: u64,
) -> Result<Vec<AuditEvent>> {
    let after = i64::try_from(after).unwrap_or(i64::MAX);
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let (tx, st) = begin(conn, scope, Mode::Snapshot).await?;
    let s = st.get(&tx, AUDIT_AFTER).await?;
    let rows = tx
        .query(&s, &[&after, &limit])
        .await
        .ctx("read audit events")?;
    tx.commit().await.ctx("end read")?;
    rows.iter()
        .map(|r| changes::audit_event(r.get(0), r.get(1), r.get(2), r.get(3)))
        .collect()
}

/// Streams the whole chain (1,000 rows at a time, from one snapshot) through a [`Verifier`].
pub async fn verify_audit_chain(
    conn: &mut PgConn,
    expect: Option<&AuditHead>,
) -> Result<Option<BrokenLink>> {
    let (tx, st) = begin(conn, Scope::Platform, Mode::Snapshot).await?;
    let v2_from = super::samples::meta_get(&tx, st, audit::V2_FROM).await?;
    let s = st.get(&tx, AUDIT_ALL).await?;
    let portal = tx.bind(&s, &[]).await.ctx("read the chain")?;
    let mut v = Verifier::from_v2(v2_from.and_then(|s| u64::try_from(s).ok())).expect(expect);
    loop {
        let rows = tx.query_portal(&portal, 1000).await.ctx("read the chain")?;
        if rows.is_empty() {
            break;
        }
        for r in &rows {
            let seq = u64::try_from(r.get::<_, i64>(0)).unwrap_or(0);
            let body: &str = r.get(3);
            let tenant = audit::tenant_text(owner_of(r.get(4)));
            if let Err(b) = v.push_stored(seq, r.get(1), r.get(2), &tenant, body) {
                return Ok(Some(b));
            }
        }
    }
    tx.commit().await.ctx("end read")?;
    Ok(v.finish().err())
}

#[async_trait]
impl UsageStore for PgDb {
    async fn upsert_usage_events(&self, events: &[UsageEvent], audit: &AuditDraft) -> Result<u64> {
        let mut c = self.conn().await?;
        upsert_usage_events(c.conn()?, events, self.inner.cfg.outbox, audit).await
    }

    async fn usage_events(
        &self,
        scope: Scope,
        from: Timestamp,
        to: Timestamp,
    ) -> Result<Vec<UsageEvent>> {
        let mut c = self.conn().await?;
        usage_events(c.conn()?, scope, from, to).await
    }
}

#[async_trait]
impl PolicyStore for PgDb {
    async fn create_policy(&self, spec: &PolicySpec, audit: &AuditDraft) -> Result<Policy> {
        let mut c = self.conn().await?;
        create_policy(c.conn()?, &self.inner.cfg, spec, audit).await
    }

    async fn policies(&self) -> Result<Vec<Policy>> {
        let mut c = self.conn().await?;
        policies(c.conn()?).await
    }

    async fn supersede_policy(
        &self,
        id: &str,
        at: Timestamp,
        replacement: Option<&PolicySpec>,
        audit: &AuditDraft,
    ) -> Result<(Policy, Option<Policy>)> {
        let mut c = self.conn().await?;
        supersede_policy(c.conn()?, &self.inner.cfg, id, at, replacement, audit).await
    }

    async fn register_provider(
        &self,
        provider: &ProviderRecord,
        audit: &AuditDraft,
    ) -> Result<ProviderRecord> {
        let mut c = self.conn().await?;
        super::providers::register(c.conn()?, provider, audit).await
    }

    async fn providers(&self) -> Result<Vec<ProviderRecord>> {
        let mut c = self.conn().await?;
        super::providers::providers(c.conn()?).await
    }
}

#[async_trait]
impl KeyStore for PgDb {
    async fn create_api_key(&self, key: &NewApiKey, audit: &AuditDraft) -> Result<ApiKeyRecord> {
        let mut c = self.conn().await?;
        create_api_key(c.conn()?, key, audit).await
    }

    async fn api_key_by_hash(&self, hash: &str) -> Result<Option<KeyMatch>> {
        let mut c = self.conn().await?;
        api_key_by_hash(c.conn()?, hash).await
    }

    async fn api_key_count(&self) -> Result<u64> {
        let mut c = self.conn().await?;
        api_key_count(c.conn()?).await
    }

    async fn api_keys(&self, scope: Scope) -> Result<Vec<ApiKeyRecord>> {
        let mut c = self.conn().await?;
        api_keys(c.conn()?, scope).await
    }

    async fn revoke_api_key(
        &self,
        scope: Scope,
        id: &str,
        at: Timestamp,
        audit: &AuditDraft,
    ) -> Result<ApiKeyRecord> {
        let mut c = self.conn().await?;
        revoke_api_key(c.conn()?, scope, id, at, audit).await
    }

    async fn rotate_api_key(
        &self,
        scope: Scope,
        id: &str,
        secret: &NewSecret,
        audit: &AuditDraft,
    ) -> Result<ApiKeyRecord> {
        let mut c = self.conn().await?;
        rotate_api_key(c.conn()?, scope, id, secret, audit).await
    }
}

#[async_trait]
impl TenantStore for PgDb {
    async fn create_tenant(&self, tenant: &Tenant, audit: &AuditDraft) -> Result<Tenant> {
        let mut c = self.conn().await?;
        create_tenant(c.conn()?, tenant, audit).await
    }

    async fn tenants(&self, scope: Scope) -> Result<Vec<Tenant>> {
        let mut c = self.conn().await?;
        tenants(c.conn()?, scope).await
    }

    async fn tenant(&self, key: &TenantRef) -> Result<Option<Tenant>> {
        let mut c = self.conn().await?;
        tenant(c.conn()?, key).await
    }
}

#[async_trait]
impl AuditStore for PgDb {
    async fn append_audit(&self, draft: &AuditDraft) -> Result<AuditEvent> {
        let mut c = self.conn().await?;
        append_audit(c.conn()?, draft).await
    }

    async fn audit_events(&self, scope: Scope, after: u64, limit: u64) -> Result<Vec<AuditEvent>> {
        let mut c = self.conn().await?;
        audit_events(c.conn()?, scope, after, limit).await
    }

    async fn audit_head(&self) -> Result<Option<AuditHead>> {
        let mut c = self.conn().await?;
        audit_head(c.conn()?).await
    }

    async fn verify_audit_chain(&self, expect: Option<&AuditHead>) -> Result<Option<BrokenLink>> {
        let mut c = self.conn().await?;
        verify_audit_chain(c.conn()?, expect).await
    }
}

#[async_trait]
impl ReplicaStore for PgDb {
    async fn replica_extent(&self) -> Result<Option<(Timestamp, Timestamp)>> {
        let mut c = self.conn().await?;
        super::samples::replica_extent(c.conn()?, &self.inner.cfg).await
    }

    async fn replica_rows(&self, from: Timestamp, to: Timestamp) -> Result<ReplicaRows> {
        let mut c = self.conn().await?;
        super::samples::replica_rows(c.conn()?, from.0, to.0).await
    }

    async fn outbox_pending(&self, limit: u64) -> Result<Vec<OutboxEntry>> {
        let mut c = self.conn().await?;
        outbox_pending(c.conn()?, limit).await
    }

    async fn outbox_ack(&self, through: u64) -> Result<u64> {
        let mut c = self.conn().await?;
        outbox_ack(c.conn()?, through).await
    }

    async fn outbox_stats(&self) -> Result<OutboxStats> {
        let mut c = self.conn().await?;
        outbox_stats(c.conn()?).await
    }
}
