//! Usage events, allocation policies, API keys and the audit chain in SQLite.
//!
//! Rules this backend settles (the trait leaves them open):
//! - A usage event is stored as its contract JSON (decimals as strings). Re-sending an `event_id` replaces the
//!   stored event, but only within the same tenant: an `event_id` that already belongs to another tenant
//!   rejects the whole batch with [`StoreError::Conflict`] (one tenant can never overwrite another's usage).
//! - A policy's pricing terms are a JSON body written once; its effective dates are columns. Superseding policy
//!   `p` at `at` needs `p.effective_from < at` and `p` still open at `at` (no `effective_to`, or one after
//!   `at`): closing a policy at or before its start would leave it empty, and moving an end later would edit
//!   history. Anything else is a [`StoreError::Conflict`]; an unknown id is [`StoreError::NotFound`]. The
//!   replacement is stored as given, in the same transaction.
//! - An API key hash is unique: storing it twice is a [`StoreError::Conflict`]. `api_key_count` counts every key,
//!   revoked ones included.
//! - The audit body is the draft's canonical JSON ([`crate::audit::canonical_json`]), the very bytes hashed; the
//!   tenant is copied into a column for scoped reads.

use std::collections::BTreeMap;
use std::str::FromStr;

use eai_engine::domain::{
    IdleCapacity, ModelRef, NonNegative, Policy, PolicySpec, Pue, TenantId, UsageEvent,
};
use eai_engine::money::Currency;
use eai_engine::policy::Glob;
use eai_engine::time::Timestamp;
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::codec::{corrupt, count, dec_parse, now_ms, opt_tenant_parse, to_i64, Ctx};
use crate::audit::{self, Verifier, GENESIS_HASH};
use crate::{ApiKeyRecord, AuditDraft, AuditEvent, BrokenLink, Result, Role, Scope, StoreError};

// --- usage events ---------------------------------------------------------------------------------------------

#[derive(Debug, Serialize, Deserialize)]
struct ModelBody {
    provider: String,
    name: String,
}

#[derive(Debug, Serialize, Deserialize)]
struct CostBody {
    amount: String,
    currency: String,
}

/// A usage event as contract JSON (usage-event.schema.json 1.0).
#[derive(Debug, Serialize, Deserialize)]
struct EventBody {
    event_id: String,
    schema_version: String,
    tenant_id: String,
    usage_type: String,
    source: String,
    occurred_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    deployment_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    model: Option<ModelBody>,
    units: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cost: Option<CostBody>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    allocation_policy_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    project: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    agent_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    run_id: Option<String>,
}

impl EventBody {
    fn of(e: &UsageEvent) -> Self {
        EventBody {
            event_id: e.event_id.hyphenated().to_string(),
            schema_version: "1.0".into(),
            tenant_id: e.tenant_id.to_string(),
            usage_type: e.usage_type.clone(),
            source: e.source.clone(),
            occurred_at: e.occurred_at.to_string(),
            deployment_id: e.deployment_id.clone(),
            model: e.model.as_ref().map(|m| ModelBody {
                provider: m.provider.clone(),
                name: m.name.clone(),
            }),
            units: e
                .units
                .iter()
                .map(|(k, v)| (k.clone(), v.get().to_string()))
                .collect(),
            cost: e.cost.map(|(a, c)| CostBody {
                amount: a.get().to_string(),
                currency: c.to_string(),
            }),
            allocation_policy_id: e.allocation_policy_id.clone(),
            project: e.project.clone(),
            agent_id: e.agent_id.clone(),
            run_id: e.run_id.clone(),
        }
    }

    fn into_event(self) -> Result<UsageEvent> {
        let w = "usage_events.body";
        let nn = |s: &str| {
            dec_parse(s, w).and_then(|d| NonNegative::new(d).ok_or_else(|| corrupt(w, s)))
        };
        let units = self
            .units
            .iter()
            .map(|(k, v)| Ok((k.clone(), nn(v)?)))
            .collect::<Result<BTreeMap<_, _>>>()?;
        let cost = match &self.cost {
            Some(c) => Some((
                nn(&c.amount)?,
                Currency::from_str(&c.currency).map_err(|_| corrupt(w, &c.currency))?,
            )),
            None => None,
        };
        Ok(UsageEvent {
            event_id: Uuid::parse_str(&self.event_id).map_err(|_| corrupt(w, &self.event_id))?,
            tenant_id: TenantId::from_str(&self.tenant_id)
                .map_err(|_| corrupt(w, &self.tenant_id))?,
            usage_type: self.usage_type,
            source: self.source,
            occurred_at: Timestamp::parse_rfc3339(&self.occurred_at)
                .map_err(|_| corrupt(w, &self.occurred_at))?,
            deployment_id: self.deployment_id,
            model: self.model.map(|m| ModelRef {
                provider: m.provider,
                name: m.name,
            }),
            units,
            cost,
            allocation_policy_id: self.allocation_policy_id,
            project: self.project,
            agent_id: self.agent_id,
            run_id: self.run_id,
        })
    }
}

fn to_json<T: Serialize>(v: &T, what: &str) -> Result<String> {
    serde_json::to_string(v).map_err(|e| StoreError::Internal(format!("serialize {what}: {e}")))
}

fn from_json<'a, T: Deserialize<'a>>(s: &'a str, what: &str) -> Result<T> {
    serde_json::from_str(s).map_err(|e| StoreError::Internal(format!("corrupt {what}: {e}")))
}

pub fn upsert_usage_events(conn: &mut Connection, events: &[UsageEvent]) -> Result<u64> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("begin usage upsert")?;
    {
        let mut st = tx
            .prepare_cached(
                "INSERT INTO usage_events (event_id, tenant_id, occurred_at_ms, deployment_id, body) VALUES (?1, ?2, ?3, ?4, ?5) \
                 ON CONFLICT (event_id) DO UPDATE SET occurred_at_ms = excluded.occurred_at_ms, \
                 deployment_id = excluded.deployment_id, body = excluded.body \
                 WHERE usage_events.tenant_id = excluded.tenant_id",
            )
            .ctx("prepare usage upsert")?;
        for e in events {
            let id = e.event_id.hyphenated().to_string();
            let body = to_json(&EventBody::of(e), "usage event")?;
            let n = st
                .execute(params![
                    id,
                    e.tenant_id.to_string(),
                    e.occurred_at.0,
                    e.deployment_id,
                    body
                ])
                .ctx("upsert a usage event")?;
            if n == 0 {
                return Err(StoreError::Conflict(format!(
                    "usage event {id} already belongs to another tenant"
                )));
            }
        }
    }
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
    bodies
        .iter()
        .map(|b| from_json::<EventBody>(b, "usage event")?.into_event())
        .collect()
}

// --- allocation policies --------------------------------------------------------------------------------------

/// The pricing terms of a policy (its effective dates are columns).
#[derive(Debug, Serialize, Deserialize)]
struct PolicyBody {
    name: String,
    deployment_pattern: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    gpu_model: Option<String>,
    currency: String,
    gpu_hourly_cost: String,
    overhead_pct: String,
    energy_kwh_price: String,
    pue: String,
    storage_gb_month_price: String,
    idle_capacity: String,
    enabled: bool,
}

impl PolicyBody {
    fn of(s: &PolicySpec) -> Self {
        PolicyBody {
            name: s.name.clone(),
            deployment_pattern: s.deployment_pattern.as_str().to_string(),
            gpu_model: s.gpu_model.clone(),
            currency: s.currency.to_string(),
            gpu_hourly_cost: s.gpu_hourly_cost.get().to_string(),
            overhead_pct: s.overhead_pct.get().to_string(),
            energy_kwh_price: s.energy_kwh_price.get().to_string(),
            pue: s.pue.get().to_string(),
            storage_gb_month_price: s.storage_gb_month_price.get().to_string(),
            idle_capacity: s.idle_capacity.as_str().to_string(),
            enabled: s.enabled,
        }
    }

    fn into_spec(self, from: i64, to: Option<i64>) -> Result<PolicySpec> {
        let w = "allocation_policies.body";
        let nn = |s: &str| {
            dec_parse(s, w).and_then(|d| NonNegative::new(d).ok_or_else(|| corrupt(w, s)))
        };
        Ok(PolicySpec {
            deployment_pattern: Glob::new(&self.deployment_pattern)
                .ok_or_else(|| corrupt(w, &self.deployment_pattern))?,
            currency: Currency::from_str(&self.currency).map_err(|_| corrupt(w, &self.currency))?,
            gpu_hourly_cost: nn(&self.gpu_hourly_cost)?,
            overhead_pct: nn(&self.overhead_pct)?,
            energy_kwh_price: nn(&self.energy_kwh_price)?,
            pue: dec_parse(&self.pue, w)
                .and_then(|d| Pue::new(d).ok_or_else(|| corrupt(w, &self.pue)))?,
            storage_gb_month_price: nn(&self.storage_gb_month_price)?,
            idle_capacity: IdleCapacity::from_str(&self.idle_capacity)
                .map_err(|_| corrupt(w, &self.idle_capacity))?,
            enabled: self.enabled,
            name: self.name,
            gpu_model: self.gpu_model,
            effective_from: Timestamp(from),
            effective_to: to.map(Timestamp),
        })
    }
}

fn insert_policy(tx: &Connection, spec: &PolicySpec) -> Result<Policy> {
    let body = to_json(&PolicyBody::of(spec), "policy")?;
    tx.prepare_cached(
        "INSERT INTO allocation_policies (body, effective_from_ms, effective_to_ms, created_at_ms) VALUES (?1, ?2, ?3, ?4)",
    )
    .and_then(|mut st| st.execute(params![body, spec.effective_from.0, spec.effective_to.map(|t| t.0), now_ms()]))
    .ctx("insert a policy")?;
    let seq = count(tx.last_insert_rowid(), "allocation_policies.seq")?;
    Ok(Policy::new(seq, spec.clone()))
}

type PolicyRow = (i64, String, i64, Option<i64>);

fn decode_policy((seq, body, from, to): PolicyRow) -> Result<Policy> {
    let spec = from_json::<PolicyBody>(&body, "policy")?.into_spec(from, to)?;
    Ok(Policy::new(count(seq, "allocation_policies.seq")?, spec))
}

pub fn create_policy(conn: &mut Connection, spec: &PolicySpec) -> Result<Policy> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("begin policy create")?;
    let p = insert_policy(&tx, spec)?;
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
    id: &str,
    at: Timestamp,
    replacement: Option<&PolicySpec>,
) -> Result<(Policy, Option<Policy>)> {
    let not_found = || StoreError::NotFound(format!("allocation policy {id}"));
    let seq = id
        .strip_prefix("alp_")
        .and_then(|n| n.parse::<i64>().ok())
        .ok_or_else(not_found)?;
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("begin policy supersede")?;
    let row: Option<PolicyRow> = tx
        .prepare_cached("SELECT seq, body, effective_from_ms, effective_to_ms FROM allocation_policies WHERE seq = ?1")
        .and_then(|mut st| st.query_row([seq], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))).optional())
        .ctx("read a policy")?;
    let mut old = decode_policy(row.ok_or_else(not_found)?)?;
    if at <= old.spec.effective_from {
        return Err(StoreError::Conflict(format!(
            "policy {id} starts at {}: it cannot be closed at {at}, at or before its start",
            old.spec.effective_from
        )));
    }
    if let Some(to) = old.spec.effective_to {
        if to <= at {
            return Err(StoreError::Conflict(format!(
                "policy {id} is already closed since {to}"
            )));
        }
    }
    tx.prepare_cached("UPDATE allocation_policies SET effective_to_ms = ?2 WHERE seq = ?1")
        .and_then(|mut st| st.execute(params![seq, at.0]))
        .ctx("close a policy")?;
    old.spec.effective_to = Some(at);
    let opened = replacement
        .map(|spec| insert_policy(&tx, spec))
        .transpose()?;
    tx.commit().ctx("commit policy supersede")?;
    Ok((old, opened))
}

// --- API keys -------------------------------------------------------------------------------------------------

pub fn create_api_key(
    conn: &mut Connection,
    hash: &str,
    role: Role,
    tenant_id: Option<TenantId>,
    name: Option<&str>,
    at: Timestamp,
) -> Result<ApiKeyRecord> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("begin key create")?;
    let r = tx.execute(
        "INSERT INTO api_keys (hash, role, tenant_id, name, created_at_ms, revoked) VALUES (?1, ?2, ?3, ?4, ?5, 0)",
        params![hash, role.as_str(), tenant_id.map(|t| t.to_string()), name, at.0],
    );
    match r {
        Ok(_) => {}
        Err(e) if super::codec::is_unique_violation(&e) => {
            return Err(StoreError::Conflict(
                "an API key with this hash already exists".into(),
            ))
        }
        Err(e) => {
            return Err(StoreError::Internal(format!(
                "sqlite: insert an API key: {e}"
            )))
        }
    }
    let seq = tx.last_insert_rowid();
    tx.commit().ctx("commit key create")?;
    Ok(ApiKeyRecord {
        id: format!("key_{seq}"),
        hash: hash.to_string(),
        role,
        tenant_id,
        name: name.map(str::to_string),
        created_at: at,
        revoked: false,
    })
}

pub fn api_key_by_hash(conn: &Connection, hash: &str) -> Result<Option<ApiKeyRecord>> {
    type Row = (
        i64,
        String,
        String,
        Option<String>,
        Option<String>,
        i64,
        i64,
    );
    let row: Option<Row> = conn
        .prepare_cached("SELECT seq, hash, role, tenant_id, name, created_at_ms, revoked FROM api_keys WHERE hash = ?1")
        .and_then(|mut st| {
            st.query_row([hash], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?)))
                .optional()
        })
        .ctx("read an API key")?;
    let Some((seq, hash, role, tenant, name, created, revoked)) = row else {
        return Ok(None);
    };
    Ok(Some(ApiKeyRecord {
        id: format!("key_{seq}"),
        hash,
        role: Role::parse(&role).ok_or_else(|| corrupt("api_keys.role", &role))?,
        tenant_id: opt_tenant_parse(tenant, "api_keys.tenant_id")?,
        name,
        created_at: Timestamp(created),
        revoked: revoked != 0,
    }))
}

pub fn api_key_count(conn: &Connection) -> Result<u64> {
    let n: i64 = conn
        .query_row("SELECT COUNT(*) FROM api_keys", [], |r| r.get(0))
        .ctx("count API keys")?;
    count(n, "api key count")
}

// --- audit ----------------------------------------------------------------------------------------------------

pub fn append_audit(conn: &mut Connection, draft: &AuditDraft) -> Result<AuditEvent> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("begin audit append")?;
    let last: Option<(i64, String)> = tx
        .query_row(
            "SELECT seq, hash FROM audit_events ORDER BY seq DESC LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()
        .ctx("read the chain's last event")?;
    let (last_seq, prev_hash) = match last {
        Some((s, h)) => (count(s, "audit_events.seq")?, h),
        None => (0, GENESIS_HASH.to_string()),
    };
    let seq = last_seq + 1;
    let hash = audit::link(&prev_hash, seq, draft);
    tx.execute(
        "INSERT INTO audit_events (seq, prev_hash, hash, tenant_id, body) VALUES (?1, ?2, ?3, ?4, ?5)",
        params![to_i64(seq, "audit seq")?, prev_hash, hash, draft.tenant_id.map(|t| t.to_string()), audit::canonical_json(draft)],
    )
    .ctx("append an audit event")?;
    tx.commit().ctx("commit audit append")?;
    Ok(AuditEvent {
        seq,
        draft: draft.clone(),
        prev_hash,
        hash,
    })
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
        .map(|(seq, prev_hash, hash, body)| {
            Ok(AuditEvent {
                seq: count(seq, "audit_events.seq")?,
                draft: from_json(&body, "audit event")?,
                prev_hash,
                hash,
            })
        })
        .collect()
}

/// Streams the whole chain through a [`Verifier`]; a body that no longer parses is a broken link too.
pub fn verify_audit_chain(conn: &mut Connection) -> Result<Option<BrokenLink>> {
    let tx = conn.transaction().ctx("begin read")?;
    let mut st = tx
        .prepare("SELECT seq, prev_hash, hash, body FROM audit_events ORDER BY seq")
        .ctx("prepare chain read")?;
    let mut rows = st.query([]).ctx("read the chain")?;
    let mut v = Verifier::new();
    while let Some(row) = rows.next().ctx("read the chain")? {
        let (seq, prev_hash, hash, body) = audit_row(row).ctx("read the chain")?;
        let seq = u64::try_from(seq).unwrap_or(0);
        let draft: AuditDraft = match serde_json::from_str(&body) {
            Ok(d) => d,
            Err(e) => {
                return Ok(Some(BrokenLink {
                    seq,
                    reason: format!("the event no longer reads as an audit event: {e}"),
                }))
            }
        };
        if let Err(b) = v.push(&AuditEvent {
            seq,
            draft,
            prev_hash,
            hash,
        }) {
            return Ok(Some(b));
        }
    }
    Ok(None)
}
