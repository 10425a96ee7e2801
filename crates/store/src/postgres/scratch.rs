//! Throw-away databases on a PostgreSQL server: one uniquely named database per test (tests run in parallel,
//! and the schema is always `eai`) or benchmark run, created empty and migrated by the store that opens it,
//! dropped (`WITH (FORCE)`) when its guard goes. Scratch databases left by a killed run are swept when the
//! next one is created, once they are a few hours old (the name carries the creation time).
//!
//! Tests find the server at `EAI_TEST_POSTGRES_URL` (default [`DEFAULT_TEST_URL`]); when it cannot be reached
//! the error says how to start one, so that a PostgreSQL test fails loudly instead of skipping.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio_postgres::NoTls;

use super::Ctx;
use crate::{Result, StoreError};

/// Where tests look for PostgreSQL when `EAI_TEST_POSTGRES_URL` is not set.
pub const DEFAULT_TEST_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

/// Prefix of scratch database names: `eai_t_<unix seconds>_<random>`.
const PREFIX: &str = "eai_t_";

/// Scratch databases older than this are dropped by the next run.
const STALE_AFTER: Duration = Duration::from_secs(6 * 3600);

/// The server tests use: `EAI_TEST_POSTGRES_URL`, or [`DEFAULT_TEST_URL`]. Its user must be able to create
/// databases and roles (the Debian package's `postgres` with trust auth on 127.0.0.1 can).
pub fn test_server_url() -> String {
    std::env::var("EAI_TEST_POSTGRES_URL")
        .ok()
        .filter(|u| !u.trim().is_empty())
        .unwrap_or_else(|| DEFAULT_TEST_URL.to_string())
}

/// `url` with its database name replaced by `dbname` (URL form only: `postgres://user@host:port/db?opts`).
pub fn with_dbname(url: &str, dbname: &str) -> Result<String> {
    let (scheme, rest) = url.split_once("://").ok_or_else(|| {
        StoreError::Internal(format!(
            "a scratch database needs a postgres:// URL, not `{url}`"
        ))
    })?;
    let (before_query, query) = match rest.split_once('?') {
        Some((a, q)) => (a, Some(q)),
        None => (rest, None),
    };
    let authority = before_query.split('/').next().unwrap_or_default();
    let mut out = format!("{scheme}://{authority}/{dbname}");
    if let Some(q) = query {
        out.push('?');
        out.push_str(q);
    }
    Ok(out)
}

/// `url` without its password, for messages.
fn redacted(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let end = rest.find('/').unwrap_or(rest.len());
    match rest[..end].rsplit_once('@') {
        Some((userinfo, host)) if userinfo.contains(':') => {
            let user = userinfo.split(':').next().unwrap_or_default();
            format!("{scheme}://{user}:***@{host}{}", &rest[end..])
        }
        _ => url.to_string(),
    }
}

/// A database that exists until this guard is dropped.
#[derive(Debug)]
pub struct ScratchDb {
    server_url: String,
    name: String,
    url: String,
}

async fn admin(server_url: &str) -> Result<tokio_postgres::Client> {
    let mut cfg: tokio_postgres::Config = server_url.parse().map_err(|e| {
        StoreError::Internal(format!(
            "the PostgreSQL URL `{}` does not parse: {e}",
            redacted(server_url)
        ))
    })?;
    cfg.connect_timeout(Duration::from_secs(5));
    let (client, connection) = cfg.connect(NoTls).await.map_err(|e| {
        StoreError::Internal(format!(
            "PostgreSQL is not reachable at {} ({}). The PostgreSQL tests need a server: run \
             scripts/test.sh (it makes a throwaway cluster of its own), or `scripts/pg-scratch.sh` in \
             another terminal and export the EAI_TEST_POSTGRES_URL it prints, or set \
             EAI_TEST_POSTGRES_URL to a server whose user may create databases and roles",
            redacted(server_url),
            super::describe(&e)
        ))
    })?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(client)
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

impl ScratchDb {
    /// Creates an empty, uniquely named database on the server `server_url` names.
    pub async fn create(server_url: &str) -> Result<ScratchDb> {
        let client = admin(server_url).await?;
        sweep(&client).await;
        let name = format!(
            "{PREFIX}{}_{}",
            unix_now(),
            &uuid::Uuid::new_v4().simple().to_string()[..12]
        );
        client
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .await
            .ctx("create a scratch database")?;
        Ok(ScratchDb {
            server_url: server_url.to_string(),
            url: with_dbname(server_url, &name)?,
            name,
        })
    }

    /// Like [`ScratchDb::create`], from synchronous code (its own thread and runtime).
    pub fn create_blocking(server_url: &str) -> Result<ScratchDb> {
        let url = server_url.to_string();
        run_blocking(async move { ScratchDb::create(&url).await })
    }

    /// The URL of the scratch database (the server's URL with the database name replaced).
    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn name(&self) -> &str {
        &self.name
    }
}

/// Runs a future to completion on a fresh thread with its own runtime (usable inside or outside a runtime).
fn run_blocking<T: Send + 'static>(
    f: impl std::future::Future<Output = Result<T>> + Send + 'static,
) -> Result<T> {
    std::thread::spawn(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| StoreError::Internal(format!("cannot start a runtime: {e}")))?
            .block_on(f)
    })
    .join()
    .map_err(|_| StoreError::Internal("the scratch database thread panicked".into()))?
}

/// Drops scratch databases left behind by runs that were killed.
async fn sweep(client: &tokio_postgres::Client) {
    let Ok(rows) = client
        .query(
            "SELECT datname::text FROM pg_database WHERE starts_with(datname, $1)",
            &[&PREFIX],
        )
        .await
    else {
        return;
    };
    let stale_before = unix_now().saturating_sub(STALE_AFTER.as_secs());
    for r in rows {
        let name: String = r.get(0);
        let born = name
            .strip_prefix(PREFIX)
            .and_then(|rest| rest.split('_').next())
            .and_then(|t| t.parse::<u64>().ok());
        if born.is_some_and(|b| b < stale_before) {
            let _ = client
                .batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                .await;
        }
    }
}

impl Drop for ScratchDb {
    fn drop(&mut self) {
        let (url, name) = (self.server_url.clone(), self.name.clone());
        let dropped = run_blocking(async move {
            let client = admin(&url).await?;
            client
                .batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                .await
                .ctx("drop a scratch database")
        });
        if let Err(e) = dropped {
            tracing::warn!(database = %self.name, error = %e, "a scratch database was not dropped");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_database_name_is_replaced_and_the_rest_kept() {
        let cases = [
            (
                "postgres://postgres@127.0.0.1:5432/postgres",
                "postgres://postgres@127.0.0.1:5432/x",
            ),
            (
                "postgres://u:p@h/db?sslmode=disable",
                "postgres://u:p@h/x?sslmode=disable",
            ),
            ("postgresql://h:5433", "postgresql://h:5433/x"),
        ];
        for (url, want) in cases {
            assert_eq!(with_dbname(url, "x").expect("url"), want);
        }
        assert!(with_dbname("host=h dbname=d", "x").is_err());
    }

    #[test]
    fn passwords_are_not_shown() {
        assert_eq!(
            redacted("postgres://u:secret@h:5432/db"),
            "postgres://u:***@h:5432/db"
        );
        assert_eq!(redacted("postgres://u@h/db"), "postgres://u@h/db");
    }
}
