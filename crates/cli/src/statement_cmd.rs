//! `eai-gpu statement --tenant SLUG|ID --period YYYY-MM [--format json|csv] [--issue]`: a tenant's statement of
//! a month, read straight from the store as `GET /v1/finops/gpu/statements/{number}` answers it (the same JSON,
//! or the same CSV), with its adjustments computed now. `--issue` issues it first when it is not yet (issued by
//! `cli`, audited `gpu_statement.issue`); without it, a month with no statement is an error that says so.

use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, ValueEnum};
use eai_app::allocation::Source;
use eai_app::statements::{issue, month_start, read};
use eai_store::{AuditDraft, Scope, StoreError};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Json,
    Csv,
}

#[derive(Debug, Args)]
pub struct StatementArgs {
    /// The tenant, by slug or id.
    #[arg(long, value_name = "SLUG_OR_ID")]
    pub tenant: String,
    /// The month, `YYYY-MM` (UTC).
    #[arg(long)]
    pub period: String,
    /// The API's JSON, or its CSV.
    #[arg(long, value_enum, default_value = "json")]
    pub format: Format,
    /// Issue the statement first if it is not yet (the month must be over).
    #[arg(long)]
    pub issue: bool,
    #[command(flatten)]
    pub store: crate::serve::StoreArgs,
}

/// A refused period in the flag's words; anything else as it is.
fn said(e: StoreError) -> anyhow::Error {
    match e {
        StoreError::Refused(errors) => anyhow::anyhow!(
            "--period {}",
            errors
                .iter()
                .map(|e| e.reason.clone())
                .collect::<Vec<_>>()
                .join("; ")
        ),
        other => anyhow::Error::new(other),
    }
}

pub async fn run(args: StatementArgs) -> anyhow::Result<ExitCode> {
    let now = eai_app::clock::now();
    let from = month_start(&args.period).map_err(said)?;
    let tenant = crate::serve::tenant_arg(Some(&args.tenant))?;
    let (_, store, alloc) = args.store.open().await?;
    let tenant = crate::serve::resolve_tenant(store.as_ref(), tenant)
        .await?
        .context("--tenant names no tenant")?;
    let existing = store
        .statements(Scope::Platform, Some(from), Some(tenant))
        .await?
        .into_iter()
        .next();
    let number = match (existing, args.issue) {
        (Some(s), _) => s.number,
        (None, false) => anyhow::bail!(
            "no statement of {} for {} yet: pass --issue to issue it (the month must be over)",
            args.tenant,
            args.period
        ),
        (None, true) => {
            let audit = AuditDraft::system(
                "cli",
                "gpu_statement.issue",
                now,
                serde_json::json!({ "period": args.period, "tenant_id": tenant.to_string() }),
            );
            let issued = issue(
                store.as_ref(),
                &Source::Primary,
                alloc,
                now,
                &args.period,
                Some(tenant),
                &audit,
            )
            .await
            .map_err(said)?;
            let Some(s) = issued
                .issued
                .into_iter()
                .chain(issued.already_issued)
                .next()
            else {
                anyhow::bail!(
                    "{} has no cost in {}: no statement to issue",
                    args.tenant,
                    args.period
                );
            };
            eprintln!("issued {}", s.number);
            s.number
        }
    };
    let shown = read(
        store.as_ref(),
        &Source::Primary,
        alloc,
        now,
        &number,
        Scope::Tenant(tenant),
    )
    .await?
    .with_context(|| format!("statement {number} not found"))?;
    match args.format {
        Format::Json => println!(
            "{}",
            serde_json::to_string_pretty(&eai_api::views::statement::Statement::of(&shown))?
        ),
        Format::Csv => print!("{}", shown.csv()),
    }
    Ok(ExitCode::SUCCESS)
}
