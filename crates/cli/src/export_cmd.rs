//! `eai-gpu export focus --period YYYY-MM --out FILE [--format csv|parquet] [--version 1.3|1.2]
//! [--granularity day|hour]`: a month's FOCUS export (1.3 by default) read straight from the store (every tenant and the unallocated rows, as a platform_admin gets from
//! `GET /v1/finops/gpu/allocation/focus`); `--out -` writes to stdout.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, Subcommand};
use eai_app::allocation::Source;
use eai_app::focus::{encode, rows, Format, Request};
use eai_engine::allocate::Period;
use eai_engine::batch::month;
use eai_engine::focus::{granularity, Invoices, Version};
use eai_store::Scope;

#[derive(Debug, Args)]
pub struct ExportArgs {
    #[command(subcommand)]
    pub what: ExportCommand,
}

#[derive(Debug, Subcommand)]
pub enum ExportCommand {
    /// The allocation of a month as FOCUS rows (1.3 or 1.2; one per tenant x deployment x policy x UTC day or
    /// hour, plus the unallocated cost), CSV or Parquet.
    Focus(FocusArgs),
}

#[derive(Debug, Args)]
pub struct FocusArgs {
    /// The month, `YYYY-MM` (UTC).
    #[arg(long)]
    pub period: String,
    /// Where to write the file; `-` for stdout.
    #[arg(long)]
    pub out: PathBuf,
    /// `csv` (default) or `parquet`.
    #[arg(long, default_value = "csv")]
    pub format: String,
    /// The FOCUS version of the columns: `1.3` (default) or `1.2`.
    #[arg(long = "version", default_value = "1.3")]
    pub focus_version: String,
    /// `day` (default: a row per UTC day) or `hour`.
    #[arg(long, default_value = "day")]
    pub granularity: String,
    /// Folder of the embedded store (EAI_DATA_DIR).
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Store URL (EAI_DATABASE_URL).
    #[arg(long)]
    pub database_url: Option<String>,
}

pub async fn run(args: ExportArgs) -> anyhow::Result<std::process::ExitCode> {
    let ExportCommand::Focus(args) = args.what;
    let format =
        Format::parse(Some(&args.format)).map_err(|e| anyhow::anyhow!("--format {}", e.reason))?;
    let version = Version::parse(Some(&args.focus_version))
        .map_err(|e| anyhow::anyhow!("--version {}", e.reason))?;
    let span = granularity(Some(&args.granularity))
        .map_err(|e| anyhow::anyhow!("--granularity {}", e.reason))?;
    let Some((from, to)) = month(&args.period) else {
        anyhow::bail!("--period must be a month YYYY-MM, not {:?}", args.period);
    };
    let (config, store, alloc) =
        crate::serve::store_for_allocation(args.data_dir.clone(), args.database_url.clone())
            .await?;
    let period =
        Period::new(from, to, alloc.bucket_ms).map_err(|e| anyhow::anyhow!("{}", e.reason))?;
    // The statements' numbers (InvoiceId): none yet.
    let statement_numbers = Invoices::new();
    let found = rows(
        &Source::Primary,
        store.as_ref(),
        &Request {
            period,
            config: alloc,
            scope: Scope::Platform,
            granularity: span,
            issuer: &config.focus_issuer,
            invoices: &statement_numbers,
        },
    )
    .await?;
    let bytes = encode(&found, version, format)?;
    if args.out.as_os_str() == "-" {
        let mut out = std::io::stdout().lock();
        out.write_all(&bytes).context("writing to stdout")?;
        out.flush().context("writing to stdout")?;
    } else {
        std::fs::write(&args.out, &bytes)
            .with_context(|| format!("cannot write {}", args.out.display()))?;
        eprintln!(
            "{}: {} FOCUS row(s) (FOCUS {}, per {}), {} .. {}, written to {}",
            args.period,
            found.len(),
            version.as_str(),
            args.granularity,
            period.from,
            period.to,
            args.out.display()
        );
    }
    Ok(std::process::ExitCode::SUCCESS)
}
