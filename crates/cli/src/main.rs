//! eai-gpu: the one binary. `serve` runs the control plane, `demo` runs it on a fresh embedded store loaded
//! with a realistic month, `allocate` works on files without a server, `export focus` writes a month's FOCUS file, `statement` a tenant's statement of a month, `keys`, `audit verify`, `migrate` and
//! `replica backfill` administer a store directly, `sampler` (the `eai-sampler` crate) pushes a node's GPU samples, `import` its history from Prometheus.

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

mod admin;
mod allocate_cmd;
mod anomalies_cmd;
mod backup_cmd;
#[cfg(feature = "bench")]
mod bench;
mod demo;
mod demo_data;
mod explain_cmd;
mod export_cmd;
mod forecast_cmd;
mod import_cmd;
mod process;
mod recommend_cmd;
mod replica_cmd;
mod serve;
mod slurm_cmd;
mod statement_cmd;
mod table;
mod usage_cmd;

#[derive(Debug, Parser)]
#[command(
    name = "eai-gpu",
    version,
    about = "On-prem GPU accounting and chargeback"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the control plane (HTTP API) on EAI_DATABASE_URL (default: an SQLite file in ./eai-gpu-data).
    Serve(serve::ServeArgs),
    /// Start the control plane on a fresh embedded store, load a realistic month through the API, print the URL
    /// and the keys, and serve until Ctrl-C.
    Demo(demo::DemoArgs),
    /// Allocate GPU cost from JSON files (the API's shapes) without a server, or, with --period YYYY-MM, run the
    /// allocation batch on the store (gpu_local usage events).
    Allocate(allocate_cmd::AllocateArgs),
    /// Exports from the store: `export focus --period YYYY-MM --out FILE` (FOCUS 1.2, CSV or Parquet).
    Export(export_cmd::ExportArgs),
    /// Why a deployment costs what it does, bucket by bucket, from the store (as GET
    /// /v1/finops/gpu/allocation/explain answers it).
    Explain(explain_cmd::ExplainArgs),
    /// GPU time and cost per pod, node, GPU, namespace, deployment, tenant, model or share method, from the
    /// store (as GET /v1/finops/gpu/usage answers it).
    Usage(usage_cmd::UsageArgs),
    /// What to do about idle and oversized GPUs, with the savings, from the store (as GET
    /// /v1/finops/gpu/recommendations answers it).
    Recommendations(recommend_cmd::RecommendationsArgs),
    /// The month's spend so far and its expected end (low/high) per tenant and deployment, and when each budget
    /// is expected to run out, from the store (as GET /v1/finops/gpu/forecast answers it).
    Forecast(forecast_cmd::ForecastArgs),
    /// A tenant's statement of a month that is over (as GET /v1/finops/gpu/statements/{number} answers it, JSON
    /// or CSV), with its adjustments; --issue issues it first if it is not yet.
    Statement(statement_cmd::StatementArgs),
    /// Spend anomalies recorded for a period (as GET /v1/finops/gpu/anomalies answers it); --check runs one
    /// detection round first.
    Anomalies(anomalies_cmd::AnomaliesArgs),
    /// Slurm's accounting of its GPU jobs (`sacct --json`) beside what was measured of each, with their cost
    /// and the jobs whose GPUs sat idle, from the store (as POST /v1/finops/gpu/slurm/reconciliation answers it).
    SlurmReconcile(slurm_cmd::SlurmReconcileArgs),
    /// API keys, straight on the store (for recovery; the API's POST /v1/auth/api-keys is the usual way).
    Keys(admin::KeysArgs),
    /// The audit trail.
    Audit(admin::AuditArgs),
    /// Back up the embedded store while it serves (`backup --out FILE`), or check a backup or a restored
    /// database (`backup check`). PostgreSQL: pg_dump (the command says how).
    Backup(backup_cmd::BackupArgs),
    /// Put a backup in place of the embedded store (stop `serve` first), then check it.
    Restore(backup_cmd::RestoreArgs),
    /// Create or upgrade the store's schema, then exit.
    Migrate(admin::StoreArgs),
    /// The ClickHouse replica: `replica backfill` copies what the store holds into a replica added later.
    Replica(replica_cmd::ReplicaArgs),
    /// Read GPU metrics (DCGM exporter, Prometheus or NVML) and push them to the control plane, never losing a
    /// window (durable spool, retries).
    Sampler(eai_sampler::cli::SamplerArgs),
    /// Import past GPU usage from a Prometheus server that scraped DCGM exporters: the sampler's conversion and
    /// attribution, sent in time order, resumable (a checkpoint file), idempotent.
    Import(eai_sampler::import::ImportArgs),
    /// Load generator against a running control plane (see scripts/bench.sh; cargo feature `bench`).
    #[cfg(feature = "bench")]
    Bench(bench::BenchArgs),
}

fn main() -> std::process::ExitCode {
    // Flags, then their EAI_* variables (a blank one counts as unset), then the defaults.
    let matches = eai_api::config::unset_blank_env(Cli::command()).get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    match cli.command {
        Command::Serve(_) | Command::Demo(_) | Command::Sampler(_) => process::tune_allocator(),
        Command::Allocate(_)
        | Command::Export(_)
        | Command::Explain(_)
        | Command::Usage(_)
        | Command::Recommendations(_)
        | Command::Forecast(_)
        | Command::Statement(_)
        | Command::Anomalies(_)
        | Command::SlurmReconcile(_)
        | Command::Keys(_)
        | Command::Audit(_) => process::default_sigpipe(),
        _ => {}
    }
    let result = match cli.command {
        Command::Allocate(args) if args.period.is_some() => {
            runtime().and_then(|rt| rt.block_on(allocate_cmd::run_batch(args)))
        }
        Command::Allocate(args) => allocate_cmd::run(&args),
        Command::Serve(args) => runtime().and_then(|rt| rt.block_on(serve::run(args))),
        Command::Demo(args) => runtime().and_then(|rt| rt.block_on(demo::run(args))),
        Command::Export(args) => runtime().and_then(|rt| rt.block_on(export_cmd::run(args))),
        Command::Explain(args) => runtime().and_then(|rt| rt.block_on(explain_cmd::run(args))),
        Command::Usage(args) => runtime().and_then(|rt| rt.block_on(usage_cmd::run(args))),
        Command::Recommendations(args) => {
            runtime().and_then(|rt| rt.block_on(recommend_cmd::run(args)))
        }
        Command::Forecast(args) => runtime().and_then(|rt| rt.block_on(forecast_cmd::run(args))),
        Command::Statement(args) => runtime().and_then(|rt| rt.block_on(statement_cmd::run(args))),
        Command::Anomalies(args) => runtime().and_then(|rt| rt.block_on(anomalies_cmd::run(args))),
        Command::SlurmReconcile(args) => runtime().and_then(|rt| rt.block_on(slurm_cmd::run(args))),
        Command::Keys(args) => runtime().and_then(|rt| rt.block_on(admin::keys(args))),
        Command::Audit(args) => runtime().and_then(|rt| rt.block_on(admin::audit(args))),
        Command::Backup(args) => runtime().and_then(|rt| rt.block_on(backup_cmd::backup(args))),
        Command::Restore(args) => runtime().and_then(|rt| rt.block_on(backup_cmd::restore(args))),
        Command::Migrate(args) => runtime().and_then(|rt| rt.block_on(admin::migrate(args))),
        Command::Replica(args) => runtime().and_then(|rt| rt.block_on(replica_cmd::run(args))),
        Command::Sampler(args) => runtime().and_then(|rt| {
            let _telemetry = init_logging("eai-gpu-sampler", "info")?;
            Ok(rt.block_on(eai_sampler::cli::run(args, shutdown_signal()))?)
        }),
        Command::Import(args) => runtime().and_then(|rt| {
            let _telemetry = init_logging("eai-gpu-import", "warn")?;
            rt.block_on(import_cmd::run(args, shutdown_signal()))
        }),
        #[cfg(feature = "bench")]
        Command::Bench(args) => runtime().and_then(|rt| rt.block_on(bench::run(args))),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::from(2)
        }
    }
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?)
}

/// Logs to stderr (`RUST_LOG`, e.g. `info,eai_api=debug`; `EAI_LOG_FORMAT=json`) and, when
/// `OTEL_EXPORTER_OTLP_ENDPOINT` is set, exports spans over OTLP (see `eai_telemetry::export`). Keep the guard
/// until the command ends: dropping it flushes the last spans.
pub fn init_logging(
    service: &str,
    default_filter: &str,
) -> anyhow::Result<eai_telemetry::export::Guard> {
    eai_telemetry::export::init(service, default_filter)
}

/// Resolves on Ctrl-C or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
    tracing::info!("shutdown requested: draining in-flight requests");
}
