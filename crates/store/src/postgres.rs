//! The PostgreSQL backend: schema `eai`, row level security enforced by the database, selected by
//! `EAI_DATABASE_URL=postgres://…`.
//!
//! Roles. The URL's user owns the schema: [`PgStore::open`] runs the embedded migrations as that user (creating
//! the service role [`SERVICE_ROLE`] if it does not exist), then every pooled connection does `SET ROLE eai_app`
//! before its first statement. `eai_app` is not the owner, has no `BYPASSRLS` and no `SUPERUSER` (checked at
//! open: the store refuses to start otherwise), and holds only the grants the store needs.
//!
//! Scopes. Every transaction starts by setting, transaction-locally (`set_config(…, true)`), either
//! `app.tenant_id` (a [`Scope::Tenant`] read: the database filters every tenant table to that tenant, and
//! refuses to write another tenant's row, even though the SQL has no tenant clause) or `app.platform = 'on'`
//! (the platform path, [`Scope::Platform`]: samples and rollups of shared deployments, which belong to no tenant;
//! the allocation, which must weigh every tenant's usage; API key lookup, which happens before the caller's
//! tenant is known; the audit chain, which links every tenant's events). Usage events are written tenant by
//! tenant, each under its own `app.tenant_id`. Rows that belong to no tenant carry [`PLATFORM_TENANT`]; policies
//! are platform-wide configuration and have no tenant at all.
//!
//! Writes are idempotent on the same keys as the embedded store (first received wins on `(gpu, end)`; usage
//! upserted by `event_id` within its tenant), and rollups are maintained by the same algorithm,
//! [`crate::rollups`]. Ingest locks the batch's GPUs (advisory locks keyed by GPU id, in ascending order), so
//! concurrent batches of one GPU are serialized; the audit chain is appended under a transaction advisory lock.
//!
//! Group rollups and usage claims ([`crate::rollups::groups`]: what an allocation reads, per deployment-hour and
//! tenant-hour) are kept in the transactions of the rows they derive from, with SQL-side sums; `usage_for` reads
//! them for a period in one range scan each.
//!
//! Layout: `schema` (migrations, policies, grants), `pool` (the connections and their prepared statements),
//! `tx` (a transaction begun for a scope, and the writes many changes share inside it: usage events with their
//! claims and spend, the outbox, the audit chain's next link), `samples` (raw samples, rollups, gaps),
//! `records` (usage events, policies, keys, tenants, audit chain), `budgets`, `providers`, `idempotency`, `derived` (group
//! rollups and claims: writes and reads), `tls` (sslmode over rustls), `scratch` (feature `test-support`:
//! throw-away databases for tests and benchmarks).

mod anomalies;
mod budgets;
mod derived;
mod idempotency;
mod pool;
mod providers;
mod records;
mod samples;
mod schema;
mod statements;
// Throw-away databases for tests and benchmarks: not in the shipped binary (feature `test-support`).
#[cfg(any(test, feature = "test-support"))]
pub mod scratch;
#[cfg(test)]
mod tests;
pub mod tls;
mod tx;

use crate::roles::Observed;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use eai_engine::domain::TenantId;
use uuid::Uuid;

use self::pool::Pool;
use self::tx::{begin, Mode};
use crate::lease::LeaderJob;
use crate::rollups::RollupConfig;
use crate::{Result, Scope, Store, StoreError};

/// The role the service acts as: not the owner, `NOBYPASSRLS`.
pub const SERVICE_ROLE: &str = "eai_app";

/// The tenant of rows that belong to no tenant: samples, rollups and gaps of shared deployments, platform API
/// keys, platform audit events. Reserved: no tenant may have this id.
pub const PLATFORM_TENANT: Uuid = crate::PLATFORM_TENANT_ID;

/// Connections in the pool.
const POOL_SIZE: usize = 8;
/// How long a lease check may take before the lease is given up.
const LEASE_CHECK_TIMEOUT: Duration = Duration::from_secs(5);

/// Session settings of every pooled connection. `jit = off`: row level security policies make the planner
/// believe that few rows of a table are visible (it cannot evaluate `current_setting` at plan time), so an index
/// probe that stops at the first visible row looks hundreds of times dearer than it is; past `jit_above_cost`
/// every ingest then spent hundreds of milliseconds compiling its statements (measured: 380 ms of JIT for a
/// 10 ms lookup of the latest samples of 1,000 GPUs with 72 hours stored). The store's statements are short
/// lookups and range scans, which JIT never pays off for.
const SESSION: &str = "SET jit = off";

/// Adds context to a PostgreSQL error (the server's code and message when it sent one).
pub(crate) trait Ctx<T> {
    fn ctx(self, what: &str) -> Result<T>;
}

impl<T> Ctx<T> for std::result::Result<T, tokio_postgres::Error> {
    fn ctx(self, what: &str) -> Result<T> {
        self.map_err(|e| {
            let text = format!("postgres: {what}: {}", describe(&e));
            if unreachable(&e) {
                // Every connection open now may be to a server that died or stepped down: none is reused
                // (too many connections says nothing of the others: they stay).
                if sqlstate(&e) != Some("53300") {
                    pool::distrust_open_connections();
                }
                StoreError::Unavailable(text)
            } else {
                StoreError::Internal(text)
            }
        })
    }
}

/// Whether an error says the server cannot be reached now rather than that the statement failed: the connection
/// closed or could not be made (an I/O error; with `target_session_attrs=read-write`, no host of the URL takes
/// writes), SQLSTATE class 08 (connection exception), 57P01-57P05 (shutting down, starting up or in recovery,
/// idle session ended), 25006 (read-only transaction: the server was demoted to a standby under this
/// connection, a failover is under way) or 53300 (too many connections). The caller may send the same request
/// again: its transaction was rolled back, or (the connection lost during the commit itself) committed, and the
/// re-sent batch then counts duplicates.
pub(crate) fn unreachable(e: &tokio_postgres::Error) -> bool {
    if e.is_closed() {
        return true;
    }
    match sqlstate(e) {
        Some(code) => {
            code.starts_with("08") || code.starts_with("57P") || code == "25006" || code == "53300"
        }
        None => std::error::Error::source(e).is_some_and(|s| s.is::<std::io::Error>()),
    }
}

/// The server's SQLSTATE, message and detail, or the client's error text.
pub(crate) fn describe(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => {
            let mut s = format!("{} ({})", db.message(), db.code().code());
            if let Some(d) = db.detail() {
                s.push_str(": ");
                s.push_str(d);
            }
            s
        }
        None => match std::error::Error::source(e) {
            Some(cause) => format!("{e}: {cause}"),
            None => e.to_string(),
        },
    }
}

/// The SQLSTATE of a server error.
fn sqlstate(e: &tokio_postgres::Error) -> Option<&str> {
    e.as_db_error().map(|d| d.code().code())
}

/// A tenant id as stored: refuses the reserved platform id.
fn tenant_uuid(t: TenantId) -> Result<Uuid> {
    crate::records::check_tenant_id(t)?;
    Ok(t.0)
}

/// An optional tenant as stored: none is the platform tenant.
fn owner_uuid(t: Option<TenantId>) -> Result<Uuid> {
    t.map_or(Ok(PLATFORM_TENANT), tenant_uuid)
}

/// A stored tenant column back: the platform tenant is none.
fn owner_of(u: Uuid) -> Option<TenantId> {
    (u != PLATFORM_TENANT).then_some(TenantId(u))
}

/// The PostgreSQL store, as it is opened: the backend behind the decorator that traces and scope-checks each
/// role ([`Observed`]). Cheap to clone; clones share the pool.
pub type PgStore = Observed<PgDb>;

/// The PostgreSQL backend: its pool, lease connection and cache. The roles are implemented beside their SQL
/// (`samples`, `records`, `budgets`); opened only as a [`PgStore`].
#[derive(Clone)]
pub struct PgDb {
    inner: Arc<Inner>,
}

struct Inner {
    pool: Pool,
    /// The connection that holds this process's leases, and the jobs it holds (see [`crate::lease`]).
    lease: tokio::sync::Mutex<Option<(pool::PgConn, BTreeSet<LeaderJob>)>>,
    cfg: RollupConfig,
    /// host/port/dbname, for logs (never the password).
    target: String,
    /// The allocation's decoded buckets ([`crate::cache::read_cache`]).
    cache: crate::cache::read_cache::ReadCache,
    /// A compaction of the change log is under way (one at a time per process).
    compacting: std::sync::atomic::AtomicBool,
}

impl std::fmt::Debug for PgDb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("target", &self.inner.target)
            .field("cfg", &self.inner.cfg)
            .finish()
    }
}

/// Where a config points, without its password: every host of a multi-host URL (`u@h1:p1,h2:p2/db`).
fn target_of(cfg: &tokio_postgres::Config) -> String {
    let ports = cfg.get_ports();
    let hosts: Vec<String> = cfg
        .get_hosts()
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let host = match h {
                tokio_postgres::config::Host::Tcp(s) => s.clone(),
                #[cfg(unix)]
                tokio_postgres::config::Host::Unix(p) => p.display().to_string(),
            };
            // One port for every host, or one each (tokio-postgres's rule).
            let port = ports.get(i).or(ports.first()).copied().unwrap_or(5432);
            format!("{host}:{port}")
        })
        .collect();
    format!(
        "{}@{}/{}",
        cfg.get_user().unwrap_or_default(),
        hosts.join(","),
        cfg.get_dbname().unwrap_or_default()
    )
}

impl PgStore {
    /// Connects to the database `url` names, migrates it as the URL's user (the owner), and opens a pool of
    /// connections acting as [`SERVICE_ROLE`], with default rollup settings.
    pub async fn open(url: &str) -> Result<PgStore> {
        Self::open_with(url, RollupConfig::default()).await
    }

    /// [`PgStore::open`] with these rollup settings.
    pub async fn open_with(url: &str, cfg: RollupConfig) -> Result<PgStore> {
        let db = PgDb::open_with(url, cfg).await?;
        Ok(Observed::new(db, "postgresql"))
    }
}

impl PgDb {
    async fn open_with(url: &str, cfg: RollupConfig) -> Result<PgDb> {
        cfg.check()?;
        let (mut pg, connector) = tls::parse(url)?;
        if pg.get_connect_timeout().is_none() {
            pg.connect_timeout(Duration::from_secs(10));
        }
        if pg.get_application_name().is_none() {
            pg.application_name("eai-gpu");
        }
        let target = target_of(&pg);

        // As the owner: migrations, and the settings the stored rollups embody.
        let mut owner = pool::connect(&pg, &connector, "").await.map_err(|e| {
            StoreError::Internal(format!("cannot reach PostgreSQL at {target}: {e}"))
        })?;
        schema::migrate(&mut owner.client).await?;
        drop(owner);

        let store = PgDb {
            inner: Arc::new(Inner {
                pool: Pool::new(
                    pg,
                    connector,
                    POOL_SIZE,
                    format!("SET ROLE {SERVICE_ROLE}; {SESSION}"),
                )?,
                lease: tokio::sync::Mutex::new(None),
                cfg,
                target,
                cache: crate::cache::read_cache::ReadCache::new(cfg.read_cache_rows),
                compacting: std::sync::atomic::AtomicBool::new(false),
            }),
        };
        store.check_service_role().await?;
        store.check_settings().await?;
        tracing::debug!(target = %store.inner.target, "postgres store opened");
        Ok(store)
    }

    pub fn config(&self) -> RollupConfig {
        self.inner.cfg
    }

    /// Refuses to run as a role that RLS would not bind.
    async fn check_service_role(&self) -> Result<()> {
        let mut c = self.inner.pool.get().await?;
        let row = c
            .conn()?
            .client
            .query_one(
                "SELECT current_user::text, r.rolsuper, r.rolbypassrls, \
                 EXISTS (SELECT 1 FROM pg_tables t WHERE t.schemaname = 'eai' AND t.tableowner = current_user) \
                 FROM pg_roles r WHERE r.rolname = current_user",
                &[],
            )
            .await
            .ctx("check the service role")?;
        let (user, sup, bypass, owns): (String, bool, bool, bool) =
            (row.get(0), row.get(1), row.get(2), row.get(3));
        if user != SERVICE_ROLE || sup || bypass || owns {
            return Err(StoreError::Internal(format!(
                "postgres: the service must act as {SERVICE_ROLE}, a role that is not superuser, has no BYPASSRLS \
                 and owns no table of schema eai; it acts as {user} (superuser {sup}, bypassrls {bypass}, owner {owns})"
            )));
        }
        Ok(())
    }

    /// Records the rollup settings of a new database, or checks that it was built with the same.
    async fn check_settings(&self) -> Result<()> {
        let mut c = self.inner.pool.get().await?;
        let (tx, st) = begin(c.conn()?, Scope::Platform, Mode::Write).await?;
        for (key, want) in self.inner.cfg.settings() {
            let have = samples::meta_get(&tx, st, key).await?;
            if RollupConfig::check_recorded(key, have, want)? {
                samples::meta_set(&tx, st, key, want).await?;
            }
        }
        tx.commit().await.ctx("commit settings")?;
        Ok(())
    }

    async fn conn(&self) -> Result<pool::Pooled> {
        self.inner.pool.get().await
    }
}

#[async_trait]
impl Store for PgDb {
    fn backend(&self) -> &'static str {
        "postgres"
    }

    async fn try_lead(&self, job: LeaderJob) -> Result<bool> {
        let mut lease = self.inner.lease.lock().await;
        if lease.as_ref().is_some_and(|(c, _)| c.client.is_closed()) {
            // The connection broke: whatever it held is gone with it.
            *lease = None;
        }
        if lease.is_none() {
            *lease = Some((self.inner.pool.dedicated().await?, BTreeSet::new()));
        }
        let Some((conn, held)) = lease.as_mut() else {
            return Ok(false);
        };
        let answer = if held.contains(&job) {
            // Still held while the session lives: prove it answers, on a primary (a server demoted to a
            // standby under it is no longer where the jobs write: a failover is under way, and the new
            // primary's locks are taken afresh by a new session).
            tokio::time::timeout(
                LEASE_CHECK_TIMEOUT,
                conn.client.query_one("SELECT pg_is_in_recovery()", &[]),
            )
            .await
            .map_err(|_| {
                StoreError::Internal("postgres: the lease connection does not answer".into())
            })
            .and_then(|r| {
                r.map(|row| row.get::<_, bool>(0))
                    .ctx("check the lease connection")
            })
            .and_then(|standby| {
                if standby {
                    Err(StoreError::Unavailable(
                        "postgres: the lease connection's server is a standby now".into(),
                    ))
                } else {
                    Ok(true)
                }
            })
        } else {
            tokio::time::timeout(
                LEASE_CHECK_TIMEOUT,
                conn.client.query_one(
                    "SELECT pg_try_advisory_lock($1, $2)",
                    &[&crate::lease::LOCK_CLASS, &job.lock_key()],
                ),
            )
            .await
            .map_err(|_| {
                StoreError::Internal("postgres: the lease connection does not answer".into())
            })
            .and_then(|r| r.map(|row| row.get::<_, bool>(0)).ctx("take a lease"))
        };
        match answer {
            Ok(true) => {
                held.insert(job);
                Ok(true)
            }
            Ok(false) => Ok(false),
            Err(e) => {
                // Unsure whether the session lives: drop it, so that the server frees every lock it held, and
                // lead nothing until a new session takes them again.
                *lease = None;
                Err(e)
            }
        }
    }

    async fn ping(&self) -> Result<()> {
        let mut c = self.conn().await?;
        c.conn()?
            .client
            .simple_query("SELECT 1")
            .await
            .ctx("ping")?;
        Ok(())
    }
}
