//! `eai-gpu explain --deployment ID (--period YYYY-MM | --from --to) [--tenant SLUG|ID] [--json]`: why a deployment
//! costs what it does, read straight from the store as `GET /v1/finops/gpu/allocation/explain` answers it (the
//! same JSON with `--json`): per bucket what was measured, who claimed it and the share each got, the bucket's
//! exact cost and its split; then the idle spread and the one rounding with its largest-remainder step.
//! `--tenant` shows it as that tenant sees it (every other tenant summed into "other tenants").

use std::process::ExitCode;

use clap::Args;
use eai_app::allocation::Source;
use eai_engine::allocate::{Explanation, Party};
use eai_engine::breakdown::{Breakdown, BreakdownRow, Dimension};
use eai_engine::time::Timestamp;
use eai_engine::view::ExplanationView;

use crate::table::Table;

#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// The deployment to explain.
    #[arg(long)]
    pub deployment: String,
    /// Show it as this tenant sees it (its own lines, every other tenant summed).
    #[arg(long, value_name = "SLUG_OR_ID")]
    pub tenant: Option<String>,
    #[command(flatten)]
    pub report: crate::serve::ReportArgs,
}

pub async fn run(args: ExplainArgs) -> anyhow::Result<ExitCode> {
    let tenant = crate::serve::tenant_arg(args.tenant.as_deref())?;
    let (period, store, alloc) = args.report.open().await?;
    let viewer = crate::serve::resolve_tenant(store.as_ref(), tenant).await?;
    let Some(explained) = eai_app::allocation::explain_of(
        &Source::Primary,
        store.as_ref(),
        period,
        alloc,
        &args.deployment,
        viewer,
    )
    .await?
    else {
        eprintln!(
            "{} has no GPU time{} from {} to {}: nothing to explain",
            args.deployment,
            if viewer.is_some() {
                " charged to that tenant"
            } else {
                ""
            },
            period.from,
            period.to
        );
        return Ok(ExitCode::from(1));
    };
    if args.report.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&ExplanationView::new(
                &explained.explanation,
                &explained.pods
            ))?
        );
    } else {
        print!("{}", render(&explained.explanation));
        print!("{}", render_pods(&explained.pods));
    }
    Ok(ExitCode::SUCCESS)
}

fn party(p: Party) -> String {
    match p {
        Party::Tenant(t) => t.to_string(),
        Party::Others => "other tenants".to_string(),
    }
}

fn hour(t: Timestamp) -> String {
    let s = t.to_string();
    s.strip_suffix(":00Z")
        .map_or(s.clone(), |h| format!("{h}Z"))
}

fn n(d: rust_decimal::Decimal) -> String {
    d.normalize().to_string()
}

/// An exact figure for the terminal: at most 6 places (`~` when digits were cut; `--json` has them all).
fn x(d: rust_decimal::Decimal) -> String {
    let r = d.round_dp(6).normalize();
    if r == d.normalize() {
        r.to_string()
    } else {
        format!("~{r}")
    }
}

/// The explanation as tables: the policies, the buckets, the idle spread, the rounding.
pub fn render(e: &Explanation) -> String {
    let mut out = format!(
        "{}: {} .. {} (buckets of {} min)\n\n",
        e.deployment_id,
        e.from,
        e.to,
        e.bucket_ms / 60_000
    );
    for p in &e.policies {
        out.push_str(&format!(
            "policy {} ({}): {} {}/GPU-hour, overhead {} %, energy {} {}/kWh x PUE {}, idle capacity {}\n",
            p.policy_id,
            p.name,
            n(p.gpu_hourly_cost),
            p.currency,
            n(p.overhead_pct),
            n(p.energy_kwh_price),
            p.currency,
            n(p.pue),
            p.idle_capacity.as_str()
        ));
    }
    out.push('\n');
    let mut t = Table::new(&[
        ("bucket", false),
        ("GPU-s", true),
        ("estimated", true),
        ("party", false),
        ("tokens", true),
        ("claimed GPU-s", true),
        ("share", true),
        ("policy", false),
        ("cost (exact)", true),
        ("GPU time", true),
        ("energy", true),
    ]);
    for b in &e.buckets {
        let mut first = true;
        let mut line = |t: &mut Table, cells: [String; 8]| {
            let [party, tokens, claimed, share, policy, cost, time, energy] = cells;
            let (start, gs, est) = if first {
                (hour(b.start), n(b.gpu_seconds), n(b.estimated_gpu_seconds))
            } else {
                Default::default()
            };
            first = false;
            t.row(vec![
                start, gs, est, party, tokens, claimed, share, policy, cost, time, energy,
            ]);
        };
        let blank = String::new;
        for p in &b.priced {
            line(
                &mut t,
                [
                    "bucket".into(),
                    blank(),
                    blank(),
                    blank(),
                    p.policy_id.clone(),
                    x(p.cost),
                    x(p.gpu_time_cost),
                    x(p.energy_cost),
                ],
            );
            if let Some(owner) = b.owner {
                line(
                    &mut t,
                    [
                        party(owner) + " (owner)",
                        blank(),
                        blank(),
                        "1".into(),
                        p.policy_id.clone(),
                        x(p.cost),
                        blank(),
                        blank(),
                    ],
                );
                continue;
            }
            for (who, cost) in &p.parties {
                let c = b.claims.iter().find(|c| c.party == *who);
                line(
                    &mut t,
                    [
                        party(*who),
                        c.map(|c| n(c.tokens)).unwrap_or_default(),
                        c.map(|c| n(c.gpu_seconds)).unwrap_or_default(),
                        c.map(|c| x(c.share)).unwrap_or_default(),
                        p.policy_id.clone(),
                        x(*cost),
                        blank(),
                        blank(),
                    ],
                );
            }
            line(
                &mut t,
                [
                    "idle".into(),
                    blank(),
                    blank(),
                    blank(),
                    p.policy_id.clone(),
                    x(p.idle),
                    blank(),
                    blank(),
                ],
            );
        }
        if b.priced.is_empty() {
            for c in &b.claims {
                line(
                    &mut t,
                    [
                        party(c.party),
                        n(c.tokens),
                        n(c.gpu_seconds),
                        "0".into(),
                        blank(),
                        "no GPU time".into(),
                        blank(),
                        blank(),
                    ],
                );
            }
        }
        if b.over_attribution {
            line(
                &mut t,
                [
                    "claims over what was measured: scaled down".into(),
                    blank(),
                    blank(),
                    blank(),
                    blank(),
                    blank(),
                    blank(),
                    blank(),
                ],
            );
        }
    }
    out.push_str(&t.render());
    for s in &e.idle_spread {
        out.push_str(&format!(
            "\nidle capacity of {} ({} exact) spread by allocated cost:\n",
            s.policy_id,
            n(s.idle)
        ));
        let mut t = Table::new(&[("party", false), ("weight", true), ("given", true)]);
        for (p, w, c) in &s.parties {
            t.row(vec![party(*p), x(*w), x(*c)]);
        }
        out.push_str(&t.render());
    }
    for r in &e.rounding {
        out.push_str(&format!(
            "\nrounding ({}): exact {} -> {} (once), then the largest remainders:\n",
            r.currency,
            x(r.exact),
            r.cost
        ));
        let mut t = Table::new(&[
            ("party", false),
            ("policy", false),
            ("exact", true),
            ("scaled", true),
            ("floor", true),
            ("+ remainder", true),
            ("amount", true),
        ]);
        for l in &r.lines {
            t.row(vec![
                l.party.map_or("unallocated".to_string(), party),
                l.policy_id.clone(),
                x(l.exact),
                x(l.scaled),
                l.floor.to_string(),
                l.remainder_unit.to_string(),
                l.amount.to_string(),
            ]);
        }
        out.push_str(&t.render());
    }
    out.push_str("\n~: cut to 6 places here; --json has every digit\n");
    out
}

/// Where the deployment's time ran (its breakdown by namespace, pod, GPU and share method): each pod's
/// GPU-seconds, its share of its GPU when the reader may see it, and its cost. Empty: nothing.
pub fn render_pods(b: &Breakdown) -> String {
    if b.rows.is_empty() {
        return String::new();
    }
    let at = |d: Dimension| b.group_by.iter().position(|g| *g == d);
    let value = |r: &BreakdownRow, d: Dimension| {
        at(d)
            .and_then(|i| r.key[i].clone())
            .unwrap_or_else(|| "-".into())
    };
    let mut t = Table::new(&[
        ("namespace", false),
        ("pod", false),
        ("GPU", false),
        ("share method", false),
        ("GPU-s", true),
        ("share of GPU", true),
        ("cost", true),
    ]);
    for r in &b.rows {
        t.row(vec![
            value(r, Dimension::Namespace),
            value(r, Dimension::Pod),
            value(r, Dimension::Gpu),
            value(r, Dimension::Share),
            n(r.q.gpu_seconds),
            r.gpu_share.map(n).unwrap_or_default(),
            r.cost
                .iter()
                .map(|(c, a)| format!("{a} {c}"))
                .collect::<Vec<_>>()
                .join(" + "),
        ]);
    }
    format!(
        "\nwhere its time ran (measured: per-process GPU time; equal: a shared GPU split equally):\n{}",
        t.render()
    )
}
