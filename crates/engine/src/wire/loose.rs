//! A JSON value as received ([`Loose`]), before it is given a type: numbers kept as their text, digit for digit.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

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

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::Loose;

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
}
