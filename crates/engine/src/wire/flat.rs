//! A sample's flat JSON object ([`FlatObject`]): its scalars read without a [`Loose`](super::Loose) tree, strings
//! borrowed.

use std::borrow::Cow;
use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};

use super::loose::EXACT_NUMBER;

/// A JSON object whose values are all scalars (strings, numbers, booleans, null), its strings borrowed from the
/// text it was read from where they hold no escape: a sample as a sampler sends it, read without making a
/// [`Loose`](super::Loose) tree of it (a batch holds thousands). An object with a nested value, or anything else, does not
/// deserialize as one: the caller then reads the body as [`Loose`](super::Loose) values, as before. Read with
/// [`Record::flat`](super::Record::flat), it gives exactly what [`Record::new`](super::Record::new) gives for the same text (the fuzz target `samples`
/// checks it): a repeated key's last value wins, unknown keys are reported in name order, once.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct FlatObject<'a> {
    pub(super) fields: Vec<(Cow<'a, str>, Scalar<'a>)>,
}

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Scalar<'a> {
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
