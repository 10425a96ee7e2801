//! The embedded SQLite backend: one file, zero setup, the default store of eai-gpu.
//!
//! Durability and concurrency:
//! - The file is in WAL mode with `synchronous=FULL`: a call that returned `Ok` survives a crash or a power loss
//!   (NORMAL could lose the last transactions on power loss, which an acknowledged batch must never be).
//!   `foreign_keys=ON`; a busy timeout lets another process (the CLI on the same file) wait instead of failing.
//! - One writer connection behind a mutex, every write in one `IMMEDIATE` transaction (all or nothing), and a
//!   small pool of reader connections that see consistent snapshots and never wait for the writer. All SQLite
//!   work runs on tokio's blocking pool (`spawn_blocking`), never on the async workers.
//! - A panic while a connection is held rolls its transaction back (rusqlite rolls back on drop), so a poisoned
//!   mutex is recovered rather than turned into an outage.
//!
//! Settings that shape stored data ([`SqliteConfig`]: bucket length, interpolation limit) are recorded in the file
//! when it is created; opening it with other values is refused, because the stored rollups embody them.
//!
//! Layout: `schema` (embedded migrations), `codec` (column encodings), `tx` (the writes many changes share
//! inside their transaction: usage events with their claims and spend, the outbox, the audit chain's next
//! link), `samples` (raw samples, rollups, gaps), `records` (usage events, policies, keys, tenants, audit chain),
//! `claims` (usage claims), `budgets`, `providers`, `backup` (online copies, checks, restore).

pub mod backup;
mod budgets;
mod claims;
mod codec;
mod providers;
mod records;
mod samples;
mod schema;
mod tx;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use eai_engine::domain::{Policy, PolicySpec, Sample, Tenant, UsageEvent};
use eai_engine::gpu_usage::GpuUsage;
use eai_engine::time::Timestamp;
use rusqlite::{Connection, OpenFlags};

use self::codec::Ctx;
use crate::budgets::{
    Alert, BudgetRecord, Delivery, NewBudget, NewReservation, Reservation, ReserveOutcome,
};
use crate::{
    ApiKeyRecord, AuditDraft, AuditEvent, AuditHead, BrokenLink, DeploymentSeen, IngestOutcome,
    KeyMatch, LatestSamples, NewApiKey, NodeSeen, OutboxEntry, OutboxStats, Result, Scope, Store,
    StoreError, TenantRef, UsageRead,
};
use eai_engine::budget::{Amounts, BudgetSpec, Standing};

pub use crate::rollups::{RollupConfig, MAX_WINDOW_MS};

/// Reader connections in the pool.
const READERS: usize = 4;
/// How long a connection waits for a lock held by another process before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// How samples are turned into rollups. Fixed for the life of a file (see [`RollupConfig`]).
pub type SqliteConfig = RollupConfig;

/// The SQLite store. Cheap to clone; clones share the connections.
#[derive(Clone)]
pub struct SqliteStore {
    inner: Arc<Inner>,
}

struct Inner {
    path: PathBuf,
    cfg: SqliteConfig,
    writer: Mutex<Connection>,
    readers: Vec<Mutex<Connection>>,
    next_reader: AtomicUsize,
    /// The allocation's decoded buckets ([`crate::cache::read_cache`]).
    cache: Arc<crate::cache::read_cache::ReadCache>,
    usage_cache: Arc<crate::cache::usage_cache::UsageCache>,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.inner.path)
            .field("cfg", &self.inner.cfg)
            .finish()
    }
}

fn connect(path: &Path, flags: OpenFlags) -> Result<Connection> {
    let c = Connection::open_with_flags(path, flags)
        .map_err(|e| StoreError::Internal(format!("sqlite: open {}: {e}", path.display())))?;
    c.busy_timeout(BUSY_TIMEOUT).ctx("set busy_timeout")?;
    c.pragma_update(None, "foreign_keys", "ON")
        .ctx("set foreign_keys")?;
    c.set_prepared_statement_cache_capacity(64);
    Ok(c)
}

/// Records the settings of a new file, or checks that an existing file was built with the same.
fn check_settings(conn: &Connection, cfg: &SqliteConfig) -> Result<()> {
    for (key, want) in cfg.settings() {
        if RollupConfig::check_recorded(key, samples::meta_get(conn, key)?, want)? {
            samples::meta_set(conn, key, want)?;
        }
    }
    Ok(())
}

impl SqliteStore {
    /// Opens (creating the folder and file if needed) and migrates the database at `path`, with default settings.
    /// Blocking (file I/O, migrations): call it at startup, before serving, or inside `spawn_blocking`.
    pub fn open(path: &Path) -> Result<SqliteStore> {
        Self::open_with(path, SqliteConfig::default())
    }

    pub fn open_with(path: &Path, cfg: SqliteConfig) -> Result<SqliteStore> {
        cfg.check()?;
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| {
                StoreError::Internal(format!("create folder {}: {e}", dir.display()))
            })?;
        }
        let rw = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_URI;
        let mut writer = connect(path, rw | OpenFlags::SQLITE_OPEN_CREATE)?;
        let mode: String = writer
            .pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))
            .ctx("set journal_mode")?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StoreError::Internal(format!(
                "sqlite: {} cannot use WAL (journal_mode={mode})",
                path.display()
            )));
        }
        writer
            .pragma_update(None, "synchronous", "FULL")
            .ctx("set synchronous")?;
        schema::migrate(&mut writer)?;
        check_settings(&writer, &cfg)?;
        let readers = (0..READERS)
            .map(|_| {
                let c = connect(path, rw)?;
                c.pragma_update(None, "query_only", "ON")
                    .ctx("set query_only")?;
                Ok(Mutex::new(c))
            })
            .collect::<Result<Vec<_>>>()?;
        tracing::debug!(path = %path.display(), "sqlite store opened");
        Ok(SqliteStore {
            inner: Arc::new(Inner {
                path: path.to_path_buf(),
                cfg,
                writer: Mutex::new(writer),
                readers,
                next_reader: AtomicUsize::new(0),
                cache: Arc::new(crate::cache::read_cache::ReadCache::new(
                    cfg.read_cache_rows,
                )),
                usage_cache: Arc::new(crate::cache::usage_cache::UsageCache::new(
                    cfg.usage_cache_rows,
                )),
            }),
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    pub fn config(&self) -> SqliteConfig {
        self.inner.cfg
    }

    /// Runs `f` on the writer connection, on the blocking pool.
    async fn write<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection, &SqliteConfig) -> Result<T> + Send + 'static,
    {
        let inner = Arc::clone(&self.inner);
        tokio::task::spawn_blocking(move || {
            let mut c = inner.writer.lock().unwrap_or_else(PoisonError::into_inner);
            f(&mut c, &inner.cfg)
        })
        .await
        .map_err(|e| StoreError::Internal(format!("sqlite worker failed: {e}")))?
    }

    /// Runs `f` on a reader connection, on the blocking pool.
    async fn read<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection, &SqliteConfig) -> Result<T> + Send + 'static,
    {
        let inner = Arc::clone(&self.inner);
        tokio::task::spawn_blocking(move || {
            let mut c = inner.reader();
            f(&mut c, &inner.cfg)
        })
        .await
        .map_err(|e| StoreError::Internal(format!("sqlite worker failed: {e}")))?
    }
}

impl Inner {
    /// A free reader if there is one, else waits for the next in turn.
    fn reader(&self) -> MutexGuard<'_, Connection> {
        let n = self.readers.len();
        let start = self.next_reader.fetch_add(1, Ordering::Relaxed);
        for i in 0..n {
            if let Ok(c) = self.readers[(start + i) % n].try_lock() {
                return c;
            }
        }
        self.readers[start % n]
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

#[async_trait]
impl Store for SqliteStore {
    fn backend(&self) -> &'static str {
        "sqlite"
    }

    async fn ping(&self) -> Result<()> {
        self.read(|c, _| c.query_row("SELECT 1", [], |_| Ok(())).ctx("ping"))
            .await
    }

    async fn insert_samples(
        &self,
        samples: &[Sample],
        audit: &AuditDraft,
    ) -> Result<IngestOutcome> {
        self.insert_samples_owned(samples.to_vec(), audit).await
    }

    #[tracing::instrument(name = "store.insert_samples", skip_all, fields(otel.kind = "client", db.system = "sqlite"))]
    async fn insert_samples_owned(
        &self,
        batch: Vec<Sample>,
        audit: &AuditDraft,
    ) -> Result<IngestOutcome> {
        let audit = audit.clone();
        self.write(move |c, cfg| samples::insert(c, cfg, &batch, &audit))
            .await
    }

    #[tracing::instrument(name = "store.usage_for", skip_all, fields(otel.kind = "client", db.system = "sqlite"))]
    async fn usage_for(
        &self,
        from: Timestamp,
        to: Timestamp,
        exact_hours: &[Timestamp],
    ) -> Result<UsageRead> {
        let exact = exact_hours.to_vec();
        let cache = Arc::clone(&self.inner.cache);
        self.read(move |c, cfg| samples::usage_for(c, cfg, &cache, from, to, &exact))
            .await
    }

    #[tracing::instrument(name = "store.equal_shares", skip_all, fields(otel.kind = "client", db.system = "sqlite"))]
    async fn equal_shares(
        &self,
        from: Timestamp,
        to: Timestamp,
    ) -> Result<Vec<eai_engine::shares::EqualShares>> {
        self.read(move |c, _| samples::equal_shares(c, from.0, to.0))
            .await
    }

    #[tracing::instrument(name = "store.prune_raw_samples", skip_all, fields(otel.kind = "client", db.system = "sqlite"))]
    async fn prune_raw_samples(&self, before: Timestamp) -> Result<u64> {
        self.write(move |c, cfg| samples::prune(c, cfg, before))
            .await
    }

    #[tracing::instrument(name = "store.deployments_seen", skip_all, fields(otel.kind = "client", db.system = "sqlite"))]
    async fn deployments_seen(&self) -> Result<Vec<DeploymentSeen>> {
        self.read(|c, _| samples::deployments_seen(c)).await
    }

    async fn replica_extent(&self) -> Result<Option<(Timestamp, Timestamp)>> {
        self.read(|c, cfg| samples::replica_extent(c, cfg)).await
    }

    async fn gpu_usage(
        &self,
        scope: Scope,
        from: Timestamp,
        to: Timestamp,
        exact_hours: &[Timestamp],
    ) -> Result<GpuUsage> {
        if scope.reads_nothing() {
            return Ok(GpuUsage::default());
        }
        let exact = exact_hours.to_vec();
        let cache = self.inner.usage_cache.clone();
        self.read(move |c, cfg| samples::gpu_usage(c, cfg, &cache, scope, from, to, &exact))
            .await
    }

    async fn replica_rows(&self, from: Timestamp, to: Timestamp) -> Result<crate::ReplicaRows> {
        self.read(move |c, _| samples::replica_rows(c, from.0, to.0))
            .await
    }

    async fn latest_samples(&self, since: Timestamp, limit: u64) -> Result<LatestSamples> {
        self.read(move |c, _| samples::latest_samples(c, since.0, limit))
            .await
    }

    async fn nodes_last_seen(&self, since: Timestamp) -> Result<Vec<NodeSeen>> {
        self.read(move |c, _| samples::nodes_last_seen(c, since.0))
            .await
    }

    #[tracing::instrument(name = "store.upsert_usage_events", skip_all, fields(otel.kind = "client", db.system = "sqlite"))]
    async fn upsert_usage_events(&self, events: &[UsageEvent], audit: &AuditDraft) -> Result<u64> {
        let (events, audit) = (events.to_vec(), audit.clone());
        self.write(move |c, cfg| records::upsert_usage_events(c, &events, cfg.outbox, &audit))
            .await
    }

    #[tracing::instrument(name = "store.usage_events", skip_all, fields(otel.kind = "client", db.system = "sqlite"))]
    async fn usage_events(
        &self,
        scope: Scope,
        from: Timestamp,
        to: Timestamp,
    ) -> Result<Vec<UsageEvent>> {
        if scope.reads_nothing() {
            return Ok(Default::default());
        }
        self.read(move |c, _| records::usage_events(c, scope, from, to))
            .await
    }

    #[tracing::instrument(name = "store.create_policy", skip_all, fields(otel.kind = "client", db.system = "sqlite"))]
    async fn create_policy(&self, spec: &PolicySpec, audit: &AuditDraft) -> Result<Policy> {
        let (spec, audit) = (spec.clone(), audit.clone());
        self.write(move |c, cfg| records::create_policy(c, cfg, &spec, &audit))
            .await
    }

    #[tracing::instrument(name = "store.policies", skip_all, fields(otel.kind = "client", db.system = "sqlite"))]
    async fn policies(&self) -> Result<Vec<Policy>> {
        self.read(|c, _| records::policies(c)).await
    }

    #[tracing::instrument(name = "store.supersede_policy", skip_all, fields(otel.kind = "client", db.system = "sqlite"))]
    async fn supersede_policy(
        &self,
        id: &str,
        at: Timestamp,
        replacement: Option<&PolicySpec>,
        audit: &AuditDraft,
    ) -> Result<(Policy, Option<Policy>)> {
        let (id, replacement, audit) = (id.to_string(), replacement.cloned(), audit.clone());
        self.write(move |c, cfg| {
            records::supersede_policy(c, cfg, &id, at, replacement.as_ref(), &audit)
        })
        .await
    }

    #[tracing::instrument(name = "store.create_api_key", skip_all, fields(otel.kind = "client", db.system = "sqlite"))]
    async fn create_api_key(&self, key: &NewApiKey, audit: &AuditDraft) -> Result<ApiKeyRecord> {
        let (key, audit) = (key.clone(), audit.clone());
        self.write(move |c, _| records::create_api_key(c, &key, &audit))
            .await
    }

    #[tracing::instrument(name = "store.api_key_by_hash", skip_all, fields(otel.kind = "client", db.system = "sqlite"))]
    async fn api_key_by_hash(&self, hash: &str) -> Result<Option<KeyMatch>> {
        let hash = hash.to_string();
        self.read(move |c, _| records::api_key_by_hash(c, &hash))
            .await
    }

    #[tracing::instrument(name = "store.api_key_count", skip_all, fields(otel.kind = "client", db.system = "sqlite"))]
    async fn api_key_count(&self) -> Result<u64> {
        self.read(|c, _| records::api_key_count(c)).await
    }

    #[tracing::instrument(name = "store.api_keys", skip_all, fields(otel.kind = "client", db.system = "sqlite"))]
    async fn api_keys(&self, scope: Scope) -> Result<Vec<ApiKeyRecord>> {
        if scope.reads_nothing() {
            return Ok(Default::default());
        }
        self.read(move |c, _| records::api_keys(c, scope)).await
    }

    #[tracing::instrument(name = "store.revoke_api_key", skip_all, fields(otel.kind = "client", db.system = "sqlite"))]
    async fn revoke_api_key(
        &self,
        scope: Scope,
        id: &str,
        at: Timestamp,
        audit: &AuditDraft,
    ) -> Result<ApiKeyRecord> {
        let (id, audit) = (id.to_string(), audit.clone());
        self.write(move |c, _| records::revoke_api_key(c, scope, &id, at, &audit))
            .await
    }

    #[tracing::instrument(name = "store.rotate_api_key", skip_all, fields(otel.kind = "client", db.system = "sqlite"))]
    async fn rotate_api_key(
        &self,
        scope: Scope,
        id: &str,
        new_hash: &str,
        at: Timestamp,
        grace_until: Timestamp,
        audit: &AuditDraft,
    ) -> Result<ApiKeyRecord> {
        let (id, new_hash, audit) = (id.to_string(), new_hash.to_string(), audit.clone());
        self.write(move |c, _| {
            records::rotate_api_key(c, scope, &id, &new_hash, at, grace_until, &audit)
        })
        .await
    }

    #[tracing::instrument(name = "store.create_tenant", skip_all, fields(otel.kind = "client", db.system = "sqlite"))]
    async fn create_tenant(&self, tenant: &Tenant, audit: &AuditDraft) -> Result<Tenant> {
        let (tenant, audit) = (tenant.clone(), audit.clone());
        self.write(move |c, _| records::create_tenant(c, &tenant, &audit))
            .await
    }

    #[tracing::instrument(name = "store.tenants", skip_all, fields(otel.kind = "client", db.system = "sqlite"))]
    async fn tenants(&self, scope: Scope) -> Result<Vec<Tenant>> {
        if scope.reads_nothing() {
            return Ok(Default::default());
        }
        self.read(move |c, _| records::tenants(c, scope)).await
    }

    #[tracing::instrument(name = "store.tenant", skip_all, fields(otel.kind = "client", db.system = "sqlite"))]
    async fn tenant(&self, key: &TenantRef) -> Result<Option<Tenant>> {
        let key = key.clone();
        self.read(move |c, _| records::tenant(c, &key)).await
    }

    #[tracing::instrument(name = "store.register_provider", skip_all, fields(otel.kind = "client", db.system = "sqlite"))]
    async fn register_provider(
        &self,
        provider: &crate::providers::ProviderRecord,
        audit: &AuditDraft,
    ) -> Result<crate::providers::ProviderRecord> {
        let (provider, audit) = (provider.clone(), audit.clone());
        self.write(move |c, _| providers::register(c, &provider, &audit))
            .await
    }

    #[tracing::instrument(name = "store.providers", skip_all, fields(otel.kind = "client", db.system = "sqlite"))]
    async fn providers(&self) -> Result<Vec<crate::providers::ProviderRecord>> {
        self.read(move |c, _| providers::providers(c)).await
    }

    #[tracing::instrument(name = "store.create_budget", skip_all, fields(otel.kind = "client", db.system = "sqlite"))]
    async fn create_budget(&self, budget: &NewBudget, audit: &AuditDraft) -> Result<BudgetRecord> {
        let (budget, audit) = (budget.clone(), audit.clone());
        self.write(move |c, _| budgets::create_budget(c, &budget, &audit))
            .await
    }

    #[tracing::instrument(name = "store.budgets", skip_all, fields(otel.kind = "client", db.system = "sqlite"))]
    async fn budgets(&self, scope: Scope) -> Result<Vec<BudgetRecord>> {
        if scope.reads_nothing() {
            return Ok(Default::default());
        }
        self.read(move |c, _| budgets::budgets(c, scope)).await
    }

    #[tracing::instrument(name = "store.supersede_budget", skip_all, fields(otel.kind = "client", db.system = "sqlite"))]
    async fn supersede_budget(
        &self,
        scope: Scope,
        id: &str,
        at: Timestamp,
        replacement: Option<&BudgetSpec>,
        audit: &AuditDraft,
    ) -> Result<(BudgetRecord, Option<BudgetRecord>)> {
        let (id, replacement, audit) = (id.to_string(), replacement.cloned(), audit.clone());
        self.write(move |c, _| {
            budgets::supersede_budget(c, scope, &id, at, replacement.as_ref(), &audit)
        })
        .await
    }

    #[tracing::instrument(name = "store.budget_standings", skip_all, fields(otel.kind = "client", db.system = "sqlite"))]
    async fn budget_standings(&self, scope: Scope, at: Timestamp) -> Result<Vec<Standing>> {
        if scope.reads_nothing() {
            return Ok(Default::default());
        }
        self.read(move |c, _| budgets::standings(c, scope, at))
            .await
    }

    #[tracing::instrument(name = "store.reserve", skip_all, fields(otel.kind = "client", db.system = "sqlite"))]
    async fn reserve(
        &self,
        request: &NewReservation,
        audit: &AuditDraft,
    ) -> Result<ReserveOutcome> {
        let (request, audit) = (request.clone(), audit.clone());
        self.write(move |c, _| budgets::reserve(c, &request, &audit))
            .await
    }

    #[tracing::instrument(name = "store.reservation", skip_all, fields(otel.kind = "client", db.system = "sqlite"))]
    async fn reservation(&self, scope: Scope, id: &str) -> Result<Option<Reservation>> {
        if scope.reads_nothing() {
            return Ok(Default::default());
        }
        let id = id.to_string();
        self.read(move |c, _| budgets::reservation(c, scope, &id))
            .await
    }

    #[tracing::instrument(name = "store.commit_reservation", skip_all, fields(otel.kind = "client", db.system = "sqlite"))]
    async fn commit_reservation(
        &self,
        scope: Scope,
        id: &str,
        actual: Amounts,
        at: Timestamp,
        audit: &AuditDraft,
    ) -> Result<Reservation> {
        let (id, audit) = (id.to_string(), audit.clone());
        self.write(move |c, cfg| budgets::commit(c, scope, &id, actual, at, cfg.outbox, &audit))
            .await
    }

    #[tracing::instrument(name = "store.release_reservation", skip_all, fields(otel.kind = "client", db.system = "sqlite"))]
    async fn release_reservation(
        &self,
        scope: Scope,
        id: &str,
        at: Timestamp,
        audit: &AuditDraft,
    ) -> Result<Reservation> {
        let (id, audit) = (id.to_string(), audit.clone());
        self.write(move |c, _| budgets::release(c, scope, &id, at, &audit))
            .await
    }

    #[tracing::instrument(name = "store.expire_reservations", skip_all, fields(otel.kind = "client", db.system = "sqlite"))]
    async fn expire_reservations(&self, at: Timestamp) -> Result<u64> {
        self.write(move |c, _| budgets::expire(c, at)).await
    }

    #[tracing::instrument(name = "store.record_crossings", skip_all, fields(otel.kind = "client", db.system = "sqlite"))]
    async fn record_crossings(&self, at: Timestamp) -> Result<Vec<Alert>> {
        self.write(move |c, _| budgets::record_crossings(c, at))
            .await
    }

    #[tracing::instrument(name = "store.due_deliveries", skip_all, fields(otel.kind = "client", db.system = "sqlite"))]
    async fn due_deliveries(&self, at: Timestamp, limit: u64) -> Result<Vec<Delivery>> {
        self.read(move |c, _| budgets::due_deliveries(c, at, limit))
            .await
    }

    #[tracing::instrument(name = "store.delivery_attempted", skip_all, fields(otel.kind = "client", db.system = "sqlite"))]
    async fn delivery_attempted(
        &self,
        alert: uuid::Uuid,
        at: Timestamp,
        outcome: std::result::Result<(), String>,
        next: Option<Timestamp>,
    ) -> Result<()> {
        self.write(move |c, _| budgets::delivery_attempted(c, alert, at, outcome, next))
            .await
    }

    #[tracing::instrument(name = "store.append_audit", skip_all, fields(otel.kind = "client", db.system = "sqlite"))]
    async fn append_audit(&self, draft: &AuditDraft) -> Result<AuditEvent> {
        let draft = draft.clone();
        self.write(move |c, _| records::append_audit(c, &draft))
            .await
    }

    #[tracing::instrument(name = "store.audit_events", skip_all, fields(otel.kind = "client", db.system = "sqlite"))]
    async fn audit_events(&self, scope: Scope, after: u64, limit: u64) -> Result<Vec<AuditEvent>> {
        if scope.reads_nothing() {
            return Ok(Default::default());
        }
        self.read(move |c, _| records::audit_events(c, scope, after, limit))
            .await
    }

    #[tracing::instrument(name = "store.audit_head", skip_all, fields(otel.kind = "client", db.system = "sqlite"))]
    async fn audit_head(&self) -> Result<Option<AuditHead>> {
        self.read(|c, _| records::audit_head(c)).await
    }

    #[tracing::instrument(name = "store.verify_audit_chain", skip_all, fields(otel.kind = "client", db.system = "sqlite"))]
    async fn verify_audit_chain(&self, expect: Option<&AuditHead>) -> Result<Option<BrokenLink>> {
        let expect = expect.cloned();
        self.read(move |c, _| records::verify_audit_chain(c, expect.as_ref()))
            .await
    }

    #[tracing::instrument(name = "store.outbox_pending", skip_all, fields(otel.kind = "client", db.system = "sqlite"))]
    async fn outbox_pending(&self, limit: u64) -> Result<Vec<OutboxEntry>> {
        self.read(move |c, _| records::outbox_pending(c, limit))
            .await
    }

    #[tracing::instrument(name = "store.outbox_ack", skip_all, fields(otel.kind = "client", db.system = "sqlite"))]
    async fn outbox_ack(&self, through: u64) -> Result<u64> {
        self.write(move |c, _| records::outbox_ack(c, through))
            .await
    }

    #[tracing::instrument(name = "store.outbox_stats", skip_all, fields(otel.kind = "client", db.system = "sqlite"))]
    async fn outbox_stats(&self) -> Result<OutboxStats> {
        self.read(|c, _| records::outbox_stats(c)).await
    }
}
