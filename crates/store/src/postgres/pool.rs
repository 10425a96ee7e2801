//! The pool of PostgreSQL connections: deadpool's managed pool, with what is ours around it. Each connection is
//! opened with TLS as the URL says and switched to the service role (`SET ROLE`), keeps its own prepared
//! statements ([`Stmts`]: by SQL text, borrowed beside the transaction), and goes back to the pool when its guard
//! is dropped; a connection found closed is replaced, and so is every connection opened before the last error
//! that said the server is unreachable ([`distrust_open_connections`]: after a failover, a connection still
//! open may lead to the old primary, now a read-only standby; new ones follow the URL's
//! `target_session_attrs=read-write` to the new primary). A transaction dropped half-way is rolled back by
//! tokio-postgres before the next use. [`Pool::dedicated`] opens a connection outside the pool (the leases).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use deadpool::managed;
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
    /// Whether this session's staging table for large ingest batches exists (see
    /// [`super::samples::ingest::STAGE_ROWS`]).
    pub staging: Staging,
    /// [`EPOCH`] when the connection was opened.
    epoch: u64,
}

/// Counts the errors that said a server is unreachable (see [`super::unreachable`]), process-wide: a pooled
/// connection opened before the latest is not reused. Process-wide rather than per pool because the error
/// mapping knows no pool; a process holds one store, and a spurious bump only costs reconnections.
static EPOCH: AtomicU64 = AtomicU64::new(0);

/// Marks every connection open now as not to be reused (each is replaced when next taken from the pool): an
/// error said the server is unreachable, shutting down, or read-only (a primary lost or demoted).
pub(crate) fn distrust_open_connections() {
    EPOCH.fetch_add(1, Ordering::Relaxed);
}

/// The state of a session's temporary staging table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) enum Staging {
    /// Not created yet (created on the first large batch).
    #[default]
    Unknown,
    Ready,
    /// The service role may not create temporary tables (`TEMPORARY` revoked on the database): multi-row
    /// inserts only.
    Refused,
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

/// Opens the pool's connections: TLS as the URL says, then `on_connect` (the `SET ROLE` to the service role).
/// A connection found closed when it is taken again is dropped and replaced.
struct Manager {
    cfg: tokio_postgres::Config,
    connector: Connector,
    on_connect: String,
}

impl managed::Manager for Manager {
    type Type = PgConn;
    type Error = StoreError;

    async fn create(&self) -> Result<PgConn> {
        connect(&self.cfg, &self.connector, &self.on_connect).await
    }

    async fn recycle(
        &self,
        conn: &mut PgConn,
        _: &managed::Metrics,
    ) -> managed::RecycleResult<StoreError> {
        if conn.client.is_closed() {
            return Err(managed::RecycleError::message("the connection closed"));
        }
        if conn.epoch < EPOCH.load(Ordering::Relaxed) {
            return Err(managed::RecycleError::message(
                "the connection was opened before the server was found unreachable",
            ));
        }
        Ok(())
    }
}

/// The pool (deadpool's), cheap to clone.
#[derive(Clone)]
pub(super) struct Pool {
    inner: managed::Pool<Manager>,
}

/// A connection borrowed from the pool: back to it when dropped (a broken one is replaced on the next take).
pub(super) struct Pooled(managed::Object<Manager>);

impl Pool {
    pub fn new(
        cfg: tokio_postgres::Config,
        connector: Connector,
        size: usize,
        on_connect: String,
    ) -> Result<Pool> {
        let manager = Manager {
            cfg,
            connector,
            on_connect,
        };
        let inner = managed::Pool::builder(manager)
            .max_size(size.max(1))
            .wait_timeout(Some(ACQUIRE_TIMEOUT))
            .runtime(deadpool::Runtime::Tokio1)
            .build()
            .map_err(|e| StoreError::Internal(format!("postgres: build the pool: {e}")))?;
        Ok(Pool { inner })
    }

    /// A connection: an idle one, or a new one when none is idle and the pool is not full; waits for one at most
    /// [`ACQUIRE_TIMEOUT`].
    pub async fn get(&self) -> Result<Pooled> {
        self.inner.get().await.map(Pooled).map_err(|e| match e {
            managed::PoolError::Backend(e) => e,
            managed::PoolError::Timeout(_) => StoreError::Unavailable(format!(
                "postgres: no free connection within {ACQUIRE_TIMEOUT:?}"
            )),
            e => StoreError::Internal(format!("postgres: {e}")),
        })
    }
}

impl Pool {
    /// A connection of its own, outside the pool, with TCP keepalives on both ends so that a dead peer is
    /// noticed within about half a minute (the lease connection: a lock held on it goes when it goes).
    pub async fn dedicated(&self) -> Result<PgConn> {
        let m = self.inner.manager();
        let mut cfg = m.cfg.clone();
        cfg.keepalives(true)
            .keepalives_idle(Duration::from_secs(10))
            .keepalives_interval(Duration::from_secs(5))
            .keepalives_retries(3);
        // The server's side: it drops the session (and its locks) when this client stops answering.
        let on_connect = format!(
            "{}; SET tcp_keepalives_idle = 10; SET tcp_keepalives_interval = 5; SET tcp_keepalives_count = 3",
            m.on_connect
        );
        connect(&cfg, &m.connector, &on_connect).await
    }
}

/// Opens one connection (plain or TLS, as the URL's `sslmode` says) and runs `on_connect` on it.
pub(super) async fn connect(
    cfg: &tokio_postgres::Config,
    connector: &Connector,
    on_connect: &str,
) -> Result<PgConn> {
    let epoch = EPOCH.load(Ordering::Relaxed);
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
        staging: Staging::Unknown,
        epoch,
    })
}

impl Pooled {
    /// The connection.
    pub fn conn(&mut self) -> Result<&mut PgConn> {
        Ok(&mut self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::super::scratch::{test_server_url, ScratchDb};
    use super::super::{tls, Ctx};
    use super::*;

    /// A connection whose server turned read-only (as a demoted primary does: SQLSTATE 25006) makes the write
    /// unavailable (a 503, retried), and is not handed out again: the next one is new.
    #[tokio::test]
    async fn a_connection_to_a_read_only_server_is_unavailable_and_replaced() {
        let db = ScratchDb::create(&test_server_url())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let (cfg, connector) = tls::parse(db.url()).expect("the URL parses");
        let pool = Pool::new(cfg, connector, 1, String::new()).expect("a pool");
        let pid = {
            let mut c = pool.get().await.expect("a connection");
            let client = &c.conn().expect("open").client;
            client
                .batch_execute("SET default_transaction_read_only = on")
                .await
                .expect("set");
            let e = client
                .batch_execute("CREATE TABLE demoted (a int)")
                .await
                .ctx("write")
                .expect_err("read-only");
            assert!(matches!(e, StoreError::Unavailable(_)), "{e}");
            assert!(e.to_string().contains("25006"), "{e}");
            client
                .query_one("SELECT pg_backend_pid()", &[])
                .await
                .expect("pid")
                .get::<_, i32>(0)
        };
        let mut c = pool.get().await.expect("a connection");
        let row = c
            .conn()
            .expect("open")
            .client
            .query_one(
                "SELECT pg_backend_pid(), current_setting('default_transaction_read_only')",
                &[],
            )
            .await
            .expect("a new session");
        assert_ne!(
            row.get::<_, i32>(0),
            pid,
            "the read-only session was reused"
        );
        assert_eq!(row.get::<_, String>(1), "off");
    }
}
