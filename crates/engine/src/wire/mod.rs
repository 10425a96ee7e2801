//! The JSON shapes of the API (samples, usage events, policies) and their parsing into domain types.
//! Every field is read leniently (a number or a string, anything) so that a bad record yields one precise
//! error per bad field, with its index, instead of one opaque deserializer message.
//!
//! [`Loose`] is a JSON value as received (`loose.rs`), [`FlatObject`] a sample's flat object read without a
//! tree (`flat.rs`); a [`Record`] reads either field by field within [`Bounds`] (`record.rs`); then one file per
//! resource: samples (`sample.rs`), usage events (`event.rs`), policies (`policy.rs`).

mod event;
mod flat;
mod loose;
mod policy;
mod record;
mod sample;

pub use event::{parse_usage_event, parse_usage_events, EVENT_FIELDS};
pub use flat::FlatObject;
pub use loose::Loose;
pub(crate) use loose::EXACT_NUMBER;
pub use policy::{
    parse_policy, parse_policy_patch, parse_stored_policy, PolicyPatch, POLICY_FIELDS,
};
pub use record::{Bounds, Record, TenantSource, Val};
pub use sample::{
    parse_flat_sample, parse_flat_samples, parse_sample, parse_samples, sample_bounds,
    SAMPLE_FIELDS,
};

use crate::error::FieldError;

/// Longest name (node, pod, deployment id…): a Kubernetes object name.
pub const MAX_NAME: usize = 253;

/// The largest value of a usage event's unit (a count of tokens or requests, GPU-seconds).
pub const MAX_UNITS: i64 = 1_000_000_000_000_000;

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

#[cfg(test)]
mod tests {
    use super::http_url;

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
}
