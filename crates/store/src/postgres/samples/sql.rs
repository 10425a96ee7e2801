//! The statements of samples, rollups, gaps, cuts, end sets and bookkeeping (see the note on joins in
//! [`super`]).

pub(super) const META_GET: &str = "SELECT value FROM eai.meta WHERE key = $1";
pub(super) const META_SET: &str = "INSERT INTO eai.meta (key, value) VALUES ($1, $2) \
     ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value";

pub(super) const GPUS_INTERN: &str =
    "INSERT INTO eai.gpus (uuid) SELECT u FROM unnest($1::text[]) AS u \
     WHERE NOT EXISTS (SELECT 1 FROM eai.gpus g WHERE g.uuid = u) ON CONFLICT (uuid) DO NOTHING";
pub(super) const GPUS_OF: &str = "SELECT id, uuid FROM eai.gpus WHERE uuid = ANY($1::text[])";
pub(super) const GPUS_ALL: &str = "SELECT id FROM eai.gpus";
/// A GPU's id is the key of its transaction advisory lock; keys are taken in the order given (ascending ids,
/// so that two transactions never wait on each other in a cycle).
pub(super) const GPUS_LOCK: &str = "SELECT pg_advisory_xact_lock(k) FROM unnest($1::bigint[]) AS k";

/// Neighbour lookups walk the primary key from the sample's own key, `(gpu_id, end_ms) < (…)` in key order,
/// `LIMIT 1`, and keep the row only if it is of the same GPU. Row level security makes the planner expect one
/// visible row of a GPU, so `max(end_ms) WHERE gpu_id = …` or `… ORDER BY end_ms DESC LIMIT 1` were planned as a
/// bitmap scan of every row of the GPU on the searched side plus an aggregate or a sort: the GPU's whole history
/// per lookup (measured: 200+ ms per batch of late samples, newest first, and a rate that varied fourfold
/// between runs with the statistics). A key range from a row value is expected to hold many rows, so the
/// ordered index scan that stops at the first row is the plan. A GPU's latest end is not looked up at all:
/// `eai.gpus.last_end_ms` holds it (schema 10).
pub(super) const LAST_ENDS: &str =
    "SELECT g.id, g.last_end_ms FROM eai.gpus g WHERE g.id = ANY($1::bigint[])";

/// The latest stored sample of each GPU named (none for a GPU without samples), by primary key.
pub(super) const LAST_SAMPLES: &str = concat!(
    "SELECT ",
    sample_only_cols!(),
    "FROM unnest($1::bigint[]) AS k(id) \
     CROSS JOIN LATERAL (SELECT last_end_ms FROM eai.gpus y WHERE y.id = k.id OFFSET 0) e \
     CROSS JOIN LATERAL (SELECT * FROM eai.gpu_samples x WHERE x.gpu_id = k.id AND x.end_ms = e.last_end_ms \
     OFFSET 0) s",
    sample_joins!()
);

/// Each GPU's latest end moves forward to the batch's latest row ($1 GPU ids, $2 their batch's latest end).
pub(super) const LAST_ENDS_WRITE: &str = "UPDATE eai.gpus g SET last_end_ms = k.end_ms \
     FROM unnest($1::bigint[], $2::bigint[]) AS k(id, end_ms) \
     WHERE g.id = k.id AND (g.last_end_ms IS NULL OR g.last_end_ms < k.end_ms)";

/// Per late run ([`crate::plan::ingest::late_runs`]: GPU, first end, last end): the stored end just before it and
/// just after it (the key walked from a row value, as above), and the stored ends between (one range of the
/// key: a row-value upper bound would only filter, scanning on to the end of the index).
pub(super) const LATE_RUNS: &str = "SELECT \
     (SELECT CASE WHEN b.gpu_id = x.gpu_id THEN b.end_ms END FROM (SELECT s.gpu_id, s.end_ms \
      FROM eai.gpu_samples s WHERE (s.gpu_id, s.end_ms) < (x.gpu_id, x.lo) \
      ORDER BY s.gpu_id DESC, s.end_ms DESC LIMIT 1) b), \
     (SELECT CASE WHEN a.gpu_id = x.gpu_id THEN a.end_ms END FROM (SELECT s.gpu_id, s.end_ms \
      FROM eai.gpu_samples s WHERE (s.gpu_id, s.end_ms) > (x.gpu_id, x.hi) \
      ORDER BY s.gpu_id, s.end_ms LIMIT 1) a), \
     ARRAY(SELECT s.end_ms FROM eai.gpu_samples s \
      WHERE s.gpu_id = x.gpu_id AND s.end_ms >= x.lo AND s.end_ms <= x.hi ORDER BY s.end_ms) \
     FROM unnest($1::bigint[], $2::bigint[], $3::bigint[]) WITH ORDINALITY AS x(gpu_id, lo, hi, n) ORDER BY x.n";

pub(super) const SAMPLES_AT: &str = concat!(
    "SELECT ",
    sample_only_cols!(),
    "FROM unnest($1::bigint[], $2::bigint[]) AS k(gpu_id, end_ms) CROSS JOIN LATERAL \
     (SELECT * FROM eai.gpu_samples x WHERE x.gpu_id = k.gpu_id AND x.end_ms = k.end_ms OFFSET 0) s",
    sample_joins!()
);

pub(super) const CONTEXT: &str = concat!(
    "(SELECT ",
    sample_cols!(),
    " WHERE s.gpu_id = $1 AND s.end_ms < $2 ORDER BY s.end_ms DESC LIMIT 1) UNION ALL (SELECT ",
    sample_cols!(),
    " WHERE s.gpu_id = $1 AND s.end_ms >= $2 AND s.end_ms < $3) UNION ALL (SELECT ",
    sample_cols!(),
    " WHERE s.gpu_id = $1 AND s.end_ms >= $3 ORDER BY s.end_ms LIMIT 1)"
);

/// [`CONTEXT`] of many GPUs in one statement (an exact hour of a fleet is one round trip, not one per GPU).
pub(super) const CONTEXTS: &str = concat!(
    "SELECT ",
    sample_only_cols!(),
    "FROM unnest($1::bigint[]) AS k(id) CROSS JOIN LATERAL (\
     (SELECT * FROM eai.gpu_samples x WHERE x.gpu_id = k.id AND x.end_ms < $2 ORDER BY x.end_ms DESC LIMIT 1) \
     UNION ALL (SELECT * FROM eai.gpu_samples x WHERE x.gpu_id = k.id AND x.end_ms >= $2 AND x.end_ms < $3) \
     UNION ALL (SELECT * FROM eai.gpu_samples x WHERE x.gpu_id = k.id AND x.end_ms >= $3 ORDER BY x.end_ms LIMIT 1)\
     ) s",
    sample_joins!()
);

pub(super) const SERIES_UPSERT: &str = "INSERT INTO eai.series AS se \
     (tenant_id, deployment_id, model, namespace, pod, node, share, first_seen_ms, last_seen_ms) \
     SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], \
     $8::bigint[], $9::bigint[]) \
     ON CONFLICT (deployment_id, tenant_id, model, namespace, pod, node, share) DO UPDATE SET \
     first_seen_ms = LEAST(se.first_seen_ms, EXCLUDED.first_seen_ms), \
     last_seen_ms = GREATEST(se.last_seen_ms, EXCLUDED.last_seen_ms) \
     RETURNING id, tenant_id, deployment_id, model, namespace, pod, node, share";

/// A plain insert: every row is planned as new under the GPUs' locks, and the primary key refuses (and so rolls
/// the batch back) any row that is not, so a sample can never be counted twice.
pub(super) const SAMPLES_INSERT: &str = "INSERT INTO eai.gpu_samples \
     (gpu_id, end_ms, tenant_id, series_id, window_ms, util_e6, mem_e10, power_e6, storage_e6, fraction_e6) \
     SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::uuid[], $4::bigint[], $5::bigint[], $6::bigint[], \
     $7::bigint[], $8::bigint[], $9::bigint[], $10::bigint[])";

/// A session's staging table for large batches: private to the session, emptied at each commit (and, being
/// temporary, never written to the WAL). Its columns are [`SAMPLES_INSERT`]'s, in its order.
pub(super) const STAGE_CREATE: &str = "CREATE TEMPORARY TABLE IF NOT EXISTS eai_samples_stage \
     (gpu_id bigint NOT NULL, end_ms bigint NOT NULL, tenant_id uuid NOT NULL, series_id bigint NOT NULL, \
     window_ms bigint NOT NULL, util_e6 bigint NOT NULL, mem_e10 bigint NOT NULL, power_e6 bigint NOT NULL, \
     storage_e6 bigint NOT NULL, fraction_e6 bigint NOT NULL) ON COMMIT DELETE ROWS";
pub(super) const STAGE_COPY: &str = "COPY pg_temp.eai_samples_stage FROM STDIN (FORMAT binary)";
/// [`SAMPLES_INSERT`] from the staging table (row level security checks each row as it does there).
pub(super) const SAMPLES_FROM_STAGE: &str = "INSERT INTO eai.gpu_samples \
     (gpu_id, end_ms, tenant_id, series_id, window_ms, util_e6, mem_e10, power_e6, storage_e6, fraction_e6) \
     SELECT gpu_id, end_ms, tenant_id, series_id, window_ms, util_e6, mem_e10, power_e6, storage_e6, fraction_e6 \
     FROM pg_temp.eai_samples_stage";

pub(super) const ROLLUPS_AT: &str = concat!(
    "SELECT ",
    rollup_only_cols!(),
    "FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::uuid[], $5::text[], $6::text[], $7::text[], $8::text[], \
     $9::text[]) AS k(gpu_id, bucket_ms, deployment_id, tenant_id, model, namespace, pod, node, share) CROSS JOIN LATERAL \
     (SELECT * FROM eai.rollups x WHERE x.gpu_id = k.gpu_id AND x.bucket_ms = k.bucket_ms \
     AND x.deployment_id = k.deployment_id AND x.tenant_id = k.tenant_id AND x.model = k.model \
     AND x.series_id = ",
    series_of_key!(),
    " OFFSET 0) r",
    rollup_gpu!()
);

/// A rollup names no series that was never stored: the lookup answers null and the row is refused.
pub(super) const ROLLUPS_WRITE: &str = concat!(
    "INSERT INTO eai.rollups (gpu_id, bucket_ms, deployment_id, tenant_id, model, \
     first_window_start_ms, last_window_start_ms, samples, estimated_samples, gpu_seconds, busy_gpu_seconds, \
     estimated_gpu_seconds, memory_gb_seconds, energy_ws, storage_gb_seconds, series_id) \
     SELECT k.gpu_id, k.bucket_ms, k.deployment_id, k.tenant_id, k.model, k.f, k.l, k.s, k.e, k.q0, k.q1, k.q2, \
     k.q3, k.q4, k.q5, ",
    series_of_key!(),
    " FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::uuid[], $5::text[], $6::bigint[], \
     $7::bigint[], $8::bigint[], $9::bigint[], $10::numeric[], $11::numeric[], $12::numeric[], $13::numeric[], \
     $14::numeric[], $15::numeric[], $16::text[], $17::text[], $18::text[], $19::text[]) \
     AS k(gpu_id, bucket_ms, deployment_id, tenant_id, model, f, l, s, e, q0, q1, q2, q3, q4, q5, namespace, pod, node, \
     share) \
     ON CONFLICT (gpu_id, bucket_ms, deployment_id, tenant_id, model, series_id) DO UPDATE SET \
     first_window_start_ms = EXCLUDED.first_window_start_ms, last_window_start_ms = EXCLUDED.last_window_start_ms, \
     samples = EXCLUDED.samples, estimated_samples = EXCLUDED.estimated_samples, \
     gpu_seconds = EXCLUDED.gpu_seconds, busy_gpu_seconds = EXCLUDED.busy_gpu_seconds, \
     estimated_gpu_seconds = EXCLUDED.estimated_gpu_seconds, memory_gb_seconds = EXCLUDED.memory_gb_seconds, \
     energy_ws = EXCLUDED.energy_ws, storage_gb_seconds = EXCLUDED.storage_gb_seconds"
);

pub(super) const GAPS_WRITE: &str = "INSERT INTO eai.gaps (gpu_id, from_ms, to_ms, reason, deployment_id, node, tenant_id) \
     SELECT x.gpu_id, x.from_ms, x.to_ms, x.reason, x.deployment_id, x.node, \
     COALESCE((SELECT s.tenant_id FROM eai.gpu_samples s WHERE s.gpu_id = x.gpu_id AND s.end_ms = x.from_ms), $7) \
     FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::text[], $5::text[], $6::text[]) \
     AS x(gpu_id, from_ms, to_ms, reason, deployment_id, node) \
     ON CONFLICT (gpu_id, from_ms) DO UPDATE SET to_ms = EXCLUDED.to_ms, reason = EXCLUDED.reason, \
     deployment_id = EXCLUDED.deployment_id, node = EXCLUDED.node, tenant_id = EXCLUDED.tenant_id";

pub(super) const BUCKET_ROLLUPS: &str = concat!(
    "SELECT ",
    rollup_cols!(),
    " WHERE r.gpu_id = $1 AND r.bucket_ms >= $2 AND r.bucket_ms < $3"
);
pub(super) const BUCKET_GAPS: &str = "SELECT g.uuid, x.node, x.deployment_id, x.from_ms, x.to_ms, x.reason \
     FROM eai.gaps x JOIN eai.gpus g ON g.id = x.gpu_id WHERE x.gpu_id = $1 AND x.from_ms >= $2 AND x.from_ms < $3";
/// Returns the keys of the rows it deletes: their groups must be rebuilt.
pub(super) const BUCKET_CLEAR_ROLLUPS: &str =
    "DELETE FROM eai.rollups WHERE gpu_id = $1 AND bucket_ms >= $2 \
     AND bucket_ms < $3 RETURNING bucket_ms, deployment_id, tenant_id, model";
pub(super) const BUCKET_CLEAR_GAPS: &str =
    "DELETE FROM eai.gaps WHERE gpu_id = $1 AND from_ms >= $2 AND from_ms < $3";

pub(super) const GPUS_OF_BUCKET: &str =
    "SELECT DISTINCT gpu_id FROM eai.rollups WHERE bucket_ms >= $1 AND bucket_ms < $2";
pub(super) const GAPS_IN: &str =
    "SELECT g.uuid, x.node, x.deployment_id, x.from_ms, x.to_ms, x.reason \
     FROM eai.gaps x JOIN eai.gpus g ON g.id = x.gpu_id WHERE x.to_ms > $1 AND x.from_ms < $2";

/// Deletes raw rows by (gpu, end).
pub(super) const PRUNE: &str =
    "DELETE FROM eai.gpu_samples s USING unnest($1::bigint[], $2::bigint[]) AS c(gpu_id, end_ms) \
     WHERE s.gpu_id = c.gpu_id AND s.end_ms = c.end_ms";

pub(super) const CUTS: &str = "SELECT at_ms FROM eai.rollup_cuts";
/// The class of the rollup cuts' advisory lock (two-key locks: apart from the GPUs' one-key locks). A policy's
/// cuts are decided under it exclusive ([`CUTS_LOCK`]); an ingest reads the cuts under it shared
/// ([`CUTS_LOCK_SHARED`]), so it never writes rollups keyed by cuts older than those it read.
pub(super) const CUTS_LOCK_CLASS: i32 = 0x6561_6963;
pub(super) const CUTS_LOCK: &str = "SELECT pg_advisory_xact_lock($1::int4, 0)";
pub(super) const CUTS_LOCK_SHARED: &str = "SELECT pg_advisory_xact_lock_shared($1::int4, 0)";
/// Which of the frozen hours named hold group rollups (written with the GPUs' in one transaction; keyed by the
/// hour's start or a cut's segment inside it).
pub(super) const FROZEN_ROLLED_UP: &str = "SELECT h FROM unnest($1::bigint[]) AS h \
     WHERE EXISTS (SELECT 1 FROM eai.deployment_rollups r WHERE r.bucket_ms >= h AND r.bucket_ms < h + $2::bigint)";
pub(super) const CUTS_INSERT: &str =
    "INSERT INTO eai.rollup_cuts (at_ms) SELECT unnest($1::bigint[]) ON CONFLICT DO NOTHING";

/// Per late sample (gpu, end, bucket of end): the end sets of its bucket and the nearest one on each side.
pub(super) const END_SETS_NEAR: &str = "SELECT k.gpu_id, k.end_ms, e.bucket_ms, e.ends \
     FROM unnest($1::bigint[], $2::bigint[], $3::bigint[]) AS k(gpu_id, end_ms, bucket_ms) CROSS JOIN LATERAL (\
     (SELECT bucket_ms, ends FROM eai.pruned_ends x WHERE x.gpu_id = k.gpu_id AND x.bucket_ms = k.bucket_ms) \
     UNION ALL (SELECT bucket_ms, ends FROM eai.pruned_ends x WHERE x.gpu_id = k.gpu_id AND x.bucket_ms < k.bucket_ms \
     ORDER BY x.bucket_ms DESC LIMIT 1) \
     UNION ALL (SELECT bucket_ms, ends FROM eai.pruned_ends x WHERE x.gpu_id = k.gpu_id AND x.bucket_ms > k.bucket_ms \
     ORDER BY x.bucket_ms ASC LIMIT 1)) e";

/// Per GPU (id, first bucket, last bucket): its end sets in that range and the nearest one before it.
pub(super) const END_SETS_BETWEEN: &str = "SELECT k.gpu_id, e.bucket_ms, e.ends \
     FROM unnest($1::bigint[], $2::bigint[], $3::bigint[]) AS k(gpu_id, lo, hi) CROSS JOIN LATERAL (\
     (SELECT bucket_ms, ends FROM eai.pruned_ends x WHERE x.gpu_id = k.gpu_id AND x.bucket_ms >= k.lo AND x.bucket_ms <= k.hi) \
     UNION ALL (SELECT bucket_ms, ends FROM eai.pruned_ends x WHERE x.gpu_id = k.gpu_id AND x.bucket_ms < k.lo \
     ORDER BY x.bucket_ms DESC LIMIT 1)) e";

pub(super) const END_SETS_WRITE: &str = "INSERT INTO eai.pruned_ends (gpu_id, bucket_ms, ends) \
     SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bytea[]) \
     ON CONFLICT (gpu_id, bucket_ms) DO UPDATE SET ends = EXCLUDED.ends";

/// Per GPU (id, lo, cutoff): the `(end, window)` of its raw rows in `[lo, cutoff)`, of the nearest one before
/// `lo` and of the first at or after `cutoff`.
pub(super) const RAW_AROUND: &str = "SELECT k.gpu_id, s.end_ms, s.window_ms \
     FROM unnest($1::bigint[], $2::bigint[], $3::bigint[]) AS k(gpu_id, lo, cutoff) CROSS JOIN LATERAL (\
     (SELECT end_ms, window_ms FROM eai.gpu_samples x WHERE x.gpu_id = k.gpu_id AND x.end_ms < k.lo \
     ORDER BY x.end_ms DESC LIMIT 1) \
     UNION ALL (SELECT end_ms, window_ms FROM eai.gpu_samples x WHERE x.gpu_id = k.gpu_id AND x.end_ms >= k.lo \
     AND x.end_ms < k.cutoff) \
     UNION ALL (SELECT end_ms, window_ms FROM eai.gpu_samples x WHERE x.gpu_id = k.gpu_id AND x.end_ms >= k.cutoff \
     ORDER BY x.end_ms ASC LIMIT 1)) s";

pub(super) const PENDING: &str = "SELECT gpu_id, from_ms FROM eai.prune_pending";
pub(super) const PENDING_CLEAR: &str = "DELETE FROM eai.prune_pending";
pub(super) const PENDING_UPSERT: &str = "INSERT INTO eai.prune_pending AS p (gpu_id, from_ms) \
     SELECT * FROM unnest($1::bigint[], $2::bigint[]) \
     ON CONFLICT (gpu_id) DO UPDATE SET from_ms = LEAST(p.from_ms, EXCLUDED.from_ms)";

pub(super) const ROLLUPS_DELETE: &str = concat!(
    "DELETE FROM eai.rollups r \
     USING unnest($1::bigint[], $2::bigint[], $3::text[], $4::uuid[], $5::text[], $6::text[], $7::text[], $8::text[], \
     $9::text[]) AS k(gpu_id, bucket_ms, deployment_id, tenant_id, model, namespace, pod, node, share) \
     WHERE r.gpu_id = k.gpu_id AND r.bucket_ms = k.bucket_ms AND r.deployment_id = k.deployment_id \
     AND r.tenant_id = k.tenant_id AND r.model = k.model AND r.series_id = ",
    series_of_key!()
);

/// Deletes gaps by (gpu, from), returning them as [`gap_of`] reads them.
pub(super) const GAPS_TAKE: &str = "DELETE FROM eai.gaps x USING unnest($1::bigint[], $2::bigint[]) AS k(gpu_id, from_ms) \
     WHERE x.gpu_id = k.gpu_id AND x.from_ms = k.from_ms \
     RETURNING (SELECT g.uuid FROM eai.gpus g WHERE g.id = x.gpu_id), x.node, x.deployment_id, x.from_ms, x.to_ms, x.reason";

/// The latest sample of every GPU seen at or after $1, the newest first, at most $2 (by primary key).
pub(super) const LATEST_SAMPLES: &str = concat!(
    "SELECT ",
    sample_only_cols!(),
    "FROM eai.gpus k CROSS JOIN LATERAL \
     (SELECT * FROM eai.gpu_samples x WHERE x.gpu_id = k.id AND x.end_ms = k.last_end_ms OFFSET 0) s",
    sample_joins!(),
    "WHERE s.end_ms >= $1 ORDER BY s.end_ms DESC, g.uuid COLLATE \"C\" LIMIT $2"
);
pub(super) const LATEST_COUNT: &str = "SELECT count(*) FROM eai.gpus k WHERE k.last_end_ms >= $1";
pub(super) const NODES_SEEN: &str = "SELECT node, max(last_seen_ms) FROM eai.series GROUP BY node \
     HAVING max(last_seen_ms) >= $1 ORDER BY node COLLATE \"C\"";

pub(super) const SERIES_SEEN: &str =
    "SELECT deployment_id, namespace, model, first_seen_ms, last_seen_ms, tenant_id FROM eai.series \
     ORDER BY deployment_id COLLATE \"C\", last_seen_ms, id";

/// The least and greatest rollup bucket, gap start and event time (for `replica_extent`).
pub(super) const REPLICA_EXTENT: &str =
    "SELECT (SELECT min(bucket_ms) FROM eai.rollups), (SELECT max(bucket_ms) FROM eai.rollups), \
     (SELECT min(from_ms) FROM eai.gaps), (SELECT max(from_ms) FROM eai.gaps), \
     (SELECT min(occurred_at_ms) FROM eai.usage_events), (SELECT max(occurred_at_ms) FROM eai.usage_events)";
/// The samples ending in `[$1, $2)`: one range probe of the `(gpu_id, end_ms)` key per GPU.
pub(super) const REPLICA_SAMPLES: &str = concat!(
    "SELECT ",
    sample_only_cols!(),
    "FROM eai.gpus k CROSS JOIN LATERAL (SELECT * FROM eai.gpu_samples x WHERE x.gpu_id = k.id \
     AND x.end_ms >= $1 AND x.end_ms < $2 OFFSET 0) s",
    sample_joins!()
);
/// The rollups of the buckets in `[$1, $2)`.
pub(super) const REPLICA_ROLLUPS: &str = concat!(
    "SELECT ",
    rollup_cols!(),
    "WHERE r.bucket_ms >= $1 AND r.bucket_ms < $2"
);
/// The gaps starting in `[$1, $2)`, in [`gap_of`]'s columns.
pub(super) const REPLICA_GAPS: &str =
    "SELECT g.uuid, x.node, x.deployment_id, x.from_ms, x.to_ms, x.reason \
     FROM eai.gaps x JOIN eai.gpus g ON g.id = x.gpu_id WHERE x.from_ms >= $1 AND x.from_ms < $2";

/// Adds hours' equal shares to the tally (numeric sums: exact).
pub(super) const EQUAL_SHARES_ADD: &str = "INSERT INTO eai.equal_shares AS e (bucket_ms, deployment_id, samples, gpu_seconds) \
     SELECT * FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::numeric[]) \
     ON CONFLICT (bucket_ms, deployment_id) DO UPDATE \
     SET samples = e.samples + EXCLUDED.samples, gpu_seconds = e.gpu_seconds + EXCLUDED.gpu_seconds";
pub(super) const EQUAL_SHARES_READ: &str = "SELECT bucket_ms, deployment_id, samples, gpu_seconds::text \
     FROM eai.equal_shares WHERE bucket_ms >= $1 AND bucket_ms < $2 ORDER BY bucket_ms, deployment_id";
