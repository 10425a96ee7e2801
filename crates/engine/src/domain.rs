//! Domain types: what a GPU sample, a usage event and an allocation policy are once they have been parsed.
//! Code past the edge cannot hold an invalid PUE, a negative price or a utilization above 1.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use rust_decimal::Decimal;
use uuid::Uuid;

use crate::error::FieldError;
use crate::money::Currency;
use crate::time::Timestamp;

/// A tenant: a uuid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TenantId(pub Uuid);

impl TenantId {
    /// The reserved platform tenant, the nil uuid: what the stores write on rows that belong to no tenant
    /// (samples of shared deployments, platform keys and audit events). No tenant may be it: parsing refuses it.
    pub const PLATFORM: TenantId = TenantId(Uuid::nil());

    /// Whether this is the reserved [`TenantId::PLATFORM`].
    pub fn is_platform(self) -> bool {
        self == Self::PLATFORM
    }

    /// A tenant id read back from storage, where the reserved id may stand (rows written before it was
    /// refused, the platform's own rows): any uuid. Input goes through [`FromStr`], which refuses it.
    pub fn from_stored(s: &str) -> Option<TenantId> {
        Uuid::parse_str(s).ok().map(TenantId)
    }
}

/// A tenant id as given (a body, a path, a header): a uuid, never the reserved [`TenantId::PLATFORM`].
impl FromStr for TenantId {
    type Err = FieldError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let id = Uuid::parse_str(s).map(TenantId).map_err(|_| {
            FieldError::new(
                "tenant_id",
                "must be a uuid, e.g. 8f0c2a4e-1b7d-4c55-9a51-2f3e6d7c9b10",
            )
        })?;
        if id.is_platform() {
            return Err(FieldError::new(
                "tenant_id",
                "is the reserved platform tenant (the nil uuid): no tenant may use it",
            ));
        }
        Ok(id)
    }
}

impl fmt::Display for TenantId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.hyphenated().fmt(f)
    }
}

/// A tenant's short name: `^[a-z0-9][a-z0-9-]{0,62}$` (unique, immutable, e.g. `acme`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TenantSlug(String);

impl TenantSlug {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl FromStr for TenantSlug {
    type Err = FieldError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let b = s.as_bytes();
        let ok = !b.is_empty()
            && b.len() <= 63
            && (b[0].is_ascii_lowercase() || b[0].is_ascii_digit())
            && b.iter()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-');
        if ok {
            Ok(TenantSlug(s.to_string()))
        } else {
            Err(FieldError::new(
                "slug",
                "must be 1 to 63 lowercase letters, digits or dashes, starting with a letter or a digit (e.g. acme)",
            ))
        }
    }
}

impl fmt::Display for TenantSlug {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A registered tenant: its id (what every row carries), slug and display name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tenant {
    pub id: TenantId,
    pub slug: TenantSlug,
    pub name: String,
}

/// A decimal that is zero or more (prices, quantities).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct NonNegative(Decimal);

impl NonNegative {
    pub const ZERO: NonNegative = NonNegative(Decimal::ZERO);
    pub fn new(d: Decimal) -> Option<Self> {
        (d >= Decimal::ZERO).then_some(NonNegative(d))
    }
    pub fn get(self) -> Decimal {
        self.0
    }
}

/// Power usage effectiveness of the data centre: 1 or more.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Pue(Decimal);

impl Pue {
    pub const ONE: Pue = Pue(Decimal::ONE);
    pub fn new(d: Decimal) -> Option<Self> {
        (d >= Decimal::ONE).then_some(Pue(d))
    }
    pub fn get(self) -> Decimal {
        self.0
    }
}

/// A fraction in 0..=1 (utilization).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct UnitInterval(Decimal);

impl UnitInterval {
    pub fn new(d: Decimal) -> Option<Self> {
        (d >= Decimal::ZERO && d <= Decimal::ONE).then_some(UnitInterval(d))
    }
    pub fn get(self) -> Decimal {
        self.0
    }
}

/// Share of a physical GPU: 0 < f <= 1 (a MIG slice, time-slicing).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct GpuFraction(Decimal);

impl GpuFraction {
    pub const WHOLE: GpuFraction = GpuFraction(Decimal::ONE);
    pub fn new(d: Decimal) -> Option<Self> {
        (d > Decimal::ZERO && d <= Decimal::ONE).then_some(GpuFraction(d))
    }
    pub fn get(self) -> Decimal {
        self.0
    }
}

/// How a sample's share of its GPU was obtained (SPEC §11; the sample's optional `share_method`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum ShareMethod {
    /// The GPU (or MIG instance) had one pod, or none (the default).
    #[default]
    Exclusive,
    /// A MIG instance: its share is its slices.
    Mig,
    /// A GPU shared by several pods, each pod's share measured (per-process GPU time, a sharing layer's own
    /// per-container figures).
    Measured,
    /// A GPU shared by several pods without per-pod data: `1/n` each. An estimate, reported.
    Equal,
}

impl ShareMethod {
    pub const ALL: [ShareMethod; 4] = [
        ShareMethod::Exclusive,
        ShareMethod::Mig,
        ShareMethod::Measured,
        ShareMethod::Equal,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ShareMethod::Exclusive => "exclusive",
            ShareMethod::Mig => "mig",
            ShareMethod::Measured => "measured",
            ShareMethod::Equal => "equal",
        }
    }
}

impl FromStr for ShareMethod {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, ()> {
        ShareMethod::ALL
            .into_iter()
            .find(|m| m.as_str() == s)
            .ok_or(())
    }
}

/// Whether a GPU id names one pod's share of a GPU shared by several (`<gpu>/shared/<namespace>/<pod>…`) or
/// the share no pod used (`<gpu>/shared-idle`), as the sampler writes them. Such a series stops when its pod
/// leaves the GPU (the GPU's own id goes on), so a hole in it is never filled: the GPU's time then is in its
/// other series.
pub fn is_share_slice(gpu_uuid: &str) -> bool {
    gpu_uuid.contains("/shared/") || gpu_uuid.ends_with("/shared-idle")
}

/// The device a GPU id is on: the id itself, or the GPU (or MIG instance) a share slice
/// ([`is_share_slice`]) is a share of.
pub fn device_of(gpu_uuid: &str) -> &str {
    if let Some(i) = gpu_uuid.find("/shared/") {
        return &gpu_uuid[..i];
    }
    gpu_uuid.strip_suffix("/shared-idle").unwrap_or(gpu_uuid)
}

/// The length of a sample's window in milliseconds: above 0 and at most an hour (what the wire accepts:
/// `0 < window_seconds <= 3600` with at most 3 places, so at least 1 ms).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WindowMs(i64);

impl WindowMs {
    /// The shortest window: 1 ms.
    pub const MIN: WindowMs = WindowMs(1);
    /// The longest window: one hour.
    pub const MAX: WindowMs = WindowMs(3_600_000);

    /// `ms` if it is a window length (`1..=3_600_000`).
    pub const fn new(ms: i64) -> Option<WindowMs> {
        if ms >= Self::MIN.0 && ms <= Self::MAX.0 {
            Some(WindowMs(ms))
        } else {
            None
        }
    }

    pub const fn get(self) -> i64 {
        self.0
    }

    /// The length in seconds, exact.
    pub fn seconds(self) -> Decimal {
        Decimal::new(self.0, 3)
    }
}

impl fmt::Display for WindowMs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ms", self.0)
    }
}

/// One GPU sample: what a GPU (or a MIG slice of one) did during `[end - window, end)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sample {
    pub node: String,
    /// The GPU, or the MIG instance encoded in it (`GPU-…/mig-13`): the series a sample belongs to.
    pub gpu_uuid: String,
    pub model: String,
    pub namespace: String,
    pub pod: String,
    pub deployment_id: String,
    /// The tenant that owns the pod (dedicated deployment); `None` for a shared deployment.
    pub owner: Option<TenantId>,
    /// Window length.
    pub window_ms: WindowMs,
    /// End of the window (exclusive).
    pub end: Timestamp,
    pub utilization: UnitInterval,
    pub memory_used_gb: NonNegative,
    /// Average power over the window, in watts.
    pub power_w: NonNegative,
    pub storage_gb: NonNegative,
    pub gpu_fraction: GpuFraction,
    /// How `gpu_fraction` was obtained. Not stored with the raw row: ingest tallies the equal shares per
    /// deployment and hour, which the allocation reports.
    pub share_method: ShareMethod,
}

impl Sample {
    pub fn start(&self) -> Timestamp {
        Timestamp(self.end.0 - self.window_ms.get())
    }

    /// Window length in seconds, exact.
    pub fn window_seconds(&self) -> Decimal {
        self.window_ms.seconds()
    }
}

/// What one output token weighs against one input token when a deployment's cost is split between input and
/// output without measured prefill and decode time: above 0, default 2.5 (the ratio OpenCost falls back to).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TokenWeight(Decimal);

impl TokenWeight {
    pub const DEFAULT: TokenWeight = TokenWeight(Decimal::from_parts(25, 0, 0, false, 1));

    pub fn new(d: Decimal) -> Option<Self> {
        (d > Decimal::ZERO).then_some(TokenWeight(d))
    }

    pub fn get(self) -> Decimal {
        self.0
    }
}

impl Default for TokenWeight {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// What happens to GPU time that no tenant usage accounts for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum IdleCapacity {
    /// It stays visible as Unallocated.
    #[default]
    Unallocated,
    /// It is spread over the deployment's tenants in proportion to their allocated cost.
    Proportional,
}

impl IdleCapacity {
    pub fn as_str(self) -> &'static str {
        match self {
            IdleCapacity::Unallocated => "unallocated",
            IdleCapacity::Proportional => "proportional",
        }
    }
}

impl FromStr for IdleCapacity {
    type Err = FieldError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "unallocated" => Ok(IdleCapacity::Unallocated),
            "proportional" => Ok(IdleCapacity::Proportional),
            _ => Err(FieldError::new(
                "idle_capacity",
                "must be `unallocated` or `proportional`",
            )),
        }
    }
}

/// A deployment pattern: `*` matches any run of characters, `?` exactly one; everything else is literal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Glob(String);

impl Glob {
    pub const MAX_LEN: usize = 253;

    pub fn new(pattern: &str) -> Option<Self> {
        (!pattern.is_empty() && pattern.len() <= Self::MAX_LEN).then(|| Glob(pattern.to_string()))
    }

    pub fn any() -> Self {
        Glob("*".to_string())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Literal characters: the more, the more specific.
    pub fn literal_chars(&self) -> usize {
        self.0.chars().filter(|c| *c != '*' && *c != '?').count()
    }

    pub fn matches(&self, text: &str) -> bool {
        let p: Vec<char> = self.0.chars().collect();
        let t: Vec<char> = text.chars().collect();
        // Iterative wildcard matching with a single backtrack point: linear in practice, never exponential.
        let (mut pi, mut ti) = (0usize, 0usize);
        let mut star: Option<(usize, usize)> = None;
        while ti < t.len() {
            if pi < p.len() && (p[pi] == '?' || (p[pi] != '*' && p[pi] == t[ti])) {
                pi += 1;
                ti += 1;
            } else if pi < p.len() && p[pi] == '*' {
                star = Some((pi, ti));
                pi += 1;
            } else if let Some((sp, st)) = star {
                pi = sp + 1;
                ti = st + 1;
                star = Some((sp, st + 1));
            } else {
                return false;
            }
        }
        p[pi..].iter().all(|c| *c == '*')
    }
}

impl fmt::Display for Glob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The pricing terms of an allocation policy, before the store gives it an id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicySpec {
    pub name: String,
    pub deployment_pattern: Glob,
    /// Matches a sample's model by prefix or equality, case-insensitive.
    pub gpu_model: Option<String>,
    pub currency: Currency,
    pub gpu_hourly_cost: NonNegative,
    pub overhead_pct: NonNegative,
    pub energy_kwh_price: NonNegative,
    pub pue: Pue,
    pub storage_gb_month_price: NonNegative,
    pub idle_capacity: IdleCapacity,
    /// What an output token weighs against an input token where a deployment's prefill and decode time are
    /// not measured (cost per token).
    pub output_token_weight: TokenWeight,
    pub enabled: bool,
    /// Inclusive.
    pub effective_from: Timestamp,
    /// Exclusive; `None`: open-ended.
    pub effective_to: Option<Timestamp>,
}

/// A stored allocation policy. Never edited in place: a change closes it (`effective_to`) and opens another.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// `alp_<seq>`.
    pub id: String,
    /// Creation order: the newer policy wins a tie.
    pub seq: u64,
    pub spec: PolicySpec,
}

impl Policy {
    pub fn new(seq: u64, spec: PolicySpec) -> Self {
        Policy {
            id: format!("alp_{seq}"),
            seq,
            spec,
        }
    }

    /// This policy closed at `at` (its `effective_to`), or why it cannot be: see [`close_at`].
    pub fn close_at(&self, at: Timestamp) -> Result<Policy, CloseRefused> {
        let mut closed = self.clone();
        closed.spec.effective_to = Some(close_at(
            self.spec.effective_from,
            self.spec.effective_to,
            at,
        )?);
        Ok(closed)
    }

    /// In effect (and enabled) at instant `t`.
    pub fn in_effect_at(&self, t: Timestamp) -> bool {
        self.spec.enabled
            && self.spec.effective_from <= t
            && self.spec.effective_to.is_none_or(|to| t < to)
    }
}

/// Why a record in effect over `[from, to)` (a policy, a budget) cannot be closed at an instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CloseRefused {
    /// At or before its start: closing would leave it empty.
    AtOrBeforeStart { from: Timestamp, at: Timestamp },
    /// It ends at or before that instant already: moving its end later would edit history.
    AlreadyClosed { to: Timestamp },
}

impl fmt::Display for CloseRefused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CloseRefused::AtOrBeforeStart { from, at } => write!(
                f,
                "starts at {from}: it cannot be closed at {at}, at or before its start"
            ),
            CloseRefused::AlreadyClosed { to } => write!(f, "is already closed since {to}"),
        }
    }
}

impl std::error::Error for CloseRefused {}

/// The rule of closing a record in effect over `[from, to)` (`to` `None`: open-ended) at `at`: after its start,
/// while it is still open at `at`. Records are never edited in place: a change closes one and opens another.
/// Returns the new end, `at`.
pub fn close_at(
    from: Timestamp,
    to: Option<Timestamp>,
    at: Timestamp,
) -> Result<Timestamp, CloseRefused> {
    if at <= from {
        return Err(CloseRefused::AtOrBeforeStart { from, at });
    }
    match to {
        Some(to) if to <= at => Err(CloseRefused::AlreadyClosed { to }),
        _ => Ok(at),
    }
}

/// A usage event (contract `usage-event.schema.json`, schema_version 1.0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageEvent {
    pub event_id: Uuid,
    pub tenant_id: TenantId,
    pub usage_type: String,
    pub source: String,
    pub occurred_at: Timestamp,
    pub deployment_id: Option<String>,
    pub model: Option<ModelRef>,
    /// Unit name -> quantity (`tokens_in`, `tokens_out`, `gpu_seconds`, `gpu_memory_gb_seconds`, `energy_wh`, …).
    pub units: BTreeMap<String, NonNegative>,
    pub cost: Option<(NonNegative, Currency)>,
    pub allocation_policy_id: Option<String>,
    pub project: Option<String>,
    pub agent_id: Option<String>,
    pub run_id: Option<String>,
}

/// Events written by our own allocation batch carry this source; they never weigh a split (that would loop).
pub const ALLOCATION_SOURCE: &str = "allocation";

/// Events a reservation's commit records carry this source (`crate::budget::commit_event`): spend against a
/// budget, not usage of a GPU deployment, so they never weigh a split either.
pub const RESERVATION_SOURCE: &str = "reservation";

/// Sources only the platform writes: the allocation batch's charges and committed reservations. No API caller
/// may post, replace or block such an event.
pub fn is_platform_record(source: &str) -> bool {
    source == ALLOCATION_SOURCE || source == RESERVATION_SOURCE
}

/// Events the sampler posts from a vLLM server's own counters: tokens and prefill/decode time of a whole
/// deployment in an interval. They belong to no tenant (stored under [`TenantId::PLATFORM`]), measure what a
/// token costs, and never weigh a tenant split.
pub const VLLM_SOURCE: &str = "vllm";

/// Whether an event of this source may weigh a shared deployment's split between tenants.
pub fn weighs_split(source: &str) -> bool {
    !is_platform_record(source) && source != VLLM_SOURCE
}

impl UsageEvent {
    pub fn unit(&self, name: &str) -> Option<Decimal> {
        self.units.get(name).map(|v| v.get())
    }

    /// Tokens served: `tokens_in + tokens_out`.
    pub fn tokens(&self) -> Decimal {
        self.unit("tokens_in").unwrap_or_default() + self.unit("tokens_out").unwrap_or_default()
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelRef {
    pub provider: String,
    pub name: String,
}

#[cfg(test)]
mod tests {
    use rust_decimal::Decimal;

    use super::{
        close_at, device_of, is_share_slice, CloseRefused, Glob, IdleCapacity, NonNegative, Policy,
        PolicySpec, Pue, TenantId, TenantSlug, TokenWeight, WindowMs,
    };
    use crate::money::Currency;
    use crate::time::Timestamp;

    #[test]
    fn glob_matches_like_a_shell() {
        let g = |s: &str| Glob::new(s).unwrap();
        assert!(g("*").matches("vllm-llama-70b"));
        assert!(g("vllm-*").matches("vllm-llama-70b"));
        assert!(!g("vllm-*").matches("tgi-llama"));
        assert!(g("vllm-*-70b").matches("vllm-llama-70b"));
        assert!(g("vllm-?lama*").matches("vllm-llama-70b"));
        assert!(!g("vllm").matches("vllm-llama"));
        assert!(g("*b").matches("vllm-llama-70b"));
        assert!(g("a*a*a*a*b").matches("aaaaaaaaaaaaaaaaaaaab"));
        assert!(!g("a*a*a*a*b").matches("aaaaaaaaaaaaaaaaaaaaa"));
        assert_eq!(g("vllm-*").literal_chars(), 5);
    }

    #[test]
    fn a_share_slice_is_on_the_device_its_id_starts_with() {
        let gpu = "GPU-8a2b";
        for id in [
            "GPU-8a2b",
            "GPU-8a2b/shared/team-a/pod-1",
            "GPU-8a2b/shared/team-a/pod-1/vllm",
            "GPU-8a2b/shared-idle",
        ] {
            assert_eq!(device_of(id), gpu, "{id}");
            assert_eq!(is_share_slice(id), id != gpu, "{id}");
        }
        let mig = "MIG-4f1c";
        assert_eq!(device_of("MIG-4f1c/shared/ns/p"), mig);
        assert_eq!(device_of("GPU-x/shared-idle-not"), "GPU-x/shared-idle-not");
    }

    #[test]
    fn the_platform_tenant_is_refused_as_input_and_read_back_from_storage() {
        let nil = "00000000-0000-0000-0000-000000000000";
        let e = nil.parse::<TenantId>().expect_err("reserved");
        assert_eq!(e.field, "tenant_id");
        assert!(e.reason.contains("reserved"), "{}", e.reason);
        assert_eq!(TenantId::from_stored(nil), Some(TenantId::PLATFORM));
        assert!(TenantId::PLATFORM.is_platform());
        let t: TenantId = "8f0c2a4e-1b7d-4c55-9a51-2f3e6d7c9b10"
            .parse()
            .expect("a tenant");
        assert!(!t.is_platform());
        assert!("not-a-uuid".parse::<TenantId>().is_err());
        assert_eq!(TenantId::from_stored("not-a-uuid"), None);
    }

    #[test]
    fn window_lengths_are_1_ms_to_an_hour() {
        assert_eq!(WindowMs::new(0), None);
        assert_eq!(WindowMs::new(-15_000), None);
        assert_eq!(WindowMs::new(3_600_001), None);
        assert_eq!(WindowMs::new(1), Some(WindowMs::MIN));
        assert_eq!(WindowMs::new(3_600_000), Some(WindowMs::MAX));
        let w = WindowMs::new(15_500).expect("a window");
        assert_eq!((w.get(), w.seconds()), (15_500, Decimal::new(155, 1)));
    }

    #[test]
    fn a_record_closes_after_its_start_while_it_is_open() {
        let (from, to) = (Timestamp(1_000), Some(Timestamp(5_000)));
        assert_eq!(close_at(from, None, Timestamp(1_001)), Ok(Timestamp(1_001)));
        assert_eq!(close_at(from, to, Timestamp(4_999)), Ok(Timestamp(4_999)));
        for at in [Timestamp(1_000), Timestamp(999)] {
            assert_eq!(
                close_at(from, to, at),
                Err(CloseRefused::AtOrBeforeStart { from, at })
            );
        }
        for at in [Timestamp(5_000), Timestamp(9_000)] {
            assert_eq!(
                close_at(from, to, at),
                Err(CloseRefused::AlreadyClosed {
                    to: Timestamp(5_000)
                })
            );
        }
    }

    #[test]
    fn a_policy_closed_at_an_instant_ends_there_and_only_once() {
        let spec = PolicySpec {
            name: "p".into(),
            deployment_pattern: Glob::any(),
            gpu_model: None,
            currency: Currency::USD,
            gpu_hourly_cost: NonNegative::ZERO,
            overhead_pct: NonNegative::ZERO,
            energy_kwh_price: NonNegative::ZERO,
            pue: Pue::ONE,
            storage_gb_month_price: NonNegative::ZERO,
            idle_capacity: IdleCapacity::Unallocated,
            output_token_weight: TokenWeight::DEFAULT,
            enabled: true,
            effective_from: Timestamp(1_000),
            effective_to: None,
        };
        let open = Policy::new(1, spec);
        let closed = open.close_at(Timestamp(2_000)).expect("closes");
        assert_eq!(closed.spec.effective_to, Some(Timestamp(2_000)));
        assert_eq!((closed.id.as_str(), closed.seq), ("alp_1", 1));
        assert!(open.in_effect_at(Timestamp(2_000)) && !closed.in_effect_at(Timestamp(2_000)));
        assert_eq!(
            closed.close_at(Timestamp(3_000)),
            Err(CloseRefused::AlreadyClosed {
                to: Timestamp(2_000)
            })
        );
        assert_eq!(
            closed
                .close_at(Timestamp(1_500))
                .map(|p| p.spec.effective_to),
            Ok(Some(Timestamp(1_500))),
            "an end may move earlier, never later"
        );
        assert!(open.close_at(Timestamp(1_000)).is_err());
    }

    #[test]
    fn slugs_are_short_lowercase_names() {
        for ok in ["acme", "a", "acme-corp", "42", "a-1-b"] {
            assert!(ok.parse::<TenantSlug>().is_ok(), "{ok}");
        }
        let long = "a".repeat(64);
        for bad in [
            "",
            "-acme",
            "Acme",
            "acme_corp",
            "acme corp",
            "é",
            long.as_str(),
        ] {
            assert!(bad.parse::<TenantSlug>().is_err(), "{bad}");
        }
    }
}
