//! `eai-gpu serve`: the control plane, configured from flags and their `EAI_*` variables (a flag wins).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use eai_api::config::ConfigArgs;
use eai_api::{Application, Config};
use secrecy::{ExposeSecret, SecretString};

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Every setting of the control plane, each with its EAI_* variable.
    #[command(flatten)]
    pub config: ConfigArgs,
}

/// The store the flags name (environment first, flags over it), with the server's allocation settings: what the
/// commands that read the store offline (`allocate --period`, `export`, `explain`) run the engine on.
pub async fn store_for_allocation(
    data_dir: Option<PathBuf>,
    database_url: Option<String>,
) -> anyhow::Result<(
    Config,
    std::sync::Arc<dyn eai_store::Store>,
    eai_engine::allocate::AllocationConfig,
)> {
    let config = config(None, data_dir, database_url)?;
    // A report of a folder with no store would open an empty one there and report nothing: say so instead.
    if let eai_api::config::Database::Sqlite(file) = config.database()? {
        if !file.exists() {
            anyhow::bail!(
                "no store at {}: point --data-dir (EAI_DATA_DIR) at the folder `eai-gpu serve` uses, or give \
                 --database-url",
                file.display()
            );
        }
    }
    let store = eai_api::open_store(&config).await?;
    let alloc = eai_engine::allocate::AllocationConfig {
        bucket_ms: i64::from(config.allocation_bucket_minutes) * 60_000,
        ..eai_engine::allocate::AllocationConfig::default()
    };
    Ok((config, store, alloc))
}

/// What a report read from the store takes (`explain`, `usage`): its period, the JSON switch and the store.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// A month, `YYYY-MM` (UTC); or give --from and --to.
    #[arg(long, conflicts_with_all = ["from", "to"])]
    pub period: Option<String>,
    /// Start: a date (`YYYY-MM-DD`) or an RFC 3339 date-time.
    #[arg(long)]
    pub from: Option<String>,
    /// End: a date (inclusive of that day) or an RFC 3339 date-time (exclusive).
    #[arg(long)]
    pub to: Option<String>,
    /// The API's JSON instead of tables.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub store: StoreArgs,
}

/// The store a report reads: `--data-dir` or `--database-url`, else `EAI_DATA_DIR` / `EAI_DATABASE_URL`.
#[derive(Debug, Args)]
pub struct StoreArgs {
    /// Folder of the embedded store.
    #[arg(long, env = "EAI_DATA_DIR", value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// Store URL: sqlite://PATH or postgres://… (secret: a password).
    #[arg(
        long,
        env = "EAI_DATABASE_URL",
        value_name = "URL",
        hide_env_values = true
    )]
    pub database_url: Option<SecretString>,
}

impl StoreArgs {
    /// The store, with the server's configuration and the allocation settings to read it with.
    pub async fn open(
        &self,
    ) -> anyhow::Result<(
        Config,
        std::sync::Arc<dyn eai_store::Store>,
        eai_engine::allocate::AllocationConfig,
    )> {
        store_for_allocation(
            self.data_dir.clone(),
            self.database_url.as_ref().map(expose),
        )
        .await
    }
}

impl ReportArgs {
    /// The period asked: `--period YYYY-MM`, or `--from`/`--to` as the API reads them (a `--to` date is
    /// inclusive), at most 366 days; widened to the server's allocation buckets.
    /// Returns it with the store and the allocation settings to read it with.
    pub async fn open(
        &self,
    ) -> anyhow::Result<(
        eai_engine::allocate::Period,
        std::sync::Arc<dyn eai_store::Store>,
        eai_engine::allocate::AllocationConfig,
    )> {
        let (from, to) = match &self.period {
            Some(p) => eai_engine::batch::month(p)
                .ok_or_else(|| anyhow::anyhow!("--period must be a month YYYY-MM, not {p:?}"))?,
            None => eai_app::params::requested_period(
                self.from.as_deref(),
                self.to.as_deref(),
                eai_app::clock::now(),
                366,
            )
            .map_err(|e| anyhow::anyhow!("--{}: {}", e.field, e.reason))?,
        };
        let (_, store, alloc) = self.store.open().await?;
        let period = eai_engine::allocate::Period::new(from, to, alloc.bucket_ms)
            .map_err(|e| anyhow::anyhow!("{}", e.reason))?;
        Ok((period, store, alloc))
    }
}

/// `--tenant` of the reports: a tenant's slug or its id (checked before the store is opened).
pub fn tenant_arg(arg: Option<&str>) -> anyhow::Result<Option<eai_store::TenantRef>> {
    arg.map(|t| {
        t.parse::<eai_store::TenantRef>().map_err(|e| {
            anyhow::anyhow!(
                "--tenant must be a tenant's slug or id (a UUID): {}",
                e.reason
            )
        })
    })
    .transpose()
}

/// The tenant a `--tenant` names: an id as it is (a tenant seen in data but never registered still has its
/// rows), a slug looked up in the store (an unknown slug is an error, never an empty report).
pub async fn resolve_tenant(
    store: &dyn eai_store::Store,
    tenant: Option<eai_store::TenantRef>,
) -> anyhow::Result<Option<eai_engine::domain::TenantId>> {
    match tenant {
        None => Ok(None),
        Some(eai_store::TenantRef::Id(id)) => Ok(Some(id)),
        Some(eai_store::TenantRef::Slug(slug)) => {
            let t = store
                .tenant(&eai_store::TenantRef::Slug(slug.clone()))
                .await?
                .ok_or_else(|| {
                    anyhow::anyhow!("--tenant {slug}: no tenant is registered with this slug")
                })?;
            Ok(Some(t.id))
        }
    }
}

/// What `--tenant` makes a report read as: that tenant's reader ([`resolve_tenant`]), else the platform.
pub async fn resolve_scope(
    store: &dyn eai_store::Store,
    tenant: Option<eai_store::TenantRef>,
) -> anyhow::Result<eai_store::Scope> {
    Ok(resolve_tenant(store, tenant)
        .await?
        .map_or(eai_store::Scope::Platform, eai_store::Scope::Tenant))
}

/// A secret handed to what takes it as text.
fn expose(secret: &SecretString) -> String {
    secret.expose_secret().to_owned()
}

/// The configuration of the commands that open the store: the `EAI_*` variables, with the flags given over
/// them.
pub fn config(
    listen: Option<SocketAddr>,
    data_dir: Option<PathBuf>,
    database_url: Option<String>,
) -> anyhow::Result<Config> {
    let mut args = ConfigArgs::from_env()?;
    args.listen = listen.or(args.listen);
    args.data_dir = data_dir.or(args.data_dir);
    args.database_url = database_url.map(SecretString::from).or(args.database_url);
    args.into_config()
}

pub async fn run(args: ServeArgs) -> anyhow::Result<ExitCode> {
    let _telemetry = crate::init_logging("eai-gpu", "info")?;
    let config = args.config.into_config()?;
    tracing::info!(?config, "starting eai-gpu");
    crate::process::spawn_trim(config.malloc_trim_seconds);
    let app = Application::build(config).await?;
    app.run_until_stopped(crate::shutdown_signal()).await?;
    Ok(ExitCode::SUCCESS)
}
