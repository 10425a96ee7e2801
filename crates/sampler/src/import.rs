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
//!   never a stale value stretched over it ([`stretched_query`]: the points to leave out, read beside each family).
//! - **Order and idempotency.** Windows are converted in time order by one [`Converter`] (its energy marks need
//!   it) and sent in batches of whole windows, one batch at a time, oldest first: each GPU's samples arrive in
//!   time order. The control plane counts a sample once by (GPU, window end): re-sending is harmless.
//! - **Resumable.** A checkpoint file records the last window end whose batch was acknowledged, and the run's
//!   parameters; a run with the same parameters carries on after it (reading the four windows before it again,
//!   without sending them, so that the energy marks are those of an uninterrupted run). `--restart` ignores it.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;
use eai_client::{GpuSample, Ingested};
use eai_engine::Timestamp;
use serde::{Deserialize, Serialize};

use crate::attribution::Attribution;
use crate::cli::parse_duration_ms;
use crate::convert::{Converter, Window};
use crate::dcgm::{Readings, FAMILIES};
use crate::delivery::{classify, Failure, Sink};
use crate::error::{Result, SamplerError};
use crate::source::prometheus::{
    decode, family_selector, stretched_query, PrometheusSource, RangeReadings, Stretched,
    MAX_POINTS,
};
use crate::source::vllm::series_from_range;
use crate::spool::write_durably;
use crate::vllm::{Counters, SeriesKey, Tracker, UsageEvent};

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
    /// The control plane's URL (EAI_CONTROL_PLANE_URL); the key is read from EAI_API_KEY.
    #[arg(long, env = "EAI_CONTROL_PLANE_URL", value_name = "URL")]
    pub control_plane: Option<String>,
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

/// Where an import stands.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Totals {
    /// Windows read (sent or not), of the run and its earlier parts.
    pub windows: u64,
    pub samples: u64,
    /// Samples the control plane stored (not already holding them), and those it already held.
    pub added: u64,
    pub duplicates: u64,
    /// Holes: spans of missing windows of a GPU between two windows it was seen in, and their windows.
    pub gap_spans: u64,
    pub gap_windows: u64,
    /// vLLM usage events sent (`--vllm`).
    #[serde(default)]
    pub events: u64,
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

/// The checkpoint file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Checkpoint {
    version: u32,
    prometheus_url: String,
    matchers: Option<String>,
    node: Option<String>,
    config: Option<String>,
    #[serde(default)]
    vllm: Option<String>,
    interval_ms: i64,
    max_staleness_ms: i64,
    from_ms: i64,
    to_ms: i64,
    /// The last window end of an acknowledged batch (every window up to it is stored).
    done_through_ms: i64,
    totals: Totals,
    gpus: BTreeSet<String>,
    deployments: BTreeSet<String>,
}

impl Checkpoint {
    fn same_run(&self, o: &Checkpoint) -> bool {
        (
            &self.prometheus_url,
            &self.matchers,
            &self.node,
            &self.config,
            &self.vllm,
            self.interval_ms,
            self.max_staleness_ms,
            self.from_ms,
            self.to_ms,
        ) == (
            &o.prometheus_url,
            &o.matchers,
            &o.node,
            &o.config,
            &o.vllm,
            o.interval_ms,
            o.max_staleness_ms,
            o.from_ms,
            o.to_ms,
        )
    }
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

/// The exporter's scrape interval: the median spacing of the raw power samples of a few instants of the period
/// (`None` when the period holds none).
pub async fn detect_scrape_interval(
    prometheus: &PrometheusSource,
    matchers: Option<&str>,
    from: Timestamp,
    to: Timestamp,
) -> Result<Option<i64>> {
    let sel = match matchers.map(str::trim).filter(|m| !m.is_empty()) {
        Some(m) => format!("DCGM_FI_DEV_POWER_USAGE{{{m}}}[10m]"),
        None => "DCGM_FI_DEV_POWER_USAGE[10m]".to_string(),
    };
    let mut spacings: Vec<i64> = Vec::new();
    const PROBES: i64 = 8;
    for k in 1..=PROBES {
        let at = Timestamp(from.0 + (to.0 - from.0) * k / PROBES);
        let body = prometheus.query_instant(&sel, at).await?;
        let data = decode(&body)?;
        for s in data.result.iter().take(16) {
            let ts: Vec<i64> = s
                .values()
                .iter()
                .map(|(t, _)| (t * 1000.0).round() as i64)
                .collect();
            spacings.extend(ts.windows(2).map(|w| w[1] - w[0]).filter(|d| *d > 0));
        }
        if spacings.len() >= 64 {
            break;
        }
    }
    if spacings.is_empty() {
        return Ok(None);
    }
    spacings.sort_unstable();
    Ok(Some(spacings[spacings.len() / 2]))
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
        let (prometheus, matchers, vllm) = (prometheus.clone(), matchers.clone(), vllm.clone());
        let attribution = shared_attribution.clone();
        tokio::spawn(async move {
            let ends: Vec<Timestamp> = (0..=(b.0 - a.0) / w)
                .map(|i| Timestamp(a.0 + i * w))
                .collect();
            // In the families' name order: the order a live read's answer lists them in.
            let mut families = FAMILIES.to_vec();
            families.sort_unstable();
            let mut bodies = Vec::with_capacity(families.len());
            for f in families {
                let values = family_selector(f, matchers.as_deref());
                let stretched = stretched_query(f, matchers.as_deref(), max_age);
                bodies.push((
                    prometheus.query_range(&values, a, b, w).await?,
                    prometheus.query_range(&stretched, a, b, w).await?,
                ));
            }
            let vllm_body = match vllm {
                Some(q) => Some(prometheus.query_range(&q, a, b, w).await?),
                None => None,
            };
            // Decoding is the CPU-heavy part: on a blocking thread, so that the runtime's workers stay free to
            // move the batches to the control plane.
            let node = prometheus.node().map(str::to_string);
            tokio::task::spawn_blocking(move || {
                let mut r = RangeReadings::new(&ends, node.as_deref());
                for (values, stretched) in &bodies {
                    r.add_except(values, &Stretched::from_range(stretched)?)?;
                }
                let counters = match vllm_body {
                    Some(body) => series_from_range(&body, &ends, &attribution)?,
                    None => Default::default(),
                };
                Ok(Chunk {
                    ends,
                    readings: r.finish(),
                    counters,
                })
            })
            .await
            .map_err(|e| SamplerError::source("prometheus", format!("decoding failed: {e}")))?
        })
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

/// Sends (or prints) batches and moves the checkpoint past each acknowledged one.
///
/// Each batch is split by GPU between `--senders` sender tasks ([`shard_of`]: a GPU always goes to the same
/// one), each sending its parts one request at a time, in order: a GPU's samples arrive in time order, while
/// the control plane has several requests to work on (it parses one while it writes another). A sender holds
/// at most one part waiting besides the one it sends, so at most two batches are in flight while the next is
/// made. A batch is recorded in the checkpoint once every part of it, and of every batch before it, is
/// acknowledged.
struct SendState<'a> {
    dry_run: bool,
    checkpoint: &'a Path,
    /// Requests of at most this many samples.
    request_size: usize,
    senders: Vec<tokio::sync::mpsc::Sender<Part>>,
    workers: Vec<tokio::task::JoinHandle<()>>,
    acks: tokio::sync::mpsc::UnboundedReceiver<(u64, Result<Delivered>)>,
    /// Batches sent and not yet recorded, oldest first.
    outstanding: VecDeque<Outstanding>,
    next_seq: u64,
}

/// What the control plane acknowledged of one request (or one batch, summed).
#[derive(Default)]
struct Delivered {
    samples: u64,
    added: u64,
    duplicates: u64,
    events: u64,
}

/// One request's worth of a batch, for one sender.
struct Part {
    seq: u64,
    samples: Vec<GpuSample>,
    events: Vec<UsageEvent>,
}

/// A batch in flight: the parts not yet acknowledged, what the others were, and its last window end.
struct Outstanding {
    seq: u64,
    through: Timestamp,
    parts_left: usize,
    delivered: Delivered,
}

/// Which sender carries a GPU's samples (the physical GPU's: its MIG instances go with it).
fn shard_of(gpu_uuid: &str, senders: usize) -> usize {
    use std::hash::{Hash, Hasher};
    let physical = gpu_uuid.split_once("/mig-").map_or(gpu_uuid, |(g, _)| g);
    let mut h = std::collections::hash_map::DefaultHasher::new();
    physical.hash(&mut h);
    (h.finish() % senders as u64) as usize
}

impl<'a> SendState<'a> {
    fn new(
        sink: Option<Arc<dyn Sink>>,
        senders: usize,
        request_size: usize,
        dry_run: bool,
        checkpoint: &'a Path,
    ) -> Self {
        let (ack_tx, acks) = tokio::sync::mpsc::unbounded_channel();
        let (mut txs, mut workers) = (Vec::new(), Vec::new());
        if let (Some(sink), false) = (sink, dry_run) {
            for _ in 0..senders.max(1) {
                let (tx, mut rx) = tokio::sync::mpsc::channel::<Part>(1);
                let (sink, ack_tx) = (sink.clone(), ack_tx.clone());
                workers.push(tokio::spawn(async move {
                    while let Some(part) = rx.recv().await {
                        let r = deliver_part(sink.as_ref(), &part).await;
                        let failed = r.is_err();
                        if ack_tx.send((part.seq, r)).is_err() || failed {
                            break;
                        }
                    }
                }));
                txs.push(tx);
            }
        }
        SendState {
            dry_run,
            checkpoint,
            request_size: request_size.max(1),
            senders: txs,
            workers,
            acks,
            outstanding: VecDeque::new(),
            next_seq: 0,
        }
    }

    /// Sends `batch` and `events` (emptied), whose last window ends at `through`, retrying what is worth
    /// retrying (or prints them, `--dry-run`). Returns the samples sent.
    async fn send(
        &mut self,
        batch: &mut Vec<GpuSample>,
        events: &mut Vec<UsageEvent>,
        through: Timestamp,
        cp: &mut Checkpoint,
    ) -> Result<u64> {
        let n = batch.len() as u64;
        if self.dry_run || self.senders.is_empty() {
            #[derive(Serialize)]
            struct Samples<'b> {
                samples: &'b [GpuSample],
            }
            #[derive(Serialize)]
            struct Events<'b> {
                events: &'b [UsageEvent],
            }
            if self.dry_run {
                if !batch.is_empty() {
                    if let Ok(t) = serde_json::to_string(&Samples { samples: batch }) {
                        println!("{t}");
                    }
                }
                for chunk in events.chunks(EVENTS_PER_BATCH) {
                    if let Ok(t) = serde_json::to_string(&Events { events: chunk }) {
                        println!("{t}");
                    }
                }
            }
            let delivered = Delivered {
                samples: n,
                events: events.len() as u64,
                ..Delivered::default()
            };
            self.record(cp, delivered, through)?;
            batch.clear();
            events.clear();
            return Ok(n);
        }
        self.take_acks(cp, false).await?;
        let seq = self.next_seq;
        self.next_seq += 1;
        // Each sender's share, in the batch's order (time order), cut into requests.
        let k = self.senders.len();
        let mut shares: Vec<Vec<GpuSample>> = (0..k).map(|_| Vec::new()).collect();
        for s in batch.drain(..) {
            shares[shard_of(&s.gpu_uuid, k)].push(s);
        }
        let mut parts: Vec<(usize, Part)> = Vec::new();
        for (i, share) in shares.into_iter().enumerate() {
            let mut rest = share;
            while !rest.is_empty() {
                let tail = rest.split_off(rest.len().min(self.request_size));
                let samples = std::mem::replace(&mut rest, tail);
                parts.push((
                    i,
                    Part {
                        seq,
                        samples,
                        events: Vec::new(),
                    },
                ));
            }
        }
        // vLLM's events go with the first sender's first part: one sender, so in time order too.
        if !events.is_empty() {
            match parts.iter_mut().find(|(i, _)| *i == 0) {
                Some((_, p)) => p.events = std::mem::take(events),
                None => parts.insert(
                    0,
                    (
                        0,
                        Part {
                            seq,
                            samples: Vec::new(),
                            events: std::mem::take(events),
                        },
                    ),
                ),
            }
        }
        self.outstanding.push_back(Outstanding {
            seq,
            through,
            parts_left: parts.len(),
            delivered: Delivered::default(),
        });
        for (i, part) in parts {
            if self.senders[i].send(part).await.is_err() {
                // The sender stopped on a failure: its answer says which.
                self.take_acks(cp, true).await?;
                return Err(SamplerError::config("a sender stopped"));
            }
        }
        self.take_acks(cp, false).await?;
        Ok(n)
    }

    /// Takes the acknowledgements that arrived (all of them, waiting, with `wait`) and records each batch
    /// acknowledged whole, in order; the first failure stops the import.
    async fn take_acks(&mut self, cp: &mut Checkpoint, wait: bool) -> Result<()> {
        loop {
            self.record_done(cp)?;
            if self.outstanding.is_empty() {
                return Ok(());
            }
            let ack = if wait {
                self.acks.recv().await
            } else {
                match self.acks.try_recv() {
                    Ok(a) => Some(a),
                    Err(_) => return Ok(()),
                }
            };
            let Some((seq, r)) = ack else {
                return Err(SamplerError::config("the senders stopped"));
            };
            let d = r?;
            if let Some(o) = self.outstanding.iter_mut().find(|o| o.seq == seq) {
                o.parts_left = o.parts_left.saturating_sub(1);
                o.delivered.samples += d.samples;
                o.delivered.added += d.added;
                o.delivered.duplicates += d.duplicates;
                o.delivered.events += d.events;
            }
        }
    }

    /// Records the oldest batches whose every part is acknowledged.
    fn record_done(&mut self, cp: &mut Checkpoint) -> Result<()> {
        while self.outstanding.front().is_some_and(|o| o.parts_left == 0) {
            if let Some(o) = self.outstanding.pop_front() {
                self.record(cp, o.delivered, o.through)?;
            }
        }
        Ok(())
    }

    /// Waits for every batch in flight, and records them.
    async fn settle(&mut self, cp: &mut Checkpoint) -> Result<()> {
        self.take_acks(cp, true).await
    }

    fn record(&self, cp: &mut Checkpoint, d: Delivered, through: Timestamp) -> Result<()> {
        cp.totals.samples += d.samples;
        cp.totals.added += d.added;
        cp.totals.duplicates += d.duplicates;
        cp.totals.events += d.events;
        cp.done_through_ms = cp.done_through_ms.max(through.0);
        if !self.dry_run {
            write_durably(
                self.checkpoint,
                &serde_json::to_vec_pretty(cp).unwrap_or_default(),
            )?;
        }
        Ok(())
    }
}

impl Drop for SendState<'_> {
    fn drop(&mut self) {
        for w in &self.workers {
            w.abort();
        }
    }
}

/// One part: its samples, then its events; retried as [`deliver`] does.
async fn deliver_part(sink: &dyn Sink, part: &Part) -> Result<Delivered> {
    let mut d = Delivered {
        samples: part.samples.len() as u64,
        events: part.events.len() as u64,
        ..Delivered::default()
    };
    if !part.samples.is_empty() {
        let a = deliver(sink, &part.samples).await?;
        // `accepted` counts the part's valid samples, duplicates among them.
        d.added = a.accepted.saturating_sub(a.duplicates);
        d.duplicates = a.duplicates;
    }
    for chunk in part.events.chunks(EVENTS_PER_BATCH) {
        deliver_events(sink, chunk).await?;
    }
    Ok(d)
}

/// vLLM events per request (the control plane takes at most EAI_MAX_BATCH, 10,000 by default).
const EVENTS_PER_BATCH: usize = 5_000;

/// The discovery query of `--vllm` (the sampler's `--vllm-discover`'s).
fn vllm_query(matchers: Option<&str>) -> String {
    crate::source::vllm::discovery_query(matchers)
}

/// One chunk of windows read: their ends, the GPU readings, vLLM's counters per end.
#[derive(Debug)]
struct Chunk {
    ends: Vec<Timestamp>,
    readings: Vec<Readings>,
    counters: BTreeMap<i64, Vec<(SeriesKey, Counters)>>,
}

/// Events to the control plane, retried as [`deliver`] does; an event re-sent replaces itself (same id).
async fn deliver_events(sink: &dyn Sink, events: &[UsageEvent]) -> Result<()> {
    let what = format!("{} vLLM events", events.len());
    retried(&what, || sink.send_events(events))
        .await
        .map(|_| ())
}

/// One batch to the control plane: retried with a backoff while the failure is worth retrying (no answer, 429,
/// 5xx), for about ten minutes; a refusal stops the import with the server's message.
async fn deliver(sink: &dyn Sink, batch: &[GpuSample]) -> Result<Ingested> {
    let what = format!("a batch of {} samples", batch.len());
    retried(&what, || sink.send(batch)).await
}

/// `send()` until it succeeds, or fails in a way not worth retrying, or 20 tries (about ten minutes of backoff).
async fn retried<T, F, Fut>(what: &str, mut send: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = std::result::Result<T, eai_client::ClientError>>,
{
    let mut wait = Duration::from_millis(250);
    let mut tries = 0;
    loop {
        match send().await {
            Ok(a) => return Ok(a),
            Err(e) => {
                tries += 1;
                match classify(&e) {
                    Failure::Retry if tries < 20 => {
                        tracing::warn!(error = %e, tries, "the control plane did not take {what}; retrying");
                        tokio::time::sleep(wait).await;
                        wait = (wait * 2).min(Duration::from_secs(30));
                    }
                    _ => {
                        return Err(SamplerError::config(format!(
                            "the control plane refused {what}: {e} (the checkpoint holds what was acknowledged: \
                             fix the cause and run the same command again)"
                        )))
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::collections::HashSet;
    use std::sync::Mutex;

    use async_trait::async_trait;
    use eai_client::ClientError;

    use super::*;

    /// A control plane whose answers take longer for some GPUs than others (so the senders finish out of
    /// order), and that remembers what it acknowledged.
    #[derive(Default)]
    struct Uneven {
        acknowledged: Mutex<HashSet<(String, String)>>,
        order: Mutex<HashMap<String, Vec<String>>>,
    }

    #[async_trait]
    impl Sink for Uneven {
        async fn send(&self, samples: &[GpuSample]) -> std::result::Result<Ingested, ClientError> {
            for s in samples {
                let mut order = self.order.lock().unwrap();
                order
                    .entry(s.gpu_uuid.clone())
                    .or_default()
                    .push(s.timestamp.clone().unwrap_or_default());
            }
            let slow = samples.iter().any(|s| s.gpu_uuid.ends_with('0'));
            tokio::time::sleep(Duration::from_millis(if slow { 40 } else { 2 })).await;
            let mut acked = self.acknowledged.lock().unwrap();
            for s in samples {
                acked.insert((s.gpu_uuid.clone(), s.timestamp.clone().unwrap_or_default()));
            }
            Ok(Ingested {
                accepted: samples.len() as u64,
                duplicates: 0,
            })
        }

        async fn send_events(
            &self,
            events: &[UsageEvent],
        ) -> std::result::Result<u64, ClientError> {
            Ok(events.len() as u64)
        }
    }

    fn sample(gpu: &str, end: Timestamp) -> GpuSample {
        GpuSample {
            node: "n".into(),
            gpu_uuid: gpu.into(),
            model: "m".into(),
            namespace: "-".into(),
            pod: "-".into(),
            tenant_id: None,
            deployment_id: "d".into(),
            window_seconds: "60".into(),
            utilization: "0.5".into(),
            memory_used_gb: "1".into(),
            power_w: "100".into(),
            timestamp: Some(end.to_string()),
            storage_gb: None,
            gpu_fraction: None,
            share_method: None,
        }
    }

    fn checkpoint() -> Checkpoint {
        Checkpoint {
            version: 1,
            prometheus_url: "http://p".into(),
            matchers: None,
            node: None,
            config: None,
            vllm: None,
            interval_ms: 60_000,
            max_staleness_ms: 60_600,
            from_ms: 0,
            to_ms: 0,
            done_through_ms: 0,
            totals: Totals::default(),
            gpus: BTreeSet::new(),
            deployments: BTreeSet::new(),
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_checkpoint_passes_a_batch_only_once_every_sender_acknowledged_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("checkpoint.json");
        let sink = Arc::new(Uneven::default());
        let gpus: Vec<String> = (0..12).map(|i| format!("GPU-{i}")).collect();
        // Some GPUs' shards answer slowly: a batch is acknowledged out of order across senders.
        assert!(gpus.iter().any(|g| g.ends_with('0')));
        let mut state = SendState::new(Some(sink.clone()), 3, 5, false, &path);
        let mut cp = checkpoint();
        let mut sent = 0;
        for b in 1..=8i64 {
            // Two windows a batch, every GPU in each: 24 samples, so several requests a sender.
            let mut batch: Vec<GpuSample> = Vec::new();
            for w in [2 * b - 1, 2 * b] {
                batch.extend(gpus.iter().map(|g| sample(g, Timestamp(w * 60_000))));
            }
            let mut events = Vec::new();
            sent += state
                .send(&mut batch, &mut events, Timestamp(2 * b * 60_000), &mut cp)
                .await
                .unwrap();
            assert!(batch.is_empty());
            // Whatever the checkpoint passed was acknowledged, every GPU and window of it.
            let on_disk: Checkpoint = serde_json::from_str(
                &std::fs::read_to_string(&path)
                    .unwrap_or_else(|_| serde_json::to_string(&checkpoint()).unwrap()),
            )
            .unwrap();
            assert_eq!(on_disk.done_through_ms, cp.done_through_ms);
            let acked = sink.acknowledged.lock().unwrap().clone();
            for w in 1..=cp.done_through_ms / 60_000 {
                for g in &gpus {
                    assert!(
                        acked.contains(&(g.clone(), Timestamp(w * 60_000).to_string())),
                        "the checkpoint passed window {w} of {g} before it was acknowledged"
                    );
                }
            }
            assert_eq!(
                cp.totals.samples,
                24 * (cp.done_through_ms / 120_000) as u64
            );
        }
        state.settle(&mut cp).await.unwrap();
        assert_eq!(sent, 8 * 24);
        assert_eq!(cp.done_through_ms, 16 * 60_000);
        assert_eq!((cp.totals.samples, cp.totals.added), (192, 192));
        // Each GPU's samples reached the control plane in time order, by one sender.
        let order = sink.order.lock().unwrap();
        for g in &gpus {
            let ends: Vec<String> = (1..=16)
                .map(|w| Timestamp(w * 60_000).to_string())
                .collect();
            assert_eq!(order[g], ends, "{g}");
        }
    }

    #[test]
    fn a_gpu_and_its_mig_instances_go_to_one_sender() {
        for g in ["GPU-a", "GPU-b", "GPU-c", "GPU-d"] {
            let s = shard_of(g, 4);
            assert_eq!(shard_of(&format!("{g}/mig-1g.10gb-9"), 4), s);
            assert_eq!(shard_of(&format!("{g}/mig-free"), 4), s);
        }
        let spread: HashSet<usize> = (0..64).map(|i| shard_of(&format!("GPU-{i}"), 4)).collect();
        assert_eq!(spread.len(), 4);
    }
}
