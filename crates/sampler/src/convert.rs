//! Readings -> `eai_client::GpuSample`s: pure (no I/O, no clock; the window is an argument), exact (decimal
//! arithmetic from the values as written), and honest (a device missing its utilization or power is skipped
//! and counted, never sent as zero).
//!
//! - **Units.** Utilization: `DCGM_FI_DEV_GPU_UTIL` / 100, else `DCGM_FI_PROF_GR_ENGINE_ACTIVE` (ratio), 6 places.
//!   Memory: `DCGM_FI_DEV_FB_USED` MiB / 1024 = GB (GiB), exact (at most 10 places). Power: W, 6 places.
//! - **Power over the window.** With `DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION` (mJ since boot), the window's
//!   power is the true average `(E - E_prev) / (t - t_prev)` (mJ/ms = W) between this read and the last one
//!   whose counter moved, if that is at most 4 windows old. A first read, a counter that went back (a reset,
//!   a reboot), one that did not move (the exporter has not refreshed yet: its default collect interval is 30 s)
//!   or a gap fall back to the `DCGM_FI_DEV_POWER_USAGE` gauge.
//! - **MIG.** Each instance is its own GPU id `<UUID>/mig-<profile>-<id>` with `gpu_fraction` from its profile
//!   ([`crate::mig`]). Its utilization is its own `GR_ENGINE_ACTIVE`; its memory its own `FB_USED`, else the
//!   parent's times its fraction. Power and energy are device-level (and repeated on MIG rows by some exporter
//!   versions): the parent's power is read once per GPU and **split between the instances by fraction**, so the
//!   instances never add up to more than the GPU drew. Slices no instance holds are reported as
//!   `<UUID>/mig-free` under the idle deployment (their fraction, utilization 0, the rest of the power and
//!   memory), so that a MIG GPU adds up to exactly one GPU.
//! - **Memory missing** (an exporter whose counter list lacks `FB_USED`): sent as 0 and counted in
//!   `missing_memory`; memory is reported, never priced.

use std::collections::HashMap;
use std::sync::Arc;

use eai_client::GpuSample;
use eai_engine::Timestamp;
use rust_decimal::{Decimal, RoundingStrategy};

use crate::attribution::{Attribution, Placement, PlacementKind, NO_POD};
use crate::mig;
use crate::names::{fit_name, MAX_NAME};
use crate::readings::{DeviceReading, Readings, Sharer, Workload};
use crate::shares::{self, ShareMethod};

/// A sample window `[end - ms, end)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub end: Timestamp,
    pub ms: i64,
}

impl Window {
    /// The window of `ms` that ends at the last boundary at or before `now` (aligned to the epoch, so to UTC).
    pub fn ending_at_or_before(now: Timestamp, ms: i64) -> Window {
        Window {
            end: now.floor_to(ms),
            ms,
        }
    }

    /// `window_seconds` as the API takes it: `15`, `0.5`.
    pub fn seconds_text(&self) -> String {
        Decimal::new(self.ms, 3).normalize().to_string()
    }
}

/// What a conversion skipped or decided, for the metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Samples of pods no rule maps (shared, derived deployment id).
    pub unmapped_pods: u64,
    /// Devices skipped: no utilization or no power this window.
    pub incomplete: u64,
    /// Samples sent with memory 0 because the source had no `FB_USED`.
    pub missing_memory: u64,
    /// MIG instances skipped: profile name unreadable.
    pub unknown_mig_profiles: u64,
    /// Devices whose power came from the energy counter (the window's true average).
    pub power_from_energy: u64,
    /// Devices whose power came from the `POWER_USAGE` gauge.
    pub power_from_gauge: u64,
    /// Names (node, model, namespace, pod, deployment) cut to the control plane's 253 characters, or blank and
    /// replaced: as read they would have made the control plane refuse the window's whole batch.
    pub names_fitted: u64,
    /// Devices skipped: a GPU uuid the control plane cannot take (blank, or over 253 characters).
    pub bad_uuids: u64,
    /// Devices (GPUs or MIG instances) that two or more pods used in the window: split between them.
    pub shared_devices: u64,
    /// Of those, the ones split equally (no per-pod GPU time): estimates, reported.
    pub equal_shares: u64,
    /// Pods on a shared device that measured no GPU time in the window (no sample: they used nothing).
    pub sharers_without_time: u64,
}

impl Counts {
    pub fn add(&mut self, o: &Counts) {
        self.unmapped_pods += o.unmapped_pods;
        self.incomplete += o.incomplete;
        self.missing_memory += o.missing_memory;
        self.unknown_mig_profiles += o.unknown_mig_profiles;
        self.power_from_energy += o.power_from_energy;
        self.power_from_gauge += o.power_from_gauge;
        self.names_fitted += o.names_fitted;
        self.bad_uuids += o.bad_uuids;
        self.shared_devices += o.shared_devices;
        self.equal_shares += o.equal_shares;
        self.sharers_without_time += o.sharers_without_time;
    }
}

/// The samples of one window.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Conversion {
    pub samples: Vec<GpuSample>,
    pub counts: Counts,
}

#[derive(Debug, Clone, Copy)]
struct EnergyMark {
    mj: Decimal,
    at: Timestamp,
}

/// Turns readings into samples; remembers the last energy counter of each GPU (its only state that changes
/// a result), and each device's last placement (a cache: the same labels place the same way).
#[derive(Debug, Clone)]
pub struct Converter {
    attribution: Attribution,
    node: Option<String>,
    energy: HashMap<String, EnergyMark>,
    placed: HashMap<String, Placed>,
}

/// A device's placement, and what it was worked out from.
#[derive(Debug, Clone)]
struct Placed {
    labels: Arc<[(String, String)]>,
    workload: Option<Workload>,
    placement: Placement,
}

fn round(d: Decimal, dp: u32) -> Decimal {
    d.round_dp_with_strategy(dp, RoundingStrategy::MidpointAwayFromZero)
        .normalize()
}

fn text(d: Decimal) -> String {
    d.normalize().to_string()
}

const MIB_PER_GIB: Decimal = Decimal::from_parts(1024, 0, 0, false, 0);
const HUNDRED: Decimal = Decimal::from_parts(100, 0, 0, false, 0);

impl Converter {
    /// `node`: the node name of every sample (`--node`); `None`: each device's `Hostname` label.
    pub fn new(attribution: Attribution, node: Option<String>) -> Self {
        Converter {
            attribution,
            node,
            energy: HashMap::new(),
            placed: HashMap::new(),
        }
    }

    pub fn attribution(&self) -> &Attribution {
        &self.attribution
    }

    /// The samples of `window` from `readings` (read at the window's end).
    pub fn convert(&mut self, readings: &Readings, window: Window) -> Conversion {
        let mut out = Conversion::default();
        let texts = WindowText {
            window,
            seconds: window.seconds_text(),
            stamp: window.end.to_string(),
        };
        // GPUs in order of appearance: the whole-GPU device and its MIG instances.
        let mut order: Vec<&str> = Vec::new();
        let mut groups: HashMap<&str, (Option<&DeviceReading>, Vec<&DeviceReading>)> =
            HashMap::new();
        for d in &readings.devices {
            let g = groups.entry(d.uuid.as_str()).or_insert_with(|| {
                order.push(d.uuid.as_str());
                (None, Vec::new())
            });
            match d.mig {
                None => {
                    g.0.get_or_insert(d);
                }
                Some(_) => g.1.push(d),
            }
        }
        for uuid in order {
            let Some((parent, children)) = groups.get(uuid) else {
                continue;
            };
            self.gpu(uuid, *parent, children, readings.at, &texts, &mut out);
        }
        out
    }

    fn gpu(
        &mut self,
        uuid: &str,
        parent: Option<&DeviceReading>,
        children: &[&DeviceReading],
        at: Timestamp,
        texts: &WindowText,
        out: &mut Conversion,
    ) {
        let window = texts.window;
        let all = || parent.into_iter().chain(children.iter().copied());
        // Device-level values: the parent's, else the first MIG row that repeats them.
        let gauge = all().find_map(|d| d.power_w);
        let energy = all().find_map(|d| d.energy_mj);
        let model = all().find_map(|d| d.model.clone());
        let host = all().find_map(|d| d.host.clone());
        let power = self.power(uuid, energy, gauge, at, window, &mut out.counts);
        let ctx = Ctx {
            node: self
                .node
                .clone()
                .or(host)
                .unwrap_or_else(|| "unknown".to_string()),
            model: model.unwrap_or_else(|| self.attribution.default_model.clone()),
            seconds: &texts.seconds,
            stamp: &texts.stamp,
        };
        if children.is_empty() {
            let Some(d) = parent else { return };
            let util = utilization(d);
            let (Some(util), Some(power)) = (util, power) else {
                out.counts.incomplete += 1;
                return;
            };
            let slot = Slot {
                id: uuid.to_string(),
                util,
                memory_mib: d.fb_used_mib,
                power,
                fraction: None,
            };
            self.device(&ctx, slot, d, out);
            return;
        }
        // MIG: split the device's power (and, for instances without their own, its memory) by fraction.
        let parent_mem = parent.and_then(|p| p.fb_used_mib);
        let total = children
            .iter()
            .find_map(|c| c.mig.as_ref().and_then(|m| m.slices).map(|s| s.1))
            .unwrap_or_else(|| {
                let profile = children
                    .iter()
                    .find_map(|c| c.mig.as_ref().map(|m| m.profile.as_str()))
                    .unwrap_or_default();
                mig::gpu_slices(
                    Some(ctx.model.as_str()).filter(|m| *m != self.attribution.default_model),
                    profile,
                    &self.attribution.mig_slices,
                )
            });
        let mut used = 0u32;
        let mut readable = true;
        let mut memory_given = Decimal::ZERO;
        for c in children {
            let Some(m) = &c.mig else { continue };
            let slices = m
                .slices
                .map(|s| s.0)
                .or_else(|| mig::profile_slices(&m.profile));
            let Some((slices, fraction)) =
                slices.and_then(|s| mig::fraction(s, total).map(|f| (s, f)))
            else {
                out.counts.unknown_mig_profiles += 1;
                readable = false;
                continue;
            };
            used += slices;
            let share = Decimal::from(slices) / Decimal::from(total);
            let memory_mib = c.fb_used_mib.or_else(|| parent_mem.map(|p| p * share));
            if let Some(m) = memory_mib {
                memory_given += m;
            }
            let (Some(util), Some(power)) = (utilization(c), power) else {
                out.counts.incomplete += 1;
                continue;
            };
            let slot = Slot {
                id: format!("{uuid}/mig-{}-{}", m.profile, m.instance_id),
                util,
                memory_mib,
                power: round(power * share, 6),
                fraction: Some(fraction),
            };
            self.device(&ctx, slot, c, out);
        }
        if readable && used < total {
            let Some(power) = power else { return };
            let free = total - used;
            let share = Decimal::from(free) / Decimal::from(total);
            let memory = parent_mem
                .map(|p| (p - memory_given).max(Decimal::ZERO))
                .unwrap_or(Decimal::ZERO);
            let fraction = mig::fraction(free, total);
            out.push(
                &ctx,
                format!("{uuid}/mig-free"),
                self.attribution.idle(),
                Part {
                    util: Decimal::ZERO,
                    memory_gb: Some(round(memory / MIB_PER_GIB, 10)),
                    power: round(power * share, 6),
                    fraction,
                    method: ShareMethod::Mig,
                },
            );
        }
    }

    /// The samples of one device (a GPU, or a MIG instance: `slot.fraction`): one, placed by its pod; or, when
    /// two or more pods used it this window, one per pod with its share ([`shares::split`]) and, for measured
    /// shares, the share no pod used under the idle deployment. The pod first in (namespace, pod, container)
    /// order that has a share keeps the device's own id, so that the device's series goes on unbroken while it
    /// is shared; the others are `<id>/shared/<namespace>/<pod>[/<container>]`, the idle share
    /// `<id>/shared-idle`. Shares are apportioned from the device's own fraction, power and memory, so the
    /// parts add up to exactly what the device was and reported.
    fn device(&mut self, ctx: &Ctx<'_>, slot: Slot, d: &DeviceReading, out: &mut Conversion) {
        let solo = if slot.fraction.is_some() {
            ShareMethod::Mig
        } else {
            ShareMethod::Exclusive
        };
        let mut pods: Vec<&Sharer> = d
            .sharers
            .iter()
            .filter(|s| !self.attribution.is_exporter(&s.workload))
            .collect();
        if pods.len() < 2 {
            let placement = self.place(&slot.id, d.workload.as_ref(), &d.labels);
            let part = Part {
                util: slot.util,
                memory_gb: slot.memory_mib.map(|v| round(v / MIB_PER_GIB, 10)),
                power: slot.power,
                fraction: slot.fraction,
                method: solo,
            };
            out.push(ctx, slot.id, placement, part);
            return;
        }
        fn order(s: &Sharer) -> (Option<&str>, &str, Option<&str>) {
            let w = &s.workload;
            (
                w.namespace.as_deref(),
                w.pod.as_str(),
                w.container.as_deref(),
            )
        }
        pods.sort_by(|a, b| order(a).cmp(&order(b)));
        let split = shares::split(&pods);
        out.counts.shared_devices += 1;
        if split.method == ShareMethod::Equal {
            out.counts.equal_shares += 1;
        }
        let weights = split.weights();
        let fractions = shares::apportion_by(slot.fraction.unwrap_or(Decimal::ONE), &weights);
        let powers = shares::apportion_by(slot.power, &weights);
        // Measured memory: each pod's own (a pod whose processes reported none holds none), when the reader
        // reported any; else the device's, apportioned by the shares.
        let measured_memory: Option<Vec<Decimal>> = (split.method == ShareMethod::Measured
            && pods.iter().any(|p| p.memory_mib.is_some()))
        .then(|| {
            pods.iter()
                .map(|p| p.memory_mib.unwrap_or_default())
                .collect()
        });
        let memories: Option<Vec<Decimal>> = match (measured_memory, slot.memory_mib) {
            (Some(mut per_pod), device) => {
                let used: Decimal = per_pod.iter().sum();
                per_pod.push(device.map_or(Decimal::ZERO, |m| (m - used).max(Decimal::ZERO)));
                Some(per_pod)
            }
            (None, Some(m)) => Some(shares::apportion_by(m, &weights)),
            (None, None) => None,
        };
        let memory_gb = |i: usize| memories.as_ref().map(|m| round(m[i] / MIB_PER_GIB, 10));
        // The device's own id goes to the first pod with a share, else to the idle share.
        let keeper = fractions.iter().position(|f| !f.is_zero());
        let n = pods.len();
        for (i, p) in pods.iter().enumerate() {
            if fractions[i].is_zero() {
                out.counts.sharers_without_time += 1;
                continue;
            }
            let id = if keeper == Some(i) {
                slot.id.clone()
            } else {
                let w = &p.workload;
                let mut id = format!(
                    "{}/shared/{}/{}",
                    slot.id,
                    w.namespace.as_deref().unwrap_or(NO_POD),
                    w.pod
                );
                if let Some(c) = &w.container {
                    id.push('/');
                    id.push_str(c);
                }
                id
            };
            let placement = self.place(&id, Some(&p.workload), &p.labels);
            let part = Part {
                // A measured share is time the pod kept the device busy.
                util: if split.method == ShareMethod::Measured {
                    Decimal::ONE
                } else {
                    slot.util
                },
                memory_gb: memory_gb(i),
                power: powers[i],
                fraction: Some(fractions[i]),
                method: split.method,
            };
            out.push(ctx, id, placement, part);
        }
        if !fractions[n].is_zero() {
            let id = if keeper == Some(n) {
                slot.id.clone()
            } else {
                format!("{}/shared-idle", slot.id)
            };
            let part = Part {
                util: Decimal::ZERO,
                memory_gb: memory_gb(n),
                power: powers[n],
                fraction: Some(fractions[n]),
                method: split.method,
            };
            out.push(ctx, id, self.attribution.idle(), part);
        }
    }

    /// Where the time of device (or share) `id` goes: [`Attribution::place_workload`], worked out again only
    /// when its labels or workload changed since its last window.
    fn place(
        &mut self,
        id: &str,
        workload: Option<&Workload>,
        labels: &Arc<[(String, String)]>,
    ) -> Placement {
        if let Some(p) = self.placed.get_mut(id) {
            let same_labels = Arc::ptr_eq(&p.labels, labels) || p.labels == *labels;
            if same_labels && p.workload.as_ref() == workload {
                // The next window's labels are likely this very list: compare pointers then.
                p.labels = labels.clone();
                return p.placement.clone();
            }
        }
        let placement = self.attribution.place_workload(workload, labels);
        self.placed.insert(
            id.to_string(),
            Placed {
                labels: labels.clone(),
                workload: workload.cloned(),
                placement: placement.clone(),
            },
        );
        placement
    }

    /// The window's power: the energy counter's average when it can be trusted, else the gauge.
    fn power(
        &mut self,
        uuid: &str,
        energy: Option<Decimal>,
        gauge: Option<Decimal>,
        at: Timestamp,
        window: Window,
        counts: &mut Counts,
    ) -> Option<Decimal> {
        if let Some(e) = energy {
            let mark = EnergyMark { mj: e, at };
            match self.energy.get_mut(uuid) {
                Some(p) if e == p.mj => {} // not refreshed yet: keep the mark, use the gauge
                Some(p) if e > p.mj && at > p.at && at.0 - p.at.0 <= 4 * window.ms => {
                    let prev = std::mem::replace(p, mark);
                    let w = (e - prev.mj) / Decimal::from(at.0 - prev.at.0);
                    if w <= Decimal::from(1_000_000) {
                        counts.power_from_energy += 1;
                        return Some(round(w, 6));
                    }
                }
                Some(p) if at <= p.at => {} // an older window read again: leave the mark
                Some(p) => *p = mark,
                None => {
                    self.energy.insert(uuid.to_string(), mark);
                }
            }
        }
        let g = gauge.map(|g| round(g, 6));
        if g.is_some() {
            counts.power_from_gauge += 1;
        }
        g
    }
}

/// A device as read: its id, figures and share of its GPU (MIG), before it is split between pods.
struct Slot {
    id: String,
    util: Decimal,
    memory_mib: Option<Decimal>,
    power: Decimal,
    fraction: Option<Decimal>,
}

/// The figures of one sample.
struct Part {
    util: Decimal,
    memory_gb: Option<Decimal>,
    power: Decimal,
    fraction: Option<Decimal>,
    method: ShareMethod,
}

/// A window, and its length and end as sent (the same for each of its samples).
struct WindowText {
    window: Window,
    seconds: String,
    stamp: String,
}

struct Ctx<'a> {
    node: String,
    model: String,
    /// The window's length and end, as sent.
    seconds: &'a str,
    stamp: &'a str,
}

fn utilization(d: &DeviceReading) -> Option<Decimal> {
    d.gpu_util_pct
        .map(|p| round(p / HUNDRED, 6))
        .or_else(|| d.engine_active.map(|r| round(r, 6)))
}

impl Conversion {
    fn push(&mut self, ctx: &Ctx<'_>, gpu_uuid: String, placement: Placement, part: Part) {
        let Part {
            util,
            memory_gb,
            power,
            fraction,
            method,
        } = part;
        if placement.kind == PlacementKind::Unmapped {
            self.counts.unmapped_pods += 1;
        }
        if gpu_uuid.trim().is_empty() || gpu_uuid.chars().count() > MAX_NAME {
            self.counts.bad_uuids += 1;
            return;
        }
        // A name that fits is moved (or copied once), not made again.
        let mut fit = |s: std::borrow::Cow<'_, str>, blank: &str| -> String {
            let fitted = fit_name(&s, blank);
            if *fitted == *s {
                return s.into_owned();
            }
            self.counts.names_fitted += 1;
            fitted.into_owned()
        };
        let node = fit(ctx.node.as_str().into(), "unknown");
        let model = fit(ctx.model.as_str().into(), "unknown");
        let namespace = fit(placement.namespace.into(), "-");
        let pod = fit(placement.pod.into(), "-");
        let deployment_id = fit(placement.deployment_id.into(), "unknown");
        if memory_gb.is_none() {
            self.counts.missing_memory += 1;
        }
        self.samples.push(GpuSample {
            node,
            gpu_uuid,
            model,
            namespace,
            pod,
            tenant_id: placement.tenant_id,
            deployment_id,
            window_seconds: ctx.seconds.to_string(),
            utilization: text(util),
            memory_used_gb: text(memory_gb.unwrap_or(Decimal::ZERO)),
            power_w: text(power),
            timestamp: Some(ctx.stamp.to_string()),
            storage_gb: None,
            gpu_fraction: fraction.filter(|f| *f != Decimal::ONE).map(text),
            share_method: (method != ShareMethod::Exclusive).then(|| method.as_str().to_string()),
        });
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use eai_engine::Timestamp;
    use rust_decimal::Decimal;

    use super::{Conversion, Converter, Window};
    use crate::attribution::Attribution;
    use crate::readings::{DeviceReading, Readings};

    const W: i64 = 15_000;

    fn dev(energy: Option<i64>, power: &str) -> DeviceReading {
        DeviceReading {
            uuid: "GPU-1".into(),
            gpu_util_pct: Some(Decimal::from(50)),
            fb_used_mib: Some(Decimal::from(74_166)),
            power_w: Some(power.parse().unwrap()),
            energy_mj: energy.map(Decimal::from),
            ..DeviceReading::default()
        }
    }

    fn at(c: &mut Converter, t: i64, d: DeviceReading) -> Conversion {
        let r = Readings {
            at: Timestamp(t),
            devices: vec![d],
            ..Readings::default()
        };
        c.convert(
            &r,
            Window {
                end: Timestamp(t),
                ms: W,
            },
        )
    }

    #[test]
    fn units_are_exact() {
        let mut c = Converter::new(Attribution::default(), Some("n1".into()));
        let s = &at(&mut c, W, dev(None, "113.611000")).samples[0];
        assert_eq!(s.utilization, "0.5");
        assert_eq!(s.memory_used_gb, "72.427734375");
        assert_eq!(s.power_w, "113.611");
        assert_eq!(s.window_seconds, "15");
        assert_eq!(s.timestamp.as_deref(), Some("1970-01-01T00:00:15Z"));
        assert_eq!(s.node, "n1");
        assert_eq!(s.model, "unknown");
        assert_eq!(s.gpu_fraction, None);
    }

    #[test]
    fn energy_counter_gives_the_window_average_and_survives_resets_and_stale_reads() {
        let mut c = Converter::new(Attribution::default(), None);
        let p = |c: &mut Converter, t: i64, e: i64| {
            at(c, t, dev(Some(e), "999")).samples[0].power_w.clone()
        };
        assert_eq!(p(&mut c, W, 1_000_000), "999", "first read: the gauge");
        assert_eq!(
            p(&mut c, 2 * W, 1_000_000 + 6_000_000),
            "400",
            "6,000 J over 15 s"
        );
        assert_eq!(
            p(&mut c, 3 * W, 1_000_000 + 6_000_000),
            "999",
            "not refreshed: the gauge"
        );
        assert_eq!(
            p(&mut c, 4 * W, 1_000_000 + 6_000_000 + 9_000_000),
            "300",
            "9,000 J over 30 s"
        );
        assert_eq!(p(&mut c, 5 * W, 10), "999", "counter reset: the gauge");
        assert_eq!(p(&mut c, 6 * W, 10 + 1_500_000), "100", "after the reset");
        assert_eq!(
            p(&mut c, 20 * W, 10 + 3_000_000),
            "999",
            "a long gap: the gauge"
        );
    }

    /// Found by fuzzing: a model name past 253 characters made a sample the control plane refuses, and with it
    /// the whole window's batch (every GPU of the node). Names are cut to fit, blank ones replaced, and a device
    /// whose uuid cannot be taken is skipped; each is counted.
    #[test]
    fn names_the_control_plane_cannot_take_are_fitted_and_bad_uuids_skipped() {
        let mut c = Converter::new(Attribution::default(), Some(" ".into()));
        let mut d = dev(None, "100");
        d.model = Some(format!("N{}VIDIA H100", "\0".repeat(300)));
        let out = at(&mut c, W, d);
        let s = &out.samples[0];
        assert_eq!(s.model.len(), 253);
        assert_eq!(s.node, "unknown");
        assert_eq!(out.counts.names_fitted, 2);
        let loose: eai_engine::wire::Loose =
            serde_json::from_value(serde_json::to_value(s).unwrap()).unwrap();
        assert!(eai_engine::wire::parse_sample(&loose, Timestamp(W + 60_000)).is_ok());
        for uuid in [" ".to_string(), "G".repeat(254)] {
            let mut d = dev(None, "100");
            d.uuid = uuid;
            let out = at(&mut c, W, d);
            assert!(out.samples.is_empty());
            assert_eq!(out.counts.bad_uuids, 1);
        }
    }

    #[test]
    fn a_device_without_utilization_or_power_is_skipped_not_zeroed() {
        let mut c = Converter::new(Attribution::default(), None);
        let mut d = dev(None, "1");
        d.gpu_util_pct = None;
        let out = at(&mut c, W, d);
        assert!(out.samples.is_empty());
        assert_eq!(out.counts.incomplete, 1);
        let mut d = dev(None, "1");
        d.power_w = None;
        assert_eq!(at(&mut c, W, d).counts.incomplete, 1);
        let mut d = dev(None, "1");
        d.fb_used_mib = None;
        let out = at(&mut c, W, d);
        assert_eq!(
            (
                out.samples[0].memory_used_gb.as_str(),
                out.counts.missing_memory
            ),
            ("0", 1)
        );
    }

    #[test]
    fn window_alignment() {
        let w = Window::ending_at_or_before(Timestamp(1_700_000_007_123), 15_000);
        assert_eq!(w.end.0 % 15_000, 0);
        assert!(w.end.0 <= 1_700_000_007_123 && 1_700_000_007_123 - w.end.0 < 15_000);
        assert_eq!(
            Window {
                end: Timestamp(0),
                ms: 500
            }
            .seconds_text(),
            "0.5"
        );
        assert_eq!(
            Window {
                end: Timestamp(0),
                ms: 60_000
            }
            .seconds_text(),
            "60"
        );
    }

    mod shared {
        use std::sync::Arc;

        use proptest::prelude::{any, prop, prop_assert, prop_assert_eq, proptest};
        use rust_decimal::Decimal;

        use super::{at, dev, Converter, W};
        use crate::attribution::Attribution;
        use crate::readings::{Sharer, Workload};

        fn sharer(i: usize, t: Option<u32>, mib: Option<u32>) -> Sharer {
            Sharer {
                workload: Workload {
                    pod: format!("pod-{i}"),
                    namespace: Some(format!("ns-{}", i % 2)),
                    container: None,
                },
                labels: Arc::from(Vec::new()),
                gpu_time: t.map(|t| Decimal::new(t.into(), 6)),
                memory_mib: mib.map(Decimal::from),
            }
        }

        proptest! {
            /// Whatever the pods and their measurements: a shared GPU's samples add up to exactly one GPU and
            /// to exactly the power it drew, none is over one GPU, every pod with a share has a sample, and
            /// GPU-seconds are conserved (sum of fractions x window = the window).
            #[test]
            fn a_shared_gpu_adds_up_to_one_gpu_and_its_power(
                pods in prop::collection::vec(
                    (prop::option::weighted(0.7, 0u32..=1_100_000), prop::option::of(0u32..40_000)),
                    2..7,
                ),
                power_mw in 0u32..700_000,
                mib in 0u32..80_000,
                mig in any::<bool>(),
            ) {
                let sharers: Vec<Sharer> = pods.iter().enumerate().map(|(i, (t, m))| sharer(i, *t, *m)).collect();
                let mut d = dev(None, &Decimal::new(power_mw.into(), 3).to_string());
                d.fb_used_mib = Some(Decimal::from(mib));
                d.workload = Some(sharers[0].workload.clone());
                d.sharers = sharers;
                if mig {
                    d.mig = Some(crate::readings::MigInstance {
                        profile: "7g.80gb".into(),
                        instance_id: "0".into(),
                        slices: Some((7, 7)),
                    });
                }
                let mut c = Converter::new(Attribution::default(), None);
                let out = at(&mut c, W, d);
                let dec = |s: &str| s.parse::<Decimal>().unwrap();
                let fractions: Vec<Decimal> = out.samples.iter()
                    .map(|s| s.gpu_fraction.as_deref().map_or(Decimal::ONE, dec))
                    .collect();
                prop_assert_eq!(fractions.iter().sum::<Decimal>(), Decimal::ONE, "{:?}", out.samples);
                prop_assert!(fractions.iter().all(|f| *f > Decimal::ZERO && *f <= Decimal::ONE));
                let power: Decimal = out.samples.iter().map(|s| dec(&s.power_w)).sum();
                prop_assert_eq!(power, Decimal::new(power_mw.into(), 3).round_dp(6));
                let measured = pods.iter().all(|(t, _)| t.is_some());
                let with_share = if measured { pods.iter().filter(|(t, _)| t.is_some_and(|t| t > 0)).count() } else { pods.len() };
                let pod_samples = out.samples.iter().filter(|s| s.deployment_id != "idle").count();
                prop_assert_eq!(pod_samples, with_share);
                let ids: std::collections::HashSet<&str> = out.samples.iter().map(|s| s.gpu_uuid.as_str()).collect();
                prop_assert_eq!(ids.len(), out.samples.len(), "one id per sample");
                let own = if mig { "GPU-1/mig-7g.80gb-0" } else { "GPU-1" };
                prop_assert!(ids.contains(own), "the device's own id goes on: {:?}", ids);
            }
        }
    }
}
