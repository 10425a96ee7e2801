//! `eai-gpu replica backfill`: copies what the primary store holds into the ClickHouse replica, for a replica
//! added to an existing database (the outbox only carries changes made while a server ran with
//! `EAI_CLICKHOUSE_URL`). See [`eai_store::clickhouse::backfill`] for why it is safe while servers run.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::{Args, Subcommand};
use eai_engine::time::Timestamp;
use eai_store::clickhouse::{backfill, Backfilled, ClickHouse};

use crate::admin::StoreArgs;

const HOUR_MS: i64 = 3_600_000;

#[derive(Debug, Args)]
pub struct ReplicaArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    #[command(subcommand)]
    pub command: ReplicaCommand,
}

#[derive(Debug, Subcommand)]
pub enum ReplicaCommand {
    /// Copy what the store holds (the raw samples its retention kept, hourly rollups, gaps, usage events) into
    /// the ClickHouse replica. Start the servers with EAI_CLICKHOUSE_URL first: from then on the outbox
    /// carries every change, and a change it carries always wins over the backfill's copy. Safe to run again.
    Backfill {
        /// The replica (EAI_CLICKHOUSE_URL): `http://[user[:password]@]host:8123[/database]`.
        #[arg(long, env = "EAI_CLICKHOUSE_URL", hide_env_values = true)]
        clickhouse_url: String,
        /// The ClickHouse cluster the replica's tables live on (EAI_CLICKHOUSE_CLUSTER, as `serve` has it):
        /// replicated tables behind `Distributed` ones, created on every server if missing.
        #[arg(long, env = "EAI_CLICKHOUSE_CLUSTER")]
        clickhouse_cluster: Option<String>,
        /// Start (YYYY-MM-DD or RFC 3339, UTC; rounded down to the hour). Default: the store's earliest row.
        #[arg(long)]
        from: Option<String>,
        /// End, exclusive (rounded up to the hour). Default: just past the store's latest row.
        #[arg(long)]
        to: Option<String>,
        /// Hours read from the store and inserted into ClickHouse at a time.
        #[arg(long, default_value_t = 24, value_parser = clap::value_parser!(u32).range(1..=744))]
        step_hours: u32,
    },
}

pub async fn run(args: ReplicaArgs) -> anyhow::Result<ExitCode> {
    let ReplicaCommand::Backfill {
        clickhouse_url,
        clickhouse_cluster,
        from,
        to,
        step_hours,
    } = args.command;
    let ch = ClickHouse::from_url(&clickhouse_url)?.with_cluster(clickhouse_cluster.as_deref())?;
    let mut config = crate::serve::config(
        None,
        args.store.data_dir.clone(),
        args.store.database_url.clone(),
    )?;
    config.clickhouse_url = Some(clickhouse_url.into());
    config.clickhouse_cluster = clickhouse_cluster;
    let store = eai_api::open_store(&config).await?;
    ch.migrate()
        .await
        .context("cannot create the replica's tables")?;

    let instant = |flag: &str, s: &Option<String>| -> anyhow::Result<Option<Timestamp>> {
        s.as_deref()
            .map(|s| {
                Timestamp::parse_date_or_datetime(s)
                    .map_err(|e| anyhow::anyhow!("--{flag} `{s}`: {e}"))
            })
            .transpose()
    };
    let (from, to) = (instant("from", &from)?, instant("to", &to)?);
    let extent = store.replica_extent().await?;
    let (Some(from), Some(to)) = (from.or(extent.map(|e| e.0)), to.or(extent.map(|e| e.1))) else {
        println!("the {} store holds nothing to copy", store.backend());
        return Ok(ExitCode::SUCCESS);
    };
    let from = Timestamp(from.0.div_euclid(HOUR_MS) * HOUR_MS);
    let to = Timestamp((to.0 + HOUR_MS - 1).div_euclid(HOUR_MS) * HOUR_MS);
    if to <= from {
        anyhow::bail!("--to must be after --from");
    }
    eprintln!(
        "copying {from} to {to} from the {} store into ClickHouse database `{}`, {step_hours} h at a time",
        store.backend(),
        ch.database()
    );

    let started = Instant::now();
    let terminal = std::io::stderr().is_terminal();
    let mut last = Instant::now();
    let done = backfill(
        store.as_ref(),
        &ch,
        from,
        to,
        i64::from(step_hours) * HOUR_MS,
        |d: &Backfilled| {
            // A line every 2 s (redrawn in place on a terminal), and the last one.
            if d.steps == d.total_steps || last.elapsed() >= Duration::from_secs(2) {
                last = Instant::now();
                let line = progress_line(d, started.elapsed());
                if terminal {
                    eprint!("\r\x1b[K{line}");
                } else {
                    eprintln!("{line}");
                }
            }
        },
    )
    .await?;
    if terminal {
        eprintln!();
    }
    let secs = started.elapsed().as_secs_f64();
    println!(
        "copied {} rows in {secs:.1} s ({:.0} rows/s): {} samples, {} rollups, {} gaps, {} usage events",
        done.rows(),
        done.rows() as f64 / secs.max(1e-9),
        done.samples,
        done.rollups,
        done.gaps,
        done.events
    );
    Ok(ExitCode::SUCCESS)
}

fn progress_line(d: &Backfilled, elapsed: Duration) -> String {
    let secs = elapsed.as_secs_f64().max(1e-9);
    let eta = if d.steps == 0 {
        String::from("?")
    } else {
        let left = secs / d.steps as f64 * (d.total_steps - d.steps) as f64;
        format!("{left:.0} s")
    };
    format!(
        "step {}/{}: {} rows, {:.0} rows/s, {eta} left",
        d.steps,
        d.total_steps,
        d.rows(),
        d.rows() as f64 / secs
    )
}
