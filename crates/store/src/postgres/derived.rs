//! What an allocation reads, in PostgreSQL: group rollups (`eai.deployment_rollups`) and usage claims
//! (`eai.usage_claims`), written in the transactions of the rows they derive from, read for a period in one range
//! scan each. The sums are [`crate::rollups::groups`]'; this module only moves them in and out (schema: migration 3
//! in `schema`, which says why the columns are `numeric` and a `bigint[]`).
//!
//! **Group rollups at ingest** ([`write_groups`]), once every per-GPU row of the batch is written:
//!
//! 1. One upsert, in [`GroupKey`] order, adds each fast-path delta into its group with SQL-side sums. It also
//!    carries an empty delta for every *stale* group (one whose per-GPU rows a slow-path recomputation replaced),
//!    which creates or locks its row without changing it.
//! 2. Only then, with those row locks held, the per-GPU rows of the stale groups are read (a new statement: under
//!    READ COMMITTED it sees every batch that committed while we waited), each group is rebuilt with
//!    [`groups::rebuild`] and set, or deleted when no per-GPU row is left. A delta of a stale group is not added:
//!    the rebuild reads it from the per-GPU rows.
//!
//! Why it is right with concurrent batches: a batch only ever changes per-GPU rows of the GPUs it holds locked,
//! and it adds or rebuilds their groups at its very end. A rebuild that locked group `K` before another batch
//! committed does not see that batch's per-GPU rows, and that batch, waiting on `K`, then adds its delta (or
//! rebuilds `K` again) on top of the rebuilt row. Every group row a batch locks is locked by step 1, in one
//! statement, in key order, and no batch waits for a GPU lock while holding a group row (GPU locks come first):
//! so batches never deadlock on groups. The locks are taken last, right before the commit, so the rows that
//! every batch of a deployment-hour adds to are held for the shortest time.
//!
//! **Claims** ([`write_claims`]): the usage upsert reads the events it replaces (under transaction advisory locks
//! on their ids, so that two upserts of one id replace one after the other, and each takes out the claim the
//! other put in) and adds [`ClaimDeltas`] in key order, tenant by tenant under that tenant's scope, as the events
//! themselves; a row whose count of events falls to 0 is deleted (its sums must be 0 then, or the write fails).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use eai_engine::allocate::UsageClaim;
use eai_engine::rollup::{GpuSets, Quantities, Rollup, RollupKey};
use eai_engine::time::Timestamp;
use rust_decimal::Decimal;
use tokio_postgres::{Row, Transaction};
use uuid::Uuid;

use super::pool::Stmts;
use super::samples::{group_key, rollup_of};
use super::{owner_uuid, Ctx};
use crate::codec::{corrupt, count, to_i64};
use crate::outbox::OutboxRows;
use crate::rollups::groups::{
    self, from_fixed, ids_bytes, quantities_of, to_fixed, ClaimDeltas, ClaimKey, ClaimSums,
    GroupDeltas, GroupKey, GroupRow, SetCache, Taken, CLAIM_DP,
};
use crate::Result;

/// Adds deltas into group rows (`x.g`: the delta's GPUs as an array literal). An empty delta (no samples, zero
/// sums, `first` = `i64::MAX`, `last` = `i64::MIN`, no GPUs) leaves an existing row as it is, but locks it.
const GROUPS_ADD: &str = "INSERT INTO eai.deployment_rollups AS d (bucket_ms, deployment_id, tenant_id, model, \
     first_window_start_ms, last_window_start_ms, samples, estimated_samples, gpu_seconds, busy_gpu_seconds, \
     estimated_gpu_seconds, memory_gb_seconds, energy_ws, storage_gb_seconds, gpus) \
     SELECT x.b, x.dep, x.t, x.m, x.f, x.l, x.s, x.e, x.q1, x.q2, x.q3, x.q4, x.q5, x.q6, x.g::bigint[] \
     FROM unnest($1::bigint[], $2::text[], $3::uuid[], $4::text[], $5::bigint[], $6::bigint[], $7::bigint[], \
     $8::bigint[], $9::numeric[], $10::numeric[], $11::numeric[], $12::numeric[], $13::numeric[], $14::numeric[], \
     $15::text[]) AS x(b, dep, t, m, f, l, s, e, q1, q2, q3, q4, q5, q6, g) \
     ON CONFLICT (bucket_ms, deployment_id, tenant_id, model) DO UPDATE SET \
     first_window_start_ms = LEAST(d.first_window_start_ms, EXCLUDED.first_window_start_ms), \
     last_window_start_ms = GREATEST(d.last_window_start_ms, EXCLUDED.last_window_start_ms), \
     samples = d.samples + EXCLUDED.samples, estimated_samples = d.estimated_samples + EXCLUDED.estimated_samples, \
     gpu_seconds = d.gpu_seconds + EXCLUDED.gpu_seconds, \
     busy_gpu_seconds = d.busy_gpu_seconds + EXCLUDED.busy_gpu_seconds, \
     estimated_gpu_seconds = d.estimated_gpu_seconds + EXCLUDED.estimated_gpu_seconds, \
     memory_gb_seconds = d.memory_gb_seconds + EXCLUDED.memory_gb_seconds, \
     energy_ws = d.energy_ws + EXCLUDED.energy_ws, \
     storage_gb_seconds = d.storage_gb_seconds + EXCLUDED.storage_gb_seconds, \
     gpus = CASE WHEN EXCLUDED.gpus <@ d.gpus THEN d.gpus \
     ELSE ARRAY(SELECT DISTINCT u FROM unnest(d.gpus || EXCLUDED.gpus) AS u ORDER BY u) END";

/// [`GROUPS_ADD`] returning the rows' new full values (the columns of [`GROUPS_IN`]), for the outbox.
static GROUPS_ADD_RETURNING: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!(
        "{GROUPS_ADD} RETURNING d.bucket_ms, d.deployment_id, d.tenant_id, d.model, d.first_window_start_ms, \
         d.last_window_start_ms, d.samples, d.estimated_samples, d.gpu_seconds, d.busy_gpu_seconds, \
         d.estimated_gpu_seconds, d.memory_gb_seconds, d.energy_ws, d.storage_gb_seconds, d.gpus"
    )
});

/// Sets rebuilt group rows (locked by [`GROUPS_ADD`] in the same transaction, so they exist).
const GROUPS_SET: &str = "UPDATE eai.deployment_rollups AS d SET \
     first_window_start_ms = x.f, last_window_start_ms = x.l, samples = x.s, estimated_samples = x.e, \
     gpu_seconds = x.q1, busy_gpu_seconds = x.q2, estimated_gpu_seconds = x.q3, memory_gb_seconds = x.q4, \
     energy_ws = x.q5, storage_gb_seconds = x.q6, gpus = x.g::bigint[] \
     FROM unnest($1::bigint[], $2::text[], $3::uuid[], $4::text[], $5::bigint[], $6::bigint[], $7::bigint[], \
     $8::bigint[], $9::numeric[], $10::numeric[], $11::numeric[], $12::numeric[], $13::numeric[], $14::numeric[], \
     $15::text[]) AS x(b, dep, t, m, f, l, s, e, q1, q2, q3, q4, q5, q6, g) \
     WHERE d.bucket_ms = x.b AND d.deployment_id = x.dep AND d.tenant_id = x.t AND d.model = x.m";

const GROUPS_DELETE: &str = "DELETE FROM eai.deployment_rollups AS d \
     USING unnest($1::bigint[], $2::text[], $3::uuid[], $4::text[]) AS k(b, dep, t, m) \
     WHERE d.bucket_ms = k.b AND d.deployment_id = k.dep AND d.tenant_id = k.t AND d.model = k.m";

/// The per-GPU rows of groups: the columns of `samples::rollup_of`, then the GPU id. Index probes per group
/// whatever the planner estimates (see `samples` on row level security and `LATERAL … OFFSET 0`).
const GROUP_MEMBERS: &str = "SELECT g.uuid, r.bucket_ms, r.deployment_id, r.tenant_id, r.model, \
     r.first_window_start_ms, r.last_window_start_ms, r.samples, r.estimated_samples, r.gpu_seconds, \
     r.busy_gpu_seconds, r.estimated_gpu_seconds, r.memory_gb_seconds, r.energy_ws, r.storage_gb_seconds, \
     se.namespace, se.pod, se.node, se.share, r.gpu_id \
     FROM unnest($1::bigint[], $2::text[], $3::uuid[], $4::text[]) AS k(b, dep, t, m) CROSS JOIN LATERAL \
     (SELECT * FROM eai.rollups x WHERE x.bucket_ms = k.b AND x.deployment_id = k.dep AND x.tenant_id = k.t \
     AND x.model = k.m OFFSET 0) r \
     CROSS JOIN LATERAL (SELECT uuid FROM eai.gpus y WHERE y.id = r.gpu_id OFFSET 0) g \
     LEFT JOIN LATERAL (SELECT namespace, pod, node, share FROM eai.series z WHERE z.id = r.series_id OFFSET 0) se \
     ON true";

/// Group rows of a period, in one range scan of the primary key.
pub(super) const GROUPS_IN: &str = "SELECT bucket_ms, deployment_id, tenant_id, model, first_window_start_ms, \
     last_window_start_ms, samples, estimated_samples, gpu_seconds, busy_gpu_seconds, estimated_gpu_seconds, \
     memory_gb_seconds, energy_ws, storage_gb_seconds, gpus \
     FROM eai.deployment_rollups WHERE bucket_ms >= $1 AND bucket_ms < $2";

const GPU_NAMES: &str = "SELECT id, uuid FROM eai.gpus WHERE id = ANY($1::bigint[])";

const CLAIMS_ADD: &str = "INSERT INTO eai.usage_claims AS c \
     (bucket_ms, deployment_id, tenant_id, gpu_seconds, tokens, events) \
     SELECT * FROM unnest($1::bigint[], $2::text[], $3::uuid[], $4::numeric[], $5::numeric[], $6::bigint[]) \
     ON CONFLICT (bucket_ms, deployment_id, tenant_id) DO UPDATE SET \
     gpu_seconds = c.gpu_seconds + EXCLUDED.gpu_seconds, tokens = c.tokens + EXCLUDED.tokens, \
     events = c.events + EXCLUDED.events \
     RETURNING bucket_ms, deployment_id, gpu_seconds, tokens, events, tenant_id";

/// Rows whose last event moved elsewhere; their sums come back to be checked.
const CLAIMS_DROP_EMPTY: &str = "DELETE FROM eai.usage_claims AS c \
     USING unnest($1::bigint[], $2::text[], $3::uuid[]) AS k(b, dep, t) \
     WHERE c.bucket_ms = k.b AND c.deployment_id = k.dep AND c.tenant_id = k.t AND c.events = 0 \
     RETURNING c.bucket_ms, c.deployment_id, c.gpu_seconds, c.tokens";

/// The change counts of the buckets of a period ([`crate::cache::read_cache`]): bucket, count, rows of the log
/// summed.
pub(super) const COUNTS_IN: &str =
    "SELECT bucket_ms, sum(n)::bigint, count(*) FROM eai.hour_changes \
     WHERE bucket_ms >= $1 AND bucket_ms < $2 GROUP BY bucket_ms ORDER BY bucket_ms";

/// Folds each bucket's rows of the change log into one of their sum (see [`crate::cache::read_cache`]).
pub(super) const COMPACT_COUNTS: &str = "SELECT eai.compact_hour_changes()";

/// Claim rows of a period, in one range scan of the primary key.
pub(super) const CLAIMS_IN: &str =
    "SELECT bucket_ms, deployment_id, tenant_id, gpu_seconds, tokens, events \
     FROM eai.usage_claims WHERE bucket_ms >= $1 AND bucket_ms < $2";

// --- group rollups at ingest ----------------------------------------------------------------------------------

/// The columns of group keys: bucket, deployment, tenant (the owner), model.
#[derive(Debug, Default)]
struct KeyCols<'a> {
    bucket: Vec<i64>,
    dep: Vec<&'a str>,
    tenant: Vec<Uuid>,
    model: Vec<&'a str>,
}

impl<'a> KeyCols<'a> {
    fn push(&mut self, k: &'a GroupKey) -> Result<()> {
        self.bucket.push(k.bucket_ms);
        self.dep.push(&k.deployment_id);
        self.tenant.push(owner_uuid(k.owner)?);
        self.model.push(&k.model);
        Ok(())
    }
}

/// The columns of [`GROUPS_ADD`] and [`GROUPS_SET`].
#[derive(Debug, Default)]
struct RowCols<'a> {
    key: KeyCols<'a>,
    first: Vec<i64>,
    last: Vec<i64>,
    samples: Vec<i64>,
    estimated: Vec<i64>,
    q: [Vec<Decimal>; 6],
    gpus: Vec<String>,
}

impl<'a> RowCols<'a> {
    /// A row's values, or (`None`) the empty delta that only locks the row.
    fn push(&mut self, key: &'a GroupKey, row: Option<&GroupRow>) -> Result<()> {
        self.push_net(key, row, None)
    }

    /// A delta's values: `row` added (`None`: nothing, only the row locked) and `taken` taken out (counts and
    /// quantities negative; the row is there, see [`GroupDeltas`]).
    fn push_net(
        &mut self,
        key: &'a GroupKey,
        row: Option<&GroupRow>,
        taken: Option<&Taken>,
    ) -> Result<()> {
        self.key.push(key)?;
        let none = Taken::default();
        let t = taken.unwrap_or(&none);
        let (samples, estimated, mut q) = match row {
            Some(r) => (r.samples, r.estimated_samples, r.q),
            None => (0, 0, [0; 6]),
        };
        for (a, b) in q.iter_mut().zip(t.q) {
            *a -= b;
        }
        let net = |add: u64, take: u64, what: &str| -> Result<i64> {
            Ok(to_i64(add, what)? - to_i64(take, what)?)
        };
        self.samples.push(net(samples, t.samples, "group samples")?);
        self.estimated.push(net(
            estimated,
            t.estimated_samples,
            "group estimated samples",
        )?);
        for (col, v) in self.q.iter_mut().zip(quantities_of(&q)?.values()) {
            col.push(v);
        }
        match row {
            Some(r) => {
                self.first.push(r.first_window_start_ms);
                self.last.push(r.last_window_start_ms);
                self.gpus.push(array_literal(&r.gpus));
            }
            None => {
                self.first.push(i64::MAX);
                self.last.push(i64::MIN);
                self.gpus.push("{}".into());
            }
        }
        Ok(())
    }

    fn params(&self) -> [&(dyn tokio_postgres::types::ToSql + Sync); 15] {
        let k = &self.key;
        let q = &self.q;
        [
            &k.bucket,
            &k.dep,
            &k.tenant,
            &k.model,
            &self.first,
            &self.last,
            &self.samples,
            &self.estimated,
            &q[0],
            &q[1],
            &q[2],
            &q[3],
            &q[4],
            &q[5],
            &self.gpus,
        ]
    }

    async fn execute(&self, tx: &Transaction<'_>, s: &tokio_postgres::Statement) -> Result<u64> {
        tx.execute(s, &self.params())
            .await
            .ctx("write group rollups")
    }

    /// [`Self::execute`] of a statement that returns the rows written.
    async fn query(&self, tx: &Transaction<'_>, s: &tokio_postgres::Statement) -> Result<Vec<Row>> {
        tx.query(s, &self.params()).await.ctx("write group rollups")
    }
}

/// `{1,2,3}`: a set of GPU ids as a PostgreSQL array literal (one text per row: `unnest` cannot take an array
/// of arrays of different lengths).
fn array_literal(ids: &[i64]) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(ids.len() * 6 + 2);
    s.push('{');
    for (i, id) in ids.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        // Writing into a String cannot fail.
        let _ = write!(s, "{id}");
    }
    s.push('}');
    s
}

/// Brings the group rows of a batch up to date: adds `deltas` (the fast path's, per group) and rebuilds every
/// group of `stale` from its per-GPU rows. Call it after every per-GPU write of the batch, as late as possible
/// (see the module's documentation for the order and the locks).
pub(super) async fn write_groups(
    tx: &Transaction<'_>,
    st: &mut Stmts,
    deltas: GroupDeltas,
    stale: BTreeSet<GroupKey>,
    outbox: Option<&mut OutboxRows>,
) -> Result<()> {
    let Some(outbox) = outbox else {
        return write_groups_then(tx, st, deltas, stale, None).await;
    };
    let mut written = Vec::new();
    write_groups_then(tx, st, deltas, stale, Some(&mut written)).await?;
    // The new full value of every row written, its GPUs named; `None`: deleted.
    let mut stored = Vec::new();
    for (k, row) in written {
        match row {
            Some(s) => stored.push(s),
            None => outbox.group_deleted(&k)?,
        }
    }
    for g in name_groups(tx, st, stored).await? {
        outbox.group(&g);
    }
    Ok(())
}

/// A group row written by [`write_groups`] for the outbox: its new value, or (`None`) deleted.
type Written = (GroupKey, Option<Stored>);

/// [`write_groups`], collecting the rows written into `written` when given.
async fn write_groups_then(
    tx: &Transaction<'_>,
    st: &mut Stmts,
    deltas: GroupDeltas,
    stale: BTreeSet<GroupKey>,
    mut written: Option<&mut Vec<Written>>,
) -> Result<()> {
    let mut add: BTreeMap<&GroupKey, (Option<&GroupRow>, Option<&Taken>)> = BTreeMap::new();
    for (k, delta) in deltas.by_key() {
        if !stale.contains(k) {
            add.insert(k, delta);
        }
    }
    for k in &stale {
        add.insert(k, (None, None));
    }
    if add.is_empty() {
        return Ok(());
    }
    let mut cols = RowCols::default();
    for (k, (row, taken)) in &add {
        cols.push_net(k, *row, *taken)?;
    }
    let sql: &'static str = if written.is_some() {
        GROUPS_ADD_RETURNING.as_str()
    } else {
        GROUPS_ADD
    };
    let s = st.get(tx, sql).await?;
    if stale.is_empty() {
        match written {
            Some(w) => added_for_outbox(w, cols.query(tx, &s).await?, &stale)?,
            None => {
                cols.execute(tx, &s).await?;
            }
        }
        return Ok(());
    }

    // Lock (and add), then read the stale groups' per-GPU rows: pipelined, in this order.
    let mut keys = KeyCols::default();
    for k in &stale {
        keys.push(k)?;
    }
    let members = st.get(tx, GROUP_MEMBERS).await?;
    let (added, read) = tokio::join!(cols.query(tx, &s), async {
        tx.query(
            &members,
            &[&keys.bucket, &keys.dep, &keys.tenant, &keys.model],
        )
        .await
        .ctx("read the per-gpu rollups of stale groups")
    });
    // When the upsert fails, the read fails too ("transaction is aborted"): report the upsert's error, the cause.
    let added = added?;
    if let Some(w) = written.as_deref_mut() {
        added_for_outbox(w, added, &stale)?;
    }
    let mut by_key: HashMap<GroupKey, Vec<(i64, Rollup)>> = HashMap::new();
    for r in read? {
        let gpu_id: i64 = r.try_get(19).ctx("read a group member's gpu id")?;
        let rollup = rollup_of(&r)?;
        by_key
            .entry(GroupKey::of(&rollup.key))
            .or_default()
            .push((gpu_id, rollup));
    }

    let mut set = RowCols::default();
    let mut gone = KeyCols::default();
    let mut rebuilt = Vec::with_capacity(stale.len());
    for k in &stale {
        rebuilt.push((k, groups::rebuild(by_key.remove(k).unwrap_or_default())?));
    }
    for (k, row) in &rebuilt {
        match row {
            Some(r) => set.push(k, Some(r))?,
            None => gone.push(k)?,
        }
    }
    let (s_set, s_del) = (
        st.get(tx, GROUPS_SET).await?,
        st.get(tx, GROUPS_DELETE).await?,
    );
    let want_set = set.key.bucket.len() as u64;
    let want_gone = gone.bucket.len() as u64;
    let (n_set, n_gone) = tokio::join!(
        async {
            if want_set == 0 {
                return Ok(0);
            }
            set.execute(tx, &s_set).await
        },
        async {
            if want_gone == 0 {
                return Ok(0);
            }
            tx.execute(
                &s_del,
                &[&gone.bucket, &gone.dep, &gone.tenant, &gone.model],
            )
            .await
            .ctx("delete emptied group rollups")
        }
    );
    let (n_set, n_gone) = (n_set?, n_gone?);
    if (n_set, n_gone) != (want_set, want_gone) {
        return Err(crate::StoreError::Internal(format!(
            "ingest: {want_set} group rollups rebuilt and {want_gone} emptied, but {n_set} set and {n_gone} \
             deleted: a group row locked by this batch went missing"
        )));
    }
    if let Some(w) = written {
        for (k, row) in rebuilt {
            let s = row.map(|r| stored_of_row(&r)).transpose()?;
            w.push((k.clone(), s));
        }
    }
    Ok(())
}

/// The rows [`GROUPS_ADD_RETURNING`] returned, for the outbox, but those of `stale` (rebuilt after).
fn added_for_outbox(
    w: &mut Vec<Written>,
    rows: Vec<Row>,
    stale: &BTreeSet<GroupKey>,
) -> Result<()> {
    for r in &rows {
        let s = stored_of(r)?;
        let k = GroupKey::of(&s.rollup.key);
        if !stale.contains(&k) {
            w.push((k, Some(s)));
        }
    }
    Ok(())
}

/// A group row rebuilt in Rust as [`stored_of`] reads one.
fn stored_of_row(r: &GroupRow) -> Result<Stored> {
    let mut rollup = crate::outbox::group_rollup(r, Vec::new())?;
    rollup.gpus = None;
    Ok(Stored {
        rollup,
        gpus: r.gpus.clone(),
    })
}

// --- group rollups for a period -------------------------------------------------------------------------------

/// A decimal read back, normalized (as the per-GPU rollups are returned).
fn dec(r: &Row, i: usize, what: &str) -> Result<Decimal> {
    Ok(r.try_get::<_, Decimal>(i).ctx(what)?.normalize())
}

/// A group row of [`GROUPS_IN`] before its GPUs are named ([`name_groups`]).
#[derive(Debug)]
pub(super) struct Stored {
    rollup: Rollup,
    gpus: Vec<i64>,
}

pub(super) fn stored_of(r: &Row) -> Result<Stored> {
    let key = group_key(
        r.try_get(0).ctx("read deployment_rollups.bucket_ms")?,
        r.try_get(1).ctx("read deployment_rollups.deployment_id")?,
        r.try_get(2).ctx("read deployment_rollups.tenant_id")?,
        r.try_get(3).ctx("read deployment_rollups.model")?,
    );
    let what = "read deployment_rollups quantities";
    Ok(Stored {
        rollup: Rollup {
            key: RollupKey {
                gpu_uuid: String::new(),
                deployment_id: key.deployment_id,
                owner: key.owner,
                model: key.model,
                bucket_start: Timestamp(key.bucket_ms),
                placement: Default::default(),
            },
            first_window_start: Timestamp(r.try_get(4).ctx("read deployment_rollups.first")?),
            last_window_start: Timestamp(r.try_get(5).ctx("read deployment_rollups.last")?),
            samples: count(
                r.try_get(6).ctx("read deployment_rollups.samples")?,
                "deployment_rollups.samples",
            )?,
            estimated_samples: count(
                r.try_get(7)
                    .ctx("read deployment_rollups.estimated_samples")?,
                "deployment_rollups.estimated_samples",
            )?,
            q: Quantities {
                gpu_seconds: dec(r, 8, what)?,
                busy_gpu_seconds: dec(r, 9, what)?,
                estimated_gpu_seconds: dec(r, 10, what)?,
                memory_gb_seconds: dec(r, 11, what)?,
                energy_ws: dec(r, 12, what)?,
                storage_gb_seconds: dec(r, 13, what)?,
            },
            gpus: None,
        },
        gpus: r.try_get(14).ctx("read deployment_rollups.gpus")?,
    })
}

/// The group rollups of rows of [`GROUPS_IN`] ([`stored_of`]), their GPUs named from `eai.gpus`, equal sets
/// shared.
pub(super) async fn name_groups(
    tx: &Transaction<'_>,
    st: &mut Stmts,
    stored: Vec<Stored>,
) -> Result<Vec<Rollup>> {
    let mut ids: HashSet<i64> = HashSet::new();
    let mut sets_seen: HashSet<&[i64]> = HashSet::new();
    for s in &stored {
        if sets_seen.insert(&s.gpus) {
            ids.extend(&s.gpus);
        }
    }
    let ids: Vec<i64> = ids.into_iter().collect();
    let names: HashMap<i64, Arc<str>> = if ids.is_empty() {
        HashMap::new()
    } else {
        let s = st.get(tx, GPU_NAMES).await?;
        tx.query(&s, &[&ids])
            .await
            .ctx("read the names of the gpus of group rollups")?
            .iter()
            .map(|r| {
                let id: i64 = r.try_get(0).ctx("read gpus.id")?;
                let uuid: &str = r.try_get(1).ctx("read gpus.uuid")?;
                Ok((id, Arc::from(uuid)))
            })
            .collect::<Result<_>>()?
    };
    let mut cache = SetCache::default();
    let mut sets = GpuSets::default();
    stored
        .into_iter()
        .map(|s| {
            let mut r = s.rollup;
            r.gpus = Some(cache.get(&ids_bytes(&s.gpus)?, &names, &mut sets)?);
            Ok(r)
        })
        .collect()
}

// --- claims ---------------------------------------------------------------------------------------------------

/// Adds one tenant's claim deltas (every key of `deltas` is of the tenant the transaction acts for), in key
/// order, and deletes the rows left without events. Deltas that change nothing (an event re-sent as it was) are
/// not written.
pub(super) async fn write_claims(
    tx: &Transaction<'_>,
    st: &mut Stmts,
    deltas: &ClaimDeltas,
    mut outbox: Option<&mut OutboxRows>,
) -> Result<()> {
    let n = deltas.rows.len();
    let (mut bucket, mut dep, mut tenant, mut gs, mut tokens, mut events) = (
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
    );
    let mut emptied: KeyCols<'_> = KeyCols::default();
    for (k, d) in &deltas.rows {
        if *d == ClaimSums::default() {
            continue;
        }
        bucket.push(k.bucket_ms);
        dep.push(k.deployment_id.as_str());
        tenant.push(k.tenant_id.0);
        gs.push(from_fixed(
            d.gpu_seconds,
            CLAIM_DP,
            "claim gpu_seconds delta",
        )?);
        tokens.push(from_fixed(d.tokens, CLAIM_DP, "claim tokens delta")?);
        events.push(d.events);
        if d.events < 0 {
            emptied.bucket.push(k.bucket_ms);
            emptied.dep.push(k.deployment_id.as_str());
            emptied.tenant.push(k.tenant_id.0);
        }
    }
    if bucket.is_empty() {
        return Ok(());
    }
    let add = st.get(tx, CLAIMS_ADD).await?;
    let write = async {
        tx.query(&add, &[&bucket, &dep, &tenant, &gs, &tokens, &events])
            .await
            .ctx("write usage claims")
    };
    let written = if emptied.bucket.is_empty() {
        write.await?
    } else {
        let drop = st.get(tx, CLAIMS_DROP_EMPTY).await?;
        let (written, dropped) = tokio::join!(write, async {
            tx.query(&drop, &[&emptied.bucket, &emptied.dep, &emptied.tenant])
                .await
                .ctx("delete emptied usage claims")
        });
        let written = written?;
        for r in dropped? {
            let (g, t): (Decimal, Decimal) = (
                r.try_get(2).ctx("read usage_claims.gpu_seconds")?,
                r.try_get(3).ctx("read usage_claims.tokens")?,
            );
            if !g.is_zero() || !t.is_zero() {
                return Err(claims_corrupt(&r, "a row without events must sum to 0"));
            }
        }
        written
    };
    for r in &written {
        let (g, t, n): (Decimal, Decimal, i64) = (
            r.try_get(2).ctx("read usage_claims.gpu_seconds")?,
            r.try_get(3).ctx("read usage_claims.tokens")?,
            r.try_get(4).ctx("read usage_claims.events")?,
        );
        if n < 0 || (g.is_sign_negative() && !g.is_zero()) || (t.is_sign_negative() && !t.is_zero())
        {
            return Err(claims_corrupt(r, "sums and counts never go below 0"));
        }
        if let Some(o) = outbox.as_deref_mut() {
            // A row of no events is deleted (CLAIMS_DROP_EMPTY, pipelined after the write).
            let key = ClaimKey {
                bucket_ms: r.try_get(0).ctx("read usage_claims.bucket_ms")?,
                deployment_id: r.try_get(1).ctx("read usage_claims.deployment_id")?,
                tenant_id: eai_engine::domain::TenantId(
                    r.try_get(5).ctx("read usage_claims.tenant_id")?,
                ),
            };
            let sums = ClaimSums {
                gpu_seconds: to_fixed(g, CLAIM_DP, "usage_claims.gpu_seconds")?,
                tokens: to_fixed(t, CLAIM_DP, "usage_claims.tokens")?,
                events: n,
            };
            o.claim(&key, (n > 0).then_some(&sums))?;
        }
    }
    Ok(())
}

/// The error of a claim row that breaks the bookkeeping (the transaction rolls back).
fn claims_corrupt(r: &Row, rule: &str) -> crate::StoreError {
    let b: i64 = r.try_get(0).unwrap_or_default();
    let d: String = r.try_get(1).unwrap_or_default();
    corrupt(
        &format!("usage_claims ({rule})"),
        format!("bucket {b}, deployment {d}"),
    )
}

/// The claim of a row of [`CLAIMS_IN`].
pub(super) fn claim_of(r: &Row) -> Result<UsageClaim> {
    let key = ClaimKey {
        bucket_ms: r.try_get(0).ctx("read usage_claims.bucket_ms")?,
        deployment_id: r.try_get(1).ctx("read usage_claims.deployment_id")?,
        tenant_id: eai_engine::domain::TenantId(r.try_get(2).ctx("read usage_claims.tenant_id")?),
    };
    let sums = ClaimSums {
        gpu_seconds: to_fixed(
            r.try_get(3).ctx("read usage_claims.gpu_seconds")?,
            CLAIM_DP,
            "usage_claims.gpu_seconds",
        )?,
        tokens: to_fixed(
            r.try_get(4).ctx("read usage_claims.tokens")?,
            CLAIM_DP,
            "usage_claims.tokens",
        )?,
        events: r.try_get(5).ctx("read usage_claims.events")?,
    };
    sums.to_claim(&key)
}
