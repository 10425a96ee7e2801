//! The audit hash chain, pure: how an event is linked to the one before it, and how a chain is checked.
//!
//! An event is stored as `(seq, prev_hash, hash, tenant, body)`: `body` is the draft as canonical JSON (every
//! object's keys sorted, no whitespace; built here key by key, so that it does not depend on how `serde_json`
//! happens to be compiled), `tenant` the draft's tenant (a column, for scoped reads). The hash covers every
//! stored column:
//!
//! `hash = hex(sha256("eai-audit/2" 0x00 prev_hash 0x00 seq 0x00 tenant 0x00 body))`
//!
//! with `prev_hash` the 64 hex characters of the previous event's hash (64 zeros for seq 1), `seq` in decimal,
//! `tenant` the uuid or nothing, and `body` the bytes as stored. Events written before this form (a chain
//! started by an older binary, below the store's `audit_v2_from_seq`) were hashed over
//! `prev_hash || canonical(draft) || seq`; for them the verifier also checks that the tenant column is the
//! draft's.
//!
//! A chain can still be cut at its tail or recomputed whole by someone who can write the database: an operator
//! anchors the head (`GET /v1/audit/head`, also logged and in `/metrics`) outside it, and [`Verifier::expect`]
//! checks that the chain still holds it.
//!
//! Backends store events; they never compute hashes themselves: they call [`link`] and [`Verifier`].

use eai_engine::domain::TenantId;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::{AuditDraft, AuditEvent, AuditHead, BrokenLink};

/// The `prev_hash` of the first event of a chain.
pub const GENESIS_HASH: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// Bookkeeping key: the first sequence hashed with the current form (absent: every event).
pub const V2_FROM: &str = "audit_v2_from_seq";

/// The tenant column as hashed: the uuid, or empty for a platform event.
pub fn tenant_text(t: Option<TenantId>) -> String {
    t.map(|t| t.to_string()).unwrap_or_default()
}

/// The hash of event `seq` stored with `tenant` and `body`, following the event whose hash is `prev_hash`.
pub fn link_stored(prev_hash: &str, seq: u64, tenant: &str, body: &str) -> String {
    let mut h = Sha256::new();
    for (i, part) in ["eai-audit/2", prev_hash, &seq.to_string(), tenant, body]
        .iter()
        .enumerate()
    {
        if i > 0 {
            h.update([0u8]);
        }
        h.update(part.as_bytes());
    }
    hex::encode(h.finalize())
}

/// The hash of event `seq` with content `draft` (stored as its canonical JSON and its tenant).
pub fn link(prev_hash: &str, seq: u64, draft: &AuditDraft) -> String {
    link_stored(
        prev_hash,
        seq,
        &tenant_text(draft.tenant_id),
        &canonical_json(draft),
    )
}

/// The hash of the first form (events below `audit_v2_from_seq`).
pub fn link_v1(prev_hash: &str, seq: u64, draft: &AuditDraft) -> String {
    let mut h = Sha256::new();
    h.update(prev_hash.as_bytes());
    h.update(canonical_json(draft).as_bytes());
    h.update(seq.to_string().as_bytes());
    hex::encode(h.finalize())
}

/// A draft completed by the change it records: the resource it made or touched (when the caller could not
/// name it before), and facts only the change knows (counts, ids) merged into `details`.
pub fn completed(draft: &AuditDraft, resource: Option<String>, facts: Value) -> AuditDraft {
    let mut d = draft.clone();
    if resource.is_some() {
        d.resource = resource;
    }
    if let Value::Object(f) = facts {
        match d.details.as_object_mut() {
            Some(m) => m.extend(f),
            None => d.details = Value::Object(f),
        }
    }
    d
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
    v2_from: u64,
    expect: Option<AuditHead>,
}

impl Default for Verifier {
    fn default() -> Self {
        Verifier {
            next_seq: 1,
            prev_hash: GENESIS_HASH.to_string(),
            v2_from: 1,
            expect: None,
        }
    }
}

impl Verifier {
    pub fn new() -> Self {
        Self::default()
    }

    /// A verifier for a chain whose events from `v2_from` on are hashed with the current form (`None`: all).
    pub fn from_v2(v2_from: Option<u64>) -> Self {
        Verifier {
            v2_from: v2_from.unwrap_or(1),
            ..Self::default()
        }
    }

    /// The chain must also still hold this head, anchored earlier outside the database.
    pub fn expect(mut self, head: Option<&AuditHead>) -> Self {
        self.expect = head.cloned();
        self
    }

    fn broken(seq: u64, reason: impl Into<String>) -> BrokenLink {
        BrokenLink {
            seq,
            reason: reason.into(),
        }
    }

    /// Checks the next event as a backend stores it: its seq follows, its `prev_hash` is the previous event's
    /// hash, its body reads as an audit event of the tenant in its tenant column, and its hash covers them. On
    /// success the event becomes the previous one.
    pub fn push_stored(
        &mut self,
        seq: u64,
        prev_hash: String,
        hash: String,
        tenant: &str,
        body: &str,
    ) -> Result<(), BrokenLink> {
        if seq != self.next_seq {
            return Err(Self::broken(
                self.next_seq,
                format!(
                    "event {} is missing (the next stored event is {seq})",
                    self.next_seq
                ),
            ));
        }
        if prev_hash != self.prev_hash {
            return Err(Self::broken(
                seq,
                "prev_hash does not match the hash of the previous event",
            ));
        }
        let draft: AuditDraft = serde_json::from_str(body).map_err(|e| {
            Self::broken(
                seq,
                format!("the event no longer reads as an audit event: {e}"),
            )
        })?;
        if tenant_text(draft.tenant_id) != tenant {
            return Err(Self::broken(
                seq,
                "the tenant column does not match the event's tenant",
            ));
        }
        let want = if seq >= self.v2_from {
            link_stored(&prev_hash, seq, tenant, body)
        } else {
            link_v1(&prev_hash, seq, &draft)
        };
        if want != hash {
            return Err(Self::broken(seq, "hash does not match the event's content"));
        }
        if let Some(head) = &self.expect {
            if head.seq == seq && head.hash != hash {
                return Err(Self::broken(
                    seq,
                    format!(
                        "event {seq} no longer has the anchored hash {}: the chain was rewritten at or before it",
                        head.hash
                    ),
                ));
            }
        }
        self.next_seq += 1;
        self.prev_hash = hash;
        Ok(())
    }

    /// Checks the next event (as its backend would store it).
    pub fn push(&mut self, e: &AuditEvent) -> Result<(), BrokenLink> {
        self.push_stored(
            e.seq,
            e.prev_hash.clone(),
            e.hash.clone(),
            &tenant_text(e.draft.tenant_id),
            &canonical_json(&e.draft),
        )
    }

    /// Once every event was pushed: an anchored head beyond the last event means the tail was cut.
    pub fn finish(&self) -> Result<(), BrokenLink> {
        match &self.expect {
            Some(head) if head.seq >= self.next_seq => Err(Self::broken(
                self.next_seq,
                format!(
                    "the chain ends at event {} but event {} was anchored: its tail was cut",
                    self.next_seq - 1,
                    head.seq
                ),
            )),
            _ => Ok(()),
        }
    }

    /// The seq the next event must have.
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }
}

/// Checks a whole chain (starting at seq 1); `None` when intact, else the first broken link.
pub fn verify(events: &[AuditEvent]) -> Option<BrokenLink> {
    let mut v = Verifier::new();
    events
        .iter()
        .find_map(|e| v.push(e).err())
        .or_else(|| v.finish().err())
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
        text.map(|t| {
            TenantId::from_stored(&t)
                .ok_or_else(|| serde::de::Error::custom(format!("`{t}` is not a tenant id")))
        })
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
    fn the_hash_covers_the_tenant_column_and_the_body_as_stored() {
        let d = draft("a");
        let body = canonical_json(&d);
        let h = link_stored(GENESIS_HASH, 1, "", &body);
        assert_eq!(h, link(GENESIS_HASH, 1, &d));
        let t = "8f0c2a4e-1b7d-4c55-9a51-2f3e6d7c9b10";
        assert_ne!(h, link_stored(GENESIS_HASH, 1, t, &body));
        assert_ne!(h, link_stored(GENESIS_HASH, 1, "", &format!("{body} ")));
        // A row whose tenant column was changed is caught even when its hash is recomputed.
        let mut v = Verifier::new();
        let e = v.push_stored(
            1,
            GENESIS_HASH.into(),
            link_stored(GENESIS_HASH, 1, t, &body),
            t,
            &body,
        );
        assert!(e.expect_err("tenant").reason.contains("tenant column"));
        // Events of the first form verify below the switch.
        let mut v = Verifier::from_v2(Some(2));
        v.push_stored(
            1,
            GENESIS_HASH.into(),
            link_v1(GENESIS_HASH, 1, &d),
            "",
            &body,
        )
        .expect("a first-form event");
    }

    #[test]
    fn an_anchored_head_catches_a_cut_tail_and_a_recomputed_chain() {
        let c = chain(5);
        let head = AuditHead {
            seq: 4,
            hash: c[3].hash.clone(),
        };
        let check = |events: &[AuditEvent]| {
            let mut v = Verifier::new().expect(Some(&head));
            events
                .iter()
                .find_map(|e| v.push(e).err())
                .or_else(|| v.finish().err())
        };
        assert_eq!(check(&c), None);
        let cut = check(&c[..3]).expect("tail cut");
        assert_eq!(cut.seq, 4);
        assert!(cut.reason.contains("tail was cut"), "{}", cut.reason);
        // Recomputed from event 2 on with other content: every link holds, the anchored hash does not.
        let mut r = c.clone();
        r[1].draft.decision = "deny".into();
        for i in 1..r.len() {
            r[i].prev_hash = r[i - 1].hash.clone();
            r[i].hash = link(&r[i].prev_hash, r[i].seq, &r[i].draft);
        }
        assert_eq!(verify(&r), None, "a recomputed chain holds by itself");
        let b = check(&r).expect("rewritten");
        assert_eq!(b.seq, 4);
        assert!(b.reason.contains("rewritten"), "{}", b.reason);
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
