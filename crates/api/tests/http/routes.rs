//! The router and the OpenAPI document (contracts/v1/openapi.json) name the same operations.
//!
//! Two views of the router: the list it is built from (every `.route(PATH, METHOD(..)...)` of
//! `crates/api/src/routes/mod.rs`, read as text, as rust-analyzer's tidy tests read the tree), compared both ways
//! with the document's paths and methods; and the running router itself, asked every method on every documented
//! path: a documented operation is routed (never the fallback's "No route" 404 nor a 405), any other method on
//! the path is the 405 envelope. The portal's page and assets (`routes/portal.rs`, merged in) are HTML, not the
//! JSON API, and stay out of the document.

use std::collections::BTreeSet;
use std::path::Path;

use reqwest::{Method, StatusCode};
use serde_json::Value;

use super::spawn_app_with;

/// Methods an OpenAPI path item may hold (those the router could serve).
const METHODS: [&str; 5] = ["get", "post", "put", "patch", "delete"];

fn repo_file(rel: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// `(path, method)` of every operation of the OpenAPI document.
fn documented() -> BTreeSet<(String, String)> {
    let doc: Value = serde_json::from_str(&repo_file("contracts/v1/openapi.json"))
        .expect("contracts/v1/openapi.json is JSON");
    let paths = doc["paths"].as_object().expect("the document has paths");
    let mut ops = BTreeSet::new();
    for (path, item) in paths {
        for m in METHODS {
            if item.get(m).is_some() {
                ops.insert((path.clone(), m.to_string()));
            }
        }
    }
    ops
}

/// The text between the parenthesis at `open` and its match.
fn balanced(text: &str, open: usize) -> &str {
    let mut depth = 0usize;
    for (i, c) in text[open..].char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return &text[open + 1..open + i];
                }
            }
            _ => {}
        }
    }
    panic!("unbalanced parentheses after byte {open}")
}

/// `(path, method)` of every `.route(...)` that `source` (a router's source text) declares.
fn declared(source: &str) -> BTreeSet<(String, String)> {
    let mut ops = BTreeSet::new();
    let mut from = 0;
    while let Some(at) = source[from..].find(".route(") {
        let open = from + at + ".route".len();
        let args = balanced(source, open);
        from = open + args.len();
        let path = args.split('"').nth(1).unwrap_or_else(|| {
            panic!("a route whose path is not a string literal: .route({args})")
        });
        let rest = &args[args.find(',').expect("a route's method router") + 1..];
        let mut methods = 0;
        for m in METHODS {
            // `get(`, `.post(`: a method router, not the tail of a longer name (`budgets::get_one`).
            let mut i = 0;
            while let Some(j) = rest[i..].find(&format!("{m}(")) {
                let k = i + j;
                let before = rest[..k].chars().next_back();
                if !matches!(before, Some(c) if c.is_alphanumeric() || c == '_' || c == ':') {
                    ops.insert((path.to_string(), m.to_string()));
                    methods += 1;
                }
                i = k + m.len();
            }
        }
        assert!(methods > 0, "no method router found in .route({args})");
    }
    ops
}

fn listed(ops: &BTreeSet<(String, String)>) -> String {
    ops.iter()
        .map(|(p, m)| format!("  {} {p}", m.to_uppercase()))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_route_reader_sees_methods_and_not_handler_names() {
    let src = r#"Router::new()
        .route("/a", get(x::get_one).post(x::create))
        .route(
            "/b/{id}",
            delete(keys::revoke),
        )
        .route("/c", get(|| async { Redirect::permanent(PAGE) }))"#;
    let want: BTreeSet<(String, String)> = [
        ("/a", "get"),
        ("/a", "post"),
        ("/b/{id}", "delete"),
        ("/c", "get"),
    ]
    .into_iter()
    .map(|(p, m)| (p.to_string(), m.to_string()))
    .collect();
    assert_eq!(declared(src), want);
}

#[test]
fn every_route_of_the_router_is_in_the_openapi_document_and_back() {
    let source = repo_file("crates/api/src/routes/mod.rs");
    assert!(
        source.contains(".merge(portal::routes())"),
        "routes/mod.rs no longer merges the portal's routes as this test expects: update the test"
    );
    let routed = declared(&source);
    let documented = documented();
    let undocumented: BTreeSet<_> = routed.difference(&documented).cloned().collect();
    let unrouted: BTreeSet<_> = documented.difference(&routed).cloned().collect();
    assert!(
        undocumented.is_empty() && unrouted.is_empty(),
        "the router (crates/api/src/routes/mod.rs) and contracts/v1/openapi.json disagree.\n\
         Routed but not in the OpenAPI document (document them):\n{}\n\
         In the document but not routed (route them, or take them out of the document):\n{}",
        listed(&undocumented),
        listed(&unrouted)
    );
}

#[tokio::test]
async fn the_running_router_serves_exactly_the_documented_methods_of_each_path() {
    // Limits off: a hundred unauthenticated requests from one address are not what this test is about.
    let app = spawn_app_with(|c| {
        c.rate_limit_per_key = 0;
        c.rate_limit_per_address = 0;
    })
    .await;
    let documented = documented();
    let paths: BTreeSet<&String> = documented.iter().map(|(p, _)| p).collect();
    let mut wrong = Vec::new();
    for path in paths {
        // Any value fits a path parameter as far as routing goes (the handlers refuse the caller first).
        let concrete: String = path
            .split('/')
            .map(|seg| if seg.starts_with('{') { "alp_1" } else { seg })
            .collect::<Vec<_>>()
            .join("/");
        for m in METHODS {
            let method = Method::from_bytes(m.to_uppercase().as_bytes()).expect("method");
            let resp = app
                .client
                .request(method, app.url(&concrete))
                .send()
                .await
                .expect("request sent");
            let status = resp.status();
            let body: Value = resp.json().await.unwrap_or(Value::Null);
            let message = body["error"]["message"].as_str().unwrap_or_default();
            let is_documented = documented.contains(&(path.clone(), m.to_string()));
            let unrouted = status == StatusCode::METHOD_NOT_ALLOWED
                || (status == StatusCode::NOT_FOUND && message.starts_with("No route for"));
            if is_documented && unrouted {
                wrong.push(format!(
                    "{} {path}: documented, but the router answers {status} {body}",
                    m.to_uppercase()
                ));
            }
            let the_405_envelope = status == StatusCode::METHOD_NOT_ALLOWED
                && body["error"]["code"] == "method_not_allowed";
            if !is_documented && !the_405_envelope {
                wrong.push(format!(
                    "{} {path}: not documented, but the router answers {status} (not the 405 envelope) {body}",
                    m.to_uppercase()
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "the running router and contracts/v1/openapi.json disagree:\n  {}",
        wrong.join("\n  ")
    );
}
