//! `eai-gpu forecast [--period YYYY-MM] [--tenant SLUG|ID] [--json]`: the month's spend so far and its expected
//! end with a low/high band, per tenant and deployment, and the day each budget in force is expected to run out,
//! read straight from the store as `GET /v1/finops/gpu/forecast` answers it (the same JSON with `--json`).
//! `--tenant` keeps what that tenant's reader sees (its lines and budgets).

use std::process::ExitCode;

use clap::Args;
use eai_app::allocation::Source;
use eai_app::forecast::{forecast_of, Forecast, Window};
use eai_engine::forecast::Rounded;
use eai_engine::money::Currency;

use crate::table::Table;

#[derive(Debug, Args)]
pub struct ForecastArgs {
    /// The month, `YYYY-MM` (UTC; default: the current month).
    #[arg(long)]
    pub period: Option<String>,
    /// What this tenant's reader sees: its own lines and budgets.
    #[arg(long, value_name = "SLUG_OR_ID")]
    pub tenant: Option<String>,
    /// The API's JSON instead of tables.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub store: crate::serve::StoreArgs,
}

pub async fn run(args: ForecastArgs) -> anyhow::Result<ExitCode> {
    let now = eai_app::clock::now();
    let window = Window::of(args.period.as_deref(), now)
        .map_err(|e| anyhow::anyhow!("--period: {}", e.reason))?;
    let tenant = crate::serve::tenant_arg(args.tenant.as_deref())?;
    let (_, store, alloc) = args.store.open().await?;
    let scope = crate::serve::resolve_scope(store.as_ref(), tenant).await?;
    let f = forecast_of(&Source::Primary, store.as_ref(), window, alloc, scope, now).await?;
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&eai_api::views::forecast::Forecast::of(&f))?
        );
    } else {
        print!("{}", render(&f));
    }
    Ok(ExitCode::SUCCESS)
}

fn figures(r: &Rounded, c: Currency) -> [String; 4] {
    [r.spent, r.expected, r.low, r.high].map(|d| format!("{} {c}", c.amount_text(d)))
}

/// The forecast as three tables: the lines, the tenants' totals, the budgets.
pub fn render(f: &Forecast) -> String {
    let w = &f.window;
    let money = [
        ("spent", true),
        ("expected", true),
        ("low", true),
        ("high", true),
    ];
    let tenant = |t: Option<eai_engine::domain::TenantId>| {
        t.map_or_else(|| "(unallocated)".to_string(), |t| t.to_string())
    };
    let mut lines = Table::new(
        &[
            [("tenant", false), ("deployment", false)].as_slice(),
            &money,
        ]
        .concat(),
    );
    for l in &f.lines {
        let mut cells = vec![tenant(l.tenant_id), l.deployment_id.clone()];
        cells.extend(figures(&l.figures, l.currency));
        lines.row(cells);
    }
    let mut totals = Table::new(&[[("tenant", false)].as_slice(), &money].concat());
    for t in &f.tenants {
        let mut cells = vec![tenant(t.tenant_id)];
        cells.extend(figures(&t.figures, t.currency));
        totals.row(cells);
    }
    let mut budgets = Table::new(&[
        ("budget", false),
        ("tenant", false),
        ("limit", true),
        ("spent", true),
        ("expected", true),
        ("runs out", false),
        ("at the high", false),
    ]);
    let day = |d: Option<eai_engine::forecast::Date>| {
        d.map_or_else(|| "-".to_string(), |d| d.to_string())
    };
    for b in &f.budgets {
        let spec = &b.budget.spec;
        let c = spec.currency;
        budgets.row(vec![
            format!("{} ({})", b.budget.id, spec.name),
            spec.tenant_id.to_string(),
            format!("{} {c}", c.amount_text(spec.limit)),
            format!("{} {c}", c.amount_text(b.spent)),
            format!("{} {c}", c.amount_text(b.expected)),
            day(b.exhausted_on),
            day(b.exhausted_on_high),
        ]);
    }
    format!(
        "Forecast of {} (spend counted to {}, {} days left; fitted from {})\n\n{}\nPer tenant\n\n{}\nBudgets\n\n{}",
        w.period(),
        w.as_of,
        w.days_left().len(),
        w.history_from,
        lines.render(),
        totals.render(),
        budgets.render()
    )
}
