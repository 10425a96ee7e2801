//! `eai-gpu anomalies (--period YYYY-MM | --from --to) [--tenant SLUG|ID] [--json] [--check]`: the spend
//! anomalies recorded for the hours of a period, read straight from the store as `GET
//! /v1/finops/gpu/anomalies` answers it (the same JSON with `--json`), newest hour first. `--tenant` keeps what
//! that tenant's reader sees (its dedicated deployments'). `--check` first runs one detection round now, as
//! `serve` does every `EAI_ANOMALY_CHECK_SECONDS`, with the server's `EAI_ANOMALY_*` settings (webhook
//! included): anomalies found again are not recorded twice.

use std::process::ExitCode;

use clap::Args;
use eai_store::anomalies::Anomaly;

use crate::table::Table;

#[derive(Debug, Args)]
pub struct AnomaliesArgs {
    /// What this tenant's reader sees: its dedicated deployments' anomalies.
    #[arg(long, value_name = "SLUG_OR_ID")]
    pub tenant: Option<String>,
    /// Run one detection round now (EAI_ANOMALY_* settings) before listing.
    #[arg(long)]
    pub check: bool,
    #[command(flatten)]
    pub report: crate::serve::ReportArgs,
}

pub async fn run(args: AnomaliesArgs) -> anyhow::Result<ExitCode> {
    let tenant = crate::serve::tenant_arg(args.tenant.as_deref())?;
    let settings = if args.check {
        Some(
            eai_api::config::ConfigArgs::from_env()?
                .into_config()?
                .anomalies,
        )
    } else {
        None
    };
    let (period, store, _) = args.report.open().await?;
    let scope = crate::serve::resolve_scope(store.as_ref(), tenant).await?;
    if let Some(config) = settings {
        let http = eai_app::budget_alerts::http_client()?;
        let metrics = eai_app::metrics::Metrics::new();
        let at = eai_app::clock::now();
        let round =
            eai_app::anomalies::check_once(store.as_ref(), &metrics, &http, &config, at).await?;
        eprintln!(
            "checked the hours from {} to {}: {} new anomalies",
            round.from,
            round.to,
            round.recorded.len()
        );
    }
    let found = store.anomalies(scope, period.from, period.to).await?;
    if args.report.json {
        let view = eai_api::views::anomaly::AnomalyList {
            from: period.from.to_string(),
            to: period.to.to_string(),
            items: found
                .iter()
                .map(eai_api::views::anomaly::Anomaly::of)
                .collect(),
        };
        println!("{}", serde_json::to_string_pretty(&view)?);
    } else {
        print!("{}", render(&found));
    }
    Ok(ExitCode::SUCCESS)
}

/// The anomalies as a table, newest hour first.
fn render(found: &[Anomaly]) -> String {
    let mut t = Table::new(&[
        ("id", false),
        ("hour", false),
        ("deployment", false),
        ("metric", false),
        ("value", true),
        ("median", true),
        ("MAD", true),
        ("MADs away", true),
        ("direction", false),
        ("baseline h", true),
    ]);
    for a in found {
        let f = &a.finding;
        let metric = match f.currency {
            Some(c) => format!("{} {}", f.metric.as_str(), c.as_str()),
            None => f.metric.as_str().to_string(),
        };
        t.row(vec![
            a.id(),
            f.hour.to_string(),
            f.deployment_id.clone(),
            metric,
            f.value.normalize().to_string(),
            f.median.normalize().to_string(),
            f.mad.normalize().to_string(),
            f.deviation
                .map_or_else(|| "-".to_string(), |d| d.to_string()),
            f.direction.as_str().to_string(),
            f.baseline_hours.to_string(),
        ]);
    }
    format!("{}{} anomalies\n", t.render(), found.len())
}
