//! eai-store: where eai-gpu keeps samples, rollups, usage events, policies, API keys and the audit chain.
//!
//! One [`Store`] contract, several backends: the embedded SQLite file (default, zero setup) and PostgreSQL
//! (production, row level security). Every method that reads tenant data takes a [`Scope`] first.
//!
//! The modules, in layers (each uses only its own layer and those above it, and no module circles back):
//!
//! 1. this root (the trait and the types it speaks), [`codec`] (how values are stored), [`audit`] (the hash
//!    chain), [`lease`] (the one-replica jobs);
//! 2. the rules of records both backends share: [`records`] (events, policies, keys, tenants), [`budgets`],
//!    [`providers`]; [`rollups`] (per-GPU rollups, group rollups and claims, what pruning keeps); [`cache`] (the
//!    read caches); [`clickhouse`] (the replica) and [`outbox`] (the replica rows of each change);
//! 3. [`plan`]: every change planned once without I/O (ingest, prune, usage upsert, the others);
//! 4. the backends, [`sqlite`] and [`postgres`], which read what a plan asks for and write what it returns; and
//!    `testing` (feature `test-support`: a throwaway CA, a TLS-only PostgreSQL cluster).

use async_trait::async_trait;
use eai_engine::allocate::UsageClaim;
use eai_engine::domain::{Policy, PolicySpec, Sample, Tenant, TenantId, UsageEvent};
use eai_engine::gpu_usage::GpuUsage;
use eai_engine::report::Gap;
use eai_engine::rollup::Rollup;
use eai_engine::time::Timestamp;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

pub use crate::clickhouse::OutboxEntry;
pub use crate::outbox::OutboxStats;

pub mod audit;
pub mod budgets;
pub mod cache;
pub mod clickhouse;
pub mod codec;
pub mod lease;
pub mod outbox;
pub mod plan;
pub mod postgres;
pub mod providers;
pub mod records;
pub mod rollups;
pub mod sqlite;
#[cfg(feature = "test-support")]
pub mod testing;

pub use crate::cache::{read_cache, usage_cache};

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
/// keys its rows itself). Usage events are read with [`Store::usage_events`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReplicaRows {
    pub samples: Vec<Sample>,
    pub rollups: Vec<Rollup>,
    pub gaps: Vec<Gap>,
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

/// The storage contract. Implementations are cheap to clone behind an `Arc` and safe to share.
#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// Which backend (`sqlite`, `postgres`), for `/readyz` and logs.
    fn backend(&self) -> &'static str;

    /// Cheap liveness check of the storage.
    async fn ping(&self) -> Result<()>;

    /// Takes, or checks that this process still holds, the lease of `job` (see [`lease`]): true when this
    /// process is the one replica that runs it now. Cheap enough to call before each run of a job. The
    /// embedded SQLite store is one process per file: it always leads.
    async fn try_lead(&self, job: lease::LeaderJob) -> Result<bool> {
        let _ = job;
        Ok(true)
    }

    // --- GPU samples ---------------------------------------------------------------------------------------

    /// Stores a validated batch atomically and idempotently on `(gpu_uuid, timestamp)` (first received wins),
    /// and brings the hourly rollups and gaps of every touched GPU-hour up to date in the same transaction.
    ///
    /// Every change takes its audit event: the store completes it with what only the change knows (counts, ids;
    /// [`audit::completed`]) and appends it to the chain in the change's own transaction, so that a change is
    /// never stored unaudited nor audited unstored.
    async fn insert_samples(&self, samples: &[Sample], audit: &AuditDraft)
        -> Result<IngestOutcome>;

    /// [`Store::insert_samples`] of a batch the caller hands over: a store that writes on another thread takes
    /// it there without a copy (ten thousand samples are sixty thousand strings).
    async fn insert_samples_owned(
        &self,
        samples: Vec<Sample>,
        audit: &AuditDraft,
    ) -> Result<IngestOutcome> {
        self.insert_samples(&samples, audit).await
    }

    /// Rollups of every GPU-hour whose bucket starts in `[from, to)`, plus the gaps that touch the period.
    /// Hours listed in `exact_hours` (where a policy starts or ends inside the hour) come back as raw cells
    /// instead, recomputed from raw samples, so that they are priced window by window.
    async fn usage_for(
        &self,
        from: Timestamp,
        to: Timestamp,
        exact_hours: &[Timestamp],
    ) -> Result<UsageRead>;

    /// The equal shares (samples split equally between the pods of a shared GPU) of the hours in `[from, to)`,
    /// per hour and deployment, as ingest tallied them ([`eai_engine::shares`]).
    async fn equal_shares(
        &self,
        from: Timestamp,
        to: Timestamp,
    ) -> Result<Vec<eai_engine::shares::EqualShares>>;

    /// The per-GPU rollups of the buckets in `[from, to)` that `scope` may see (a tenant: the rows of its dedicated
    /// deployments), each with its placement (the pod, namespace and node it ran in), in the compact form a
    /// breakdown reads (chunks in bucket order; the labels of rows `scope` may not see hidden, or absent).
    /// Hours listed in `exact_hours` that still have their raw samples come back as raw cells per GPU instead, as
    /// in [`Store::usage_for`], so that a breakdown prices them as the allocation does.
    async fn gpu_usage(
        &self,
        scope: Scope,
        from: Timestamp,
        to: Timestamp,
        exact_hours: &[Timestamp],
    ) -> Result<GpuUsage>;

    /// Deletes raw samples that ended before `before` (rollups are kept). Returns the rows deleted.
    async fn prune_raw_samples(&self, before: Timestamp) -> Result<u64>;

    /// Deployments seen in samples, with the namespace and model last seen.
    async fn deployments_seen(&self) -> Result<Vec<DeploymentSeen>>;

    /// The latest stored sample of each GPU (or MIG slice) whose latest window ended at or after `since`, the
    /// newest first (equal ends by uuid), at most `limit` of them, with the number of such GPUs (platform data:
    /// every tenant's GPUs). Pruning keeps each GPU's latest sample, so this never depends on the retention.
    async fn latest_samples(&self, since: Timestamp, limit: u64) -> Result<LatestSamples>;

    /// Per node, the latest window end stored for any of its GPUs, for the nodes seen at or after `since`, by
    /// node name.
    async fn nodes_last_seen(&self, since: Timestamp) -> Result<Vec<NodeSeen>>;

    /// The span a replica has rows of: from the earliest of sample ends, rollup buckets, gap starts and event
    /// times, to just past the latest (a rollup counts to its bucket's end); `None` when the store holds none.
    async fn replica_extent(&self) -> Result<Option<(Timestamp, Timestamp)>>;

    /// The replica's rows of `[from, to)` ([`ReplicaRows`]), from one snapshot, on the platform path.
    async fn replica_rows(&self, from: Timestamp, to: Timestamp) -> Result<ReplicaRows>;

    // --- usage events --------------------------------------------------------------------------------------

    /// Upserts by `(tenant_id, event_id)`: a re-sent event replaces the stored one, never doubles; an event of
    /// the allocation batch (`source: allocation`) is only ever replaced by another one
    /// ([`StoreError::Forbidden`]). Returns rows written.
    async fn upsert_usage_events(&self, events: &[UsageEvent], audit: &AuditDraft) -> Result<u64>;

    /// Usage events with `occurred_at` in `[from, to)`, of one tenant or all.
    async fn usage_events(
        &self,
        scope: Scope,
        from: Timestamp,
        to: Timestamp,
    ) -> Result<Vec<UsageEvent>>;

    // --- allocation policies -------------------------------------------------------------------------------

    /// Stores a new policy; the store assigns `alp_<seq>`.
    async fn create_policy(&self, spec: &PolicySpec, audit: &AuditDraft) -> Result<Policy>;

    /// Every policy, closed ones included, oldest first.
    async fn policies(&self) -> Result<Vec<Policy>>;

    /// Closes policy `id` at `at` (sets `effective_to`) and, when `replacement` is given, opens it in the same
    /// transaction. Never edits pricing in place. Returns (closed, opened).
    async fn supersede_policy(
        &self,
        id: &str,
        at: Timestamp,
        replacement: Option<&PolicySpec>,
        audit: &AuditDraft,
    ) -> Result<(Policy, Option<Policy>)>;

    // --- API keys ------------------------------------------------------------------------------------------

    /// Stores a key (hash only); the store assigns `key_<n>`.
    async fn create_api_key(&self, key: &NewApiKey, audit: &AuditDraft) -> Result<ApiKeyRecord>;

    /// The key whose current secret, or whose previous secret (within its rotation's grace period or not: the
    /// caller decides), hashes to `hash`.
    async fn api_key_by_hash(&self, hash: &str) -> Result<Option<KeyMatch>>;

    async fn api_key_count(&self) -> Result<u64>;

    /// Every key (platform) or a tenant's keys, oldest first.
    async fn api_keys(&self, scope: Scope) -> Result<Vec<ApiKeyRecord>>;

    /// Revokes key `id` at `at` (within `scope`: another tenant's key is [`StoreError::NotFound`]).
    async fn revoke_api_key(
        &self,
        scope: Scope,
        id: &str,
        at: Timestamp,
        audit: &AuditDraft,
    ) -> Result<ApiKeyRecord>;

    /// Gives key `id` the secret hashing to `new_hash`; the old secret keeps working until `grace_until`.
    async fn rotate_api_key(
        &self,
        scope: Scope,
        id: &str,
        new_hash: &str,
        at: Timestamp,
        grace_until: Timestamp,
        audit: &AuditDraft,
    ) -> Result<ApiKeyRecord>;

    // --- tenants -------------------------------------------------------------------------------------------

    /// Registers a tenant (its slug unique and immutable; the reserved platform tenant refused).
    async fn create_tenant(&self, tenant: &Tenant, audit: &AuditDraft) -> Result<Tenant>;

    /// Every registered tenant (platform) or the caller's own (if registered), by slug.
    async fn tenants(&self, scope: Scope) -> Result<Vec<Tenant>>;

    /// The registered tenant with this id or slug, looked up on the platform path (before a caller's tenant is
    /// known: the `X-EAI-Tenant` header names one).
    async fn tenant(&self, key: &TenantRef) -> Result<Option<Tenant>>;

    // --- providers -----------------------------------------------------------------------------------------

    /// Stores (or replaces) a deployment's provider registration with its audit event.
    async fn register_provider(
        &self,
        provider: &providers::ProviderRecord,
        audit: &AuditDraft,
    ) -> Result<providers::ProviderRecord>;

    /// Every registered provider, by deployment id.
    async fn providers(&self) -> Result<Vec<providers::ProviderRecord>>;

    // --- audit ---------------------------------------------------------------------------------------------

    /// Appends an event that records no change of the store (a denied request, a failed one, a run of the
    /// allocation batch that wrote nothing) to the hash chain atomically (the previous hash is read and the new
    /// event written in one transaction, so concurrent appends never fork the chain).
    async fn append_audit(&self, draft: &AuditDraft) -> Result<AuditEvent>;

    /// The newest event's sequence and hash (`None`: an empty chain).
    async fn audit_head(&self) -> Result<Option<AuditHead>>;

    /// Events with `seq > after`, oldest first, at most `limit`; filtered to a tenant when scoped.
    async fn audit_events(&self, scope: Scope, after: u64, limit: u64) -> Result<Vec<AuditEvent>>;

    /// Walks the whole chain; `None` when intact, else the first broken link. With `expect`, a head anchored
    /// earlier outside the database: the chain must still hold that event with that hash (a cut tail or a
    /// recomputed chain is a broken link).
    async fn verify_audit_chain(&self, expect: Option<&AuditHead>) -> Result<Option<BrokenLink>>;

    // --- budgets and reservations (see [`budgets`]) -------------------------------------------------------

    /// Stores a new budget; the store assigns `bud_<seq>`.
    async fn create_budget(
        &self,
        budget: &budgets::NewBudget,
        audit: &AuditDraft,
    ) -> Result<budgets::BudgetRecord>;

    /// Every budget (platform) or a tenant's, closed ones included, oldest first.
    async fn budgets(&self, scope: Scope) -> Result<Vec<budgets::BudgetRecord>>;

    /// Closes budget `id` at `at` and, when `replacement` is given (same tenant), opens it in the same
    /// transaction (its webhook secret carried over). Another tenant's budget is [`StoreError::NotFound`].
    async fn supersede_budget(
        &self,
        scope: Scope,
        id: &str,
        at: Timestamp,
        replacement: Option<&eai_engine::budget::BudgetSpec>,
        audit: &AuditDraft,
    ) -> Result<(budgets::BudgetRecord, Option<budgets::BudgetRecord>)>;

    /// The budgets in force at `at` (of the scope), with the spend of `at`'s month and the open holds.
    async fn budget_standings(
        &self,
        scope: Scope,
        at: Timestamp,
    ) -> Result<Vec<eai_engine::budget::Standing>>;

    /// Decides a reservation against its tenant's enforcing budgets and, when granted, holds it: atomically
    /// (concurrent requests never over-grant). A refusal stores nothing (the caller audits it).
    async fn reserve(
        &self,
        request: &budgets::NewReservation,
        audit: &AuditDraft,
    ) -> Result<budgets::ReserveOutcome>;

    /// A reservation (another tenant's is `None` under a tenant scope).
    async fn reservation(&self, scope: Scope, id: &str) -> Result<Option<budgets::Reservation>>;

    /// Commits a reservation with its actual amounts: writes its usage event and frees the hold, in one
    /// transaction; a committed one is returned as it is (idempotent).
    async fn commit_reservation(
        &self,
        scope: Scope,
        id: &str,
        actual: eai_engine::budget::Amounts,
        at: Timestamp,
        audit: &AuditDraft,
    ) -> Result<budgets::Reservation>;

    /// Frees a held reservation; a released or expired one is returned as it is.
    async fn release_reservation(
        &self,
        scope: Scope,
        id: &str,
        at: Timestamp,
        audit: &AuditDraft,
    ) -> Result<budgets::Reservation>;

    /// Marks holds past their expiry as expired (they stopped counting at their expiry already). Returns how
    /// many; audited as one event when any.
    async fn expire_reservations(&self, at: Timestamp) -> Result<u64>;

    /// Records the thresholds the budgets in force at `at` have reached this month and not recorded yet, each
    /// with its audit event (`budget.threshold_crossed`), in one transaction. Returns the new alerts.
    async fn record_crossings(&self, at: Timestamp) -> Result<Vec<budgets::Alert>>;

    /// Alerts whose budget has a webhook, not delivered yet, due at `at`, oldest first.
    async fn due_deliveries(&self, at: Timestamp, limit: u64) -> Result<Vec<budgets::Delivery>>;

    /// Records a delivery attempt: delivered, or failed with the next attempt's time (`None`: given up).
    async fn delivery_attempted(
        &self,
        alert: Uuid,
        at: Timestamp,
        outcome: std::result::Result<(), String>,
        next: Option<Timestamp>,
    ) -> Result<()>;

    // --- replica outbox ------------------------------------------------------------------------------------

    /// The oldest `limit` outbox entries not acknowledged yet, in sequence order (platform data: every
    /// tenant's rows). Empty when the store was opened without the outbox.
    async fn outbox_pending(&self, limit: u64) -> Result<Vec<OutboxEntry>>;

    /// Acknowledges (deletes) every entry with `seq <= through`, once the replica has stored them. Returns the
    /// entries deleted.
    async fn outbox_ack(&self, through: u64) -> Result<u64>;

    /// How many entries wait and since when.
    async fn outbox_stats(&self) -> Result<OutboxStats>;
}
