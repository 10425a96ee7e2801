//! Bookkeeping: settings and horizons (`meta`).

use tokio_postgres::Transaction;

use super::sql::{META_GET, META_SET};
use crate::postgres::pool::Stmts;
use crate::postgres::Ctx;
use crate::rollups::{self, RollupConfig, PRUNED_BEFORE};
use crate::Result;

// --- bookkeeping ----------------------------------------------------------------------------------------------

pub(in crate::postgres) async fn meta_get(
    tx: &Transaction<'_>,
    st: &mut Stmts,
    key: &str,
) -> Result<Option<i64>> {
    let s = st.get(tx, META_GET).await?;
    Ok(tx
        .query_opt(&s, &[&key])
        .await
        .ctx("read meta")?
        .map(|r| r.get(0)))
}

pub(in crate::postgres) async fn meta_set(
    tx: &Transaction<'_>,
    st: &mut Stmts,
    key: &str,
    value: i64,
) -> Result<()> {
    let s = st.get(tx, META_SET).await?;
    tx.execute(&s, &[&key, &value]).await.ctx("write meta")?;
    Ok(())
}

pub(super) async fn frozen_before(
    tx: &Transaction<'_>,
    st: &mut Stmts,
    cfg: &RollupConfig,
) -> Result<Option<i64>> {
    Ok(rollups::frozen_before(
        meta_get(tx, st, PRUNED_BEFORE).await?,
        cfg,
    ))
}
