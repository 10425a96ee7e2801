//! Building and running the control plane: open the store, bootstrap the first platform_admin key, bind, serve
//! until a shutdown signal, then drain. `main` only wires this up.

use std::future::Future;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use axum_server::tls_rustls::RustlsConfig;
use eai_engine::allocate::AllocationConfig;
use eai_engine::time::Timestamp;
use eai_store::clickhouse::{replicate_once, ClickHouse};
use eai_store::postgres::PgStore;
use eai_store::rollups::RollupConfig;
use eai_store::sqlite::{SqliteConfig, SqliteStore};
use eai_store::{AuditDraft, NewApiKey, Role, Store};
use serde_json::json;
use tokio::net::TcpListener;

use crate::config::{redact_url, AllocationSource, Config, Database};
use crate::key_format::{hash_api_key, new_api_key};
use crate::routes::router;
use crate::state::{now, AppState, Settings};
use eai_app::allocation::Source;
use eai_app::leader::Lease;
use eai_app::metrics::Metrics;
use eai_store::lease::LeaderJob;

/// How often raw samples past their retention are pruned.
const PRUNE_EVERY: Duration = Duration::from_secs(3600);
/// Outbox entries one delivery takes.
const REPLICATE_BATCH: u64 = 50;
/// How often the replicator looks for new outbox entries when it has caught up.
const REPLICATE_POLL: Duration = Duration::from_millis(500);
/// Backoff after a failure talking to ClickHouse: doubles from the first to the last.
const REPLICATE_BACKOFF: (Duration, Duration) =
    (Duration::from_millis(500), Duration::from_secs(30));

/// A bound, ready-to-run control plane.
#[derive(Debug)]
pub struct Application {
    listener: TcpListener,
    local_addr: SocketAddr,
    /// `EAI_TLS_CERT`/`EAI_TLS_KEY` loaded: the server speaks HTTPS only.
    tls: Option<RustlsConfig>,
    state: AppState,
    raw_retention_days: u32,
    clickhouse: Option<ClickHouse>,
    allocation_source: AllocationSource,
    allocation_batch: bool,
    allocation_bucket_ms: i64,
    batch_every: Duration,
    leader_poll: Duration,
    budget_check: Duration,
}

impl Application {
    /// Opens the store named by the config, bootstraps it, and binds `config.listen` (port 0: a free port).
    pub async fn build(config: Config) -> anyhow::Result<Application> {
        config.validate()?;
        install_crypto_provider();
        let store = open_store(&config).await?;
        Self::build_with_store(config, store).await
    }

    /// Like [`Application::build`], on a store opened by the caller.
    pub async fn build_with_store(
        config: Config,
        store: Arc<dyn Store>,
    ) -> anyhow::Result<Application> {
        config.validate()?;
        install_crypto_provider();
        // The certificate first: a server that cannot speak TLS must not start at all.
        let tls = match &config.tls {
            Some(t) => Some(
                RustlsConfig::from_pem_file(&t.cert, &t.key)
                    .await
                    .with_context(|| {
                        format!(
                            "cannot load the TLS certificate {} and key {} (PEM)",
                            t.cert.display(),
                            t.key.display()
                        )
                    })?,
            ),
            None => None,
        };
        bootstrap(store.as_ref(), &config).await?;
        let listener = TcpListener::bind(config.listen)
            .await
            .with_context(|| format!("cannot listen on {}", config.listen))?;
        let local_addr = listener
            .local_addr()
            .context("cannot read the bound address")?;
        let clickhouse = config.clickhouse()?;
        let limits = crate::limits::Limits::new(
            config.rate_limit_per_key,
            config.rate_limit_per_address,
            config.max_concurrent_allocations,
        );
        let mut state = AppState::new(store, Settings::from_config(&config), limits);
        if let (AllocationSource::ClickHouse, Some(ch)) = (&config.allocation_source, &clickhouse) {
            state.source = Arc::new(Source::ClickHouse(ch.clone()));
        }
        Ok(Application {
            listener,
            local_addr,
            tls,
            state,
            raw_retention_days: config.raw_retention_days,
            budget_check: Duration::from_secs(u64::from(config.budget_check_seconds)),
            clickhouse,
            allocation_source: config.allocation_source,
            allocation_batch: config.allocation_batch,
            allocation_bucket_ms: i64::from(config.allocation_bucket_minutes) * 60_000,
            batch_every: Duration::from_secs(u64::from(config.allocation_batch_interval_seconds)),
            leader_poll: Duration::from_secs(u64::from(config.leader_poll_seconds)),
        })
    }

    pub fn port(&self) -> u16 {
        self.local_addr.port()
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    pub fn state(&self) -> &AppState {
        &self.state
    }

    /// The same application, its handlers reading the time from `clock` (a test steps it instead of waiting).
    pub fn with_clock(mut self, clock: Arc<dyn eai_app::clock::Clock>) -> Self {
        self.state = self.state.with_clock(clock);
        self
    }

    /// Serves until `shutdown` completes, then stops accepting and lets in-flight requests finish.
    pub async fn run_until_stopped(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> anyhow::Result<()> {
        let mut tasks = Vec::new();
        if self.raw_retention_days > 0 {
            tasks.push(tokio::spawn(prune_raw_samples(
                self.state.store.clone(),
                self.raw_retention_days,
                self.state.metrics.clone(),
                self.leader_poll,
            )));
        }
        if let Some(ch) = &self.clickhouse {
            tracing::info!(database = ch.database(), "replicating to ClickHouse");
            tasks.push(tokio::spawn(replicate(
                self.state.store.clone(),
                ch.clone(),
                self.state.metrics.clone(),
                self.leader_poll,
            )));
        }
        if self.allocation_batch {
            let source = match (&self.allocation_source, &self.clickhouse) {
                (AllocationSource::ClickHouse, Some(ch)) => Source::ClickHouse(ch.clone()),
                _ => Source::Primary,
            };
            let config = AllocationConfig {
                bucket_ms: self.allocation_bucket_ms,
                ..AllocationConfig::default()
            };
            tasks.push(tokio::spawn(eai_app::batch::schedule(
                self.state.store.clone(),
                source,
                config,
                eai_app::batch::Schedule {
                    every: self.batch_every,
                    poll: self.leader_poll,
                },
                self.state.metrics.clone(),
            )));
        }
        tasks.push(tokio::spawn(housekeeping(self.state.clone())));
        tasks.push(tokio::spawn(eai_app::store_metrics::run(
            eai_app::store_metrics::Refresher {
                store: self.state.store.clone(),
                source: self.state.source.clone(),
                metrics: self.state.metrics.clone(),
                options: self.state.settings.store_metrics,
                bucket_ms: self.state.settings.allocation_bucket_ms,
            },
        )));
        tasks.push(tokio::spawn(eai_app::budget_alerts::run(
            self.state.store.clone(),
            self.state.metrics.clone(),
            self.budget_check,
        )));
        tracing::info!(instance = eai_app::leader::instance(), "one replica runs each of the batch, the pruner, the replicator and the budget chores (a lease each)");
        tracing::info!(
            address = %self.local_addr,
            storage = self.state.store.backend(),
            tls = self.tls.is_some(),
            "eai-gpu control plane listening"
        );
        let app = router(self.state.clone()).into_make_service_with_connect_info::<SocketAddr>();
        let served = match self.tls {
            None => axum::serve(self.listener, app)
                .with_graceful_shutdown(shutdown)
                .await
                .map_err(anyhow::Error::from),
            Some(tls) => {
                let handle = axum_server::Handle::new();
                let stopper = handle.clone();
                tokio::spawn(async move {
                    shutdown.await;
                    stopper.graceful_shutdown(Some(Duration::from_secs(30)));
                });
                let listener = self
                    .listener
                    .into_std()
                    .context("cannot hand the listener to the TLS server")?;
                axum_server::from_tcp_rustls(listener, tls)
                    .handle(handle)
                    .serve(app)
                    .await
                    .map_err(anyhow::Error::from)
            }
        };
        for t in tasks {
            t.abort();
        }
        tracing::info!("eai-gpu control plane stopped");
        served.context("the HTTP server failed")
    }
}

/// Makes rustls use the `ring` provider (the one this build compiles), once per process.
pub fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// How often the audit chain's head is logged (an anchor outside the database; also in `/metrics`).
const AUDIT_HEAD_EVERY: Duration = Duration::from_secs(24 * 3600);

/// Background chores: rate limiters forget idle keys every minute; the audit chain's head is logged at start
/// and daily, so that the logs anchor it outside the database.
async fn housekeeping(state: AppState) {
    let mut minute = tokio::time::interval(Duration::from_secs(60));
    let mut day = tokio::time::interval(AUDIT_HEAD_EVERY);
    loop {
        tokio::select! {
            _ = minute.tick() => state.limits.retain_recent(),
            _ = day.tick() => match state.store.audit_head().await {
                Ok(Some(h)) => {
                    state.metrics.set_audit_head(h.seq, &h.hash);
                    tracing::info!(seq = h.seq, hash = %h.hash, "audit chain head (anchor it: eai-gpu audit verify --expect-head SEQ:HASH)");
                }
                Ok(None) => tracing::info!("audit chain head: the chain is empty"),
                Err(e) => tracing::warn!(error = %e, "cannot read the audit chain's head"),
            },
        }
    }
}

/// Opens the store `EAI_DATABASE_URL` names: the SQLite file (creating its folder), or PostgreSQL (migrated as the
/// URL's user, served as the service role under row level security).
pub async fn open_store(config: &Config) -> anyhow::Result<Arc<dyn Store>> {
    match config.database()? {
        Database::Sqlite(path) => {
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir)
                    .with_context(|| format!("cannot create {}", dir.display()))?;
            }
            // The interpolation limit shapes the stored rollups; the rollup bucket stays one hour.
            let cfg = SqliteConfig {
                max_gap_ms: i64::from(config.max_gap_minutes) * 60_000,
                outbox: config.clickhouse_url.is_some(),
                read_cache_rows: config.read_cache_rows,
                usage_cache_rows: config.usage_cache_rows,
                ..SqliteConfig::default()
            };
            let store = SqliteStore::open_with(&path, cfg)
                .with_context(|| format!("cannot open the SQLite store {}", path.display()))?;
            Ok(Arc::new(store))
        }
        Database::Postgres(url) => {
            // Migrated as the URL's user (the owner); served as the service role eai_app, under RLS.
            let cfg = RollupConfig {
                max_gap_ms: i64::from(config.max_gap_minutes) * 60_000,
                outbox: config.clickhouse_url.is_some(),
                read_cache_rows: config.read_cache_rows,
                usage_cache_rows: config.usage_cache_rows,
                ..RollupConfig::default()
            };
            let store = PgStore::open_with(&url, cfg).await.with_context(|| {
                format!("cannot open the PostgreSQL store {}", redact_url(&url))
            })?;
            Ok(Arc::new(store))
        }
    }
}

/// What [`bootstrap`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Bootstrap {
    /// The store already had keys: nothing done.
    AlreadyHadKeys,
    /// `EAI_BOOTSTRAP_ADMIN_KEY` became the first platform_admin key.
    FromConfig { key_id: String },
    /// A key was generated and written (mode 0600) to this file.
    Generated {
        key_id: String,
        file: std::path::PathBuf,
    },
}

/// When the store has no API key: `EAI_BOOTSTRAP_ADMIN_KEY` becomes the first platform_admin key, or one is
/// generated and written to `<data_dir>/bootstrap-admin-key` (mode 0600). The key itself is never logged.
pub async fn bootstrap(store: &dyn Store, config: &Config) -> anyhow::Result<Bootstrap> {
    if store
        .api_key_count()
        .await
        .context("cannot count API keys")?
        > 0
    {
        if config.bootstrap_admin_key.is_some() {
            tracing::info!("the store already has API keys: EAI_BOOTSTRAP_ADMIN_KEY is ignored");
        }
        return Ok(Bootstrap::AlreadyHadKeys);
    }
    let (key, file) = match &config.bootstrap_admin_key {
        Some(k) => (k.clone(), None),
        None => {
            let k = new_api_key();
            let file = config.bootstrap_key_file();
            // The file first: a key stored but never written down would lock everyone out.
            write_secret(&file, &k)?;
            (k, Some(file))
        }
    };
    let at = now();
    let source = if file.is_some() {
        "generated"
    } else {
        "environment"
    };
    let new = NewApiKey {
        hash: hash_api_key(&key),
        role: Role::PlatformAdmin,
        tenant_id: None,
        name: Some("bootstrap".into()),
        nodes: Vec::new(),
        expires_at: None,
        created_at: at,
    };
    let audit = AuditDraft::system(
        "system",
        "api_key.bootstrap",
        at,
        json!({ "role": "platform_admin", "source": source }),
    );
    let rec = store
        .create_api_key(&new, &audit)
        .await
        .context("cannot store the bootstrap key")?;
    Ok(match file {
        Some(file) => {
            tracing::warn!(
                key_id = %rec.id,
                file = %file.display(),
                "no API key existed: generated the first platform_admin key and wrote it to this file (mode 0600); \
                 read it, store it safely, then delete the file"
            );
            Bootstrap::Generated {
                key_id: rec.id,
                file,
            }
        }
        None => {
            tracing::info!(key_id = %rec.id, "no API key existed: EAI_BOOTSTRAP_ADMIN_KEY is now the first platform_admin key");
            Bootstrap::FromConfig { key_id: rec.id }
        }
    })
}

/// Writes a secret readable by its owner only.
fn write_secret(path: &Path, secret: &str) -> anyhow::Result<()> {
    use std::io::Write as _;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        opts.mode(0o600);
    }
    let mut f = opts
        .open(path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        // A file left by an earlier run keeps its old mode through `open`: set it again.
        f.set_permissions(std::fs::Permissions::from_mode(0o600))
            .with_context(|| format!("cannot restrict {}", path.display()))?;
    }
    f.write_all(format!("{secret}\n").as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))?;
    f.sync_all()
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

/// Deletes raw samples past their retention, hourly (rollups stay), on the replica that holds the pruner's lease.
async fn prune_raw_samples(
    store: Arc<dyn Store>,
    days: u32,
    metrics: Arc<Metrics>,
    poll: Duration,
) {
    let lease = Lease::new(store.clone(), LeaderJob::Pruner, metrics);
    eai_app::leader::every_while_leading(lease, PRUNE_EVERY, poll, || async {
        let before = Timestamp(now().0 - i64::from(days) * 86_400_000);
        match store.prune_raw_samples(before).await {
            Ok(0) => {}
            Ok(n) => {
                tracing::info!(rows = n, before = %before, "pruned raw samples past their retention")
            }
            Err(e) => tracing::warn!(error = %e, "pruning raw samples failed; will retry"),
        }
    })
    .await;
}

/// The replicator, on the replica that holds its lease: creates the ClickHouse schema, then delivers the outbox
/// for as long as it leads, retrying with backoff while ClickHouse is down (ingest never waits for it: the outbox
/// keeps the rows).
async fn replicate(store: Arc<dyn Store>, ch: ClickHouse, metrics: Arc<Metrics>, poll: Duration) {
    let mut lease = Lease::new(store.clone(), LeaderJob::Replicator, metrics.clone());
    let poll = eai_app::leader::poll(poll);
    loop {
        while !lease.check().await {
            tokio::time::sleep(poll).await;
        }
        // Leading: deliver until a lease check fails.
        let checked = tokio::time::Instant::now();
        tokio::select! {
            _ = replicate_while_leading(&store, &ch, &metrics) => {}
            _ = async {
                let mut at = checked;
                loop {
                    at += poll;
                    tokio::time::sleep_until(at).await;
                    if !lease.check().await {
                        break;
                    }
                }
            } => {}
        }
    }
}

/// Delivers the outbox forever (the caller stops it when the lease is lost). A delivery cut short is
/// redelivered by the next leader: the replica dedups on its keys.
async fn replicate_while_leading(store: &Arc<dyn Store>, ch: &ClickHouse, metrics: &Metrics) {
    let r = &metrics.replica;
    let (first, last) = REPLICATE_BACKOFF;
    let mut backoff = first;
    while let Err(e) = ch.migrate().await {
        Metrics::add(&r.failures, 1);
        tracing::warn!(error = %e, retry_in_ms = backoff.as_millis() as u64, "cannot create the ClickHouse schema; will retry");
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(last);
    }
    backoff = first;
    loop {
        match store.outbox_stats().await {
            Ok(stats) => {
                Metrics::set(&r.outbox_pending, stats.pending);
                let age = stats.oldest_ms.map_or(0, |t| (now().0 - t).max(0) / 1000);
                Metrics::set(
                    &r.outbox_oldest_age_seconds,
                    u64::try_from(age).unwrap_or(0),
                );
            }
            Err(e) => tracing::warn!(error = %e, "cannot read the outbox size"),
        }
        match replicate_once(store.as_ref(), ch, REPLICATE_BATCH).await {
            Ok(d) => {
                backoff = first;
                Metrics::add(&r.delivered_rows, d.rows as u64);
                Metrics::set(
                    &r.last_success_timestamp_seconds,
                    u64::try_from(now().0 / 1000).unwrap_or(0),
                );
                if (d.entries as u64) < REPLICATE_BATCH {
                    tokio::time::sleep(REPLICATE_POLL).await;
                }
            }
            Err(e) => {
                Metrics::add(&r.failures, 1);
                tracing::warn!(error = %e, retry_in_ms = backoff.as_millis() as u64, "replication to ClickHouse failed; the outbox keeps the rows, will retry");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(last);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn secrets_are_written_owner_only() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("sub").join("bootstrap-admin-key");
        write_secret(&path, "eai_live_x").expect("write");
        let mode = std::fs::metadata(&path).expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(
            std::fs::read_to_string(&path).expect("read"),
            "eai_live_x\n"
        );
    }
}
