//! One JSON object read field by field ([`Record`]), each value checked against its [`Bounds`] or parsed into
//! its domain type; the errors pile up, one per bad field, instead of stopping at the first.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::str::FromStr;

use rust_decimal::Decimal;

use super::flat::{FlatObject, Scalar};
use super::loose::Loose;
use super::MAX_NAME;
use crate::domain::TenantId;
use crate::error::FieldError;

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

    /// Whether field `name` is absent (`None`), `null` (`Some(false)`) or given (`Some(true)`).
    pub(crate) fn presence(&self, name: &str) -> Option<bool> {
        let null = match self.fields {
            Fields::Tree(m) => matches!(m.get(name)?, Loose::Null),
            Fields::Flat(f) => matches!(f.iter().rev().find(|(k, _)| k == name)?.1, Scalar::Null),
        };
        Some(!null)
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

/// Where an event's tenant comes from: the credential (a tenant key), or the body (a platform identity).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TenantSource {
    Credential(TenantId),
    Body,
}

#[cfg(test)]
mod tests {
    use std::str::FromStr;

    use rust_decimal::Decimal;

    use super::{Bounds, Loose, Record};
    use crate::error::FieldError;

    fn decimal(json: &str, bounds: Bounds) -> (Option<Decimal>, Vec<FieldError>) {
        let v: Loose = serde_json::from_str(&format!(r#"{{"x": {json}}}"#)).expect("json");
        let mut r = Record::new(&v, "r").expect("object");
        (r.opt_decimal("x", bounds), r.errors)
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
}
