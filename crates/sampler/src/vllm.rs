//! vLLM's token and timing counters -> usage events of `source: "vllm"` (pure: no I/O, no clock).
//!
//! [`from_text`] reads a vLLM `/metrics` exposition (V1 with `engine` and `model_name` labels, legacy V0 with
//! `model_name` only, or Ray Serve's `ray_vllm:` names) into exact [`Counters`] per model, summed over engines
//! and `finished_reason`. Families are matched by their exact names, never by prefix: every vLLM counter has a
//! `*_created` companion that holds a Unix timestamp, not a count.
//!
//! | unit               | family                                                                          |
//! |--------------------|---------------------------------------------------------------------------------|
//! | `tokens_in`        | `vllm:prompt_tokens_total` (cache hits included)                                |
//! | `tokens_out`       | `vllm:generation_tokens_total`                                                  |
//! | `cached_tokens_in` | `vllm:prompt_tokens_cached_total`, else `vllm:prefix_cache_hits_total` (tokens) |
//! | `prefill_seconds`  | `vllm:request_prefill_time_seconds_sum`                                         |
//! | `decode_seconds`   | `vllm:request_decode_time_seconds_sum`                                          |
//! | `requests`         | `vllm:request_success_total` (all `finished_reason`s)                           |
//!
//! A family the server does not expose is an absent unit, never a zero. Values are rounded to 6 decimal places
//! (the contract's precision) *before* any difference is taken, so the deltas of a series add up exactly to
//! its last reading minus its first.
//!
//! [`Tracker`] keeps the last reading of each (deployment, instance, model) series and turns a new reading into
//! the delta since then: the first reading only sets the baseline; a series whose counters went down restarted,
//! and its delta is the new value. Each interval with a non-zero delta becomes one [`UsageEvent`], whose
//! `event_id` is a UUID v5 of (deployment, instance, model, interval start, interval end): a re-send replaces,
//! never doubles. The tracker's [`State`] is persisted by the caller (atomically, in the spool folder).

use std::collections::BTreeMap;
use std::str::FromStr;

use eai_engine::Timestamp;
use rust_decimal::{Decimal, RoundingStrategy};
use serde::{Deserialize, Serialize};

use crate::exposition;
use crate::names::fit_name;

/// Unit names of the events, in the order of the table above.
pub const TOKENS_IN: &str = "tokens_in";
pub const TOKENS_OUT: &str = "tokens_out";
pub const CACHED_TOKENS_IN: &str = "cached_tokens_in";
pub const PREFILL_SECONDS: &str = "prefill_seconds";
pub const DECODE_SECONDS: &str = "decode_seconds";
pub const REQUESTS: &str = "requests";

/// Decimal places kept (the usage-event contract's precision).
pub const DP: u32 = 6;

/// The `source` and `usage_type` of the events, and the `model.provider`.
pub const SOURCE: &str = "vllm";
pub const USAGE_TYPE: &str = "llm_tokens";
pub const PROVIDER: &str = "vllm";

/// The model name of a series without a `model_name` label.
pub const UNKNOWN_MODEL: &str = "unknown";

/// The prefixes of vLLM's names: vLLM itself, and Ray Serve's re-export.
pub const PREFIXES: [&str; 2] = ["vllm:", "ray_vllm:"];

/// The families read, without prefix (exact names).
pub const FAMILIES: [&str; 7] = [
    "prompt_tokens_total",
    "generation_tokens_total",
    "prompt_tokens_cached_total",
    "prefix_cache_hits_total",
    "request_prefill_time_seconds_sum",
    "request_decode_time_seconds_sum",
    "request_success_total",
];

/// Unit -> exact quantity (6 decimal places). A unit the server does not expose is absent.
pub type Counters = BTreeMap<&'static str, Decimal>;

/// What a family counts (`None`: not one of ours).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    Unit(&'static str),
    /// `prefix_cache_hits_total`: `cached_tokens_in` when `prompt_tokens_cached_total` is absent.
    CacheHits,
}

fn family(name: &str) -> Option<Family> {
    let base = PREFIXES.iter().find_map(|p| name.strip_prefix(p))?;
    Some(match base {
        "prompt_tokens_total" => Family::Unit(TOKENS_IN),
        "generation_tokens_total" => Family::Unit(TOKENS_OUT),
        "prompt_tokens_cached_total" => Family::Unit(CACHED_TOKENS_IN),
        "prefix_cache_hits_total" => Family::CacheHits,
        "request_prefill_time_seconds_sum" => Family::Unit(PREFILL_SECONDS),
        "request_decode_time_seconds_sum" => Family::Unit(DECODE_SECONDS),
        "request_success_total" => Family::Unit(REQUESTS),
        _ => return None,
    })
}

/// A counter's value as written (`115898.0`, `1.5e+06`), exactly; `None` for NaN, infinities and negatives.
pub fn exact(text: &str) -> Option<Decimal> {
    let v = if text.contains(['e', 'E']) {
        Decimal::from_scientific(text).ok()?
    } else {
        Decimal::from_str(text).ok()?
    };
    (!v.is_sign_negative() || v.is_zero()).then_some(v)
}

fn round(v: Decimal) -> Decimal {
    v.round_dp_with_strategy(DP, RoundingStrategy::MidpointAwayFromZero)
        .normalize()
}

/// Sums of one model's families, before the cache fallback and rounding.
#[derive(Debug, Clone, Default)]
pub struct Acc {
    units: Counters,
    cache_hits: Option<Decimal>,
}

impl Acc {
    /// Adds one series of `name` (a family of ours or not; returns whether it was ours and readable).
    pub fn add(&mut self, name: &str, value_text: &str) -> Option<bool> {
        let Some(f) = family(name) else {
            return Some(false);
        };
        // A count past what a usage event may carry is not one vLLM made (and would refuse the batch).
        let max = Decimal::from(eai_engine::wire::MAX_UNITS);
        let v = exact(value_text).filter(|v| *v <= max)?;
        let slot = match f {
            Family::Unit(u) => self.units.entry(u).or_default(),
            Family::CacheHits => self.cache_hits.get_or_insert(Decimal::ZERO),
        };
        *slot = slot.checked_add(v).filter(|s| *s <= max)?;
        Some(true)
    }

    /// The counters: `cached_tokens_in` from the prefix cache's hits when vLLM has no cached-tokens counter.
    pub fn finish(mut self) -> Counters {
        if let (None, Some(h)) = (self.units.get(CACHED_TOKENS_IN), self.cache_hits) {
            self.units.insert(CACHED_TOKENS_IN, h);
        }
        self.units.into_iter().map(|(k, v)| (k, round(v))).collect()
    }
}

/// One exposition read: counters per model name, and what was skipped.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Parsed {
    pub models: BTreeMap<String, Counters>,
    /// Lines that are not readable samples (see [`exposition::Stats`]).
    pub malformed: u64,
    /// Series of our families whose value is not a count (NaN, negative, unreadable, past 10^15).
    pub bad_values: u64,
}

/// Reads a vLLM `/metrics` exposition: counters per `model_name`, summed over every other label.
pub fn from_text(text: &str) -> Parsed {
    let mut accs: BTreeMap<String, Acc> = BTreeMap::new();
    let mut bad_values = 0;
    let stats = exposition::parse(text, |l| {
        if family(l.name).is_none() {
            return;
        }
        let model = l.label("model_name").unwrap_or(UNKNOWN_MODEL);
        let acc = match accs.get_mut(model) {
            Some(a) => a,
            None => accs.entry(model.to_string()).or_default(),
        };
        if acc.add(l.name, l.value_text).is_none() {
            bad_values += 1;
        }
    });
    Parsed {
        models: accs
            .into_iter()
            .map(|(m, a)| (m, a.finish()))
            .filter(|(_, c)| !c.is_empty())
            .collect(),
        malformed: stats.malformed,
        bad_values,
    }
}

/// A vLLM server read directly: `--vllm-url DEPLOYMENT=URL`, or a config file's `[[vllm]]` table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub deployment_id: String,
    /// Its `/metrics` URL (`http://`, `https://`), or `file://PATH` of a saved scrape.
    pub url: String,
}

impl Target {
    /// Checks both parts: a deployment id of 1 to 253 characters without blanks, and a URL the sampler can read.
    pub fn new(deployment_id: &str, url: &str) -> std::result::Result<Target, String> {
        let d = deployment_id.trim();
        if d.is_empty() || d.len() > 253 || d.contains(char::is_whitespace) {
            return Err(format!(
                "the deployment id `{deployment_id}` must be 1 to 253 characters without blanks"
            ));
        }
        let url = url.trim();
        let rest = ["http://", "https://", "file://"]
            .iter()
            .find_map(|p| url.strip_prefix(p));
        if rest.is_none_or(str::is_empty) {
            return Err(format!(
                "`{url}` must be an http://, https:// or file:// URL of a vLLM server's /metrics"
            ));
        }
        Ok(Target {
            deployment_id: d.to_string(),
            url: url.to_string(),
        })
    }

    /// `DEPLOYMENT=URL`.
    pub fn parse(s: &str) -> std::result::Result<Target, String> {
        let (d, url) = s.split_once('=').ok_or_else(|| {
            format!("`{s}` is not DEPLOYMENT=URL (e.g. vllm-llama=http://10.0.0.7:8000/metrics)")
        })?;
        Target::new(d, url)
    }
}

/// One series of counters: a model served by one vLLM instance (a pod, or a URL) of a deployment.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct SeriesKey {
    pub deployment_id: String,
    /// `namespace/pod` (discovered through Prometheus) or the URL read (`--vllm-url`).
    pub instance: String,
    pub model: String,
}

/// The last reading of a series.
#[derive(Debug, Clone, PartialEq)]
pub struct Baseline {
    pub at: Timestamp,
    pub counters: Counters,
}

/// `cur - prev` per unit present in both; a unit that went down means the server restarted: then the whole
/// delta is `cur` (its counters started again from zero). Returns the delta and whether it was a restart.
pub fn delta(prev: &Counters, cur: &Counters) -> (Counters, bool) {
    let reset = cur.iter().any(|(u, v)| prev.get(u).is_some_and(|p| v < p));
    let d = cur
        .iter()
        .filter_map(|(u, v)| {
            let p = prev.get(u)?;
            Some((*u, if reset { *v } else { *v - *p }))
        })
        .collect();
    (d, reset)
}

/// The model of an event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventModel {
    pub provider: String,
    pub name: String,
}

/// A usage event (contracts/v1/usage-event.schema.json) as the sampler spools and sends it: a deployment's
/// platform measurement, so no tenant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UsageEvent {
    pub event_id: String,
    pub schema_version: String,
    /// Always `null`: vLLM's counters are the deployment's, not a tenant's.
    pub tenant_id: Option<String>,
    pub usage_type: String,
    pub source: String,
    /// The end of the interval, RFC 3339.
    pub occurred_at: String,
    pub deployment_id: String,
    pub model: EventModel,
    /// Unit -> decimal string (exact).
    pub units: BTreeMap<String, String>,
}

/// The namespace of the events' UUID v5 ids.
fn id_namespace() -> uuid::Uuid {
    uuid::Uuid::new_v5(&uuid::Uuid::NAMESPACE_URL, b"urn:eai-gpu:sampler:vllm")
}

/// The event id of a series' interval: the same inputs always give the same id.
pub fn event_id(key: &SeriesKey, start: Timestamp, end: Timestamp) -> String {
    // A JSON array: unambiguous whatever the names hold.
    let name =
        serde_json::json!([key.deployment_id, key.instance, key.model, start.0, end.0]).to_string();
    uuid::Uuid::new_v5(&id_namespace(), name.as_bytes()).to_string()
}

/// The event of one interval of a series.
pub fn event(key: &SeriesKey, start: Timestamp, end: Timestamp, units: &Counters) -> UsageEvent {
    UsageEvent {
        event_id: event_id(key, start, end),
        schema_version: "1.0".to_string(),
        tenant_id: None,
        usage_type: USAGE_TYPE.to_string(),
        source: SOURCE.to_string(),
        occurred_at: end.to_string(),
        // Names as the control plane takes them (a blank or overlong label would refuse the whole batch).
        deployment_id: fit_name(&key.deployment_id, "unknown").into_owned(),
        model: EventModel {
            provider: PROVIDER.to_string(),
            name: fit_name(&key.model, UNKNOWN_MODEL).into_owned(),
        },
        units: units
            .iter()
            .map(|(u, v)| (u.to_string(), v.normalize().to_string()))
            .collect(),
    }
}

/// What one observation made.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Observed {
    pub events: Vec<UsageEvent>,
    /// Series seen for the first time (their baseline is set, no event).
    pub new_series: u64,
    /// Series whose counters went down (a restart of vLLM).
    pub resets: u64,
}

/// The last reading of every series, and the events made from them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tracker {
    baselines: BTreeMap<SeriesKey, Baseline>,
}

/// How long a series not read any more keeps its baseline (a pod gone for a day is gone).
pub const FORGET_AFTER_MS: i64 = 24 * 3_600_000;

impl Tracker {
    /// Readings taken at `at` -> one event per series with a non-zero delta since its last reading. Readings
    /// not newer than a series' baseline are ignored (a window read twice).
    pub fn observe(&mut self, at: Timestamp, readings: &[(SeriesKey, Counters)]) -> Observed {
        let mut out = Observed::default();
        for (key, cur) in readings {
            match self.baselines.get(key) {
                Some(b) if b.at >= at => continue,
                Some(b) => {
                    let (d, reset) = delta(&b.counters, cur);
                    out.resets += u64::from(reset);
                    if d.values().any(|v| !v.is_zero()) {
                        out.events.push(event(key, b.at, at, &d));
                    }
                }
                None => out.new_series += 1,
            }
            self.baselines.insert(
                key.clone(),
                Baseline {
                    at,
                    counters: cur.clone(),
                },
            );
        }
        self.baselines
            .retain(|_, b| b.at.0 > at.0.saturating_sub(FORGET_AFTER_MS));
        out
    }

    pub fn baseline(&self, key: &SeriesKey) -> Option<&Baseline> {
        self.baselines.get(key)
    }

    pub fn len(&self) -> usize {
        self.baselines.len()
    }

    pub fn is_empty(&self) -> bool {
        self.baselines.is_empty()
    }

    /// The state to persist: the baselines, and events made but not yet in the spool.
    pub fn to_state(&self, unspooled: &[UsageEvent]) -> State {
        State {
            version: 1,
            series: self
                .baselines
                .iter()
                .map(|(k, b)| StateSeries {
                    key: k.clone(),
                    at_ms: b.at.0,
                    counters: b
                        .counters
                        .iter()
                        .map(|(u, v)| (u.to_string(), v.to_string()))
                        .collect(),
                })
                .collect(),
            unspooled: unspooled.to_vec(),
        }
    }

    /// The tracker a persisted state describes, and its events not yet spooled. Unknown units and unreadable
    /// values are left out (the next reading of the series then starts a new baseline for them).
    pub fn from_state(s: State) -> (Tracker, Vec<UsageEvent>) {
        let baselines = s
            .series
            .into_iter()
            .map(|x| {
                let counters = x
                    .counters
                    .iter()
                    .filter_map(|(u, v)| Some((unit_name(u)?, Decimal::from_str(v).ok()?)))
                    .collect();
                (
                    x.key,
                    Baseline {
                        at: Timestamp(x.at_ms),
                        counters,
                    },
                )
            })
            .collect();
        (Tracker { baselines }, s.unspooled)
    }
}

fn unit_name(u: &str) -> Option<&'static str> {
    [
        TOKENS_IN,
        TOKENS_OUT,
        CACHED_TOKENS_IN,
        PREFILL_SECONDS,
        DECODE_SECONDS,
        REQUESTS,
    ]
    .into_iter()
    .find(|n| *n == u)
}

/// The persisted form of a [`Tracker`] (`vllm-state.json` in the spool folder).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct State {
    pub version: u32,
    pub series: Vec<StateSeries>,
    /// Events made from the baselines above but not yet appended to the spool (a crash in between): appended
    /// at the next start. An event appended twice has the same id, and counts once.
    #[serde(default)]
    pub unspooled: Vec<UsageEvent>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StateSeries {
    #[serde(flatten)]
    pub key: SeriesKey,
    pub at_ms: i64,
    pub counters: BTreeMap<String, String>,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::str::FromStr;

    use eai_engine::Timestamp;
    use rust_decimal::Decimal;

    use super::{
        delta, event, event_id, exact, from_text, Counters, SeriesKey, Target, Tracker,
        CACHED_TOKENS_IN, DECODE_SECONDS, FORGET_AFTER_MS, PREFILL_SECONDS, REQUESTS, TOKENS_IN,
        TOKENS_OUT,
    };

    fn d(s: &str) -> Decimal {
        Decimal::from_str(s).unwrap()
    }

    fn counters(pairs: &[(&'static str, &str)]) -> Counters {
        pairs.iter().map(|(u, v)| (*u, d(v))).collect()
    }

    fn key() -> SeriesKey {
        SeriesKey {
            deployment_id: "llama".into(),
            instance: "ai/llama-0".into(),
            model: "meta-llama/Llama-3.1-8B-Instruct".into(),
        }
    }

    #[test]
    fn targets() {
        let t = Target::parse("vllm-llama=http://10.0.0.7:8000/metrics").unwrap();
        assert_eq!(
            (t.deployment_id.as_str(), t.url.as_str()),
            ("vllm-llama", "http://10.0.0.7:8000/metrics")
        );
        assert!(Target::parse("file-one=file:///tmp/a.prom").is_ok());
        for bad in [
            "http://x/metrics",
            "=http://x",
            "a b=http://x",
            "d=ftp://x",
            "d=http://",
            "d=",
        ] {
            assert!(Target::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn exact_values() {
        assert_eq!(exact("115898.0"), Some(d("115898")));
        assert_eq!(exact("1.5e+06"), Some(d("1500000")));
        assert_eq!(exact("0.0"), Some(Decimal::ZERO));
        assert_eq!(exact("-0.0"), Some(Decimal::ZERO));
        for bad in ["NaN", "+Inf", "-1", "x", ""] {
            assert_eq!(exact(bad), None, "{bad}");
        }
    }

    #[test]
    fn names_are_matched_exactly_never_by_prefix() {
        let p = from_text(
            "vllm:prompt_tokens_total{model_name=\"m\"} 10.0\n\
             vllm:prompt_tokens_created{model_name=\"m\"} 1.7777579962047e+09\n\
             vllm:prompt_tokens_total_extra{model_name=\"m\"} 5\n\
             vllm:generation_tokens_total{model_name=\"m\",engine=\"0\"} 3\n\
             vllm:generation_tokens_total{model_name=\"m\",engine=\"1\"} 4\n\
             ray_vllm:generation_tokens_total{model_name=\"r\",ReplicaId=\"a\"} 2\n\
             vllm:request_success_total{model_name=\"m\",finished_reason=\"stop\"} NaN\n",
        );
        assert_eq!(
            p.models["m"],
            counters(&[(TOKENS_IN, "10"), (TOKENS_OUT, "7")])
        );
        assert_eq!(p.models["r"], counters(&[(TOKENS_OUT, "2")]));
        assert_eq!(p.bad_values, 1, "NaN is not a count");
    }

    /// Found by fuzzing: a counter past what a usage event may carry (10^15) made an event the control plane
    /// refuses, and with it the whole batch; a blank or overlong model name too. Such a value is a bad value; a
    /// name is fitted (blank: `unknown`, overlong: cut to 253 bytes).
    #[test]
    fn counts_and_names_the_control_plane_cannot_take_never_reach_an_event() {
        let p = from_text(
            "vllm:prompt_tokens_total{model_name=\"m\"} 1.15e23\n\
             vllm:generation_tokens_total{model_name=\"m\"} 3\n",
        );
        assert_eq!(p.bad_values, 1);
        assert_eq!(p.models["m"], counters(&[(TOKENS_OUT, "3")]));
        let long = "é".repeat(200);
        for (model, want) in [
            ("", "unknown".to_string()),
            (long.as_str(), "é".repeat(126)),
        ] {
            let key = SeriesKey {
                deployment_id: "d".into(),
                instance: "i".into(),
                model: model.into(),
            };
            let e = event(&key, Timestamp(0), Timestamp(15_000), &p.models["m"]);
            assert_eq!(e.model.name, want);
        }
    }

    #[test]
    fn the_prefix_cache_hits_stand_in_for_cached_tokens_only_when_those_are_absent() {
        let both = from_text(
            "vllm:prompt_tokens_cached_total{model_name=\"m\"} 7\nvllm:prefix_cache_hits_total{model_name=\"m\"} 9\n",
        );
        assert_eq!(both.models["m"], counters(&[(CACHED_TOKENS_IN, "7")]));
        let hits = from_text("vllm:prefix_cache_hits_total{model_name=\"m\"} 9\n");
        assert_eq!(hits.models["m"], counters(&[(CACHED_TOKENS_IN, "9")]));
    }

    #[test]
    fn seconds_are_rounded_to_six_places_before_deltas_so_deltas_add_up() {
        let p = from_text("vllm:request_prefill_time_seconds_sum{model_name=\"m\"} 1.23456789\n");
        assert_eq!(p.models["m"][PREFILL_SECONDS], d("1.234568"));
        let mut t = Tracker::default();
        let readings = ["0.1000004", "0.2000006", "0.3000014", "1.0000005"];
        let mut sum = Decimal::ZERO;
        for (i, v) in readings.iter().enumerate() {
            let c = from_text(&format!(
                "vllm:request_prefill_time_seconds_sum{{model_name=\"m\"}} {v}\n"
            ))
            .models["m"]
                .clone();
            let k = SeriesKey {
                model: "m".into(),
                ..key()
            };
            for e in t.observe(Timestamp(i as i64 * 1000), &[(k, c)]).events {
                sum += d(&e.units[PREFILL_SECONDS]);
            }
        }
        assert_eq!(sum, d("1.000001") - d("0.1"), "last minus first, exactly");
    }

    #[test]
    fn deltas_and_restarts() {
        let prev = counters(&[(TOKENS_IN, "100"), (TOKENS_OUT, "50"), (REQUESTS, "4")]);
        let cur = counters(&[(TOKENS_IN, "130"), (TOKENS_OUT, "50"), (REQUESTS, "5")]);
        assert_eq!(
            delta(&prev, &cur),
            (
                counters(&[(TOKENS_IN, "30"), (TOKENS_OUT, "0"), (REQUESTS, "1")]),
                false
            )
        );
        // A restart: one counter lower is enough; every unit's delta is then its new value.
        let after = counters(&[(TOKENS_IN, "120"), (TOKENS_OUT, "10"), (REQUESTS, "1")]);
        assert_eq!(delta(&cur, &after), (after.clone(), true));
        // A unit that appears has no baseline yet: no delta for it.
        let more = counters(&[(TOKENS_IN, "140"), (DECODE_SECONDS, "2")]);
        assert_eq!(delta(&cur, &more), (counters(&[(TOKENS_IN, "10")]), false));
    }

    #[test]
    fn the_tracker_makes_one_event_per_interval_with_a_change() {
        let mut t = Tracker::default();
        let k = key();
        let r = |tin: &str, tout: &str| {
            vec![(k.clone(), counters(&[(TOKENS_IN, tin), (TOKENS_OUT, tout)]))]
        };
        let first = t.observe(Timestamp(15_000), &r("100", "10"));
        assert_eq!(
            (first.events.len(), first.new_series),
            (0, 1),
            "the first read is a baseline"
        );
        assert!(
            t.observe(Timestamp(30_000), &r("100", "10"))
                .events
                .is_empty(),
            "no change, no event"
        );
        let o = t.observe(Timestamp(45_000), &r("160", "25"));
        assert_eq!(o.events.len(), 1);
        let e = &o.events[0];
        assert_eq!(
            e.event_id,
            event_id(&k, Timestamp(30_000), Timestamp(45_000))
        );
        assert_eq!(e.occurred_at, "1970-01-01T00:00:45Z");
        assert_eq!(e.units["tokens_in"], "60");
        assert_eq!(e.units["tokens_out"], "15");
        assert!(
            t.observe(Timestamp(45_000), &r("170", "25"))
                .events
                .is_empty(),
            "not newer: ignored"
        );
        let o = t.observe(Timestamp(60_000), &r("5", "1"));
        assert_eq!(o.resets, 1);
        assert_eq!(o.events[0].units["tokens_in"], "5");
        // Forgotten a day after its last reading.
        t.observe(Timestamp(60_000 + FORGET_AFTER_MS), &[]);
        assert!(t.is_empty());
    }

    #[test]
    fn event_ids_are_stable_and_distinct() {
        let k = key();
        let a = event_id(&k, Timestamp(0), Timestamp(15_000));
        assert_eq!(a, event_id(&k, Timestamp(0), Timestamp(15_000)));
        assert_eq!(uuid::Uuid::parse_str(&a).unwrap().get_version_num(), 5);
        // Pinned: an id must never change between versions of the sampler, or a re-send would count twice. The
        // same by Python: uuid5(uuid5(NAMESPACE_URL, "urn:eai-gpu:sampler:vllm"), '["llama","ai/llama-0",...,0,15000]').
        assert_eq!(a, "cd08ce31-bdc7-5211-918d-fd2a1d87711d");
        let others = [
            event_id(&k, Timestamp(1), Timestamp(15_000)),
            event_id(&k, Timestamp(0), Timestamp(15_001)),
            event_id(
                &SeriesKey {
                    instance: "ai/llama-1".into(),
                    ..k.clone()
                },
                Timestamp(0),
                Timestamp(15_000),
            ),
            event_id(
                &SeriesKey {
                    model: "x".into(),
                    ..k.clone()
                },
                Timestamp(0),
                Timestamp(15_000),
            ),
            event_id(
                &SeriesKey {
                    deployment_id: "x".into(),
                    ..k.clone()
                },
                Timestamp(0),
                Timestamp(15_000),
            ),
        ];
        assert!(others.iter().all(|o| *o != a));
    }

    #[test]
    fn the_state_round_trips() {
        let mut t = Tracker::default();
        let c = counters(&[(TOKENS_IN, "115898"), (PREFILL_SECONDS, "1.5")]);
        t.observe(Timestamp(15_000), &[(key(), c.clone())]);
        let ev = event(&key(), Timestamp(0), Timestamp(15_000), &c);
        let text = serde_json::to_string(&t.to_state(std::slice::from_ref(&ev))).unwrap();
        let (back, unspooled) = Tracker::from_state(serde_json::from_str(&text).unwrap());
        assert_eq!(back, t);
        assert_eq!(unspooled, vec![ev]);
    }
}
