//! A small pool of PostgreSQL connections. Each connection is switched to the service role when it is opened
//! (`SET ROLE`), keeps its prepared statements, and goes back to the pool when its guard is dropped unless the
//! connection broke. A transaction dropped half-way is rolled back by tokio-postgres before the next use.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_postgres::{Client, NoTls, Statement, Transaction};

use super::tls::Connector;
use super::Ctx;
use crate::{Result, StoreError};

/// How long a caller waits for a free connection before failing.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(30);

/// One open connection and the statements prepared on it.
pub(super) struct PgConn {
    pub client: Client,
    pub stmts: Stmts,
}

/// Statements prepared on one connection, by their SQL text (always a `&'static str`: no SQL is built from
/// values).
#[derive(Default)]
pub(super) struct Stmts(HashMap<&'static str, Statement>);

impl Stmts {
    /// The prepared statement for `sql`, preparing it on first use.
    pub async fn get(&mut self, tx: &Transaction<'_>, sql: &'static str) -> Result<Statement> {
        if let Some(s) = self.0.get(sql) {
            return Ok(s.clone());
        }
        let s = tx.prepare(sql).await.ctx("prepare a statement")?;
        self.0.insert(sql, s.clone());
        Ok(s)
    }
}

struct Inner {
    cfg: tokio_postgres::Config,
    connector: Connector,
    /// Run once on each new connection (the `SET ROLE` to the service role).
    on_connect: String,
    idle: Mutex<Vec<PgConn>>,
    permits: Arc<Semaphore>,
}

#[derive(Clone)]
pub(super) struct Pool {
    inner: Arc<Inner>,
}

/// A connection borrowed from the pool.
pub(super) struct Pooled {
    conn: Option<PgConn>,
    pool: Arc<Inner>,
    _permit: OwnedSemaphorePermit,
}

impl Pool {
    pub fn new(
        cfg: tokio_postgres::Config,
        connector: Connector,
        size: usize,
        on_connect: String,
    ) -> Pool {
        Pool {
            inner: Arc::new(Inner {
                cfg,
                connector,
                on_connect,
                idle: Mutex::new(Vec::new()),
                permits: Arc::new(Semaphore::new(size.max(1))),
            }),
        }
    }

    /// A connection: an idle one, or a new one when none is idle and the pool is not full.
    pub async fn get(&self) -> Result<Pooled> {
        let permit = tokio::time::timeout(
            ACQUIRE_TIMEOUT,
            Arc::clone(&self.inner.permits).acquire_owned(),
        )
        .await
        .map_err(|_| {
            StoreError::Internal(format!(
                "postgres: no free connection within {ACQUIRE_TIMEOUT:?}"
            ))
        })?
        .map_err(|_| StoreError::Internal("postgres: the pool is closed".into()))?;
        let reused = loop {
            let next = self
                .inner
                .idle
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .pop();
            match next {
                Some(c) if c.client.is_closed() => continue,
                other => break other,
            }
        };
        let conn = match reused {
            Some(c) => c,
            None => {
                connect(
                    &self.inner.cfg,
                    &self.inner.connector,
                    &self.inner.on_connect,
                )
                .await?
            }
        };
        Ok(Pooled {
            conn: Some(conn),
            pool: Arc::clone(&self.inner),
            _permit: permit,
        })
    }
}

impl Pool {
    /// A connection of its own, outside the pool, with TCP keepalives on both ends so that a dead peer is
    /// noticed within about half a minute (the lease connection: a lock held on it goes when it goes).
    pub async fn dedicated(&self) -> Result<PgConn> {
        let mut cfg = self.inner.cfg.clone();
        cfg.keepalives(true)
            .keepalives_idle(Duration::from_secs(10))
            .keepalives_interval(Duration::from_secs(5))
            .keepalives_retries(3);
        // The server's side: it drops the session (and its locks) when this client stops answering.
        let on_connect = format!(
            "{}; SET tcp_keepalives_idle = 10; SET tcp_keepalives_interval = 5; SET tcp_keepalives_count = 3",
            self.inner.on_connect
        );
        connect(&cfg, &self.inner.connector, &on_connect).await
    }
}

/// Opens one connection (plain or TLS, as the URL's `sslmode` says) and runs `on_connect` on it.
pub(super) async fn connect(
    cfg: &tokio_postgres::Config,
    connector: &Connector,
    on_connect: &str,
) -> Result<PgConn> {
    let client = match connector {
        Connector::Plain => {
            let (client, connection) = cfg.connect(NoTls).await.ctx("connect")?;
            tokio::spawn(async move {
                if let Err(e) = connection.await {
                    tracing::debug!(error = %e, "a postgres connection closed");
                }
            });
            client
        }
        Connector::Tls(tls) => {
            let (client, connection) = cfg.connect(tls.clone()).await.ctx("connect (TLS)")?;
            tokio::spawn(async move {
                if let Err(e) = connection.await {
                    tracing::debug!(error = %e, "a postgres connection closed");
                }
            });
            client
        }
    };
    if !on_connect.is_empty() {
        client
            .batch_execute(on_connect)
            .await
            .ctx("set up a new connection")?;
    }
    Ok(PgConn {
        client,
        stmts: Stmts::default(),
    })
}

impl Pooled {
    /// The connection (present from checkout until the guard is dropped).
    pub fn conn(&mut self) -> Result<&mut PgConn> {
        self.conn.as_mut().ok_or_else(|| {
            StoreError::Internal("postgres: a pooled connection was used after release".into())
        })
    }
}

impl Drop for Pooled {
    fn drop(&mut self) {
        if let Some(c) = self.conn.take() {
            if !c.client.is_closed() {
                self.pool
                    .idle
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(c);
            }
        }
    }
}
