//! `eai-gpu backup` and `eai-gpu restore`: an online copy of the embedded store, the checks a copy must pass,
//! and its restore (`eai_store::sqlite::backup`). PostgreSQL is backed up with its own tools (`pg_dump`); `backup
//! check --database-url` checks a restored database the same way. A check prints the audit chain's head and,
//! for every month the store holds, the allocation's totals and a digest (SHA-256 of the API's JSON of the
//! month's allocation): the same lines on the source and on its restored copy mean the same bills.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context};
use clap::{Args, Subcommand};
use eai_api::Database;
use eai_engine::allocate::{AllocationConfig, Period};
use eai_engine::batch::{month, month_of};
use eai_engine::view::AllocationView;
use eai_store::sqlite::backup as sqlite_backup;
use eai_store::Store;
use rust_decimal::Decimal;
use sha2::{Digest, Sha256};

use crate::admin::StoreArgs;

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct BackupArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    /// The file to write (it must not exist). The embedded store is copied while `serve` runs.
    #[arg(long)]
    pub out: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Option<BackupCommand>,
}

#[derive(Debug, Subcommand)]
pub enum BackupCommand {
    /// Check a backup file (on a scratch copy: the file is not changed), or with --database-url a database (a
    /// PostgreSQL dump restored with pg_restore): integrity, schema, the audit chain, and every month's
    /// allocation (totals and digest; compare them with the source's).
    Check {
        /// A file written by `eai-gpu backup`.
        file: Option<PathBuf>,
        #[command(flatten)]
        store: StoreArgs,
    },
}

#[derive(Debug, Args)]
pub struct RestoreArgs {
    /// A file written by `eai-gpu backup`.
    pub file: PathBuf,
    /// Folder of the embedded store to restore into (EAI_DATA_DIR; default ./eai-gpu-data).
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// The SQLite store to restore into, as sqlite://PATH (EAI_DATABASE_URL).
    #[arg(long)]
    pub database_url: Option<String>,
    /// Replace the store already there (kept beside it as `<file>.before-restore`). Stop `serve` first.
    #[arg(long)]
    pub replace: bool,
}

/// How to back up PostgreSQL, printed where a command is asked to do it.
const PG_HELP: &str = "PostgreSQL is backed up with its own tools (consistent while serving):\n  \
     pg_dump --format=custom --schema=eai --file eai.dump \"$EAI_DATABASE_URL\"\n\
     restore into an empty database (the cluster needs the role eai_app: `eai-gpu migrate` on any database of it \
     creates it) and check it:\n  \
     pg_restore --exit-on-error --dbname \"$NEW_URL\" eai.dump && eai-gpu backup check --database-url \"$NEW_URL\"";

/// The embedded store's file; PostgreSQL is refused with the commands to use instead.
fn sqlite_path(config: &eai_api::Config) -> anyhow::Result<PathBuf> {
    match config.database()? {
        Database::Sqlite(path) => Ok(path),
        Database::Postgres(_) => bail!("{PG_HELP}"),
    }
}

pub async fn backup(args: BackupArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        Some(BackupCommand::Check {
            file: Some(file),
            store,
        }) => {
            if store.database_url.is_some() || store.data_dir.is_some() {
                bail!("backup check: give a FILE or --database-url/--data-dir, not both");
            }
            check_backup_file(&file).await
        }
        Some(BackupCommand::Check { file: None, store }) => {
            if store.database_url.is_none() && store.data_dir.is_none() {
                bail!("backup check: give a FILE, or --database-url (a restored database) or --data-dir");
            }
            let config = crate::serve::config(None, store.data_dir, store.database_url)?;
            let s = eai_api::open_store(&config).await?;
            report(s.as_ref(), config.allocation_bucket_minutes).await
        }
        None => {
            let Some(out) = args.out else {
                bail!("backup: give --out FILE (or `backup check`)");
            };
            let config = crate::serve::config(None, args.store.data_dir, args.store.database_url)?;
            let db = sqlite_path(&config)?;
            let info = tokio::task::spawn_blocking(move || sqlite_backup::backup(&db, &out))
                .await
                .context("the backup task failed")??;
            println!(
                "backup {}: {} bytes, schema {}, in {:.2} s",
                info.path.display(),
                info.bytes,
                info.schema_version,
                info.seconds
            );
            check_backup_file(&info.path).await
        }
    }
}

/// The file's own checks, then the store's on a scratch copy (opening a store may migrate it: never the file).
async fn check_backup_file(file: &Path) -> anyhow::Result<ExitCode> {
    let f = file.to_path_buf();
    let c = tokio::task::spawn_blocking(move || sqlite_backup::check_file(&f))
        .await
        .context("the check task failed")??;
    println!(
        "file {}: integrity ok, schema {}, {} samples, {} audit events",
        file.display(),
        c.schema_version,
        c.samples,
        c.audit_events
    );
    let scratch = std::env::temp_dir().join(format!(
        "eai-gpu-check-{}-{}",
        std::process::id(),
        eai_app::clock::now().0
    ));
    std::fs::create_dir_all(&scratch)
        .with_context(|| format!("cannot create {}", scratch.display()))?;
    let copy = scratch.join("eai-gpu.db");
    let result = async {
        sqlite_backup::copy_file(file, &copy)?;
        let config = crate::serve::config(None, Some(scratch.clone()), None)?;
        let s = eai_api::open_store(&config).await?;
        report(s.as_ref(), config.allocation_bucket_minutes).await
    }
    .await;
    let _ = std::fs::remove_dir_all(&scratch);
    result
}

pub async fn restore(args: RestoreArgs) -> anyhow::Result<ExitCode> {
    let config = crate::serve::config(None, args.data_dir, args.database_url)?;
    let db = sqlite_path(&config)?;
    let (file, target, replace) = (args.file.clone(), db.clone(), args.replace);
    let r = tokio::task::spawn_blocking(move || sqlite_backup::restore(&file, &target, replace))
        .await
        .context("the restore task failed")??;
    println!(
        "restored {} into {} (schema {}, {} samples, {} audit events){}",
        args.file.display(),
        db.display(),
        r.check.schema_version,
        r.check.samples,
        r.check.audit_events,
        r.previous
            .map(|p| format!("; the store it replaced is kept as {}", p.display()))
            .unwrap_or_default()
    );
    let s = eai_api::open_store(&config).await?;
    report(s.as_ref(), config.allocation_bucket_minutes).await
}

/// The audit chain verified, then one line per month of the store's data. Fails (exit 1) on a broken chain.
async fn report(store: &dyn Store, bucket_minutes: u32) -> anyhow::Result<ExitCode> {
    if let Some(broken) = store.verify_audit_chain(None).await? {
        println!("audit chain: BROKEN at {broken:?}");
        return Ok(ExitCode::from(1));
    }
    match store.audit_head().await? {
        Some(h) => println!("audit chain: verified, head {}:{}", h.seq, h.hash),
        None => println!("audit chain: verified (empty)"),
    }
    let Some((from, to)) = store.replica_extent().await? else {
        println!("no samples, rollups or usage events: no month to allocate");
        return Ok(ExitCode::SUCCESS);
    };
    let config = AllocationConfig {
        bucket_ms: i64::from(bucket_minutes) * 60_000,
        ..AllocationConfig::default()
    };
    let mut m = month_of(from);
    loop {
        let (start, end) = month(&m).context("a month of the store")?;
        if start >= to {
            break;
        }
        let period =
            Period::new(start, end, config.bucket_ms).map_err(|e| anyhow::anyhow!(e.reason))?;
        let a = eai_app::allocation::compute(store, period, config)
            .await
            .with_context(|| format!("cannot allocate {m}"))?;
        // Per currency: cost, allocated, unallocated.
        let mut totals: BTreeMap<&str, [Decimal; 3]> = BTreeMap::new();
        for d in &a.deployments {
            if let Some(c) = &d.currency {
                let t = totals.entry(c.as_str()).or_default();
                t[0] += d.cost;
                t[1] += d.allocated;
                t[2] += d.unallocated;
            }
        }
        let totals: Vec<String> = totals
            .iter()
            .map(|(c, [cost, al, un])| {
                format!("cost {cost} {c} (allocated {al}, unallocated {un})")
            })
            .collect();
        let json = serde_json::to_vec(&AllocationView::new(&a))?;
        println!(
            "month {m}: {} deployment(s), {} tenant(s), {}, digest {}",
            a.deployments.len(),
            a.tenants.len(),
            if totals.is_empty() {
                "nothing priced".to_string()
            } else {
                totals.join(" + ")
            },
            hex::encode(Sha256::digest(&json))
        );
        m = month_of(end);
    }
    Ok(ExitCode::SUCCESS)
}
