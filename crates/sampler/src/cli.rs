//! `eai-gpu sampler`: the flags, their validation (a bad one is a clear error at start, never a silent
//! default), and the wiring of a source, the spool, the control plane and the metrics listener.

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{ArgGroup, Args};
use secrecy::{ExposeSecret, SecretString};

use crate::attribution::Attribution;
use crate::convert::Converter;
use crate::error::{Result, SamplerError};
use crate::metrics::{self, Metrics};
use crate::sampler::{wall_clock, Output, Sampler, SamplerOptions, SinkBox, TickReport};
use crate::source::dcgm::DcgmSource;
use crate::source::prometheus::PrometheusSource;
use crate::source::vllm::VllmReader;
use crate::source::Source;
use crate::spool::Spool;
use crate::vllm::Target;

/// Read GPU metrics and push them to the control plane, never losing a window.
#[derive(Debug, Clone, Args)]
#[command(group(ArgGroup::new("source").required(true).args(["dcgm_url", "prometheus_url", "nvml"])))]
pub struct SamplerArgs {
    /// A DCGM exporter's metrics URL (http://HOST:9400/metrics), or file://PATH of a saved scrape.
    #[arg(long, value_name = "URL")]
    pub dcgm_url: Option<String>,
    /// A Prometheus server that scrapes DCGM exporters (http://HOST:9090); it also backfills missed windows.
    #[arg(long, value_name = "URL")]
    pub prometheus_url: Option<String>,
    /// Extra PromQL label matchers for --prometheus-url, e.g. 'job="nvidia-dcgm-exporter"'.
    #[arg(long, value_name = "MATCHERS", requires = "prometheus_url")]
    pub prometheus_matchers: Option<String>,
    /// Read the GPUs through NVML (needs a build with `--features nvml` and the NVIDIA driver).
    #[arg(long)]
    pub nvml: bool,
    /// The NVML library to load, for --nvml or --nvml-processes (default: libnvidia-ml.so.1 from the loader's
    /// path).
    #[arg(long, value_name = "PATH")]
    pub nvml_library: Option<PathBuf>,
    /// Beside --dcgm-url or --prometheus-url: also read each process's GPU time and memory on this node through
    /// NVML every window, so that a GPU several pods share is split by what each used, not equally (needs a
    /// build with `--features nvml` and the NVIDIA driver; --nvml does this always).
    #[arg(long, conflicts_with = "nvml")]
    pub nvml_processes: bool,
    /// Beside --dcgm-url or --prometheus-url: also read HAMi's vGPU monitor (its `/metrics`, e.g.
    /// http://127.0.0.1:9394/metrics) every window, so that a GPU HAMi shares between pods is split by each
    /// container's measured GPU time, not equally.
    #[arg(
        long,
        env = "EAI_HAMI_URL",
        value_name = "URL",
        conflicts_with = "nvml"
    )]
    pub hami_url: Option<String>,
    /// Slurm (EAI_SLURM_JOBS): give each GPU to the Slurm job holding it, read every --slurm-refresh from
    /// `squeue` (`squeue --json`), `scontrol` (`scontrol show job -d`), slurmrestd's jobs URL
    /// (http://slurmctld:6820/slurm/v0.0.38/jobs, token from SLURM_JWT) or a `file://` capture. A GPU whose
    /// series carry DCGM exporter's `hpc_job` label is that job's. Jobs go to tenants by `[[slurm_account]]`.
    #[arg(
        long,
        env = "EAI_SLURM_JOBS",
        value_name = "SOURCE",
        conflicts_with_all = ["nvml", "nvml_processes"]
    )]
    pub slurm_jobs: Option<String>,
    /// This node's name in Slurm (EAI_SLURM_NODE; default: --node, else the host name).
    #[arg(long, env = "EAI_SLURM_NODE", value_name = "NAME")]
    pub slurm_node: Option<String>,
    /// How long Slurm's running jobs are kept before they are read again.
    #[arg(long, default_value = "15s", value_parser = parse_duration_ms, value_name = "DURATION")]
    pub slurm_refresh: i64,
    /// The node's `/` as the sampler sees it (EAI_HOST_ROOT), where NVML's processes are mapped to their pods:
    /// its `proc/<pid>/cgroup`, var/log/pods and var/log/containers (e.g. /host in a DaemonSet with hostPID).
    #[arg(long, env = "EAI_HOST_ROOT", default_value = "/", value_name = "DIR")]
    pub host_root: PathBuf,
    /// The control plane's URL (EAI_CONTROL_PLANE_URL), `http://` or `https://`. The API key is read from
    /// EAI_API_KEY.
    #[arg(long, env = "EAI_CONTROL_PLANE_URL", value_name = "URL")]
    pub control_plane: Option<String>,
    /// The API key the samples are sent with, of the sampler role (EAI_API_KEY; prefer the variable: a flag
    /// shows in the process list). Secret: never printed.
    #[arg(long, env = "EAI_API_KEY", value_name = "KEY", hide_env_values = true)]
    pub api_key: Option<SecretString>,
    /// A PEM file of certificates to trust beside the system's roots (a private CA of the control plane, DCGM
    /// exporter or Prometheus).
    #[arg(long, env = "EAI_CA_FILE", value_name = "FILE")]
    pub ca_file: Option<PathBuf>,
    /// Window length and tick period: 15s, 1m, 1m30s (1s to 1h).
    #[arg(long, default_value = "15s", value_parser = parse_duration_ms, value_name = "DURATION")]
    pub interval: i64,
    /// Node name of every sample (EAI_NODE). Default: each GPU's Hostname label; with --prometheus-url, also
    /// keeps only that node's series.
    #[arg(long, env = "EAI_NODE", value_name = "NAME")]
    pub node: Option<String>,
    /// Attribution rules (TOML): namespace -> tenant, pod/label globs -> deployment id, shared or dedicated.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The durable spool (created if missing).
    #[arg(long, default_value = "./eai-sampler-spool", value_name = "DIR")]
    pub spool_dir: PathBuf,
    /// Bound of the spool's undelivered batches: 256MiB, 1GiB, or bytes.
    #[arg(long, default_value = "256MiB", value_parser = parse_bytes, value_name = "SIZE")]
    pub spool_max_bytes: u64,
    /// What a full spool gives up (counted in eai_sampler_samples_dropped_total): keep-oldest refuses new windows
    /// until delivery frees room (a Prometheus source backfills them, up to --max-backfill); keep-newest deletes
    /// the oldest segments.
    #[arg(long, value_enum, default_value = "keep-oldest", value_name = "POLICY")]
    pub spool_full: crate::spool::WhenFull,
    /// How far back --prometheus-url fills windows missed while the sampler was down.
    #[arg(long, default_value = "1h", value_parser = parse_duration_ms, value_name = "DURATION")]
    pub max_backfill: i64,
    /// Timeout of one read of the source (default: half the interval, at most 10s).
    #[arg(long, value_parser = parse_duration_ms, value_name = "DURATION")]
    pub timeout: Option<i64>,
    /// One tick: deliver what is spooled and the window that just ended (or spool it), then exit.
    #[arg(long)]
    pub once: bool,
    /// Print the samples as JSON instead of spooling and sending them (no control plane, no key needed).
    #[arg(long)]
    pub dry_run: bool,
    /// Serve the sampler's own Prometheus metrics on this address (GET /metrics).
    #[arg(long, value_name = "ADDR")]
    pub metrics_listen: Option<SocketAddr>,
    /// A vLLM server's /metrics to read token and timing counters from, for a deployment:
    /// DEPLOYMENT=URL (repeatable; EAI_VLLM_URLS, comma-separated; or `[[vllm]]` in --config). Their deltas are
    /// sent as usage events of source "vllm".
    #[arg(long = "vllm-url", env = "EAI_VLLM_URLS", value_delimiter = ',', value_parser = Target::parse,
          value_name = "DEPLOYMENT=URL")]
    pub vllm_urls: Vec<Target>,
    /// Also read the vLLM counters of every pod the --prometheus-url server scrapes (deployment by the --config
    /// rules, from namespace and pod).
    #[arg(long)]
    pub vllm_discover: bool,
    /// Extra PromQL label matchers for --vllm-discover, e.g. 'job="vllm"'.
    #[arg(long, value_name = "MATCHERS")]
    pub vllm_matchers: Option<String>,
}

/// `15s`, `1m`, `1m30s`, `500ms`, `1h`, or plain seconds; returns milliseconds.
pub fn parse_duration_ms(s: &str) -> std::result::Result<i64, String> {
    let bad = || format!("`{s}` is not a duration like 15s, 1m, 1m30s, 500ms or 1h");
    let s = s.trim();
    if s.is_empty() {
        return Err(bad());
    }
    if let Ok(secs) = s.parse::<u64>() {
        return i64::try_from(secs)
            .ok()
            .and_then(|v| v.checked_mul(1000))
            .ok_or_else(bad);
    }
    let mut total: i64 = 0;
    let mut rest = s;
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return Err(bad());
        }
        let n: i64 = rest[..digits].parse().map_err(|_| bad())?;
        rest = &rest[digits..];
        let unit_len = rest.bytes().take_while(u8::is_ascii_alphabetic).count();
        let unit = match &rest[..unit_len] {
            "ms" => 1,
            "s" => 1000,
            "m" => 60_000,
            "h" => 3_600_000,
            _ => return Err(bad()),
        };
        rest = &rest[unit_len..];
        total = n
            .checked_mul(unit)
            .and_then(|v| total.checked_add(v))
            .ok_or_else(bad)?;
    }
    Ok(total)
}

/// `268435456`, `256MiB`, `1GiB`, `64KiB` (also `K`, `M`, `G` as binary units, `KB`, `MB`, `GB` as decimal).
pub fn parse_bytes(s: &str) -> std::result::Result<u64, String> {
    let bad = || format!("`{s}` is not a size like 256MiB, 1GiB or a number of bytes");
    let s = s.trim();
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return Err(bad());
    }
    let n: u64 = s[..digits].parse().map_err(|_| bad())?;
    let mult: u64 = match s[digits..].trim() {
        "" | "B" => 1,
        "KiB" | "K" => 1 << 10,
        "MiB" | "M" => 1 << 20,
        "GiB" | "G" => 1 << 30,
        "KB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        _ => return Err(bad()),
    };
    n.checked_mul(mult).ok_or_else(bad)
}

/// The timeout of one read of a source: `--timeout`, or half the interval, at most 10 s.
fn read_timeout(args: &SamplerArgs) -> Duration {
    Duration::from_millis(
        args.timeout
            .unwrap_or_else(|| (args.interval / 2).min(10_000))
            .max(100) as u64,
    )
}

/// Builds the source the flags name.
pub fn source(args: &SamplerArgs, metrics: &Arc<Metrics>) -> Result<Box<dyn Source>> {
    let timeout = read_timeout(args);
    let device: Box<dyn Source> = if let Some(url) = &args.dcgm_url {
        Box::new(DcgmSource::new(url, timeout)?)
    } else if let Some(url) = &args.prometheus_url {
        Box::new(PrometheusSource::new(
            url,
            args.prometheus_matchers.as_deref(),
            args.node.clone(),
            timeout,
        )?)
    } else if args.nvml {
        return nvml_source(args);
    } else {
        return Err(SamplerError::config(
            "name a source: --dcgm-url URL, --prometheus-url URL or --nvml",
        ));
    };
    let device: Box<dyn Source> = match &args.hami_url {
        Some(url) => Box::new(crate::source::hami::WithHami::new(device, url, timeout)?),
        None => device,
    };
    let device: Box<dyn Source> = match &args.slurm_jobs {
        Some(from) => {
            let node = match args.slurm_node.clone().or_else(|| args.node.clone()) {
                Some(n) => n,
                None => host_name()?,
            };
            Box::new(
                crate::source::slurm::WithSlurm::new(
                    device,
                    crate::source::slurm::JobsFrom::parse(from)?,
                    &node,
                    std::time::Duration::from_millis(args.slurm_refresh.max(0) as u64),
                    std::time::Duration::from_secs(300),
                    timeout.max(std::time::Duration::from_secs(5)),
                )?
                .with_metrics(metrics.clone()),
            )
        }
        None => device,
    };
    if args.nvml_processes {
        let reader = nvml_processes(args)?;
        return Ok(Box::new(crate::source::processes::WithProcesses::new(
            device,
            reader,
            args.interval,
        )));
    }
    Ok(device)
}

/// This machine's host name (the kernel's), as Slurm names nodes by default.
fn host_name() -> Result<String> {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .ok_or_else(|| {
            SamplerError::config(
                "cannot read this host's name: give --slurm-node (Slurm's name for it)",
            )
        })
}

/// PID -> pod through the host root's `/proc` and kubelet folders ([`crate::procmap`]).
#[cfg(feature = "nvml")]
fn pod_mapper(args: &SamplerArgs) -> Box<dyn crate::source::processes::PidResolver> {
    let root = crate::procmap::HostRoot::new(&args.host_root);
    if let Err(e) = root.check() {
        tracing::warn!(error = %e, "--host-root: processes cannot be mapped to pods; they count as host processes");
    }
    Box::new(crate::procmap::PodMapper::new(root))
}

#[cfg(feature = "nvml")]
fn nvml_source(args: &SamplerArgs) -> Result<Box<dyn Source>> {
    Ok(Box::new(crate::source::nvml::NvmlSource::open(
        args.nvml_library.as_deref(),
        pod_mapper(args),
        args.interval,
    )?))
}

#[cfg(feature = "nvml")]
fn nvml_processes(args: &SamplerArgs) -> Result<Box<dyn crate::source::processes::ProcessReader>> {
    Ok(Box::new(crate::source::nvml::NvmlProcesses::open(
        args.nvml_library.as_deref(),
        pod_mapper(args),
        args.interval,
    )?))
}

#[cfg(not(feature = "nvml"))]
fn nvml_processes(_args: &SamplerArgs) -> Result<Box<dyn crate::source::processes::ProcessReader>> {
    Err(SamplerError::Unavailable(
        "--nvml-processes: this eai-gpu was built without NVML support; rebuild with `cargo build --release \
         -p eai-gpu --features nvml`"
            .to_string(),
    ))
}

#[cfg(not(feature = "nvml"))]
fn nvml_source(_args: &SamplerArgs) -> Result<Box<dyn Source>> {
    Err(SamplerError::Unavailable(
        "--nvml: this eai-gpu was built without NVML support; rebuild with `cargo build --release -p eai-gpu \
         --features nvml`, or read the GPUs through --dcgm-url or --prometheus-url"
            .to_string(),
    ))
}

/// Everything checked before the first tick: a bad flag, config file, key or spool stops here.
pub fn build(
    args: &SamplerArgs,
    api_key: Option<String>,
    metrics: Arc<Metrics>,
) -> Result<Sampler> {
    if let Some(n) = &args.node {
        if n.trim().is_empty() || n.len() > 253 {
            return Err(SamplerError::config("--node must be 1 to 253 characters"));
        }
    }
    if args.nvml && args.node.is_none() {
        return Err(SamplerError::config(
            "--nvml needs --node NAME (or EAI_NODE): NVML does not know the node's name",
        ));
    }
    if args.nvml_library.is_some() && !args.nvml && !args.nvml_processes {
        return Err(SamplerError::config(
            "--nvml-library only applies with --nvml or --nvml-processes",
        ));
    }
    let attribution = match &args.config {
        Some(path) => Attribution::from_file(path)?,
        None => Attribution::default(),
    };
    let output = if args.dry_run {
        Output::DryRun
    } else {
        let url = args.control_plane.as_deref().ok_or_else(|| {
            SamplerError::config(
                "--control-plane URL (or EAI_CONTROL_PLANE_URL) is required, unless --dry-run",
            )
        })?;
        crate::source::check_http_url("--control-plane", url)?;
        let key = api_key.filter(|k| !k.trim().is_empty()).ok_or_else(|| {
            SamplerError::config(
                "EAI_API_KEY is not set: create a key with the sampler role (POST /v1/auth/api-keys \
                 {\"role\":\"sampler\"}) and export it, or use --dry-run",
            )
        })?;
        let client =
            eai_client::EnterpriseAi::with_ca_file(url, key.trim(), args.ca_file.as_deref())
                .map_err(|e| {
                    SamplerError::config(format!("cannot build the control plane client: {e}"))
                })?;
        let spool = Spool::open(&args.spool_dir, args.spool_max_bytes)?.when_full(args.spool_full);
        let (batches, samples) = spool.pending_counts();
        if batches > 0 {
            tracing::info!(batches, samples, dir = %args.spool_dir.display(), "resuming the spool");
        }
        Output::Deliver {
            spool,
            sink: SinkBox(Arc::new(client)),
        }
    };
    let mut opts = SamplerOptions::new(args.interval);
    opts.max_backfill_ms = args.max_backfill;
    if args.spool_max_bytes < 4096 {
        return Err(SamplerError::config(
            "--spool-max-bytes must be at least 4096",
        ));
    }
    if args.vllm_discover && args.prometheus_url.is_none() {
        return Err(SamplerError::config(
            "--vllm-discover reads vLLM's pods through Prometheus: it needs --prometheus-url",
        ));
    }
    if args.vllm_matchers.is_some() && !args.vllm_discover {
        return Err(SamplerError::config(
            "--vllm-matchers only applies with --vllm-discover",
        ));
    }
    let source = source(args, &metrics)?;
    let mut targets = args.vllm_urls.clone();
    targets.extend(attribution.vllm_targets.iter().cloned());
    let vllm = if targets.is_empty() && !args.vllm_discover {
        None
    } else {
        let prometheus = match (&args.prometheus_url, args.vllm_discover) {
            (Some(url), true) => Some((url.as_str(), args.vllm_matchers.as_deref())),
            _ => None,
        };
        Some(VllmReader::new(
            targets,
            prometheus,
            attribution.clone(),
            read_timeout(args),
        )?)
    };
    let converter = Converter::new(attribution, args.node.clone());
    let sampler = Sampler::new(source, converter, output, opts, metrics)?;
    match vllm {
        Some(reader) => sampler.with_vllm(reader),
        None => Ok(sampler),
    }
}

/// The request body `POST /v1/finops/gpu/samples` would get.
#[derive(serde::Serialize)]
struct Body<'a> {
    samples: &'a [eai_client::GpuSample],
}

/// The request body `POST /v1/usage/events` would get.
#[derive(serde::Serialize)]
struct EventsBody<'a> {
    events: &'a [crate::vllm::UsageEvent],
}

fn print_json(body: &impl serde::Serialize, pretty: bool) {
    let text = if pretty {
        serde_json::to_string_pretty(body)
    } else {
        serde_json::to_string(body)
    };
    if let Ok(t) = text {
        println!("{t}");
    }
}

fn print_batches(r: &TickReport, pretty: bool) {
    for b in &r.produced {
        print_json(
            &Body {
                samples: &b.samples,
            },
            pretty,
        );
    }
    if !r.vllm_events.is_empty() {
        print_json(
            &EventsBody {
                events: &r.vllm_events,
            },
            pretty,
        );
    }
}

/// Runs `eai-gpu sampler` until `shutdown` (or one tick with `--once`).
pub async fn run(
    args: SamplerArgs,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<ExitCode> {
    let metrics = Arc::new(Metrics::default());
    let key = args.api_key.as_ref().map(|k| k.expose_secret().to_owned());
    let mut sampler = build(&args, key, metrics.clone())?;
    let _listener = match args.metrics_listen {
        Some(addr) => {
            let (bound, task) = metrics::serve(addr, metrics.clone()).await?;
            tracing::info!(address = %bound, "sampler metrics on /metrics");
            Some(task)
        }
        None => None,
    };
    if args.once {
        let r = sampler.tick(wall_clock()).await;
        if args.dry_run {
            print_batches(&r, true);
        }
        let produced: usize = r.produced.iter().map(|b| b.samples.len()).sum();
        if args.dry_run {
            eprintln!(
                "window ending {}: {produced} samples, {} vLLM events (dry run: printed, not sent)",
                r.window_end,
                r.vllm_events.len()
            );
            let method = |m: &str| {
                r.produced
                    .iter()
                    .flat_map(|b| &b.samples)
                    .filter(|s| s.share_method.as_deref() == Some(m))
                    .count()
            };
            let (equal, measured) = (method("equal"), method("measured"));
            if equal + measured > 0 {
                eprintln!(
                    "shared GPUs: {measured} samples with measured shares, {equal} split equally (no per-pod GPU \
                     time on this node: see the README's \"Shared GPUs\" for --nvml-processes or --hami-url)"
                );
            }
            for e in &r.vllm_errors {
                eprintln!("warning: {e}");
            }
            return Ok(match &r.scrape_error {
                Some(e) => {
                    eprintln!("error: {e}");
                    ExitCode::from(1)
                }
                None => ExitCode::SUCCESS,
            });
        }
        let pending = sampler
            .spool()
            .map(|s| s.pending_counts())
            .unwrap_or((0, 0));
        eprintln!(
            "window ending {}: {} samples, {} vLLM events{}; delivered {} samples ({} duplicates), {} vLLM events{}; spool holds {} batches ({} samples)",
            r.window_end,
            produced,
            r.vllm_events.len(),
            if r.already_done { " (already read by an earlier run)" } else { "" },
            r.delivered.samples,
            r.delivered.duplicates,
            r.delivered.events,
            r.delivered.failure.as_deref().map(|f| format!(", delivery failed: {f}")).unwrap_or_default(),
            pending.0,
            pending.1,
        );
        if let Some(e) = r.scrape_error.as_ref().or(r.spool_error.as_ref()) {
            eprintln!("error: {e}");
            return Ok(ExitCode::from(1));
        }
        if r.delivered.credentials_refused {
            eprintln!("error: the control plane refuses EAI_API_KEY (the window is spooled; fix the key and run again)");
            return Ok(ExitCode::from(1));
        }
        if r.delivered.rejected_batches > 0 {
            eprintln!(
                "error: the control plane refused {} batches as invalid; they are in {}",
                r.delivered.rejected_batches,
                args.spool_dir.join("rejected").display()
            );
            return Ok(ExitCode::from(1));
        }
        return Ok(ExitCode::SUCCESS);
    }
    tracing::info!(
        source = sampler_source_name(&args),
        interval_ms = args.interval,
        dry_run = args.dry_run,
        "sampler started"
    );
    let dry = args.dry_run;
    sampler
        .run(shutdown, move |r| {
            if dry {
                print_batches(r, false);
            }
        })
        .await;
    Ok(ExitCode::SUCCESS)
}

fn sampler_source_name(args: &SamplerArgs) -> &'static str {
    if args.dcgm_url.is_some() {
        "dcgm"
    } else if args.prometheus_url.is_some() {
        "prometheus"
    } else {
        "nvml"
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::path::PathBuf;
    use std::sync::Arc;

    use clap::Parser;

    use super::{build, parse_bytes, parse_duration_ms, SamplerArgs};
    use crate::metrics::Metrics;
    use crate::spool::DEFAULT_MAX_BYTES;
    use crate::vllm::Target;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        args: SamplerArgs,
    }

    fn parse(flags: &[&str]) -> std::result::Result<SamplerArgs, String> {
        let mut argv = vec!["sampler"];
        argv.extend_from_slice(flags);
        Cli::try_parse_from(argv)
            .map(|c| c.args)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn durations_and_sizes() {
        assert_eq!(parse_duration_ms("15s"), Ok(15_000));
        assert_eq!(parse_duration_ms("1m"), Ok(60_000));
        assert_eq!(parse_duration_ms("1m30s"), Ok(90_000));
        assert_eq!(parse_duration_ms("500ms"), Ok(500));
        assert_eq!(parse_duration_ms("2h"), Ok(7_200_000));
        assert_eq!(parse_duration_ms("15"), Ok(15_000));
        for bad in ["", "s", "15x", "1.5s", "-1s", "m1"] {
            assert!(parse_duration_ms(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_bytes("256MiB"), Ok(DEFAULT_MAX_BYTES));
        assert_eq!(parse_bytes("1GiB"), Ok(1 << 30));
        assert_eq!(parse_bytes("4096"), Ok(4096));
        assert!(parse_bytes("lots").is_err());
    }

    #[test]
    fn flags() {
        let a = parse(&["--dcgm-url", "http://x:9400/metrics"]).unwrap();
        assert_eq!(a.interval, 15_000);
        assert_eq!(a.spool_max_bytes, DEFAULT_MAX_BYTES);
        assert!(parse(&[]).unwrap_err().contains("required"));
        assert!(
            parse(&["--dcgm-url", "http://x", "--nvml"]).is_err(),
            "one source only"
        );
        assert!(parse(&["--dcgm-url", "http://x", "--interval", "soon"])
            .unwrap_err()
            .contains("duration"));
    }

    #[test]
    fn vllm_flags() {
        let a = parse(&[
            "--dcgm-url",
            "http://x",
            "--vllm-url",
            "llama=http://10.0.0.7:8000/metrics",
            "--vllm-url",
            "opt=file:///tmp/opt.prom",
        ])
        .unwrap();
        assert_eq!(
            a.vllm_urls,
            vec![
                Target::new("llama", "http://10.0.0.7:8000/metrics").unwrap(),
                Target::new("opt", "file:///tmp/opt.prom").unwrap()
            ]
        );
        assert!(parse(&[
            "--dcgm-url",
            "http://x",
            "--vllm-url",
            "http://10.0.0.7:8000/metrics"
        ])
        .unwrap_err()
        .contains("DEPLOYMENT=URL"));
        let m = || Arc::new(Metrics::default());
        let e = build(
            &parse(&["--dcgm-url", "http://x", "--vllm-discover", "--dry-run"]).unwrap(),
            None,
            m(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("--prometheus-url"), "{e}");
        let e = build(
            &parse(&[
                "--prometheus-url",
                "http://p",
                "--vllm-matchers",
                "job=\"v\"",
                "--dry-run",
            ])
            .unwrap(),
            None,
            m(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("--vllm-discover"), "{e}");
        let a = parse(&[
            "--prometheus-url",
            "http://prom:9090",
            "--vllm-discover",
            "--vllm-matchers",
            "job=\"vllm\"",
            "--dry-run",
        ])
        .unwrap();
        assert!(a.vllm_discover);
        assert!(build(&a, None, Arc::new(Metrics::default())).is_ok());
    }

    #[test]
    fn bad_setups_fail_at_start_with_a_clear_message() {
        let m = || Arc::new(Metrics::default());
        let dir = tempfile::tempdir().unwrap();
        let spool = dir.path().join("spool").display().to_string();
        let base = [
            "--dcgm-url",
            "http://127.0.0.1:1/metrics",
            "--spool-dir",
            spool.as_str(),
        ];
        let with = |extra: &[&str]| {
            let mut f = base.to_vec();
            f.extend_from_slice(extra);
            parse(&f).unwrap()
        };
        let e = build(&with(&[]), Some("k".into()), m())
            .unwrap_err()
            .to_string();
        assert!(e.contains("--control-plane"), "{e}");
        let e = build(&with(&["--control-plane", "http://cp"]), None, m())
            .unwrap_err()
            .to_string();
        assert!(e.contains("EAI_API_KEY"), "{e}");
        let e = build(
            &with(&["--control-plane", "cp:8080"]),
            Some("k".into()),
            m(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("http://"), "{e}");
        let e = build(&with(&["--dry-run", "--interval", "500ms"]), None, m())
            .unwrap_err()
            .to_string();
        assert!(e.contains("--interval"), "{e}");
        let e = build(
            &with(&["--dry-run", "--config", "/nonexistent/sampler.toml"]),
            None,
            m(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("/nonexistent/sampler.toml"), "{e}");
        let bad = dir.path().join("bad.toml");
        std::fs::write(&bad, "[[deployment]]\ndeployment_id = \"x\"\n").unwrap();
        let e = build(
            &with(&["--dry-run", "--config", bad.to_str().unwrap()]),
            None,
            m(),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("bad.toml") && e.contains("matches nothing"),
            "{e}"
        );
        let e = build(&with(&["--dry-run", "--spool-max-bytes", "100"]), None, m())
            .unwrap_err()
            .to_string();
        assert!(e.contains("--spool-max-bytes"), "{e}");
        let e = build(
            &parse(&["--dcgm-url", "ftp://x", "--dry-run"]).unwrap(),
            None,
            m(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("--dcgm-url"), "{e}");
        let https = parse(&["--prometheus-url", "https://prom", "--dry-run"]).unwrap();
        assert!(build(&https, None, m()).is_ok(), "https:// is taken");
        let e = build(
            &parse(&["--prometheus-url", "https://", "--dry-run"]).unwrap(),
            None,
            m(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("--prometheus-url"), "{e}");
        let e = build(
            &parse(&[
                "--dcgm-url",
                "http://x",
                "--control-plane",
                "https://cp",
                "--ca-file",
                "/nonexistent/ca.pem",
            ])
            .unwrap(),
            Some("eai_live_0123456789abcdef0123456789".into()),
            m(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("/nonexistent/ca.pem"), "{e}");
        assert!(build(&with(&["--dry-run"]), None, m()).is_ok());
    }

    #[test]
    fn nvml_processes_go_beside_a_device_source() {
        let m = || Arc::new(Metrics::default());
        assert!(
            parse(&["--nvml", "--nvml-processes", "--node", "n1"]).is_err(),
            "--nvml measures processes itself"
        );
        let a = parse(&[
            "--dcgm-url",
            "http://x:9400/metrics",
            "--nvml-processes",
            "--dry-run",
        ])
        .unwrap();
        assert!(a.nvml_processes);
        assert_eq!(a.host_root, PathBuf::from("/"));
        let e = build(
            &parse(&[
                "--dcgm-url",
                "http://x",
                "--nvml-library",
                "/x.so",
                "--dry-run",
            ])
            .unwrap(),
            None,
            m(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("--nvml-library"), "{e}");
        // Without the feature, how to get it; with it, this machine's missing driver, said at start.
        let e = build(
            &parse(&[
                "--dcgm-url",
                "http://x",
                "--nvml-processes",
                "--nvml-library",
                "/nonexistent/libnvidia-ml.so.1",
                "--host-root",
                "/nonexistent-root",
                "--dry-run",
            ])
            .unwrap(),
            None,
            m(),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("--features nvml") || e.contains("--nvml-processes: cannot load"),
            "{e}"
        );
    }

    #[cfg(not(feature = "nvml"))]
    #[test]
    fn nvml_without_the_feature_says_how_to_get_it() {
        let a = parse(&["--nvml", "--dry-run", "--node", "n1"]).unwrap();
        let e = build(&a, None, Arc::new(Metrics::default()))
            .unwrap_err()
            .to_string();
        assert!(e.contains("--features nvml"), "{e}");
    }
}
