//! `eai-gpu keys` and `eai-gpu audit` offline: keys created, listed, rotated and revoked; the chain's head
//! anchored and verified.

use super::*;

/// Keys and the audit chain offline, as an operator does on the store: create (bound to a node, with an expiry),
/// list (never a secret), rotate, revoke; anchor the chain's head, and `audit verify --expect-head` exits 1 once
/// the tail is cut.
#[test]
fn keys_and_the_anchored_audit_head_from_the_command_line() {
    let dir = temp_dir("keys-audit");
    let d = dir.display().to_string();
    let (ok, out, err) = run(&[
        "keys",
        "create",
        "--role",
        "sampler",
        "--node",
        "gpu-node-3",
        "--expires-at",
        "2099-01-01",
        "--data-dir",
        &d,
    ]);
    assert!(ok, "{out}{err}");
    assert!(
        out.contains("nodes:  gpu-node-3") && out.contains("key:    eai_live_"),
        "{out}"
    );
    let secret = out
        .lines()
        .find_map(|l| l.strip_prefix("key:    "))
        .unwrap()
        .to_string();
    let (ok, out, err) = run(&["keys", "create", "--role", "viewer", "--data-dir", &d]);
    assert!(
        !ok && err.contains("--tenant is required"),
        "a viewer needs a tenant: {out}{err}"
    );

    let (ok, list, _) = run(&["keys", "list", "--data-dir", &d]);
    assert!(
        ok && list.contains("key_1") && list.contains("sampler") && list.contains("active"),
        "{list}"
    );
    assert!(
        !list.contains(&secret) && !list.contains("eai_live_"),
        "{list}"
    );
    let (ok, out, _) = run(&[
        "keys",
        "rotate",
        "key_1",
        "--grace",
        "10m",
        "--data-dir",
        &d,
    ]);
    assert!(ok && out.contains("the old secret works until"), "{out}");
    let (ok, out, _) = run(&["keys", "revoke", "key_1", "--data-dir", &d]);
    assert!(ok && out.contains("key_1 revoked"), "{out}");
    let (_, list, _) = run(&["keys", "list", "--json", "--data-dir", &d]);
    let v: serde_json::Value = serde_json::from_str(&list).unwrap();
    assert_eq!(v["items"][0]["status"], "revoked", "{v}");

    let (ok, head, _) = run(&["audit", "head", "--data-dir", &d]);
    assert!(ok, "{head}");
    let head = head.trim().to_string();
    assert!(head.starts_with("3:"), "three changes audited: {head}");
    let (ok, out, _) = run(&["audit", "verify", "--expect-head", &head, "--data-dir", &d]);
    assert!(ok && out.contains("still holds the anchored head"), "{out}");

    // The tail cut by someone with the file: the anchored head is no longer there.
    let c = rusqlite::Connection::open(dir.join("eai-gpu.db")).unwrap();
    c.execute("DELETE FROM audit_events WHERE seq >= 3", [])
        .unwrap();
    drop(c);
    let (ok, out, _) = run(&["audit", "verify", "--data-dir", &d]);
    assert!(
        ok,
        "without an anchor the shorter chain holds by itself: {out}"
    );
    let out = bin()
        .args(["audit", "verify", "--expect-head", &head, "--data-dir", &d])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("BROKEN at event 3") && text.contains("tail was cut"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
