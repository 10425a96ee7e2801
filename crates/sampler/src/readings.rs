//! What a source read ([`Readings`]): per GPU or MIG instance, its identity, the pods seen on it and the values
//! of the families the chargeback needs, in the source's units; and [`Labels`], one view of a series' labels
//! (the exposition text's or Prometheus's JSON) for the readers and the DRA rules. Every source returns these
//! types; [`crate::dcgm`] reads DCGM's series into them, [`crate::convert`] turns them into samples.

use std::sync::Arc;

use eai_engine::Timestamp;
use rust_decimal::Decimal;

use crate::exposition;

/// What one read of a source saw, besides the devices.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadStats {
    /// Non-empty lines (text) or series (JSON) read.
    pub lines: u64,
    /// Lines that could not be parsed at all: skipped.
    pub malformed: u64,
    /// DCGM blank sentinels met in the sampler's families: skipped.
    pub sentinels: u64,
    /// Values out of their range (negative, NaN, infinite, a percentage above 100): skipped.
    pub out_of_range: u64,
    /// Series of the sampler's families with no `UUID` label: skipped.
    pub unidentified: u64,
}

impl ReadStats {
    pub fn add(&mut self, o: &ReadStats) {
        self.lines += o.lines;
        self.malformed += o.malformed;
        self.sentinels += o.sentinels;
        self.out_of_range += o.out_of_range;
        self.unidentified += o.unidentified;
    }
}

/// The pod that holds a device, as the exporter (or Prometheus) labelled it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workload {
    pub pod: String,
    pub namespace: Option<String>,
    pub container: Option<String>,
}

/// A pod seen on a device in a window. A device with two or more is shared (time-slicing, MPS, a shared DRA
/// claim: DCGM exporter repeats the device's series once per pod) and is split between them ([`crate::shares`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Sharer {
    pub workload: Workload,
    /// The labels of the pod's series (attribution rules match on them); shared, as for [`DeviceReading::labels`].
    pub labels: Arc<[(String, String)]>,
    /// The pod's GPU time over the window, 0..=1 of the device, when a source measured it per process or per
    /// container (NVML's process utilization, HAMi); `None`: not measured.
    pub gpu_time: Option<Decimal>,
    /// The pod's memory, MiB, when measured per process.
    pub memory_mib: Option<Decimal>,
}

/// A MIG instance of a GPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MigInstance {
    /// GPU instance profile, e.g. `1g.10gb`.
    pub profile: String,
    /// GPU instance id, e.g. `13`.
    pub instance_id: String,
    /// `(slices of the instance, slices of the GPU)` when the source knows them (NVML); else from [`crate::mig`].
    pub slices: Option<(u32, u32)>,
}

/// What one GPU or MIG instance did, as read (units of the source: percent, ratio, MiB, W, mJ).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DeviceReading {
    /// The physical GPU's UUID (MIG instances carry their parent's).
    pub uuid: String,
    /// The `gpu` index label.
    pub gpu: Option<String>,
    pub mig: Option<MigInstance>,
    pub model: Option<String>,
    pub host: Option<String>,
    /// The first pod seen on the device (the one it is placed by when it is not shared).
    pub workload: Option<Workload>,
    /// Every distinct pod seen on the device this window, in order of appearance (the first is `workload`): two
    /// or more, the device is shared and split between them.
    pub sharers: Vec<Sharer>,
    /// Every label of the first series seen for this device (for attribution rules on labels); shared, as the
    /// same device is read window after window.
    pub labels: Arc<[(String, String)]>,
    /// `DCGM_FI_DEV_GPU_UTIL`, 0..=100.
    pub gpu_util_pct: Option<Decimal>,
    /// `DCGM_FI_PROF_GR_ENGINE_ACTIVE`, 0..=1.
    pub engine_active: Option<Decimal>,
    /// `DCGM_FI_DEV_FB_USED`, MiB.
    pub fb_used_mib: Option<Decimal>,
    /// `DCGM_FI_DEV_POWER_USAGE`, W.
    pub power_w: Option<Decimal>,
    /// `DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION`, mJ since boot.
    pub energy_mj: Option<Decimal>,
}

/// One read of a source: the devices and what was skipped.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Readings {
    /// The instant the values describe (the end of the window they are read for).
    pub at: Timestamp,
    pub devices: Vec<DeviceReading>,
    pub stats: ReadStats,
}

/// Label access over the text parser's borrowed labels or Prometheus's JSON objects.
pub trait Labels {
    fn get(&self, name: &str) -> Option<&str>;
    fn pairs(&self) -> Vec<(String, String)>;
}

impl Labels for exposition::Line<'_, '_> {
    fn get(&self, name: &str) -> Option<&str> {
        self.label(name)
    }
    fn pairs(&self) -> Vec<(String, String)> {
        self.labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }
}

impl Labels for serde_json::Map<String, serde_json::Value> {
    fn get(&self, name: &str) -> Option<&str> {
        self.get(name).and_then(|v| v.as_str())
    }
    fn pairs(&self) -> Vec<(String, String)> {
        self.iter()
            .filter(|(k, _)| k.as_str() != "__name__")
            .filter_map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_string())))
            .collect()
    }
}
