//! eai-store: where eai-gpu keeps samples, rollups, usage events, policies, API keys and the audit chain.
//!
//! One [`Store`] contract, several backends: the embedded SQLite file (default, zero setup) and PostgreSQL
//! (production, row level security). Every method that reads tenant data takes a [`Scope`] first.
//!
//! The modules, in layers (each uses only its own layer and those above it, and no module circles back):
//!
//! 1. this root (the trait and the types it speaks), [`codec`] (how values are stored), [`audit`] (the hash
//!    chain), [`lease`] (the one-replica jobs), [`idempotency`] (the keys of retried requests);
//! 2. the rules of records both backends share: [`records`] (events, policies, keys, tenants), [`budgets`],
//!    [`anomalies`], [`statements`], [`providers`]; [`rollups`] (per-GPU rollups, group rollups and claims, what pruning keeps); [`cache`] (the
//!    read caches); [`clickhouse`] (the replica) and [`outbox`] (the replica rows of each change);
//! 3. [`plan`]: every change planned once without I/O (ingest, prune, usage upsert, the others);
//! 4. the backends, [`sqlite`] and [`postgres`], which read what a plan asks for and write what it returns; and
//!    `testing` (feature `test-support`: a throwaway CA, a TLS-only PostgreSQL cluster).

use eai_engine::allocate::UsageClaim;
use eai_engine::domain::{Sample, TenantId};
use eai_engine::report::Gap;
use eai_engine::rollup::Rollup;
use eai_engine::time::Timestamp;
use serde::{Deserialize, Serialize};

pub use crate::clickhouse::OutboxEntry;
pub use crate::outbox::OutboxStats;

pub mod anomalies;
pub mod audit;
pub mod budgets;
pub mod cache;
pub mod clickhouse;
pub mod codec;
pub mod idempotency;
pub mod lease;
pub mod outbox;
pub mod plan;
pub mod postgres;
pub mod providers;
pub mod records;
pub mod roles;
pub mod rollups;
pub mod sqlite;
pub mod statements;
#[cfg(feature = "test-support")]
pub mod testing;

pub use crate::cache::{read_cache, usage_cache};
pub use crate::roles::{
    AnomalyStore, AuditStore, BudgetStore, IdempotencyStore, KeyStore, NewSecret, Observed,
    PolicyStore, ReplicaStore, SampleStore, StatementStore, Store, TenantStore, UsageStore,
};

/// The id of rows that belong to no tenant (shared deployments, platform keys and events): no tenant may use it.
pub const PLATFORM_TENANT_ID: uuid::Uuid = TenantId::PLATFORM.0;

/// Whose rows a read may return.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Every tenant: platform administrators, and the allocation itself (which must weigh every tenant's usage
    /// to split a shared deployment; its result is scoped afterwards by `eai_engine::scope`).
    Platform,
    /// One tenant's rows only.
    Tenant(TenantId),
}

impl Scope {
    /// Whether a read under this scope can find no row: the scope of the reserved platform tenant (the id of rows
    /// that belong to no tenant), which no tenant acts as. Every backend answers such a read as it would for a
    /// tenant with no rows (empty, or none), never with the platform's rows nor an error.
    pub fn reads_nothing(self) -> bool {
        matches!(self, Scope::Tenant(t) if t.is_platform())
    }
}

/// Roles of SPEC §4, plus the sampler's service identity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    PlatformAdmin,
    Finops,
    TenantAdmin,
    Auditor,
    Developer,
    Viewer,
    SecurityOfficer,
    /// May only post samples (optionally only of some nodes).
    Sampler,
    /// A gateway: posts usage events for any tenant, nothing else.
    UsageReporter,
}

impl Role {
    pub const ALL: [Role; 9] = [
        Role::PlatformAdmin,
        Role::Finops,
        Role::TenantAdmin,
        Role::Auditor,
        Role::Developer,
        Role::Viewer,
        Role::SecurityOfficer,
        Role::Sampler,
        Role::UsageReporter,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Role::PlatformAdmin => "platform_admin",
            Role::Finops => "finops",
            Role::TenantAdmin => "tenant_admin",
            Role::Auditor => "auditor",
            Role::Developer => "developer",
            Role::Viewer => "viewer",
            Role::SecurityOfficer => "security_officer",
            Role::Sampler => "sampler",
            Role::UsageReporter => "usage_reporter",
        }
    }

    pub fn parse(s: &str) -> Option<Role> {
        Role::ALL.into_iter().find(|r| r.as_str() == s)
    }
}

/// A stored API key: only the SHA-256 of the secret is kept (two while a rotation's grace period runs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiKeyRecord {
    /// `key_<n>`: public, safe to log.
    pub id: String,
    /// Hex SHA-256 of the full key text (`eai_live_…`).
    pub hash: String,
    pub role: Role,
    pub tenant_id: Option<TenantId>,
    pub name: Option<String>,
    pub created_at: Timestamp,
    /// Node names a sampler key may post samples of (empty: any node).
    pub nodes: Vec<String>,
    /// After this instant the key is refused.
    pub expires_at: Option<Timestamp>,
    /// When it was revoked (a revoked key is refused).
    pub revoked_at: Option<Timestamp>,
    /// The secret before the last rotation, and until when it still works.
    pub previous: Option<(String, Timestamp)>,
    /// When the secret was last rotated.
    pub rotated_at: Option<Timestamp>,
}

impl ApiKeyRecord {
    pub fn revoked(&self) -> bool {
        self.revoked_at.is_some()
    }
}

/// A key to store (its secret's hash only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewApiKey {
    pub hash: String,
    pub role: Role,
    pub tenant_id: Option<TenantId>,
    pub name: Option<String>,
    pub nodes: Vec<String>,
    pub expires_at: Option<Timestamp>,
    pub created_at: Timestamp,
}

/// The key a secret belongs to, and which of its secrets it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyMatch {
    pub key: ApiKeyRecord,
    /// The secret before the last rotation (valid until `key.previous`'s instant).
    pub previous_secret: bool,
}

/// How a tenant is named: by id or by slug.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TenantRef {
    Id(TenantId),
    Slug(eai_engine::domain::TenantSlug),
}

impl std::str::FromStr for TenantRef {
    type Err = eai_engine::FieldError;
    /// A uuid is an id (never the reserved platform tenant's); anything else must be a slug.
    fn from_str(s: &str) -> std::result::Result<Self, Self::Err> {
        let s = s.trim();
        if uuid::Uuid::parse_str(s).is_ok() {
            return s.parse::<TenantId>().map(TenantRef::Id);
        }
        s.parse().map(TenantRef::Slug)
    }
}

/// The newest event of the audit chain: what an operator anchors outside the database.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditHead {
    pub seq: u64,
    pub hash: String,
}

/// What ingesting a batch did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct IngestOutcome {
    /// New rows written.
    pub inserted: u64,
    /// Rows already present (a re-send), counted once.
    pub duplicates: u64,
}

impl IngestOutcome {
    /// The audit event of the ingest, completed with its counts.
    pub fn audited(&self, draft: &AuditDraft) -> AuditDraft {
        audit::completed(
            draft,
            None,
            serde_json::json!({ "inserted": self.inserted, "duplicates": self.duplicates }),
        )
    }
}

/// An audit event before the chain links it (contract audit-event.schema.json).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditDraft {
    #[serde(with = "audit::rfc3339")]
    pub occurred_at: Timestamp,
    /// The key id of the actor (`key_3`), or `system`.
    pub actor: String,
    pub actor_role: Option<String>,
    #[serde(with = "audit::opt_tenant")]
    pub tenant_id: Option<TenantId>,
    /// e.g. `allocation_policy.create`, `api_key.create`, `gpu_samples.ingest`.
    pub action: String,
    /// `allow` or `deny`.
    pub decision: String,
    pub resource: Option<String>,
    pub request_id: Option<String>,
    /// Free-form JSON object with the facts of the event (never a secret).
    pub details: serde_json::Value,
}

impl AuditDraft {
    /// An event of the platform itself (the allocation batch, the bootstrap key, a command), not of a caller.
    pub fn system(actor: &str, action: &str, at: Timestamp, details: serde_json::Value) -> Self {
        AuditDraft {
            occurred_at: at,
            actor: actor.to_string(),
            actor_role: None,
            tenant_id: None,
            action: action.to_string(),
            decision: "allow".to_string(),
            resource: None,
            request_id: None,
            details,
        }
    }
}

/// A linked audit event (see [`audit`] for what the hash covers).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditEvent {
    pub seq: u64,
    pub draft: AuditDraft,
    pub prev_hash: String,
    pub hash: String,
}

/// Where a chain breaks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokenLink {
    pub seq: u64,
    pub reason: String,
}

/// A deployment seen in samples (for the providers catalog).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeploymentSeen {
    pub deployment_id: String,
    pub namespace: String,
    pub model: String,
    pub first_seen: Timestamp,
    pub last_seen: Timestamp,
    /// The owners its samples named (`None`: shared), sorted: a tenant reader sees a deployment that is shared
    /// or its own.
    pub owners: Vec<Option<TenantId>>,
}

/// The latest stored sample of each GPU seen recently: what `/metrics` shows of each GPU.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LatestSamples {
    /// One per GPU (or MIG slice), the newest first (equal ends by uuid), at most the limit asked for.
    pub samples: Vec<Sample>,
    /// The GPUs whose latest sample ended at or after the instant asked for, listed or left out by the limit.
    pub gpus: u64,
}

/// The latest window end stored for a node (of any of its GPUs): a node whose sampler stopped shows an old one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeSeen {
    pub node: String,
    pub last_seen: Timestamp,
}

/// What a ClickHouse replica holds of a period `[from, to)`, read from one snapshot of the primary for
/// `eai-gpu replica backfill` (a replica added to an existing database): the raw samples ending in it (those
/// the retention kept), the per-GPU rollups of its buckets, the gaps that start in it, in no particular order (a replica
/// keys its rows itself). Usage events are read with [`UsageStore::usage_events`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReplicaRows {
    pub samples: Vec<Sample>,
    pub rollups: Vec<Rollup>,
    pub gaps: Vec<Gap>,
    /// The group rollups (`deployment_rollups`) of the period, their GPU sets named.
    pub groups: Vec<Rollup>,
    /// The usage claims of the period, each with the count of events it sums.
    pub claims: Vec<(UsageClaim, i64)>,
}

/// What the allocation reads for a period: group rollups (per-GPU rollups or raw cells where a bucket must be
/// priced exactly), gaps, and every tenant's usage as hourly claims (see [`rollups::groups`]).
#[derive(Debug, Clone, Default)]
pub struct UsageRead {
    pub rollups: Vec<Rollup>,
    pub gaps: Vec<Gap>,
    pub claims: Vec<UsageClaim>,
}

impl UsageRead {
    /// The read in the one order every backend answers in: rollups by hour, then key and first window
    /// ([`rollups::sort_for_read`]), gaps by their order, claims by hour, deployment and tenant
    /// ([`UsageClaim::read_order`](eai_engine::allocate::UsageClaim::read_order), the order of
    /// `eai_engine::allocate::sum_claims`). Both are the primary keys' order of the tables read, so that a
    /// range scan answers in order and these sorts only confirm it.
    pub fn in_order(mut self) -> Self {
        rollups::sort_for_read(&mut self.rollups);
        self.gaps.sort();
        self.claims
            .sort_by(|a, b| a.read_order().cmp(&b.read_order()));
        self
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The caller asked for something that does not exist.
    #[error("not found: {0}")]
    NotFound(String),
    /// The request conflicts with stored state (e.g. superseding a closed policy): the field of the request in
    /// conflict (`effective_to`, `tenant_id`, `slug`...) and why. The reason names nothing of another tenant.
    #[error("conflict: {field}: {reason}")]
    Conflict { field: String, reason: String },
    /// The change would touch what the caller may not (the allocation batch's record of a charge).
    #[error("forbidden: {0}")]
    Forbidden(String),
    /// Records of a batch that cannot be stored as sent, each located (index in the batch) with its reason; nothing
    /// of the batch was stored.
    #[error("refused: {0:?}")]
    Refused(Vec<eai_engine::error::FieldError>),
    /// Anything the caller cannot fix: I/O, a corrupt file. Its text is for logs only.
    #[error("storage failure: {0}")]
    Internal(String),
    /// The database cannot be reached now (connection refused or lost, the server shutting down or starting,
    /// no free connection): the same call may be retried as it is (its transaction was rolled back, or, the
    /// connection lost during the commit itself, committed: a re-sent batch then counts duplicates). Its text is
    /// for logs only.
    #[error("storage unavailable: {0}")]
    Unavailable(String),
    /// The disk holding the store is full: nothing of the call was committed, and the same call may be retried
    /// once space is freed. Its text is for logs only.
    #[error("storage full: {0}")]
    Full(String),
}

impl StoreError {
    /// A [`StoreError::Conflict`] on `field`.
    pub fn conflict(field: &str, reason: impl Into<String>) -> Self {
        StoreError::Conflict {
            field: field.to_string(),
            reason: reason.into(),
        }
    }
}

pub type Result<T> = std::result::Result<T, StoreError>;
