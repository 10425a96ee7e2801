//! The sampler: one testable [`Sampler::tick`] (read the window that just ended, convert, spool, deliver)
//! behind a thin loop ([`Sampler::run`]) that only waits for the next window boundary or the end of a backoff.
//! Time is always an argument, so tests drive windows, outages and backoffs without waiting for them.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use eai_engine::Timestamp;

use crate::convert::{Converter, Window};
use crate::delivery::{classify, Failure, Retries, Sink};
use crate::error::{Result, SamplerError};
use crate::metrics::Metrics;
use crate::readings::Readings;
use crate::source::vllm::VllmReader;
use crate::source::Source;
use crate::spool::{Batch, Spool};
use crate::vllm::{Tracker, UsageEvent};

/// vLLM usage events per spooled batch (one request): far under the control plane's `EAI_MAX_BATCH` (10,000).
pub const MAX_EVENTS_PER_BATCH: usize = 500;

/// How the sampler runs.
#[derive(Debug, Clone)]
pub struct SamplerOptions {
    /// Window length and tick period (ms).
    pub interval_ms: i64,
    /// How far back a source with history (Prometheus) fills windows missed while the sampler was down.
    pub max_backfill_ms: i64,
    /// Reads of the source per tick before the window is given up (never invented).
    pub scrape_attempts: u32,
    /// Pause before the second read of a tick (doubled for each further one).
    pub scrape_retry_ms: u64,
    /// First and longest wait between deliveries after a failure.
    pub retry_base_ms: i64,
    pub retry_max_ms: i64,
    /// How long one delivery round may take before the next window's tick.
    pub drain_budget: Duration,
}

impl SamplerOptions {
    pub fn new(interval_ms: i64) -> Self {
        SamplerOptions {
            interval_ms,
            max_backfill_ms: 3_600_000,
            scrape_attempts: 3,
            scrape_retry_ms: 500,
            retry_base_ms: 1_000,
            retry_max_ms: 300_000,
            drain_budget: Duration::from_millis((interval_ms / 2).max(1) as u64),
        }
    }
}

/// What one delivery round did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Delivered {
    pub batches: u64,
    pub samples: u64,
    /// Samples the control plane already had.
    pub duplicates: u64,
    pub rejected_batches: u64,
    pub rejected_samples: u64,
    /// vLLM usage events accepted, and refused as invalid.
    pub events: u64,
    pub rejected_events: u64,
    /// The failure that stopped the round, if any (it will be retried).
    pub failure: Option<String>,
    /// The round was skipped: still backing off after a failure.
    pub backing_off: bool,
    /// The control plane refused the key (401/403): nothing is sent until it is fixed.
    pub credentials_refused: bool,
}

/// What one tick did.
#[derive(Debug, Clone, Default)]
pub struct TickReport {
    pub window_end: Timestamp,
    /// Batches made this tick (backfilled windows first, then the current one), as spooled.
    pub produced: Vec<Batch>,
    pub backfilled_windows: u64,
    /// The window had been made already (a restart within the same window): nothing read.
    pub already_done: bool,
    /// The source could not be read: no sample was made for this window.
    pub scrape_error: Option<String>,
    /// The spool could not be written.
    pub spool_error: Option<String>,
    /// The spool was full (`--spool-full keep-oldest`): the windows from the first refused on were not spooled
    /// this tick, nor recorded as read (a source with history reads them again once there is room).
    pub spool_full: bool,
    /// vLLM usage events made this tick (spooled, or printed by a dry run).
    pub vllm_events: Vec<UsageEvent>,
    /// vLLM targets that could not be read this tick (their series keep their baseline).
    pub vllm_errors: Vec<String>,
    pub delivered: Delivered,
}

/// Where batches go: the spool and the control plane, or nowhere (`--dry-run`: the caller prints them).
#[derive(Debug)]
pub enum Output {
    Deliver { spool: Spool, sink: SinkBox },
    DryRun,
}

/// A boxed sink (so that `Output` can be `Debug`).
pub struct SinkBox(pub Arc<dyn Sink>);

impl std::fmt::Debug for SinkBox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sink")
    }
}

/// The vLLM side of a sampler: where counters are read, their last readings, and the events made from them that
/// are not in the spool yet (a spool that could not be written: they are appended at the next tick).
struct Vllm {
    reader: VllmReader,
    tracker: Tracker,
    unspooled: Vec<UsageEvent>,
}

/// The sampler of one node (or one Prometheus).
pub struct Sampler {
    source: Box<dyn Source>,
    converter: Converter,
    output: Output,
    opts: SamplerOptions,
    metrics: Arc<Metrics>,
    backoff: Retries,
    last_window_end: Option<Timestamp>,
    vllm: Option<Vllm>,
    /// A delivery still waiting for its answer when its round ended (the link is slow or cut): the loop goes
    /// on reading windows, and the next round takes this answer first.
    in_flight: Option<InFlight>,
    /// Windows refused by a full spool since it last had room (logged once when it fills, once when it has room).
    refused_windows: u64,
}

/// A spooled batch being sent, on a task of its own.
struct InFlight {
    p: crate::spool::Pending,
    answer:
        tokio::task::JoinHandle<std::result::Result<eai_client::Ingested, eai_client::ClientError>>,
}

impl std::fmt::Debug for Sampler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sampler")
            .field("source", &self.source.name())
            .field("output", &self.output)
            .field("opts", &self.opts)
            .field("last_window_end", &self.last_window_end)
            .field("vllm", &self.vllm.as_ref().map(|v| &v.reader))
            .finish()
    }
}

/// The wall clock as a [`Timestamp`].
pub fn wall_clock() -> Timestamp {
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0);
    Timestamp(ms)
}

impl Sampler {
    pub fn new(
        source: Box<dyn Source>,
        converter: Converter,
        output: Output,
        opts: SamplerOptions,
        metrics: Arc<Metrics>,
    ) -> Result<Sampler> {
        if opts.interval_ms < 1000 || opts.interval_ms > 3_600_000 {
            return Err(SamplerError::config(format!(
                "--interval must be between 1s and 1h (got {} ms)",
                opts.interval_ms
            )));
        }
        let last_window_end = match &output {
            Output::Deliver { spool, .. } => spool.last_window_end().map(Timestamp),
            Output::DryRun => None,
        };
        if let Output::Deliver { spool, .. } = &output {
            metrics.set_spool(spool);
        }
        let seed = wall_clock().0 as u64 ^ u64::from(std::process::id()).rotate_left(32);
        Ok(Sampler {
            source,
            converter,
            output,
            backoff: Retries::new(opts.retry_base_ms, opts.retry_max_ms, seed),
            opts,
            metrics,
            last_window_end,
            vllm: None,
            in_flight: None,
            refused_windows: 0,
        })
    }

    /// Also reads vLLM's counters at each tick, from `reader`'s targets. The last readings of an earlier run are
    /// taken from the spool folder, and events it made but could not spool are spooled now.
    pub fn with_vllm(mut self, reader: VllmReader) -> Result<Sampler> {
        let (tracker, unspooled) = match &self.output {
            Output::Deliver { spool, .. } => match spool.vllm_state()? {
                Some(state) => Tracker::from_state(state),
                None => (Tracker::default(), Vec::new()),
            },
            Output::DryRun => (Tracker::default(), Vec::new()),
        };
        if !tracker.is_empty() {
            tracing::info!(
                series = tracker.len(),
                unspooled = unspooled.len(),
                "resuming vLLM's counters from the last run"
            );
        }
        let mut v = Vllm {
            reader,
            tracker,
            unspooled,
        };
        if let Output::Deliver { spool, .. } = &mut self.output {
            if let Err(e) = spool_events(spool, &mut v, &self.metrics, "start") {
                tracing::warn!(error = %e, "cannot spool the vLLM events of the last run yet (retried at each tick)");
            }
        }
        self.vllm = Some(v);
        Ok(self)
    }

    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    pub fn spool(&self) -> Option<&Spool> {
        match &self.output {
            Output::Deliver { spool, .. } => Some(spool),
            Output::DryRun => None,
        }
    }

    /// One tick at `now`: the window that ended at the last interval boundary is read (and, for a source with
    /// history, the windows missed since the last run), converted, spooled, then everything spooled is
    /// delivered as far as the control plane allows.
    #[tracing::instrument(name = "sampler.tick", skip_all, fields(at = %now))]
    pub async fn tick(&mut self, now: Timestamp) -> TickReport {
        self.tick_within(now, false).await
    }

    /// [`Sampler::tick`]; with `bounded`, its delivery round leaves a send still unanswered at the end of its
    /// budget in flight ([`Sampler::deliver_within`]).
    async fn tick_within(&mut self, now: Timestamp, bounded: bool) -> TickReport {
        Metrics::set(&self.metrics.last_tick_ms, now.0.max(0) as u64);
        let i = self.opts.interval_ms;
        let window = Window::ending_at_or_before(now, i);
        let mut report = TickReport {
            window_end: window.end,
            ..TickReport::default()
        };
        if let Some(last) = self.last_window_end.filter(|l| *l >= window.end) {
            report.already_done = true;
            if last > window.end {
                // The wall clock stepped back (or a window was spooled by a run whose clock was ahead): never
                // read a window twice, never send one with an end already sent.
                Metrics::add(&self.metrics.clock_behind_ticks, 1);
                tracing::warn!(window_end = %window.end, last_window_end = %last,
                    "the clock is behind the last window spooled (did it step back?): no window is read until it passes it");
            }
        } else {
            self.backfill(window, &mut report).await;
            match self.scrape(window.end).await {
                Ok(readings) => self.produce(&readings, window, &mut report),
                Err(e) => {
                    tracing::warn!(window_end = %window.end, source = self.source.name(), error = %e,
                        "cannot read the source: no sample for this window (it is never invented)");
                    report.scrape_error = Some(e.to_string());
                }
            }
            self.read_vllm(window.end, &mut report).await;
        }
        report.delivered = self.deliver_within(now, bounded).await;
        report
    }

    async fn scrape(&mut self, at: Timestamp) -> Result<Readings> {
        let attempts = self.opts.scrape_attempts.max(1);
        let mut last = None;
        // The shared schedule without jitter: scrape_retry_ms, doubled per further read, at most 2^8 times it.
        let base = i64::try_from(self.opts.scrape_retry_ms).unwrap_or(i64::MAX >> 8);
        let pause = eai_engine::backoff::Backoff::new(base, base.saturating_mul(1 << 8));
        for attempt in 0..attempts {
            if attempt > 0 {
                tokio::time::sleep(pause.delay_duration(attempt, 0)).await;
            }
            Metrics::add(&self.metrics.scrapes, 1);
            match self.source.scrape(at).await {
                Ok(r) => return Ok(r),
                Err(e) => {
                    Metrics::add(&self.metrics.scrape_errors, 1);
                    last = Some(e);
                }
            }
        }
        Err(last.unwrap_or_else(|| SamplerError::source("sampler", "no attempt made")))
    }

    /// Windows missed since the last run, read back from a source with history, oldest first.
    async fn backfill(&mut self, window: Window, report: &mut TickReport) {
        let Some(last) = self.last_window_end else {
            return;
        };
        if !self.source.can_backfill() {
            return;
        }
        let i = window.ms;
        // The boundaries after the last window spooled, at most `max_backfill` back.
        let oldest = Timestamp(window.end.0 - self.opts.max_backfill_ms).ceil_to(i);
        let mut t = Timestamp(last.0 + 1).ceil_to(i).max(oldest).0;
        let mut ends = Vec::new();
        while t < window.end.0 {
            ends.push(Timestamp(t));
            t += i;
        }
        if ends.is_empty() {
            return;
        }
        Metrics::add(&self.metrics.scrapes, 1);
        match self.source.backfill(&ends, i).await {
            Ok(all) => {
                for r in all {
                    let w = Window { end: r.at, ms: i };
                    report.backfilled_windows += 1;
                    Metrics::add(&self.metrics.backfilled_windows, 1);
                    self.produce(&r, w, report);
                }
                tracing::info!(
                    missed = ends.len(),
                    backfilled = report.backfilled_windows,
                    "backfilled windows missed while the sampler was down"
                );
            }
            Err(e) => {
                Metrics::add(&self.metrics.scrape_errors, 1);
                tracing::warn!(missed = ends.len(), error = %e, "cannot backfill the windows missed while the sampler was down");
            }
        }
    }

    /// Converts one window's readings and spools the batch (fsync'd).
    fn produce(&mut self, readings: &Readings, window: Window, report: &mut TickReport) {
        let m = &self.metrics;
        let st = &readings.stats;
        Metrics::add(&m.malformed_lines, st.malformed + st.unidentified);
        Metrics::add(&m.sentinel_values, st.sentinels);
        Metrics::add(&m.out_of_range_values, st.out_of_range);
        let conv = self.converter.convert(readings, window);
        let c = &conv.counts;
        Metrics::add(&m.unmapped_pod_samples, c.unmapped_pods);
        Metrics::add(&m.incomplete_devices, c.incomplete);
        Metrics::add(&m.missing_memory_samples, c.missing_memory);
        Metrics::add(&m.unknown_mig_profiles, c.unknown_mig_profiles);
        Metrics::add(&m.names_fitted, c.names_fitted);
        Metrics::add(&m.bad_uuids, c.bad_uuids);
        Metrics::add(&m.shared_devices, c.shared_devices);
        Metrics::add(&m.equal_shares, c.equal_shares);
        if st.malformed + st.sentinels + st.out_of_range + st.unidentified + c.incomplete > 0 {
            tracing::debug!(window_end = %window.end, malformed = st.malformed, sentinels = st.sentinels,
                out_of_range = st.out_of_range, unidentified = st.unidentified, incomplete = c.incomplete,
                "skipped unreadable values");
        }
        let batch = Batch::samples(window.end.to_string(), conv.samples);
        if let Output::Deliver { spool, .. } = &mut self.output {
            if report.spool_full {
                // A window after one refused would leave a hole behind the last window recorded as read.
                if !self.source.can_backfill() {
                    Metrics::add(&m.samples_dropped, batch.samples.len() as u64);
                }
                return;
            }
            if !batch.samples.is_empty() {
                match spool.append(&batch) {
                    Ok(a) => {
                        if self.refused_windows > 0 {
                            tracing::info!(refused_windows = self.refused_windows, window_end = %window.end,
                                "the spool has room again");
                            self.refused_windows = 0;
                        }
                        Metrics::add(&m.samples_spooled, batch.samples.len() as u64);
                        Metrics::add(&m.samples_dropped, a.dropped_samples);
                        m.set_spool(spool);
                    }
                    Err(e @ crate::error::SamplerError::SpoolFull { .. }) => {
                        // Not recorded as read: a source with history (Prometheus) reads it again once there is
                        // room, up to --max-backfill back; from any other source the window is lost, and counted.
                        let history = self.source.can_backfill();
                        if !history {
                            Metrics::add(&m.samples_dropped, batch.samples.len() as u64);
                        }
                        if self.refused_windows == 0 {
                            tracing::warn!(window_end = %window.end, error = %e, read_again_later = history,
                                "spool full: keeping the oldest windows, refusing new ones until delivery frees room");
                        } else {
                            tracing::debug!(window_end = %window.end, "spool still full: window refused");
                        }
                        self.refused_windows += 1;
                        report.spool_error = Some(e.to_string());
                        report.spool_full = true;
                        return;
                    }
                    Err(e) => {
                        Metrics::add(&m.spool_write_errors, 1);
                        tracing::error!(window_end = %window.end, error = %e, "cannot spool the window");
                        report.spool_error = Some(e.to_string());
                        return;
                    }
                }
            }
            if let Err(e) = spool.set_last_window_end(window.end.0) {
                tracing::warn!(error = %e, "cannot record the last window spooled");
            }
        }
        self.last_window_end = Some(window.end);
        report.produced.push(batch);
    }

    /// Reads vLLM's counters for the instant `at` (the window end) and turns them into events since the last
    /// read. Durability: the new baselines are saved together with the events they made (one atomic file)
    /// before they replace the old ones; the events are then appended to the spool and dropped from the file. A
    /// crash in between appends them again at the next start, under the same ids (counted once).
    async fn read_vllm(&mut self, at: Timestamp, report: &mut TickReport) {
        let Some(v) = self.vllm.as_mut() else {
            return;
        };
        let m = &self.metrics;
        let read = v.reader.read(at).await;
        Metrics::add(&m.vllm_reads, read.reads);
        Metrics::add(&m.vllm_read_errors, read.errors.len() as u64);
        Metrics::add(&m.malformed_lines, read.skipped);
        for e in &read.errors {
            tracing::warn!(at = %at, error = %e, "cannot read vLLM's counters: the interval is counted at the next read");
        }
        report.vllm_errors = read.errors;
        let mut next = v.tracker.clone();
        let observed = next.observe(at, &read.series);
        let mut pending = v.unspooled.clone();
        pending.extend(observed.events.iter().cloned());
        if let Output::Deliver { spool, .. } = &mut self.output {
            if let Err(e) = spool.set_vllm_state(&next.to_state(&pending)) {
                // The baselines stay where they were: the next read covers this interval too.
                tracing::error!(error = %e, "cannot save vLLM's counters: this read is not counted yet");
                report.spool_error.get_or_insert(e.to_string());
                return;
            }
            v.tracker = next;
            v.unspooled = pending;
            if let Err(e) = spool_events(spool, v, m, &at.to_string()) {
                Metrics::add(&m.spool_write_errors, 1);
                tracing::error!(error = %e, "cannot spool vLLM's events (kept, retried at the next tick)");
                report.spool_error.get_or_insert(e.to_string());
            }
        } else {
            v.tracker = next;
        }
        Metrics::add(&m.vllm_counter_resets, observed.resets);
        report.vllm_events = observed.events;
    }

    /// Sends what the spool holds, oldest first, until it is empty, a failure stops the round, or the round's
    /// time budget is spent.
    pub async fn deliver(&mut self, now: Timestamp) -> Delivered {
        self.deliver_within(now, false).await
    }

    /// A delivery round. With `bounded`, a send still unanswered when the round's budget is spent is not waited
    /// for: it stays in flight on its own task (the request is not cancelled) and the round ends, so that the
    /// next window is read on time even when the link is cut or slow (a request to an unreachable peer waits
    /// for the client's timeout, a minute); the next round takes its answer first. Unbounded, each send is
    /// awaited (a `--once` run, the tests).
    #[tracing::instrument(name = "sampler.deliver", skip_all)]
    pub async fn deliver_within(&mut self, now: Timestamp, bounded: bool) -> Delivered {
        let mut d = Delivered::default();
        let Output::Deliver { spool, sink } = &mut self.output else {
            return d;
        };
        let m = &self.metrics;
        if !self.backoff.ready(now) {
            d.backing_off = true;
            return d;
        }
        let round_end = tokio::time::Instant::now() + self.opts.drain_budget;
        while tokio::time::Instant::now() < round_end {
            // The answer a round before this one left in flight comes first; else the spool's next batch.
            let (p, waiting) = match self.in_flight.take() {
                Some(f) => (f.p, Some(f.answer)),
                None => match spool.peek() {
                    Ok(Some(p)) => (p, None),
                    Ok(None) => break,
                    Err(e) => {
                        tracing::error!(error = %e, "cannot read the spool");
                        d.failure = Some(e.to_string());
                        break;
                    }
                },
            };
            let Some(batch) = &p.batch else {
                tracing::error!(
                    segment = p.pos.seq,
                    offset = p.pos.offset,
                    "a spooled line is not a batch: moved to rejected/"
                );
                if let Err(e) = spool.reject(&p, "not a batch (corrupt spool line)") {
                    d.failure = Some(e.to_string());
                    break;
                }
                d.rejected_batches += 1;
                continue;
            };
            let mut answer = waiting.unwrap_or_else(|| send(sink, batch));
            let n = batch.samples.len() as u64;
            let ne = batch.events.len() as u64;
            let joined = if bounded {
                tokio::select! {
                    a = &mut answer => a,
                    _ = tokio::time::sleep_until(round_end) => {
                        self.in_flight = Some(InFlight { p, answer });
                        break;
                    }
                }
            } else {
                (&mut answer).await
            };
            let sent = joined.unwrap_or_else(|e| {
                Err(eai_client::ClientError::Transport(format!(
                    "the delivery task failed: {e}"
                )))
            });
            match sent {
                Ok(ing) => {
                    if let Err(e) = spool.ack(p.pos) {
                        tracing::error!(error = %e, "cannot advance the spool cursor (the batch will be sent again, harmlessly)");
                        d.failure = Some(e.to_string());
                        break;
                    }
                    self.backoff.succeeded();
                    d.batches += 1;
                    d.samples += n;
                    d.events += ne;
                    d.duplicates += ing.duplicates;
                    Metrics::add(&m.samples_sent, n);
                    Metrics::add(&m.vllm_events_sent, ne);
                    Metrics::add(&m.samples_duplicate, ing.duplicates);
                    Metrics::set(&m.last_success_ms, now.0.max(0) as u64);
                }
                Err(e) => match classify(&e) {
                    Failure::Reject => {
                        tracing::error!(window_end = %batch.window_end, samples = n, events = ne, error = %e,
                            "the control plane refused a batch as invalid (a sampler bug): moved to rejected/, not retried");
                        if let Err(se) = spool.reject(&p, &e.to_string()) {
                            d.failure = Some(se.to_string());
                            break;
                        }
                        d.rejected_batches += 1;
                        d.rejected_samples += n;
                        d.rejected_events += ne;
                        Metrics::add(&m.samples_rejected, n);
                        Metrics::add(&m.vllm_events_rejected, ne);
                    }
                    kind => {
                        Metrics::add(&m.delivery_errors, 1);
                        let wait = self.backoff.failed(now);
                        let failures = self.backoff.failures();
                        if failures.is_power_of_two() {
                            if kind == Failure::Credentials && ne > 0 {
                                tracing::error!(error = %e, failures, retry_in_ms = wait, events = ne,
                                    "the control plane refuses vLLM usage events from the sampler's key (it must accept \
                                     `source: vllm` events from the sampler role): spooling until it does");
                            } else if kind == Failure::Credentials {
                                tracing::error!(error = %e, failures, retry_in_ms = wait,
                                    "the control plane refuses the sampler's key (EAI_API_KEY): spooling until it is fixed");
                            } else {
                                tracing::warn!(error = %e, failures, retry_in_ms = wait,
                                    "cannot deliver to the control plane: spooling, will retry");
                            }
                        }
                        d.credentials_refused = kind == Failure::Credentials;
                        d.failure = Some(e.to_string());
                        break;
                    }
                },
            }
        }
        m.set_spool(spool);
        d
    }

    /// Ticks at every interval boundary until `shutdown` resolves; between ticks, retries a pending delivery when
    /// its backoff ends. The spool is delivered first thing, so a restart resumes it.
    pub async fn run(
        mut self,
        shutdown: impl Future<Output = ()>,
        mut on_tick: impl FnMut(&TickReport),
    ) {
        tokio::pin!(shutdown);
        let i = self.opts.interval_ms;
        let first = self.deliver_within(wall_clock(), true).await;
        if first.batches > 0 {
            tracing::info!(
                batches = first.batches,
                samples = first.samples,
                "delivered what the spool held"
            );
        }
        loop {
            let now = wall_clock();
            let next_tick = Timestamp(now.floor_to(i).0 + i);
            let pending = self.spool().is_some_and(|s| s.bytes() > 0);
            let wake = match self.backoff.next_at() {
                Some(t) if pending && t < next_tick => t,
                _ => next_tick,
            };
            let wait = Duration::from_millis((wake.0 - now.0).max(0) as u64);
            tokio::select! {
                _ = &mut shutdown => break,
                _ = tokio::time::sleep(wait) => {}
            }
            let now = wall_clock();
            if now >= next_tick {
                let r = self.tick_within(now, true).await;
                on_tick(&r);
                let samples: usize = r.produced.iter().map(|b| b.samples.len()).sum();
                tracing::debug!(window_end = %r.window_end, samples, sent = r.delivered.samples,
                    backfilled = r.backfilled_windows, "tick");
            } else {
                self.deliver_within(now, true).await;
            }
        }
        tracing::info!("sampler stopped (the spool keeps what was not delivered)");
    }
}

/// Sends a spooled batch on a task of its own (see [`Sampler::deliver_within`]).
fn send(
    sink: &SinkBox,
    batch: &Batch,
) -> tokio::task::JoinHandle<std::result::Result<eai_client::Ingested, eai_client::ClientError>> {
    use tracing::Instrument as _;
    let sink = sink.0.clone();
    let batch = batch.clone();
    // In the delivery's span, so that the request's traceparent continues the sampler's trace.
    let span = tracing::Span::current();
    tokio::spawn(
        async move {
            if batch.events.is_empty() {
                sink.send(&batch.samples).await
            } else {
                sink.send_events(&batch.events)
                    .await
                    .map(|accepted| eai_client::Ingested {
                        accepted,
                        duplicates: 0,
                    })
            }
        }
        .instrument(span),
    )
}

/// Appends the vLLM events not yet spooled (in batches of [`MAX_EVENTS_PER_BATCH`]), then saves the state without
/// them. Until every batch is appended they stay pending: a batch appended twice holds the same event ids.
fn spool_events(spool: &mut Spool, v: &mut Vllm, m: &Metrics, at: &str) -> Result<()> {
    if v.unspooled.is_empty() {
        return Ok(());
    }
    for chunk in v.unspooled.chunks(MAX_EVENTS_PER_BATCH) {
        let a = spool.append(&Batch {
            window_end: at.to_string(),
            samples: Vec::new(),
            events: chunk.to_vec(),
        })?;
        Metrics::add(&m.vllm_events_spooled, chunk.len() as u64);
        Metrics::add(&m.samples_dropped, a.dropped_samples);
    }
    m.set_spool(spool);
    v.unspooled.clear();
    if let Err(e) = spool.set_vllm_state(&v.tracker.to_state(&[])) {
        // Harmless: the events would be spooled again at the next start, under the same ids.
        tracing::warn!(error = %e, "cannot save vLLM's counters after spooling their events");
    }
    Ok(())
}
