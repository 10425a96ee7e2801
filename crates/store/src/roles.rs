//! The storage contract in roles (the model is tikv's `engine_traits`): one trait per kind of record, [`Store`]
//! their sum. A handler or a job takes the narrow role it uses (`&dyn BudgetStore`, `&dyn SampleStore`…); the
//! server holds one `Arc<dyn Store>`.
//!
//! Each backend implements the roles beside its SQL (`sqlite/…`, `postgres/…`). What every method does around
//! the backend, tracing and the scope check, is written once, in the decorator [`Observed`]: the one public
//! way to open a backend ([`crate::sqlite::SqliteStore`], [`crate::postgres::PgStore`]) returns it.
//!
//! Scope check: a read under a scope that can see no row ([`Scope::reads_nothing`]: the reserved platform
//! tenant, which no tenant acts as) is answered empty by the decorator, before the backend is asked, as it
//! would be for a tenant with no rows; the backends never see such a read.

use async_trait::async_trait;
use eai_engine::budget::{Amounts, BudgetSpec, Standing};
use eai_engine::domain::{Policy, PolicySpec, Sample, Tenant, TenantId, UsageEvent};
use eai_engine::gpu_usage::GpuUsage;
use eai_engine::shares::EqualShares;
use eai_engine::time::Timestamp;
use uuid::Uuid;

use crate::anomalies::{Anomaly, NewAnomaly};
use crate::budgets::{
    Alert, BudgetRecord, Delivery, NewBudget, NewReservation, Reservation, ReserveOutcome,
};
use crate::idempotency::{Claim, Claimed, StoredAnswer};
use crate::lease::LeaderJob;
use crate::providers::ProviderRecord;
use crate::statements::{NewStatement, Statement, StatementNumber};
use crate::{
    ApiKeyRecord, AuditDraft, AuditEvent, AuditHead, BrokenLink, DeploymentSeen, IngestOutcome,
    KeyMatch, LatestSamples, NewApiKey, NodeSeen, OutboxEntry, OutboxStats, ReplicaRows, Result,
    Scope, TenantRef, UsageRead,
};

/// A backend behind the decorator: its roles, each traced (a `store.<method>` span, `otel.kind = client`,
/// `db.system` the backend) and scope-checked once, here. Dereferences to the backend for what is not a
/// role (a file's path, a backup).
#[derive(Clone)]
pub struct Observed<S> {
    inner: S,
    system: &'static str,
}

impl<S> Observed<S> {
    /// Wraps a backend; `system` is its OpenTelemetry `db.system` (`sqlite`, `postgresql`).
    pub(crate) fn new(inner: S, system: &'static str) -> Self {
        Observed { inner, system }
    }
}

impl<S> std::ops::Deref for Observed<S> {
    type Target = S;
    fn deref(&self) -> &S {
        &self.inner
    }
}

impl<S: std::fmt::Debug> std::fmt::Debug for Observed<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.inner.fmt(f)
    }
}

/// Declares the role traits and the decorator's implementation of each, from one list of methods. A method
/// marked `[scoped]` takes the read's [`Scope`] first and is answered empty when that scope reads nothing.
macro_rules! roles {
    ($(
        $(#[$tattr:meta])*
        pub trait $role:ident {
            $(
                $(#[$mattr:meta])*
                $([$scoped:ident])?
                async fn $name:ident(&self $(, $arg:ident : $ty:ty)*) -> $ret:ty;
            )*
        }
    )*) => {
        $(
            $(#[$tattr])*
            #[async_trait]
            pub trait $role: Send + Sync + 'static {
                $( $(#[$mattr])* async fn $name(&self $(, $arg: $ty)*) -> $ret; )*
            }

            #[async_trait]
            impl<S: $role> $role for Observed<S> {
                $(
                    async fn $name(&self $(, $arg: $ty)*) -> $ret {
                        roles!(@guard $($scoped)? ; $($arg),*);
                        let span = tracing::info_span!(
                            concat!("store.", stringify!($name)),
                            otel.kind = "client",
                            db.system = self.system,
                        );
                        tracing::Instrument::instrument(self.inner.$name($($arg),*), span).await
                    }
                )*
            }
        )*
    };
    (@guard scoped ; $scope:ident $(, $rest:ident)*) => {
        if $scope.reads_nothing() {
            return Ok(Default::default());
        }
    };
    (@guard ; $($arg:ident),*) => {};
}

roles! {
    /// GPU samples, their rollups and gaps, and what the allocation and the breakdown read of them.
    pub trait SampleStore {
        /// Stores a validated batch atomically and idempotently on `(gpu_uuid, timestamp)` (first received
        /// wins), and brings the hourly rollups and gaps of every touched GPU-hour up to date in the same
        /// transaction. The batch is handed over: a store that writes on another thread takes it there without
        /// a copy (ten thousand samples are sixty thousand strings).
        ///
        /// Every change takes its audit event: the store completes it with what only the change knows (counts,
        /// ids; [`crate::audit::completed`]) and appends it to the chain in the change's own transaction, so
        /// that a change is never stored unaudited nor audited unstored.
        async fn insert_samples(&self, samples: Vec<Sample>, audit: &AuditDraft) -> Result<IngestOutcome>;

        /// What the allocation (`GET /v1/finops/gpu/allocation`) reads of a period: the rollups of every
        /// GPU-hour whose bucket starts in `[from, to)`, plus the gaps that touch the period. Hours listed in
        /// `exact_hours` (where a policy starts or ends inside the hour) come back as raw cells instead,
        /// recomputed from raw samples, so that they are priced window by window.
        async fn allocation_usage(&self, from: Timestamp, to: Timestamp, exact_hours: &[Timestamp]) -> Result<UsageRead>;

        /// The equal shares (samples split equally between the pods of a shared GPU) of the hours in
        /// `[from, to)`, per hour and deployment, as ingest tallied them ([`eai_engine::shares`]).
        async fn equal_shares(&self, from: Timestamp, to: Timestamp) -> Result<Vec<EqualShares>>;

        /// What the breakdown (`GET /v1/finops/gpu/usage`) reads: the per-GPU rollups of the buckets in
        /// `[from, to)` that `scope` may see (a tenant: the rows of its dedicated deployments), each with its
        /// placement (the pod, namespace and node it ran in), in compact chunks in bucket order (the labels of
        /// rows `scope` may not see hidden, or absent). Hours listed in `exact_hours` that still have their raw
        /// samples come back as raw cells per GPU instead, as in [`SampleStore::allocation_usage`].
        [scoped] async fn gpu_usage(&self, scope: Scope, from: Timestamp, to: Timestamp, exact_hours: &[Timestamp]) -> Result<GpuUsage>;

        /// Deletes raw samples that ended before `before` (rollups are kept). Returns the rows deleted.
        async fn prune_raw_samples(&self, before: Timestamp) -> Result<u64>;

        /// Deployments seen in samples, with the namespace and model last seen.
        async fn deployments_seen(&self) -> Result<Vec<DeploymentSeen>>;

        /// The latest stored sample of each GPU (or MIG slice) whose latest window ended at or after `since`,
        /// the newest first (equal ends by uuid), at most `limit` of them, with the number of such GPUs
        /// (platform data: every tenant's GPUs). Pruning keeps each GPU's latest sample, so this never depends
        /// on the retention.
        async fn latest_samples(&self, since: Timestamp, limit: u64) -> Result<LatestSamples>;

        /// Per node, the latest window end stored for any of its GPUs, for the nodes seen at or after `since`,
        /// by node name.
        async fn nodes_last_seen(&self, since: Timestamp) -> Result<Vec<NodeSeen>>;
    }

    /// Usage events (tokens, requests) per tenant.
    pub trait UsageStore {
        /// Upserts by `(tenant_id, event_id)`: a re-sent event replaces the stored one, never doubles; an event
        /// of the allocation batch (`source: allocation`) is only ever replaced by another one
        /// ([`crate::StoreError::Forbidden`]). Returns rows written.
        async fn upsert_usage_events(&self, events: &[UsageEvent], audit: &AuditDraft) -> Result<u64>;

        /// Usage events with `occurred_at` in `[from, to)`, of one tenant or all.
        [scoped] async fn usage_events(&self, scope: Scope, from: Timestamp, to: Timestamp) -> Result<Vec<UsageEvent>>;
    }

    /// What prices GPU time: allocation policies, and the registered inference providers.
    pub trait PolicyStore {
        /// Stores a new policy; the store assigns `alp_<seq>`.
        async fn create_policy(&self, spec: &PolicySpec, audit: &AuditDraft) -> Result<Policy>;

        /// Every policy, closed ones included, oldest first.
        async fn policies(&self) -> Result<Vec<Policy>>;

        /// Closes policy `id` at `at` (sets `effective_to`) and, when `replacement` is given, opens it in the
        /// same transaction. Never edits pricing in place. Returns (closed, opened).
        async fn supersede_policy(&self, id: &str, at: Timestamp, replacement: Option<&PolicySpec>, audit: &AuditDraft) -> Result<(Policy, Option<Policy>)>;

        /// Stores (or replaces) a deployment's provider registration with its audit event.
        async fn register_provider(&self, provider: &ProviderRecord, audit: &AuditDraft) -> Result<ProviderRecord>;

        /// Every registered provider, by deployment id.
        async fn providers(&self) -> Result<Vec<ProviderRecord>>;
    }

    /// API keys (their hashes only).
    pub trait KeyStore {
        /// Stores a key (hash only); the store assigns `key_<n>`.
        async fn create_api_key(&self, key: &NewApiKey, audit: &AuditDraft) -> Result<ApiKeyRecord>;

        /// The key whose current secret, or whose previous secret (within its rotation's grace period or not:
        /// the caller decides), hashes to `hash`.
        async fn api_key_by_hash(&self, hash: &str) -> Result<Option<KeyMatch>>;

        /// How many keys are stored (revoked ones included).
        async fn api_key_count(&self) -> Result<u64>;

        /// Every key (platform) or a tenant's keys, oldest first.
        [scoped] async fn api_keys(&self, scope: Scope) -> Result<Vec<ApiKeyRecord>>;

        /// Revokes key `id` at `at` (within `scope`: another tenant's key is [`crate::StoreError::NotFound`]).
        async fn revoke_api_key(&self, scope: Scope, id: &str, at: Timestamp, audit: &AuditDraft) -> Result<ApiKeyRecord>;

        /// Gives key `id` its new secret at `secret.at`; the old secret keeps working until `secret.grace_until`.
        async fn rotate_api_key(&self, scope: Scope, id: &str, secret: &NewSecret, audit: &AuditDraft) -> Result<ApiKeyRecord>;
    }

    /// Tenants.
    pub trait TenantStore {
        /// Registers a tenant (its slug unique and immutable; the reserved platform tenant refused).
        async fn create_tenant(&self, tenant: &Tenant, audit: &AuditDraft) -> Result<Tenant>;

        /// Every registered tenant (platform) or the caller's own (if registered), by slug.
        [scoped] async fn tenants(&self, scope: Scope) -> Result<Vec<Tenant>>;

        /// The registered tenant with this id or slug, looked up on the platform path (before a caller's tenant
        /// is known: the `X-EAI-Tenant` header names one).
        async fn tenant(&self, key: &TenantRef) -> Result<Option<Tenant>>;
    }

    /// Budgets, reservations, and the alerts of their thresholds (see [`crate::budgets`]).
    pub trait BudgetStore {
        /// Stores a new budget; the store assigns `bud_<seq>`.
        async fn create_budget(&self, budget: &NewBudget, audit: &AuditDraft) -> Result<BudgetRecord>;

        /// Every budget (platform) or a tenant's, closed ones included, oldest first.
        [scoped] async fn budgets(&self, scope: Scope) -> Result<Vec<BudgetRecord>>;

        /// Closes budget `id` at `at` and, when `replacement` is given (same tenant), opens it in the same
        /// transaction (its webhook secret carried over). Another tenant's budget is
        /// [`crate::StoreError::NotFound`].
        async fn supersede_budget(&self, scope: Scope, id: &str, at: Timestamp, replacement: Option<&BudgetSpec>, audit: &AuditDraft) -> Result<(BudgetRecord, Option<BudgetRecord>)>;

        /// The budgets in force at `at` (of the scope), with the spend of `at`'s month and the open holds.
        [scoped] async fn budget_standings(&self, scope: Scope, at: Timestamp) -> Result<Vec<Standing>>;

        /// Decides a reservation against its tenant's enforcing budgets and, when granted, holds it: atomically
        /// (concurrent requests never over-grant). A refusal stores nothing (the caller audits it).
        async fn reserve(&self, request: &NewReservation, audit: &AuditDraft) -> Result<ReserveOutcome>;

        /// A reservation (another tenant's is `None` under a tenant scope).
        [scoped] async fn reservation(&self, scope: Scope, id: &str) -> Result<Option<Reservation>>;

        /// Commits a reservation with its actual amounts: writes its usage event and frees the hold, in one
        /// transaction; a committed one is returned as it is (idempotent).
        async fn commit_reservation(&self, scope: Scope, id: &str, actual: Amounts, at: Timestamp, audit: &AuditDraft) -> Result<Reservation>;

        /// Frees a held reservation; a released or expired one is returned as it is.
        async fn release_reservation(&self, scope: Scope, id: &str, at: Timestamp, audit: &AuditDraft) -> Result<Reservation>;

        /// Marks holds past their expiry as expired (they stopped counting at their expiry already). Returns
        /// how many; audited as one event when any.
        async fn expire_reservations(&self, at: Timestamp) -> Result<u64>;

        /// Records the thresholds the budgets in force at `at` have reached this month and not recorded yet,
        /// each with its audit event (`budget.threshold_crossed`), in one transaction. Returns the new alerts.
        async fn record_crossings(&self, at: Timestamp) -> Result<Vec<Alert>>;

        /// Records a forecast alert ([`crate::budgets::Alert::forecast`]) unless its budget has one for its month
        /// already, with its audit event (`budget.forecast_exceeded`), in one transaction. Returns whether it was
        /// recorded.
        async fn record_forecast_alert(&self, alert: &Alert) -> Result<bool>;

        /// Alerts whose budget has a webhook, not delivered yet, due at `at`, oldest first.
        async fn due_deliveries(&self, at: Timestamp, limit: u64) -> Result<Vec<Delivery>>;

        /// Records a delivery attempt: delivered, or failed with the next attempt's time (`None`: given up).
        async fn delivery_attempted(&self, alert: Uuid, at: Timestamp, outcome: std::result::Result<(), String>, next: Option<Timestamp>) -> Result<()>;
    }

    /// Spend anomalies (see [`crate::anomalies`]): recorded once each, listed, posted to the anomaly webhook.
    pub trait AnomalyStore {
        /// Records `finding` unless its (deployment, hour, metric, currency) has one already (insert if
        /// absent): the new anomaly, or `None` when it was recorded before.
        async fn record_anomaly(&self, finding: &NewAnomaly) -> Result<Option<Anomaly>>;

        /// The anomalies of the hours in `[from, to)`, newest hour first; a tenant's are those of its dedicated
        /// deployments.
        [scoped] async fn anomalies(&self, scope: Scope, from: Timestamp, to: Timestamp) -> Result<Vec<Anomaly>>;

        /// Anomalies to post, not delivered yet, due at `at`, oldest first.
        async fn due_anomaly_webhooks(&self, at: Timestamp, limit: u64) -> Result<Vec<Anomaly>>;

        /// Records a webhook attempt of anomaly `seq`: delivered, or failed with the next attempt's time
        /// (`None`: given up).
        async fn anomaly_webhook_attempted(&self, seq: i64, at: Timestamp, outcome: std::result::Result<(), String>, next: Option<Timestamp>) -> Result<()>;
    }

    /// Statements (see [`crate::statements`]): a tenant's closed month as issued, numbered, never changed.
    pub trait StatementStore {
        /// Issues `statement` unless its (tenant, month) has one already (insert if absent), with the next
        /// number of its month and its audit event (`audit` completed, [`crate::statements::issued_audit`]) in
        /// one transaction: (the new statement, true), or (the one issued before, false). Concurrent issues of
        /// one statement store it once; the loser reads the winner's.
        async fn issue_statement(&self, statement: &NewStatement, audit: &AuditDraft) -> Result<(Statement, bool)>;

        /// The issued statements the scope may see (a tenant: its own), of the month starting at `month` and of
        /// `tenant` when given, the newest month first, then in the order they were issued.
        [scoped] async fn statements(&self, scope: Scope, month: Option<Timestamp>, tenant: Option<TenantId>) -> Result<Vec<Statement>>;

        /// The statement numbered `number`, if the scope may see it (another tenant's is `None`).
        [scoped] async fn statement(&self, scope: Scope, number: &str) -> Result<Option<Statement>>;

        /// The numbers of the statements the scope may see whose month overlaps `[from, to)`, with their tenant
        /// and month start, by month then number: the FOCUS `InvoiceId` of the rows of that tenant and month.
        [scoped] async fn statement_numbers(&self, scope: Scope, from: Timestamp, to: Timestamp) -> Result<Vec<StatementNumber>>;
    }

    /// The audit chain.
    pub trait AuditStore {
        /// Appends an event that records no change of the store (a denied request, a failed one, a run of the
        /// allocation batch that wrote nothing) to the hash chain atomically (the previous hash is read and the
        /// new event written in one transaction, so concurrent appends never fork the chain).
        async fn append_audit(&self, draft: &AuditDraft) -> Result<AuditEvent>;

        /// The newest event's sequence and hash (`None`: an empty chain).
        async fn audit_head(&self) -> Result<Option<AuditHead>>;

        /// Events with `seq > after`, oldest first, at most `limit`; filtered to a tenant when scoped.
        [scoped] async fn audit_events(&self, scope: Scope, after: u64, limit: u64) -> Result<Vec<AuditEvent>>;

        /// Walks the whole chain; `None` when intact, else the first broken link. With `expect`, a head
        /// anchored earlier outside the database: the chain must still hold that event with that hash (a cut
        /// tail or a recomputed chain is a broken link).
        async fn verify_audit_chain(&self, expect: Option<&AuditHead>) -> Result<Option<BrokenLink>>;
    }

    /// Idempotency keys (see [`crate::idempotency`]): claimed before a request runs, completed with its
    /// answer or released, kept for the retention.
    pub trait IdempotencyStore {
        /// Claims `claim.key` for `claim.caller` atomically (insert if absent; on PostgreSQL two replicas never
        /// both get [`Claimed::Run`] for one key), or says what the row already there answers
        /// ([`crate::idempotency::decide`]): an abandoned claim of the same request (claimed before
        /// `claim.stale_before`, never completed) is taken over.
        async fn claim_idempotency_key(&self, claim: &Claim) -> Result<Claimed>;

        /// Stores the answer of the request that holds `claim` (its token). False when the claim is no longer
        /// its own (taken over or pruned): nothing is written.
        async fn complete_idempotency_key(&self, claim: &Claim, answer: &StoredAnswer) -> Result<bool>;

        /// Deletes the row `claim` holds (the request failed: a retry runs again). False when it is no longer
        /// its own.
        async fn release_idempotency_key(&self, claim: &Claim) -> Result<bool>;

        /// Deletes the keys claimed before `before`, completed or not. Returns the rows deleted.
        async fn prune_idempotency_keys(&self, before: Timestamp) -> Result<u64>;
    }

    /// What the ClickHouse replica is fed from: the outbox of changes, and the rows of a backfill.
    pub trait ReplicaStore {
        /// The span a replica has rows of: from the earliest of sample ends, rollup buckets, gap starts and
        /// event times, to just past the latest (a rollup counts to its bucket's end); `None` when the store
        /// holds none.
        async fn replica_extent(&self) -> Result<Option<(Timestamp, Timestamp)>>;

        /// The replica's rows of `[from, to)` ([`ReplicaRows`]), from one snapshot, on the platform path.
        async fn replica_rows(&self, from: Timestamp, to: Timestamp) -> Result<ReplicaRows>;

        /// The oldest `limit` outbox entries not acknowledged yet, in sequence order (platform data: every
        /// tenant's rows). Empty when the store was opened without the outbox.
        async fn outbox_pending(&self, limit: u64) -> Result<Vec<OutboxEntry>>;

        /// Acknowledges (deletes) every entry with `seq <= through`, once the replica has stored them. Returns
        /// the entries deleted.
        async fn outbox_ack(&self, through: u64) -> Result<u64>;

        /// How many entries wait and since when.
        async fn outbox_stats(&self) -> Result<OutboxStats>;
    }
}

/// A key's new secret: the hash it is stored as, when it changes, and until when the previous secret still
/// works.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewSecret {
    pub hash: String,
    pub at: Timestamp,
    pub grace_until: Timestamp,
}

/// The whole storage contract: every role, plus what concerns the backend itself. Implementations are cheap to
/// clone behind an `Arc` and safe to share.
#[async_trait]
pub trait Store:
    SampleStore
    + UsageStore
    + PolicyStore
    + KeyStore
    + TenantStore
    + BudgetStore
    + AnomalyStore
    + StatementStore
    + AuditStore
    + IdempotencyStore
    + ReplicaStore
{
    /// Which backend (`sqlite`, `postgres`), for `/readyz` and logs.
    fn backend(&self) -> &'static str;

    /// Cheap liveness check of the storage.
    async fn ping(&self) -> Result<()>;

    /// Takes, or checks that this process still holds, the lease of `job` (see [`crate::lease`]): true when
    /// this process is the one replica that runs it now. Cheap enough to call before each run of a job. The
    /// embedded SQLite store is one process per file: it always leads.
    async fn try_lead(&self, job: LeaderJob) -> Result<bool> {
        let _ = job;
        Ok(true)
    }
}

#[async_trait]
impl<S: Store> Store for Observed<S> {
    fn backend(&self) -> &'static str {
        self.inner.backend()
    }

    async fn ping(&self) -> Result<()> {
        let span = tracing::info_span!("store.ping", otel.kind = "client", db.system = self.system);
        tracing::Instrument::instrument(self.inner.ping(), span).await
    }

    async fn try_lead(&self, job: LeaderJob) -> Result<bool> {
        self.inner.try_lead(job).await
    }
}
