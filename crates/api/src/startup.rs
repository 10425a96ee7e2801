//! Building and running the control plane: open the store, bootstrap the first platform_admin key, bind, serve
//! until a shutdown signal, then drain. `main` only wires this up.

use std::future::Future;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use eai_engine::time::Timestamp;
use eai_store::postgres::PgStore;
use eai_store::rollups::RollupConfig;
use eai_store::sqlite::{SqliteConfig, SqliteStore};
use eai_store::{AuditDraft, Role, Store};
use serde_json::json;
use tokio::net::TcpListener;

use crate::auth::{hash_api_key, new_api_key};
use crate::config::{redact_url, Config, Database};
use crate::routes::router;
use crate::state::{now, AppState, Settings};

/// How often raw samples past their retention are pruned.
const PRUNE_EVERY: Duration = Duration::from_secs(3600);

/// A bound, ready-to-run control plane.
#[derive(Debug)]
pub struct Application {
    listener: TcpListener,
    local_addr: SocketAddr,
    state: AppState,
    raw_retention_days: u32,
}

impl Application {
    /// Opens the store named by the config, bootstraps it, and binds `config.listen` (port 0: a free port).
    pub async fn build(config: Config) -> anyhow::Result<Application> {
        config.validate()?;
        let store = open_store(&config).await?;
        Self::build_with_store(config, store).await
    }

    /// Like [`Application::build`], on a store opened by the caller.
    pub async fn build_with_store(
        config: Config,
        store: Arc<dyn Store>,
    ) -> anyhow::Result<Application> {
        config.validate()?;
        bootstrap(store.as_ref(), &config).await?;
        let listener = TcpListener::bind(config.listen)
            .await
            .with_context(|| format!("cannot listen on {}", config.listen))?;
        let local_addr = listener
            .local_addr()
            .context("cannot read the bound address")?;
        let state = AppState::new(store, Settings::from_config(&config));
        Ok(Application {
            listener,
            local_addr,
            state,
            raw_retention_days: config.raw_retention_days,
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

    /// Serves until `shutdown` completes, then stops accepting and lets in-flight requests finish.
    pub async fn run_until_stopped(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> anyhow::Result<()> {
        let pruner = (self.raw_retention_days > 0).then(|| {
            tokio::spawn(prune_raw_samples(
                self.state.store.clone(),
                self.raw_retention_days,
            ))
        });
        tracing::info!(
            address = %self.local_addr,
            storage = self.state.store.backend(),
            "eai-gpu control plane listening"
        );
        let app = router(self.state.clone());
        let served = axum::serve(self.listener, app)
            .with_graceful_shutdown(shutdown)
            .await;
        if let Some(p) = pruner {
            p.abort();
        }
        tracing::info!("eai-gpu control plane stopped");
        served.context("the HTTP server failed")
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
    let rec = store
        .create_api_key(
            &hash_api_key(&key),
            Role::PlatformAdmin,
            None,
            Some("bootstrap"),
            at,
        )
        .await
        .context("cannot store the bootstrap key")?;
    audit_bootstrap(
        store,
        &rec.id,
        at,
        if file.is_some() {
            "generated"
        } else {
            "environment"
        },
    )
    .await?;
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

async fn audit_bootstrap(
    store: &dyn Store,
    key_id: &str,
    at: Timestamp,
    source: &str,
) -> anyhow::Result<()> {
    let draft = AuditDraft {
        occurred_at: at,
        actor: "system".into(),
        actor_role: None,
        tenant_id: None,
        action: "api_key.bootstrap".into(),
        decision: "allow".into(),
        resource: Some(key_id.to_string()),
        request_id: None,
        details: json!({ "role": "platform_admin", "source": source }),
    };
    store
        .append_audit(&draft)
        .await
        .context("cannot audit the bootstrap key")?;
    Ok(())
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

/// Deletes raw samples past their retention, hourly (rollups stay).
async fn prune_raw_samples(store: Arc<dyn Store>, days: u32) {
    let mut tick = tokio::time::interval(PRUNE_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let before = Timestamp(now().0 - i64::from(days) * 86_400_000);
        match store.prune_raw_samples(before).await {
            Ok(0) => {}
            Ok(n) => {
                tracing::info!(rows = n, before = %before, "pruned raw samples past their retention")
            }
            Err(e) => tracing::warn!(error = %e, "pruning raw samples failed; will retry"),
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
