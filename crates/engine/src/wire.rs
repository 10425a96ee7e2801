//! The JSON shapes of the API (samples, usage events, policies) and their parsing into domain types.
//! Every field is read leniently (a number or a string, anything) so that a bad record yields one precise
//! error per bad field, with its index, instead of one opaque deserializer message.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use rust_decimal::Decimal;
use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use uuid::Uuid;

use crate::domain::{
    GpuFraction, IdleCapacity, ModelRef, NonNegative, Policy, PolicySpec, Pue, Sample, ShareMethod,
    TenantId, TokenWeight, UnitInterval, UsageEvent, WindowMs, VLLM_SOURCE,
};
use crate::error::FieldError;
use crate::money::Currency;
use crate::policy::Glob;
use crate::time::Timestamp;

/// Longest name (node, pod, deployment id…): a Kubernetes object name.
pub const MAX_NAME: usize = 253;

/// The largest value of a usage event's unit (a count of tokens or requests, GPU-seconds).
pub const MAX_UNITS: i64 = 1_000_000_000_000_000;

/// A JSON value as received, before it is given a type.
#[derive(Debug, Clone, PartialEq)]
pub enum Loose {
    Null,
    Bool(bool),
    /// A number, as its shortest decimal text (so `0.82` stays `0.82`).
    Number(String),
    Str(String),
    Array(Vec<Loose>),
    Object(BTreeMap<String, Loose>),
}

impl Loose {
    pub fn kind(&self) -> &'static str {
        match self {
            Loose::Null => "null",
            Loose::Bool(_) => "a boolean",
            Loose::Number(_) => "a number",
            Loose::Str(_) => "a string",
            Loose::Array(_) => "an array",
            Loose::Object(_) => "an object",
        }
    }
}

/// The name under which serde_json, built with `arbitrary_precision` (as this workspace is), carries a number's
/// text as written: what it hands a visitor, and what it writes as is (the way `serde_json::Number` serializes
/// itself). Numbers thus travel exactly, and the engine needs no JSON dependency.
pub(crate) const EXACT_NUMBER: &str = "$serde_json::private::Number";

impl<'de> Deserialize<'de> for Loose {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Loose;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_unit<E>(self) -> Result<Loose, E> {
                Ok(Loose::Null)
            }
            fn visit_none<E>(self) -> Result<Loose, E> {
                Ok(Loose::Null)
            }
            fn visit_bool<E>(self, v: bool) -> Result<Loose, E> {
                Ok(Loose::Bool(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Loose, E> {
                Ok(Loose::Number(v.to_string()))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Loose, E> {
                Ok(Loose::Number(v.to_string()))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Loose, E> {
                // serde_json built with `arbitrary_precision` (as this workspace is) never hands a number over as
                // a float; a deserializer that does has already rounded it. Refused, never read through a float.
                Err(E::custom(format_args!(
                    "the number {v} arrived as a floating-point value: numbers are read exactly, from their text"
                )))
            }
            fn visit_str<E>(self, v: &str) -> Result<Loose, E> {
                Ok(Loose::Str(v.to_string()))
            }
            fn visit_string<E>(self, v: String) -> Result<Loose, E> {
                Ok(Loose::Str(v))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Loose, A::Error> {
                let mut items = Vec::new();
                while let Some(v) = seq.next_element::<Loose>()? {
                    items.push(v);
                }
                Ok(Loose::Array(items))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Loose, A::Error> {
                let mut m = BTreeMap::new();
                while let Some(k) = map.next_key::<String>()? {
                    if k == EXACT_NUMBER && m.is_empty() {
                        // serde_json (`arbitrary_precision`) hands a number over as its text, exactly as written.
                        return Ok(Loose::Number(map.next_value::<String>()?));
                    }
                    let v: Loose = map.next_value()?;
                    m.insert(k, v);
                }
                Ok(Loose::Object(m))
            }
        }
        d.deserialize_any(V)
    }
}

/// An absolute `http` or `https` URL with a host, at most 2048 characters (a webhook, a provider's endpoint),
/// trimmed: a URI (RFC 3986), so only its characters (ASCII letters, digits, `-._~:/?#[]@!$&'()*+,;=`, and `%`
/// followed by two hex digits); anything else percent-encoded, an international host in punycode.
pub fn http_url(field: &str, s: &str) -> Result<String, FieldError> {
    let bad = || {
        FieldError::new(
            field,
            "must be an http:// or https:// URL with a host, in URI characters (percent-encode others) \
             (e.g. https://hooks.example.com/eai)",
        )
    };
    let s = s.trim();
    let rest = s
        .strip_prefix("https://")
        .or_else(|| s.strip_prefix("http://"))
        .ok_or_else(bad)?;
    let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if host.is_empty() || host.starts_with(':') || s.len() > 2048 || !uri_characters(s) {
        return Err(bad());
    }
    Ok(s.to_string())
}

/// Only the characters of a URI (RFC 3986: unreserved, reserved, and `%` with two hex digits).
fn uri_characters(s: &str) -> bool {
    let b = s.as_bytes();
    b.iter().enumerate().all(|(i, &c)| match c {
        b'%' => b.len() > i + 2 && b[i + 1].is_ascii_hexdigit() && b[i + 2].is_ascii_hexdigit(),
        c => c.is_ascii_alphanumeric() || b"-._~:/?#[]@!$&'()*+,;=".contains(&c),
    })
}

/// A JSON object whose values are all scalars (strings, numbers, booleans, null), its strings borrowed from the
/// text it was read from where they hold no escape: a sample as a sampler sends it, read without making a
/// [`Loose`] tree of it (a batch holds thousands). An object with a nested value, or anything else, does not
/// deserialize as one: the caller then reads the body as [`Loose`] values, as before. Read with
/// [`Record::flat`], it gives exactly what [`Record::new`] gives for the same text (the fuzz target `samples`
/// checks it): a repeated key's last value wins, unknown keys are reported in name order, once.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct FlatObject<'a> {
    fields: Vec<(Cow<'a, str>, Scalar<'a>)>,
}

#[derive(Debug, Clone, PartialEq)]
enum Scalar<'a> {
    Null,
    Bool(bool),
    Number(Cow<'a, str>),
    Str(Cow<'a, str>),
}

/// A string, borrowed from the input when it can be.
struct Text<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Text<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(v.to_string())))
            }
            fn visit_string<E>(self, v: String) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

impl<'de> Deserialize<'de> for Scalar<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Scalar<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string, a number, a boolean or null")
            }
            fn visit_unit<E>(self) -> Result<Scalar<'de>, E> {
                Ok(Scalar::Null)
            }
            fn visit_none<E>(self) -> Result<Scalar<'de>, E> {
                Ok(Scalar::Null)
            }
            fn visit_bool<E>(self, v: bool) -> Result<Scalar<'de>, E> {
                Ok(Scalar::Bool(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Scalar<'de>, E> {
                Ok(Scalar::Number(Cow::Owned(v.to_string())))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Scalar<'de>, E> {
                Ok(Scalar::Number(Cow::Owned(v.to_string())))
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Scalar<'de>, E> {
                Ok(Scalar::Str(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Scalar<'de>, E> {
                Ok(Scalar::Str(Cow::Owned(v.to_string())))
            }
            fn visit_string<E>(self, v: String) -> Result<Scalar<'de>, E> {
                Ok(Scalar::Str(Cow::Owned(v)))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Scalar<'de>, A::Error> {
                // Only a number as serde_json (`arbitrary_precision`) hands it over: its text under one key.
                match map.next_key::<Text<'de>>()? {
                    Some(k) if k.0 == EXACT_NUMBER => {
                        let text = map.next_value::<Text<'de>>()?;
                        Ok(Scalar::Number(text.0))
                    }
                    _ => Err(serde::de::Error::custom("a nested object")),
                }
            }
        }
        d.deserialize_any(V)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for FlatObject<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = FlatObject<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object of scalar values")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<FlatObject<'de>, A::Error> {
                let mut fields = Vec::with_capacity(16);
                while let Some(k) = map.next_key::<Text<'de>>()? {
                    if k.0 == EXACT_NUMBER && fields.is_empty() {
                        return Err(serde::de::Error::custom("a number, not an object"));
                    }
                    fields.push((k.0, map.next_value::<Scalar<'de>>()?));
                }
                Ok(FlatObject { fields })
            }
        }
        d.deserialize_map(V)
    }
}

/// A field's value as a [`Record`] reads it (null is no value).
#[derive(Debug, Clone, Copy)]
pub enum Val<'a> {
    Bool(bool),
    Number(&'a str),
    Str(&'a str),
    Array(&'a [Loose]),
    Object(&'a BTreeMap<String, Loose>),
}

impl Val<'_> {
    pub fn kind(&self) -> &'static str {
        match self {
            Val::Bool(_) => "a boolean",
            Val::Number(_) => "a number",
            Val::Str(_) => "a string",
            Val::Array(_) => "an array",
            Val::Object(_) => "an object",
        }
    }
}

#[derive(Debug)]
enum Fields<'a> {
    Tree(&'a BTreeMap<String, Loose>),
    Flat(&'a [(Cow<'a, str>, Scalar<'a>)]),
}

/// One JSON object being read field by field; errors accumulate instead of stopping at the first.
#[derive(Debug)]
pub struct Record<'a> {
    fields: Fields<'a>,
    pub errors: Vec<FieldError>,
}

impl<'a> Record<'a> {
    pub fn new(value: &'a Loose, what: &str) -> Result<Self, FieldError> {
        match value {
            Loose::Object(fields) => Ok(Record {
                fields: Fields::Tree(fields),
                errors: Vec::new(),
            }),
            other => Err(FieldError::new(
                what,
                format!("must be an object, not {}", other.kind()),
            )),
        }
    }

    /// A record of a [`FlatObject`].
    pub fn flat(value: &'a FlatObject<'a>) -> Self {
        Record {
            fields: Fields::Flat(&value.fields),
            errors: Vec::new(),
        }
    }

    pub(crate) fn get(&self, name: &str) -> Option<Val<'a>> {
        match self.fields {
            Fields::Tree(m) => match m.get(name)? {
                Loose::Null => None,
                Loose::Bool(b) => Some(Val::Bool(*b)),
                Loose::Number(n) => Some(Val::Number(n)),
                Loose::Str(s) => Some(Val::Str(s)),
                Loose::Array(a) => Some(Val::Array(a)),
                Loose::Object(o) => Some(Val::Object(o)),
            },
            // The last of a repeated key, as a map keeps it.
            Fields::Flat(f) => match &f.iter().rev().find(|(k, _)| k == name)?.1 {
                Scalar::Null => None,
                Scalar::Bool(b) => Some(Val::Bool(*b)),
                Scalar::Number(n) => Some(Val::Number(n)),
                Scalar::Str(s) => Some(Val::Str(s)),
            },
        }
    }

    pub(crate) fn fail(&mut self, name: &str, reason: impl Into<String>) {
        self.errors.push(FieldError::new(name, reason));
    }

    /// Rejects fields this record does not know (a typo must not silently become a default).
    pub fn deny_unknown(&mut self, known: &[&str]) {
        let mut unknown: Vec<String> = match self.fields {
            Fields::Tree(m) => m
                .keys()
                .filter(|k| !known.contains(&k.as_str()))
                .cloned()
                .collect(),
            Fields::Flat(f) => f
                .iter()
                .map(|(k, _)| k.as_ref())
                .filter(|k| !known.contains(k))
                .map(str::to_string)
                .collect(),
        };
        // In name order, once each: as a map holds them.
        unknown.sort_unstable();
        unknown.dedup();
        for k in unknown {
            // A field is always named: an empty key is shown as `""`.
            let name = if k.is_empty() { "\"\"" } else { k.as_str() };
            self.fail(name, "is not a known field");
        }
    }

    pub fn opt_str(&mut self, name: &str, max: usize) -> Option<String> {
        match self.get(name)? {
            Val::Str(s) if s.trim().is_empty() => {
                self.fail(name, "must not be empty");
                None
            }
            Val::Str(s) if s.chars().count() > max => {
                self.fail(name, format!("must be at most {max} characters"));
                None
            }
            Val::Str(s) => Some(s.to_string()),
            other => {
                let k = other.kind();
                self.fail(name, format!("must be a string, not {k}"));
                None
            }
        }
    }

    pub fn req_str(&mut self, name: &str, max: usize) -> Option<String> {
        if self.get(name).is_none() {
            self.fail(name, "is required");
            return None;
        }
        self.opt_str(name, max)
    }

    pub fn opt_bool(&mut self, name: &str) -> Option<bool> {
        match self.get(name)? {
            Val::Bool(b) => Some(b),
            other => {
                let k = other.kind();
                self.fail(name, format!("must be true or false, not {k}"));
                None
            }
        }
    }

    /// A decimal given as a JSON number or a decimal string, within `[min, max]` and with at most `max_dp`
    /// places (more are rounded to `max_dp` when `round` is set, rejected otherwise).
    pub fn opt_decimal(&mut self, name: &str, bounds: Bounds) -> Option<Decimal> {
        let text = match self.get(name)? {
            Val::Number(n) => n,
            Val::Str(s) => s.trim(),
            other => {
                let k = other.kind();
                self.fail(
                    name,
                    format!("must be a number or a decimal string, not {k}"),
                );
                return None;
            }
        };
        let parsed = if text.contains(['e', 'E']) {
            // A JSON number may carry an exponent (`1e-7`, `2.5E+3`): read exactly, never through a float.
            Decimal::from_scientific(&text.to_ascii_lowercase().replace("e+", "e"))
        } else {
            Decimal::from_str(text)
        };
        let Ok(mut d) = parsed else {
            self.fail(name, format!("`{text}` is not a decimal number"));
            return None;
        };
        if d.scale() > bounds.dp {
            if bounds.round {
                d = d.round_dp(bounds.dp);
            } else {
                self.fail(
                    name,
                    format!("must have at most {} decimal places", bounds.dp),
                );
                return None;
            }
        }
        let below = if bounds.min_exclusive {
            d <= bounds.min
        } else {
            d < bounds.min
        };
        if below || d > bounds.max {
            let low = if bounds.min_exclusive {
                "above"
            } else {
                "at least"
            };
            let reason =
                if bounds.min == Decimal::ZERO && !bounds.min_exclusive && d < Decimal::ZERO {
                    "must not be negative".to_string()
                } else {
                    format!("must be {low} {} and at most {}", bounds.min, bounds.max)
                };
            self.fail(name, reason);
            return None;
        }
        Some(d.normalize())
    }

    pub fn req_decimal(&mut self, name: &str, bounds: Bounds) -> Option<Decimal> {
        if self.get(name).is_none() {
            self.fail(name, "is required");
            return None;
        }
        self.opt_decimal(name, bounds)
    }

    pub fn opt_parsed<T>(
        &mut self,
        name: &str,
        parse: impl FnOnce(&str) -> Result<T, FieldError>,
    ) -> Option<T> {
        let s = self.opt_str(name, MAX_NAME)?;
        match parse(&s) {
            Ok(v) => Some(v),
            Err(e) => {
                self.errors.push(e.field(name));
                None
            }
        }
    }

    /// The object under `name`, read by `read` as a record of its own; its errors are named `name.field`.
    pub fn nested<T>(
        &mut self,
        name: &str,
        read: impl FnOnce(&mut Record<'_>) -> Option<T>,
    ) -> Option<T> {
        let mut sub = match self.get(name)? {
            Val::Object(fields) => Record {
                fields: Fields::Tree(fields),
                errors: Vec::new(),
            },
            other => {
                let k = other.kind();
                self.errors
                    .push(FieldError::new(name, format!("must be an object, not {k}")));
                return None;
            }
        };
        let out = read(&mut sub);
        for mut e in sub.errors.drain(..) {
            e.field = format!("{name}.{}", e.field);
            self.errors.push(e);
        }
        out
    }

    /// The tenant of a record: a credential's own (`tenant_id` may repeat it, not name another), or the body's
    /// `tenant_id` for a platform identity (required then: the tenant `X-EAI-Tenant` names comes as a credential).
    pub fn tenant(&mut self, source: TenantSource) -> Option<TenantId> {
        let body = self.opt_parsed("tenant_id", TenantId::from_str);
        match (source, body) {
            (TenantSource::Credential(t), None) => Some(t),
            (TenantSource::Credential(t), Some(b)) if b == t => Some(t),
            (TenantSource::Credential(_), Some(_)) => {
                self.fail("tenant_id", "differs from the caller's tenant; omit it");
                None
            }
            (TenantSource::Body, Some(b)) => Some(b),
            (TenantSource::Body, None) => {
                if self.get("tenant_id").is_none() {
                    self.fail(
                        "tenant_id",
                        "is required (or name the tenant with X-EAI-Tenant)",
                    );
                }
                None
            }
        }
    }

    /// The array under `name`.
    pub fn opt_array(&mut self, name: &str) -> Option<&'a [Loose]> {
        match self.get(name)? {
            Val::Array(items) => Some(items),
            other => {
                let k = other.kind();
                self.fail(name, format!("must be an array, not {k}"));
                None
            }
        }
    }

    /// A whole number in `0..=max` (a JSON integer or an integer string).
    pub fn opt_count(&mut self, name: &str, max: i64) -> Option<u64> {
        let bounds = Bounds {
            dp: 0,
            round: false,
            ..Bounds::non_negative(max, 0)
        };
        let d = self.opt_decimal(name, bounds)?;
        u64::try_from(d.mantissa()).ok().filter(|_| d.scale() == 0)
    }

    pub fn object(&mut self, name: &str) -> Option<&'a BTreeMap<String, Loose>> {
        match self.get(name)? {
            Val::Object(m) => Some(m),
            other => {
                let k = other.kind();
                self.fail(name, format!("must be an object, not {k}"));
                None
            }
        }
    }
}

/// Accepted range and precision of a decimal field.
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    pub min: Decimal,
    pub min_exclusive: bool,
    pub max: Decimal,
    pub dp: u32,
    pub round: bool,
}

impl Bounds {
    /// `0 <= x <= max`, rounded to `dp` places.
    pub fn non_negative(max: i64, dp: u32) -> Self {
        Bounds {
            min: Decimal::ZERO,
            min_exclusive: false,
            max: Decimal::from(max),
            dp,
            round: true,
        }
    }
    /// A price: `0 <= x <= max`, at most 10 places, never rounded.
    pub fn price(max: i64) -> Self {
        Bounds {
            min: Decimal::ZERO,
            min_exclusive: false,
            max: Decimal::from(max),
            dp: 10,
            round: false,
        }
    }
}

/// Bounds of the sample fields. They keep every sum of a fleet's month far inside a decimal's 28 digits.
pub mod sample_bounds {
    use super::*;
    pub fn window() -> Bounds {
        Bounds {
            min: Decimal::ZERO,
            min_exclusive: true,
            max: Decimal::from(3600),
            dp: 3,
            round: false,
        }
    }
    pub fn utilization() -> Bounds {
        Bounds {
            min: Decimal::ZERO,
            min_exclusive: false,
            max: Decimal::ONE,
            dp: 6,
            round: true,
        }
    }
    pub fn fraction() -> Bounds {
        Bounds {
            min: Decimal::ZERO,
            min_exclusive: true,
            max: Decimal::ONE,
            dp: 6,
            round: true,
        }
    }
    pub fn memory_gb() -> Bounds {
        Bounds::non_negative(1 << 20, 10)
    }
    pub fn power_w() -> Bounds {
        Bounds::non_negative(1_000_000, 6)
    }
    pub fn storage_gb() -> Bounds {
        Bounds::non_negative(1_000_000_000, 6)
    }
}

/// The fields a sample may have (any other is refused).
pub const SAMPLE_FIELDS: &[&str] = &[
    "node",
    "gpu_uuid",
    "model",
    "namespace",
    "pod",
    "tenant_id",
    "deployment_id",
    "window_seconds",
    "utilization",
    "memory_used_gb",
    "power_w",
    "timestamp",
    "storage_gb",
    "gpu_fraction",
    "share_method",
];

/// Parses one sample. `now` stands in for a missing `timestamp` (time of receipt).
pub fn parse_sample(v: &Loose, now: Timestamp) -> Result<Sample, Vec<FieldError>> {
    sample_of(Record::new(v, "sample").map_err(|e| vec![e])?, now)
}

/// [`parse_sample`] of a sample read as a [`FlatObject`]: the same answer for the same text.
pub fn parse_flat_sample(v: &FlatObject<'_>, now: Timestamp) -> Result<Sample, Vec<FieldError>> {
    sample_of(Record::flat(v), now)
}

fn sample_of(mut r: Record<'_>, now: Timestamp) -> Result<Sample, Vec<FieldError>> {
    r.deny_unknown(SAMPLE_FIELDS);
    let node = r.req_str("node", MAX_NAME);
    let gpu_uuid = r.req_str("gpu_uuid", MAX_NAME);
    let model = r.req_str("model", MAX_NAME);
    let namespace = r.req_str("namespace", MAX_NAME);
    let pod = r.req_str("pod", MAX_NAME);
    let deployment_id = r.req_str("deployment_id", MAX_NAME);
    let owner = r.opt_parsed("tenant_id", TenantId::from_str);
    let window = r.req_decimal("window_seconds", sample_bounds::window());
    let utilization = r.req_decimal("utilization", sample_bounds::utilization());
    let memory = r.req_decimal("memory_used_gb", sample_bounds::memory_gb());
    let power = r.req_decimal("power_w", sample_bounds::power_w());
    let end = r.opt_parsed("timestamp", Timestamp::parse_rfc3339);
    let storage = r.opt_decimal("storage_gb", sample_bounds::storage_gb());
    let fraction = r.opt_decimal("gpu_fraction", sample_bounds::fraction());
    let share_method = r.opt_parsed("share_method", |v: &str| {
        v.parse::<ShareMethod>().map_err(|()| {
            FieldError::new(
                "share_method",
                "must be one of exclusive, mig, measured, equal",
            )
        })
    });
    if !r.errors.is_empty() {
        return Err(r.errors);
    }
    let (Some(node), Some(gpu_uuid), Some(model), Some(namespace), Some(pod), Some(deployment_id)) =
        (node, gpu_uuid, model, namespace, pod, deployment_id)
    else {
        return Err(vec![FieldError::new("sample", "is incomplete")]);
    };
    let (Some(window), Some(utilization), Some(memory), Some(power)) =
        (window, utilization, memory, power)
    else {
        return Err(vec![FieldError::new("sample", "is incomplete")]);
    };
    // Bounds: above 0, at most 3600 s with at most 3 places, so a whole number of ms in 1..=3,600,000.
    let window_ms = i64::try_from((window * Decimal::from(1000)).trunc())
        .ok()
        .and_then(WindowMs::new)
        .ok_or_else(|| {
            vec![FieldError::new(
                "window_seconds",
                "must be above 0 and at most 3600",
            )]
        })?;
    let fraction = match fraction {
        None => GpuFraction::WHOLE,
        Some(f) => GpuFraction::new(f).ok_or_else(|| {
            vec![FieldError::new(
                "gpu_fraction",
                "must be above 0 and at most 1",
            )]
        })?,
    };
    let to_non_neg = |d: Decimal| NonNegative::new(d).unwrap_or(NonNegative::ZERO);
    Ok(Sample {
        node,
        gpu_uuid,
        model,
        namespace,
        pod,
        deployment_id,
        owner,
        window_ms,
        end: end.unwrap_or(now),
        utilization: UnitInterval::new(utilization)
            .ok_or_else(|| vec![FieldError::new("utilization", "must be between 0 and 1")])?,
        memory_used_gb: to_non_neg(memory),
        power_w: to_non_neg(power),
        storage_gb: to_non_neg(storage.unwrap_or_default()),
        gpu_fraction: fraction,
        share_method: share_method.unwrap_or_default(),
    })
}

/// Parses a batch of samples: all or nothing, with every error located by index.
pub fn parse_samples(values: &[Loose], now: Timestamp) -> Result<Vec<Sample>, Vec<FieldError>> {
    each_sample(values, now, parse_sample)
}

/// [`parse_samples`] of samples read as [`FlatObject`]s.
pub fn parse_flat_samples(
    values: &[FlatObject<'_>],
    now: Timestamp,
) -> Result<Vec<Sample>, Vec<FieldError>> {
    each_sample(values, now, parse_flat_sample)
}

fn each_sample<T>(
    values: &[T],
    now: Timestamp,
    parse: impl Fn(&T, Timestamp) -> Result<Sample, Vec<FieldError>>,
) -> Result<Vec<Sample>, Vec<FieldError>> {
    let mut out = Vec::with_capacity(values.len());
    let mut errors = Vec::new();
    for (i, v) in values.iter().enumerate() {
        match parse(v, now) {
            Ok(s) => out.push(s),
            Err(es) => errors.extend(es.into_iter().map(|e| e.at(i))),
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

/// The fields a new allocation policy may have (any other is refused).
pub const POLICY_FIELDS: &[&str] = &[
    "name",
    "deployment_pattern",
    "gpu_model",
    "currency",
    "gpu_hourly_cost",
    "overhead_pct",
    "energy_kwh_price",
    "pue",
    "storage_gb_month_price",
    "idle_capacity",
    "output_token_weight",
    "enabled",
    "effective_from",
    "effective_to",
];

/// Parses a new allocation policy. `now` is the default `effective_from`.
pub fn parse_policy(v: &Loose, now: Timestamp) -> Result<PolicySpec, Vec<FieldError>> {
    let mut r = Record::new(v, "policy").map_err(|e| vec![e])?;
    r.deny_unknown(POLICY_FIELDS);
    let name = r.req_str("name", 200);
    let pattern = r.opt_parsed("deployment_pattern", |s| {
        Glob::new(s)
            .ok_or_else(|| FieldError::new("deployment_pattern", "must be a non-empty glob"))
    });
    let gpu_model = r.opt_str("gpu_model", MAX_NAME);
    let currency = r.opt_parsed("currency", Currency::from_str);
    let hourly = r.req_decimal("gpu_hourly_cost", Bounds::price(1_000_000_000));
    let overhead = r.opt_decimal("overhead_pct", Bounds::price(10_000));
    let energy = r.opt_decimal("energy_kwh_price", Bounds::price(1_000_000));
    let pue = r.opt_decimal(
        "pue",
        Bounds {
            min: Decimal::ONE,
            ..Bounds::price(100)
        },
    );
    let storage = r.opt_decimal("storage_gb_month_price", Bounds::price(1_000_000));
    let idle = r.opt_parsed("idle_capacity", IdleCapacity::from_str);
    // An output token weighs from a tenth of an input token to a thousand of them.
    let weight = r.opt_decimal(
        "output_token_weight",
        Bounds {
            min: Decimal::new(1, 1),
            ..Bounds::price(1_000)
        },
    );
    let enabled = r.opt_bool("enabled");
    let from = r.opt_parsed("effective_from", Timestamp::parse_date_or_datetime);
    let to = r.opt_parsed("effective_to", Timestamp::parse_date_or_datetime);
    let from = from.unwrap_or(now);
    if let Some(t) = to {
        if t <= from {
            r.fail("effective_to", "must be after effective_from");
        }
    }
    if !r.errors.is_empty() {
        return Err(r.errors);
    }
    let (Some(name), Some(hourly)) = (name, hourly) else {
        return Err(vec![FieldError::new("policy", "is incomplete")]);
    };
    let nn =
        |d: Option<Decimal>| NonNegative::new(d.unwrap_or_default()).unwrap_or(NonNegative::ZERO);
    Ok(PolicySpec {
        name,
        deployment_pattern: pattern.unwrap_or_else(Glob::any),
        gpu_model,
        currency: currency.unwrap_or(Currency::USD),
        gpu_hourly_cost: nn(Some(hourly)),
        overhead_pct: nn(overhead),
        energy_kwh_price: nn(energy),
        pue: pue.and_then(Pue::new).unwrap_or(Pue::ONE),
        storage_gb_month_price: nn(storage),
        idle_capacity: idle.unwrap_or_default(),
        output_token_weight: weight.and_then(TokenWeight::new).unwrap_or_default(),
        enabled: enabled.unwrap_or(true),
        effective_from: from,
        effective_to: to,
    })
}

/// Where an event's tenant comes from: the credential (a tenant key), or the body (a platform identity).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TenantSource {
    Credential(TenantId),
    Body,
}

/// The fields a usage event may have (any other is refused).
pub const EVENT_FIELDS: &[&str] = &[
    "event_id",
    "schema_version",
    "tenant_id",
    "usage_type",
    "source",
    "occurred_at",
    "deployment_id",
    "model",
    "units",
    "cost",
    "allocation_policy_id",
    "project",
    "agent_id",
    "run_id",
];

fn unit_name_ok(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

/// Parses one usage event (contract usage-event.schema.json, schema_version "1.0").
pub fn parse_usage_event(v: &Loose, tenant: TenantSource) -> Result<UsageEvent, Vec<FieldError>> {
    let mut r = Record::new(v, "event").map_err(|e| vec![e])?;
    r.deny_unknown(EVENT_FIELDS);
    let event_id = r.opt_parsed("event_id", |s| {
        Uuid::parse_str(s).map_err(|_| FieldError::new("event_id", "must be a uuid"))
    });
    if r.get("event_id").is_none() {
        r.fail("event_id", "is required");
    }
    match r.opt_str("schema_version", 16).as_deref() {
        Some("1.0") => {}
        Some(other) => r.fail(
            "schema_version",
            format!("must be \"1.0\", not \"{other}\""),
        ),
        None => r.fail("schema_version", "is required"),
    }
    let measured = matches!(r.get("source"), Some(Val::Str(s)) if s == VLLM_SOURCE);
    let body_tenant = r.opt_parsed("tenant_id", TenantId::from_str);
    let tenant_id = match (tenant, body_tenant) {
        // A vLLM server's counters: the whole deployment's, no tenant's.
        _ if measured => {
            if r.get("tenant_id").is_some() {
                r.fail(
                    "tenant_id",
                    "must be omitted on `source: vllm` events (a deployment's own counters belong to no tenant)",
                );
            }
            Some(TenantId::PLATFORM)
        }
        (TenantSource::Credential(t), None) => Some(t),
        (TenantSource::Credential(t), Some(b)) if b == t => Some(t),
        (TenantSource::Credential(_), Some(_)) => {
            r.fail(
                "tenant_id",
                "differs from the tenant of the credential; omit it",
            );
            None
        }
        (TenantSource::Body, Some(b)) => Some(b),
        (TenantSource::Body, None) => {
            if r.get("tenant_id").is_none() {
                r.fail("tenant_id", "is required for a platform identity");
            }
            None
        }
    };
    let usage_type = r.req_str("usage_type", 64);
    let source = r.req_str("source", 64);
    let occurred_at = r.opt_parsed("occurred_at", Timestamp::parse_rfc3339);
    if r.get("occurred_at").is_none() {
        r.fail("occurred_at", "is required");
    }
    let deployment_id = r.opt_str("deployment_id", MAX_NAME);
    let model = r.object("model").and_then(|m| {
        let provider = match m.get("provider") {
            Some(Loose::Str(s)) if !s.is_empty() && s.len() <= 64 => s.clone(),
            _ => {
                r.fail("model.provider", "must be a non-empty string");
                return None;
            }
        };
        let name = match m.get("name") {
            Some(Loose::Str(s)) if !s.is_empty() && s.len() <= MAX_NAME => s.clone(),
            _ => {
                r.fail("model.name", "must be a non-empty string");
                return None;
            }
        };
        Some(ModelRef { provider, name })
    });
    let mut units = BTreeMap::new();
    match r.object("units") {
        Some(m) => {
            let b = Bounds::non_negative(MAX_UNITS, 6);
            for (k, v) in m {
                let field = format!("units.{k}");
                if !unit_name_ok(k) {
                    r.fail(&field, "unit names are lowercase letters, digits and _");
                    continue;
                }
                let wrapper: BTreeMap<String, Loose> =
                    [(field.clone(), v.clone())].into_iter().collect();
                let wrapped = Loose::Object(wrapper);
                let mut sub = Record::new(&wrapped, "units").map_err(|e| vec![e])?;
                if let Some(d) = sub.req_decimal(&field, b) {
                    units.insert(k.clone(), NonNegative::new(d).unwrap_or(NonNegative::ZERO));
                }
                r.errors.append(&mut sub.errors);
            }
        }
        None => {
            if r.get("units").is_none() {
                r.fail("units", "is required");
            }
        }
    }
    let cost = r.object("cost").and_then(|m| {
        let wrapped = Loose::Object(m.clone());
        let mut sub = Record::new(&wrapped, "cost").ok()?;
        let amount = sub.req_decimal("amount", Bounds::price(1_000_000_000_000));
        let currency = sub.opt_parsed("currency", Currency::from_str);
        if sub.get("currency").is_none() {
            sub.fail("currency", "is required");
        }
        for mut e in sub.errors.drain(..) {
            e.field = format!("cost.{}", e.field);
            r.errors.push(e);
        }
        Some((NonNegative::new(amount?)?, currency?))
    });
    let allocation_policy_id = r.opt_str("allocation_policy_id", 64);
    let project = r.opt_str("project", MAX_NAME);
    let agent_id = r.opt_str("agent_id", MAX_NAME);
    let run_id = r.opt_str("run_id", MAX_NAME);
    if !r.errors.is_empty() {
        return Err(r.errors);
    }
    let (Some(event_id), Some(tenant_id), Some(usage_type), Some(source), Some(occurred_at)) =
        (event_id, tenant_id, usage_type, source, occurred_at)
    else {
        return Err(vec![FieldError::new("event", "is incomplete")]);
    };
    Ok(UsageEvent {
        event_id,
        tenant_id,
        usage_type,
        source,
        occurred_at,
        deployment_id,
        model,
        units,
        cost,
        allocation_policy_id,
        project,
        agent_id,
        run_id,
    })
}

/// Parses a batch of usage events: all or nothing, every error located by index.
pub fn parse_usage_events(
    values: &[Loose],
    tenant: TenantSource,
) -> Result<Vec<UsageEvent>, Vec<FieldError>> {
    let mut out = Vec::with_capacity(values.len());
    let mut errors = Vec::new();
    for (i, v) in values.iter().enumerate() {
        match parse_usage_event(v, tenant) {
            Ok(e) => out.push(e),
            Err(es) => errors.extend(es.into_iter().map(|e| e.at(i))),
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

/// A stored policy as the API and files show it (also what `allocate --policies FILE` reads back).
pub fn parse_stored_policy(v: &Loose, index: usize) -> Result<Policy, Vec<FieldError>> {
    let Loose::Object(m) = v else {
        return Err(vec![
            FieldError::new("policy", "must be an object").at(index)
        ]);
    };
    let seq = match m.get("id") {
        Some(Loose::Str(id)) => id.strip_prefix("alp_").and_then(|n| n.parse::<u64>().ok()),
        None => Some(index as u64 + 1),
        _ => None,
    };
    let Some(seq) = seq else {
        return Err(vec![FieldError::new("id", "must look like alp_1").at(index)]);
    };
    let mut rest = m.clone();
    for k in ["id", "status", "created_at", "created_by"] {
        rest.remove(k);
    }
    let spec = parse_policy(&Loose::Object(rest), Timestamp(0))
        .map_err(|es| es.into_iter().map(|e| e.at(index)).collect::<Vec<_>>())?;
    Ok(Policy::new(seq, spec))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decimal(json: &str, bounds: Bounds) -> (Option<Decimal>, Vec<FieldError>) {
        let v: Loose = serde_json::from_str(&format!(r#"{{"x": {json}}}"#)).expect("json");
        let mut r = Record::new(&v, "r").expect("object");
        (r.opt_decimal("x", bounds), r.errors)
    }

    #[test]
    fn http_urls_are_uris() {
        for ok in [
            "https://hooks.example.com/eai",
            "http://10.0.0.7:8000/v1",
            "http://[::1]:8000/v1?x=a%20b#f",
            "  https://xn--exmple-cua.com/ ",
        ] {
            assert_eq!(http_url("u", ok), Ok(ok.trim().to_string()), "{ok}");
        }
        for bad in [
            "https://R\u{92}\u{f5}\u{fb}?\u{95}",
            "https://exämple.com/",
            "https://a.example.com/a b",
            "https://a.example.com/%zz",
            "https://a.example.com/%2",
            "https://a.example.com/<x>",
            "ftp://a.example.com/",
            "https://",
            "https://:80/",
        ] {
            assert_eq!(
                http_url("u", bad).map_err(|e| e.field),
                Err("u".to_string()),
                "{bad}"
            );
        }
    }

    #[test]
    fn json_numbers_arrive_digit_for_digit() {
        // 0.1 + 17 more digits is not a double: a float round trip would print 0.1.
        let long = "0.10000000000000000001";
        assert_eq!(
            decimal(long, Bounds::non_negative(1, 20)).0,
            Some(Decimal::from_str(long).expect("d"))
        );
        assert_eq!(
            decimal("2.5E+3", Bounds::non_negative(10_000, 6)).0,
            Some(Decimal::from(2500))
        );
        assert_eq!(
            decimal("1e-7", Bounds::non_negative(1, 10)).0,
            Some(Decimal::new(1, 7))
        );
        assert_eq!(
            decimal("12345678901234567.5", Bounds::non_negative(i64::MAX, 1)).0,
            Some(Decimal::from_str("12345678901234567.5").expect("d"))
        );
        // An empty key is still named in the error.
        let v: Loose = serde_json::from_str(r#"{"": 1}"#).expect("json");
        let mut r = Record::new(&v, "r").expect("object");
        r.deny_unknown(&["x"]);
        assert_eq!(r.errors[0].field, "\"\"");
        // A price keeps its places or is refused, whether a number or a string.
        let (d, errors) = decimal("2.00000000001", Bounds::price(10));
        assert_eq!((d, errors.len()), (None, 1));
    }

    #[test]
    fn a_number_never_goes_through_a_float() {
        // Through a `serde_json::Value` too (what a handler holds once it has looked at a body): its text.
        let long = "0.10000000000000000001";
        let value: serde_json::Value = serde_json::from_str(long).expect("json");
        assert_eq!(
            serde_json::from_value::<Loose>(value).expect("loose"),
            Loose::Number(long.into())
        );
        // A deserializer that hands over a float has rounded the number already: refused, not read.
        use serde::de::IntoDeserializer;
        let from_float: Result<Loose, serde::de::value::Error> =
            Loose::deserialize(0.1f64.into_deserializer());
        let e = from_float.expect_err("a float is refused");
        assert!(e.to_string().contains("floating-point"), "{e}");
        // Integers are exact whatever the deserializer.
        let from_int: Result<Loose, serde::de::value::Error> =
            Loose::deserialize(u64::MAX.into_deserializer());
        assert_eq!(from_int.expect("int"), Loose::Number(u64::MAX.to_string()));
    }

    fn sample_with(tenant: &str, window: &str) -> Result<Sample, Vec<FieldError>> {
        let json = format!(
            r#"{{"node": "n", "gpu_uuid": "GPU-1", "model": "H100", "namespace": "ns", "pod": "p",
                "deployment_id": "d", "window_seconds": {window}, "utilization": 0.5,
                "memory_used_gb": 1, "power_w": 100, "timestamp": "2026-01-01T00:00:15Z"{tenant}}}"#
        );
        let v: Loose = serde_json::from_str(&json).expect("json");
        parse_sample(&v, Timestamp(0))
    }

    #[test]
    fn a_sample_window_is_1_ms_to_an_hour() {
        assert_eq!(
            sample_with("", "0.001").expect("1 ms").window_ms,
            WindowMs::MIN
        );
        assert_eq!(
            sample_with("", "3600").expect("1 h").window_ms,
            WindowMs::MAX
        );
        for bad in ["0", "3600.001", "-1", "0.0001"] {
            let errors = sample_with("", bad).expect_err(bad);
            assert_eq!(errors[0].field, "window_seconds", "{bad}");
        }
    }

    #[test]
    fn a_sample_or_an_event_naming_the_platform_tenant_is_refused() {
        let nil = r#", "tenant_id": "00000000-0000-0000-0000-000000000000""#;
        let errors = sample_with(nil, "15").expect_err("reserved tenant");
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].field, "tenant_id");
        assert!(
            errors[0].reason.contains("reserved"),
            "{}",
            errors[0].reason
        );
        let event: Loose = serde_json::from_str(
            r#"{"event_id": "6f1c1b8e-5d0a-4c1e-9b7a-2f1d3c4b5a69", "schema_version": "1.0",
                "tenant_id": "00000000-0000-0000-0000-000000000000", "usage_type": "llm_tokens",
                "source": "gateway", "occurred_at": "2026-01-01T00:00:00Z", "units": {"tokens_in": 1}}"#,
        )
        .expect("json");
        let errors = parse_usage_event(&event, TenantSource::Body).expect_err("reserved tenant");
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(errors[0].field, "tenant_id");
    }
}
