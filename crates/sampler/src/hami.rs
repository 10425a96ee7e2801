//! HAMi's vGPU monitor -> measured shares (SPEC §11): each container's use of each GPU it shares, as
//! [`Measured`] for [`crate::shares::merge`]. Pure: the caller fetches the text (the monitor's `/metrics`, node port
//! 31992 in HAMi's chart) once a window.
//!
//! What HAMi (Project-HAMi/HAMi, `cmd/vGPUmonitor/metrics.go`) writes, per container and vGPU, and what is read:
//!
//! | read as | name (v2.9.0 on) | legacy name (to v2.8, or `--legacy-metrics`) |
//! |---|---|---|
//! | GPU time | `hami_container_device_utilization_ratio` | `Device_utilization_desc_of_container` |
//! | memory | `hami_vgpu_memory_used_bytes`, else `hami_container_device_memory_bytes` | `vGPU_device_memory_usage_in_bytes`, else `Device_memory_desc_of_container` |
//! | the device's own use | `hami_host_gpu_utilization_ratio` | `HostCoreUtilization` |
//!
//! Labels: `namespace`, `pod`, `container`, `vdevice_index`, `device_uuid` (legacy: `podnamespace`, `podname`,
//! `ctrname`, `vdeviceid`, `deviceuuid`); `exported_namespace`, `exported_pod`, `exported_container` win when a
//! Prometheus renamed them (as in [`crate::dcgm`]); the host families carry `device_uuid` (`deviceuuid`). The UUID is
//! the physical GPU's NVML UUID, as DCGM's `UUID` label.
//!
//! **GPU time.** Despite its name, the container figure is a percentage, 0..=100 (HAMi's own dashboards say so):
//! HAMi-core, the CUDA interposer inside the container, asks NVML every 120 ms for the per-process utilization
//! samples of the last second (`nvmlDeviceGetProcessUtilization`, each process's `smUtil`: the percent of the
//! sample period its kernels ran on the device) and stores each of its processes' figure; the monitor sums the
//! container's live processes. So it is the container's share of the device's SM time over about the last second
//! before the scrape, a point reading, as `DCGM_FI_DEV_GPU_UTIL` is: it is taken as the window's GPU time, divided
//! by 100 and capped at one device (MPS processes can sum above 100; counted in [`Stats::capped`]). A container
//! on several vGPUs of the same GPU is summed.
//!
//! **Memory**, bytes, is what the container's processes allocated through HAMi-core (contexts, modules, buffers),
//! in MiB here (÷ 2^20, exact).
//!
//! **No zero made up.** A container with memory but no utilization series gives no [`Measured`] (counted in
//! [`Stats::without_utilization`]): the device is then split as DCGM or NVML see it. And HAMi-core samples a
//! container's utilization only when it has a core limit (`nvidia.com/gpucores` between 1 and 100: its watcher
//! thread starts only then; HAMi's default is none), so a container without one reads 0 however busy it is. A
//! GPU whose containers all read 0 while the same exporter reads the device busy (host utilization above 0) is
//! therefore taken as unmeasured, not idle: none of its containers gives a [`Measured`] (counted in
//! [`Stats::busy_devices_read_idle`]). A mix of limited and unlimited containers on one GPU cannot be told from
//! the text: the unlimited ones read 0.

use rustc_hash::FxHashMap;
use std::str::FromStr;

use rust_decimal::prelude::FromPrimitive;
use rust_decimal::Decimal;

use crate::exposition;
use crate::readings::Workload;
use crate::shares::Measured;

pub const CONTAINER_UTIL: &str = "hami_container_device_utilization_ratio";
pub const VGPU_MEMORY_USED: &str = "hami_vgpu_memory_used_bytes";
pub const CONTAINER_MEMORY: &str = "hami_container_device_memory_bytes";
pub const HOST_UTIL: &str = "hami_host_gpu_utilization_ratio";
pub const LEGACY_CONTAINER_UTIL: &str = "Device_utilization_desc_of_container";
pub const LEGACY_VGPU_MEMORY_USED: &str = "vGPU_device_memory_usage_in_bytes";
pub const LEGACY_CONTAINER_MEMORY: &str = "Device_memory_desc_of_container";
pub const LEGACY_HOST_UTIL: &str = "HostCoreUtilization";

/// Bytes in a MiB.
const MIB: Decimal = Decimal::from_parts(1_048_576, 0, 0, false, 0);

/// What one read of the exposition saw.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Non-empty lines read, comments included.
    pub lines: u64,
    /// Lines that could not be parsed at all: skipped.
    pub malformed: u64,
    /// Series of the families read without a device UUID or a pod: skipped.
    pub unidentified: u64,
    /// Values negative, NaN or infinite, or not a number: skipped.
    pub out_of_range: u64,
    /// Containers (per GPU) whose utilization was above one device (100 %): capped at one.
    pub capped: u64,
    /// Containers (per GPU) with memory but no utilization series: no [`Measured`].
    pub without_utilization: u64,
    /// GPUs whose containers all read 0 % while the host read the device busy: no [`Measured`] for them.
    pub busy_devices_read_idle: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    Util,
    /// Memory; `true`: the preferred family (`*_memory_used_bytes`), `false`: the fallback.
    Memory(bool),
    Host,
}

/// Which label names a family carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Names {
    Current,
    Legacy,
}

fn family(name: &str) -> Option<(Family, Names)> {
    Some(match name {
        CONTAINER_UTIL => (Family::Util, Names::Current),
        VGPU_MEMORY_USED => (Family::Memory(true), Names::Current),
        CONTAINER_MEMORY => (Family::Memory(false), Names::Current),
        HOST_UTIL => (Family::Host, Names::Current),
        LEGACY_CONTAINER_UTIL => (Family::Util, Names::Legacy),
        LEGACY_VGPU_MEMORY_USED => (Family::Memory(true), Names::Legacy),
        LEGACY_CONTAINER_MEMORY => (Family::Memory(false), Names::Legacy),
        LEGACY_HOST_UTIL => (Family::Host, Names::Legacy),
        _ => return None,
    })
}

fn non_empty<'a>(line: &'a exposition::Line<'_, '_>, name: &str) -> Option<&'a str> {
    line.label(name).filter(|v| !v.is_empty())
}

/// The device UUID of a series.
fn uuid<'a>(line: &'a exposition::Line<'_, '_>, names: Names) -> Option<&'a str> {
    non_empty(
        line,
        match names {
            Names::Current => "device_uuid",
            Names::Legacy => "deviceuuid",
        },
    )
}

/// The container of a series: `exported_*` first (a Prometheus renamed them), then HAMi's own names.
fn container(line: &exposition::Line<'_, '_>, names: Names) -> Option<(Workload, String)> {
    let (pod, ns, ctr, vdev) = match names {
        Names::Current => match non_empty(line, "exported_pod") {
            Some(p) => (
                p,
                non_empty(line, "exported_namespace"),
                non_empty(line, "exported_container"),
                non_empty(line, "vdevice_index"),
            ),
            None => (
                non_empty(line, "pod")?,
                non_empty(line, "namespace"),
                non_empty(line, "container"),
                non_empty(line, "vdevice_index"),
            ),
        },
        Names::Legacy => (
            non_empty(line, "podname")?,
            non_empty(line, "podnamespace"),
            non_empty(line, "ctrname"),
            non_empty(line, "vdeviceid"),
        ),
    };
    Some((
        Workload {
            pod: pod.to_string(),
            namespace: ns.map(str::to_string),
            container: ctr.map(str::to_string),
        },
        vdev.unwrap_or_default().to_string(),
    ))
}

/// A value as written, exactly; `None` when it is not a finite, non-negative number.
fn value(line: &exposition::Line<'_, '_>) -> Option<Decimal> {
    if !line.value.is_finite() || line.value < 0.0 {
        return None;
    }
    Decimal::from_str(line.value_text)
        .or_else(|_| Decimal::from_scientific(line.value_text))
        .ok()
        .or_else(|| Decimal::from_f64(line.value))
        .map(|d| d.normalize())
}

/// A vGPU of a container: (device UUID, pod, namespace, container, vdevice index).
type VgpuKey = (String, String, Option<String>, Option<String>, String);

/// One container's figures on one vGPU.
#[derive(Debug)]
struct Vgpu {
    uuid: String,
    workload: Workload,
    /// Percent.
    util: Option<Decimal>,
    /// Bytes, from the preferred family.
    memory: Option<Decimal>,
    /// Bytes, from the fallback family.
    memory_fallback: Option<Decimal>,
}

/// Reads a HAMi vGPU monitor's `/metrics` text: one [`Measured`] per (GPU, container) whose utilization HAMi
/// measured, in order of first appearance, and what was skipped. Series that appear under both the current and
/// the legacy names (`--legacy-metrics`) are read once.
pub fn measured_from_text(text: &str) -> (Vec<Measured>, Stats) {
    let mut stats = Stats::default();
    let mut vgpus: Vec<Vgpu> = Vec::new();
    let mut index: FxHashMap<VgpuKey, usize> = FxHashMap::default();
    let mut host: FxHashMap<String, Decimal> = FxHashMap::default();
    let parsed = exposition::parse(text, |line| {
        let Some((fam, names)) = family(line.name) else {
            return;
        };
        let Some(uuid) = uuid(line, names) else {
            stats.unidentified += 1;
            return;
        };
        let Some(v) = value(line) else {
            stats.out_of_range += 1;
            return;
        };
        if fam == Family::Host {
            host.entry(uuid.to_string()).or_insert(v);
            return;
        }
        let Some((workload, vdev)) = container(line, names) else {
            stats.unidentified += 1;
            return;
        };
        let key = (
            uuid.to_string(),
            workload.pod.clone(),
            workload.namespace.clone(),
            workload.container.clone(),
            vdev,
        );
        let i = *index.entry(key).or_insert_with(|| {
            vgpus.push(Vgpu {
                uuid: uuid.to_string(),
                workload,
                util: None,
                memory: None,
                memory_fallback: None,
            });
            vgpus.len() - 1
        });
        let g = &mut vgpus[i];
        // The first value of a family wins (the current and legacy names carry the same figure).
        let slot = match fam {
            Family::Util => &mut g.util,
            Family::Memory(true) => &mut g.memory,
            Family::Memory(false) => &mut g.memory_fallback,
            Family::Host => return,
        };
        slot.get_or_insert(v);
    });
    stats.lines = parsed.lines;
    stats.malformed = parsed.malformed;

    // Per (GPU, container): its vGPUs on that GPU summed.
    let mut out: Vec<(Measured, Option<Decimal>)> = Vec::new();
    for g in vgpus {
        let memory = g
            .memory
            .or(g.memory_fallback)
            .map(|b| (b / MIB).normalize());
        match out
            .iter_mut()
            .find(|(m, _)| m.uuid == g.uuid && m.workload == g.workload)
        {
            Some((m, util)) => {
                *util = util.zip(g.util).map(|(a, b)| a + b);
                m.memory_mib = match (m.memory_mib, memory) {
                    (Some(a), Some(b)) => Some(a + b),
                    (a, b) => a.or(b),
                };
            }
            None => out.push((
                Measured {
                    uuid: g.uuid,
                    workload: g.workload,
                    gpu_time: Decimal::ZERO,
                    memory_mib: memory,
                },
                g.util,
            )),
        }
    }

    // A busy GPU whose containers all read 0: HAMi did not sample them (no core limit).
    let read_idle = |uuid: &str| {
        host.get(uuid).is_some_and(|h| *h > Decimal::ZERO)
            && out
                .iter()
                .filter(|(m, u)| m.uuid == uuid && u.is_some())
                .all(|(_, u)| u.is_some_and(|u| u.is_zero()))
    };
    let mut unmeasured: Vec<String> = Vec::new();
    for (m, u) in &out {
        if u.is_some() && !unmeasured.contains(&m.uuid) && read_idle(&m.uuid) {
            unmeasured.push(m.uuid.clone());
        }
    }
    stats.busy_devices_read_idle = unmeasured.len() as u64;

    let hundred = Decimal::ONE_HUNDRED;
    let measured = out
        .into_iter()
        .filter_map(|(mut m, util)| {
            let Some(pct) = util else {
                stats.without_utilization += 1;
                return None;
            };
            if unmeasured.contains(&m.uuid) {
                return None;
            }
            if pct > hundred {
                stats.capped += 1;
            }
            m.gpu_time = (pct.min(hundred) / hundred).normalize();
            Some(m)
        })
        .collect();
    (measured, stats)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use rust_decimal::Decimal;

    use super::{measured_from_text, Stats};
    use crate::readings::Workload;
    use crate::shares::Measured;

    const CURRENT: &str =
        include_str!("../tests/fixtures/hami/hami_v2.10_vgpu_monitor_a100x4.prom");
    const LEGACY: &str =
        include_str!("../tests/fixtures/hami/hami_v2.8_legacy_vgpu_monitor_a100x4.prom");
    const G0: &str = "GPU-00552014-5c87-89ac-b1a6-7b53aa24b0ec";
    const G1: &str = "GPU-5b3c1a7e-2f4d-4e8b-9c61-0d7f3a2b8e14";
    const G2: &str = "GPU-9e1d6c4b-7a2f-4b3e-8d5c-1f6a0b9c2e73";

    fn d(s: &str) -> Decimal {
        s.parse().unwrap()
    }

    fn w(ns: &str, pod: &str, ctr: &str) -> Workload {
        Workload {
            pod: pod.into(),
            namespace: Some(ns.into()),
            container: Some(ctr.into()),
        }
    }

    fn m(uuid: &str, workload: Workload, gpu_time: &str, mib: &str) -> Measured {
        Measured {
            uuid: uuid.into(),
            workload,
            gpu_time: d(gpu_time),
            memory_mib: Some(d(mib)),
        }
    }

    /// What both fixtures hold: the notebook on a busy GPU reading 0 % is left out.
    fn expected() -> Vec<Measured> {
        vec![
            m(G0, w("team-b", "embed-b-0", "server"), "0.23", "4096"),
            m(G1, w("team-c", "trainer-c-0", "train"), "0.41", "20480"),
            m(G2, w("team-c", "trainer-c-0", "train"), "0.37", "10240"),
            m(G0, w("team-a", "vllm-a-0", "vllm"), "0.62", "14336"),
        ]
    }

    #[test]
    fn two_containers_of_two_namespaces_share_one_gpu_and_one_spans_two_gpus() {
        let (got, stats) = measured_from_text(CURRENT);
        assert_eq!(got, expected());
        assert_eq!(
            stats,
            Stats {
                lines: 47,
                busy_devices_read_idle: 1,
                ..Stats::default()
            }
        );
    }

    #[test]
    fn legacy_names_read_the_same() {
        let (got, stats) = measured_from_text(LEGACY);
        assert_eq!(got, expected());
        assert_eq!(stats.busy_devices_read_idle, 1);
        assert_eq!(
            (stats.malformed, stats.unidentified, stats.out_of_range),
            (0, 0, 0)
        );
    }

    #[test]
    fn both_names_at_once_are_read_once() {
        let (got, _) = measured_from_text(&format!("{CURRENT}{LEGACY}"));
        assert_eq!(got, expected());
    }

    #[test]
    fn missing_utilization_gives_no_measured_never_a_zero() {
        let text = format!(
            "hami_vgpu_memory_used_bytes{{container=\"c\",device_uuid=\"{G0}\",namespace=\"a\",pod=\"p\",vdevice_index=\"0\",zone=\"vGPU\"}} 1.048576e+06\n\
             hami_host_gpu_utilization_ratio{{device_index=\"0\",device_uuid=\"{G0}\",zone=\"vGPU\"}} 40\n\
             hami_container_device_utilization_ratio{{container=\"c\",device_uuid=\"{G0}\",namespace=\"b\",pod=\"q\",vdevice_index=\"0\",zone=\"vGPU\"}} NaN\n"
        );
        let (got, stats) = measured_from_text(&text);
        assert!(got.is_empty(), "{got:?}");
        assert_eq!(stats.without_utilization, 1);
        assert_eq!(stats.out_of_range, 1);
    }

    #[test]
    fn an_idle_gpu_reads_idle_and_an_unknown_host_is_trusted() {
        // Host at 0 %: the containers' 0 % is believed; no host series: likewise.
        let text = format!(
            "hami_container_device_utilization_ratio{{container=\"c\",device_uuid=\"{G0}\",namespace=\"a\",pod=\"p\",vdevice_index=\"0\"}} 0\n\
             hami_host_gpu_utilization_ratio{{device_uuid=\"{G0}\"}} 0\n\
             hami_container_device_utilization_ratio{{container=\"c\",device_uuid=\"{G1}\",namespace=\"a\",pod=\"p\",vdevice_index=\"0\"}} 0\n"
        );
        let (got, stats) = measured_from_text(&text);
        assert_eq!(got.len(), 2);
        assert!(got
            .iter()
            .all(|m| m.gpu_time.is_zero() && m.memory_mib.is_none()));
        assert_eq!(stats.busy_devices_read_idle, 0);
        // A busy GPU where one container reads 0 and another does not: both believed.
        let text = format!(
            "hami_host_gpu_utilization_ratio{{device_uuid=\"{G0}\"}} 50\n\
             hami_container_device_utilization_ratio{{container=\"c\",device_uuid=\"{G0}\",namespace=\"a\",pod=\"p\",vdevice_index=\"0\"}} 0\n\
             hami_container_device_utilization_ratio{{container=\"c\",device_uuid=\"{G0}\",namespace=\"b\",pod=\"q\",vdevice_index=\"0\"}} 30\n"
        );
        let (got, stats) = measured_from_text(&text);
        let times: Vec<Decimal> = got.iter().map(|m| m.gpu_time).collect();
        assert_eq!(times, vec![Decimal::ZERO, d("0.3")]);
        assert_eq!(stats.busy_devices_read_idle, 0);
    }

    #[test]
    fn merged_onto_dcgm_repeated_series_the_shares_are_measured() {
        // DCGM exporter repeats the GPU's series per pod (time-slicing); HAMi says what each used.
        let dcgm_text = format!(
            "DCGM_FI_DEV_POWER_USAGE{{gpu=\"0\",UUID=\"{G0}\",container=\"vllm\",namespace=\"team-a\",pod=\"vllm-a-0\"}} 300\n\
             DCGM_FI_DEV_POWER_USAGE{{gpu=\"0\",UUID=\"{G0}\",container=\"server\",namespace=\"team-b\",pod=\"embed-b-0\"}} 300\n"
        );
        let mut readings = crate::dcgm::from_text(&dcgm_text, eai_engine::Timestamp(0));
        let (measured, _) = measured_from_text(CURRENT);
        crate::shares::merge(&mut readings, &measured);
        let dev = &readings.devices[0];
        let split = crate::shares::split(&dev.sharers.iter().collect::<Vec<_>>());
        assert_eq!(split.method, crate::shares::ShareMethod::Measured);
        assert_eq!(split.shares, vec![d("0.62"), d("0.23")]);
        assert_eq!(split.idle, d("0.15"));
    }

    #[test]
    fn vgpus_of_one_gpu_are_summed_capped_at_one_device() {
        let text = format!(
            "hami_container_device_utilization_ratio{{container=\"c\",device_uuid=\"{G0}\",namespace=\"a\",pod=\"p\",vdevice_index=\"0\"}} 70\n\
             hami_container_device_utilization_ratio{{container=\"c\",device_uuid=\"{G0}\",namespace=\"a\",pod=\"p\",vdevice_index=\"1\"}} 45\n\
             hami_vgpu_memory_used_bytes{{container=\"c\",device_uuid=\"{G0}\",namespace=\"a\",pod=\"p\",vdevice_index=\"1\"}} 2.87244288e+08\n"
        );
        let (got, stats) = measured_from_text(&text);
        assert_eq!(got, vec![m(G0, w("a", "p", "c"), "1", "273.9375")]);
        assert_eq!(stats.capped, 1);
    }

    #[test]
    fn exported_labels_win() {
        let text = format!(
            "hami_container_device_utilization_ratio{{container=\"hami-device-plugin\",device_uuid=\"{G0}\",namespace=\"kube-system\",pod=\"hami-device-plugin-x\",\
             exported_container=\"c\",exported_namespace=\"a\",exported_pod=\"p\",vdevice_index=\"0\"}} 5\n"
        );
        let (got, _) = measured_from_text(&text);
        assert_eq!(got[0].workload, w("a", "p", "c"));
        assert_eq!(got[0].gpu_time, d("0.05"));
    }

    #[test]
    fn garbage_lines_are_skipped_and_counted() {
        let text = format!(
            "hami_container_device_utilization_ratio{{container=\"c\",device_uuid=\"{G0}\",namespace=\"a\",pod=\"p\" 50\n\
             hami_container_device_utilization_ratio{{container=\"c\",device_uuid=\"{G0}\",namespace=\"a\",pod=\"p\"}} fifty\n\
             \u{0}garbage\n\
             hami_container_device_utilization_ratio{{container=\"c\",namespace=\"a\",pod=\"p\"}} 50\n\
             hami_container_device_utilization_ratio{{device_uuid=\"{G0}\",namespace=\"a\"}} 50\n\
             hami_container_device_utilization_ratio{{container=\"c\",device_uuid=\"{G0}\",namespace=\"a\",pod=\"p\"}} -3\n\
             hami_container_device_utilization_ratio{{container=\"c\",device_uuid=\"{G0}\",namespace=\"a\",pod=\"p\"}} +Inf\n\
             some_other_family{{pod=\"p\"}} 1\n\
             hami_container_device_utilization_ratio{{container=\"c\",device_uuid=\"{G0}\",namespace=\"a\",pod=\"p\"}} 12.5\n"
        );
        let (got, stats) = measured_from_text(&text);
        assert_eq!(
            got,
            vec![Measured {
                uuid: G0.into(),
                workload: w("a", "p", "c"),
                gpu_time: d("0.125"),
                memory_mib: None,
            }]
        );
        assert_eq!(stats.malformed, 3);
        assert_eq!(stats.unidentified, 2);
        assert_eq!(stats.out_of_range, 2);
    }
}
