//! The sending side of an import: batches split by GPU between the sender tasks, each request retried while
//! the failure is worth retrying, and the checkpoint moved past a batch once every part of it is acknowledged.

use std::collections::VecDeque;
use std::future::Future;
use std::path::Path;
use std::sync::Arc;

use eai_client::{GpuSample, Ingested};
use eai_engine::Timestamp;
use serde::Serialize;

use super::checkpoint::Checkpoint;
use crate::delivery::{classify, Failure, Sink};
use crate::error::{Result, SamplerError};
use crate::spool::write_durably;
use crate::vllm::UsageEvent;

/// Sends (or prints) batches and moves the checkpoint past each acknowledged one.
///
/// Each batch is split by GPU between `--senders` sender tasks ([`shard_of`]: a GPU always goes to the same
/// one), each sending its parts one request at a time, in order: a GPU's samples arrive in time order, while
/// the control plane has several requests to work on (it parses one while it writes another). A sender holds
/// at most one part waiting besides the one it sends, so at most two batches are in flight while the next is
/// made. A batch is recorded in the checkpoint once every part of it, and of every batch before it, is
/// acknowledged.
pub(super) struct SendState<'a> {
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
    pub(super) fn new(
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
    pub(super) async fn send(
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
    pub(super) async fn settle(&mut self, cp: &mut Checkpoint) -> Result<()> {
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
    // The shared schedule: 250 ms doubling to 30 s, no jitter (one importer).
    let schedule = eai_engine::backoff::Backoff::new(250, 30_000);
    let mut tries = 0;
    loop {
        match send().await {
            Ok(a) => return Ok(a),
            Err(e) => {
                tries += 1;
                match classify(&e) {
                    Failure::Retry if tries < 20 => {
                        tracing::warn!(error = %e, tries, "the control plane did not take {what}; retrying");
                        tokio::time::sleep(schedule.delay_duration(tries, 0)).await;
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
    use std::collections::{BTreeSet, HashMap, HashSet};
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use async_trait::async_trait;
    use eai_client::{ClientError, GpuSample, Ingested};
    use eai_engine::Timestamp;

    use super::{shard_of, SendState};
    use crate::delivery::Sink;
    use crate::import::checkpoint::{Checkpoint, Totals};
    use crate::vllm::UsageEvent;

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
