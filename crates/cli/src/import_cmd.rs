//! `eai-gpu import`: past GPU usage from Prometheus into the control plane (see `eai_sampler::import`). This
//! file draws it: a progress bar on a terminal (windows done of the total, samples per second, time left),
//! a plain line every 10 s otherwise, and the summary.

use std::future::Future;
use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use eai_sampler::delivery::Sink;
use eai_sampler::import::{ImportArgs, Progress, Summary};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use secrecy::ExposeSecret;

pub async fn run(args: ImportArgs, shutdown: impl Future<Output = ()>) -> anyhow::Result<ExitCode> {
    let sink: Option<Arc<dyn Sink>> = if args.dry_run {
        None
    } else {
        let url = args.control_plane.as_deref().ok_or_else(|| {
            anyhow::anyhow!(
                "--control-plane URL (or EAI_CONTROL_PLANE_URL) is required, unless --dry-run"
            )
        })?;
        let key = args
            .api_key
            .as_ref()
            .map(|k| k.expose_secret())
            .filter(|k| !k.trim().is_empty())
            .ok_or_else(|| {
                anyhow::anyhow!(
                    "EAI_API_KEY is not set: create a key with the sampler role (POST /v1/auth/api-keys \
                     {{\"role\":\"sampler\"}}) and export it, or use --dry-run"
                )
            })?;
        let client =
            eai_client::EnterpriseAi::with_ca_file(url, key.trim(), args.ca_file.as_deref())
                .map_err(|e| anyhow::anyhow!("cannot build the control plane client: {e}"))?;
        Some(Arc::new(client))
    };
    // The bar on a terminal; lines otherwise (and never on stdout: --dry-run prints the samples there).
    let bar = if std::io::stderr().is_terminal() && !args.dry_run {
        let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template(
                "{bar:40} {pos}/{len} windows  {msg}  {elapsed_precise} elapsed, {eta} left",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        Some(bar)
    } else {
        None
    };
    let mut last_line = Instant::now();
    let summary = eai_sampler::import::run(
        &args,
        sink,
        |p: &Progress| {
            let rate = p.samples_this_run as f64 / p.started.elapsed().as_secs_f64().max(1e-9);
            match &bar {
                Some(bar) => {
                    bar.set_length(p.windows_total);
                    bar.set_position(p.totals.windows);
                    bar.set_message(format!(
                        "{} samples, {rate:.0}/s, {} duplicates",
                        p.totals.samples, p.totals.duplicates
                    ));
                }
                None if last_line.elapsed() >= Duration::from_secs(10)
                    || p.totals.windows == p.windows_total =>
                {
                    last_line = Instant::now();
                    eprintln!(
                        "windows {}/{}: {} samples ({rate:.0}/s), {} duplicates",
                        p.totals.windows, p.windows_total, p.totals.samples, p.totals.duplicates
                    );
                }
                None => {}
            }
        },
        shutdown,
    )
    .await;
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    let summary = summary?;
    eprintln!("{}", summary_text(&summary, args.dry_run));
    Ok(if summary.interrupted {
        ExitCode::from(130)
    } else {
        ExitCode::SUCCESS
    })
}

fn summary_text(s: &Summary, dry_run: bool) -> String {
    let t = &s.totals;
    let secs = s.elapsed.as_secs_f64().max(1e-9);
    let mut out = format!(
        "{} {} to {} ({} s windows; scrape interval {} s, values older than {} s at a window's end count as \
         missing)\n",
        if s.interrupted {
            "interrupted"
        } else if dry_run {
            "read (dry run, nothing sent)"
        } else {
            "imported"
        },
        s.from,
        s.to,
        s.interval_ms as f64 / 1e3,
        s.scrape_interval_ms as f64 / 1e3,
        s.max_staleness_ms as f64 / 1e3,
    );
    if let Some(after) = s.resumed_after {
        out.push_str(&format!("resumed after {after} (the checkpoint)\n"));
    }
    out.push_str(&format!(
        "{} GPUs, {} deployments, {} windows\n{} samples: {} added, {} already stored\n",
        s.gpus, s.deployments, t.windows, t.samples, t.added, t.duplicates
    ));
    if t.events > 0 {
        out.push_str(&format!("vLLM: {} usage events\n", t.events));
    }
    out.push_str(&format!(
        "gaps: {} spans, {} GPU-windows missing (up to 15 min the control plane interpolates them, as for a live \
         sampler; longer ones are reported as gaps)\n",
        t.gap_spans, t.gap_windows
    ));
    out.push_str(&format!(
        "this run: {} samples in {secs:.1} s ({:.0} samples/s)",
        s.samples_this_run,
        s.samples_this_run as f64 / secs
    ));
    if s.interrupted {
        out.push_str("\nrun the same command again to carry on");
    }
    out
}
