//! `eai-gpu usage --group-by pod[,node…] [--filter dimension:value,…] (--period YYYY-MM | --from --to)
//! [--tenant SLUG|ID] [--json]`: a period's GPU time and cost per pod, node, GPU, namespace, deployment, tenant,
//! model or share method, read straight from the store as `GET /v1/finops/gpu/usage` answers it (the same JSON with `--json`):
//! the rows of a deployment sum to its cost in the allocation to the cent. `--tenant` keeps what that tenant's
//! reader sees (its dedicated deployments).

use std::process::ExitCode;

use clap::Args;
use eai_app::allocation::Source;
use eai_app::params::{parse_filter, parse_group_by};
use eai_engine::allocate::Period;
use eai_engine::breakdown::Breakdown;
use eai_engine::money::Currency;
use eai_engine::view::BreakdownView;
use rust_decimal::Decimal;

use crate::table::Table;

#[derive(Debug, Args)]
pub struct UsageArgs {
    /// The dimensions of a row, comma-separated: pod, node, gpu, namespace, deployment, tenant, model, share
    /// (how a pod's share of a shared GPU was obtained) (default: deployment).
    #[arg(long)]
    pub group_by: Option<String>,
    /// Rows to keep: `dimension:value`, comma-separated (one dimension: any of its values; several: all).
    #[arg(long)]
    pub filter: Option<String>,
    /// What this tenant's reader sees: its dedicated deployments' rows.
    #[arg(long, value_name = "SLUG_OR_ID")]
    pub tenant: Option<String>,
    #[command(flatten)]
    pub report: crate::serve::ReportArgs,
}

pub async fn run(args: UsageArgs) -> anyhow::Result<ExitCode> {
    let group_by = parse_group_by(args.group_by.as_deref())
        .map_err(|e| anyhow::anyhow!("--group-by: {}", e.reason))?;
    let filter = parse_filter(args.filter.as_deref())
        .map_err(|e| anyhow::anyhow!("--filter: {}", e.reason))?;
    let tenant = crate::serve::tenant_arg(args.tenant.as_deref())?;
    let (period, store, alloc) = args.report.open().await?;
    let scope = crate::serve::resolve_scope(store.as_ref(), tenant).await?;
    let b = eai_app::allocation::breakdown_of(
        &Source::Primary,
        store.as_ref(),
        period,
        alloc,
        scope,
        group_by,
        filter,
    )
    .await?;
    if args.report.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&BreakdownView::new(&b, period.from, period.to))?
        );
    } else {
        print!("{}", render(&b, period));
    }
    Ok(ExitCode::SUCCESS)
}

fn n(d: Decimal, dp: u32) -> String {
    d.round_dp(dp).normalize().to_string()
}

fn cost(c: &[(Currency, Decimal)]) -> String {
    c.iter()
        .map(|(c, a)| format!("{a} {c}"))
        .collect::<Vec<_>>()
        .join(" + ")
}

/// The breakdown as a table, one line per row and a total.
pub fn render(b: &Breakdown, period: Period) -> String {
    let mut headers: Vec<(&str, bool)> = b.group_by.iter().map(|d| (d.name(), false)).collect();
    headers.extend([
        ("samples", true),
        ("GPU-h", true),
        ("busy", true),
        ("estimated GPU-s", true),
        ("memory GB-h", true),
        ("energy kWh", true),
        ("unpriced GPU-s", true),
        ("cost", true),
    ]);
    let mut t = Table::new(&headers);
    let hours = Decimal::from(3600);
    let (mut samples, mut q, mut unpriced) = (
        0u64,
        eai_engine::rollup::Quantities::default(),
        Decimal::ZERO,
    );
    let mut total: Vec<(Currency, Decimal)> = Vec::new();
    for r in &b.rows {
        let mut cells: Vec<String> = r
            .key
            .iter()
            .map(|v| v.clone().unwrap_or_else(|| "-".to_string()))
            .collect();
        let busy = if r.q.gpu_seconds.is_zero() {
            "-".to_string()
        } else {
            format!(
                "{} %",
                n(
                    r.q.busy_gpu_seconds * Decimal::ONE_HUNDRED / r.q.gpu_seconds,
                    1
                )
            )
        };
        cells.extend([
            r.samples.to_string(),
            n(r.q.gpu_seconds / hours, 3),
            busy,
            n(r.q.estimated_gpu_seconds, 1),
            n(r.q.memory_gb_seconds / hours, 3),
            n(r.q.energy_wh() / Decimal::ONE_THOUSAND, 3),
            n(r.unpriced_gpu_seconds, 1),
            cost(&r.cost),
        ]);
        t.row(cells);
        samples += r.samples;
        q.add(&r.q);
        unpriced += r.unpriced_gpu_seconds;
        for (c, a) in &r.cost {
            eai_engine::money::add_to(&mut total, *c, *a);
        }
    }
    let mut last: Vec<String> = vec![String::new(); b.group_by.len()];
    if let Some(first) = last.first_mut() {
        *first = format!("total ({} rows)", b.rows.len());
    }
    last.extend([
        samples.to_string(),
        n(q.gpu_seconds / hours, 3),
        String::new(),
        n(q.estimated_gpu_seconds, 1),
        n(q.memory_gb_seconds / hours, 3),
        n(q.energy_wh() / Decimal::ONE_THOUSAND, 3),
        n(unpriced, 1),
        cost(&total),
    ]);
    t.row(last);
    format!(
        "GPU usage {} .. {} by {}\n\n{}",
        period.from,
        period.to,
        b.group_by
            .iter()
            .map(|d| d.name())
            .collect::<Vec<_>>()
            .join(", "),
        t.render()
    )
}
