//! eai-api: the control plane's HTTP layer, over the application (`eai_app`: the services, the jobs, the
//! clock). [`router`] is the whole API as a value; [`Application`] opens the store, bootstraps the first
//! platform_admin key, binds and serves it with graceful shutdown, and runs the background jobs.
//!
//! Code map: [`config`] (typed `EAI_*` configuration), [`startup`] (build, bootstrap, run), [`routes`] (one
//! module per resource), [`views`] (the routes' answers as types, one per component schema of the contract),
//! [`auth`] (sign-in: the `Caller` extractor; the policy table, one type per action; `Authorized<A>`, the
//! extractor that gives a handler of `A` its caller and scope, and the audit of mutations), [`error`] (the one
//! envelope and its code table), [`extract`] (body and query extractors whose rejections use the envelope),
//! [`idempotency`] (the `Idempotency-Key` layer), [`telemetry`] (request id, traceparent, spans), [`state`] (what every handler shares, the clock included),
//! [`limits`] (rate limits and allocation slots). Leaves, which import nothing of the crate: [`key_format`],
//! [`request_context`].

pub mod auth;
pub mod config;
pub mod error;
pub mod extract;
pub mod idempotency;
pub mod key_format;
pub mod limits;
pub mod request_context;
pub mod routes;
pub mod startup;
pub mod state;
pub mod telemetry;
pub mod views;

pub use auth::{Authorized, Caller};
pub use config::{Config, Database};
pub use error::{ApiError, ErrorCode};
pub use key_format::{hash_api_key, new_api_key};
pub use routes::router;
pub use startup::{bootstrap, open_store, Application, Bootstrap};
pub use state::{AppState, Settings};
