//! `Idempotency-Key` end to end: a retried `POST` or `DELETE` is answered again, never run again; the key is
//! its caller's, bound to one request, held while that request runs, released when it fails.

use super::*;
use eai_app::clock::Clock;
use eai_store::idempotency::{Claim, Claimed};

/// One request's answer, whole: status, headers, body bytes.
struct Answer {
    status: StatusCode,
    headers: reqwest::header::HeaderMap,
    body: Vec<u8>,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("a JSON body")
    }

    fn replayed(&self) -> bool {
        self.headers
            .get("idempotent-replayed")
            .is_some_and(|v| v == "true")
    }
}

async fn send(req: reqwest::RequestBuilder) -> Answer {
    let resp = req.send().await.expect("request sent");
    Answer {
        status: resp.status(),
        headers: resp.headers().clone(),
        body: resp.bytes().await.expect("body").to_vec(),
    }
}

impl TestApp {
    async fn post_with(&self, path: &str, key: &str, idem: &str, body: &Value) -> Answer {
        send(
            self.client
                .post(self.url(path))
                .bearer_auth(key)
                .header("Idempotency-Key", idem)
                .json(body),
        )
        .await
    }

    async fn policies_named(&self, name: &str) -> usize {
        let (status, v) = self
            .get("/v1/finops/allocation-policies", &self.admin_key)
            .await;
        assert_eq!(status, StatusCode::OK, "{v}");
        let items = v["items"].as_array().or_else(|| v.as_array());
        items
            .expect("a list of policies")
            .iter()
            .filter(|p| p["name"] == name)
            .count()
    }

    async fn audited(&self, action: &str) -> usize {
        let (status, v) = self
            .get("/v1/audit/events?limit=1000", &self.admin_key)
            .await;
        assert_eq!(status, StatusCode::OK, "{v}");
        v["items"]
            .as_array()
            .expect("items")
            .iter()
            .filter(|e| e["action"] == action && e["decision"] == "allow")
            .count()
    }
}

fn policy(name: &str) -> Value {
    json!({ "name": name, "currency": "USD", "gpu_hourly_cost": 10, "effective_from": "2020-01-01" })
}

const POLICIES: &str = "/v1/finops/allocation-policies";

/// The same key and request twice: one policy, one audit event, the same answer byte for byte, the second
/// marked replayed. Another request with the key is refused, naming the key only.
pub async fn a_retried_create_makes_one_resource_and_the_same_answer() {
    let app = spawn_app().await;
    let first = app
        .post_with(POLICIES, &app.admin_key, "create-flat-1", &policy("flat"))
        .await;
    assert_eq!(first.status, StatusCode::CREATED, "{}", first.json());
    assert!(!first.replayed());
    let again = app
        .post_with(POLICIES, &app.admin_key, "create-flat-1", &policy("flat"))
        .await;
    assert_eq!(again.status, StatusCode::CREATED);
    assert!(again.replayed(), "{:?}", again.headers);
    assert_eq!(again.body, first.body, "the same answer, byte for byte");
    assert_eq!(
        again.headers.get("content-type"),
        first.headers.get("content-type")
    );
    assert_eq!(again.headers.get("location"), first.headers.get("location"));
    assert_ne!(
        again.headers.get("x-request-id"),
        first.headers.get("x-request-id"),
        "the replay is a request of its own"
    );
    assert_eq!(app.policies_named("flat").await, 1);
    assert_eq!(
        app.audited("allocation_policy.create").await,
        1,
        "a replay is not audited"
    );

    // Another request with the key: 409, naming the key, never the first request.
    let other = app
        .post_with(POLICIES, &app.admin_key, "create-flat-1", &policy("other"))
        .await;
    let v = other.json();
    assert_error(
        other.status,
        &v,
        StatusCode::CONFLICT,
        "idempotency_key_reused",
    );
    let message = v["error"]["message"].as_str().expect("message");
    assert!(message.contains("create-flat-1"), "{message}");
    assert!(!v.to_string().contains("flat\""), "{v}");
    assert!(v["error"]["message_i18n"]["fr"]
        .as_str()
        .is_some_and(|m| m.contains("clé d'idempotence")));
    assert_eq!(app.policies_named("other").await, 0);
    // The same path with another query string is another request too.
    let query = app
        .post_with(
            &format!("{POLICIES}?x=1"),
            &app.admin_key,
            "create-flat-1",
            &policy("flat"),
        )
        .await;
    assert_eq!(query.status, StatusCode::CONFLICT);

    // Without the header, a re-send is a new request, as before.
    let (status, _) = app.post(POLICIES, &app.admin_key, &policy("flat")).await;
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!(app.policies_named("flat").await, 2);
}

/// A key is its caller's: another caller sending the same key and request makes its own resource, and a
/// DELETE is covered as a POST is.
pub async fn another_caller_with_the_same_key_gets_its_own_resource() {
    let app = spawn_app().await;
    let (second_admin, _) = app.key("platform_admin", None).await;
    let body = json!({ "role": "viewer", "name": "same", "tenant_id": TENANT_A });
    let mine = app
        .post_with("/v1/auth/api-keys", &app.admin_key, "k", &body)
        .await;
    let theirs = app
        .post_with("/v1/auth/api-keys", &second_admin, "k", &body)
        .await;
    assert_eq!(mine.status, StatusCode::CREATED);
    assert_eq!(theirs.status, StatusCode::CREATED);
    assert!(!theirs.replayed());
    assert_ne!(mine.json()["id"], theirs.json()["id"]);
    let mine_again = app
        .post_with("/v1/auth/api-keys", &app.admin_key, "k", &body)
        .await;
    assert!(mine_again.replayed());
    assert_eq!(mine_again.body, mine.body);

    // Revoking with a key: the retry is the first answer again.
    let id = mine.json()["id"].as_str().expect("id").to_string();
    let revoke = || {
        send(
            app.client
                .delete(app.url(&format!("/v1/auth/api-keys/{id}")))
                .bearer_auth(&app.admin_key)
                .header("Idempotency-Key", "revoke-1"),
        )
    };
    let first = revoke().await;
    assert!(first.status.is_success(), "{}", first.json());
    let again = revoke().await;
    assert_eq!(again.status, first.status);
    assert!(again.replayed());
    assert_eq!(again.body, first.body);
    assert_eq!(app.audited("api_key.revoke").await, 1);

    // Tenants' keys (their rows under their tenant's scope, on PostgreSQL its row level security): the same key
    // in two tenants makes a budget in each; a retry in one is that tenant's first answer.
    let budget = |t: &str| {
        json!({ "tenant_id": t, "name": "llm", "limit": { "amount": "50.00", "currency": "EUR" },
                "thresholds_pct": [50, 100], "enforce": true })
    };
    let (finops_a, _) = app.key("finops", Some(TENANT_A)).await;
    let (finops_b, _) = app.key("finops", Some(TENANT_B)).await;
    let path = "/v1/finops/budgets";
    let a1 = app
        .post_with(path, &finops_a, "budget", &budget(TENANT_A))
        .await;
    let b1 = app
        .post_with(path, &finops_b, "budget", &budget(TENANT_B))
        .await;
    assert_eq!(a1.status, StatusCode::CREATED, "{}", a1.json());
    assert_eq!(b1.status, StatusCode::CREATED, "{}", b1.json());
    assert!(!b1.replayed());
    assert_ne!(a1.json()["id"], b1.json()["id"]);
    let a2 = app
        .post_with(path, &finops_a, "budget", &budget(TENANT_A))
        .await;
    assert!(a2.replayed());
    assert_eq!(a2.body, a1.body);
    let (status, list) = app.get(path, &finops_a).await;
    assert_eq!(status, StatusCode::OK, "{list}");
    assert_eq!(list["items"].as_array().map(Vec::len), Some(1), "{list}");
}

/// A failed first answer (4xx) is not kept: the same key then runs the fixed request, and the failed one
/// again runs again (it is not refused as another request).
pub async fn a_failed_first_answer_releases_the_key() {
    let app = spawn_app().await;
    let bad = json!({ "name": "bad", "currency": "USD", "gpu_hourly_cost": -1, "effective_from": "2020-01-01" });
    for _ in 0..2 {
        let a = app
            .post_with(POLICIES, &app.admin_key, "fix-me", &bad)
            .await;
        assert_error(
            a.status,
            &a.json(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "validation_error",
        );
        assert!(!a.replayed());
    }
    let fixed = app
        .post_with(POLICIES, &app.admin_key, "fix-me", &policy("fixed"))
        .await;
    assert_eq!(fixed.status, StatusCode::CREATED, "{}", fixed.json());
    assert!(!fixed.replayed());
    let again = app
        .post_with(POLICIES, &app.admin_key, "fix-me", &policy("fixed"))
        .await;
    assert!(again.replayed());
    assert_eq!(app.policies_named("fixed").await, 1);

    // A refused sign-in claims nothing; a malformed key is refused before anything runs.
    let a = app
        .post_with(POLICIES, &eai_api::new_api_key(), "other", &policy("x"))
        .await;
    assert_error(
        a.status,
        &a.json(),
        StatusCode::UNAUTHORIZED,
        "unauthorized",
    );
    for key in ["k".repeat(256), "clé".to_string()] {
        let a = send(
            app.client
                .post(app.url(POLICIES))
                .bearer_auth(&app.admin_key)
                .header(
                    "Idempotency-Key",
                    reqwest::header::HeaderValue::from_bytes(key.as_bytes()).expect("a value"),
                )
                .json(&policy("x")),
        )
        .await;
        let v = a.json();
        assert_error(
            a.status,
            &v,
            StatusCode::UNPROCESSABLE_ENTITY,
            "validation_error",
        );
        assert_eq!(v["error"]["details"][0]["field"], "Idempotency-Key", "{v}");
    }
    assert_eq!(app.policies_named("x").await, 0);
    // No route: the fallback's 404, as without the header (nothing signed in, nothing claimed).
    let a = send(
        app.client
            .post(app.url("/v1/no-such-route"))
            .header("Idempotency-Key", "k")
            .json(&policy("x")),
    )
    .await;
    assert_error(a.status, &a.json(), StatusCode::NOT_FOUND, "not_found");
}

/// While the first request with a key runs, the same request is 409 in flight with `Retry-After: 1`; a claim
/// left past its lease (a crashed server) is taken over; concurrent sends of one request run it once.
pub async fn a_key_in_flight_is_refused_then_taken_over_and_runs_once() {
    let app = spawn_app().await;
    let (_, me) = app.get("/v1/auth/whoami", &app.admin_key).await;
    let caller = me["key_id"].as_str().expect("key_id").to_string();
    // A claim held by a request still running elsewhere (another replica): the store, directly.
    let body = serde_json::to_vec(&policy("slow")).expect("json");
    let now = app.clock.now();
    let held = Claim {
        caller,
        tenant: None,
        key: "slow-1".into(),
        fingerprint: eai_api::idempotency::fingerprint(
            &reqwest::Method::POST,
            POLICIES,
            b"",
            &body,
        ),
        token: Uuid::new_v4(),
        at: now,
        stale_before: Timestamp(now.0 - eai_api::idempotency::LEASE_MS),
    };
    let store = app.second_store().await;
    assert_eq!(
        store.claim_idempotency_key(&held).await.expect("claim"),
        Claimed::Run
    );
    let a = app
        .post_with(POLICIES, &app.admin_key, "slow-1", &policy("slow"))
        .await;
    assert_error(
        a.status,
        &a.json(),
        StatusCode::CONFLICT,
        "idempotency_key_in_flight",
    );
    assert_eq!(
        a.headers.get("retry-after").map(|v| v.to_str().ok()),
        Some(Some("1"))
    );
    assert_eq!(app.policies_named("slow").await, 0);
    // Past the lease the claim is abandoned: the same request takes it over and runs.
    app.clock.advance(eai_api::idempotency::LEASE_MS + 1);
    let a = app
        .post_with(POLICIES, &app.admin_key, "slow-1", &policy("slow"))
        .await;
    assert_eq!(a.status, StatusCode::CREATED, "{}", a.json());
    assert!(!a.replayed());
    assert_eq!(app.policies_named("slow").await, 1);

    // Eight sends of one request at once: one runs, the others wait their turn or are replayed.
    let burst = policy("burst");
    let sends = (0..8).map(|_| app.post_with(POLICIES, &app.admin_key, "burst", &burst));
    let answers = futures_join(sends).await;
    let ran = answers
        .iter()
        .filter(|a| a.status == StatusCode::CREATED && !a.replayed())
        .count();
    assert_eq!(ran, 1);
    for a in &answers {
        if a.status == StatusCode::CONFLICT {
            assert_eq!(a.json()["error"]["code"], "idempotency_key_in_flight");
            assert!(a.headers.contains_key("retry-after"));
        } else {
            assert_eq!(a.status, StatusCode::CREATED);
        }
    }
    assert_eq!(app.policies_named("burst").await, 1);
}

/// A key's creation retried: the answer (holding the new secret) is replayed to the same caller with the same
/// secret, is stored sealed (the store's copy never holds the secret in clear), and a retry by the same key id
/// with another secret (its rotation's new one, during the grace) is refused, never run twice.
pub async fn a_stored_answer_is_sealed_and_opens_only_with_the_same_secret() {
    let app = spawn_app().await;
    // A platform key of its own, to rotate.
    let (status, v) = app
        .post(
            "/v1/auth/api-keys",
            &app.admin_key,
            &json!({ "role": "platform_admin", "name": "rotating" }),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{v}");
    let (id, old) = (
        v["id"].as_str().expect("id").to_string(),
        v["key"].as_str().expect("key").to_string(),
    );
    let body = json!({ "role": "sampler", "name": "sealed" });
    let first = app
        .post_with("/v1/auth/api-keys", &old, "mint-1", &body)
        .await;
    assert_eq!(first.status, StatusCode::CREATED, "{}", first.json());
    let secret = first.json()["key"]
        .as_str()
        .expect("the new secret")
        .to_string();
    let again = app
        .post_with("/v1/auth/api-keys", &old, "mint-1", &body)
        .await;
    assert!(again.replayed());
    assert_eq!(again.body, first.body, "the same answer, secret included");

    // What the store keeps: sealed, the secret nowhere in it.
    let now = app.clock.now();
    let probe = Claim {
        caller: id.clone(),
        tenant: None,
        key: "mint-1".into(),
        fingerprint: eai_api::idempotency::fingerprint(
            &reqwest::Method::POST,
            "/v1/auth/api-keys",
            b"",
            &serde_json::to_vec(&body).expect("json"),
        ),
        token: Uuid::new_v4(),
        at: now,
        stale_before: Timestamp(now.0 - eai_api::idempotency::LEASE_MS),
    };
    let store = app.second_store().await;
    match store.claim_idempotency_key(&probe).await.expect("claim") {
        Claimed::Replay(stored) => {
            assert_ne!(stored.body, first.body);
            let text = String::from_utf8_lossy(&stored.body);
            assert!(
                !text.contains(&secret) && !text.contains("eai_live_"),
                "{text}"
            );
        }
        other => panic!("expected the stored answer, got {other:?}"),
    }

    // Rotated with grace: the old and the new secret both sign in as the same key id, but only the secret
    // that made the first request opens its answer; the other is refused and nothing runs again.
    let (status, v) = app
        .post(
            &format!("/v1/auth/api-keys/{id}/rotate"),
            &app.admin_key,
            &json!({ "grace_seconds": 600 }),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{v}");
    let new = v["key"].as_str().expect("new secret").to_string();
    let other = app
        .post_with("/v1/auth/api-keys", &new, "mint-1", &body)
        .await;
    assert_error(
        other.status,
        &other.json(),
        StatusCode::CONFLICT,
        "idempotency_key_reused",
    );
    let still = app
        .post_with("/v1/auth/api-keys", &old, "mint-1", &body)
        .await;
    assert!(still.replayed());
    assert_eq!(still.body, first.body);
    let (_, keys) = app.get("/v1/auth/api-keys", &app.admin_key).await;
    let named = keys["items"]
        .as_array()
        .or_else(|| keys.as_array())
        .expect("a list of keys")
        .iter()
        .filter(|k| k["name"] == "sealed")
        .count();
    assert_eq!(named, 1, "{keys}");
}

/// Joins futures on this task (no extra dependency): their outputs, in order.
async fn futures_join<F: std::future::Future<Output = Answer>>(
    futs: impl Iterator<Item = F>,
) -> Vec<Answer> {
    let mut pending: Vec<_> = futs.map(|f| Some(Box::pin(f))).collect();
    let mut done: Vec<Option<Answer>> = pending.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        for (i, slot) in pending.iter_mut().enumerate() {
            if let Some(f) = slot {
                if let std::task::Poll::Ready(v) = f.as_mut().poll(cx) {
                    done[i] = Some(v);
                    *slot = None;
                }
            }
        }
        if pending.iter().all(Option::is_none) {
            std::task::Poll::Ready(())
        } else {
            std::task::Poll::Pending
        }
    })
    .await;
    done.into_iter().flatten().collect()
}

/// A sample batch sent again with its key is the first answer again, not a second ingest (no duplicates
/// counted, one audit event); without the key the re-send counts its duplicates, as before.
pub async fn a_replayed_sample_batch_is_not_counted_twice() {
    let app = spawn_app().await;
    let hour = recent_hour();
    let batch = json!({ "samples": hour_of_samples("GPU-idem", "vllm-idem", hour, 400) });
    let path = "/v1/finops/gpu/samples";
    let first = app.post_with(path, &app.admin_key, "batch-1", &batch).await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.json());
    assert_eq!(first.json(), json!({ "accepted": 240, "duplicates": 0 }));
    let again = app.post_with(path, &app.admin_key, "batch-1", &batch).await;
    assert!(again.replayed());
    assert_eq!(again.body, first.body);
    assert_eq!(app.audited("gpu_samples.ingest").await, 1);
    let (status, plain) = app.post(path, &app.admin_key, &batch).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(plain, json!({ "accepted": 240, "duplicates": 240 }));
    assert_eq!(app.audited("gpu_samples.ingest").await, 2);
}

/// The contract says what the layer does: every `POST` and `DELETE` under `/v1` takes `Idempotency-Key`,
/// documents `Idempotent-Replayed` on its successes and a 409 that may carry the two idempotency codes.
#[test]
fn the_contract_documents_the_key_on_every_post_and_delete() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../contracts/v1/openapi.json");
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("openapi.json")).expect("JSON");
    let key = json!({ "$ref": "#/components/parameters/Idempotency-Key" });
    let mut operations = 0;
    for (p, item) in doc["paths"].as_object().expect("paths") {
        for m in ["post", "delete"] {
            let Some(op) = item.get(m).filter(|_| p.starts_with("/v1/")) else {
                continue;
            };
            operations += 1;
            let params = op["parameters"].as_array().expect("parameters");
            assert!(params.contains(&key), "{m} {p}: no Idempotency-Key");
            for (status, r) in op["responses"].as_object().expect("responses") {
                if status.starts_with('2') {
                    assert!(
                        r["headers"].get("Idempotent-Replayed").is_some(),
                        "{m} {p} {status}: no Idempotent-Replayed"
                    );
                }
            }
            assert_eq!(
                op["responses"]["409"]["$ref"], "#/components/responses/Conflict",
                "{m} {p}"
            );
        }
    }
    assert!(operations >= 17, "{operations}");
    let codes = &doc["components"]["responses"]["Conflict"]["content"]["application/json"]
        ["schema"]["allOf"][1]["properties"]["error"]["properties"]["code"]["enum"];
    for code in ["idempotency_key_reused", "idempotency_key_in_flight"] {
        assert!(
            codes.as_array().is_some_and(|c| c.contains(&json!(code))),
            "{codes}"
        );
        let all = &doc["components"]["schemas"]["ErrorCode"]["enum"];
        assert!(
            all.as_array().is_some_and(|c| c.contains(&json!(code))),
            "{all}"
        );
    }
}

/// The layer reads the body within the server's limit: beyond it, the same 413 as without a key, and nothing
/// is kept (the same key then runs a request within the limit).
pub async fn a_body_over_the_limit_is_413_with_a_key_too() {
    let app = spawn_app_with(|c| c.max_body_bytes = 1024).await;
    let mut big = policy("big");
    big["description"] = json!("x".repeat(2048));
    let a = app.post_with(POLICIES, &app.admin_key, "big-1", &big).await;
    assert_error(
        a.status,
        &a.json(),
        StatusCode::PAYLOAD_TOO_LARGE,
        "payload_too_large",
    );
    let a = app
        .post_with(POLICIES, &app.admin_key, "big-1", &policy("small"))
        .await;
    assert_eq!(a.status, StatusCode::CREATED, "{}", a.json());
    assert!(!a.replayed());
}
