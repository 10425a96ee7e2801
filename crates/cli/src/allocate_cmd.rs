//! `eai-gpu allocate --samples FILE --usage FILE --policies FILE`: the engine on files, no server needed.

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;
use eai_engine::allocate::{allocate_samples, AllocationConfig, Period};
use eai_engine::series::SeriesConfig;
use eai_engine::time::Timestamp;
use eai_engine::view::{fmt_dec, AllocationView};
use eai_engine::wire::{self, Loose, TenantSource};
use eai_engine::{Allocation, Policy, Sample, UsageEvent};

use crate::table::Table;

#[derive(Debug, Args)]
pub struct AllocateArgs {
    /// Run the allocation batch on the store for this month (`YYYY-MM`): record each tenant's allocated cost as
    /// `gpu_local` usage events (a re-run replaces them). Usage is read from the ClickHouse replica when
    /// EAI_ALLOCATION_SOURCE=clickhouse (EAI_CLICKHOUSE_URL, and EAI_CLICKHOUSE_CLUSTER on a cluster). Without
    /// it, allocate from files.
    #[arg(long, conflicts_with_all = ["samples", "usage", "policies", "from", "to", "json"])]
    pub period: Option<String>,
    /// With --period: folder of the embedded store (EAI_DATA_DIR).
    #[arg(long, requires = "period")]
    pub data_dir: Option<PathBuf>,
    /// With --period: store URL (EAI_DATABASE_URL).
    #[arg(long, requires = "period")]
    pub database_url: Option<String>,
    /// GPU samples: `{"samples": [...]}` as posted to /v1/finops/gpu/samples, or a bare array.
    #[arg(long, required_unless_present = "period")]
    pub samples: Option<PathBuf>,
    /// Usage events: `{"events": [...]}` as posted to /v1/usage/events (with tenant_id), or a bare array.
    #[arg(long)]
    pub usage: Option<PathBuf>,
    /// Allocation policies: `{"items": [...]}` as listed by the API, a bare array, or one policy object.
    #[arg(long, required_unless_present = "period")]
    pub policies: Option<PathBuf>,
    /// Start (a date YYYY-MM-DD or RFC 3339). Default: the first sample's hour.
    #[arg(long)]
    pub from: Option<String>,
    /// End, exclusive (a date YYYY-MM-DD or RFC 3339). Default: the end of the last sample's hour.
    #[arg(long)]
    pub to: Option<String>,
    /// Longest missing span filled by interpolation, in minutes.
    #[arg(long, default_value_t = 15)]
    pub max_gap_minutes: i64,
    /// Print the API's JSON instead of tables.
    #[arg(long)]
    pub json: bool,
}

fn located(path: &Path, what: &str, errors: Vec<eai_engine::FieldError>) -> anyhow::Error {
    let lines: Vec<String> = errors
        .iter()
        .map(|e| match e.index {
            Some(i) => format!(
                "  {}: {what} {i}, field `{}`: {}",
                path.display(),
                e.field,
                e.reason
            ),
            None => format!("  {}: field `{}`: {}", path.display(), e.field, e.reason),
        })
        .collect();
    anyhow::anyhow!("{} invalid field(s):\n{}", errors.len(), lines.join("\n"))
}

pub fn load(args: &AllocateArgs) -> anyhow::Result<(Vec<Sample>, Vec<UsageEvent>, Vec<Policy>)> {
    let (Some(samples_path), Some(policies_path)) = (&args.samples, &args.policies) else {
        anyhow::bail!("--samples and --policies are required without --period");
    };
    let values = records_array(samples_path, "samples", false)?;
    // Offline, a sample without timestamp has no time of receipt: demand one.
    let missing: Vec<eai_engine::FieldError> = values
        .iter()
        .enumerate()
        .filter(|(_, v)| !matches!(v, Loose::Object(m) if m.contains_key("timestamp")))
        .map(|(i, _)| {
            eai_engine::FieldError::new("timestamp", "is required in a file (no time of receipt)")
                .at(i)
        })
        .collect();
    let samples = match wire::parse_samples(&values, Timestamp(0)) {
        Ok(s) if missing.is_empty() => s,
        Ok(_) => return Err(located(samples_path, "sample", missing)),
        Err(mut errors) => {
            errors.extend(missing);
            errors.sort_by_key(|e| e.index);
            return Err(located(samples_path, "sample", errors));
        }
    };
    let usage = match &args.usage {
        Some(p) => {
            let values = records_array(p, "events", false)?;
            wire::parse_usage_events(&values, TenantSource::Body)
                .map_err(|e| located(p, "event", e))?
        }
        None => Vec::new(),
    };
    let values = records_array(policies_path, "items", true)?;
    let mut policies = Vec::new();
    let mut errors = Vec::new();
    for (i, v) in values.iter().enumerate() {
        match wire::parse_stored_policy(v, i) {
            Ok(p) => policies.push(p),
            Err(es) => errors.extend(es),
        }
    }
    if !errors.is_empty() {
        return Err(located(policies_path, "policy", errors));
    }
    Ok((samples, usage, policies))
}

/// The records of a file: a bare array, the array under `key`, or (with `single`) one object.
fn records_array(path: &Path, key: &str, single: bool) -> anyhow::Result<Vec<Loose>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    // Numbers must reach `Loose` as their text: neither an untagged enum (it buffers numbers as floats) nor
    // `from_value` of a nested `Value` keeps it, so the shape is looked at in a `Value` and the records are
    // parsed again from their own JSON text.
    let value: serde_json::Value = serde_json::from_str(&text)
        .with_context(|| format!("{} is not valid JSON", path.display()))?;
    let exact = |v: &serde_json::Value| -> anyhow::Result<Vec<Loose>> {
        Ok(serde_json::from_str(&serde_json::to_string(v)?)?)
    };
    match &value {
        serde_json::Value::Array(_) => {
            exact(&value).with_context(|| format!("{}: not an array of records", path.display()))
        }
        serde_json::Value::Object(m) if single && !m.contains_key(key) => {
            Ok(vec![serde_json::from_str(&serde_json::to_string(&value)?)?])
        }
        serde_json::Value::Object(m) => {
            let inner = m.get(key).with_context(|| {
                format!(
                    "{}: expected an array or an object with `{key}`",
                    path.display()
                )
            })?;
            exact(inner).with_context(|| format!("{}: `{key}` must be an array", path.display()))
        }
        _ => anyhow::bail!(
            "{}: expected an array or an object with `{key}`",
            path.display()
        ),
    }
}

pub fn run(args: &AllocateArgs) -> anyhow::Result<std::process::ExitCode> {
    let (samples, usage, policies) = load(args)?;
    let hour = 3_600_000;
    let from = match &args.from {
        Some(s) => Timestamp::parse_date_or_datetime(s)
            .map_err(|e| anyhow::anyhow!("--from: {}", e.reason))?,
        None => samples.iter().map(Sample::start).min().unwrap_or_default(),
    };
    let to = match &args.to {
        Some(s) => Timestamp::parse_date_or_datetime(s)
            .map_err(|e| anyhow::anyhow!("--to: {}", e.reason))?,
        None => samples
            .iter()
            .map(|s| s.end)
            .max()
            .unwrap_or(Timestamp(hour)),
    };
    let period = Period::new(from, to, hour).map_err(|e| anyhow::anyhow!("--to: {}", e.reason))?;
    let cfg = SeriesConfig {
        max_gap_ms: args.max_gap_minutes * 60_000,
        ..SeriesConfig::default()
    };
    let a = allocate_samples(
        &samples,
        &usage,
        &policies,
        period,
        &cfg,
        AllocationConfig::default(),
    );
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&AllocationView::new(&a))?
        );
    } else {
        print!("{}", render(&a));
    }
    Ok(std::process::ExitCode::SUCCESS)
}

/// The allocation as the portal shows it, in text.
pub fn render(a: &Allocation) -> String {
    let mut out = format!("GPU allocation {} .. {}\n\n", a.from, a.to);
    if a.deployments.is_empty() {
        out.push_str("No GPU usage in the period.\n");
        return out;
    }
    let cur =
        |c: Option<eai_engine::Currency>| c.map(|c| c.to_string()).unwrap_or_else(|| "-".into());
    let mut t = Table::new(&[
        ("Deployment", false),
        ("Samples", true),
        ("Estimated", true),
        ("GPUs", true),
        ("GPU hours", true),
        ("Busy GPU hours", true),
        ("Energy (kWh)", true),
        ("Cost", true),
        ("Allocated", true),
        ("Unallocated", true),
        ("Unpriced samples", true),
        ("Currency", false),
    ]);
    for d in &a.deployments {
        t.row(vec![
            d.deployment_id.clone(),
            d.samples.to_string(),
            d.estimated_samples.to_string(),
            d.gpus.to_string(),
            fmt_dec(d.gpu_hours(), 2),
            fmt_dec(d.busy_gpu_hours(), 2),
            fmt_dec(d.energy_kwh(), 3),
            d.cost.to_string(),
            d.allocated.to_string(),
            d.unallocated.to_string(),
            d.unpriced_samples.to_string(),
            cur(d.currency),
        ]);
    }
    out.push_str(&t.render());
    if !a.tenants.is_empty() {
        let mut t = Table::new(&[
            ("Tenant", false),
            ("GPU seconds", true),
            ("Share", true),
            ("Cost", true),
            ("Currency", false),
        ]);
        for r in &a.tenants {
            t.row(vec![
                r.tenant_id.to_string(),
                fmt_dec(r.gpu_seconds, 1),
                format!(
                    "{}%",
                    fmt_dec(r.share * rust_decimal::Decimal::ONE_HUNDRED, 2)
                ),
                r.cost.to_string(),
                r.currency.to_string(),
            ]);
        }
        out.push('\n');
        out.push_str(&t.render());
    }
    if !a.gaps.is_empty() {
        let mut t = Table::new(&[
            ("Gap: GPU", false),
            ("Deployment", false),
            ("From", false),
            ("To", false),
            ("Why", false),
        ]);
        for g in &a.gaps {
            t.row(vec![
                g.gpu_uuid.clone(),
                g.deployment_id.clone(),
                g.from.to_string(),
                g.to.to_string(),
                g.reason.as_str().into(),
            ]);
        }
        out.push('\n');
        out.push_str(&t.render());
    }
    if !a.findings.is_empty() {
        out.push_str("\nFindings:\n");
        for f in &a.findings {
            out.push_str(&format!(
                "  - {}: {}\n",
                f.code(),
                eai_engine::view::finding_message(f)
            ));
        }
    }
    out
}

/// `--period YYYY-MM`: the allocation batch on the store.
pub async fn run_batch(args: AllocateArgs) -> anyhow::Result<std::process::ExitCode> {
    let period = args.period.clone().unwrap_or_default();
    let (config, store, alloc) =
        crate::serve::store_for_allocation(args.data_dir.clone(), args.database_url.clone())
            .await?;
    // EAI_ALLOCATION_SOURCE=clickhouse: usage read from the replica (EAI_CLICKHOUSE_URL, on
    // EAI_CLICKHOUSE_CLUSTER when set), as `serve`'s batch reads it.
    let source = match (config.allocation_source, config.clickhouse()?) {
        (eai_api::config::AllocationSource::ClickHouse, Some(ch)) => {
            eai_app::allocation::Source::ClickHouse(ch)
        }
        _ => eai_app::allocation::Source::Primary,
    };
    let now = eai_app::clock::now();
    let o = eai_app::batch::run_month_from(&source, store.as_ref(), &period, now, alloc).await?;
    println!(
        "{}: allocated {} .. {}; recorded {} gpu_local usage event(s), zeroed {} from an earlier run",
        o.period, o.from, o.to, o.events, o.zeroed
    );
    Ok(std::process::ExitCode::SUCCESS)
}
