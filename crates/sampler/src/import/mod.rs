//! `eai-gpu import`: past GPU usage from a Prometheus server (or Thanos, Mimir, VictoriaMetrics: the same HTTP
//! API) that scraped DCGM exporters, turned into samples with exactly the sampler's conversion and attribution,
//! and sent to the control plane in time order.
//!
//! - **Windows.** The ends `from + w, from + 2w, …, to` (`w`: `--interval`, aligned to the epoch as the sampler's
//!   are). Each family is read with `query_range` at those ends, a chunk of windows at a time (at most
//!   `--max-points` steps a query, [`MAX_POINTS`] by default), `--concurrency` chunks in flight.
//! - **Staleness.** A value is the latest sample at or before the window end, as a live read gets it, and only
//!   if a raw sample lies within `--max-staleness` of the end (default [`default_max_age`]: the longer of the
//!   window and the exporter's scrape interval, which is detected from the raw samples): a hole in the history
//!   stays a hole (the control plane reports it as a gap, or interpolates it if short, as for a live sampler),
//!   never a stale value stretched over it ([`stretched_query`](crate::source::prometheus::stretched_query): the
//!   points to leave out, read beside each family).
//! - **Order and idempotency.** Windows are converted in time order by one [`Converter`] (its energy marks need
//!   it) and sent in batches of whole windows, one batch at a time, oldest first: each GPU's samples arrive in
//!   time order. The control plane counts a sample once by (GPU, window end): re-sending is harmless.
//! - **Resumable.** A checkpoint file records the last window end whose batch was acknowledged, and the run's
//!   parameters; a run with the same parameters carries on after it (reading the four windows before it again,
//!   without sending them, so that the energy marks are those of an uninterrupted run). `--restart` ignores it.
//!
//! The files: `read.rs` (Prometheus -> readings, a chunk of windows at a time), `send.rs` (the senders and their
//! acknowledgements), `checkpoint.rs` (the checkpoint file); here, the command's flags and the run that ties them.

mod checkpoint;
mod read;
mod send;

pub use checkpoint::Totals;
pub use read::detect_scrape_interval;

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;
use eai_client::GpuSample;
use eai_engine::Timestamp;

use crate::attribution::Attribution;
use crate::cli::parse_duration_ms;
use crate::convert::{Converter, Window};
use crate::delivery::Sink;
use crate::error::{Result, SamplerError};
use crate::readings::Readings;
use crate::source::prometheus::{PrometheusSource, MAX_POINTS};
use crate::vllm::{Tracker, UsageEvent};
use checkpoint::Checkpoint;
use read::{read_chunk, vllm_query, Chunk, ChunkQuery};
use send::SendState;

/// Windows read again before the first one sent, without sending them (the converter's energy marks look back
/// at most four windows).
const WARM_UP_WINDOWS: i64 = 4;

/// The most a value may be older than its window end (Prometheus's own lookback).
const MAX_STALENESS_MS: i64 = 300_000;

/// Import past GPU usage from a Prometheus server that scraped DCGM exporters.
#[derive(Debug, Clone, Args)]
pub struct ImportArgs {
    /// The Prometheus server (http://HOST:9090), or Thanos, Mimir, VictoriaMetrics: its HTTP query API.
    #[arg(long, value_name = "URL")]
    pub prometheus_url: String,
    /// Extra PromQL label matchers, e.g. 'job="nvidia-dcgm-exporter"'.
    #[arg(long, value_name = "MATCHERS")]
    pub prometheus_matchers: Option<String>,
    /// First day or instant to import (2026-07-01 or RFC 3339), included.
    #[arg(long, value_name = "DATE")]
    pub from: String,
    /// Day or instant to stop at (2026-10-01 or RFC 3339), excluded; at most now.
    #[arg(long, value_name = "DATE")]
    pub to: String,
    /// Attribution rules (TOML), as for `eai-gpu sampler --config`.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Keep only this node's series and name every sample's node so (EAI_NODE).
    #[arg(long, env = "EAI_NODE", value_name = "NAME")]
    pub node: Option<String>,
    /// The control plane's URL (EAI_CONTROL_PLANE_URL).
    #[arg(long, env = "EAI_CONTROL_PLANE_URL", value_name = "URL")]
    pub control_plane: Option<String>,
    /// An API key with the sampler role (EAI_API_KEY; the variable keeps it out of the process list).
    #[arg(long, env = "EAI_API_KEY", hide_env_values = true, value_name = "KEY")]
    pub api_key: Option<secrecy::SecretString>,
    /// A PEM file of certificates to trust beside the system's roots.
    #[arg(long, env = "EAI_CA_FILE", value_name = "FILE")]
    pub ca_file: Option<PathBuf>,
    /// Window length, as the samplers that will carry on use (15s by default, like theirs).
    #[arg(long, default_value = "15s", value_parser = parse_duration_ms, value_name = "DURATION")]
    pub interval: i64,
    /// The exporter's scrape interval (default: detected from the raw samples).
    #[arg(long, value_parser = parse_duration_ms, value_name = "DURATION")]
    pub scrape_interval: Option<i64>,
    /// How old a value may be at its window end before the window counts as missing (default: the longer of
    /// --interval and the scrape interval, plus 1 % for jitter, at most 5m).
    #[arg(long, value_parser = parse_duration_ms, value_name = "DURATION")]
    pub max_staleness: Option<i64>,
    /// Windows (points per series) of one query_range request (Prometheus allows 11,000).
    #[arg(long, default_value_t = 480, value_name = "N")]
    pub max_points: usize,
    /// Chunks of windows read at once (a chunk: one query_range per family, one after another).
    #[arg(long, default_value_t = 4, value_name = "N")]
    pub concurrency: usize,
    /// Samples per request to the control plane (at most the server's EAI_MAX_BATCH).
    #[arg(long, default_value_t = 10_000, value_name = "N")]
    pub batch_size: usize,
    /// Requests to the control plane at once, each carrying the samples of its own share of the GPUs (so each
    /// GPU's samples still arrive in time order).
    #[arg(long, default_value_t = 2, value_name = "N")]
    pub senders: usize,
    /// The checkpoint file: what was sent, so that a re-run carries on.
    #[arg(
        long,
        default_value = "./eai-gpu-import.checkpoint.json",
        value_name = "FILE"
    )]
    pub checkpoint: PathBuf,
    /// Start from `--from` again, whatever the checkpoint says.
    #[arg(long)]
    pub restart: bool,
    /// Also import vLLM's token counters of the pods Prometheus scraped (as `eai-gpu sampler --vllm-discover`
    /// reads them live): usage events of source "vllm", one per series and window with a non-zero delta.
    #[arg(long)]
    pub vllm: bool,
    /// Extra PromQL label matchers for --vllm, e.g. 'job="vllm"'.
    #[arg(long, value_name = "MATCHERS", requires = "vllm")]
    pub vllm_matchers: Option<String>,
    /// Print the samples as JSON (one `{"samples":[…]}` line a batch, and `{"events":[…]}` for --vllm) instead
    /// of sending them.
    #[arg(long)]
    pub dry_run: bool,
    /// Timeout of one request to Prometheus or the control plane.
    #[arg(long, default_value = "60s", value_parser = parse_duration_ms, value_name = "DURATION")]
    pub timeout: i64,
}

/// What a progress display gets after each batch.
#[derive(Debug, Clone)]
pub struct Progress {
    pub windows_total: u64,
    pub totals: Totals,
    /// Samples sent by this run (not its earlier parts), and since when.
    pub samples_this_run: u64,
    pub started: Instant,
}

/// The end of an import.
#[derive(Debug, Clone)]
pub struct Summary {
    pub from: Timestamp,
    pub to: Timestamp,
    pub interval_ms: i64,
    pub scrape_interval_ms: i64,
    pub max_staleness_ms: i64,
    pub totals: Totals,
    pub gpus: usize,
    pub deployments: usize,
    /// Samples of this run, and how long it took.
    pub samples_this_run: u64,
    pub elapsed: Duration,
    /// Where the run started (after a checkpoint's last window, or `from`).
    pub resumed_after: Option<Timestamp>,
    /// Stopped early (Ctrl-C): the checkpoint holds where to carry on.
    pub interrupted: bool,
}

/// How old a value may be at its window's end by default: the longer of the window and the scrape interval
/// (the latest scrape of a window, or of the scrape interval when scrapes are sparser than windows), plus 1 % of
/// it for the scrapes' jitter, at most 5 minutes (Prometheus's own lookback). So a lost scrape leaves its window
/// missing, as it would have left a live sampler reading the exporter: the control plane interpolates a short
/// hole and reports a long one.
pub fn default_max_age(window_ms: i64, scrape_ms: i64) -> i64 {
    let base = window_ms.max(scrape_ms);
    (base + base / 100).min(MAX_STALENESS_MS)
}

/// Runs an import: reads, converts and sends (or prints, `--dry-run`) every window of the period not yet
/// acknowledged, calling `progress` after each batch; stops early, checkpoint written, when `shutdown` resolves.
pub async fn run(
    args: &ImportArgs,
    sink: Option<Arc<dyn Sink>>,
    mut progress: impl FnMut(&Progress),
    shutdown: impl Future<Output = ()>,
) -> Result<Summary> {
    let now = crate::sampler::wall_clock();
    let parse = |flag: &str, v: &str| {
        Timestamp::parse_date_or_datetime(v)
            .map_err(|e| SamplerError::config(format!("{flag} `{v}`: {}", e.reason)))
    };
    let w = args.interval;
    if !(1_000..=3_600_000).contains(&w) {
        return Err(SamplerError::config("--interval must be between 1s and 1h"));
    }
    if args.batch_size == 0 || args.concurrency == 0 || args.max_points == 0 || args.senders == 0 {
        return Err(SamplerError::config(
            "--batch-size, --concurrency, --max-points and --senders must be at least 1",
        ));
    }
    let from = parse("--from", &args.from)?.ceil_to(w);
    let to = parse("--to", &args.to)?.min(now).floor_to(w);
    if to <= from {
        return Err(SamplerError::config(format!(
            "nothing to import: --to ({}) must be after --from ({}) by a window at least, and not in the future",
            to, from
        )));
    }
    let timeout = Duration::from_millis(args.timeout.max(1_000) as u64);
    let prometheus = Arc::new(PrometheusSource::new(
        &args.prometheus_url,
        args.prometheus_matchers.as_deref(),
        args.node.clone(),
        timeout,
    )?);
    let matchers = args.prometheus_matchers.clone();
    let scrape = match args.scrape_interval {
        Some(s) => s,
        None => detect_scrape_interval(&prometheus, matchers.as_deref(), from, to)
            .await?
            .ok_or_else(|| {
                SamplerError::source(
                    "prometheus",
                    "no DCGM_FI_DEV_POWER_USAGE sample in the period: nothing to import (check \
                     --prometheus-matchers, or pass --scrape-interval)",
                )
            })?,
    };
    let max_age = args
        .max_staleness
        .unwrap_or_else(|| default_max_age(w, scrape))
        .max(1);
    // The rules, and their text for the checkpoint (another text is another import).
    let (attribution, config_text) = match &args.config {
        Some(path) => {
            let (a, text) = Attribution::from_file_with_text(path)?;
            (a, Some(text))
        }
        None => (Attribution::default(), None),
    };

    let mut cp = Checkpoint {
        version: 1,
        prometheus_url: args.prometheus_url.trim_end_matches('/').to_string(),
        matchers: matchers.clone(),
        node: args.node.clone(),
        config: config_text,
        vllm: args.vllm.then(|| vllm_query(args.vllm_matchers.as_deref())),
        interval_ms: w,
        max_staleness_ms: max_age,
        from_ms: from.0,
        to_ms: to.0,
        done_through_ms: from.0,
        totals: Totals::default(),
        gpus: BTreeSet::new(),
        deployments: BTreeSet::new(),
    };
    let mut resumed_after = None;
    if !args.dry_run && !args.restart {
        if let Ok(text) = std::fs::read_to_string(&args.checkpoint) {
            let old: Checkpoint = serde_json::from_str(&text).map_err(|e| {
                SamplerError::config(format!(
                    "the checkpoint {} is not one: {e} (remove it, or --restart)",
                    args.checkpoint.display()
                ))
            })?;
            if !old.same_run(&cp) {
                return Err(SamplerError::config(format!(
                    "the checkpoint {} is of another import (another URL, matchers, node, rules, interval or \
                     period): pass --restart to start this one over, or --checkpoint another file",
                    args.checkpoint.display()
                )));
            }
            if old.done_through_ms > from.0 {
                resumed_after = Some(Timestamp(old.done_through_ms));
            }
            cp = old;
        }
    }
    let start = Timestamp(cp.done_through_ms);
    let windows_total = ((to.0 - from.0) / w) as u64;

    // The ends to read: a warm-up before the first to send, then every one after the checkpoint.
    let warm_from = Timestamp(start.0 - WARM_UP_WINDOWS * w);
    let chunk = args.max_points.clamp(1, MAX_POINTS) as i64;
    let mut chunks: VecDeque<(Timestamp, Timestamp)> = VecDeque::new();
    let mut a = warm_from.0 + w;
    while a <= to.0 {
        let b = (a + (chunk - 1) * w).min(to.0);
        chunks.push_back((Timestamp(a), Timestamp(b)));
        a = b + w;
    }

    let shared_attribution = Arc::new(attribution.clone());
    let mut converter = Converter::new(attribution, args.node.clone());
    let mut tracker = Tracker::default();
    let mut events: Vec<UsageEvent> = Vec::new();
    let mut last_seen: HashMap<String, i64> = HashMap::new();
    // A batch: a request's worth for each sender.
    let batch_size = args.batch_size * args.senders;
    let mut pending: Vec<GpuSample> = Vec::new();
    let mut pending_end = start;
    type Read = tokio::task::JoinHandle<Result<Chunk>>;
    let mut in_flight: VecDeque<(Timestamp, Read)> = VecDeque::new();
    let started = Instant::now();
    let mut samples_this_run = 0u64;
    let mut interrupted = false;
    tokio::pin!(shutdown);

    let vllm = cp.vllm.clone();
    let fetch = |(a, b): (Timestamp, Timestamp)| {
        let query = ChunkQuery {
            prometheus: prometheus.clone(),
            matchers: matchers.clone(),
            vllm: vllm.clone(),
            attribution: shared_attribution.clone(),
            interval_ms: w,
            max_age_ms: max_age,
        };
        tokio::spawn(read_chunk(query, a, b))
    };
    let mut sent_state = SendState::new(
        sink,
        args.senders,
        args.batch_size,
        args.dry_run,
        &args.checkpoint,
    );
    'chunks: loop {
        while in_flight.len() < args.concurrency {
            match chunks.pop_front() {
                Some(c) => in_flight.push_back((c.1, fetch(c))),
                None => break,
            }
        }
        let Some((chunk_end, next)) = in_flight.pop_front() else {
            break;
        };
        let chunk = tokio::select! {
            r = next => r.map_err(|e| SamplerError::source("prometheus", format!("a read failed: {e}")))??,
            () = &mut shutdown => { interrupted = true; break 'chunks; }
        };
        let mut readings: HashMap<i64, Readings> =
            chunk.readings.into_iter().map(|r| (r.at.0, r)).collect();
        for end in chunk.ends {
            // vLLM's counters: the tracker sees every window, warm-up included (its baselines).
            if let Some(series) = chunk.counters.get(&end.0) {
                let observed = tracker.observe(end, series);
                if end > start {
                    events.extend(observed.events);
                }
            }
            let Some(r) = readings.remove(&end.0) else {
                continue;
            };
            let window = Window { end, ms: w };
            let conversion = converter.convert(&r, window);
            if end <= start {
                // Warm-up (or already sent): the energy marks, and where each GPU was last seen in the period.
                if end > from {
                    for s in &conversion.samples {
                        seen_at(&mut last_seen, &s.gpu_uuid, end.0);
                    }
                }
                continue;
            }
            for s in &conversion.samples {
                if let Some(last) = seen_at(&mut last_seen, &s.gpu_uuid, end.0) {
                    if end.0 - last > w {
                        cp.totals.gap_spans += 1;
                        cp.totals.gap_windows += ((end.0 - last) / w - 1) as u64;
                    }
                }
                if !cp.gpus.contains(&s.gpu_uuid) {
                    cp.gpus.insert(s.gpu_uuid.clone());
                }
                if !cp.deployments.contains(&s.deployment_id) {
                    cp.deployments.insert(s.deployment_id.clone());
                }
            }
            if !pending.is_empty() && pending.len() + conversion.samples.len() > batch_size {
                let sent = sent_state
                    .send(&mut pending, &mut events, pending_end, &mut cp)
                    .await?;
                samples_this_run += sent;
                progress(&Progress {
                    windows_total,
                    totals: cp.totals.clone(),
                    samples_this_run,
                    started,
                });
            }
            pending.extend(conversion.samples);
            pending_end = end;
            cp.totals.windows = ((end.0 - from.0) / w) as u64;
        }
        // Every window of the chunk was read, those without a reading too: the next batch passes them.
        pending_end = pending_end.max(chunk_end);
    }
    if !interrupted {
        // Everything read: what is left, and the checkpoint at the period's end.
        let sent = sent_state
            .send(&mut pending, &mut events, to, &mut cp)
            .await?;
        samples_this_run += sent;
    }
    // The batch in flight is finished and recorded, interrupted or not.
    sent_state.settle(&mut cp).await?;
    if !interrupted {
        cp.totals.windows = windows_total;
        progress(&Progress {
            windows_total,
            totals: cp.totals.clone(),
            samples_this_run,
            started,
        });
    }
    for (_, h) in in_flight {
        h.abort();
    }
    Ok(Summary {
        from,
        to,
        interval_ms: w,
        scrape_interval_ms: scrape,
        max_staleness_ms: max_age,
        gpus: cp.gpus.len(),
        deployments: cp.deployments.len(),
        totals: cp.totals,
        samples_this_run,
        elapsed: started.elapsed(),
        resumed_after,
        interrupted,
    })
}

/// Records that a GPU was seen at `end`; returns where it was seen before, if anywhere.
fn seen_at(last_seen: &mut HashMap<String, i64>, gpu: &str, end: i64) -> Option<i64> {
    match last_seen.get_mut(gpu) {
        Some(at) => Some(std::mem::replace(at, end)),
        None => {
            last_seen.insert(gpu.to_string(), end);
            None
        }
    }
}
