//! `eai-gpu slurm-reconcile (--period YYYY-MM | --from --to) [--sacct FILE] [--idle-below 0.1] [--tenant SLUG|ID]
//! [--json]`: Slurm's accounting of its GPU jobs beside what was measured (SPEC §12), read straight from the
//! store as `POST /v1/finops/gpu/slurm/reconciliation` answers it (the same JSON with `--json`). Slurm's side is
//! `--sacct FILE` (the output of `sacct --json`, `-` for standard input), or else `sacct --json -a -X -S <from>
//! -E <to>` run here (a Slurm client with its `SLURM_CONF`).

use std::io::Read;
use std::process::ExitCode;

use clap::Args;
use eai_app::allocation::Source;
use eai_engine::money::Currency;
use eai_engine::slurm::{Reconciliation, SacctDoc};
use eai_engine::view::ReconciliationView;
use rust_decimal::Decimal;

use crate::table::Table;

#[derive(Debug, Args)]
pub struct SlurmReconcileArgs {
    /// The output of `sacct --json` (`-`: standard input). Default: run `sacct --json -a -X` for the period.
    #[arg(long, value_name = "FILE")]
    pub sacct: Option<std::path::PathBuf>,
    /// A job whose GPUs were busy less than this share of the time Slurm allocated them is `idle`.
    #[arg(long, value_name = "SHARE")]
    pub idle_below: Option<String>,
    /// What this tenant's reader sees: the jobs of its dedicated deployments.
    #[arg(long, value_name = "SLUG_OR_ID")]
    pub tenant: Option<String>,
    #[command(flatten)]
    pub report: crate::serve::ReportArgs,
}

pub async fn run(args: SlurmReconcileArgs) -> anyhow::Result<ExitCode> {
    let idle_below = eai_app::params::parse_idle_below(args.idle_below.as_deref())
        .map_err(|e| anyhow::anyhow!("--idle-below: {}", e.reason))?;
    let tenant = crate::serve::tenant_arg(args.tenant.as_deref())?;
    let (period, store, alloc) = args.report.open().await?;
    let text = match &args.sacct {
        Some(p) if p.as_os_str() == "-" => {
            let mut s = String::new();
            std::io::stdin().read_to_string(&mut s)?;
            s
        }
        Some(p) => std::fs::read_to_string(p)
            .map_err(|e| anyhow::anyhow!("--sacct {}: {e}", p.display()))?,
        None => run_sacct(period)?,
    };
    let doc: SacctDoc = serde_json::from_str(&text)
        .map_err(|e| anyhow::anyhow!("sacct's output is not its JSON: {e}"))?;
    let sacct = eai_engine::slurm::parse_sacct(&doc).map_err(|e| anyhow::anyhow!("sacct: {e}"))?;
    let scope = crate::serve::resolve_scope(store.as_ref(), tenant).await?;
    let r = eai_app::allocation::slurm_reconciliation_of(
        &Source::Primary,
        store.as_ref(),
        period,
        alloc,
        scope,
        sacct,
        eai_app::clock::now(),
        idle_below,
    )
    .await?;
    if args.report.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&ReconciliationView::new(&r))?
        );
    } else {
        print!("{}", render(&r));
    }
    Ok(ExitCode::SUCCESS)
}

/// `sacct --json -a -X -S <from> -E <to>`: every user's job allocations (no steps) of the period.
fn run_sacct(period: eai_engine::allocate::Period) -> anyhow::Result<String> {
    let slurm_time = |t: eai_engine::time::Timestamp| {
        let s = t.to_string();
        s.strip_suffix('Z').map(str::to_string).unwrap_or(s)
    };
    let out = std::process::Command::new("sacct")
        .args(["--json", "-a", "-X", "-S"])
        .arg(slurm_time(period.from))
        .arg("-E")
        .arg(slurm_time(period.to))
        .env("TZ", "UTC")
        .output()
        .map_err(|e| {
            anyhow::anyhow!("cannot run sacct ({e}): give its output with --sacct FILE")
        })?;
    if !out.status.success() {
        anyhow::bail!(
            "sacct failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8(out.stdout)?)
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

/// The reconciliation as a table, one line per job, then the totals.
pub fn render(r: &Reconciliation) -> String {
    let mut t = Table::new(&[
        ("job", false),
        ("account", false),
        ("user", false),
        ("partition", false),
        ("GPUs", true),
        ("Slurm GPU-h", true),
        ("measured GPU-h", true),
        ("busy", true),
        ("cost", true),
        ("status", false),
    ]);
    let hours = Decimal::from(3600);
    for j in &r.jobs {
        t.row(vec![
            j.job_id.clone(),
            j.account.clone(),
            j.user.clone().unwrap_or_else(|| "-".into()),
            j.partition.clone().unwrap_or_else(|| "-".into()),
            j.gpus.map_or("-".into(), |g| g.to_string()),
            j.allocated_gpu_seconds
                .map_or("-".into(), |a| n(a / hours, 3)),
            n(j.measured_gpu_seconds / hours, 3),
            j.busy_share.map_or("-".into(), |b| {
                format!("{} %", n(b * Decimal::ONE_HUNDRED, 1))
            }),
            cost(&j.cost),
            j.status.as_str().to_string(),
        ]);
    }
    let mut out = format!(
        "Slurm jobs with GPUs, {} .. {} (idle: busy under {} % of the time Slurm allocated)\n\n",
        r.from,
        r.to,
        n(r.idle_below * Decimal::ONE_HUNDRED, 1)
    );
    out.push_str(&t.render());
    out.push_str(&format!(
        "\nSlurm allocated {} GPU-h, measured {} GPU-h; idle jobs cost {}\n",
        n(r.allocated_gpu_seconds / hours, 3),
        n(r.measured_gpu_seconds / hours, 3),
        if r.idle_cost.is_empty() {
            "nothing".to_string()
        } else {
            cost(&r.idle_cost)
        }
    ));
    out
}
