//! Building and running the control plane: open the store, bootstrap the first platform_admin key, bind, serve
//! until a shutdown signal, then drain. `main` only wires this up.

use secrecy::ExposeSecret;
use std::future::Future;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use axum_server::tls_rustls::RustlsConfig;
use eai_engine::allocate::AllocationConfig;
use eai_store::clickhouse::ClickHouse;
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
use eai_app::clock::Ticker;
use eai_app::jobs::Jobs;

/// A bound, ready-to-run control plane.
#[derive(Debug)]
pub struct Application {
    listener: TcpListener,
    local_addr: SocketAddr,
    /// `EAI_TLS_CERT`/`EAI_TLS_KEY` loaded: the server speaks HTTPS only.
    tls: Option<RustlsConfig>,
    state: AppState,
    raw_retention_days: u32,
    idempotency_retention: Duration,
    clickhouse: Option<ClickHouse>,
    allocation_source: AllocationSource,
    allocation_batch: bool,
    allocation_bucket_ms: i64,
    batch_every: Duration,
    leader_poll: Duration,
    budget_check: Duration,
    anomalies: eai_app::anomalies::AnomalyConfig,
}

impl Application {
    /// Opens the store named by the config, bootstraps it, and binds `config.listen` (port 0: a free port).
    pub async fn build(config: Config) -> anyhow::Result<Application> {
        config.validate()?;
        install_crypto_provider();
        // The process's split cache: sized once (a second server in the same process keeps the first size).
        eai_app::allocation::configure_split_cache(config.split_cache_buckets);
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
            config.key_rates(),
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
            idempotency_retention: config.idempotency_retention,
            budget_check: Duration::from_secs(u64::from(config.budget_check_seconds)),
            anomalies: config.anomalies.clone(),
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

    /// The same application on `clock`: its handlers, rate limits and background jobs read the time from it and
    /// wait on it (a test steps it instead of waiting).
    pub fn with_clock(mut self, clock: Arc<dyn eai_app::clock::Clock>) -> Self {
        self.state = self.state.with_clock(clock);
        self
    }

    /// Serves until `shutdown` completes, then stops accepting and lets in-flight requests finish.
    pub async fn run_until_stopped(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> anyhow::Result<()> {
        let batch = self.allocation_batch.then(|| {
            let source = match (&self.allocation_source, &self.clickhouse) {
                (AllocationSource::ClickHouse, Some(ch)) => Source::ClickHouse(ch.clone()),
                _ => Source::Primary,
            };
            let config = AllocationConfig {
                bucket_ms: self.allocation_bucket_ms,
                ..AllocationConfig::default()
            };
            let schedule = eai_app::batch::Schedule {
                every: self.batch_every,
                poll: self.leader_poll,
            };
            (source, config, schedule)
        });
        let st = &self.state;
        let mut tasks = Jobs {
            store: st.store.clone(),
            metrics: st.metrics.clone(),
            clock: st.clock.clone(),
            leader_poll: self.leader_poll,
            raw_retention_days: self.raw_retention_days,
            idempotency_retention: self.idempotency_retention,
            clickhouse: self.clickhouse.clone(),
            batch,
            budget_check: self.budget_check,
            anomalies: self.anomalies.clone(),
            refresher: eai_app::store_metrics::Refresher {
                store: st.store.clone(),
                source: st.source.clone(),
                metrics: st.metrics.clone(),
                options: st.settings.store_metrics,
                bucket_ms: st.settings.allocation_bucket_ms,
                clock: st.clock.clone(),
            },
        }
        .spawn();
        tasks.push(tokio::spawn(forget_idle_limits(self.state.clone())));
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

/// Rate limiters forget idle keys and addresses every minute (on the state's clock).
async fn forget_idle_limits(state: AppState) {
    let mut minute = Ticker::new(state.clock.clone(), Duration::from_secs(60));
    loop {
        minute.tick().await;
        state.limits.retain_recent();
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
        Some(k) => (k.expose_secret().to_owned(), None),
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
