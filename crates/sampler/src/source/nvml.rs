//! The NVML source (cargo feature `nvml`): the NVIDIA driver's `libnvidia-ml.so.1` through the `nvml-wrapper`
//! crate, which loads it at run time (`libloading`), so the binary builds and starts on machines without a
//! driver, and `--nvml` fails at start with a clear error where the library is missing.
//!
//! Per GPU (NVML's documented C API, as nvml-wrapper calls it): `nvmlDeviceGetUUID`, `nvmlDeviceGetName`,
//! `nvmlDeviceGetUtilizationRates` (percent), `nvmlDeviceGetMemoryInfo_v2` (bytes: allocated plus reserved, what
//! `nvmlDeviceGetMemoryInfo` calls used, which drivers without `_v2` answer), `nvmlDeviceGetPowerUsage` (mW),
//! `nvmlDeviceGetTotalEnergyConsumption` (mJ since the driver loaded), the compute processes running on it
//! (`nvmlDeviceGetComputeRunningProcesses_v3`, `_v2` where the driver has no `_v3`; names from
//! `nvmlSystemGetProcessName`) and, when MIG is enabled, its MIG devices (`nvmlDeviceGetMigDeviceHandleByIndex`,
//! instance id, slice count and memory). NVML does not report the utilization of MIG instances: they are
//! counted as incomplete and skipped (never zero); read MIG GPUs through DCGM (`DCGM_FI_PROF_GR_ENGINE_ACTIVE`).
//!
//! Per process ([`ProcessMeter`], also beside a DCGM source: [`NvmlProcesses`], `--nvml-processes`): every
//! second ([`processes::POLL_MS`]), on a thread of its own, `nvmlDeviceGetProcessUtilization` asked with the
//! last timestamp it answered (kept per GPU), each answer's PIDs named then (their pod through a
//! [`PidResolver`], else their executable in namespace `host`); at each window's end, the running processes'
//! memory (`nvmlDeviceGetComputeRunningProcesses_v3`, and `nvmlDeviceGetMPSComputeRunningProcesses_v3` where
//! the driver has it) and the answers of the window become each pod's measured GPU time and memory
//! ([`processes::gpu_times`], [`processes::measured`]), merged into the readings: a GPU several pods share is
//! split by measured use (`share_method: "measured"`), a GPU with one process is placed by it, as before. A
//! GPU whose driver answers `NOT_SUPPORTED` gets its processes as sharers without time (split equally). MIG
//! GPUs keep the first process of each instance.
//!
//! Two calls nvml-wrapper does not wrap go through its raw bindings, the module's only `unsafe`:
//! `nvmlDeviceGetGpuInstanceId` (a MIG device's instance id) and `nvmlDeviceGetMemoryInfo` (drivers older than
//! `_v2`).

use std::collections::{HashMap, VecDeque};
use std::ffi::OsStr;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use eai_engine::Timestamp;
use nvml_wrapper::enums::device::UsedGpuMemory;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::struct_wrappers::device::ProcessInfo;
use nvml_wrapper::{Device, Nvml};
use nvml_wrapper_sys::bindings::{nvmlMemory_t, nvmlReturn_enum_NVML_SUCCESS as NVML_SUCCESS};
use rust_decimal::Decimal;

use crate::error::{Result, SamplerError};
use crate::readings::{DeviceReading, MigInstance, ReadStats, Readings, Workload};
use crate::source::processes::{
    self, host_workload, PidResolver, Poll, ProcessReader, ProcessSample, RunningProcess,
    Unmeasured, Uses,
};
use crate::source::Source;

/// The library loaded without `--nvml-library`: the driver's own name for it (nvml-wrapper's default,
/// `libnvidia-ml.so`, comes only with the development package).
const DEFAULT_LIBRARY: &str = "libnvidia-ml.so.1";
/// `NVML_DEVICE_MIG_ENABLE`.
const MIG_ENABLED: u32 = 1;
/// The buffer `nvmlSystemGetProcessName` writes a process's name into.
const PROCESS_NAME_BUFFER: usize = 1024;
/// Tries at `nvmlDeviceGetProcessUtilization` when processes start between its count and its answer.
const PROCESS_SAMPLE_TRIES: usize = 3;
/// Answers kept per GPU at most (two hours of one a second), should windows stop being read.
const MAX_POLLS: usize = 7_200;

/// The NVIDIA driver's NVML, loaded at run time: the GPUs' values, and each process's use of them.
pub struct NvmlSource {
    nvml: Arc<Nvml>,
    meter: ProcessMeter,
}

impl std::fmt::Debug for NvmlSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("NvmlSource")
    }
}

fn unavailable(msg: String) -> SamplerError {
    SamplerError::Unavailable(msg)
}

/// Loads `library` (default `libnvidia-ml.so.1`) and initialises NVML; `flag` names the option in errors. The
/// calls every reading needs are looked for now, so that a driver without them fails at start.
fn load(library: Option<&Path>, flag: &str) -> Result<Arc<Nvml>> {
    let name = library.map_or_else(|| OsStr::new(DEFAULT_LIBRARY), Path::as_os_str);
    let shown = name.to_string_lossy();
    let nvml = Nvml::builder().lib_path(name).init().map_err(|e| {
        unavailable(match e {
            NvmlError::LibloadingError(e) => format!(
                "{flag}: cannot load {shown} ({e}); is the NVIDIA driver installed? (or use --dcgm-url)"
            ),
            NvmlError::FailedToLoadSymbol(_) => {
                format!("{flag}: {shown} has no nvmlInit_v2: driver too old?")
            }
            e => format!("{flag}: nvmlInit_v2 failed: {e}"),
        })
    })?;
    let lib = nvml.lib();
    let needed = [
        ("nvmlDeviceGetCount_v2", lib.nvmlDeviceGetCount_v2.is_ok()),
        (
            "nvmlDeviceGetHandleByIndex_v2",
            lib.nvmlDeviceGetHandleByIndex_v2.is_ok(),
        ),
        ("nvmlDeviceGetUUID", lib.nvmlDeviceGetUUID.is_ok()),
        ("nvmlDeviceGetName", lib.nvmlDeviceGetName.is_ok()),
        (
            "nvmlDeviceGetUtilizationRates",
            lib.nvmlDeviceGetUtilizationRates.is_ok(),
        ),
        (
            "nvmlDeviceGetMemoryInfo",
            lib.nvmlDeviceGetMemoryInfo.is_ok(),
        ),
        (
            "nvmlDeviceGetPowerUsage",
            lib.nvmlDeviceGetPowerUsage.is_ok(),
        ),
    ];
    if let Some((missing, _)) = needed.iter().find(|(_, found)| !found) {
        return Err(unavailable(format!(
            "{flag}: {shown} has no {missing}: driver too old?"
        )));
    }
    Ok(Arc::new(nvml))
}

/// A string NVML answered, `None` for an error or an empty one.
fn text(answer: std::result::Result<String, NvmlError>) -> Option<String> {
    answer.ok().filter(|s| !s.is_empty())
}

/// Each GPU's handle and UUID.
fn gpus(nvml: &Nvml) -> Result<Vec<(Device<'_>, String)>> {
    let n = nvml
        .device_count()
        .map_err(|e| SamplerError::source("nvml", format!("nvmlDeviceGetCount_v2: {e}")))?;
    Ok((0..n)
        .filter_map(|i| {
            let h = nvml.device_by_index(i).ok()?;
            let uuid = text(h.uuid())?;
            Some((h, uuid))
        })
        .collect())
}

/// Whether MIG is enabled on GPU `h`.
fn mig_enabled(h: &Device<'_>) -> bool {
    h.mig_mode().is_ok_and(|m| m.current == MIG_ENABLED)
}

/// The compute processes of `h` (`_v3`, or `_v2` where the driver has no `_v3`); `None`: the call failed.
fn compute_processes(h: &Device<'_>) -> Option<Vec<ProcessInfo>> {
    match h.running_compute_processes() {
        Err(NvmlError::FailedToLoadSymbol(_)) => h.running_compute_processes_v2().ok(),
        answer => answer.ok(),
    }
}

/// The memory a process uses, as NVML's field holds it (`NVML_VALUE_NOT_AVAILABLE`: the largest).
fn used_bytes(p: &ProcessInfo) -> u64 {
    match p.used_gpu_memory {
        UsedGpuMemory::Used(bytes) => bytes,
        UsedGpuMemory::Unavailable => u64::MAX,
    }
}

/// The compute processes of GPU `h`, and MPS's clients where the driver lists them.
fn running(h: &Device<'_>) -> Vec<RunningProcess> {
    [compute_processes(h), h.mps_running_compute_processes().ok()]
        .into_iter()
        .flatten()
        .flatten()
        .map(|p| RunningProcess {
            pid: p.pid,
            used_memory_bytes: match p.used_gpu_memory {
                UsedGpuMemory::Used(bytes) => Some(bytes),
                UsedGpuMemory::Unavailable => None,
            },
        })
        .collect()
}

/// The executable NVML names for `pid`.
fn process_name(nvml: &Nvml, pid: u32) -> Option<String> {
    nvml.sys_process_name(pid, PROCESS_NAME_BUFFER).ok()
}

/// One answer of `nvmlDeviceGetProcessUtilization` for GPU `h` since `since_us`: an error where the GPU (or
/// driver) has none (`NOT_SUPPORTED`), an empty answer for `NOT_FOUND` (no sample since). Processes that start
/// between NVML's count and its answer make it too short for the answer: asked again.
fn process_samples(
    h: &Device<'_>,
    since_us: u64,
) -> std::result::Result<Vec<ProcessSample>, NvmlError> {
    for _ in 0..PROCESS_SAMPLE_TRIES {
        match h.process_utilization_stats(since_us) {
            Ok(samples) => {
                return Ok(samples
                    .iter()
                    .map(|s| ProcessSample {
                        pid: s.pid,
                        timestamp_us: s.timestamp,
                        sm_util: s.sm_util,
                    })
                    .collect())
            }
            Err(NvmlError::NotFound) => return Ok(Vec::new()),
            Err(NvmlError::InsufficientSize(_)) => {}
            Err(e) => return Err(e),
        }
    }
    Err(NvmlError::InsufficientSize(None))
}

/// The device memory in use on `h`, bytes: allocated and reserved, as `nvmlDeviceGetMemoryInfo` counts it.
fn used_memory(nvml: &Nvml, h: &Device<'_>) -> Option<u64> {
    match h.memory_info() {
        Ok(m) => Some(m.used.saturating_add(m.reserved)),
        Err(NvmlError::FailedToLoadSymbol(_)) => used_memory_v1(nvml, h),
        Err(_) => None,
    }
}

/// `nvmlDeviceGetMemoryInfo` (the `_v1` nvml-wrapper does not wrap), for drivers without `_v2`.
#[allow(unsafe_code)]
fn used_memory_v1(nvml: &Nvml, h: &Device<'_>) -> Option<u64> {
    let f = nvml.lib().nvmlDeviceGetMemoryInfo.as_ref().ok()?;
    let mut m = nvmlMemory_t {
        total: 0,
        free: 0,
        used: 0,
    };
    // SAFETY: `f` is the driver's `nvmlDeviceGetMemoryInfo`, given a handle of this initialised NVML and a valid
    // out-pointer to the `nvmlMemory_t` it fills.
    let rc = unsafe { f(h.handle(), &mut m) };
    (rc == NVML_SUCCESS).then_some(m.used)
}

/// A MIG device's GPU instance id (`nvmlDeviceGetGpuInstanceId`, which nvml-wrapper does not wrap).
#[allow(unsafe_code)]
fn gpu_instance_id(nvml: &Nvml, mig: &Device<'_>) -> Option<u32> {
    let f = nvml.lib().nvmlDeviceGetGpuInstanceId.as_ref().ok()?;
    let mut id = 0;
    // SAFETY: `f` is the driver's `nvmlDeviceGetGpuInstanceId`, given a MIG device handle of this initialised
    // NVML and a valid out-pointer.
    let rc = unsafe { f(mig.handle(), &mut id) };
    (rc == NVML_SUCCESS).then_some(id)
}

impl NvmlSource {
    /// Loads `library` (default `libnvidia-ml.so.1`), initialises NVML and starts measuring each process's use
    /// of the GPUs over windows of `window_ms`, its PIDs mapped to pods by `pods`.
    pub fn open(
        library: Option<&Path>,
        pods: Box<dyn PidResolver>,
        window_ms: i64,
    ) -> Result<Self> {
        let nvml = load(library, "--nvml")?;
        let meter = ProcessMeter::start(nvml.clone(), pods, window_ms)?;
        Ok(NvmlSource { nvml, meter })
    }

    fn read_all(&self, at: Timestamp) -> Result<Readings> {
        let nvml = &*self.nvml;
        let n = nvml
            .device_count()
            .map_err(|e| SamplerError::source("nvml", format!("nvmlDeviceGetCount_v2: {e}")))?;
        let mut devices = Vec::with_capacity(n as usize);
        let mut stats = ReadStats::default();
        for i in 0..n {
            let Ok(h) = nvml.device_by_index(i) else {
                stats.unidentified += 1;
                continue;
            };
            let Some(uuid) = text(h.uuid()) else {
                stats.unidentified += 1;
                continue;
            };
            stats.lines += 1;
            let mut d = DeviceReading {
                uuid,
                gpu: Some(i.to_string()),
                model: text(h.name()),
                ..DeviceReading::default()
            };
            self.values(&h, &mut d);
            if let Ok(mw) = h.power_usage() {
                d.power_w = Some(Decimal::new(i64::from(mw), 3));
            }
            if let Ok(mj) = h.total_energy_consumption() {
                d.energy_mj = Some(Decimal::from(mj));
            }
            let migs = self.mig_devices(&h, &d);
            devices.push(d);
            devices.extend(migs);
        }
        Ok(Readings { at, devices, stats })
    }

    /// Utilization, memory and workload of a GPU or MIG device handle.
    fn values(&self, h: &Device<'_>, d: &mut DeviceReading) {
        if let Ok(u) = h.utilization_rates() {
            if u.gpu <= 100 {
                d.gpu_util_pct = Some(Decimal::from(u.gpu));
            }
        }
        if let Some(used) = used_memory(&self.nvml, h) {
            d.fb_used_mib = Some(Decimal::from(used) / Decimal::from(1u64 << 20));
        }
        d.workload = self.workload(h);
    }

    fn mig_devices(&self, h: &Device<'_>, parent: &DeviceReading) -> Vec<DeviceReading> {
        if !mig_enabled(h) {
            return Vec::new();
        }
        let Ok(count) = h.mig_device_count() else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for i in 0..count {
            let Ok(mh) = h.mig_device_by_index(i) else {
                continue;
            };
            let (Some(gi), Ok(attrs)) = (gpu_instance_id(&self.nvml, &mh), mh.attributes()) else {
                continue;
            };
            if attrs.gpu_instance_slice_count == 0 {
                continue;
            }
            let gb = attrs.memory_size_mb.div_ceil(1024);
            let mut d = DeviceReading {
                uuid: parent.uuid.clone(),
                gpu: parent.gpu.clone(),
                model: parent.model.clone(),
                mig: Some(MigInstance {
                    profile: format!("{}g.{gb}gb", attrs.gpu_instance_slice_count),
                    instance_id: gi.to_string(),
                    slices: None,
                }),
                ..DeviceReading::default()
            };
            self.values(&mh, &mut d);
            out.push(d);
        }
        out
    }

    /// The first compute process's executable name (the one with the most memory), as the workload: what
    /// places a MIG instance (and a GPU, until its processes' measured uses replace it).
    fn workload(&self, h: &Device<'_>) -> Option<Workload> {
        let mut infos = compute_processes(h)?;
        infos.sort_by(|x, y| used_bytes(y).cmp(&used_bytes(x)).then(x.pid.cmp(&y.pid)));
        let pid = infos.first()?.pid;
        Some(host_workload(pid, process_name(&self.nvml, pid).as_deref()))
    }
}

#[async_trait]
impl Source for NvmlSource {
    fn name(&self) -> &'static str {
        "nvml"
    }

    async fn scrape(&mut self, at: Timestamp) -> Result<Readings> {
        let mut readings = self.read_all(at)?;
        let uses = self.meter.read(at)?;
        // The GPUs measured per process are placed by their processes' uses, not by the first process.
        for d in readings.devices.iter_mut().filter(|d| d.mig.is_none()) {
            let covered = uses.measured.iter().any(|m| m.uuid == d.uuid)
                || uses.unmeasured.iter().any(|u| u.uuid == d.uuid);
            if covered {
                d.workload = None;
            }
        }
        uses.apply(&mut readings);
        Ok(readings)
    }
}

/// Measures each process's use of the node's GPUs ([`processes`]): a thread asks NVML for process samples
/// every [`processes::POLL_MS`] and keeps the answers, per GPU, until the windows they cover have been read.
pub struct ProcessMeter {
    shared: Arc<Shared>,
    window_ms: i64,
    thread: Option<std::thread::JoinHandle<()>>,
}

struct Shared {
    nvml: Arc<Nvml>,
    stop: AtomicBool,
    state: Mutex<MeterState>,
}

struct MeterState {
    pods: Box<dyn PidResolver>,
    /// Per GPU UUID.
    gpus: HashMap<String, Track>,
    /// The `lastSeenTimeStamp` of a GPU's first answer (µs): two windows back, so that the first window
    /// read has its samples from the driver's buffer.
    first_since_us: u64,
    skipped: u64,
}

#[derive(Default)]
struct Track {
    last_seen_us: u64,
    polls: VecDeque<Poll>,
    /// NVML answered `NOT_SUPPORTED` (or another error) for the process samples of this GPU.
    unsupported: bool,
    /// MIG is enabled: its instances are placed as before.
    mig: bool,
}

impl std::fmt::Debug for ProcessMeter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProcessMeter")
            .field("window_ms", &self.window_ms)
            .finish()
    }
}

fn now_us() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0)
}

impl ProcessMeter {
    fn start(nvml: Arc<Nvml>, pods: Box<dyn PidResolver>, window_ms: i64) -> Result<Self> {
        let back = u64::try_from(window_ms.max(1_000)).unwrap_or(15_000) * 2_000;
        let shared = Arc::new(Shared {
            nvml,
            stop: AtomicBool::new(false),
            state: Mutex::new(MeterState {
                pods,
                gpus: HashMap::new(),
                first_since_us: now_us().saturating_sub(back),
                skipped: 0,
            }),
        });
        shared.poll();
        let bg = shared.clone();
        let thread = std::thread::Builder::new()
            .name("nvml-processes".into())
            .spawn(move || {
                while !bg.stop.load(Ordering::Relaxed) {
                    std::thread::park_timeout(Duration::from_millis(processes::POLL_MS));
                    if !bg.stop.load(Ordering::Relaxed) {
                        bg.poll();
                    }
                }
            })
            .map_err(|e| unavailable(format!("cannot start the NVML process reader: {e}")))?;
        Ok(ProcessMeter {
            shared,
            window_ms,
            thread: Some(thread),
        })
    }

    /// The uses of the window of the meter's length that ends at `at`.
    pub fn read(&self, at: Timestamp) -> Result<Uses> {
        self.read_window(at, self.window_ms)
    }

    fn read_window(&self, at: Timestamp, window_ms: i64) -> Result<Uses> {
        self.shared.poll();
        let nvml = &self.shared.nvml;
        let gpus = gpus(nvml)?;
        let mut state =
            self.shared.state.lock().map_err(|_| {
                SamplerError::source("nvml", "the process reader's state is poisoned")
            })?;
        let state = &mut *state;
        let end_us = u64::try_from(at.0).unwrap_or(0).saturating_mul(1_000);
        let start_us = end_us.saturating_sub(u64::try_from(window_ms).unwrap_or(0) * 1_000);
        let mut uses = Uses {
            skipped: std::mem::take(&mut state.skipped),
            ..Uses::default()
        };
        let mut live: Vec<u32> = Vec::new();
        for (h, uuid) in gpus {
            let Some(track) = state.gpus.get_mut(&uuid) else {
                continue;
            };
            if track.mig {
                continue;
            }
            let running = running(&h);
            live.extend(running.iter().map(|p| p.pid));
            let pods = &mut state.pods;
            let mut resolve = |pid: u32| name(nvml, pods.as_mut(), pid);
            if track.unsupported {
                let each = processes::measured(&uuid, &[], &running, &mut resolve);
                uses.unmeasured.extend(each.into_iter().map(|m| Unmeasured {
                    uuid: m.uuid,
                    workload: m.workload,
                    memory_mib: m.memory_mib,
                }));
                continue;
            }
            let polls: Vec<Poll> = track.polls.iter().cloned().collect();
            let (times, skipped) = processes::gpu_times(&polls, start_us, end_us);
            uses.skipped += skipped.entries;
            let measured = processes::measured(&uuid, &times, &running, &mut resolve);
            for m in &measured {
                tracing::debug!(gpu = %uuid, namespace = m.workload.namespace.as_deref().unwrap_or(""),
                    pod = %m.workload.pod, gpu_time = %m.gpu_time, memory_mib = ?m.memory_mib,
                    "measured use of a GPU");
            }
            uses.measured.extend(measured);
            // Answers that reach past this window are kept for the next one.
            track.polls.retain(|p| p.until_us() > end_us);
            live.extend(
                track
                    .polls
                    .iter()
                    .flat_map(|p| p.owners.iter().map(|(pid, _)| *pid)),
            );
        }
        live.sort_unstable();
        live.dedup();
        state.pods.retain(&live);
        if uses.skipped > 0 {
            tracing::debug!(
                entries = uses.skipped,
                "NVML process samples skipped (pid 0 or over 100 %)"
            );
        }
        Ok(uses)
    }
}

impl Shared {
    /// Asks every GPU for its process samples since its last answer, and names their PIDs.
    fn poll(&self) {
        let nvml = &self.nvml;
        let Ok(gpus) = gpus(nvml) else {
            return;
        };
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        let state = &mut *state;
        for (h, uuid) in gpus {
            let first = state.first_since_us;
            let track = state.gpus.entry(uuid.clone()).or_insert_with(|| Track {
                last_seen_us: first,
                mig: mig_enabled(&h),
                ..Track::default()
            });
            if track.unsupported || track.mig {
                continue;
            }
            let since = track.last_seen_us;
            match process_samples(&h, since) {
                Ok(samples) if samples.is_empty() => {}
                Ok(samples) => {
                    let mut pids: Vec<u32> = samples.iter().map(|s| s.pid).collect();
                    pids.sort_unstable();
                    pids.dedup();
                    let owners = pids
                        .into_iter()
                        .filter(|pid| *pid != 0)
                        .map(|pid| (pid, name(nvml, state.pods.as_mut(), pid)))
                        .collect();
                    let poll = Poll {
                        since_us: since,
                        samples,
                        owners,
                    };
                    track.last_seen_us = track.last_seen_us.max(poll.until_us());
                    track.polls.push_back(poll);
                    while track.polls.len() > MAX_POLLS {
                        track.polls.pop_front();
                    }
                }
                Err(e) => {
                    track.unsupported = true;
                    tracing::warn!(gpu = %uuid, error = %e,
                        "nvmlDeviceGetProcessUtilization: no per-process GPU time on this GPU; pods sharing it are split equally");
                }
            }
        }
    }
}

/// Who `pid` is: its pod, else its executable in namespace `host`.
fn name(nvml: &Nvml, pods: &mut dyn PidResolver, pid: u32) -> Workload {
    pods.workload(pid)
        .unwrap_or_else(|| host_workload(pid, process_name(nvml, pid).as_deref()))
}

impl Drop for ProcessMeter {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}

/// NVML's per-process reader beside a DCGM exporter or Prometheus source (`--nvml-processes`): each window,
/// the pods' measured uses of this node's GPUs ([`processes::WithProcesses`]).
#[derive(Debug)]
pub struct NvmlProcesses {
    meter: ProcessMeter,
}

impl NvmlProcesses {
    /// Loads `library` (default `libnvidia-ml.so.1`) and starts measuring, PIDs mapped to pods by `pods`.
    pub fn open(
        library: Option<&Path>,
        pods: Box<dyn PidResolver>,
        window_ms: i64,
    ) -> Result<Self> {
        let nvml = load(library, "--nvml-processes")?;
        Ok(NvmlProcesses {
            meter: ProcessMeter::start(nvml, pods, window_ms)?,
        })
    }
}

impl ProcessReader for NvmlProcesses {
    fn read(&mut self, at: Timestamp, window_ms: i64) -> Result<Uses> {
        self.meter.read_window(at, window_ms)
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::{NvmlProcesses, NvmlSource};
    use crate::source::processes;

    #[test]
    fn a_missing_library_is_a_clear_error_at_start() {
        let e = NvmlSource::open(
            Some(Path::new("/nonexistent/libnvidia-ml.so.1")),
            Box::new(processes::NoPods),
            15_000,
        )
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
        assert!(e.contains("cannot load") && e.contains("driver"), "{e}");
        let e = NvmlProcesses::open(
            Some(Path::new("/nonexistent/libnvidia-ml.so.1")),
            Box::new(processes::NoPods),
            15_000,
        )
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
        assert!(e.starts_with("--nvml-processes: cannot load"), "{e}");
    }
}
