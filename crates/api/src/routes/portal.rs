//! The portal page `/finops/gpu` (SPEC §5): one HTML page and its ES modules (a view per section under
//! `views/`) and stylesheet, built into the binary from `crates/api/assets/portal/`. No authentication here: the
//! page asks for an API key and calls the JSON API with it.
//!
//! Caching: the page itself is `no-cache` (revalidated with its ETag); the assets live under
//! `/assets/portal/<version>/`, where `<version>` is a hash of every asset, so they are `immutable` and a new
//! build is picked up at once. Every answer carries a strict Content-Security-Policy: scripts, styles and
//! fetches from this origin only, no inline script or style, no framing.

use std::sync::OnceLock;

use axum::extract::Path;
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::Router;
use sha2::{Digest, Sha256};

use crate::error::ApiError;
use crate::state::AppState;

/// The page's path (the portal menu's FinOps > GPU allocation).
pub const PAGE: &str = "/finops/gpu";
/// Where the versioned assets are served: `/assets/portal/<version>/<file>`.
pub const ASSETS_PREFIX: &str = "/assets/portal";

/// Same origin only; nothing inline; no plugins, frames, forms posted elsewhere or `<base>` tricks.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
     connect-src 'self'; font-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'self'; \
     frame-ancestors 'none'";

/// One built-in file of the portal.
#[derive(Debug)]
struct Asset {
    name: &'static str,
    content_type: &'static str,
    body: &'static [u8],
}

macro_rules! asset {
    ($name:literal, $ct:expr) => {
        Asset {
            name: $name,
            content_type: $ct,
            body: include_bytes!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/assets/portal/",
                $name
            )),
        }
    };
}

const JS: &str = "text/javascript; charset=utf-8";

const ASSETS: &[Asset] = &[
    asset!("app.js", JS),
    asset!("store.js", JS),
    asset!("dom.js", JS),
    asset!("api.js", JS),
    asset!("chart.js", JS),
    asset!("format.js", JS),
    asset!("i18n.js", JS),
    asset!("views/common.js", JS),
    asset!("views/shell.js", JS),
    asset!("views/signin.js", JS),
    asset!("views/denied.js", JS),
    asset!("views/page.js", JS),
    asset!("views/allocation.js", JS),
    asset!("views/chart.js", JS),
    asset!("views/budgets.js", JS),
    asset!("views/advice.js", JS),
    asset!("views/policies.js", JS),
    asset!("views/policy-form.js", JS),
    asset!("views/explain.js", JS),
    asset!("views/statements.js", JS),
    asset!("views/statement.js", JS),
    asset!("app.css", "text/css; charset=utf-8"),
    asset!("favicon.svg", "image/svg+xml"),
];

/// The page template: `{{assets}}` becomes `/assets/portal/<version>`.
const INDEX: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/assets/portal/index.html"
));

/// A hash of every asset and of the page: changes whenever any of them does.
pub fn version() -> &'static str {
    static VERSION: OnceLock<String> = OnceLock::new();
    VERSION.get_or_init(|| {
        let mut h = Sha256::new();
        for a in ASSETS {
            h.update(a.name.as_bytes());
            h.update([0]);
            h.update(a.body);
            h.update([0]);
        }
        h.update(INDEX.as_bytes());
        hex::encode(&h.finalize()[..8])
    })
}

/// The page with its asset links resolved.
fn index_html() -> &'static str {
    static HTML: OnceLock<String> = OnceLock::new();
    HTML.get_or_init(|| INDEX.replace("{{assets}}", &format!("{ASSETS_PREFIX}/{}", version())))
}

/// The routes of the portal (no state, no authentication).
pub fn routes() -> Router<AppState> {
    Router::new()
        .route(PAGE, get(page))
        .route("/finops/gpu/", get(|| async { Redirect::permanent(PAGE) }))
        .route("/finops", get(|| async { Redirect::temporary(PAGE) }))
        .route("/assets/portal/{version}/{*file}", get(asset))
}

/// Headers every portal answer carries.
fn security_headers(h: &mut HeaderMap) {
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(
        HeaderName::from_static("cross-origin-opener-policy"),
        HeaderValue::from_static("same-origin"),
    );
}

/// `GET /finops/gpu`: the page, revalidated on every load (`no-cache` + ETag).
async fn page(req_headers: HeaderMap) -> Response {
    let etag = format!("\"{}\"", version());
    let fresh = req_headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == etag));
    let mut response = if fresh {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        (
            [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
            index_html(),
        )
            .into_response()
    };
    let h = response.headers_mut();
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    if let Ok(v) = HeaderValue::from_str(&etag) {
        h.insert(header::ETAG, v);
    }
    security_headers(h);
    response
}

/// `GET /assets/portal/<version>/<file>` (`<file>` may be in a folder: `views/page.js`): a built-in file of this very build, cached for a year. Another
/// version or an unknown file is a 404 in the API's envelope.
async fn asset(Path((v, file)): Path<(String, String)>) -> Response {
    let found = ASSETS.iter().find(|a| a.name == file);
    match found {
        Some(a) if v == version() => {
            let mut response = ([(header::CONTENT_TYPE, a.content_type)], a.body).into_response();
            let h = response.headers_mut();
            h.insert(
                header::CACHE_CONTROL,
                HeaderValue::from_static("public, max-age=31536000, immutable"),
            );
            security_headers(h);
            response
        }
        _ => {
            ApiError::route_not_found("GET", &format!("{ASSETS_PREFIX}/{v}/{file}")).into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_links_this_builds_assets_and_holds_no_inline_script_or_style() {
        let html = index_html();
        assert!(!html.contains("{{assets}}"));
        assert!(html.contains(&format!("{ASSETS_PREFIX}/{}/app.js", version())));
        assert!(html.contains(&format!("{ASSETS_PREFIX}/{}/app.css", version())));
        // Every <script> loads a file; no inline handler, no style attribute (the CSP would block them).
        for (i, _) in html.match_indices("<script") {
            let tag = &html[i..html[i..].find('>').map_or(html.len(), |e| i + e)];
            assert!(tag.contains(" src="), "inline script: {tag}");
        }
        assert!(!html.contains(" onclick="), "inline handler");
        assert!(!html.contains(" style="), "inline style");
        assert!(!html.contains("<style"), "inline stylesheet");
    }

    #[test]
    fn every_asset_has_a_type_and_the_version_is_stable() {
        for a in ASSETS {
            assert!(!a.body.is_empty(), "{}", a.name);
            if a.name.ends_with(".js") {
                assert_eq!(a.content_type, JS);
            }
        }
        assert_eq!(version().len(), 16);
        assert_eq!(version(), version());
    }

    /// `./x.js` or `../x.js` from the module `from` (`views/page.js`), as an asset name.
    fn resolve(from: &str, spec: &str) -> String {
        let mut parts: Vec<&str> = from.split('/').collect();
        parts.pop();
        for seg in spec.split('/') {
            match seg {
                "." => {}
                ".." => {
                    parts.pop();
                }
                s => parts.push(s),
            }
        }
        parts.join("/")
    }

    #[test]
    fn every_module_a_module_imports_is_served_and_preloaded() {
        let names: Vec<&str> = ASSETS.iter().map(|a| a.name).collect();
        let html = index_html();
        for a in ASSETS.iter().filter(|a| a.name.ends_with(".js")) {
            let body = std::str::from_utf8(a.body).expect("utf-8");
            assert!(
                body.starts_with("// @ts-check"),
                "{} is not type-checked",
                a.name
            );
            for (i, _) in body.match_indices(" from \"") {
                let rest = &body[i + 7..];
                let spec = &rest[..rest.find('"').expect("a closing quote")];
                let target = resolve(a.name, spec);
                assert!(
                    names.contains(&target.as_str()),
                    "{} imports {spec}: not served",
                    a.name
                );
            }
            if a.name != "app.js" {
                let link = format!("{ASSETS_PREFIX}/{}/{}", version(), a.name);
                assert!(
                    html.contains(&format!("<link rel=\"modulepreload\" href=\"{link}\">")),
                    "{link} not preloaded"
                );
            }
        }
    }
}
