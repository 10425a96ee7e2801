//! Records whatever the backend: usage events and policies as the JSON bodies both backends store, and the
//! rules of records that the [`crate::Store`] trait leaves to the store, settled once here:
//!
//! - A usage event is stored as its contract JSON (decimals as strings) and identified by `(tenant_id,
//!   event_id)`: tenants' ids never collide, so nothing of another tenant can be probed. Re-sending an event
//!   replaces the stored one, except that an event of the allocation batch (`source: allocation`, the platform's
//!   record of a charge) is only ever replaced by another one ([`check_replace`]: [`StoreError::Forbidden`]).
//! - A policy's pricing terms are a JSON body written once; its effective dates are columns. Superseding policy
//!   `p` at `at` needs `p.effective_from < at` and `p` still open at `at` (no `effective_to`, or one after
//!   `at`): closing a policy at or before its start would leave it empty, and moving an end later would edit
//!   history ([`check_supersede`]). Anything else is a [`StoreError::Conflict`]; an unknown id is
//!   [`StoreError::NotFound`]. The replacement is stored as given, in the same transaction.
//! - An API key hash is unique: storing it twice is a [`StoreError::Conflict`]. `api_key_count` counts every key,
//!   revoked ones included. Ids are `key_<seq>` and `alp_<seq>`. A tenant-scoped caller sees and touches its
//!   tenant's keys only: another tenant's key is not found ([`check_key_scope`]). A revoked key cannot be
//!   rotated ([`check_rotate`]). A sampler key's node names are stored as a JSON array.
//! - The audit body is the draft's canonical JSON ([`crate::audit::canonical_json`]), the very bytes hashed.
//!
//! An upsert of a batch of events (its order, its scope, what it changes in the rows derived from events) is
//! planned in [`crate::plan::usage`].

use std::collections::BTreeMap;
use std::str::FromStr;

use eai_engine::domain::{
    IdleCapacity, ModelRef, NonNegative, Policy, PolicySpec, Pue, TenantId, TokenWeight, UsageEvent,
};
use eai_engine::money::Currency;
use eai_engine::policy::Glob;
use eai_engine::time::Timestamp;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::codec::{corrupt, dec_parse};
use crate::{Result, StoreError};

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
pub struct EventBody {
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
    pub fn of(e: &UsageEvent) -> Self {
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

    pub fn into_event(self) -> Result<UsageEvent> {
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
            tenant_id: TenantId::from_stored(&self.tenant_id)
                .ok_or_else(|| corrupt(w, &self.tenant_id))?,
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

pub fn to_json<T: Serialize>(v: &T, what: &str) -> Result<String> {
    serde_json::to_string(v).map_err(|e| StoreError::Internal(format!("serialize {what}: {e}")))
}

pub fn from_json<'a, T: Deserialize<'a>>(s: &'a str, what: &str) -> Result<T> {
    serde_json::from_str(s).map_err(|e| StoreError::Internal(format!("corrupt {what}: {e}")))
}

/// The event as its stored JSON body.
pub fn event_json(e: &UsageEvent) -> Result<String> {
    to_json(&EventBody::of(e), "usage event")
}

/// A stored JSON body back as an event.
pub fn event_parse(body: &str) -> Result<UsageEvent> {
    from_json::<EventBody>(body, "usage event")?.into_event()
}

/// Whether the stored event `old` may be replaced by `new` (same tenant and id): the platform's records (the
/// allocation batch's charges, committed reservations) only by another of the same source.
pub fn check_replace(old: &UsageEvent, new: &UsageEvent) -> Result<()> {
    use eai_engine::domain::is_platform_record;
    if is_platform_record(&old.source) && new.source != old.source {
        return Err(StoreError::Forbidden(format!(
            "usage event {} is the platform's record of a charge (source {}): only the platform may write it",
            new.event_id.hyphenated(),
            old.source
        )));
    }
    Ok(())
}

// --- allocation policies --------------------------------------------------------------------------------------

/// The pricing terms of a policy (its effective dates are columns).
#[derive(Debug, Serialize, Deserialize)]
pub struct PolicyBody {
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
    /// Absent on policies stored before it existed: the default.
    #[serde(default = "default_token_weight")]
    output_token_weight: String,
    enabled: bool,
}

impl PolicyBody {
    pub fn of(s: &PolicySpec) -> Self {
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
            output_token_weight: s.output_token_weight.get().to_string(),
            enabled: s.enabled,
        }
    }

    pub fn into_spec(self, from: i64, to: Option<i64>) -> Result<PolicySpec> {
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
            output_token_weight: dec_parse(&self.output_token_weight, w).and_then(|d| {
                TokenWeight::new(d).ok_or_else(|| corrupt(w, &self.output_token_weight))
            })?,
            enabled: self.enabled,
            name: self.name,
            gpu_model: self.gpu_model,
            effective_from: Timestamp(from),
            effective_to: to.map(Timestamp),
        })
    }
}

fn default_token_weight() -> String {
    TokenWeight::DEFAULT.get().to_string()
}

/// The pricing terms of a policy as its stored JSON body.
pub fn policy_json(spec: &PolicySpec) -> Result<String> {
    to_json(&PolicyBody::of(spec), "policy")
}

/// A stored policy row back as a policy.
pub fn policy_parse(seq: i64, body: &str, from: i64, to: Option<i64>) -> Result<Policy> {
    let spec = from_json::<PolicyBody>(body, "policy")?.into_spec(from, to)?;
    let seq = u64::try_from(seq).map_err(|_| corrupt("allocation_policies.seq", seq))?;
    Ok(Policy::new(seq, spec))
}

/// The sequence number in a policy id (`alp_<seq>`), or `NotFound`.
pub fn policy_seq(id: &str) -> Result<i64> {
    id.strip_prefix("alp_")
        .and_then(|n| n.parse::<i64>().ok())
        .ok_or_else(|| StoreError::NotFound(format!("allocation policy {id}")))
}

/// Whether policy `old` (id `id`) may be closed at `at`: [`Policy::close_at`]'s rule, its refusal a conflict.
pub fn check_supersede(old: &Policy, id: &str, at: Timestamp) -> Result<()> {
    old.close_at(at)
        .map(drop)
        .map_err(|refused| StoreError::conflict("effective_to", format!("policy {id} {refused}")))
}

// --- API keys -------------------------------------------------------------------------------------------------

/// The public id of the API key stored with sequence number `seq`.
pub fn key_id(seq: i64) -> String {
    format!("key_{seq}")
}

/// The sequence number in a key id (`key_<seq>`), or `NotFound`.
pub fn key_seq(id: &str) -> Result<i64> {
    id.strip_prefix("key_")
        .and_then(|n| n.parse::<i64>().ok())
        .ok_or_else(|| key_not_found(id))
}

pub fn key_not_found(id: &str) -> StoreError {
    StoreError::NotFound(format!("API key {id}"))
}

/// A tenant-scoped caller may only see its tenant's keys: another one is not found (nothing told of it).
pub fn check_key_scope(key: &crate::ApiKeyRecord, scope: crate::Scope, id: &str) -> Result<()> {
    match scope {
        crate::Scope::Tenant(t) if key.tenant_id != Some(t) => Err(key_not_found(id)),
        _ => Ok(()),
    }
}

/// A revoked key cannot be given a new secret.
pub fn check_rotate(key: &crate::ApiKeyRecord, id: &str, _at: Timestamp) -> Result<()> {
    if key.revoked() {
        return Err(StoreError::conflict(
            "id",
            format!("API key {id} is revoked: create a new key"),
        ));
    }
    Ok(())
}

/// A sampler key's node names as stored (`None`: any node).
pub fn nodes_json(nodes: &[String]) -> Result<Option<String>> {
    if nodes.is_empty() {
        return Ok(None);
    }
    to_json(&nodes, "key nodes").map(Some)
}

pub fn nodes_parse(text: Option<&str>) -> Result<Vec<String>> {
    text.map_or(Ok(Vec::new()), |t| from_json(t, "api_keys.nodes"))
}

/// The refusal of a second key with the same hash.
pub fn duplicate_key() -> StoreError {
    StoreError::conflict("hash", "an API key with this hash already exists")
}

// --- tenants --------------------------------------------------------------------------------------------------

/// An optional tenant as a caller gives it (`None`: the platform's rows): the reserved id refused.
pub fn check_owner(t: Option<TenantId>) -> Result<()> {
    t.map_or(Ok(()), check_tenant_id)
}

/// The reserved platform tenant (the id of rows that belong to no tenant) cannot be registered or used.
pub fn check_tenant_id(t: TenantId) -> Result<()> {
    if t.is_platform() {
        return Err(StoreError::conflict(
            "tenant_id",
            format!("tenant id {} is reserved for platform rows", t),
        ));
    }
    Ok(())
}

/// The refusal of a slug or an id already registered.
pub fn tenant_taken(t: &eai_engine::domain::Tenant) -> StoreError {
    StoreError::conflict(
        "slug",
        format!(
            "a tenant with the slug {} or the id {} is registered already",
            t.slug, t.id
        ),
    )
}

/// A stored tenant row back.
pub fn tenant_parse(id: &str, slug: &str, name: String) -> Result<eai_engine::domain::Tenant> {
    Ok(eai_engine::domain::Tenant {
        id: TenantId::from_stored(id).ok_or_else(|| corrupt("tenants.id", id))?,
        slug: slug.parse().map_err(|_| corrupt("tenants.slug", slug))?,
        name,
    })
}
