//! The durable spool: every window's batch is written here, and fsync'd, before it counts as safe; delivery
//! reads it back in order, so an unreachable control plane or a restart never loses a window.
//!
//! On disk, under the spool folder:
//! - `segments/<seq>.jsonl`: append-only segment files, one JSON batch per line: a window's GPU samples
//!   (`{"window_end", "samples"}`) or vLLM usage events (`{"window_end", "samples": [], "events"}`). A
//!   line is written then `fsync`ed (and the folder too when a segment is created) before `append` returns. A
//!   torn last line (a crash mid-write, before the fsync, so never reported safe) is cut off at the next open.
//! - `cursor`: `<seq> <offset>` of the first batch not yet delivered, replaced atomically (write + rename) after
//!   each delivery. It is not fsync'd: after a crash it may point a little back, and the batches after it are
//!   sent again, which is harmless because the control plane counts a `(gpu_uuid, timestamp)` once.
//! - `state`: the end of the last window spooled (for Prometheus backfill and to never read a window twice).
//! - `vllm-state.json`: the last vLLM counters read per series ([`crate::vllm::State`]), replaced atomically
//!   (write, fsync, rename, fsync of the folder) so that a restart neither loses nor counts twice an interval.
//! - `rejected/`: batches the control plane refused as invalid (422), with the reason, for a human to look at.
//!
//! Delivered segments are deleted. The spool is bounded (`--spool-max-bytes`); what gives when it is full is
//! [`WhenFull`] (`--spool-full`):
//! - `keep-oldest` (the default): a window that would take the undelivered bytes past the bound is refused,
//!   and not recorded as read, so the next windows are refused too until delivery frees room. What is spooled
//!   is never deleted undelivered: the backlog stays one unbroken run from the outage's start, and with a
//!   Prometheus source (which keeps history) the refused windows are read again by the backfill once there is
//!   room, up to `--max-backfill` back. From a source without history (DCGM exporter, NVML) a refused window is
//!   lost, and counted. vLLM's events are never dropped: their counters stay in the saved state until they can
//!   be spooled.
//! - `keep-newest`: the oldest segments are deleted and their undelivered samples counted as dropped, so the
//!   spool always holds the present (for a source without history, on a node whose outage outlasts the bound
//!   and whose recent windows matter most).
//!
//! Either way the disk of a GPU node stays bounded and every sample given up is counted
//! (`eai_sampler_samples_dropped_total`), never silent.
//!
//! Here the folder, its small files (cursor, state, vLLM state) and the batch types; the segments themselves
//! (append, the bound, read back, ack, reject) are `segment.rs`'s.

mod segment;

use std::collections::VecDeque;
use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

use eai_client::GpuSample;
use serde::{Deserialize, Serialize};

use crate::error::{Result, SamplerError};
use crate::vllm::{State as VllmState, UsageEvent};
use segment::Segment;

/// The vLLM state's file name in the spool folder.
pub const VLLM_STATE: &str = "vllm-state.json";

/// The default bound: 256 MiB.
pub const DEFAULT_MAX_BYTES: u64 = 256 * 1024 * 1024;

/// One window's samples, or vLLM usage events, as spooled and sent (one request each).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Batch {
    /// RFC 3339 end of the window (of the read, for events).
    pub window_end: String,
    #[serde(default)]
    pub samples: Vec<GpuSample>,
    /// vLLM usage events (`POST /v1/usage/events`); absent from sample batches.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<UsageEvent>,
}

impl Batch {
    /// A window's samples.
    pub fn samples(window_end: String, samples: Vec<GpuSample>) -> Batch {
        Batch {
            window_end,
            samples,
            events: Vec::new(),
        }
    }
}

/// Where a spooled batch is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    pub seq: u64,
    pub offset: u64,
    /// Offset just after the batch's line.
    pub next: u64,
    /// Samples of the batch there (0 for a line that is not a batch).
    pub samples: u64,
}

/// The next batch to deliver.
#[derive(Debug, Clone)]
pub struct Pending {
    pub pos: Position,
    /// `None`: the line is not a batch (a corrupt file): reject it.
    pub batch: Option<Batch>,
    pub raw: String,
}

/// What an append did besides writing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Appended {
    /// Undelivered samples of the oldest segments deleted to stay within the bound.
    pub dropped_samples: u64,
    pub dropped_batches: u64,
}

/// What a full spool gives up (`--spool-full`); see the module's documentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum WhenFull {
    /// Refuse new windows until delivery frees room (Prometheus backfills them later).
    #[default]
    KeepOldest,
    /// Delete the oldest segments.
    KeepNewest,
}

/// A spool folder, opened by one sampler.
#[derive(Debug)]
pub struct Spool {
    dir: PathBuf,
    max_bytes: u64,
    when_full: WhenFull,
    segment_bytes: u64,
    segments: VecDeque<Segment>,
    writer: Option<(u64, File)>,
    cursor: (u64, u64),
    next_seq: u64,
    /// Torn lines cut off at open.
    pub torn_at_open: u64,
    /// Batches and samples not delivered yet, kept as they change (counted from the files once, at open).
    pending: (u64, u64),
}

fn err(path: &Path, e: impl std::fmt::Display) -> SamplerError {
    SamplerError::spool(path, e)
}

/// Writes `bytes` to `path` so that a crash leaves the old file or the new one, whole: a `.tmp` file beside it,
/// synced, renamed over it, and the folder synced.
pub(crate) fn write_durably(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let mut f = File::create(&tmp).map_err(|e| err(&tmp, e))?;
    f.write_all(bytes).map_err(|e| err(&tmp, e))?;
    f.sync_all().map_err(|e| err(&tmp, e))?;
    fs::rename(&tmp, path).map_err(|e| err(path, e))?;
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| err(dir, e))
}

impl Spool {
    /// Opens (creating) a spool folder and resumes where the last run stopped.
    pub fn open(dir: &Path, max_bytes: u64) -> Result<Spool> {
        if max_bytes < 4096 {
            return Err(SamplerError::config(format!(
                "--spool-max-bytes must be at least 4096 (got {max_bytes})"
            )));
        }
        let seg_dir = dir.join("segments");
        for d in [&seg_dir, &dir.join("rejected")] {
            fs::create_dir_all(d).map_err(|e| err(d, format!("cannot create it: {e}")))?;
        }
        let mut seqs: Vec<u64> = fs::read_dir(&seg_dir)
            .map_err(|e| err(&seg_dir, e))?
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                e.file_name()
                    .to_str()?
                    .strip_suffix(".jsonl")?
                    .parse::<u64>()
                    .ok()
            })
            .collect();
        seqs.sort_unstable();
        let mut spool = Spool {
            dir: dir.to_path_buf(),
            max_bytes,
            when_full: WhenFull::default(),
            // Small enough that dropping one loses little, large enough to hold many windows.
            segment_bytes: (max_bytes / 16).clamp(4096, 4 * 1024 * 1024),
            segments: VecDeque::new(),
            writer: None,
            cursor: (0, 0),
            next_seq: 1,
            torn_at_open: 0,
            pending: (0, 0),
        };
        for seq in seqs {
            let path = spool.segment_path(seq);
            let bytes = spool.cut_torn_tail(&path)?;
            spool.segments.push_back(Segment { seq, bytes });
        }
        spool.cursor = spool.read_cursor();
        // New segments come after every segment there and after the cursor's: a spool delivered to the end
        // has no segment left, but its cursor still names the last one, and a new segment of that number
        // would be read from the old offset (its first lines skipped, the next one read from its middle).
        spool.next_seq = spool
            .segments
            .back()
            .map_or(1, |s| s.seq + 1)
            .max(spool.cursor.0 + 1);
        spool.pending = spool.pending_counts();
        Ok(spool)
    }

    fn read_cursor(&self) -> (u64, u64) {
        let text = fs::read_to_string(self.dir.join("cursor")).unwrap_or_default();
        let mut it = text.split_whitespace().map(|x| x.parse::<u64>().ok());
        match (it.next().flatten(), it.next().flatten()) {
            (Some(s), Some(o)) => (s, o),
            _ => (0, 0),
        }
    }

    fn write_small(&self, name: &str, content: &str) -> Result<()> {
        let tmp = self.dir.join(format!("{name}.tmp"));
        let path = self.dir.join(name);
        fs::write(&tmp, content).map_err(|e| err(&tmp, e))?;
        fs::rename(&tmp, &path).map_err(|e| err(&path, e))
    }

    fn save_cursor(&self) -> Result<()> {
        self.write_small("cursor", &format!("{} {}\n", self.cursor.0, self.cursor.1))
    }

    /// The end (ms) of the last window spooled by any run.
    pub fn last_window_end(&self) -> Option<i64> {
        fs::read_to_string(self.dir.join("state"))
            .ok()
            .and_then(|s| s.trim().parse().ok())
    }

    pub fn set_last_window_end(&self, end_ms: i64) -> Result<()> {
        self.write_small("state", &format!("{end_ms}\n"))
    }

    /// The vLLM counters persisted by the last run (`None`: none yet). An unreadable file is an error, never
    /// read as "no baseline": that would count every counter's whole value again.
    pub fn vllm_state(&self) -> Result<Option<VllmState>> {
        let path = self.dir.join(VLLM_STATE);
        match fs::read_to_string(&path) {
            Ok(text) => serde_json::from_str(&text).map(Some).map_err(|e| {
                err(
                    &path,
                    format!("unreadable ({e}); move it aside to start from new baselines"),
                )
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(err(&path, e)),
        }
    }

    /// Replaces the vLLM state durably: when this returns `Ok`, a crash leaves either the old or the new file.
    pub fn set_vllm_state(&self, state: &VllmState) -> Result<()> {
        let path = self.dir.join(VLLM_STATE);
        let text = serde_json::to_string(state).map_err(|e| err(&path, e))?;
        write_durably(&path, text.as_bytes())
    }

    /// Batches and samples not delivered yet (without reading the files: for the metrics of every tick).
    pub fn pending(&self) -> (u64, u64) {
        self.pending
    }

    /// What the spool gives up when full (the default: [`WhenFull::KeepOldest`]).
    pub fn when_full(mut self, w: WhenFull) -> Spool {
        self.when_full = w;
        self
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::fs;
    use std::fs::OpenOptions;
    use std::io::Write;

    use eai_client::GpuSample;

    use super::{Batch, Spool, WhenFull, DEFAULT_MAX_BYTES, VLLM_STATE};
    use crate::error::SamplerError;

    fn sample(i: usize) -> GpuSample {
        GpuSample {
            node: "n".into(),
            gpu_uuid: format!("GPU-{i}"),
            model: "m".into(),
            namespace: "-".into(),
            pod: "-".into(),
            tenant_id: None,
            deployment_id: "idle".into(),
            window_seconds: "15".into(),
            utilization: "0".into(),
            memory_used_gb: "0".into(),
            power_w: "1".into(),
            timestamp: Some(format!("2026-10-01T00:00:{:02}Z", i % 60)),
            storage_gb: None,
            gpu_fraction: None,
            share_method: None,
        }
    }

    fn batch(i: usize, n: usize) -> Batch {
        Batch::samples(
            format!("2026-10-01T00:{:02}:00Z", i % 60),
            (0..n).map(sample).collect(),
        )
    }

    #[test]
    fn resumes_after_a_restart_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Spool::open(dir.path(), DEFAULT_MAX_BYTES).unwrap();
        for i in 0..3 {
            s.append(&batch(i, 2)).unwrap();
        }
        let p = s.peek().unwrap().unwrap();
        assert_eq!(p.batch.as_ref().unwrap().window_end, "2026-10-01T00:00:00Z");
        s.ack(p.pos).unwrap();
        drop(s);
        let mut s = Spool::open(dir.path(), DEFAULT_MAX_BYTES).unwrap();
        assert_eq!(s.pending_counts(), (2, 4));
        assert_eq!(s.pending(), (2, 4), "counted from the files at open");
        let p = s.peek().unwrap().unwrap();
        assert_eq!(p.batch.unwrap().window_end, "2026-10-01T00:01:00Z");
        s.ack(p.pos).unwrap();
        s.append(&batch(3, 1)).unwrap();
        let mut ends = Vec::new();
        while let Some(p) = s.peek().unwrap() {
            ends.push(p.batch.unwrap().window_end);
            s.ack(p.pos).unwrap();
        }
        assert_eq!(ends, vec!["2026-10-01T00:02:00Z", "2026-10-01T00:03:00Z"]);
        assert_eq!(s.pending(), (0, 0));
        assert_eq!(s.bytes(), 0, "delivered segments are deleted");
        assert_eq!(
            fs::read_dir(dir.path().join("segments")).unwrap().count(),
            0
        );
    }

    #[test]
    fn a_torn_last_line_is_cut_at_open() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Spool::open(dir.path(), DEFAULT_MAX_BYTES).unwrap();
        s.append(&batch(0, 1)).unwrap();
        drop(s);
        let seg = fs::read_dir(dir.path().join("segments"))
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        let mut f = OpenOptions::new().append(true).open(&seg).unwrap();
        f.write_all(b"{\"window_end\":\"2026-").unwrap();
        let mut s = Spool::open(dir.path(), DEFAULT_MAX_BYTES).unwrap();
        assert_eq!(s.torn_at_open, 1);
        assert_eq!(s.pending_counts(), (1, 1));
        let p = s.peek().unwrap().unwrap();
        s.ack(p.pos).unwrap();
        assert!(s.peek().unwrap().is_none());
    }

    #[test]
    fn when_full_and_keeping_the_newest_the_oldest_segment_goes_and_its_samples_are_counted() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Spool::open(dir.path(), 8192)
            .unwrap()
            .when_full(WhenFull::KeepNewest);
        let mut dropped = 0;
        for i in 0..40 {
            dropped += s.append(&batch(i, 4)).unwrap().dropped_samples;
        }
        assert!(s.bytes() <= 8192 + 4096, "{}", s.bytes());
        let (batches, samples) = s.pending_counts();
        assert_eq!(
            samples + dropped,
            160,
            "every sample is either kept or counted as dropped"
        );
        assert_eq!(samples, batches * 4);
        assert_eq!(
            s.pending(),
            (batches, samples),
            "kept as segments are dropped"
        );
        // What is left is the newest, in order.
        let mut last = String::new();
        while let Some(p) = s.peek().unwrap() {
            last = p.batch.unwrap().window_end;
            s.ack(p.pos).unwrap();
        }
        assert_eq!(last, "2026-10-01T00:39:00Z");
        assert_eq!(s.pending(), (0, 0));
    }

    /// The default: a full spool refuses the next window and deletes nothing; what it holds is the unbroken run
    /// of the first windows; once delivery frees room it takes windows again; a reopened spool keeps the bound.
    #[test]
    fn when_full_and_keeping_the_oldest_new_windows_are_refused_until_delivery_frees_room() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Spool::open(dir.path(), 8192).unwrap();
        let mut kept = Vec::new();
        let mut refused = Vec::new();
        for i in 0..40 {
            match s.append(&batch(i, 4)) {
                Ok(a) => {
                    assert_eq!(a.dropped_samples, 0, "keeping the oldest deletes nothing");
                    kept.push(i);
                }
                Err(SamplerError::SpoolFull { max_bytes, .. }) => {
                    assert_eq!(max_bytes, 8192);
                    refused.push(i);
                }
                Err(e) => panic!("{e}"),
            }
        }
        assert!(!refused.is_empty(), "8 KiB never filled up");
        assert_eq!(
            kept,
            (0..kept.len()).collect::<Vec<_>>(),
            "the first windows, unbroken"
        );
        assert!(s.bytes() <= 8192, "{}", s.bytes());
        assert_eq!(
            s.pending_counts(),
            (kept.len() as u64, 4 * kept.len() as u64)
        );
        // Reopened (a restart while the control plane is still away): still full.
        drop(s);
        let mut s = Spool::open(dir.path(), 8192).unwrap();
        assert!(matches!(
            s.append(&batch(99, 4)),
            Err(SamplerError::SpoolFull { .. })
        ));
        // Delivering the first few frees room for a window again.
        for _ in 0..3 {
            let p = s.peek().unwrap().unwrap();
            s.ack(p.pos).unwrap();
        }
        s.append(&batch(40, 4)).unwrap();
        let mut ends = Vec::new();
        while let Some(p) = s.peek().unwrap() {
            ends.push(p.batch.unwrap().window_end);
            s.ack(p.pos).unwrap();
        }
        let mut want: Vec<String> = kept[3..].iter().map(|i| batch(*i, 4).window_end).collect();
        want.push(batch(40, 4).window_end);
        assert_eq!(ends, want);
    }

    /// A spool delivered to the end, then reopened (the sampler restarted, or run with --once then as a
    /// service): the next batches are read whole, from their first byte, even when they are shorter than the
    /// last one delivered.
    #[test]
    fn a_spool_delivered_to_the_end_and_reopened_reads_every_new_batch_whole() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Spool::open(dir.path(), DEFAULT_MAX_BYTES).unwrap();
        s.append(&batch(0, 6)).unwrap();
        let p = s.peek().unwrap().unwrap();
        s.ack(p.pos).unwrap();
        assert!(s.peek().unwrap().is_none());
        drop(s);
        let mut s = Spool::open(dir.path(), DEFAULT_MAX_BYTES).unwrap();
        for i in 1..=3 {
            s.append(&batch(i, 2)).unwrap();
        }
        let mut got = Vec::new();
        while let Some(p) = s.peek().unwrap() {
            let b = p
                .batch
                .unwrap_or_else(|| panic!("a batch read from its middle: {:?}", p.raw));
            got.push(b.window_end);
            s.ack(p.pos).unwrap();
        }
        let want: Vec<String> = (1..=3).map(|i| batch(i, 2).window_end).collect();
        assert_eq!(got, want);
    }

    /// The spool's disk fills up (a 64 KiB tmpfs): the append that does not fit fails and leaves no torn line;
    /// once space returns, appends go on, and every batch whose append succeeded is read back whole and in
    /// order, then again after a restart.
    #[test]
    fn a_full_disk_refuses_the_append_and_keeps_every_batch_spooled_before_and_after() {
        let dir = tempfile::tempdir().unwrap();
        let fs = eai_store::testing::Tmpfs::mount(dir.path(), "64k");
        let mut s = Spool::open(dir.path(), DEFAULT_MAX_BYTES).unwrap();
        let mut spooled = Vec::new();
        let mut refused = 0;
        for i in 0..400 {
            match s.append(&batch(i, 6)) {
                Ok(_) => spooled.push(i),
                Err(_) => refused += 1,
            }
            if refused == 3 {
                break;
            }
        }
        assert_eq!(refused, 3, "64 KiB never filled up");
        assert!(spooled.len() > 3, "{spooled:?}");
        fs.resize("4m");
        let more = 400..405;
        for i in more.clone() {
            s.append(&batch(i, 6)).unwrap();
            spooled.push(i);
        }
        let window = |i: usize| batch(i, 6).window_end;
        let read_all = |s: &mut Spool| {
            let mut got = Vec::new();
            while let Some(p) = s.peek().unwrap() {
                let b = p
                    .batch
                    .unwrap_or_else(|| panic!("a torn line in the spool: {:?}", p.raw));
                assert_eq!(b.samples.len(), 6);
                got.push(b.window_end);
                s.ack(p.pos).unwrap();
            }
            got
        };
        let want: Vec<String> = spooled.iter().map(|i| window(*i)).collect();
        // After a restart, nothing acknowledged yet: everything spooled is there, whole, in order.
        drop(s);
        let mut s = Spool::open(dir.path(), DEFAULT_MAX_BYTES).unwrap();
        assert_eq!(s.torn_at_open, 0);
        assert_eq!(read_all(&mut s), want);
        assert_eq!(s.pending(), (0, 0));
        drop(s);
        drop(fs);
    }

    #[test]
    fn the_pending_counts_follow_appends_acks_rejects_and_drops() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Spool::open(dir.path(), 8192)
            .unwrap()
            .when_full(WhenFull::KeepNewest);
        for i in 0..30 {
            s.append(&batch(i, 3)).unwrap();
            assert_eq!(s.pending(), s.pending_counts(), "after append {i}");
            if i % 4 == 1 {
                let p = s.peek().unwrap().unwrap();
                s.ack(p.pos).unwrap();
                s.ack(p.pos).unwrap(); // an ack repeated counts once
                assert_eq!(s.pending(), s.pending_counts(), "after ack {i}");
            }
            if i % 7 == 3 {
                let p = s.peek().unwrap().unwrap();
                s.reject(&p, "422").unwrap();
                assert_eq!(s.pending(), s.pending_counts(), "after reject {i}");
            }
        }
        assert!(s.pending().0 > 0);
    }

    #[test]
    fn rejected_batches_are_kept_aside() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Spool::open(dir.path(), DEFAULT_MAX_BYTES).unwrap();
        s.append(&batch(0, 1)).unwrap();
        s.append(&batch(1, 1)).unwrap();
        let p = s.peek().unwrap().unwrap();
        let path = s.reject(&p, "422 validation_error").unwrap();
        let doc: serde_json::Value =
            serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap();
        assert_eq!(doc["reason"], "422 validation_error");
        assert_eq!(doc["batch"]["window_end"], "2026-10-01T00:00:00Z");
        assert_eq!(
            s.peek().unwrap().unwrap().batch.unwrap().window_end,
            "2026-10-01T00:01:00Z"
        );
    }

    #[test]
    fn event_batches_and_the_vllm_state() {
        use crate::vllm::{event, SeriesKey, Tracker, TOKENS_IN};
        let dir = tempfile::tempdir().unwrap();
        let mut s = Spool::open(dir.path(), DEFAULT_MAX_BYTES).unwrap();
        assert_eq!(s.vllm_state().unwrap(), None);
        let key = SeriesKey {
            deployment_id: "d".into(),
            instance: "i".into(),
            model: "m".into(),
        };
        let units = [(TOKENS_IN, rust_decimal::Decimal::from(5))]
            .into_iter()
            .collect();
        let ev = event(
            &key,
            eai_engine::Timestamp(0),
            eai_engine::Timestamp(15_000),
            &units,
        );
        let b = Batch {
            window_end: ev.occurred_at.clone(),
            samples: Vec::new(),
            events: vec![ev.clone()],
        };
        s.append(&b).unwrap();
        s.append(&batch(1, 2)).unwrap();
        assert_eq!(s.pending_counts(), (2, 2));
        let p = s.peek().unwrap().unwrap();
        assert_eq!(p.batch.unwrap(), b);
        assert!(!p.raw.contains("\"events\":[]"));
        // A sample batch is written as before (no `events`).
        s.ack(p.pos).unwrap();
        let p = s.peek().unwrap().unwrap();
        assert!(!p.raw.contains("events"), "{}", p.raw);
        let mut t = Tracker::default();
        t.observe(eai_engine::Timestamp(15_000), &[(key, units)]);
        let state = t.to_state(&[ev]);
        s.set_vllm_state(&state).unwrap();
        drop(s);
        let s = Spool::open(dir.path(), DEFAULT_MAX_BYTES).unwrap();
        assert_eq!(s.vllm_state().unwrap(), Some(state));
        assert!(!dir.path().join("vllm-state.json.tmp").exists());
        fs::write(dir.path().join(VLLM_STATE), "{").unwrap();
        assert!(s
            .vllm_state()
            .unwrap_err()
            .to_string()
            .contains("vllm-state.json"));
    }

    #[test]
    fn the_last_window_end_survives() {
        let dir = tempfile::tempdir().unwrap();
        let s = Spool::open(dir.path(), DEFAULT_MAX_BYTES).unwrap();
        assert_eq!(s.last_window_end(), None);
        s.set_last_window_end(1_700_000_000_000).unwrap();
        drop(s);
        let s = Spool::open(dir.path(), DEFAULT_MAX_BYTES).unwrap();
        assert_eq!(s.last_window_end(), Some(1_700_000_000_000));
        assert!(Spool::open(dir.path(), 10).is_err());
    }
}
