//! Prices and the sums they apply to: the cost of quantities under a policy over one common denominator, the
//! fixed-point accumulator of quantities ([`crate::fixed`], 10^-15) and the priced parts of a settlement.

use rust_decimal::Decimal;

use crate::decimal_ops;
use crate::domain::{Policy, TenantId};
use crate::fixed;
use crate::rollup::{Quantities, CELL_DP};

/// The cost of quantities under a policy, exact:
/// GPU time with overhead + energy with PUE + storage GB-months (a month is 30 days).
///
/// That is `gpu_hourly_cost x gpu_seconds/3600 x (1 + overhead/100)`, plus `energy_ws/3.6e6 x pue x kwh_price`,
/// plus `storage_gb_seconds/2_592_000 x gb_month_price`, computed over the common denominator 64,800,000 so
/// that the only inexact step is one final division.
pub fn price(policy: &Policy, q: &Quantities) -> Decimal {
    Rates::of(policy).price(q)
}

/// A policy's prices over the common denominator of [`price`].
#[derive(Debug, Clone, Copy)]
pub(super) struct Rates {
    pub(super) gpu: Decimal,
    pub(super) energy: Decimal,
    pub(super) storage: Decimal,
}

impl Rates {
    pub(super) const DENOMINATOR: i64 = 64_800_000;

    pub(super) fn of(policy: &Policy) -> Self {
        let s = &policy.spec;
        Rates {
            // 64.8e6 / 360,000 = 180 (GPU-seconds x hourly x (100 + overhead%) / 360,000)
            gpu: s.gpu_hourly_cost.get()
                * (Decimal::ONE_HUNDRED + s.overhead_pct.get())
                * Decimal::from(180),
            // 64.8e6 / 3.6e6 = 18 (watt-seconds -> kWh)
            energy: s.pue.get() * s.energy_kwh_price.get() * Decimal::from(18),
            // 64.8e6 / 2,592,000 = 25 (GB-seconds -> GB-months of 30 days)
            storage: s.storage_gb_month_price.get() * Decimal::from(25),
        }
    }

    pub(super) fn price(&self, q: &Quantities) -> Decimal {
        self.price_of(q.gpu_seconds, q.energy_ws, q.storage_gb_seconds)
    }

    /// [`Rates::price`] of the three quantities it reads.
    pub(super) fn price_of(
        &self,
        gpu_seconds: Decimal,
        energy_ws: Decimal,
        storage_gb_seconds: Decimal,
    ) -> Decimal {
        let mut n = self.gpu * gpu_seconds;
        if !self.energy.is_zero() {
            n += self.energy * energy_ws;
        }
        if !self.storage.is_zero() {
            n += self.storage * storage_gb_seconds;
        }
        n / Decimal::from(Self::DENOMINATOR)
    }
}

/// Fixed-point accumulator of [`Quantities`]: every field in units of 10^-15 ([`CELL_DP`] places), so that the
/// hot loop adds integers. Exact: cells never carry more than 15 places.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Acc {
    pub(super) gs: i128,
    pub(super) busy: i128,
    pub(super) est: i128,
    pub(super) mem: i128,
    pub(super) ews: i128,
    pub(super) storage: i128,
}

/// A quantity in the accumulator's units.
#[inline]
pub(super) fn to_fixed(d: Decimal) -> i128 {
    fixed::to_fixed_rounded(d, CELL_DP)
}

/// A sum of the accumulator back as a decimal.
#[inline]
pub(super) fn from_fixed(v: i128) -> Decimal {
    fixed::from_fixed_lossy(v, CELL_DP)
}

impl Acc {
    #[inline]
    pub(super) fn add(&mut self, q: &Quantities) {
        self.gs += to_fixed(q.gpu_seconds);
        self.busy += to_fixed(q.busy_gpu_seconds);
        self.est += to_fixed(q.estimated_gpu_seconds);
        self.mem += to_fixed(q.memory_gb_seconds);
        self.ews += to_fixed(q.energy_ws);
        self.storage += to_fixed(q.storage_gb_seconds);
    }

    pub(super) fn merge(&mut self, o: &Acc) {
        self.gs += o.gs;
        self.busy += o.busy;
        self.est += o.est;
        self.mem += o.mem;
        self.ews += o.ews;
        self.storage += o.storage;
    }

    /// The priced part of these sums: the cost [`Rates::price`] gives [`Acc::quantities`] and the quantities an
    /// item shows, converting only the four quantities these read.
    pub(super) fn priced(&self, rates: &Rates) -> Part {
        let (gpu_seconds, energy_ws) = (from_fixed(self.gs), from_fixed(self.ews));
        Part {
            cost: rates.price_of(gpu_seconds, energy_ws, from_fixed(self.storage)),
            gpu_seconds,
            memory_gb_seconds: from_fixed(self.mem),
            energy_ws,
        }
    }

    pub(super) fn quantities(&self) -> Quantities {
        Quantities {
            gpu_seconds: from_fixed(self.gs),
            busy_gpu_seconds: from_fixed(self.busy),
            estimated_gpu_seconds: from_fixed(self.est),
            memory_gb_seconds: from_fixed(self.mem),
            energy_ws: from_fixed(self.ews),
            storage_gb_seconds: from_fixed(self.storage),
        }
    }
}

/// An exact amount of money and the quantities an item shows.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Part {
    pub(super) cost: Decimal,
    pub(super) gpu_seconds: Decimal,
    pub(super) memory_gb_seconds: Decimal,
    pub(super) energy_ws: Decimal,
}

/// Adds to the part of `key`, in a short list (a deployment has few tenants and policies).
pub(super) fn add_part(
    parts: &mut Vec<((TenantId, usize), Part)>,
    key: (TenantId, usize),
    part: &Part,
) {
    match parts.iter_mut().find(|(k, _)| *k == key) {
        Some((_, p)) => p.add(part),
        None => parts.push((key, *part)),
    }
}

impl Part {
    // Parts are split by 28-digit fractions and summed over the period: nearly every operation here rounds, so
    // they go through `decimal_ops` (the same results as `Decimal`'s operators, faster when rounding).

    pub(super) fn add(&mut self, o: &Part) {
        self.cost = decimal_ops::add(self.cost, o.cost);
        self.gpu_seconds = decimal_ops::add(self.gpu_seconds, o.gpu_seconds);
        self.memory_gb_seconds = decimal_ops::add(self.memory_gb_seconds, o.memory_gb_seconds);
        self.energy_ws = decimal_ops::add(self.energy_ws, o.energy_ws);
    }

    pub(super) fn sub(&mut self, o: &Part) {
        self.cost = decimal_ops::sub(self.cost, o.cost);
        self.gpu_seconds = decimal_ops::sub(self.gpu_seconds, o.gpu_seconds);
        self.memory_gb_seconds = decimal_ops::sub(self.memory_gb_seconds, o.memory_gb_seconds);
        self.energy_ws = decimal_ops::sub(self.energy_ws, o.energy_ws);
    }

    /// This part times `f`.
    pub(super) fn times(&self, f: Decimal) -> Part {
        Part {
            cost: decimal_ops::mul(self.cost, f),
            gpu_seconds: decimal_ops::mul(self.gpu_seconds, f),
            memory_gb_seconds: decimal_ops::mul(self.memory_gb_seconds, f),
            energy_ws: decimal_ops::mul(self.energy_ws, f),
        }
    }
}
