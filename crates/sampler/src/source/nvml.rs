//! The NVML source (cargo feature `nvml`): the NVIDIA driver's `libnvidia-ml.so.1`, loaded at run time with
//! `libloading`, so the binary builds and starts on machines without a driver, and `--nvml` fails at start with
//! a clear error where the library is missing.
//!
//! Per GPU (NVML's documented C API): `nvmlDeviceGetUUID`, `nvmlDeviceGetName`, `nvmlDeviceGetUtilizationRates`
//! (percent), `nvmlDeviceGetMemoryInfo` (bytes), `nvmlDeviceGetPowerUsage` (mW), `nvmlDeviceGetTotalEnergyConsumption`
//! (mJ since the driver loaded), the compute processes running on it (`nvmlDeviceGetComputeRunningProcesses_v3`,
//! names from `nvmlSystemGetProcessName`) and, when MIG is enabled, its MIG devices (`nvmlDeviceGetMigDeviceHandleByIndex`,
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
//! This is the sampler's only module with `unsafe`: calls into a C library through function pointers whose signatures
//! are NVML's; every buffer passed is sized as NVML documents and owned by the caller.

#![allow(unsafe_code)]

use std::collections::{HashMap, VecDeque};
use std::ffi::{c_char, c_int, c_uint, c_ulonglong, c_void, CStr};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use eai_engine::Timestamp;
use libloading::Library;
use rust_decimal::Decimal;

use crate::error::{Result, SamplerError};
use crate::readings::{DeviceReading, MigInstance, ReadStats, Readings, Workload};
use crate::source::processes::{
    self, host_workload, PidResolver, Poll, ProcessReader, ProcessSample, RunningProcess,
    Unmeasured, Uses,
};
use crate::source::Source;

type Ret = c_int;
type Device = *mut c_void;

const SUCCESS: Ret = 0;
const NOT_SUPPORTED: Ret = 3;
const NOT_FOUND: Ret = 6;
const INSUFFICIENT_SIZE: Ret = 7;
/// `NVML_DEVICE_UUID_V2_BUFFER_SIZE`, `NVML_DEVICE_NAME_V2_BUFFER_SIZE`.
const STRING_BUFFER: usize = 96;
const MIG_ENABLED: c_uint = 1;
/// `NVML_VALUE_NOT_AVAILABLE` in `usedGpuMemory`.
const VALUE_NOT_AVAILABLE: c_ulonglong = c_ulonglong::MAX;
/// Answers kept per GPU at most (two hours of one a second), should windows stop being read.
const MAX_POLLS: usize = 7_200;

#[repr(C)]
#[derive(Debug, Default)]
struct Utilization {
    gpu: c_uint,
    memory: c_uint,
}

#[repr(C)]
#[derive(Debug, Default)]
struct Memory {
    total: c_ulonglong,
    free: c_ulonglong,
    used: c_ulonglong,
}

/// `nvmlProcessInfo_t` of the `_v2`/`_v3` calls.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
struct ProcessInfo {
    pid: c_uint,
    used_gpu_memory: c_ulonglong,
    gpu_instance_id: c_uint,
    compute_instance_id: c_uint,
}

/// `nvmlProcessUtilizationSample_t`.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
struct ProcessUtilSample {
    pid: c_uint,
    time_stamp: c_ulonglong,
    sm_util: c_uint,
    mem_util: c_uint,
    enc_util: c_uint,
    dec_util: c_uint,
}

/// `nvmlDeviceAttributes_t`.
#[repr(C)]
#[derive(Debug, Default)]
struct Attributes {
    multiprocessor_count: c_uint,
    shared_copy_engine_count: c_uint,
    shared_decoder_count: c_uint,
    shared_encoder_count: c_uint,
    shared_jpeg_count: c_uint,
    shared_ofa_count: c_uint,
    gpu_instance_slice_count: c_uint,
    compute_instance_slice_count: c_uint,
    memory_size_mb: c_ulonglong,
}

type FnVoid = unsafe extern "C" fn() -> Ret;
type FnErrorString = unsafe extern "C" fn(Ret) -> *const c_char;
type FnCount = unsafe extern "C" fn(*mut c_uint) -> Ret;
type FnHandle = unsafe extern "C" fn(c_uint, *mut Device) -> Ret;
type FnString = unsafe extern "C" fn(Device, *mut c_char, c_uint) -> Ret;
type FnUtil = unsafe extern "C" fn(Device, *mut Utilization) -> Ret;
type FnMemory = unsafe extern "C" fn(Device, *mut Memory) -> Ret;
type FnUint = unsafe extern "C" fn(Device, *mut c_uint) -> Ret;
type FnUlonglong = unsafe extern "C" fn(Device, *mut c_ulonglong) -> Ret;
type FnMigMode = unsafe extern "C" fn(Device, *mut c_uint, *mut c_uint) -> Ret;
type FnMigHandle = unsafe extern "C" fn(Device, c_uint, *mut Device) -> Ret;
type FnAttributes = unsafe extern "C" fn(Device, *mut Attributes) -> Ret;
type FnProcesses = unsafe extern "C" fn(Device, *mut c_uint, *mut ProcessInfo) -> Ret;
type FnProcessName = unsafe extern "C" fn(c_uint, *mut c_char, c_uint) -> Ret;
type FnProcessUtil =
    unsafe extern "C" fn(Device, *mut ProcessUtilSample, *mut c_uint, c_ulonglong) -> Ret;

#[derive(Debug, Clone, Copy)]
struct Api {
    shutdown: FnVoid,
    error_string: Option<FnErrorString>,
    count: FnCount,
    handle_by_index: FnHandle,
    uuid: FnString,
    name: FnString,
    utilization: FnUtil,
    memory: FnMemory,
    power: FnUint,
    energy: Option<FnUlonglong>,
    mig_mode: Option<FnMigMode>,
    max_mig: Option<FnUint>,
    mig_by_index: Option<FnMigHandle>,
    gpu_instance_id: Option<FnUint>,
    attributes: Option<FnAttributes>,
    processes: Option<FnProcesses>,
    mps_processes: Option<FnProcesses>,
    process_name: Option<FnProcessName>,
    process_util: Option<FnProcessUtil>,
}

/// The driver's NVML, loaded and initialised; shut down when the last user drops it.
struct Nvml {
    api: Api,
    // Declared last: dropped after `api`'s function pointers are last used (in `Drop`).
    _lib: Library,
}

/// A device handle, used from the poller's thread too (NVML is thread-safe; handles stay valid until
/// `nvmlShutdown`, which runs after the last user of [`Nvml`] is gone).
#[derive(Clone, Copy)]
struct Handle(Device);

// SAFETY: an NVML device handle is an opaque token valid on any thread while NVML is initialised.
unsafe impl Send for Handle {}

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

/// Looks a symbol up and copies the function pointer out.
///
/// SAFETY (for callers): `T` must be the C signature NVML documents for `name`.
unsafe fn sym<T: Copy>(lib: &Library, name: &str) -> Option<T> {
    let mut n = name.as_bytes().to_vec();
    n.push(0);
    lib.get::<T>(&n).ok().map(|s| *s)
}

fn unavailable(msg: String) -> SamplerError {
    SamplerError::Unavailable(msg)
}

impl Nvml {
    /// Loads `library` (default `libnvidia-ml.so.1`) and initialises NVML; `flag` names the option in errors.
    fn load(library: Option<&Path>, flag: &str) -> Result<Arc<Self>> {
        let name = library.map_or_else(
            || std::ffi::OsString::from("libnvidia-ml.so.1"),
            |p| p.as_os_str().to_owned(),
        );
        // SAFETY: loading the driver's NVML runs its initialisers, which is what NVML expects of its users.
        let lib = unsafe { Library::new(&name) }.map_err(|e| {
            unavailable(format!(
                "{flag}: cannot load {} ({e}); is the NVIDIA driver installed? (or use --dcgm-url)",
                name.to_string_lossy()
            ))
        })?;
        let need = |n: &str| {
            unavailable(format!(
                "{flag}: {} has no {n}: driver too old?",
                name.to_string_lossy()
            ))
        };
        // SAFETY: each type is the documented C signature of the symbol named beside it.
        let api = unsafe {
            let init: FnVoid = sym(&lib, "nvmlInit_v2").ok_or_else(|| need("nvmlInit_v2"))?;
            let api = Api {
                shutdown: sym(&lib, "nvmlShutdown").ok_or_else(|| need("nvmlShutdown"))?,
                error_string: sym(&lib, "nvmlErrorString"),
                count: sym(&lib, "nvmlDeviceGetCount_v2")
                    .ok_or_else(|| need("nvmlDeviceGetCount_v2"))?,
                handle_by_index: sym(&lib, "nvmlDeviceGetHandleByIndex_v2")
                    .ok_or_else(|| need("nvmlDeviceGetHandleByIndex_v2"))?,
                uuid: sym(&lib, "nvmlDeviceGetUUID").ok_or_else(|| need("nvmlDeviceGetUUID"))?,
                name: sym(&lib, "nvmlDeviceGetName").ok_or_else(|| need("nvmlDeviceGetName"))?,
                utilization: sym(&lib, "nvmlDeviceGetUtilizationRates")
                    .ok_or_else(|| need("nvmlDeviceGetUtilizationRates"))?,
                memory: sym(&lib, "nvmlDeviceGetMemoryInfo")
                    .ok_or_else(|| need("nvmlDeviceGetMemoryInfo"))?,
                power: sym(&lib, "nvmlDeviceGetPowerUsage")
                    .ok_or_else(|| need("nvmlDeviceGetPowerUsage"))?,
                energy: sym(&lib, "nvmlDeviceGetTotalEnergyConsumption"),
                mig_mode: sym(&lib, "nvmlDeviceGetMigMode"),
                max_mig: sym(&lib, "nvmlDeviceGetMaxMigDeviceCount"),
                mig_by_index: sym(&lib, "nvmlDeviceGetMigDeviceHandleByIndex"),
                gpu_instance_id: sym(&lib, "nvmlDeviceGetGpuInstanceId"),
                attributes: sym(&lib, "nvmlDeviceGetAttributes_v2"),
                processes: sym(&lib, "nvmlDeviceGetComputeRunningProcesses_v3")
                    .or_else(|| sym(&lib, "nvmlDeviceGetComputeRunningProcesses_v2")),
                mps_processes: sym(&lib, "nvmlDeviceGetMPSComputeRunningProcesses_v3"),
                process_name: sym(&lib, "nvmlSystemGetProcessName"),
                process_util: sym(&lib, "nvmlDeviceGetProcessUtilization"),
            };
            let rc = init();
            if rc != SUCCESS {
                return Err(unavailable(format!(
                    "{flag}: nvmlInit_v2 failed: {}",
                    error_text(&api, rc)
                )));
            }
            api
        };
        Ok(Arc::new(Nvml { api, _lib: lib }))
    }

    /// Each GPU's handle and UUID.
    fn gpus(&self) -> Result<Vec<(Handle, String)>> {
        let a = &self.api;
        let mut n: c_uint = 0;
        // SAFETY: `n` is a valid out-pointer.
        check(a, unsafe { (a.count)(&mut n) }, "nvmlDeviceGetCount_v2")?;
        let mut out = Vec::with_capacity(n as usize);
        for i in 0..n {
            let mut h: Device = std::ptr::null_mut();
            // SAFETY: `h` is a valid out-pointer; `i` < count.
            if unsafe { (a.handle_by_index)(i, &mut h) } != SUCCESS {
                continue;
            }
            if let Some(uuid) = string(a.uuid, h) {
                out.push((Handle(h), uuid));
            }
        }
        Ok(out)
    }

    /// Whether MIG is enabled on GPU `h`.
    fn mig_enabled(&self, h: Device) -> bool {
        let Some(mode) = self.api.mig_mode else {
            return false;
        };
        let (mut cur, mut pending) = (0, 0);
        // SAFETY: valid out-pointers.
        let rc = unsafe { mode(h, &mut cur, &mut pending) };
        rc == SUCCESS && cur == MIG_ENABLED
    }

    /// The processes one of the running-process calls lists (`None`: the call is missing or failed).
    fn process_list(&self, f: FnProcesses, h: Device) -> Option<Vec<ProcessInfo>> {
        let mut n: c_uint = 0;
        // SAFETY: a null buffer with a zero count asks for the count (NVML answers INSUFFICIENT_SIZE).
        let rc = unsafe { f(h, &mut n, std::ptr::null_mut()) };
        if rc == SUCCESS {
            return Some(Vec::new());
        }
        if rc != INSUFFICIENT_SIZE {
            return None;
        }
        // Processes may start between the two calls: room for a few more.
        let mut infos = vec![ProcessInfo::default(); n as usize + 8];
        let mut len = infos.len() as c_uint;
        // SAFETY: `infos` holds `len` elements.
        if unsafe { f(h, &mut len, infos.as_mut_ptr()) } != SUCCESS {
            return None;
        }
        infos.truncate(len as usize);
        Some(infos)
    }

    /// The compute processes of GPU `h`, and MPS's clients where the driver lists them.
    fn running(&self, h: Device) -> Vec<RunningProcess> {
        let a = &self.api;
        let lists = [a.processes, a.mps_processes];
        lists
            .iter()
            .flatten()
            .filter_map(|f| self.process_list(*f, h))
            .flatten()
            .map(|p| RunningProcess {
                pid: p.pid,
                used_memory_bytes: (p.used_gpu_memory != VALUE_NOT_AVAILABLE)
                    .then_some(p.used_gpu_memory),
            })
            .collect()
    }

    /// The executable NVML names for `pid`.
    fn process_name(&self, pid: u32) -> Option<String> {
        let pn = self.api.process_name?;
        let mut buf = vec![0 as c_char; 1024];
        // SAFETY: `buf` holds 1024 bytes, the length given.
        (unsafe { pn(pid, buf.as_mut_ptr(), buf.len() as c_uint) } == SUCCESS).then(|| {
            // SAFETY: NVML wrote a NUL-terminated string into `buf`.
            unsafe { CStr::from_ptr(buf.as_ptr()) }
                .to_string_lossy()
                .into_owned()
        })
    }

    /// One answer of `nvmlDeviceGetProcessUtilization` for GPU `h` since `since_us`: `Err(NOT_SUPPORTED)`
    /// where the GPU (or driver) has none, an empty answer for `NOT_FOUND` (no sample since).
    fn process_samples(
        &self,
        h: Device,
        since_us: u64,
    ) -> std::result::Result<Vec<ProcessSample>, Ret> {
        let Some(f) = self.api.process_util else {
            return Err(NOT_SUPPORTED);
        };
        let mut n: c_uint = 0;
        // SAFETY: a null buffer asks for the count (NVML answers INSUFFICIENT_SIZE, or NOT_FOUND).
        let rc = unsafe { f(h, std::ptr::null_mut(), &mut n, since_us) };
        match rc {
            NOT_FOUND => return Ok(Vec::new()),
            SUCCESS if n == 0 => return Ok(Vec::new()),
            SUCCESS | INSUFFICIENT_SIZE => {}
            other => return Err(other),
        }
        let mut room = n as usize + 8;
        for _ in 0..3 {
            let mut buf = vec![ProcessUtilSample::default(); room];
            let mut len = buf.len() as c_uint;
            // SAFETY: `buf` holds `len` elements of the documented struct.
            let rc = unsafe { f(h, buf.as_mut_ptr(), &mut len, since_us) };
            match rc {
                SUCCESS => {
                    buf.truncate((len as usize).min(room));
                    return Ok(buf
                        .iter()
                        .map(|s| ProcessSample {
                            pid: s.pid,
                            timestamp_us: s.time_stamp,
                            sm_util: s.sm_util,
                        })
                        .collect());
                }
                NOT_FOUND => return Ok(Vec::new()),
                INSUFFICIENT_SIZE => room = room.max(len as usize) * 2,
                other => return Err(other),
            }
        }
        Err(INSUFFICIENT_SIZE)
    }
}

impl Drop for Nvml {
    fn drop(&mut self) {
        // SAFETY: NVML was initialised in `load`; the library is still loaded (dropped after this).
        unsafe {
            (self.api.shutdown)();
        }
    }
}

impl NvmlSource {
    /// Loads `library` (default `libnvidia-ml.so.1`), initialises NVML and starts measuring each process's use
    /// of the GPUs over windows of `window_ms`, its PIDs mapped to pods by `pods`.
    pub fn open(
        library: Option<&Path>,
        pods: Box<dyn PidResolver>,
        window_ms: i64,
    ) -> Result<Self> {
        let nvml = Nvml::load(library, "--nvml")?;
        let meter = ProcessMeter::start(nvml.clone(), pods, window_ms)?;
        Ok(NvmlSource { nvml, meter })
    }

    fn read_all(&self, at: Timestamp) -> Result<Readings> {
        let a = &self.nvml.api;
        let mut n: c_uint = 0;
        // SAFETY: `n` is a valid out-pointer.
        check(a, unsafe { (a.count)(&mut n) }, "nvmlDeviceGetCount_v2")?;
        let mut devices = Vec::with_capacity(n as usize);
        let mut stats = ReadStats::default();
        for i in 0..n {
            let mut h: Device = std::ptr::null_mut();
            // SAFETY: `h` is a valid out-pointer; `i` < count.
            if unsafe { (a.handle_by_index)(i, &mut h) } != SUCCESS {
                stats.unidentified += 1;
                continue;
            }
            let Some(uuid) = string(a.uuid, h) else {
                stats.unidentified += 1;
                continue;
            };
            stats.lines += 1;
            let mut d = DeviceReading {
                uuid: uuid.clone(),
                gpu: Some(i.to_string()),
                model: string(a.name, h),
                ..DeviceReading::default()
            };
            self.values(h, &mut d);
            let mut p: c_uint = 0;
            // SAFETY: valid out-pointer.
            if unsafe { (a.power)(h, &mut p) } == SUCCESS {
                d.power_w = Some(Decimal::new(i64::from(p), 3));
            }
            if let Some(f) = a.energy {
                let mut e: c_ulonglong = 0;
                // SAFETY: valid out-pointer.
                if unsafe { f(h, &mut e) } == SUCCESS {
                    d.energy_mj = Some(Decimal::from(e));
                }
            }
            let migs = self.mig_devices(h, &d);
            devices.push(d);
            devices.extend(migs);
        }
        Ok(Readings { at, devices, stats })
    }

    /// Utilization, memory and workload of a GPU or MIG device handle.
    fn values(&self, h: Device, d: &mut DeviceReading) {
        let a = &self.nvml.api;
        let mut u = Utilization::default();
        // SAFETY: valid out-pointer to a `nvmlUtilization_t`.
        if unsafe { (a.utilization)(h, &mut u) } == SUCCESS && u.gpu <= 100 {
            d.gpu_util_pct = Some(Decimal::from(u.gpu));
        }
        let mut m = Memory::default();
        // SAFETY: valid out-pointer to a `nvmlMemory_t`.
        if unsafe { (a.memory)(h, &mut m) } == SUCCESS {
            d.fb_used_mib = Some(Decimal::from(m.used) / Decimal::from(1u64 << 20));
        }
        d.workload = self.workload(h);
    }

    fn mig_devices(&self, h: Device, parent: &DeviceReading) -> Vec<DeviceReading> {
        let a = &self.nvml.api;
        let (Some(mode), Some(max), Some(by_index)) = (a.mig_mode, a.max_mig, a.mig_by_index)
        else {
            return Vec::new();
        };
        let (mut cur, mut pending) = (0, 0);
        // SAFETY: valid out-pointers.
        if unsafe { mode(h, &mut cur, &mut pending) } != SUCCESS || cur != MIG_ENABLED {
            return Vec::new();
        }
        let mut count: c_uint = 0;
        // SAFETY: valid out-pointer.
        if unsafe { max(h, &mut count) } != SUCCESS {
            return Vec::new();
        }
        let mut out = Vec::new();
        for i in 0..count {
            let mut mh: Device = std::ptr::null_mut();
            // SAFETY: valid out-pointer; `i` < the maximum count.
            let rc = unsafe { by_index(h, i, &mut mh) };
            if rc == NOT_FOUND || rc != SUCCESS {
                continue;
            }
            let mut gi: c_uint = 0;
            let id_ok = a
                .gpu_instance_id
                // SAFETY: valid out-pointer.
                .is_some_and(|f| unsafe { f(mh, &mut gi) } == SUCCESS);
            let mut attrs = Attributes::default();
            let attrs_ok = a
                .attributes
                // SAFETY: valid out-pointer to a `nvmlDeviceAttributes_t`.
                .is_some_and(|f| unsafe { f(mh, &mut attrs) } == SUCCESS);
            if !id_ok || !attrs_ok || attrs.gpu_instance_slice_count == 0 {
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
            self.values(mh, &mut d);
            out.push(d);
        }
        out
    }

    /// The first compute process's executable name (the one with the most memory), as the workload: what
    /// places a MIG instance (and a GPU, until its processes' measured uses replace it).
    fn workload(&self, h: Device) -> Option<Workload> {
        let nvml = &self.nvml;
        let mut infos = nvml.process_list(nvml.api.processes?, h)?;
        infos.sort_by(|x, y| {
            y.used_gpu_memory
                .cmp(&x.used_gpu_memory)
                .then(x.pid.cmp(&y.pid))
        });
        let pid = infos.first()?.pid;
        Some(host_workload(pid, nvml.process_name(pid).as_deref()))
    }
}

fn string(f: FnString, h: Device) -> Option<String> {
    let mut buf = [0 as c_char; STRING_BUFFER];
    // SAFETY: `buf` holds STRING_BUFFER bytes, the length given; NVML NUL-terminates on success.
    if unsafe { f(h, buf.as_mut_ptr(), STRING_BUFFER as c_uint) } != SUCCESS {
        return None;
    }
    // SAFETY: NUL-terminated within `buf` (NVML's contract on success).
    let s = unsafe { CStr::from_ptr(buf.as_ptr()) }
        .to_string_lossy()
        .into_owned();
    (!s.is_empty()).then_some(s)
}

fn error_text(a: &Api, rc: Ret) -> String {
    a.error_string
        .map(|f| {
            // SAFETY: nvmlErrorString returns a static NUL-terminated string for any code.
            let p = unsafe { f(rc) };
            if p.is_null() {
                format!("error {rc}")
            } else {
                // SAFETY: non-null, static, NUL-terminated.
                unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
            }
        })
        .unwrap_or_else(|| format!("error {rc}"))
}

fn check(a: &Api, rc: Ret, what: &str) -> Result<()> {
    if rc == SUCCESS {
        Ok(())
    } else {
        Err(SamplerError::source(
            "nvml",
            format!("{what}: {}", error_text(a, rc)),
        ))
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
        let gpus = nvml.gpus()?;
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
            let running = nvml.running(h.0);
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
        let Ok(gpus) = nvml.gpus() else {
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
                mig: nvml.mig_enabled(h.0),
                ..Track::default()
            });
            if track.unsupported || track.mig {
                continue;
            }
            let since = track.last_seen_us;
            match nvml.process_samples(h.0, since) {
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
                Err(rc) => {
                    track.unsupported = true;
                    tracing::warn!(gpu = %uuid, error = %error_text(&nvml.api, rc),
                        "nvmlDeviceGetProcessUtilization: no per-process GPU time on this GPU; pods sharing it are split equally");
                }
            }
        }
    }
}

/// Who `pid` is: its pod, else its executable in namespace `host`.
fn name(nvml: &Nvml, pods: &mut dyn PidResolver, pid: u32) -> Workload {
    pods.workload(pid)
        .unwrap_or_else(|| host_workload(pid, nvml.process_name(pid).as_deref()))
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
        let nvml = Nvml::load(library, "--nvml-processes")?;
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

    use super::{
        Attributes, Memory, NvmlProcesses, NvmlSource, ProcessInfo, ProcessUtilSample, Utilization,
    };
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

    #[test]
    fn struct_layouts_match_nvml() {
        assert_eq!(std::mem::size_of::<Utilization>(), 8);
        assert_eq!(std::mem::size_of::<Memory>(), 24);
        assert_eq!(std::mem::size_of::<ProcessInfo>(), 24);
        // pid, 4 bytes of padding, timeStamp, then smUtil, memUtil, encUtil, decUtil.
        assert_eq!(std::mem::size_of::<ProcessUtilSample>(), 32);
        assert_eq!(std::mem::offset_of!(ProcessUtilSample, time_stamp), 8);
        assert_eq!(std::mem::offset_of!(ProcessUtilSample, sm_util), 16);
        assert_eq!(std::mem::size_of::<Attributes>(), 40);
    }
}
