//! DCGM series -> [`Readings`]: per GPU (or MIG instance), the five families the chargeback needs, with their
//! identity and workload labels. The same mapping serves the exporter's text and Prometheus's JSON, so both
//! sources read the labels alike:
//!
//! - identity: `UUID` (the parent's, on MIG rows too), `gpu`, `modelName`, `Hostname` or `hostname`; MIG rows add
//!   `GPU_I_PROFILE` and `GPU_I_ID` and become their own device;
//! - workload: `pod`, `namespace`, `container`, or `exported_pod`, `exported_namespace`, `exported_container` when a
//!   Prometheus with `honor_labels: false` renamed them (the plain ones then name the scrape target);
//! - values: `DCGM_FI_DEV_GPU_UTIL` (percent), `DCGM_FI_PROF_GR_ENGINE_ACTIVE` (ratio; the only utilization of a MIG
//!   instance), `DCGM_FI_DEV_FB_USED` (MiB), `DCGM_FI_DEV_POWER_USAGE` (W), `DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION` (mJ
//!   since boot, a counter).
//!
//! A value that is a DCGM "blank" sentinel (`9223372036854775794` and its kin, the FP64 blanks from 2^47, the
//! int32 blanks from 2147483632) or out of its range (negative, NaN, a percentage above 100) is skipped and
//! counted: a reading is absent, never zero.

use rustc_hash::FxHashMap;
use std::str::FromStr;
use std::sync::Arc;

use eai_engine::Timestamp;
use rust_decimal::prelude::FromPrimitive;
use rust_decimal::Decimal;

use crate::exposition;

// What a read returns lives in `readings` (every source returns it); its paths here stay.
pub use crate::readings::{
    DeviceReading, Labels, MigInstance, ReadStats, Readings, Sharer, Workload,
};

pub const GPU_UTIL: &str = "DCGM_FI_DEV_GPU_UTIL";
pub const GR_ENGINE_ACTIVE: &str = "DCGM_FI_PROF_GR_ENGINE_ACTIVE";
pub const FB_USED: &str = "DCGM_FI_DEV_FB_USED";
pub const POWER_USAGE: &str = "DCGM_FI_DEV_POWER_USAGE";
pub const TOTAL_ENERGY: &str = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION";

/// The families the sampler reads (everything else in an exposition is ignored).
pub const FAMILIES: [&str; 5] = [
    GPU_UTIL,
    GR_ENGINE_ACTIVE,
    FB_USED,
    POWER_USAGE,
    TOTAL_ENERGY,
];

/// DCGM's FP64 "blank" values start at 2^47; its int64 blanks (`0x7ffffffffffffff0`…) are above too.
const FP64_BLANK: f64 = 140_737_488_355_328.0;
/// DCGM's int32 blanks: `0x7ffffff0` ..= `0x7fffffff`.
const INT32_BLANK: std::ops::RangeInclusive<f64> = 2_147_483_632.0..=2_147_483_647.0;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    UtilPct,
    EngineActive,
    FbUsed,
    Power,
    Energy,
}

fn field(name: &str) -> Option<Field> {
    Some(match name {
        GPU_UTIL => Field::UtilPct,
        GR_ENGINE_ACTIVE => Field::EngineActive,
        FB_USED => Field::FbUsed,
        POWER_USAGE => Field::Power,
        TOTAL_ENERGY => Field::Energy,
        _ => return None,
    })
}

/// Collects devices from series, one at a time.
#[derive(Debug, Default)]
pub struct DeviceSet {
    devices: Vec<DeviceReading>,
    /// A device's key to its place in `devices` (Fx: looked up once a value, and the keys are ours).
    index: FxHashMap<String, usize>,
    key: String,
    pub stats: ReadStats,
}

fn non_empty<'a>(labels: &'a impl Labels, name: &str) -> Option<&'a str> {
    labels.get(name).filter(|v| !v.is_empty())
}

impl DeviceSet {
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes one series value; ignores families the sampler does not read.
    pub fn observe(&mut self, name: &str, labels: &impl Labels, value_text: &str, value: f64) {
        let Some(f) = field(name) else { return };
        let Some(uuid) = non_empty(labels, "UUID").or_else(|| non_empty(labels, "gpu_uuid")) else {
            self.stats.unidentified += 1;
            return;
        };
        let Some(v) = self.checked(f, value_text, value) else {
            return;
        };
        let mig = mig_labels(labels);
        self.key.clear();
        push_key(&mut self.key, uuid, mig);
        let idx = match self.index.get(self.key.as_str()) {
            Some(i) => *i,
            None => {
                let i = self.devices.len();
                self.devices.push(new_device(uuid, mig, labels));
                self.index.insert(self.key.clone(), i);
                i
            }
        };
        let d = &mut self.devices[idx];
        if let Some(w) = workload_ref(labels) {
            add_sharer(d, w, || labels.pairs().into());
        }
        fill(d, f, v);
    }

    /// Takes one value of a series worked out beforehand ([`Series::new`]): what [`DeviceSet::observe`] does
    /// with the series' name and labels, without reading them again (a range answer holds hundreds of values a
    /// series).
    pub fn observe_series(&mut self, series: &Series, value_text: &str, value: f64) {
        let s = match series {
            Series::Ignored => return,
            Series::Unidentified => {
                self.stats.unidentified += 1;
                return;
            }
            Series::Device(s) => s,
        };
        let Some(v) = self.checked(s.field, value_text, value) else {
            return;
        };
        let idx = match self.index.get(s.key.as_str()) {
            Some(i) => *i,
            None => {
                let i = self.devices.len();
                self.devices.push(s.device.clone());
                self.index.insert(s.key.clone(), i);
                i
            }
        };
        let d = &mut self.devices[idx];
        if let Some(w) = &s.workload {
            add_sharer(d, WorkloadRef::of(w), || s.device.labels.clone());
        }
        fill(d, s.field, v);
    }

    fn checked(&mut self, f: Field, text: &str, value: f64) -> Option<Decimal> {
        if !value.is_finite() || value < 0.0 {
            self.stats.out_of_range += 1;
            return None;
        }
        if value >= FP64_BLANK || (f != Field::Energy && INT32_BLANK.contains(&value)) {
            self.stats.sentinels += 1;
            return None;
        }
        let max = match f {
            Field::UtilPct => 100.0,
            Field::EngineActive => 1.0,
            Field::FbUsed => 1_073_741_824.0,
            Field::Power => 1_000_000.0,
            Field::Energy => FP64_BLANK,
        };
        if value > max {
            self.stats.out_of_range += 1;
            return None;
        }
        let d = Decimal::from_str(text)
            .or_else(|_| Decimal::from_scientific(text))
            .ok()
            .or_else(|| Decimal::from_f64(value));
        match d {
            Some(d) => Some(d.normalize()),
            None => {
                self.stats.out_of_range += 1;
                None
            }
        }
    }

    pub fn finish(self, at: Timestamp) -> Readings {
        Readings {
            at,
            devices: self.devices,
            stats: self.stats,
        }
    }
}

/// A series' identity and family, worked out once for all its values.
#[derive(Debug, Clone)]
pub enum Series {
    /// A family the sampler does not read.
    Ignored,
    /// One of its families, without a `UUID` label.
    Unidentified,
    Device(Box<SeriesDevice>),
}

/// A series of a device: the family, the device's key, the device as its first series makes it, and the
/// series' workload.
#[derive(Debug, Clone)]
pub struct SeriesDevice {
    field: Field,
    key: String,
    device: DeviceReading,
    workload: Option<Workload>,
}

impl Series {
    pub fn new(name: &str, labels: &impl Labels) -> Series {
        let Some(field) = field(name) else {
            return Series::Ignored;
        };
        let Some(uuid) = non_empty(labels, "UUID").or_else(|| non_empty(labels, "gpu_uuid")) else {
            return Series::Unidentified;
        };
        let mig = mig_labels(labels);
        let mut key = String::new();
        push_key(&mut key, uuid, mig);
        Series::Device(Box::new(SeriesDevice {
            field,
            key,
            device: new_device(uuid, mig, labels),
            workload: workload(labels),
        }))
    }
}

fn mig_labels(labels: &impl Labels) -> Option<(&str, &str)> {
    match (
        non_empty(labels, "GPU_I_PROFILE"),
        non_empty(labels, "GPU_I_ID"),
    ) {
        (Some(p), Some(i)) => Some((p, i)),
        _ => None,
    }
}

/// A device's key in a [`DeviceSet`]: the UUID, and a MIG instance's profile and id.
fn push_key(key: &mut String, uuid: &str, mig: Option<(&str, &str)>) {
    key.push_str(uuid);
    if let Some((p, i)) = mig {
        key.push('\0');
        key.push_str(p);
        key.push('\0');
        key.push_str(i);
    }
}

/// A series' pod as its labels name it, borrowed: read for every value, it is made into a [`Workload`] only
/// for a pod new to its device. A Slurm job named by the exporter's `hpc_job` label (no pod) is `job`: its
/// `pod` is then the job id, and its workload `job-<id>` ([`crate::slurm`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct WorkloadRef<'a> {
    pod: &'a str,
    namespace: Option<&'a str>,
    container: Option<&'a str>,
    job: bool,
}

impl<'a> WorkloadRef<'a> {
    fn of(w: &'a Workload) -> Self {
        WorkloadRef {
            pod: &w.pod,
            namespace: w.namespace.as_deref(),
            container: w.container.as_deref(),
            job: false,
        }
    }

    fn is(&self, w: &Workload) -> bool {
        if self.job {
            return w.namespace.is_none()
                && w.container.is_none()
                && w.pod.strip_prefix("job-") == Some(self.pod);
        }
        *self == WorkloadRef::of(w)
    }

    fn to_workload(self) -> Workload {
        Workload {
            pod: if self.job {
                crate::slurm::job_pod(self.pod)
            } else {
                self.pod.to_string()
            },
            namespace: self.namespace.map(str::to_string),
            container: self.container.map(str::to_string),
        }
    }
}

/// Notes that pod `w` was seen on device `d` (once per pod: the workload and its labels are made only for a new
/// one).
fn add_sharer(
    d: &mut DeviceReading,
    w: WorkloadRef<'_>,
    labels: impl FnOnce() -> Arc<[(String, String)]>,
) {
    if d.sharers.iter().any(|s| w.is(&s.workload)) {
        return;
    }
    let w = w.to_workload();
    if d.workload.is_none() {
        d.workload = Some(w.clone());
    }
    // The first pod is placed by the device's labels (its first series'), as an unshared device is.
    let labels = if d.sharers.is_empty() {
        d.labels.clone()
    } else {
        labels()
    };
    d.sharers.push(Sharer {
        workload: w,
        labels,
        gpu_time: None,
        memory_mib: None,
    });
}

/// Sets a device's value of a family; a repeated series (two scrape jobs) keeps the first value.
fn fill(d: &mut DeviceReading, f: Field, v: Decimal) {
    let slot = match f {
        Field::UtilPct => &mut d.gpu_util_pct,
        Field::EngineActive => &mut d.engine_active,
        Field::FbUsed => &mut d.fb_used_mib,
        Field::Power => &mut d.power_w,
        Field::Energy => &mut d.energy_mj,
    };
    if slot.is_none() {
        *slot = Some(v);
    }
}

fn new_device(uuid: &str, mig: Option<(&str, &str)>, labels: &impl Labels) -> DeviceReading {
    DeviceReading {
        uuid: uuid.to_string(),
        gpu: non_empty(labels, "gpu").map(str::to_string),
        mig: mig.map(|(p, i)| MigInstance {
            profile: p.to_string(),
            instance_id: i.to_string(),
            slices: None,
        }),
        model: non_empty(labels, "modelName")
            .or_else(|| non_empty(labels, "model_name"))
            .map(str::to_string),
        host: non_empty(labels, "Hostname")
            .or_else(|| non_empty(labels, "hostname"))
            .map(str::to_string),
        workload: None,
        labels: labels.pairs().into(),
        ..DeviceReading::default()
    }
}

/// The workload labels; `exported_*` (Prometheus with `honor_labels: false`) win over the plain ones. A DRA
/// claim shared by a pod's containers is the pod's (the exporter copies the series per container:
/// [`crate::dra::holder`]). Without a pod, the Slurm job of `hpc_job` (`exported_hpc_job`), if any.
fn workload_ref(labels: &impl Labels) -> Option<WorkloadRef<'_>> {
    let (pod, namespace, container) = match non_empty(labels, "exported_pod") {
        Some(p) => (
            p,
            non_empty(labels, "exported_namespace"),
            non_empty(labels, "exported_container"),
        ),
        None => match non_empty(labels, "pod") {
            Some(p) => (
                p,
                non_empty(labels, "namespace"),
                non_empty(labels, "container"),
            ),
            None => {
                let job = non_empty(labels, "exported_hpc_job")
                    .or_else(|| non_empty(labels, crate::slurm::HPC_JOB))?;
                return Some(WorkloadRef {
                    pod: job,
                    namespace: None,
                    container: None,
                    job: true,
                });
            }
        },
    };
    let container = container.filter(|_| !crate::dra::copied_for_a_claim(labels));
    Some(WorkloadRef {
        pod,
        namespace,
        container,
        job: false,
    })
}

fn workload(labels: &impl Labels) -> Option<Workload> {
    workload_ref(labels).map(WorkloadRef::to_workload)
}

/// Reads a DCGM exporter's `/metrics` text.
pub fn from_text(text: &str, at: Timestamp) -> Readings {
    let mut set = DeviceSet::new();
    let stats = exposition::parse(text, |line| {
        set.observe(line.name, line, line.value_text, line.value)
    });
    set.stats.lines += stats.lines;
    set.stats.malformed += stats.malformed;
    set.finish(at)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use eai_engine::Timestamp;
    use rust_decimal::Decimal;

    use super::from_text;
    use crate::readings::{Readings, Workload};

    const U: &str = "GPU-1";

    fn one(text: &str) -> Readings {
        from_text(text, Timestamp(0))
    }

    #[test]
    fn sentinels_and_out_of_range_values_are_skipped_and_counted() {
        let r = one(&format!(
            "DCGM_FI_DEV_GPU_UTIL{{UUID=\"{U}\"}} 9223372036854775794\n\
             DCGM_FI_DEV_FB_USED{{UUID=\"{U}\"}} 2147483632\n\
             DCGM_FI_DEV_POWER_USAGE{{UUID=\"{U}\"}} 140737488355328.000000\n\
             DCGM_FI_PROF_GR_ENGINE_ACTIVE{{UUID=\"{U}\"}} NaN\n\
             DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{{UUID=\"{U}\"}} -5\n\
             DCGM_FI_DEV_GPU_UTIL{{UUID=\"GPU-2\"}} 101\n\
             DCGM_FI_DEV_MEMORY_TEMP{{UUID=\"{U}\"}} 9223372036854775794\n\
             DCGM_FI_DEV_POWER_USAGE{{gpu=\"0\"}} 100\n"
        ));
        assert!(r.devices.is_empty(), "{:?}", r.devices);
        assert_eq!(r.stats.sentinels, 3);
        assert_eq!(r.stats.out_of_range, 3);
        assert_eq!(r.stats.unidentified, 1);
    }

    #[test]
    fn energy_counters_may_cross_the_int32_blank_range() {
        let r = one(&format!(
            "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{{UUID=\"{U}\"}} 2147483640\n"
        ));
        assert_eq!(
            r.devices[0].energy_mj,
            Some(Decimal::from(2_147_483_640u64))
        );
    }

    #[test]
    fn exported_labels_win_and_lowercase_hostname_is_read() {
        let r = one(&format!(
            "DCGM_FI_DEV_GPU_UTIL{{UUID=\"{U}\",hostname=\"n1\",pod=\"dcgm-exporter-x\",namespace=\"gpu-operator\",\
             exported_pod=\"vllm-0\",exported_namespace=\"ai\"}} 50\n"
        ));
        let d = &r.devices[0];
        assert_eq!(d.host.as_deref(), Some("n1"));
        assert_eq!(
            d.workload,
            Some(Workload {
                pod: "vllm-0".into(),
                namespace: Some("ai".into()),
                container: None
            })
        );
        assert_eq!(d.gpu_util_pct, Some(Decimal::from(50)));
    }

    #[test]
    fn mig_rows_are_their_own_devices() {
        let r = one(&format!(
            "DCGM_FI_PROF_GR_ENGINE_ACTIVE{{UUID=\"{U}\"}} 0.5\n\
             DCGM_FI_PROF_GR_ENGINE_ACTIVE{{UUID=\"{U}\",GPU_I_PROFILE=\"1g.10gb\",GPU_I_ID=\"3\"}} 0.25\n\
             DCGM_FI_PROF_GR_ENGINE_ACTIVE{{UUID=\"{U}\",GPU_I_PROFILE=\"\",GPU_I_ID=\"\"}} 0.75\n"
        ));
        assert_eq!(r.devices.len(), 2);
        assert_eq!(r.devices[1].mig.as_ref().unwrap().profile, "1g.10gb");
        // Empty MIG labels name the whole GPU: the first value is kept.
        assert_eq!(r.devices[0].engine_active, Some(Decimal::new(5, 1)));
    }
}
