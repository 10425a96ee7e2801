//! The PostgreSQL schema `eai`, as embedded migrations run by the owner role (the user of `EAI_DATABASE_URL`).
//! `eai.schema_version` holds the number of migrations applied; [`migrate`] applies the missing ones in one
//! transaction under an advisory lock (so that two processes starting together migrate once), and refuses a
//! database written by a newer binary. A migration, once released, is never edited: changes are new entries at
//! the end of [`MIGRATIONS`].
//!
//! Row level security: every tenant table has `tenant_id uuid NOT NULL` (the owner tenant, or
//! [`super::PLATFORM_TENANT`] for a platform row) and two permissive policies, `tenant_rows` (the row's tenant is
//! `app.tenant_id`) and `platform_rows` (`app.platform = 'on'`, set only by the platform code path), with `ENABLE`
//! and `FORCE ROW LEVEL SECURITY`, so that the owner is bound too. The service role [`super::SERVICE_ROLE`] is
//! created `NOLOGIN NOBYPASSRLS` and granted only what the store does: audit events and API keys are
//! append-only for it, a policy's pricing cannot be updated (only `effective_to_ms`).

use tokio_postgres::Client;

use super::Ctx;
use crate::{Result, StoreError};

/// Serializes migrations of one database (advisory locks are per database).
const MIGRATION_LOCK: i64 = 0x6561_695f_6d69_6772; // "eai_migr"

/// 1: everything, with row level security and the service role's grants.
const V1: &str = r#"
-- Settings the database is built with (bucket_ms, max_gap_ms), and bookkeeping (raw_pruned_before_ms).
-- Platform-wide, no tenant.
CREATE TABLE eai.meta (
    key   text PRIMARY KEY,
    value bigint NOT NULL
);

-- Interned GPUs (or MIG slices): hardware, platform-wide, no tenant.
CREATE TABLE eai.gpus (
    id   bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    uuid text NOT NULL UNIQUE
);

-- Interned slowly changing labels of samples. tenant_id: the owner of a dedicated deployment, or the platform
-- tenant for a shared one. first_seen_ms / last_seen_ms: the earliest and latest window end stored.
CREATE TABLE eai.series (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id     uuid NOT NULL,
    deployment_id text NOT NULL,
    model         text NOT NULL,
    namespace     text NOT NULL,
    pod           text NOT NULL,
    node          text NOT NULL,
    first_seen_ms bigint NOT NULL,
    last_seen_ms  bigint NOT NULL,
    UNIQUE (deployment_id, tenant_id, model, namespace, pod, node)
);

-- Raw samples: figures as exact scaled integers (utilization, power, storage and fraction x 10^6, memory
-- x 10^10). Identified by (gpu, end of window): the first received wins. tenant_id: the series' owner.
-- No foreign keys on the hottest table (they tripled the cost of a row): the ingest transaction interns the
-- GPU and the series a row names, and neither is ever deleted.
CREATE TABLE eai.gpu_samples (
    gpu_id      bigint NOT NULL,
    end_ms      bigint NOT NULL,
    tenant_id   uuid NOT NULL,
    series_id   bigint NOT NULL,
    window_ms   bigint NOT NULL,
    util_e6     bigint NOT NULL,
    mem_e10     bigint NOT NULL,
    power_e6    bigint NOT NULL,
    storage_e6  bigint NOT NULL,
    fraction_e6 bigint NOT NULL,
    PRIMARY KEY (gpu_id, end_ms)
);

-- Sums of one GPU series in one bucket (eai_engine::rollup::Rollup), exact numerics. tenant_id: the owner.
CREATE TABLE eai.rollups (
    gpu_id                bigint NOT NULL REFERENCES eai.gpus (id),
    bucket_ms             bigint NOT NULL,
    deployment_id         text NOT NULL,
    tenant_id             uuid NOT NULL,
    model                 text NOT NULL,
    first_window_start_ms bigint NOT NULL,
    last_window_start_ms  bigint NOT NULL,
    samples               bigint NOT NULL,
    estimated_samples     bigint NOT NULL,
    gpu_seconds           numeric NOT NULL,
    busy_gpu_seconds      numeric NOT NULL,
    estimated_gpu_seconds numeric NOT NULL,
    memory_gb_seconds     numeric NOT NULL,
    energy_ws             numeric NOT NULL,
    storage_gb_seconds    numeric NOT NULL,
    PRIMARY KEY (gpu_id, bucket_ms, deployment_id, tenant_id, model)
);
CREATE INDEX rollups_by_bucket ON eai.rollups (bucket_ms);

-- Missing spans left unfilled (eai_engine::report::Gap); a gap belongs to the bucket holding its from_ms.
-- tenant_id: the owner of the sample the gap follows.
CREATE TABLE eai.gaps (
    gpu_id        bigint NOT NULL REFERENCES eai.gpus (id),
    from_ms       bigint NOT NULL,
    to_ms         bigint NOT NULL,
    reason        text NOT NULL,
    deployment_id text NOT NULL,
    node          text NOT NULL,
    tenant_id     uuid NOT NULL,
    PRIMARY KEY (gpu_id, from_ms)
);
CREATE INDEX gaps_by_end ON eai.gaps (to_ms);

-- body: the event as contract JSON (usage-event.schema.json), decimals as strings.
CREATE TABLE eai.usage_events (
    event_id       uuid PRIMARY KEY,
    tenant_id      uuid NOT NULL,
    occurred_at_ms bigint NOT NULL,
    deployment_id  text,
    body           jsonb NOT NULL
);
CREATE INDEX usage_events_by_time ON eai.usage_events (occurred_at_ms);
CREATE INDEX usage_events_by_tenant ON eai.usage_events (tenant_id, occurred_at_ms);

-- Platform-wide configuration, no tenant. body: the pricing terms (never edited); closing a policy sets
-- effective_to_ms, the only column the service role may update.
CREATE TABLE eai.allocation_policies (
    seq               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    body              jsonb NOT NULL,
    effective_from_ms bigint NOT NULL,
    effective_to_ms   bigint,
    created_at_ms     bigint NOT NULL
);

-- hash: hex SHA-256 of the key text; the key itself is never stored. tenant_id: the key's tenant, or the
-- platform tenant for a platform key.
CREATE TABLE eai.api_keys (
    seq           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    hash          text NOT NULL UNIQUE,
    role          text NOT NULL,
    tenant_id     uuid NOT NULL,
    name          text,
    created_at_ms bigint NOT NULL,
    revoked       boolean NOT NULL DEFAULT false
);

-- The hash chain. body: the draft as canonical JSON text, the very bytes hashed (text, not jsonb, which would
-- rewrite them). tenant_id: the draft's tenant, or the platform tenant.
CREATE TABLE eai.audit_events (
    seq       bigint PRIMARY KEY,
    prev_hash text NOT NULL,
    hash      text NOT NULL,
    tenant_id uuid NOT NULL,
    body      text NOT NULL
);
CREATE INDEX audit_events_by_tenant ON eai.audit_events (tenant_id, seq);

-- Row level security on every tenant table. NULLIF: once a transaction-local setting has been used on a
-- connection, it reads '' (not NULL) afterwards, and ''::uuid would be an error rather than "no tenant".
DO $$
DECLARE t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['series', 'gpu_samples', 'rollups', 'gaps', 'usage_events', 'api_keys', 'audit_events']
    LOOP
        EXECUTE format('ALTER TABLE eai.%I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('ALTER TABLE eai.%I FORCE ROW LEVEL SECURITY', t);
        EXECUTE format(
            'CREATE POLICY tenant_rows ON eai.%I '
            'USING (tenant_id = NULLIF(current_setting(''app.tenant_id'', true), '''')::uuid) '
            'WITH CHECK (tenant_id = NULLIF(current_setting(''app.tenant_id'', true), '''')::uuid)', t);
        EXECUTE format(
            'CREATE POLICY platform_rows ON eai.%I '
            'USING (current_setting(''app.platform'', true) = ''on'') '
            'WITH CHECK (current_setting(''app.platform'', true) = ''on'')', t);
    END LOOP;
END $$;

-- The service role: only what the store does.
GRANT USAGE ON SCHEMA eai TO eai_app;
GRANT SELECT ON eai.schema_version TO eai_app;
GRANT SELECT, INSERT, UPDATE ON eai.meta TO eai_app;
GRANT SELECT, INSERT ON eai.gpus TO eai_app;
GRANT SELECT, INSERT, UPDATE ON eai.series TO eai_app;
GRANT SELECT, INSERT, DELETE ON eai.gpu_samples TO eai_app;
GRANT SELECT, INSERT, UPDATE, DELETE ON eai.rollups, eai.gaps TO eai_app;
GRANT SELECT, INSERT, UPDATE ON eai.usage_events TO eai_app;
GRANT SELECT, INSERT ON eai.allocation_policies TO eai_app;
GRANT UPDATE (effective_to_ms) ON eai.allocation_policies TO eai_app;
GRANT SELECT, INSERT ON eai.api_keys TO eai_app;
GRANT UPDATE (revoked) ON eai.api_keys TO eai_app;
GRANT SELECT, INSERT ON eai.audit_events TO eai_app;
"#;

/// 2: the replica outbox (`crate::outbox`). Platform data: its rows are every tenant's changes on their way to
/// ClickHouse, so it has no tenant column and only the `platform_rows` policy: a tenant-scoped transaction (or
/// one with no scope) neither sees nor writes an entry. The store writes entries on the platform path at the
/// end of the change's transaction (a usage upsert switches to it after its tenant groups); the replicator
/// reads and deletes them on the platform path. The service role may insert, read and delete entries, never
/// update one.
const V2: &str = r#"
CREATE TABLE eai.outbox (
    seq           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    table_name    text NOT NULL,
    rows          text NOT NULL,
    created_at_ms bigint NOT NULL
);
ALTER TABLE eai.outbox ENABLE ROW LEVEL SECURITY;
ALTER TABLE eai.outbox FORCE ROW LEVEL SECURITY;
CREATE POLICY platform_rows ON eai.outbox
    USING (current_setting('app.platform', true) = 'on')
    WITH CHECK (current_setting('app.platform', true) = 'on');
GRANT SELECT, INSERT, DELETE ON eai.outbox TO eai_app;
"#;

/// 3: what an allocation reads (`crate::rollups::groups`), kept beside what it is derived from, in the same
/// transactions: group rollups (one row per deployment-hour: the sum of the per-GPU rollups of the key and their
/// GPUs) and usage claims (one row per tenant-hour of a deployment: the sum of `claim_of` over its events).
///
/// Representation, chosen for PostgreSQL rather than copied from the embedded store's byte codecs:
///
/// - Quantities and claim sums are `numeric`, exact like the per-GPU rollups, so that ingest adds a delta with
///   SQL-side `+` in one `INSERT … ON CONFLICT DO UPDATE`: no read of the group row before writing it, and no
///   lost update when two batches of different GPUs of one deployment add to it at once (the upsert adds to the
///   latest committed version under READ COMMITTED). Byte-encoded sums would need a read-modify-write under
///   `SELECT … FOR UPDATE`: one more round trip, and the hot row locked from that read to the commit.
/// - `gpus` is a sorted `bigint[]` of `eai.gpus.id` (the id's own type: no cast, no range to check). The upsert
///   keeps the stored array when the delta's GPUs are already members (`<@`, the common case once an hour has
///   started) and merges the two sorted sets otherwise. A read decodes each distinct set once
///   (`groups::SetCache`).
/// - The primary key starts with `bucket_ms`, so that a period is one index range scan; rows are written roughly
///   in bucket order (ingest appends the current hours), so the heap follows the index. `fillfactor = 80`: every
///   batch updates the current hour's rows, and free room on their pages lets those updates stay HOT (no index
///   write) and be pruned in place.
/// - Claims count their `events`: a row is deleted when its last event moved elsewhere. No `CHECK (… >= 0)`:
///   PostgreSQL checks the proposed row of an upsert before it finds the conflict, and a delta that takes an
///   event out is negative; the store checks the sums the upsert returns instead.
///
/// Row level security as on the tables they derive from: `tenant_id` is the owner (the platform tenant for a
/// shared deployment) for group rollups, as in `eai.rollups`, and the event's tenant for claims, as in
/// `eai.usage_events`; the same `tenant_rows` and `platform_rows` policies, `ENABLE` and `FORCE`. The service
/// role may read, insert, update and delete rows.
///
/// Backfill from the rows already there, in SQL (the migration runs as the owner, which `FORCE` binds too: hence
/// `app.platform` for its transaction): group rows are `GROUP BY` sums of the per-GPU rollups; a claim row sums
/// `eai_engine::allocate::claim_of` over the stored events of its key (none for an event without a deployment
/// or written by the allocation itself; its `gpu_seconds` unit when it has one, else `tokens_in + tokens_out`;
/// in the hour it occurred, `CLAIM_BUCKET_MS`, floored for negative times too).
const V3: &str = r#"
CREATE TABLE eai.deployment_rollups (
    bucket_ms             bigint NOT NULL,
    deployment_id         text NOT NULL,
    tenant_id             uuid NOT NULL,
    model                 text NOT NULL,
    first_window_start_ms bigint NOT NULL,
    last_window_start_ms  bigint NOT NULL,
    samples               bigint NOT NULL,
    estimated_samples     bigint NOT NULL,
    gpu_seconds           numeric NOT NULL,
    busy_gpu_seconds      numeric NOT NULL,
    estimated_gpu_seconds numeric NOT NULL,
    memory_gb_seconds     numeric NOT NULL,
    energy_ws             numeric NOT NULL,
    storage_gb_seconds    numeric NOT NULL,
    gpus                  bigint[] NOT NULL,
    PRIMARY KEY (bucket_ms, deployment_id, tenant_id, model)
) WITH (fillfactor = 80);

CREATE TABLE eai.usage_claims (
    bucket_ms     bigint NOT NULL,
    deployment_id text NOT NULL,
    tenant_id     uuid NOT NULL,
    gpu_seconds   numeric NOT NULL,
    tokens        numeric NOT NULL,
    events        bigint NOT NULL,
    PRIMARY KEY (bucket_ms, deployment_id, tenant_id)
) WITH (fillfactor = 80);

DO $$
DECLARE t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['deployment_rollups', 'usage_claims']
    LOOP
        EXECUTE format('ALTER TABLE eai.%I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('ALTER TABLE eai.%I FORCE ROW LEVEL SECURITY', t);
        EXECUTE format(
            'CREATE POLICY tenant_rows ON eai.%I '
            'USING (tenant_id = NULLIF(current_setting(''app.tenant_id'', true), '''')::uuid) '
            'WITH CHECK (tenant_id = NULLIF(current_setting(''app.tenant_id'', true), '''')::uuid)', t);
        EXECUTE format(
            'CREATE POLICY platform_rows ON eai.%I '
            'USING (current_setting(''app.platform'', true) = ''on'') '
            'WITH CHECK (current_setting(''app.platform'', true) = ''on'')', t);
    END LOOP;
END $$;

GRANT SELECT, INSERT, UPDATE, DELETE ON eai.deployment_rollups, eai.usage_claims TO eai_app;

SELECT set_config('app.platform', 'on', true);

INSERT INTO eai.deployment_rollups (bucket_ms, deployment_id, tenant_id, model, first_window_start_ms,
    last_window_start_ms, samples, estimated_samples, gpu_seconds, busy_gpu_seconds, estimated_gpu_seconds,
    memory_gb_seconds, energy_ws, storage_gb_seconds, gpus)
SELECT bucket_ms, deployment_id, tenant_id, model, min(first_window_start_ms), max(last_window_start_ms),
    sum(samples)::bigint, sum(estimated_samples)::bigint, sum(gpu_seconds), sum(busy_gpu_seconds),
    sum(estimated_gpu_seconds), sum(memory_gb_seconds), sum(energy_ws), sum(storage_gb_seconds),
    array_agg(gpu_id ORDER BY gpu_id)
FROM eai.rollups
GROUP BY bucket_ms, deployment_id, tenant_id, model;

INSERT INTO eai.usage_claims (bucket_ms, deployment_id, tenant_id, gpu_seconds, tokens, events)
SELECT occurred_at_ms - ((occurred_at_ms % 3600000) + 3600000) % 3600000, deployment_id, tenant_id,
    sum(CASE WHEN body->'units'->>'gpu_seconds' IS NOT NULL
        THEN (body->'units'->>'gpu_seconds')::numeric ELSE 0 END),
    sum(CASE WHEN body->'units'->>'gpu_seconds' IS NOT NULL THEN 0
        ELSE COALESCE((body->'units'->>'tokens_in')::numeric, 0)
           + COALESCE((body->'units'->>'tokens_out')::numeric, 0) END),
    count(*)
FROM eai.usage_events
WHERE deployment_id IS NOT NULL AND body->>'source' IS DISTINCT FROM 'allocation'
GROUP BY 1, 2, 3;
"#;

// The claims' backfill in V3 floors to this bucket.
const _: () = assert!(eai_engine::allocate::CLAIM_BUCKET_MS == 3_600_000);

/// 4: what is kept of pruned hours (`crate::rollups::pruned`) and the policy boundaries rollups are cut at
/// (`crate::rollups::Cuts`). `pruned_ends`: per GPU and bucket, the ends of pruned windows that are not edges
/// (`EndSet` bytes); `prune_pending`: per GPU, where rows written below the pruning horizon start. Both are
/// platform data like the GPUs they describe (hardware timelines, no tenant's usage or cost): no tenant column,
/// `ENABLE`/`FORCE ROW LEVEL SECURITY` and only the `platform_rows` policy, so a tenant-scoped transaction
/// neither sees nor writes them. `rollup_cuts`: instants where a policy starts or ends inside an hour,
/// platform-wide configuration like the policies. A database pruned before this version records its horizon as
/// `pruned_indexed_from_ms`; the boundaries of its policies become cuts where their hours are not frozen yet.
const V4: &str = r#"
CREATE TABLE eai.pruned_ends (
    gpu_id    bigint NOT NULL,
    bucket_ms bigint NOT NULL,
    ends      bytea NOT NULL,
    PRIMARY KEY (gpu_id, bucket_ms)
);

CREATE TABLE eai.prune_pending (
    gpu_id  bigint PRIMARY KEY,
    from_ms bigint NOT NULL
);

CREATE TABLE eai.rollup_cuts (
    at_ms bigint PRIMARY KEY
);

DO $$
DECLARE t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['pruned_ends', 'prune_pending']
    LOOP
        EXECUTE format('ALTER TABLE eai.%I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('ALTER TABLE eai.%I FORCE ROW LEVEL SECURITY', t);
        EXECUTE format(
            'CREATE POLICY platform_rows ON eai.%I '
            'USING (current_setting(''app.platform'', true) = ''on'') '
            'WITH CHECK (current_setting(''app.platform'', true) = ''on'')', t);
    END LOOP;
END $$;

GRANT SELECT, INSERT, UPDATE, DELETE ON eai.pruned_ends, eai.prune_pending TO eai_app;
GRANT SELECT, INSERT ON eai.rollup_cuts TO eai_app;

INSERT INTO eai.meta (key, value)
SELECT 'pruned_indexed_from_ms', value FROM eai.meta WHERE key = 'raw_pruned_before_ms'
ON CONFLICT (key) DO NOTHING;

WITH s AS (
    SELECT COALESCE((SELECT value FROM eai.meta WHERE key = 'bucket_ms'), 3600000) AS b,
           COALESCE((SELECT value FROM eai.meta WHERE key = 'max_gap_ms'), 900000) AS g,
           (SELECT value FROM eai.meta WHERE key = 'raw_pruned_before_ms') AS p
), t AS (
    SELECT effective_from_ms AS at_ms FROM eai.allocation_policies
    UNION SELECT effective_to_ms FROM eai.allocation_policies WHERE effective_to_ms IS NOT NULL
)
INSERT INTO eai.rollup_cuts (at_ms)
SELECT t.at_ms FROM t, s
WHERE ((t.at_ms % s.b) + s.b) % s.b <> 0
  AND (s.p IS NULL OR t.at_ms - ((t.at_ms % s.b) + s.b) % s.b >= s.p + s.g)
ON CONFLICT DO NOTHING;
"#;

/// 5: usage events identified by `(tenant_id, event_id)` (tenants' ids never collide); API keys bound to node
/// names (a JSON array), with an expiry, a revocation time and a rotation (the previous secret's hash and until
/// when it still works; the service role may update those columns and nothing else of a key). A database with
/// audit events records where the current hash form starts.
const V5: &str = r#"
SELECT set_config('app.platform', 'on', true);

ALTER TABLE eai.usage_events DROP CONSTRAINT usage_events_pkey;
ALTER TABLE eai.usage_events ADD PRIMARY KEY (tenant_id, event_id);

ALTER TABLE eai.api_keys
    ADD COLUMN nodes text,
    ADD COLUMN expires_at_ms bigint,
    ADD COLUMN revoked_at_ms bigint,
    ADD COLUMN previous_hash text UNIQUE,
    ADD COLUMN previous_valid_until_ms bigint,
    ADD COLUMN rotated_at_ms bigint;
UPDATE eai.api_keys SET revoked_at_ms = created_at_ms WHERE revoked;
GRANT UPDATE (revoked, revoked_at_ms, hash, previous_hash, previous_valid_until_ms, rotated_at_ms)
    ON eai.api_keys TO eai_app;

INSERT INTO eai.meta (key, value)
SELECT 'audit_v2_from_seq', max(seq) + 1 FROM eai.audit_events HAVING count(*) > 0
ON CONFLICT (key) DO NOTHING;
"#;

/// 6: registered tenants. A tenant's row is its own data: `tenant_id` is its id, under the same `tenant_rows` and
/// `platform_rows` policies as every tenant table (a tenant's readers see their row only; a slug is looked up on
/// the platform path, before a caller's tenant is known). The service role may insert and read them, never
/// change or delete one (slugs are immutable).
const V6: &str = r#"
CREATE TABLE eai.tenants (
    tenant_id     uuid PRIMARY KEY,
    slug          text NOT NULL UNIQUE,
    name          text NOT NULL,
    created_at_ms bigint NOT NULL
);
ALTER TABLE eai.tenants ENABLE ROW LEVEL SECURITY;
ALTER TABLE eai.tenants FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_rows ON eai.tenants
    USING (tenant_id = NULLIF(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = NULLIF(current_setting('app.tenant_id', true), '')::uuid);
CREATE POLICY platform_rows ON eai.tenants
    USING (current_setting('app.platform', true) = 'on')
    WITH CHECK (current_setting('app.platform', true) = 'on');
GRANT SELECT, INSERT ON eai.tenants TO eai_app;
"#;

/// 7: budgets, reservations, spend per tenant, month and currency, threshold alerts: tenant rows under the same
/// `tenant_rows`/`platform_rows` policies as every tenant table. The service role may close a budget (set
/// `effective_to_ms`), move a reservation through its states, keep spend sums and record deliveries; nothing
/// else is ever updated, nothing deleted. Spend is built from the usage events already stored (exact numeric
/// sums).
const V7: &str = r#"
SELECT set_config('app.platform', 'on', true);

CREATE TABLE eai.budgets (
    seq               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id         uuid NOT NULL,
    body              jsonb NOT NULL,
    effective_from_ms bigint NOT NULL,
    effective_to_ms   bigint,
    webhook_secret    text,
    created_at_ms     bigint NOT NULL
);
CREATE INDEX budgets_by_tenant ON eai.budgets (tenant_id, seq);

CREATE TABLE eai.reservations (
    id              text PRIMARY KEY,
    tenant_id       uuid NOT NULL,
    action          text NOT NULL,
    deployment_id   text,
    currency        text NOT NULL,
    estimate_cost   numeric NOT NULL,
    estimate_tokens numeric NOT NULL,
    status          text NOT NULL,
    created_at_ms   bigint NOT NULL,
    expires_at_ms   bigint NOT NULL,
    closed_at_ms    bigint,
    actual_cost     numeric,
    actual_tokens   numeric,
    event_id        uuid
);
CREATE INDEX reservations_held ON eai.reservations (tenant_id, status, expires_at_ms);
CREATE INDEX reservations_expiring ON eai.reservations (status, expires_at_ms);

CREATE TABLE eai.spend (
    tenant_id uuid NOT NULL,
    month_ms  bigint NOT NULL,
    currency  text NOT NULL,
    cost      numeric NOT NULL,
    tokens    numeric NOT NULL,
    PRIMARY KEY (tenant_id, month_ms, currency)
);

CREATE TABLE eai.budget_alerts (
    id              uuid PRIMARY KEY,
    budget_seq      bigint NOT NULL,
    tenant_id       uuid NOT NULL,
    month_ms        bigint NOT NULL,
    threshold_pct   integer NOT NULL,
    spent           numeric NOT NULL,
    crossed_at_ms   bigint NOT NULL,
    attempts        integer NOT NULL,
    next_attempt_ms bigint NOT NULL,
    delivered_at_ms bigint,
    last_error      text,
    UNIQUE (budget_seq, month_ms, threshold_pct)
);
CREATE INDEX budget_alerts_due ON eai.budget_alerts (delivered_at_ms, next_attempt_ms);

DO $$
DECLARE t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['budgets', 'reservations', 'spend', 'budget_alerts']
    LOOP
        EXECUTE format('ALTER TABLE eai.%I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('ALTER TABLE eai.%I FORCE ROW LEVEL SECURITY', t);
        EXECUTE format(
            'CREATE POLICY tenant_rows ON eai.%I '
            'USING (tenant_id = NULLIF(current_setting(''app.tenant_id'', true), '''')::uuid) '
            'WITH CHECK (tenant_id = NULLIF(current_setting(''app.tenant_id'', true), '''')::uuid)', t);
        EXECUTE format(
            'CREATE POLICY platform_rows ON eai.%I '
            'USING (current_setting(''app.platform'', true) = ''on'') '
            'WITH CHECK (current_setting(''app.platform'', true) = ''on'')', t);
        EXECUTE format('GRANT SELECT, INSERT ON eai.%I TO eai_app', t);
    END LOOP;
END $$;
GRANT UPDATE (effective_to_ms) ON eai.budgets TO eai_app;
GRANT UPDATE (status, closed_at_ms, actual_cost, actual_tokens, event_id) ON eai.reservations TO eai_app;
GRANT UPDATE (cost, tokens) ON eai.spend TO eai_app;
GRANT UPDATE (attempts, next_attempt_ms, delivered_at_ms, last_error) ON eai.budget_alerts TO eai_app;

INSERT INTO eai.spend (tenant_id, month_ms, currency, cost, tokens)
SELECT tenant_id, month_ms, currency, sum(cost), sum(tokens) FROM (
    SELECT tenant_id,
           (extract(epoch FROM date_trunc('month', to_timestamp(occurred_at_ms / 1000.0) AT TIME ZONE 'UTC')) * 1000)::bigint AS month_ms,
           body->'cost'->>'currency' AS currency,
           (body->'cost'->>'amount')::numeric AS cost,
           CASE WHEN body->>'source' = 'reservation' THEN COALESCE((body->'units'->>'tokens')::numeric, 0) ELSE 0 END AS tokens
    FROM eai.usage_events
    WHERE body ? 'cost'
      AND ((body->>'source' = 'allocation' AND body->>'usage_type' = 'gpu_local') OR body->>'source' = 'reservation')
) AS x
GROUP BY tenant_id, month_ms, currency;
"#;

/// 8: registered local inference providers, one per deployment (the body: `crate::providers`). Platform rows:
/// readable and writable on the platform path only (`platform_rows`); the service role may insert and replace a
/// registration, never delete one.
const V8: &str = r#"
CREATE TABLE eai.providers (
    deployment_id    text PRIMARY KEY,
    body             text NOT NULL,
    registered_at_ms bigint NOT NULL
);
ALTER TABLE eai.providers ENABLE ROW LEVEL SECURITY;
ALTER TABLE eai.providers FORCE ROW LEVEL SECURITY;
CREATE POLICY platform_rows ON eai.providers
    USING (current_setting('app.platform', true) = 'on')
    WITH CHECK (current_setting('app.platform', true) = 'on');
GRANT SELECT, INSERT, UPDATE (body, registered_at_ms) ON eai.providers TO eai_app;
"#;

/// 9: the change counts of the buckets of the group and claim tables, for the allocation's read cache
/// (`crate::cache::read_cache`): statement triggers append one `(bucket, 1)` row per bucket a statement inserted,
/// updated or deleted rows of, in its transaction (an append: concurrent writers never wait on each other for
/// it); `eai.compact_hour_changes()` folds each bucket's rows into one of their sum. Both run as the owner
/// (`SECURITY DEFINER`): the service role may read the counts on the platform path and call the compaction,
/// and can neither write nor delete a count itself. The buckets already written start at 1.
const V9: &str = r#"
CREATE TABLE eai.hour_changes (
    bucket_ms bigint NOT NULL,
    n         bigint NOT NULL
);
CREATE INDEX hour_changes_bucket ON eai.hour_changes (bucket_ms);
ALTER TABLE eai.hour_changes ENABLE ROW LEVEL SECURITY;
CREATE POLICY platform_rows ON eai.hour_changes FOR SELECT
    USING (current_setting('app.platform', true) = 'on');
GRANT SELECT ON eai.hour_changes TO eai_app;

CREATE FUNCTION eai.count_changed_buckets() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    INSERT INTO eai.hour_changes (bucket_ms, n) SELECT DISTINCT bucket_ms, 1 FROM changed;
    RETURN NULL;
END $$;
REVOKE ALL ON FUNCTION eai.count_changed_buckets() FROM PUBLIC;

CREATE FUNCTION eai.compact_hour_changes() RETURNS bigint
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    WITH many AS (
        SELECT bucket_ms FROM eai.hour_changes GROUP BY bucket_ms HAVING count(*) > 1
    ), gone AS (
        DELETE FROM eai.hour_changes h USING many m WHERE h.bucket_ms = m.bucket_ms RETURNING h.bucket_ms, h.n
    ), folded AS (
        INSERT INTO eai.hour_changes (bucket_ms, n) SELECT bucket_ms, sum(n)::bigint FROM gone GROUP BY bucket_ms
        RETURNING 1
    )
    SELECT count(*) FROM folded;
$$;
REVOKE ALL ON FUNCTION eai.compact_hour_changes() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION eai.compact_hour_changes() TO eai_app;

DO $$
DECLARE t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['deployment_rollups', 'usage_claims']
    LOOP
        EXECUTE format('CREATE TRIGGER %I AFTER INSERT ON eai.%I REFERENCING NEW TABLE AS changed '
            'FOR EACH STATEMENT EXECUTE FUNCTION eai.count_changed_buckets()', t || '_inserted', t);
        EXECUTE format('CREATE TRIGGER %I AFTER UPDATE ON eai.%I REFERENCING NEW TABLE AS changed '
            'FOR EACH STATEMENT EXECUTE FUNCTION eai.count_changed_buckets()', t || '_updated', t);
        EXECUTE format('CREATE TRIGGER %I AFTER DELETE ON eai.%I REFERENCING OLD TABLE AS changed '
            'FOR EACH STATEMENT EXECUTE FUNCTION eai.count_changed_buckets()', t || '_deleted', t);
    END LOOP;
END $$;

SELECT set_config('app.platform', 'on', true);
INSERT INTO eai.hour_changes (bucket_ms, n)
SELECT bucket_ms, 1 FROM (SELECT bucket_ms FROM eai.deployment_rollups UNION SELECT bucket_ms FROM eai.usage_claims) b;
"#;

/// 10: each GPU's latest stored window end, kept by ingest in the batch's transaction (the GPUs are locked), so
/// that a batch reads its GPUs' latest samples by primary key. The lookup it replaces (`ORDER BY end_ms DESC
/// LIMIT 1` per GPU) was planned as a bitmap scan of every row of the GPU plus a sort, because row level security
/// makes the planner expect one visible row: a cost that grew with each GPU's history (a month of 10,000 GPUs'
/// hourly samples loaded at 1,300 samples/s by its end). Pruning keeps each GPU's latest sample, so the column
/// always names a stored row.
const V10: &str = r#"
ALTER TABLE eai.gpus ADD COLUMN last_end_ms bigint;
GRANT UPDATE (last_end_ms) ON eai.gpus TO eai_app;
SELECT set_config('app.platform', 'on', true);
UPDATE eai.gpus g SET last_end_ms = s.end_ms
FROM (SELECT gpu_id, max(end_ms) AS end_ms FROM eai.gpu_samples GROUP BY gpu_id) s
WHERE s.gpu_id = g.id;
"#;

/// 11: rollups keep where their time ran: the series (deployment, tenant, model, namespace, pod, node) of the
/// samples summed, 0 for the rows written before (their pod is not known: the breakdown shows none).
const V11: &str = r#"
ALTER TABLE eai.rollups ADD COLUMN series_id bigint NOT NULL DEFAULT 0;
ALTER TABLE eai.rollups DROP CONSTRAINT rollups_pkey;
ALTER TABLE eai.rollups ADD PRIMARY KEY (gpu_id, bucket_ms, deployment_id, tenant_id, model, series_id);
"#;

/// 12: samples split equally between the pods of a shared GPU (`share_method: "equal"`), tallied at ingest per
/// hour (of the window's start) and deployment, which the allocation reports (`equal_gpu_shares`). Platform
/// rows (a deployment's hardware timeline, no tenant's cost), like `pruned_ends`.
const V12: &str = r#"
CREATE TABLE eai.equal_shares (
    bucket_ms     bigint NOT NULL,
    deployment_id text NOT NULL,
    samples       bigint NOT NULL,
    gpu_seconds   numeric NOT NULL,
    PRIMARY KEY (bucket_ms, deployment_id)
);
ALTER TABLE eai.equal_shares ENABLE ROW LEVEL SECURITY;
ALTER TABLE eai.equal_shares FORCE ROW LEVEL SECURITY;
CREATE POLICY platform_rows ON eai.equal_shares
    USING (current_setting('app.platform', true) = 'on')
    WITH CHECK (current_setting('app.platform', true) = 'on');
GRANT SELECT, INSERT, UPDATE ON eai.equal_shares TO eai_app;
"#;

/// Every migration, in order. `schema_version` = how many have been applied.
/// 13: a series keeps how its pod's share of the GPU was obtained (`exclusive`, `mig`, `measured`, `equal`:
/// SPEC §11), which the breakdown and the samples read back show; the series written before are `exclusive`.
const V13: &str = r#"
ALTER TABLE eai.series ADD COLUMN share text NOT NULL DEFAULT 'exclusive';
ALTER TABLE eai.series DROP CONSTRAINT series_deployment_id_tenant_id_model_namespace_pod_node_key;
ALTER TABLE eai.series ADD CONSTRAINT series_labels_key
    UNIQUE (deployment_id, tenant_id, model, namespace, pod, node, share);
"#;

/// 14: idempotency keys (`crate::idempotency`): one row per (caller, key), claimed before the request runs
/// (`claim`: the claim's token), completed with the answer of a success or deleted; pruned by `claimed_at_ms`.
/// A row is its caller's tenant's data (the answer it keeps may name that tenant's records): `tenant_id` is the
/// caller's tenant, or the platform tenant for a platform identity, under the same `tenant_rows` and
/// `platform_rows` policies as every tenant table, `ENABLE` and `FORCE`. The store claims, completes and
/// releases a key under the caller's own scope, and prunes on the platform path. The service role may read,
/// insert, complete (the answer's columns), take over (`claim`, `claimed_at_ms`) and delete rows.
const V14: &str = r#"
CREATE TABLE eai.idempotency_keys (
    caller          text NOT NULL,
    key             text NOT NULL,
    tenant_id       uuid NOT NULL,
    fingerprint     text NOT NULL,
    claim           uuid NOT NULL,
    claimed_at_ms   bigint NOT NULL,
    completed_at_ms bigint,
    status          integer,
    content_type    text,
    location        text,
    body            bytea,
    PRIMARY KEY (caller, key)
);
CREATE INDEX idempotency_keys_by_claim ON eai.idempotency_keys (claimed_at_ms);
ALTER TABLE eai.idempotency_keys ENABLE ROW LEVEL SECURITY;
ALTER TABLE eai.idempotency_keys FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_rows ON eai.idempotency_keys
    USING (tenant_id = NULLIF(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = NULLIF(current_setting('app.tenant_id', true), '')::uuid);
CREATE POLICY platform_rows ON eai.idempotency_keys
    USING (current_setting('app.platform', true) = 'on')
    WITH CHECK (current_setting('app.platform', true) = 'on');
GRANT SELECT, INSERT, DELETE ON eai.idempotency_keys TO eai_app;
GRANT UPDATE (claim, claimed_at_ms, completed_at_ms, status, content_type, location, body)
    ON eai.idempotency_keys TO eai_app;
"#;

/// 15: spend anomalies (`crate::anomalies`): one row per (deployment, hour, metric, currency) (`currency` ''
/// for GPU-seconds), written once by an insert-if-absent on that key. A row is its deployment's tenant's data:
/// `tenant_id` is a dedicated deployment's tenant, or the platform tenant for a shared one, under the same
/// `tenant_rows` and `platform_rows` policies as every tenant table, `ENABLE` and `FORCE` (a tenant's readers
/// see their dedicated deployments' anomalies only). The service role may read and insert rows and record
/// webhook attempts (`attempts`, `next_attempt_ms`, `delivered_at_ms`, `last_error`); nothing else is updated,
/// nothing deleted.
const V15: &str = r#"
CREATE TABLE eai.anomalies (
    seq             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    deployment_id   text NOT NULL,
    tenant_id       uuid NOT NULL,
    hour_ms         bigint NOT NULL,
    metric          text NOT NULL,
    currency        text NOT NULL,
    value           numeric NOT NULL,
    median          numeric NOT NULL,
    mad             numeric NOT NULL,
    deviation       numeric,
    direction       text NOT NULL,
    baseline_hours  integer NOT NULL,
    detected_at_ms  bigint NOT NULL,
    attempts        integer NOT NULL DEFAULT 0,
    next_attempt_ms bigint,
    delivered_at_ms bigint,
    last_error      text,
    UNIQUE (deployment_id, hour_ms, metric, currency)
);
CREATE INDEX anomalies_by_hour ON eai.anomalies (hour_ms);
CREATE INDEX anomalies_due ON eai.anomalies (next_attempt_ms) WHERE next_attempt_ms IS NOT NULL;
ALTER TABLE eai.anomalies ENABLE ROW LEVEL SECURITY;
ALTER TABLE eai.anomalies FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_rows ON eai.anomalies
    USING (tenant_id = NULLIF(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = NULLIF(current_setting('app.tenant_id', true), '')::uuid);
CREATE POLICY platform_rows ON eai.anomalies
    USING (current_setting('app.platform', true) = 'on')
    WITH CHECK (current_setting('app.platform', true) = 'on');
GRANT SELECT, INSERT ON eai.anomalies TO eai_app;
GRANT UPDATE (attempts, next_attempt_ms, delivered_at_ms, last_error) ON eai.anomalies TO eai_app;
"#;

/// 16: a budget alert has a kind (SPEC §13): `threshold` (the rows before, threshold_pct the
/// threshold crossed) or `forecast` (threshold_pct 0, with the month's `expected` spend and the day the limit is
/// expected to be reached, `exhausted_on_ms`: its midnight). One alert per (budget, month, kind, threshold). Row
/// level security is unchanged: the table's `tenant_rows` and `platform_rows` policies hold whole rows (the new
/// columns with them), the service role's `SELECT, INSERT` on the table covers the new columns, and its `UPDATE`
/// stays on the delivery columns (an alert's kind and figures are never updated).
const V16: &str = r#"
ALTER TABLE eai.budget_alerts
    ADD COLUMN kind text NOT NULL DEFAULT 'threshold' CHECK (kind IN ('threshold', 'forecast')),
    ADD COLUMN expected numeric,
    ADD COLUMN exhausted_on_ms bigint;
ALTER TABLE eai.budget_alerts DROP CONSTRAINT budget_alerts_budget_seq_month_ms_threshold_pct_key;
ALTER TABLE eai.budget_alerts ADD CONSTRAINT budget_alerts_once_key
    UNIQUE (budget_seq, month_ms, kind, threshold_pct);
"#;

/// 17: statements (`crate::statements`): one row per (tenant, month) (`tenant_id` the platform tenant for the
/// statement of unallocated capacity), numbered `ST-YYYY-MM-NNNN` with `seq` its rank in the month; the lines and
/// totals as issued in `content` (JSON, decimals as text). Under the `tenant_rows` and `platform_rows` policies of
/// every tenant table, `ENABLE` and `FORCE` (a tenant sees its own statements only). Immutable: the service role
/// may only read and insert, and a trigger refuses every update, delete and truncate, the owner's too.
const V17: &str = r#"
CREATE TABLE eai.statements (
    number       text PRIMARY KEY,
    tenant_id    uuid NOT NULL,
    month_ms     bigint NOT NULL,
    to_ms        bigint NOT NULL,
    seq          integer NOT NULL,
    issued_at_ms bigint NOT NULL,
    issued_by    text NOT NULL,
    content      text NOT NULL,
    UNIQUE (tenant_id, month_ms),
    UNIQUE (month_ms, seq)
);
CREATE OR REPLACE FUNCTION eai.statements_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'statements are immutable';
END $$;
CREATE TRIGGER statements_immutable BEFORE UPDATE OR DELETE OR TRUNCATE ON eai.statements
    FOR EACH STATEMENT EXECUTE FUNCTION eai.statements_immutable();
ALTER TABLE eai.statements ENABLE ROW LEVEL SECURITY;
ALTER TABLE eai.statements FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_rows ON eai.statements
    USING (tenant_id = NULLIF(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = NULLIF(current_setting('app.tenant_id', true), '')::uuid);
CREATE POLICY platform_rows ON eai.statements
    USING (current_setting('app.platform', true) = 'on')
    WITH CHECK (current_setting('app.platform', true) = 'on');
GRANT SELECT, INSERT ON eai.statements TO eai_app;
"#;

pub const MIGRATIONS: &[&str] = &[
    V1, V2, V3, V4, V5, V6, V7, V8, V9, V10, V11, V12, V13, V14, V15, V16, V17,
];

/// The schema version this binary writes.
pub fn latest() -> u32 {
    u32::try_from(MIGRATIONS.len()).unwrap_or(u32::MAX)
}

/// The service role, created once per cluster (roles are cluster-wide; two databases migrating at the same
/// time may both try: the loser's error is swallowed), and made a role the owner may `SET ROLE` to.
pub(super) const SERVICE_ROLE_SQL: &str = r#"
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'eai_app') THEN
        BEGIN
            CREATE ROLE eai_app NOLOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE NOINHERIT;
        EXCEPTION WHEN duplicate_object OR unique_violation THEN
            NULL;
        END;
    END IF;
    IF NOT pg_has_role(current_user, 'eai_app', 'MEMBER') THEN
        EXECUTE format('GRANT eai_app TO %I', current_user);
    END IF;
END $$;
"#;

/// The schema version of the database, without creating anything (`None`: not migrated yet).
async fn current_version(client: &Client) -> Result<Option<u32>> {
    let exists: bool = client
        .query_one("SELECT to_regclass('eai.schema_version') IS NOT NULL", &[])
        .await
        .ctx("look for schema eai")?
        .get(0);
    if !exists {
        return Ok(None);
    }
    let v: Option<i32> = client
        .query_one("SELECT MAX(version) FROM eai.schema_version", &[])
        .await
        .ctx("read schema_version")?
        .get(0);
    v.map(|v| {
        u32::try_from(v).map_err(|_| StoreError::Internal(format!("corrupt schema_version {v}")))
    })
    .transpose()
}

/// Applies the missing migrations; returns the schema version. Runs on a connection of the owner role. A
/// database already at this binary's version is left untouched, so a user that is only a member of the service
/// role (no DDL rights) can open a database an owner migrated.
pub async fn migrate(client: &mut Client) -> Result<u32> {
    migrate_to(client, latest()).await
}

/// Applies the missing migrations up to version `target` (at most [`latest`]); returns the schema version.
/// [`migrate`] calls it with [`latest`]; the tests call it with less to build a database as an older binary
/// left it.
pub async fn migrate_to(client: &mut Client, target: u32) -> Result<u32> {
    let target = target.min(latest());
    if let Some(v) = current_version(client).await? {
        if v >= target && v <= latest() {
            return Ok(v);
        }
    }
    client
        .batch_execute(SERVICE_ROLE_SQL)
        .await
        .ctx("create the service role eai_app (the database user needs CREATEROLE, or create it beforehand)")?;
    let tx = client.transaction().await.ctx("begin migration")?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await
        .ctx("take the migration lock")?;
    tx.batch_execute(
        "CREATE SCHEMA IF NOT EXISTS eai; \
         CREATE TABLE IF NOT EXISTS eai.schema_version (version integer NOT NULL)",
    )
    .await
    .ctx("create schema eai")?;
    let current: Option<i32> = tx
        .query_one("SELECT MAX(version) FROM eai.schema_version", &[])
        .await
        .ctx("read schema_version")?
        .get(0);
    let current = u32::try_from(current.unwrap_or(0))
        .map_err(|_| StoreError::Internal(format!("corrupt schema_version {current:?}")))?;
    if current > latest() {
        return Err(StoreError::Internal(format!(
            "the database has schema version {current}, newer than this binary's {}: upgrade eai-gpu",
            latest()
        )));
    }
    for (i, sql) in MIGRATIONS
        .iter()
        .enumerate()
        .take(target as usize)
        .skip(current as usize)
    {
        let v = i + 1;
        tx.batch_execute(sql).await.ctx(&format!("migration {v}"))?;
        let v32 = i32::try_from(v).unwrap_or(i32::MAX);
        tx.execute("DELETE FROM eai.schema_version", &[])
            .await
            .ctx("update schema_version")?;
        tx.execute(
            "INSERT INTO eai.schema_version (version) VALUES ($1)",
            &[&v32],
        )
        .await
        .ctx("update schema_version")?;
        tracing::info!(version = v, "postgres schema migrated");
    }
    tx.commit().await.ctx("commit migrations")?;
    Ok(target.max(current))
}
