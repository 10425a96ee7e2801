//! The audit hash chain, pure: how an event is linked to the one before it, and how a chain is checked.
//!
//! `hash = hex(sha256(prev_hash || canonical_json(draft) || seq))`, where `prev_hash` is the 64 hex characters of
//! the previous event's hash (64 zeros for the first event, seq 1), `seq` is written in decimal and
//! `canonical_json` is the draft as JSON with every object's keys sorted, no whitespace. The canonical form is
//! built here, key by key, so that it does not depend on how `serde_json` happens to be compiled (its
//! `preserve_order` feature would otherwise change the bytes, and so every hash). A JSON object ends with `}`,
//! so the three parts cannot be confused with one another.
//!
//! Backends store events; they never compute hashes themselves: they call [`link`] and [`Verifier`].

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::{AuditDraft, AuditEvent, BrokenLink};

/// The `prev_hash` of the first event of a chain.
pub const GENESIS_HASH: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// The hash of event `seq` with content `draft`, following the event whose hash is `prev_hash`.
pub fn link(prev_hash: &str, seq: u64, draft: &AuditDraft) -> String {
    let mut h = Sha256::new();
    h.update(prev_hash.as_bytes());
    h.update(canonical_json(draft).as_bytes());
    h.update(seq.to_string().as_bytes());
    hex::encode(h.finalize())
}

/// The draft as canonical JSON: keys sorted at every depth, no insignificant whitespace.
pub fn canonical_json(draft: &AuditDraft) -> String {
    // Serializing a plain struct into a `Value` cannot fail: every field is a string, an option or a value.
    let value = serde_json::to_value(draft).unwrap_or(Value::Null);
    let mut out = String::with_capacity(256);
    write_canonical(&value, &mut out);
    out
}

fn write_canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort_unstable();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                if let Some(x) = m.get(k) {
                    write_canonical(x, out);
                }
            }
            out.push('}');
        }
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(x, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// Checks a chain one event at a time, from seq 1, so that a backend can stream a long chain through it.
#[derive(Debug, Clone)]
pub struct Verifier {
    next_seq: u64,
    prev_hash: String,
}

impl Default for Verifier {
    fn default() -> Self {
        Verifier {
            next_seq: 1,
            prev_hash: GENESIS_HASH.to_string(),
        }
    }
}

impl Verifier {
    pub fn new() -> Self {
        Self::default()
    }

    /// Checks the next event: its seq follows, its `prev_hash` is the previous event's hash and its own hash
    /// matches its content. On success the event becomes the previous one.
    pub fn push(&mut self, e: &AuditEvent) -> Result<(), BrokenLink> {
        if e.seq != self.next_seq {
            return Err(BrokenLink {
                seq: self.next_seq,
                reason: format!(
                    "event {} is missing (the next stored event is {})",
                    self.next_seq, e.seq
                ),
            });
        }
        if e.prev_hash != self.prev_hash {
            return Err(BrokenLink {
                seq: e.seq,
                reason: "prev_hash does not match the hash of the previous event".to_string(),
            });
        }
        if link(&e.prev_hash, e.seq, &e.draft) != e.hash {
            return Err(BrokenLink {
                seq: e.seq,
                reason: "hash does not match the event's content".to_string(),
            });
        }
        self.next_seq += 1;
        self.prev_hash.clone_from(&e.hash);
        Ok(())
    }

    /// Checks the next event as a backend stores it (the draft as JSON text): a body that no longer reads as
    /// an audit event is a broken link too.
    pub fn push_stored(
        &mut self,
        seq: u64,
        prev_hash: String,
        hash: String,
        body: &str,
    ) -> Result<(), BrokenLink> {
        let draft: AuditDraft = serde_json::from_str(body).map_err(|e| BrokenLink {
            seq,
            reason: format!("the event no longer reads as an audit event: {e}"),
        })?;
        self.push(&AuditEvent {
            seq,
            draft,
            prev_hash,
            hash,
        })
    }

    /// The seq the next event must have.
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }
}

/// Checks a whole chain (starting at seq 1); `None` when intact, else the first broken link.
pub fn verify(events: &[AuditEvent]) -> Option<BrokenLink> {
    let mut v = Verifier::new();
    events.iter().find_map(|e| v.push(e).err())
}

/// Serde of [`eai_engine::time::Timestamp`] as RFC 3339 text (the audit contract's `date-time`).
pub(crate) mod rfc3339 {
    use eai_engine::time::Timestamp;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(t: &Timestamp, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(t)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Timestamp, D::Error> {
        let text = String::deserialize(d)?;
        Timestamp::parse_rfc3339(&text).map_err(serde::de::Error::custom)
    }
}

/// Serde of an optional [`eai_engine::domain::TenantId`] as a uuid string or null.
pub(crate) mod opt_tenant {
    use eai_engine::domain::TenantId;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(t: &Option<TenantId>, s: S) -> Result<S::Ok, S::Error> {
        match t {
            Some(t) => s.collect_str(t),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<TenantId>, D::Error> {
        let text: Option<String> = Option::deserialize(d)?;
        text.map(|t| t.parse::<TenantId>().map_err(serde::de::Error::custom))
            .transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use eai_engine::time::Timestamp;
    use serde_json::json;

    fn draft(action: &str) -> AuditDraft {
        AuditDraft {
            occurred_at: Timestamp(1_790_812_800_000),
            actor: "key_1".into(),
            actor_role: Some("platform_admin".into()),
            tenant_id: None,
            action: action.into(),
            decision: "allow".into(),
            resource: Some("alp_1".into()),
            request_id: None,
            details: json!({"z": 1, "a": {"y": [2, {"c": true, "b": null}], "x": "s"}}),
        }
    }

    fn chain(n: u64) -> Vec<AuditEvent> {
        let mut prev = GENESIS_HASH.to_string();
        (1..=n)
            .map(|seq| {
                let d = draft(&format!("action.{seq}"));
                let hash = link(&prev, seq, &d);
                let e = AuditEvent {
                    seq,
                    draft: d,
                    prev_hash: prev.clone(),
                    hash: hash.clone(),
                };
                prev = hash;
                e
            })
            .collect()
    }

    #[test]
    fn canonical_json_sorts_keys_at_every_depth() {
        let c = canonical_json(&draft("a"));
        assert!(c.starts_with(r#"{"action":"a","actor":"key_1","actor_role":"platform_admin","decision":"allow","details":{"a":{"x":"s","y":[2,{"b":null,"c":true}]},"z":1}"#), "{c}");
        assert!(c.contains(r#""occurred_at":"2026-10-01T00:00:00Z""#), "{c}");
    }

    #[test]
    fn link_depends_on_every_part() {
        let d = draft("a");
        let h = link(GENESIS_HASH, 1, &d);
        assert_eq!(h.len(), 64);
        assert_ne!(h, link(GENESIS_HASH, 2, &d));
        assert_ne!(h, link(&"1".repeat(64), 1, &d));
        assert_ne!(h, link(GENESIS_HASH, 1, &draft("b")));
        assert_eq!(h, link(GENESIS_HASH, 1, &d.clone()));
    }

    #[test]
    fn verify_names_the_first_broken_link() {
        let c = chain(5);
        assert_eq!(verify(&c), None);
        assert_eq!(verify(&[]), None);

        let mut t = c.clone();
        t[2].draft.decision = "deny".into();
        assert_eq!(verify(&t).map(|b| b.seq), Some(3), "content changed");

        let mut t = c.clone();
        t[2].draft.decision = "deny".into();
        t[2].hash = link(&t[2].prev_hash, 3, &t[2].draft);
        assert_eq!(
            verify(&t).map(|b| b.seq),
            Some(4),
            "rehashed: the next link breaks"
        );

        let mut t = c.clone();
        t.remove(1);
        let b = verify(&t).expect("a gap");
        assert_eq!(b.seq, 2);
        assert!(b.reason.contains("missing"), "{}", b.reason);

        let mut t = c;
        t[0].prev_hash = "f".repeat(64);
        assert_eq!(verify(&t).map(|b| b.seq), Some(1));
    }
}
