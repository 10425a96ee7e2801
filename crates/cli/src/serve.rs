//! `eai-gpu serve`: the control plane, configured from `EAI_*` variables and flags (flags win).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use eai_api::{Application, Config};

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on (EAI_LISTEN; default 127.0.0.1:8080).
    #[arg(long)]
    pub listen: Option<SocketAddr>,
    /// Folder of the embedded store and the bootstrap key file (EAI_DATA_DIR; default ./eai-gpu-data).
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Store URL (EAI_DATABASE_URL): sqlite://PATH (default: DATA_DIR/eai-gpu.db).
    #[arg(long)]
    pub database_url: Option<String>,
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
    let store = eai_api::open_store(&config).await?;
    let alloc = eai_engine::allocate::AllocationConfig {
        bucket_ms: i64::from(config.allocation_bucket_minutes) * 60_000,
        ..eai_engine::allocate::AllocationConfig::default()
    };
    Ok((config, store, alloc))
}

/// The period a store-reading command asks for: `--period YYYY-MM`, or `--from`/`--to` as the API reads them (a
/// `--to` date is inclusive), at most 366 days.
pub fn period_of(
    period: Option<&str>,
    from: Option<&str>,
    to: Option<&str>,
) -> anyhow::Result<(eai_engine::time::Timestamp, eai_engine::time::Timestamp)> {
    match period {
        Some(p) => eai_engine::batch::month(p)
            .ok_or_else(|| anyhow::anyhow!("--period must be a month YYYY-MM, not {p:?}")),
        None => eai_api::routes::allocation::requested_period(from, to, eai_api::state::now(), 366)
            .map_err(|e| anyhow::anyhow!("--{}: {}", e.field, e.reason)),
    }
}

/// The configuration of `serve`: environment first, flags over it.
pub fn config(
    listen: Option<SocketAddr>,
    data_dir: Option<PathBuf>,
    database_url: Option<String>,
) -> anyhow::Result<Config> {
    let mut c = Config::from_env()?;
    if let Some(l) = listen {
        c.listen = l;
    }
    if let Some(d) = data_dir {
        c.data_dir = d;
    }
    if let Some(u) = database_url {
        c.database_url = Some(u);
    }
    c.validate()?;
    Ok(c)
}

pub async fn run(args: ServeArgs) -> anyhow::Result<ExitCode> {
    let _telemetry = crate::init_logging("eai-gpu", "info")?;
    let config = config(args.listen, args.data_dir, args.database_url)?;
    tracing::info!(?config, "starting eai-gpu");
    crate::process::spawn_trim(config.malloc_trim_seconds);
    let app = Application::build(config).await?;
    app.run_until_stopped(crate::shutdown_signal()).await?;
    Ok(ExitCode::SUCCESS)
}
