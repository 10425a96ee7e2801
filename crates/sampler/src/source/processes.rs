//! Per-process GPU use (SPEC §11): what each process did on a GPU over a window, from NVML's per-process
//! answers, mapped to its pod, as [`shares::Measured`] uses that split a shared GPU by measured time. Pure: the
//! FFI lives in `nvml` (cargo feature `nvml`), so this part is tested on any machine with recorded answers.
//!
//! NVML's `nvmlDeviceGetProcessUtilization(device, samples, count, lastSeenTimeStamp)` answers entries
//! `{ pid, timeStamp (CPU µs since the epoch), smUtil, memUtil, encUtil, decUtil }` for the samples taken after
//! `lastSeenTimeStamp`; drivers answer one entry per process, its SM utilization (percent of the time) over
//! the samples since `lastSeenTimeStamp` and stamped with the last of them, or, on some, one entry per
//! sampling period (about 1/6 s). Both read the same here ([`gpu_times`]): an entry stands for the time from
//! the process's previous entry in the same answer (or from `lastSeenTimeStamp`) to its own timestamp, and a
//! window takes the part of each entry's span that falls in it. The answers are asked for often (each second,
//! [`POLL_MS`]), so that a span, and the error made when a process starts or stops within one, stays short.
//!
//! Each answer's PIDs are named when it is taken ([`Poll::owners`]): a process that exits, or whose PID is
//! reused by another, keeps the time it used under its own pod. A process no pod holds is a host workload
//! named after its executable (namespace `host`, [`host_workload`]), as NVML without Kubernetes always did.

use std::collections::BTreeMap;

use async_trait::async_trait;
use eai_engine::Timestamp;
use rust_decimal::Decimal;

use crate::error::Result;
use crate::procmap::{PodMapper, ProcessPlace};
use crate::readings::{Readings, Sharer, Workload};
use crate::shares::{self, Measured};
use crate::source::Source;

/// How often the NVML source asks for process samples between windows (ms).
pub const POLL_MS: u64 = 1_000;

/// The namespace of a process that runs in no pod.
pub const HOST_NAMESPACE: &str = "host";

/// One entry of `nvmlDeviceGetProcessUtilization`'s answer (`nvmlProcessUtilizationSample_t`, less the
/// encoder, decoder and memory-controller figures, which do not count as GPU time).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessSample {
    pub pid: u32,
    /// CPU timestamp, µs since the epoch.
    pub timestamp_us: u64,
    /// SM (3D/compute) utilization, percent of the sampled time.
    pub sm_util: u32,
}

/// One answer of `nvmlDeviceGetProcessUtilization` for one device, with who each PID was when it was taken.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Poll {
    /// The `lastSeenTimeStamp` asked with (µs): the answer covers the time after it.
    pub since_us: u64,
    pub samples: Vec<ProcessSample>,
    /// The pod (or host workload) of each PID of `samples`, named when the answer was taken. A PID missing
    /// here is named at the end of the window.
    pub owners: Vec<(u32, Workload)>,
}

impl Poll {
    /// The latest time the answer covers (µs): its last sample, or `since_us` when it has none.
    pub fn until_us(&self) -> u64 {
        self.samples
            .iter()
            .map(|s| s.timestamp_us)
            .max()
            .unwrap_or(self.since_us)
            .max(self.since_us)
    }

    fn owner(&self, pid: u32) -> Option<&Workload> {
        self.owners.iter().find(|(p, _)| *p == pid).map(|(_, w)| w)
    }
}

/// A process running on a device when the window is read (`nvmlDeviceGetComputeRunningProcesses_v3` and
/// `nvmlDeviceGetMPSComputeRunningProcesses_v3`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunningProcess {
    pub pid: u32,
    /// Device memory used, bytes; `None` where NVML does not know (`NVML_VALUE_NOT_AVAILABLE`).
    pub used_memory_bytes: Option<u64>,
}

/// A process's GPU time over a window.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcessTime {
    pub pid: u32,
    /// Who the PID was when its samples were taken (`None`: not named then).
    pub owner: Option<Workload>,
    /// 0..=1 of the window, in millionths.
    pub gpu_time: Decimal,
}

/// What an answer said that does not count: entries with PID 0 or an SM utilization over 100 % (drivers
/// answer such entries now and then, e.g. for processes that have just exited).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Skipped {
    pub entries: u64,
}

/// Each process's GPU time over the window `[start_us, end_us)`: the sum over its entries of `smUtil / 100`
/// times the part of the entry's span (from the process's previous entry in the same answer, or from the
/// answer's `since_us`, to its timestamp) within the window, over the window's length. A process without
/// entries in the window used none (it is not listed). One process's time is at most the window.
///
/// Keyed by PID and the owner named in each answer: a PID reused by another pod within the window counts
/// apart. Sorted by PID, then owner.
pub fn gpu_times(polls: &[Poll], start_us: u64, end_us: u64) -> (Vec<ProcessTime>, Skipped) {
    let mut skipped = Skipped::default();
    if end_us <= start_us {
        return (Vec::new(), skipped);
    }
    // (pid, owner key) -> (owner, Σ util% × µs)
    let mut acc: BTreeMap<(u32, OwnerKey), (Option<Workload>, u128)> = BTreeMap::new();
    for poll in polls {
        let mut entries: Vec<ProcessSample> = poll
            .samples
            .iter()
            .copied()
            .filter(|s| {
                let bad = s.pid == 0 || s.sm_util > 100;
                skipped.entries += u64::from(bad);
                !bad && s.timestamp_us > poll.since_us
            })
            .collect();
        entries.sort_by_key(|s| (s.pid, s.timestamp_us));
        entries.dedup_by_key(|s| (s.pid, s.timestamp_us));
        let mut prev: Option<(u32, u64)> = None;
        for s in entries {
            let from = match prev {
                Some((pid, ts)) if pid == s.pid => ts,
                _ => poll.since_us,
            };
            prev = Some((s.pid, s.timestamp_us));
            let overlap = s
                .timestamp_us
                .min(end_us)
                .saturating_sub(from.max(start_us));
            let owner = poll.owner(s.pid).cloned();
            let e = acc
                .entry((s.pid, owner_key(owner.as_ref())))
                .or_insert((owner, 0));
            e.1 += u128::from(s.sm_util) * u128::from(overlap);
        }
    }
    let window = Decimal::from(100u128 * u128::from(end_us - start_us));
    let times = acc
        .into_iter()
        .map(|((pid, _), (owner, used))| ProcessTime {
            pid,
            owner,
            gpu_time: round6((Decimal::from(used) / window).min(Decimal::ONE)),
        })
        .collect();
    (times, skipped)
}

/// The pods' measured uses of device `uuid`: the processes' GPU times and the running processes' memory,
/// summed per pod. A process's GPU time goes to the owner named with its samples, else to `resolve(pid)` (the
/// pod it runs in now, or its host workload); its memory (read now) to `resolve(pid)`. A running process without samples used no GPU time (0) but counts with its
/// memory. Sorted by GPU time, then memory, most first (the first one places the device when it has only
/// one), then by namespace and pod.
pub fn measured(
    uuid: &str,
    times: &[ProcessTime],
    running: &[RunningProcess],
    resolve: &mut dyn FnMut(u32) -> Workload,
) -> Vec<Measured> {
    let mut pods: Vec<Measured> = Vec::new();
    let mut add = |w: Workload, gpu_time: Decimal, memory_mib: Option<Decimal>| {
        if let Some(m) = pods.iter_mut().find(|m| m.workload == w) {
            m.gpu_time += gpu_time;
            m.memory_mib = match (m.memory_mib, memory_mib) {
                (Some(a), Some(b)) => Some(a + b),
                (a, b) => a.or(b),
            };
        } else {
            pods.push(Measured {
                uuid: uuid.to_string(),
                workload: w,
                gpu_time,
                memory_mib,
            });
        }
    };
    for t in times {
        let w = t.owner.clone().unwrap_or_else(|| resolve(t.pid));
        add(w, t.gpu_time, None);
    }
    let mut seen: Vec<u32> = Vec::new();
    for p in running {
        if seen.contains(&p.pid) {
            continue;
        }
        seen.push(p.pid);
        // The same PID in both lists (compute and MPS): its largest figure, once.
        let bytes = running
            .iter()
            .filter(|q| q.pid == p.pid)
            .filter_map(|q| q.used_memory_bytes)
            .max();
        let mib = bytes.map(|b| round6(Decimal::from(b) / Decimal::from(1u64 << 20)));
        // The list is read now: the memory is the pod's the PID runs in now.
        add(resolve(p.pid), Decimal::ZERO, mib);
    }
    for m in &mut pods {
        m.gpu_time = m.gpu_time.min(Decimal::ONE);
    }
    pods.sort_by(|a, b| {
        b.gpu_time
            .cmp(&a.gpu_time)
            .then(
                b.memory_mib
                    .unwrap_or_default()
                    .cmp(&a.memory_mib.unwrap_or_default()),
            )
            .then_with(|| owner_key(Some(&a.workload)).cmp(&owner_key(Some(&b.workload))))
    });
    pods
}

/// A host process's workload: its executable's file name (NVML's process name is its path or command), or
/// `pid-<pid>` when it has none, in namespace `host`.
pub fn host_workload(pid: u32, process_name: Option<&str>) -> Workload {
    let name = process_name
        .map(|p| p.trim().rsplit('/').next().unwrap_or(p).to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| format!("pid-{pid}"));
    Workload {
        pod: name,
        namespace: Some(HOST_NAMESPACE.to_string()),
        container: None,
    }
}

/// A process's pod, as [`crate::procmap`] found it: its name (its UID while the node's folders do not name
/// it), namespace and container. `None`: it runs in no pod.
pub fn pod_workload(place: &ProcessPlace) -> Option<Workload> {
    let pod = place.pod.as_ref()?;
    Some(Workload {
        pod: pod.name.clone().unwrap_or_else(|| pod.uid.clone()),
        namespace: pod.namespace.clone(),
        container: pod.container.clone(),
    })
}

/// PID -> pod, for the process readers: [`PodMapper`] on a node (through a host root), a closure in tests, or
/// [`NoPods`] where there is no Kubernetes.
pub trait PidResolver: Send {
    /// The pod process `pid` runs in; `None`: a host process, or one that is gone.
    fn workload(&mut self, pid: u32) -> Option<Workload>;
    /// Forgets the PIDs not in `live` (the processes seen this window).
    fn retain(&mut self, _live: &[u32]) {}
}

impl<F: FnMut(u32) -> Option<Workload> + Send> PidResolver for F {
    fn workload(&mut self, pid: u32) -> Option<Workload> {
        self(pid)
    }
}

/// No pods: every process is a host workload.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoPods;

impl PidResolver for NoPods {
    fn workload(&mut self, _pid: u32) -> Option<Workload> {
        None
    }
}

impl PidResolver for PodMapper {
    fn workload(&mut self, pid: u32) -> Option<Workload> {
        match self.place(pid) {
            Ok(place) => place.as_ref().and_then(pod_workload),
            Err(e) => {
                tracing::debug!(pid, error = %e, "cannot map the process to a pod: a host process");
                None
            }
        }
    }

    fn retain(&mut self, live: &[u32]) {
        PodMapper::retain(self, live);
    }
}

/// A device's processes when its per-process utilization cannot be read (NVML answers `NOT_SUPPORTED`): who
/// runs on it, without GPU time. Such a device is split equally when several pods run on it.
#[derive(Debug, Clone, PartialEq)]
pub struct Unmeasured {
    pub uuid: String,
    pub workload: Workload,
    pub memory_mib: Option<Decimal>,
}

/// What a process reader read for one window.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Uses {
    /// The pods' measured uses of the devices that report per-process utilization.
    pub measured: Vec<Measured>,
    /// The pods on devices that do not.
    pub unmeasured: Vec<Unmeasured>,
    /// Entries of NVML's answers that did not count ([`Skipped`]).
    pub skipped: u64,
}

impl Uses {
    /// Puts these uses into the readings of the same window: measured ones with [`shares::merge`]; the pods of
    /// an unmeasured device become its sharers without GPU time (so it is split equally, and a device with
    /// one process is placed by it), unless the device source named its pods already.
    pub fn apply(&self, readings: &mut Readings) {
        shares::merge(readings, &self.measured);
        for u in &self.unmeasured {
            let Some(d) = readings
                .devices
                .iter_mut()
                .find(|d| d.mig.is_none() && d.uuid == u.uuid)
            else {
                continue;
            };
            if d.sharers.iter().any(|s| s.workload == u.workload) {
                continue;
            }
            if d.workload.is_some() && d.sharers.is_empty() {
                // Placed by the device source (a pod label without sharers): left as read.
                continue;
            }
            if d.workload.is_none() {
                d.workload = Some(u.workload.clone());
            }
            d.sharers.push(Sharer {
                workload: u.workload.clone(),
                labels: d.labels.clone(),
                gpu_time: None,
                memory_mib: u.memory_mib,
            });
        }
    }
}

/// Reads per-process uses of the node's GPUs (NVML's), for a window.
pub trait ProcessReader: Send {
    /// The uses over the window of `window_ms` that ends at `at`.
    fn read(&mut self, at: Timestamp, window_ms: i64) -> Result<Uses>;
}

/// A device source with a process reader beside it (`--nvml-processes`): each window's readings get the
/// measured uses of the same window, so shared GPUs are split by what each pod used. A window the reader
/// cannot read keeps the source's readings (split equally where shared). Backfilled windows have no
/// per-process data: NVML keeps no history to read them from.
pub struct WithProcesses {
    inner: Box<dyn Source>,
    reader: Box<dyn ProcessReader>,
    window_ms: i64,
}

impl WithProcesses {
    pub fn new(inner: Box<dyn Source>, reader: Box<dyn ProcessReader>, window_ms: i64) -> Self {
        WithProcesses {
            inner,
            reader,
            window_ms,
        }
    }
}

impl std::fmt::Debug for WithProcesses {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WithProcesses")
            .field("inner", &self.inner.name())
            .field("window_ms", &self.window_ms)
            .finish()
    }
}

#[async_trait]
impl Source for WithProcesses {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    async fn scrape(&mut self, at: Timestamp) -> Result<Readings> {
        let mut readings = self.inner.scrape(at).await?;
        match self.reader.read(at, self.window_ms) {
            Ok(uses) => uses.apply(&mut readings),
            Err(e) => tracing::warn!(window_end = %at, error = %e,
                "cannot read the processes' GPU use: shared GPUs of this window are split equally"),
        }
        Ok(readings)
    }

    fn can_backfill(&self) -> bool {
        self.inner.can_backfill()
    }

    async fn backfill(&mut self, ends: &[Timestamp], window_ms: i64) -> Result<Vec<Readings>> {
        self.inner.backfill(ends, window_ms).await
    }
}

type OwnerKey = (String, String, String);

fn owner_key(w: Option<&Workload>) -> OwnerKey {
    match w {
        None => Default::default(),
        Some(w) => (
            w.namespace.clone().unwrap_or_default(),
            w.pod.clone(),
            w.container.clone().unwrap_or_default(),
        ),
    }
}

fn round6(d: Decimal) -> Decimal {
    d.round_dp_with_strategy(6, rust_decimal::RoundingStrategy::MidpointAwayFromZero)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::sync::Arc;

    use async_trait::async_trait;
    use eai_engine::Timestamp;
    use rust_decimal::Decimal;

    use super::{
        gpu_times, host_workload, measured, pod_workload, NoPods, PidResolver, Poll, ProcessReader,
        ProcessSample, RunningProcess, Skipped, Unmeasured, Uses, WithProcesses,
    };
    use crate::error::Result;
    use crate::procmap::{PodMapper, ProcessPlace};
    use crate::readings::{DeviceReading, Readings, Sharer, Workload};
    use crate::shares::Measured;
    use crate::source::Source;

    const FIXTURE: &str = include_str!("../../tests/fixtures/nvml/process_utilization.txt");
    /// The fixture's timestamps are seconds after this (µs).
    const BASE_US: u64 = 1_700_000_000_000_000;

    fn d(s: &str) -> Decimal {
        s.parse().unwrap()
    }

    fn us(secs: &str) -> u64 {
        let v = d(secs) * Decimal::from(1_000_000u64);
        BASE_US + u64::try_from(v.round()).unwrap()
    }

    fn workload(spec: &str) -> Workload {
        let mut parts = spec.split('/');
        let ns = parts.next().unwrap().to_string();
        let pod = parts.next().unwrap().to_string();
        Workload {
            pod,
            namespace: Some(ns),
            container: parts.next().map(str::to_string),
        }
    }

    #[derive(Debug, Default)]
    struct Scenario {
        name: String,
        window: (u64, u64),
        polls: Vec<Poll>,
        defaults: Vec<(u32, Workload)>,
        now: Vec<(u32, Workload)>,
        running: Vec<RunningProcess>,
        expect: Vec<(Workload, Decimal, Option<Decimal>)>,
        skipped: Option<u64>,
    }

    fn scenarios() -> Vec<Scenario> {
        let mut out: Vec<Scenario> = Vec::new();
        for line in FIXTURE.lines() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            if let Some(name) = line.strip_prefix('[') {
                out.push(Scenario {
                    name: name.trim_end_matches(']').to_string(),
                    ..Scenario::default()
                });
                continue;
            }
            let s = out.last_mut().unwrap();
            let f: Vec<&str> = line.split_whitespace().collect();
            match f[0] {
                "window" => s.window = (us(f[1]), us(f[2])),
                "poll" => s.polls.push(Poll {
                    since_us: us(f[1]),
                    ..Poll::default()
                }),
                "owner" if s.polls.is_empty() => {
                    s.defaults.push((f[1].parse().unwrap(), workload(f[2])))
                }
                "owner" => {
                    let p = s.polls.last_mut().unwrap();
                    p.owners.push((f[1].parse().unwrap(), workload(f[2])));
                }
                "now" => s.now.push((f[1].parse().unwrap(), workload(f[2]))),
                "running" => s.running.push(RunningProcess {
                    pid: f[1].parse().unwrap(),
                    used_memory_bytes: f[2].parse().ok(),
                }),
                "expect" if f[1] == "skipped" => s.skipped = Some(f[2].parse().unwrap()),
                "expect" => s.expect.push((workload(f[1]), d(f[2]), f[3].parse().ok())),
                _ => {
                    let p = s.polls.last_mut().unwrap();
                    p.samples.push(ProcessSample {
                        pid: f[0].parse().unwrap(),
                        timestamp_us: us(f[1]),
                        sm_util: f[2].parse().unwrap(),
                    });
                }
            }
        }
        for s in &mut out {
            for p in &mut s.polls {
                for (pid, w) in &s.defaults {
                    if !p.owners.iter().any(|(q, _)| q == pid) {
                        p.owners.push((*pid, w.clone()));
                    }
                }
            }
        }
        out
    }

    fn run(s: &Scenario) -> (Vec<Measured>, Skipped) {
        let (times, skipped) = gpu_times(&s.polls, s.window.0, s.window.1);
        let now = s.now.clone();
        let mut resolve = move |pid: u32| {
            now.iter()
                .find(|(p, _)| *p == pid)
                .map(|(_, w)| w.clone())
                .unwrap_or_else(|| host_workload(pid, None))
        };
        (
            measured("GPU-0b5c", &times, &s.running, &mut resolve),
            skipped,
        )
    }

    /// Every recorded scenario: each pod's GPU time follows what its processes did (within 0.002 of the
    /// window), its memory is its processes' memory, and nothing else is measured.
    #[test]
    fn recorded_answers_give_each_pod_its_measured_time_and_memory() {
        let all = scenarios();
        assert_eq!(all.len(), 7, "scenarios in the fixture");
        for s in &all {
            let (got, skipped) = run(s);
            assert_eq!(
                got.len(),
                s.expect.len(),
                "[{}] pods measured: {got:#?}",
                s.name
            );
            for (w, time, memory) in &s.expect {
                let m = got
                    .iter()
                    .find(|m| &m.workload == w)
                    .unwrap_or_else(|| panic!("[{}] {w:?} not measured: {got:#?}", s.name));
                assert!(
                    (m.gpu_time - time).abs() <= d("0.002"),
                    "[{}] {}: {} measured, {time} expected",
                    s.name,
                    w.pod,
                    m.gpu_time
                );
                assert_eq!(m.memory_mib, *memory, "[{}] {} memory", s.name, w.pod);
                assert_eq!(m.uuid, "GPU-0b5c");
                assert!(m.gpu_time >= Decimal::ZERO && m.gpu_time <= Decimal::ONE);
            }
            if let Some(n) = s.skipped {
                assert_eq!(skipped.entries, n, "[{}] skipped entries", s.name);
            }
        }
    }

    #[test]
    fn the_busiest_pod_comes_first_and_a_pid_reused_counts_for_each_pod() {
        let all = scenarios();
        let two = all
            .iter()
            .find(|s| s.name == "two_pods_time_slicing")
            .unwrap();
        let (got, _) = run(two);
        assert_eq!(got[0].workload.pod, "llama-0");
        let reuse = all.iter().find(|s| s.name == "pid_reuse").unwrap();
        let (times, _) = gpu_times(&reuse.polls, reuse.window.0, reuse.window.1);
        assert_eq!(times.len(), 2, "{times:#?}");
        assert!(times.iter().all(|t| t.pid == 4242));
    }

    #[test]
    fn a_window_takes_only_its_part_of_an_entry_and_the_next_window_the_rest() {
        // One entry over (10 s, 12 s] at 50 %: half in each of two 1 s windows... and none in the window before.
        let polls = [Poll {
            since_us: 10_000_000,
            samples: vec![ProcessSample {
                pid: 7,
                timestamp_us: 12_000_000,
                sm_util: 50,
            }],
            owners: Vec::new(),
        }];
        let t = |s, e| {
            gpu_times(&polls, s, e)
                .0
                .first()
                .map(|t| t.gpu_time)
                .unwrap_or_default()
        };
        assert_eq!(t(10_000_000, 11_000_000), d("0.5"));
        assert_eq!(t(11_000_000, 12_000_000), d("0.5"));
        assert_eq!(t(9_000_000, 10_000_000), Decimal::ZERO);
        assert_eq!(t(10_000_000, 14_000_000), d("0.25"));
        assert!(gpu_times(&polls, 5, 5).0.is_empty(), "an empty window");
        assert_eq!(polls[0].until_us(), 12_000_000);
    }

    #[test]
    fn a_process_never_uses_more_than_the_window() {
        // Overlapping answers (asked with an older lastSeenTimeStamp twice) count the same time twice: capped.
        let p = Poll {
            since_us: 0,
            samples: vec![ProcessSample {
                pid: 9,
                timestamp_us: 1_000_000,
                sm_util: 100,
            }],
            owners: Vec::new(),
        };
        let (times, _) = gpu_times(&[p.clone(), p], 0, 1_000_000);
        assert_eq!(times[0].gpu_time, Decimal::ONE);
    }

    #[test]
    fn host_processes_are_named_after_their_executable() {
        let w = host_workload(12, Some("/usr/bin/python3.11"));
        assert_eq!(w.pod, "python3.11");
        assert_eq!(w.namespace.as_deref(), Some("host"));
        assert_eq!(w.container, None);
        assert_eq!(host_workload(12, Some("vllm")).pod, "vllm");
        assert_eq!(host_workload(12, Some("")).pod, "pid-12");
        assert_eq!(host_workload(12, None).pod, "pid-12");
    }

    #[test]
    fn a_pod_is_named_by_procmap_or_by_its_uid() {
        use crate::procmap::PodRef;
        let mut place = ProcessPlace::default();
        assert_eq!(pod_workload(&place), None, "a host process");
        place.pod = Some(PodRef {
            uid: "5f3c-uid".into(),
            namespace: Some("team-a".into()),
            name: Some("llama-0".into()),
            container: Some("server".into()),
            names_from: None,
        });
        assert_eq!(
            pod_workload(&place),
            Some(workload("team-a/llama-0/server"))
        );
        let pod = place.pod.as_mut().unwrap();
        pod.name = None;
        pod.namespace = None;
        assert_eq!(pod_workload(&place).unwrap().pod, "5f3c-uid");
    }

    #[test]
    fn the_pod_mapper_resolves_through_a_host_root() {
        let dir = tempfile::tempdir().unwrap();
        let proc = dir.path().join("proc");
        std::fs::create_dir_all(proc.join("77")).unwrap();
        std::fs::write(
            proc.join("77").join("cgroup"),
            "0::/user.slice/user-1000.slice\n",
        )
        .unwrap();
        let mut m = PodMapper::new(crate::procmap::HostRoot::new(dir.path()));
        assert_eq!(PidResolver::workload(&mut m, 77), None, "a host process");
        assert_eq!(
            PidResolver::workload(&mut m, 78),
            None,
            "a process that is gone"
        );
        let mut none = NoPods;
        assert_eq!(none.workload(77), None);
        let mut f = |pid: u32| (pid == 1).then(|| workload("a/b"));
        assert_eq!(PidResolver::workload(&mut f, 1), Some(workload("a/b")));
    }

    fn gpu(uuid: &str) -> DeviceReading {
        DeviceReading {
            uuid: uuid.into(),
            labels: Arc::from(Vec::new()),
            ..DeviceReading::default()
        }
    }

    #[test]
    fn uses_become_sharers_measured_or_not() {
        let mut r = Readings {
            devices: vec![gpu("GPU-a"), gpu("GPU-b"), gpu("GPU-c")],
            ..Readings::default()
        };
        let uses = Uses {
            measured: vec![
                Measured {
                    uuid: "GPU-a".into(),
                    workload: workload("team-a/llama-0"),
                    gpu_time: d("0.7"),
                    memory_mib: Some(d("20480")),
                },
                Measured {
                    uuid: "GPU-a".into(),
                    workload: workload("team-b/embed-0"),
                    gpu_time: d("0.3"),
                    memory_mib: None,
                },
            ],
            unmeasured: vec![
                Unmeasured {
                    uuid: "GPU-b".into(),
                    workload: host_workload(1, Some("python3")),
                    memory_mib: None,
                },
                Unmeasured {
                    uuid: "GPU-b".into(),
                    workload: host_workload(2, Some("vllm")),
                    memory_mib: Some(d("1024")),
                },
                Unmeasured {
                    uuid: "GPU-x".into(),
                    workload: host_workload(3, Some("gone")),
                    memory_mib: None,
                },
            ],
            skipped: 0,
        };
        uses.apply(&mut r);
        let a = &r.devices[0];
        assert_eq!(a.workload, Some(workload("team-a/llama-0")));
        let times: Vec<_> = a.sharers.iter().map(|s| s.gpu_time).collect();
        assert_eq!(times, vec![Some(d("0.7")), Some(d("0.3"))]);
        let b = &r.devices[1];
        assert_eq!(b.workload.as_ref().unwrap().pod, "python3");
        assert_eq!(b.sharers.len(), 2);
        assert!(
            b.sharers.iter().all(|s| s.gpu_time.is_none()),
            "split equally"
        );
        assert!(r.devices[2].sharers.is_empty() && r.devices[2].workload.is_none());
    }

    struct Fixed(Readings);

    #[async_trait]
    impl Source for Fixed {
        fn name(&self) -> &'static str {
            "dcgm"
        }
        async fn scrape(&mut self, at: Timestamp) -> Result<Readings> {
            let mut r = self.0.clone();
            r.at = at;
            Ok(r)
        }
    }

    struct Reader(Option<Uses>, Vec<(Timestamp, i64)>);

    impl ProcessReader for Reader {
        fn read(&mut self, at: Timestamp, window_ms: i64) -> Result<Uses> {
            self.1.push((at, window_ms));
            self.0
                .clone()
                .ok_or_else(|| crate::error::SamplerError::source("nvml", "gone"))
        }
    }

    #[tokio::test]
    async fn beside_a_dcgm_source_the_pods_it_saw_get_their_measured_time() {
        // DCGM exporter with time-slicing: the device's series repeated per pod, no time per pod.
        let mut d0 = gpu("GPU-a");
        for w in ["team-a/llama-0", "team-b/embed-0"] {
            d0.sharers.push(Sharer {
                workload: workload(w),
                labels: d0.labels.clone(),
                gpu_time: None,
                memory_mib: None,
            });
        }
        d0.workload = Some(workload("team-a/llama-0"));
        let readings = Readings {
            devices: vec![d0],
            ..Readings::default()
        };
        let uses = Uses {
            measured: vec![Measured {
                uuid: "GPU-a".into(),
                workload: workload("team-b/embed-0"),
                gpu_time: d("0.25"),
                memory_mib: Some(d("512")),
            }],
            ..Uses::default()
        };
        let mut s = WithProcesses::new(
            Box::new(Fixed(readings.clone())),
            Box::new(Reader(Some(uses), Vec::new())),
            15_000,
        );
        assert_eq!(s.name(), "dcgm");
        assert!(!s.can_backfill());
        let r = s.scrape(Timestamp(30_000)).await.unwrap();
        let times: Vec<_> = r.devices[0].sharers.iter().map(|s| s.gpu_time).collect();
        assert_eq!(times, vec![Some(Decimal::ZERO), Some(d("0.25"))]);
        // A reader that fails leaves the source's readings as they were.
        let mut s = WithProcesses::new(
            Box::new(Fixed(readings.clone())),
            Box::new(Reader(None, Vec::new())),
            15_000,
        );
        let r = s.scrape(Timestamp(30_000)).await.unwrap();
        assert_eq!(r.devices, readings.devices);
    }
}
