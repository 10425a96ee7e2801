//! The NVML source (cargo feature `nvml`): the NVIDIA driver's `libnvidia-ml.so.1`, loaded at run time with
//! `libloading`, so the binary builds and starts on machines without a driver, and `--nvml` fails at start with
//! a clear error where the library is missing.
//!
//! Per GPU (NVML's documented C API): `nvmlDeviceGetUUID`, `nvmlDeviceGetName`, `nvmlDeviceGetUtilizationRates`
//! (percent), `nvmlDeviceGetMemoryInfo` (bytes), `nvmlDeviceGetPowerUsage` (mW), `nvmlDeviceGetTotalEnergyConsumption`
//! (mJ since the driver loaded), the compute processes running on it (`nvmlDeviceGetComputeRunningProcesses_v3`,
//! names from `nvmlSystemGetProcessName`) and, when MIG is enabled, its MIG devices (`nvmlDeviceGetMigDeviceHandleByIndex`,
//! instance id, slice count and memory). NVML has no pods: a GPU running processes is attributed to the first
//! process's executable name (as `pod`, namespace `host`), which the config file's pod globs can map; a GPU
//! with none is idle. NVML does not report the utilization of MIG instances: they are counted as incomplete
//! and skipped (never zero); read MIG GPUs through DCGM (`DCGM_FI_PROF_GR_ENGINE_ACTIVE`).
//!
//! This is the sampler's only module with `unsafe`: calls into a C library through function pointers whose signatures
//! are NVML's; every buffer passed is sized as NVML documents and owned by the caller.

#![allow(unsafe_code)]

use std::ffi::{c_char, c_int, c_uint, c_ulonglong, c_void, CStr};
use std::path::Path;

use async_trait::async_trait;
use eai_engine::Timestamp;
use libloading::Library;
use rust_decimal::Decimal;

use crate::dcgm::{DeviceReading, MigInstance, ReadStats, Readings, Workload};
use crate::error::{Result, SamplerError};
use crate::source::Source;

type Ret = c_int;
type Device = *mut c_void;

const SUCCESS: Ret = 0;
const NOT_FOUND: Ret = 6;
const INSUFFICIENT_SIZE: Ret = 7;
/// `NVML_DEVICE_UUID_V2_BUFFER_SIZE`, `NVML_DEVICE_NAME_V2_BUFFER_SIZE`.
const STRING_BUFFER: usize = 96;
const MIG_ENABLED: c_uint = 1;

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
    process_name: Option<FnProcessName>,
}

/// The NVIDIA driver's NVML, loaded at run time.
pub struct NvmlSource {
    api: Api,
    // Declared last: dropped after `api`'s function pointers are last used (in `Drop`).
    _lib: Library,
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

impl NvmlSource {
    /// Loads `library` (default `libnvidia-ml.so.1`) and initialises NVML.
    pub fn open(library: Option<&Path>) -> Result<Self> {
        let name = library.map_or_else(
            || std::ffi::OsString::from("libnvidia-ml.so.1"),
            |p| p.as_os_str().to_owned(),
        );
        // SAFETY: loading the driver's NVML runs its initialisers, which is what NVML expects of its users.
        let lib = unsafe { Library::new(&name) }.map_err(|e| {
            unavailable(format!(
                "--nvml: cannot load {} ({e}); is the NVIDIA driver installed? (or use --dcgm-url)",
                name.to_string_lossy()
            ))
        })?;
        let need = |n: &str| {
            unavailable(format!(
                "--nvml: {} has no {n}: driver too old?",
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
                process_name: sym(&lib, "nvmlSystemGetProcessName"),
            };
            let rc = init();
            if rc != SUCCESS {
                return Err(unavailable(format!(
                    "--nvml: nvmlInit_v2 failed: {}",
                    error_text(&api, rc)
                )));
            }
            api
        };
        Ok(NvmlSource { api, _lib: lib })
    }

    fn read_all(&self, at: Timestamp) -> Result<Readings> {
        let a = &self.api;
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
        let a = &self.api;
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
        let a = &self.api;
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

    /// The first compute process's executable name, as the workload.
    fn workload(&self, h: Device) -> Option<Workload> {
        let a = &self.api;
        let f = a.processes?;
        let mut n: c_uint = 0;
        // SAFETY: a null buffer with a zero count asks for the count (NVML answers INSUFFICIENT_SIZE).
        let rc = unsafe { f(h, &mut n, std::ptr::null_mut()) };
        if rc == SUCCESS || (rc != INSUFFICIENT_SIZE) || n == 0 {
            return None;
        }
        let mut infos = vec![ProcessInfo::default(); n as usize + 8];
        let mut len = infos.len() as c_uint;
        // SAFETY: `infos` holds `len` elements.
        if unsafe { f(h, &mut len, infos.as_mut_ptr()) } != SUCCESS || len == 0 {
            return None;
        }
        infos.truncate(len as usize);
        infos.sort_by(|x, y| {
            y.used_gpu_memory
                .cmp(&x.used_gpu_memory)
                .then(x.pid.cmp(&y.pid))
        });
        let pid = infos.first()?.pid;
        let name = a
            .process_name
            .and_then(|pn| {
                let mut buf = vec![0 as c_char; 1024];
                // SAFETY: `buf` holds 1024 bytes, the length given.
                (unsafe { pn(pid, buf.as_mut_ptr(), buf.len() as c_uint) } == SUCCESS).then(|| {
                    // SAFETY: NVML wrote a NUL-terminated string into `buf`.
                    unsafe { CStr::from_ptr(buf.as_ptr()) }
                        .to_string_lossy()
                        .into_owned()
                })
            })
            .map(|path| path.rsplit('/').next().unwrap_or(&path).to_string())
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| format!("pid-{pid}"));
        Some(Workload {
            pod: name,
            namespace: Some("host".to_string()),
            container: None,
        })
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

impl Drop for NvmlSource {
    fn drop(&mut self) {
        // SAFETY: NVML was initialised in `open`; the library is still loaded (dropped after this).
        unsafe {
            (self.api.shutdown)();
        }
    }
}

#[async_trait]
impl Source for NvmlSource {
    fn name(&self) -> &'static str {
        "nvml"
    }

    async fn scrape(&mut self, at: Timestamp) -> Result<Readings> {
        self.read_all(at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_library_is_a_clear_error_at_start() {
        let e = NvmlSource::open(Some(Path::new("/nonexistent/libnvidia-ml.so.1")))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("cannot load") && e.contains("driver"), "{e}");
    }

    #[test]
    fn struct_layouts_match_nvml() {
        assert_eq!(std::mem::size_of::<Utilization>(), 8);
        assert_eq!(std::mem::size_of::<Memory>(), 24);
        assert_eq!(std::mem::size_of::<ProcessInfo>(), 24);
        assert_eq!(std::mem::size_of::<Attributes>(), 40);
    }
}
