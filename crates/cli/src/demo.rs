//! `eai-gpu demo`: the control plane on a fresh embedded store, loaded with a realistic month through the
//! public API (the same calls a sampler, a gateway and an administrator make), then served until Ctrl-C.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{bail, Context};
use clap::Args;
use eai_api::{new_api_key, Application};
use eai_client::EnterpriseAi;
use eai_engine::batch::{month, month_of};
use eai_engine::time::Timestamp;
use serde_json::Value;

use crate::demo_data::{self, ACME, GLOBEX, INITECH};
use crate::table::Table;

/// Marks a folder the demo created, so that it only ever wipes its own.
const MARKER: &str = ".eai-gpu-demo";

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Address to listen on (port 0: any free port).
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// Folder of the demo's store; wiped at start if a previous demo made it.
    #[arg(long, default_value = "eai-gpu-demo")]
    pub data_dir: PathBuf,
    /// Days of history to load, ending now.
    #[arg(long, default_value_t = 30)]
    pub days: i64,
    /// Sampling window in seconds (DCGM exporter collects every 30 s by default).
    #[arg(long, default_value_t = 60)]
    pub window_seconds: i64,
    /// Load, print, and exit instead of serving (for scripts and tests).
    #[arg(long)]
    pub exit_after_load: bool,
}

fn fresh_dir(dir: &Path) -> anyhow::Result<()> {
    if dir.exists() {
        let empty = std::fs::read_dir(dir)?.next().is_none();
        if !empty && !dir.join(MARKER).exists() {
            bail!(
                "{} exists and was not made by the demo: choose another --data-dir",
                dir.display()
            );
        }
        std::fs::remove_dir_all(dir).with_context(|| format!("cannot clear {}", dir.display()))?;
    }
    std::fs::create_dir_all(dir)?;
    std::fs::write(
        dir.join(MARKER),
        "made by eai-gpu demo; deleted by the next demo\n",
    )?;
    Ok(())
}

pub async fn run(args: DemoArgs) -> anyhow::Result<ExitCode> {
    // Requests are not logged one by one here: the demo prints what it loaded.
    let _telemetry = crate::init_logging("eai-gpu", "warn")?;
    if !(1..=90).contains(&args.days) || !(1..=3600).contains(&args.window_seconds) {
        bail!("--days must be 1..=90 and --window-seconds 1..=3600");
    }
    fresh_dir(&args.data_dir)?;
    let admin_key = new_api_key();
    let mut config = crate::serve::config(Some(args.listen), Some(args.data_dir.clone()), None)?;
    config.database_url = None;
    config.bootstrap_admin_key = Some(admin_key.clone().into());
    crate::process::spawn_trim(config.malloc_trim_seconds);
    let anomalies = config.anomalies.clone();
    let app = Application::build(config).await?;
    let state = app.state().clone();
    let base = format!("http://{}", app.local_addr());
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(app.run_until_stopped(async move {
        tokio::select! {
            _ = crate::shutdown_signal() => {},
            _ = stop_rx => {},
        }
    }));

    let loaded = load(&base, &admin_key, &args).await;
    let keys = match loaded {
        Ok(keys) => keys,
        Err(e) => {
            let _ = stop_tx.send(());
            let _ = server.await;
            return Err(e);
        }
    };
    // The anomaly job's first round ran at start, before the month was loaded, and the next is an hour away:
    // one round now, as `eai-gpu anomalies --check` runs it, judges the month just loaded.
    let round = eai_app::anomalies::check_once(
        state.store.as_ref(),
        &state.metrics,
        &eai_app::budget_alerts::http_client()?,
        &anomalies,
        eai_app::clock::now(),
    )
    .await?;
    eprintln!(
        "checked the hours up to {} for spend anomalies: {} found",
        round.to,
        round.recorded.len()
    );
    println!();
    println!("eai-gpu demo is running at {base}");
    println!("  portal:      {base}/finops/gpu");
    println!(
        "  allocation:  curl -H 'Authorization: Bearer {}' {base}/v1/finops/gpu/allocation",
        keys[0].1
    );
    println!("  API spec:    {base}/openapi.json   metrics: {base}/metrics");
    println!();
    let mut t = Table::new(&[
        ("Key", false),
        ("Role", false),
        ("Tenant", false),
        ("Tenant id", false),
    ]);
    for (role, key, tenant, id) in &keys {
        t.row(vec![key.clone(), role.clone(), tenant.clone(), id.clone()]);
    }
    print!("{}", t.render());
    println!(
        "\nData: {} (wiped by the next demo). Ctrl-C stops the server.",
        args.data_dir.display()
    );
    if args.exit_after_load {
        let _ = stop_tx.send(());
    }
    server.await.context("the server task failed")??;
    Ok(ExitCode::SUCCESS)
}

/// A key to print: role, key, tenant (its slug, or what the key may do), tenant id.
type KeyRow = (String, String, String, String);

/// Loads the month through the API; returns the keys to print.
async fn load(base: &str, admin_key: &str, args: &DemoArgs) -> anyhow::Result<Vec<KeyRow>> {
    let admin = EnterpriseAi::new(base, admin_key)?;
    let end = eai_app::clock::now();
    let start = Timestamp(end.floor_to(3_600_000).0 - args.days * 86_400_000);

    // Two tenants by name; initech stays known by id only, as a tenant seen in data but never registered.
    admin
        .tenants()
        .create("acme", "Acme Corp", Some(ACME))
        .await?;
    admin
        .tenants()
        .create("globex", "Globex Corporation", Some(GLOBEX))
        .await?;
    let sampler_key = admin
        .auth()
        .create_api_key("sampler", None, Some("demo sampler"))
        .await?;
    let finops = admin
        .auth()
        .create_api_key("finops", Some(ACME), Some("acme finops"))
        .await?;
    let tenant_admin = admin
        .auth()
        .create_api_key("tenant_admin", Some(GLOBEX), Some("globex admin"))
        .await?;
    let viewer = admin
        .auth()
        .create_api_key("viewer", Some(INITECH), Some("initech viewer"))
        .await?;
    let gateway_key = admin
        .auth()
        .create_api_key("usage_reporter", None, Some("demo gateway"))
        .await?;

    for p in demo_data::policies(start) {
        admin.finops().create_allocation_policy(&p).await?;
    }
    // Acme's monthly budget, watched but not enforced: the forecast says when it should run out.
    admin
        .finops()
        .create_budget(&demo_data::budget(ACME, start))
        .await?;

    let t = Instant::now();
    let samples = demo_data::samples(end, args.days, args.window_seconds);
    let sampler = EnterpriseAi::new(base, &sampler_key.key)?;
    for batch in samples.chunks(5000) {
        sampler.finops().gpu_samples(batch).await?;
    }
    let secs = t.elapsed().as_secs_f64();
    eprintln!(
        "loaded {} GPU samples in {secs:.1} s ({:.0}/s)",
        samples.len(),
        samples.len() as f64 / secs
    );

    // What a gateway does: each tenant's token usage, with the usage_reporter role (usage only).
    let events = demo_data::usage_events(end, args.days);
    let gateway = EnterpriseAi::new(base, &gateway_key.key)?;
    for batch in events.chunks(1000) {
        gateway.usage().events(batch).await?;
    }
    eprintln!("loaded {} usage events", events.len());
    // What the sampler also reads: the vLLM server's own counters of one deployment.
    let counters = demo_data::vllm_counters(end, args.days);
    for batch in counters.chunks(1000) {
        sampler.usage().events(batch).await?;
    }
    eprintln!("loaded {} vLLM counter events", counters.len());

    // The last month that is over, if the data reaches into it, closed as a FinOps team closes it: a statement
    // per tenant with cost and one of the unallocated capacity (the portal's Statements, `eai-gpu statement`).
    let (this_month, _) = month(&month_of(end)).context("the current month")?;
    if start < this_month {
        let closed = month_of(Timestamp(this_month.0 - 1));
        let issued = admin.finops().issue_gpu_statements(&closed).await?;
        let n = issued["issued"].as_array().map_or(0, Vec::len);
        eprintln!("issued {n} statement(s) of {closed}");
    }
    let a = admin
        .finops()
        .gpu_allocation(&start.to_string(), &end.to_string())
        .await?;
    let slugs: HashMap<String, String> = admin
        .tenants()
        .list()
        .await?
        .into_iter()
        .map(|t| (t.id, t.slug))
        .collect();
    print!("{}", summary(&a, &slugs));
    let slug_of = |id: &str| slugs.get(id).cloned().unwrap_or_else(|| "-".into());
    let none = || String::from("-");
    Ok(vec![
        (
            "platform_admin".into(),
            admin_key.to_string(),
            "every tenant".into(),
            none(),
        ),
        ("finops".into(), finops.key, slug_of(ACME), ACME.into()),
        (
            "tenant_admin".into(),
            tenant_admin.key,
            slug_of(GLOBEX),
            GLOBEX.into(),
        ),
        (
            "viewer".into(),
            viewer.key,
            slug_of(INITECH),
            INITECH.into(),
        ),
        (
            "sampler".into(),
            sampler_key.key,
            "posts samples and vLLM counters only".into(),
            none(),
        ),
        (
            "usage_reporter".into(),
            gateway_key.key,
            "posts usage events only".into(),
            none(),
        ),
    ])
}

/// The deployments and tenants of an allocation response, as tables; a tenant's slug (`slugs`: id to slug, as
/// `GET /v1/tenants` lists them) beside its id, `-` for a tenant seen in data but never registered.
pub fn summary(a: &Value, slugs: &HashMap<String, String>) -> String {
    let s = |v: &Value| match v {
        Value::String(x) => x.clone(),
        Value::Null => "-".into(),
        other => other.to_string(),
    };
    let mut out = format!("\nGPU allocation {} .. {}\n\n", s(&a["from"]), s(&a["to"]));
    let mut t = Table::new(&[
        ("Deployment", false),
        ("Samples", true),
        ("GPUs", true),
        ("GPU hours", true),
        ("Energy (kWh)", true),
        ("Cost", true),
        ("Allocated", true),
        ("Unallocated", true),
        ("Unpriced", true),
        ("Currency", false),
    ]);
    for d in a["deployments"].as_array().into_iter().flatten() {
        t.row(
            [
                "deployment_id",
                "samples",
                "gpus",
                "gpu_hours",
                "energy_kwh",
                "cost",
                "allocated",
                "unallocated",
                "unpriced_samples",
                "currency",
            ]
            .iter()
            .map(|k| s(&d[*k]))
            .collect(),
        );
    }
    out.push_str(&t.render());
    let mut t = Table::new(&[
        ("Tenant", false),
        ("Tenant id", false),
        ("GPU seconds", true),
        ("Share", true),
        ("Cost", true),
        ("Currency", false),
    ]);
    for r in a["tenants"].as_array().into_iter().flatten() {
        let id = s(&r["tenant_id"]);
        t.row(vec![
            slugs.get(&id).cloned().unwrap_or_else(|| "-".into()),
            id,
            s(&r["gpu_seconds"]),
            s(&r["share"]),
            s(&r["cost"]["amount"]),
            s(&r["cost"]["currency"]),
        ]);
    }
    out.push('\n');
    out.push_str(&t.render());
    let gaps = a["gaps"].as_array().map_or(0, Vec::len);
    let findings = a["findings"].as_array().map_or(0, Vec::len);
    out.push_str(&format!(
        "\n{gaps} gap(s) reported, {findings} finding(s)\n"
    ));
    out
}
