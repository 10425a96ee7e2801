//! `eai-gpu recommendations (--period YYYY-MM | --from --to) [--tenant SLUG|ID] [--json] [--idle-utilization
//! SHARE] [--idle-share SHARE] [--low-utilization SHARE]`: what to do about a period's idle and oversized GPUs,
//! with the savings, read straight from the store as `GET /v1/finops/gpu/recommendations` answers it (the same
//! JSON with `--json`). `--tenant` keeps what that tenant's reader sees (its dedicated deployments). Thresholds:
//! the flags, else the `EAI_RECOMMEND_*` variables, else 0.05, 0.5 and 0.3.

use std::process::ExitCode;

use clap::Args;
use eai_api::views::recommendation::RecommendationList;
use eai_app::allocation::Source;
use eai_engine::allocate::Period;
use eai_engine::money::Money;
use eai_engine::recommend::{grouped, parse_threshold, Recommendation, Thresholds};
use rust_decimal::Decimal;

use crate::table::Table;

fn threshold(v: &str) -> Result<Decimal, String> {
    parse_threshold("threshold", v).map_err(|e| e.reason)
}

#[derive(Debug, Args)]
pub struct RecommendationsArgs {
    /// What this tenant's reader sees: its dedicated deployments.
    #[arg(long, value_name = "SLUG_OR_ID")]
    pub tenant: Option<String>,
    /// A GPU-hour busy at most this share of its time is idle, 0 to 1 [default: 0.05].
    #[arg(long, env = "EAI_RECOMMEND_IDLE_UTILIZATION", value_name = "SHARE", value_parser = threshold)]
    pub idle_utilization: Option<Decimal>,
    /// A GPU idle for at least this share of the hours it ran could go, 0 to 1 [default: 0.5].
    #[arg(long, env = "EAI_RECOMMEND_IDLE_SHARE", value_name = "SHARE", value_parser = threshold)]
    pub idle_share: Option<Decimal>,
    /// A deployment busy under this share of its GPU-hours is oversized, 0 to 1 [default: 0.3].
    #[arg(long, env = "EAI_RECOMMEND_LOW_UTILIZATION", value_name = "SHARE", value_parser = threshold)]
    pub low_utilization: Option<Decimal>,
    #[command(flatten)]
    pub report: crate::serve::ReportArgs,
}

pub async fn run(args: RecommendationsArgs) -> anyhow::Result<ExitCode> {
    let d = Thresholds::default();
    let t = Thresholds {
        idle_utilization: args.idle_utilization.unwrap_or(d.idle_utilization),
        idle_share: args.idle_share.unwrap_or(d.idle_share),
        low_utilization: args.low_utilization.unwrap_or(d.low_utilization),
    };
    let tenant = crate::serve::tenant_arg(args.tenant.as_deref())?;
    let (period, store, _) = args.report.open().await?;
    let scope = crate::serve::resolve_scope(store.as_ref(), tenant).await?;
    let items =
        eai_app::recommend::recommendations_of(&Source::Primary, store.as_ref(), period, scope, t)
            .await?;
    if args.report.json {
        let view = RecommendationList::new(period.from, period.to, &t, &items);
        println!("{}", serde_json::to_string_pretty(&view)?);
    } else {
        print!("{}", render(&items, period, &t));
    }
    Ok(ExitCode::SUCCESS)
}

fn money(m: Option<Money>) -> String {
    m.map_or_else(
        || "-".into(),
        |m| format!("{} {}", grouped(m.amount), m.currency),
    )
}

/// The recommendations as a table, then each one's message.
pub fn render(items: &[Recommendation], period: Period, t: &Thresholds) -> String {
    let mut table = Table::new(&[
        ("deployment", false),
        ("kind", false),
        ("action", false),
        ("GPUs", true),
        ("to", true),
        ("profile", false),
        ("busy", true),
        ("savings a month", true),
    ]);
    for r in items {
        let shape = match (r.mig_profile, r.gpu_fraction) {
            (Some(p), _) => p.to_string(),
            (None, Some(f)) => format!("{} GPU", f.normalize()),
            _ => "-".into(),
        };
        let mut busy = (r.evidence.utilization * Decimal::ONE_HUNDRED).round_dp(1);
        busy.rescale(1);
        table.row(vec![
            r.deployment_id.clone(),
            r.kind.name().into(),
            r.action.name().into(),
            r.current_gpus.to_string(),
            r.gpus.to_string(),
            shape,
            format!("{busy} %"),
            money(r.monthly_savings),
        ]);
    }
    let mut out = format!(
        "Recommendations {} .. {} (idle at most {} busy, for {} of the hours; oversized under {})\n\n{}",
        period.from,
        period.to,
        t.idle_utilization.normalize(),
        t.idle_share.normalize(),
        t.low_utilization.normalize(),
        table.render()
    );
    if items.is_empty() {
        out.push_str("\nNothing to recommend.\n");
    }
    for r in items {
        out.push_str(&format!("\n- {}", r.message));
    }
    if !items.is_empty() {
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use eai_engine::money::Currency;
    use eai_engine::recommend::{Action, Evidence, Kind};
    use eai_engine::time::Timestamp;

    use super::*;

    #[test]
    fn a_recommendation_is_a_line_and_its_message() {
        let r = Recommendation {
            kind: Kind::LowUtilization,
            deployment_id: "solo".into(),
            model: "H100".into(),
            current_gpus: 1,
            gpus: 1,
            action: Action::MigProfile,
            mig_profile: Some("2g.20gb"),
            gpu_fraction: Some("0.285714".parse().unwrap()),
            evidence: Evidence {
                utilization: "0.15".parse().unwrap(),
                ..Evidence::default()
            },
            cost: None,
            savings: None,
            monthly_savings: Some(Money {
                amount: "1285.71".parse().unwrap(),
                currency: Currency::EUR,
            }),
            message: "It would fit.".into(),
        };
        let period = Period {
            from: Timestamp(0),
            to: Timestamp(86_400_000),
        };
        let text = render(&[r], period, &Thresholds::default());
        let line = text
            .lines()
            .find(|l| l.starts_with("solo"))
            .unwrap()
            .split_whitespace()
            .collect::<Vec<_>>();
        assert_eq!(
            line,
            [
                "solo",
                "low_utilization",
                "mig_profile",
                "1",
                "1",
                "2g.20gb",
                "15.0",
                "%",
                "1,285.71",
                "EUR"
            ]
        );
        assert!(text.ends_with("\n- It would fit.\n"), "{text}");
    }
}
