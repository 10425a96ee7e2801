//! Usage events, allocation policies, API keys and the audit chain in SQLite. The bodies and the rules of
//! records (same-tenant upserts, superseding policies, unique key hashes) are [`crate::records`], shared with
//! PostgreSQL; the audit tenant is copied into a column for scoped reads.

use crate::providers::ProviderRecord;
use crate::roles::{
    AuditStore, KeyStore, NewSecret, PolicyStore, ReplicaStore, TenantStore, UsageStore,
};
use crate::sqlite::SqliteDb;
use crate::ReplicaRows;
use async_trait::async_trait;

use eai_engine::domain::{Policy, PolicySpec, Tenant, UsageEvent};
use eai_engine::time::Timestamp;
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};

use super::codec::{corrupt, count, now_ms, opt_tenant_parse, Ctx};
use super::tx::{append_in, upsert_in};
use super::SqliteConfig;
use crate::audit::{self, Verifier};
use crate::outbox::{self, OutboxStats};
use crate::plan::changes;
use crate::records as rec;
use crate::{
    ApiKeyRecord, AuditDraft, AuditEvent, AuditHead, BrokenLink, KeyMatch, NewApiKey, OutboxEntry,
    Result, Role, Scope, StoreError, TenantRef,
};

// --- replica outbox -------------------------------------------------------------------------------------------

pub fn outbox_pending(conn: &Connection, limit: u64) -> Result<Vec<OutboxEntry>> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let rows: Vec<(i64, String, String)> = conn
        .prepare_cached("SELECT seq, table_name, rows FROM outbox ORDER BY seq LIMIT ?1")
        .and_then(|mut st| {
            st.query_map([limit], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                .collect()
        })
        .ctx("read the outbox")?;
    rows.into_iter()
        .map(|(seq, table, text)| outbox::entry_of(seq, table, &text))
        .collect()
}

pub fn outbox_ack(conn: &mut Connection, through: u64) -> Result<u64> {
    let through = i64::try_from(through).unwrap_or(i64::MAX);
    let n = conn
        .prepare_cached("DELETE FROM outbox WHERE seq <= ?1")
        .and_then(|mut st| st.execute([through]))
        .ctx("acknowledge outbox entries")?;
    Ok(n as u64)
}

pub fn outbox_stats(conn: &Connection) -> Result<OutboxStats> {
    let (pending, oldest_ms): (i64, Option<i64>) = conn
        .query_row("SELECT COUNT(*), MIN(created_at_ms) FROM outbox", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .ctx("read outbox stats")?;
    Ok(OutboxStats {
        pending: count(pending, "outbox count")?,
        oldest_ms,
    })
}

// --- usage events ---------------------------------------------------------------------------------------------

pub fn upsert_usage_events(
    conn: &mut Connection,
    events: &[UsageEvent],
    with_outbox: bool,
    draft: &AuditDraft,
) -> Result<u64> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("begin usage upsert")?;
    upsert_in(&tx, events, with_outbox)?;
    append_in(&tx, &changes::usage_upserted(draft, events.len()))?;
    tx.commit().ctx("commit usage upsert")?;
    Ok(events.len() as u64)
}

pub fn usage_events(
    conn: &Connection,
    scope: Scope,
    from: Timestamp,
    to: Timestamp,
) -> Result<Vec<UsageEvent>> {
    let bodies: Vec<String> = match scope {
        Scope::Platform => conn
            .prepare_cached(
                "SELECT body FROM usage_events WHERE occurred_at_ms >= ?1 AND occurred_at_ms < ?2 ORDER BY occurred_at_ms, event_id",
            )
            .and_then(|mut st| st.query_map(params![from.0, to.0], |r| r.get(0))?.collect()),
        Scope::Tenant(t) => conn
            .prepare_cached(
                "SELECT body FROM usage_events WHERE tenant_id = ?1 AND occurred_at_ms >= ?2 AND occurred_at_ms < ?3 \
                 ORDER BY occurred_at_ms, event_id",
            )
            .and_then(|mut st| st.query_map(params![t.to_string(), from.0, to.0], |r| r.get(0))?.collect()),
    }
    .ctx("read usage events")?;
    bodies.iter().map(|b| rec::event_parse(b)).collect()
}

// --- allocation policies --------------------------------------------------------------------------------------

type PolicyRow = (i64, String, i64, Option<i64>);

fn decode_policy((seq, body, from, to): PolicyRow) -> Result<Policy> {
    rec::policy_parse(seq, &body, from, to)
}

/// Stores a policy and its rollup cuts, as [`changes::policy_insert`] says.
fn insert_policy_cut(tx: &Connection, cfg: &SqliteConfig, spec: &PolicySpec) -> Result<Policy> {
    let row = changes::policy_insert(spec)?;
    tx.prepare_cached(
        "INSERT INTO allocation_policies (body, effective_from_ms, effective_to_ms, created_at_ms) VALUES (?1, ?2, ?3, ?4)",
    )
    .and_then(|mut st| st.execute(params![row.body, row.effective_from_ms, row.effective_to_ms, now_ms()]))
    .ctx("insert a policy")?;
    let seq = count(tx.last_insert_rowid(), "allocation_policies.seq")?;
    super::samples::record_cuts(tx, cfg, &row.cuts)?;
    Ok(Policy::new(seq, spec.clone()))
}

pub fn create_policy(
    conn: &mut Connection,
    cfg: &SqliteConfig,
    spec: &PolicySpec,
    draft: &AuditDraft,
) -> Result<Policy> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("begin policy create")?;
    let p = insert_policy_cut(&tx, cfg, spec)?;
    append_in(&tx, &changes::changed(draft, p.id.clone()))?;
    tx.commit().ctx("commit policy create")?;
    Ok(p)
}

pub fn policies(conn: &Connection) -> Result<Vec<Policy>> {
    let rows: Vec<PolicyRow> = conn
        .prepare_cached("SELECT seq, body, effective_from_ms, effective_to_ms FROM allocation_policies ORDER BY seq")
        .and_then(|mut st| st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?.collect())
        .ctx("read policies")?;
    rows.into_iter().map(decode_policy).collect()
}

pub fn supersede_policy(
    conn: &mut Connection,
    cfg: &SqliteConfig,
    id: &str,
    at: Timestamp,
    replacement: Option<&PolicySpec>,
    draft: &AuditDraft,
) -> Result<(Policy, Option<Policy>)> {
    let seq = rec::policy_seq(id)?;
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("begin policy supersede")?;
    let row: Option<PolicyRow> = tx
        .prepare_cached("SELECT seq, body, effective_from_ms, effective_to_ms FROM allocation_policies WHERE seq = ?1")
        .and_then(|mut st| st.query_row([seq], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))).optional())
        .ctx("read a policy")?;
    let close = changes::policy_close(id, at, row.map(decode_policy).transpose()?)?;
    tx.prepare_cached("UPDATE allocation_policies SET effective_to_ms = ?2 WHERE seq = ?1")
        .and_then(|mut st| st.execute(params![close.seq, close.at.0]))
        .ctx("close a policy")?;
    super::samples::record_cuts(&tx, cfg, &close.cuts)?;
    let opened = replacement
        .map(|spec| insert_policy_cut(&tx, cfg, spec))
        .transpose()?;
    append_in(&tx, &close.audited(draft, opened.as_ref()))?;
    tx.commit().ctx("commit policy supersede")?;
    Ok((close.closed, opened))
}

// --- API keys -------------------------------------------------------------------------------------------------

const KEY_COLS: &str =
    "seq, hash, role, tenant_id, name, created_at_ms, nodes, expires_at_ms, revoked_at_ms, \
     previous_hash, previous_valid_until_ms, rotated_at_ms";

/// A key row of [`KEY_COLS`], decoded (the outer result is the driver's, the inner one the decoding's).
fn key_of(r: &rusqlite::Row<'_>) -> rusqlite::Result<Result<ApiKeyRecord>> {
    let role: String = r.get(2)?;
    let tenant: Option<String> = r.get(3)?;
    let nodes: Option<String> = r.get(6)?;
    let previous: Option<String> = r.get(9)?;
    let previous_until: Option<i64> = r.get(10)?;
    let (seq, hash, name, created): (i64, String, Option<String>, i64) =
        (r.get(0)?, r.get(1)?, r.get(4)?, r.get(5)?);
    let (expires, revoked, rotated): (Option<i64>, Option<i64>, Option<i64>) =
        (r.get(7)?, r.get(8)?, r.get(11)?);
    Ok((|| {
        Ok(ApiKeyRecord {
            id: rec::key_id(seq),
            hash,
            role: Role::parse(&role).ok_or_else(|| corrupt("api_keys.role", &role))?,
            tenant_id: opt_tenant_parse(tenant, "api_keys.tenant_id")?,
            name,
            created_at: Timestamp(created),
            nodes: rec::nodes_parse(nodes.as_deref())?,
            expires_at: expires.map(Timestamp),
            revoked_at: revoked.map(Timestamp),
            previous: previous.zip(previous_until.map(Timestamp)),
            rotated_at: rotated.map(Timestamp),
        })
    })())
}

fn key_by_seq(tx: &Connection, seq: i64) -> Result<Option<ApiKeyRecord>> {
    tx.prepare_cached(&format!("SELECT {KEY_COLS} FROM api_keys WHERE seq = ?1"))
        .and_then(|mut st| st.query_row([seq], key_of).optional())
        .ctx("read an API key")?
        .transpose()
}

pub fn create_api_key(
    conn: &mut Connection,
    key: &NewApiKey,
    draft: &AuditDraft,
) -> Result<ApiKeyRecord> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("begin key create")?;
    let taken: bool = tx
        .prepare_cached("SELECT EXISTS (SELECT 1 FROM api_keys WHERE hash = ?1)")
        .and_then(|mut st| st.query_row([&key.hash], |r| r.get(0)))
        .ctx("read an API key")?;
    let row = changes::key_insert(key, taken)?;
    let r = tx.execute(
        "INSERT INTO api_keys (hash, role, tenant_id, name, created_at_ms, revoked, nodes, expires_at_ms) \
         VALUES (?1, ?2, ?3, ?4, ?5, 0, ?6, ?7)",
        params![
            key.hash,
            key.role.as_str(),
            key.tenant_id.map(|t| t.to_string()),
            key.name,
            key.created_at.0,
            row.nodes,
            key.expires_at.map(|t| t.0)
        ],
    );
    match r {
        Ok(_) => {}
        Err(e) if super::codec::is_unique_violation(&e) => return Err(rec::duplicate_key()),
        Err(e) => {
            return Err(StoreError::Internal(format!(
                "sqlite: insert an API key: {e}"
            )))
        }
    }
    let seq = tx.last_insert_rowid();
    let stored = key_by_seq(&tx, seq)?
        .ok_or_else(|| StoreError::Internal("an API key just written is missing".into()))?;
    append_in(&tx, &changes::changed(draft, stored.id.clone()))?;
    tx.commit().ctx("commit key create")?;
    Ok(stored)
}

pub fn api_key_by_hash(conn: &Connection, hash: &str) -> Result<Option<KeyMatch>> {
    let found = conn
        .prepare_cached(&format!(
            "SELECT {KEY_COLS} FROM (SELECT {KEY_COLS}, 0 AS pref FROM api_keys WHERE hash = ?1 UNION ALL \
             SELECT {KEY_COLS}, 1 FROM api_keys WHERE previous_hash = ?1) ORDER BY pref, seq LIMIT 1"
        ))
        .and_then(|mut st| st.query_row([hash], key_of).optional())
        .ctx("read an API key")?;
    Ok(changes::key_match(found.transpose()?, hash))
}

pub fn api_key_count(conn: &Connection) -> Result<u64> {
    let n: i64 = conn
        .query_row("SELECT COUNT(*) FROM api_keys", [], |r| r.get(0))
        .ctx("count API keys")?;
    count(n, "api key count")
}

pub fn api_keys(conn: &Connection, scope: Scope) -> Result<Vec<ApiKeyRecord>> {
    let rows: Vec<Result<ApiKeyRecord>> = match scope {
        Scope::Platform => conn
            .prepare_cached(&format!("SELECT {KEY_COLS} FROM api_keys ORDER BY seq"))
            .and_then(|mut st| st.query_map([], key_of)?.collect()),
        Scope::Tenant(t) => conn
            .prepare_cached(&format!(
                "SELECT {KEY_COLS} FROM api_keys WHERE tenant_id = ?1 ORDER BY seq"
            ))
            .and_then(|mut st| st.query_map([t.to_string()], key_of)?.collect()),
    }
    .ctx("read API keys")?;
    rows.into_iter().collect()
}

/// The key `id` as `scope` may change it ([`changes::key_for_change`]), in a write transaction.
fn key_in_scope(tx: &Connection, scope: Scope, id: &str) -> Result<ApiKeyRecord> {
    changes::key_for_change(scope, id, key_by_seq(tx, rec::key_seq(id)?)?)
}

/// Audits a key's change (its id as the resource), read back as stored, and commits it.
fn commit_key_change(
    tx: rusqlite::Transaction<'_>,
    draft: &AuditDraft,
    seq: i64,
    what: &str,
) -> Result<ApiKeyRecord> {
    let stored = key_by_seq(&tx, seq)?.ok_or_else(|| {
        StoreError::Internal(format!("an API key just changed ({what}) is missing"))
    })?;
    append_in(&tx, &changes::changed(draft, stored.id.clone()))?;
    tx.commit().ctx(&format!("commit key {what}"))?;
    Ok(stored)
}

pub fn revoke_api_key(
    conn: &mut Connection,
    scope: Scope,
    id: &str,
    at: Timestamp,
    draft: &AuditDraft,
) -> Result<ApiKeyRecord> {
    changes::check_scope(scope, "API key", id)?;
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("begin key revoke")?;
    let key = key_in_scope(&tx, scope, id)?;
    if let Some((seq, at)) = changes::key_revoke(&key, at)? {
        tx.execute(
            "UPDATE api_keys SET revoked = 1, revoked_at_ms = ?2 WHERE seq = ?1",
            params![seq, at.0],
        )
        .ctx("revoke an API key")?;
    }
    commit_key_change(tx, draft, rec::key_seq(&key.id)?, "revoke")
}

pub fn rotate_api_key(
    conn: &mut Connection,
    scope: Scope,
    id: &str,
    secret: &NewSecret,
    draft: &AuditDraft,
) -> Result<ApiKeyRecord> {
    changes::check_scope(scope, "API key", id)?;
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("begin key rotate")?;
    let key = key_in_scope(&tx, scope, id)?;
    let w = changes::key_rotate(&key, secret)?;
    let r = tx.execute(
        "UPDATE api_keys SET hash = ?2, previous_hash = ?3, previous_valid_until_ms = ?4, rotated_at_ms = ?5 WHERE seq = ?1",
        params![w.seq, w.hash, w.previous_hash, w.previous_valid_until.0, w.rotated_at.0],
    );
    match r {
        Ok(_) => {}
        Err(e) if super::codec::is_unique_violation(&e) => return Err(rec::duplicate_key()),
        Err(e) => {
            return Err(StoreError::Internal(format!(
                "sqlite: rotate an API key: {e}"
            )))
        }
    }
    commit_key_change(tx, draft, w.seq, "rotate")
}

// --- tenants --------------------------------------------------------------------------------------------------

pub fn create_tenant(conn: &mut Connection, t: &Tenant, draft: &AuditDraft) -> Result<Tenant> {
    changes::tenant_insert(t)?;
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("begin tenant create")?;
    match tx.execute(
        "INSERT INTO tenants (id, slug, name, created_at_ms) VALUES (?1, ?2, ?3, ?4)",
        params![t.id.to_string(), t.slug.as_str(), t.name, now_ms()],
    ) {
        Ok(_) => {}
        Err(e) if super::codec::is_unique_violation(&e) => return Err(rec::tenant_taken(t)),
        Err(e) => {
            return Err(StoreError::Internal(format!(
                "sqlite: insert a tenant: {e}"
            )))
        }
    }
    append_in(&tx, &changes::tenant_created(draft, t))?;
    tx.commit().ctx("commit tenant create")?;
    Ok(t.clone())
}

fn tenant_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<(String, String, String)> {
    Ok((r.get(0)?, r.get(1)?, r.get(2)?))
}

pub fn tenants(conn: &Connection, scope: Scope) -> Result<Vec<Tenant>> {
    let rows: Vec<(String, String, String)> = match scope {
        Scope::Platform => conn
            .prepare_cached("SELECT id, slug, name FROM tenants ORDER BY slug")
            .and_then(|mut st| st.query_map([], tenant_row)?.collect()),
        Scope::Tenant(t) => conn
            .prepare_cached("SELECT id, slug, name FROM tenants WHERE id = ?1")
            .and_then(|mut st| st.query_map([t.to_string()], tenant_row)?.collect()),
    }
    .ctx("read tenants")?;
    rows.into_iter()
        .map(|(id, slug, name)| rec::tenant_parse(&id, &slug, name))
        .collect()
}

pub fn tenant(conn: &Connection, key: &TenantRef) -> Result<Option<Tenant>> {
    let (sql, value) = match key {
        TenantRef::Id(id) => (
            "SELECT id, slug, name FROM tenants WHERE id = ?1",
            id.to_string(),
        ),
        TenantRef::Slug(s) => (
            "SELECT id, slug, name FROM tenants WHERE slug = ?1",
            s.to_string(),
        ),
    };
    let row = conn
        .prepare_cached(sql)
        .and_then(|mut st| st.query_row([value], tenant_row).optional())
        .ctx("read a tenant")?;
    row.map(|(id, slug, name)| rec::tenant_parse(&id, &slug, name))
        .transpose()
}

// --- audit ----------------------------------------------------------------------------------------------------

pub fn append_audit(conn: &mut Connection, draft: &AuditDraft) -> Result<AuditEvent> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("begin audit append")?;
    let e = append_in(&tx, draft)?;
    tx.commit().ctx("commit audit append")?;
    Ok(e)
}

pub fn audit_head(conn: &Connection) -> Result<Option<AuditHead>> {
    let last: Option<(i64, String)> = conn
        .prepare_cached("SELECT seq, hash FROM audit_events ORDER BY seq DESC LIMIT 1")
        .and_then(|mut st| st.query_row([], |r| Ok((r.get(0)?, r.get(1)?))).optional())
        .ctx("read the chain's head")?;
    changes::audit_head(last)
}

type AuditRow = (i64, String, String, String);

fn audit_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<AuditRow> {
    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
}

pub fn audit_events(
    conn: &Connection,
    scope: Scope,
    after: u64,
    limit: u64,
) -> Result<Vec<AuditEvent>> {
    let after = i64::try_from(after).unwrap_or(i64::MAX);
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let rows: Vec<AuditRow> = match scope {
        Scope::Platform => conn
            .prepare_cached("SELECT seq, prev_hash, hash, body FROM audit_events WHERE seq > ?1 ORDER BY seq LIMIT ?2")
            .and_then(|mut st| st.query_map(params![after, limit], audit_row)?.collect()),
        Scope::Tenant(t) => conn
            .prepare_cached(
                "SELECT seq, prev_hash, hash, body FROM audit_events WHERE tenant_id = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3",
            )
            .and_then(|mut st| st.query_map(params![t.to_string(), after, limit], audit_row)?.collect()),
    }
    .ctx("read audit events")?;
    rows.into_iter()
        .map(|(seq, prev_hash, hash, body)| changes::audit_event(seq, prev_hash, hash, &body))
        .collect()
}

/// Streams the whole chain through a [`Verifier`]; a body that no longer parses is a broken link too.
pub fn verify_audit_chain(
    conn: &mut Connection,
    expect: Option<&AuditHead>,
) -> Result<Option<BrokenLink>> {
    let tx = conn.transaction().ctx("begin read")?;
    let v2_from = super::samples::meta_get(&tx, audit::V2_FROM)?;
    let mut v = Verifier::from_v2(v2_from.and_then(|s| u64::try_from(s).ok())).expect(expect);
    let mut st = tx
        .prepare("SELECT seq, prev_hash, hash, body, tenant_id FROM audit_events ORDER BY seq")
        .ctx("prepare chain read")?;
    let mut rows = st.query([]).ctx("read the chain")?;
    while let Some(row) = rows.next().ctx("read the chain")? {
        let (seq, prev_hash, hash, body) = audit_row(row).ctx("read the chain")?;
        let tenant: Option<String> = row.get(4).ctx("read the chain")?;
        let seq = u64::try_from(seq).unwrap_or(0);
        if let Err(b) = v.push_stored(seq, prev_hash, hash, tenant.as_deref().unwrap_or(""), &body)
        {
            return Ok(Some(b));
        }
    }
    Ok(v.finish().err())
}

#[async_trait]
impl UsageStore for SqliteDb {
    async fn upsert_usage_events(&self, events: &[UsageEvent], audit: &AuditDraft) -> Result<u64> {
        let (events, audit) = (events.to_vec(), audit.clone());
        self.write(move |c, cfg| upsert_usage_events(c, &events, cfg.outbox, &audit))
            .await
    }

    async fn usage_events(
        &self,
        scope: Scope,
        from: Timestamp,
        to: Timestamp,
    ) -> Result<Vec<UsageEvent>> {
        self.read(move |c, _| usage_events(c, scope, from, to))
            .await
    }
}

#[async_trait]
impl PolicyStore for SqliteDb {
    async fn create_policy(&self, spec: &PolicySpec, audit: &AuditDraft) -> Result<Policy> {
        let (spec, audit) = (spec.clone(), audit.clone());
        self.write(move |c, cfg| create_policy(c, cfg, &spec, &audit))
            .await
    }

    async fn policies(&self) -> Result<Vec<Policy>> {
        self.read(|c, _| policies(c)).await
    }

    async fn supersede_policy(
        &self,
        id: &str,
        at: Timestamp,
        replacement: Option<&PolicySpec>,
        audit: &AuditDraft,
    ) -> Result<(Policy, Option<Policy>)> {
        let (id, replacement, audit) = (id.to_string(), replacement.cloned(), audit.clone());
        self.write(move |c, cfg| supersede_policy(c, cfg, &id, at, replacement.as_ref(), &audit))
            .await
    }

    async fn register_provider(
        &self,
        provider: &ProviderRecord,
        audit: &AuditDraft,
    ) -> Result<ProviderRecord> {
        let (provider, audit) = (provider.clone(), audit.clone());
        self.write(move |c, _| super::providers::register(c, &provider, &audit))
            .await
    }

    async fn providers(&self) -> Result<Vec<ProviderRecord>> {
        self.read(move |c, _| super::providers::providers(c)).await
    }
}

#[async_trait]
impl KeyStore for SqliteDb {
    async fn create_api_key(&self, key: &NewApiKey, audit: &AuditDraft) -> Result<ApiKeyRecord> {
        let (key, audit) = (key.clone(), audit.clone());
        self.write(move |c, _| create_api_key(c, &key, &audit))
            .await
    }

    async fn api_key_by_hash(&self, hash: &str) -> Result<Option<KeyMatch>> {
        let hash = hash.to_string();
        self.read(move |c, _| api_key_by_hash(c, &hash)).await
    }

    async fn api_key_count(&self) -> Result<u64> {
        self.read(|c, _| api_key_count(c)).await
    }

    async fn api_keys(&self, scope: Scope) -> Result<Vec<ApiKeyRecord>> {
        self.read(move |c, _| api_keys(c, scope)).await
    }

    async fn revoke_api_key(
        &self,
        scope: Scope,
        id: &str,
        at: Timestamp,
        audit: &AuditDraft,
    ) -> Result<ApiKeyRecord> {
        let (id, audit) = (id.to_string(), audit.clone());
        self.write(move |c, _| revoke_api_key(c, scope, &id, at, &audit))
            .await
    }

    async fn rotate_api_key(
        &self,
        scope: Scope,
        id: &str,
        secret: &NewSecret,
        audit: &AuditDraft,
    ) -> Result<ApiKeyRecord> {
        let (id, secret, audit) = (id.to_string(), secret.clone(), audit.clone());
        self.write(move |c, _| rotate_api_key(c, scope, &id, &secret, &audit))
            .await
    }
}

#[async_trait]
impl TenantStore for SqliteDb {
    async fn create_tenant(&self, tenant: &Tenant, audit: &AuditDraft) -> Result<Tenant> {
        let (tenant, audit) = (tenant.clone(), audit.clone());
        self.write(move |c, _| create_tenant(c, &tenant, &audit))
            .await
    }

    async fn tenants(&self, scope: Scope) -> Result<Vec<Tenant>> {
        self.read(move |c, _| tenants(c, scope)).await
    }

    async fn tenant(&self, key: &TenantRef) -> Result<Option<Tenant>> {
        let key = key.clone();
        self.read(move |c, _| tenant(c, &key)).await
    }
}

#[async_trait]
impl AuditStore for SqliteDb {
    async fn append_audit(&self, draft: &AuditDraft) -> Result<AuditEvent> {
        let draft = draft.clone();
        self.write(move |c, _| append_audit(c, &draft)).await
    }

    async fn audit_events(&self, scope: Scope, after: u64, limit: u64) -> Result<Vec<AuditEvent>> {
        self.read(move |c, _| audit_events(c, scope, after, limit))
            .await
    }

    async fn audit_head(&self) -> Result<Option<AuditHead>> {
        self.read(|c, _| audit_head(c)).await
    }

    async fn verify_audit_chain(&self, expect: Option<&AuditHead>) -> Result<Option<BrokenLink>> {
        let expect = expect.cloned();
        self.read(move |c, _| verify_audit_chain(c, expect.as_ref()))
            .await
    }
}

#[async_trait]
impl ReplicaStore for SqliteDb {
    async fn replica_extent(&self) -> Result<Option<(Timestamp, Timestamp)>> {
        self.read(|c, cfg| super::samples::replica_extent(c, cfg))
            .await
    }

    async fn replica_rows(&self, from: Timestamp, to: Timestamp) -> Result<ReplicaRows> {
        self.read(move |c, _| super::samples::replica_rows(c, from.0, to.0))
            .await
    }

    async fn outbox_pending(&self, limit: u64) -> Result<Vec<OutboxEntry>> {
        self.read(move |c, _| outbox_pending(c, limit)).await
    }

    async fn outbox_ack(&self, through: u64) -> Result<u64> {
        self.write(move |c, _| outbox_ack(c, through)).await
    }

    async fn outbox_stats(&self) -> Result<OutboxStats> {
        self.read(|c, _| outbox_stats(c)).await
    }
}
