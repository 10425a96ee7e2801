//! The replica's DDL: the tables and the view that [`ClickHouse::migrate`] creates, and the migrations of
//! replicas that older binaries created (quantities stored as text, rollups without their placement or share
//! method, usage events keyed by `event_id` alone): such a table is renamed aside, the current one created, the
//! rows copied over converted (versions kept), the old table dropped. Only SQL that ClickHouse 18.16 accepts too
//! (see the module above).

use std::collections::BTreeMap;

use super::reads::text;
use super::{
    ClickHouse, Result, CLAIMS, DECIMAL_SCALE, EVENTS_TABLE, GROUPS, GROUPS_COMPLETE, META,
    ROLLUP_QUANTITIES,
};

impl ClickHouse {
    /// Creates the database and tables if missing (idempotent).
    pub async fn migrate(&self) -> Result<()> {
        let db = &self.database;
        let on = self.on_cluster();
        self.exec(&format!("CREATE DATABASE IF NOT EXISTS {db}{on}"))
            .await?;
        // The group tables are new here: complete from the start when the replica holds nothing yet.
        let new_groups = self.columns(GROUPS).await?.is_empty();
        if self.cluster.is_none() {
            // Tables of older binaries (single servers), their quantities as text: renamed aside, converted
            // below.
            for (table, probe) in [
                (ROLLUPS, "gpu_seconds"),
                (SAMPLES, "utilization"),
                (EVENTS_TABLE, "tokens_in"),
            ] {
                self.rename_text_layout(table, probe).await?;
            }
        }
        for (table, columns, order, shard_by) in [
            (
                EVENTS_TABLE,
                format!(
                    "event_id String, tenant_id String, usage_type String, \
                     source String, occurred_at DateTime('UTC'), occurred_at_ms Int64, deployment_id String, \
                     model_provider String, model_name String, units String, tokens_in {D}, tokens_out {D}, \
                     gpu_seconds {D}, gpu_memory_gb_seconds {D}, energy_wh {D}, cost_amount {D}, \
                     cost_currency String, allocation_policy_id String, project String, agent_id String, run_id String, \
                     version UInt64"
                ),
                "tenant_id, event_id",
                "tenant_id",
            ),
            (
                SAMPLES,
                format!(
                    "gpu_uuid String, end_ms Int64, end_at DateTime('UTC'), \
                     node String, model String, namespace String, pod String, deployment_id String, owner String, \
                     window_ms Int64, utilization {D}, memory_used_gb {D}, power_w {D}, storage_gb {D}, \
                     gpu_fraction {D}, share String DEFAULT 'exclusive', version UInt64"
                ),
                "gpu_uuid, end_ms",
                "gpu_uuid",
            ),
            (ROLLUPS, ROLLUP_COLUMNS.to_string(), ROLLUP_ORDER, "gpu_uuid"),
            (
                "gpu_gaps",
                "gpu_uuid String, from_ms Int64, to_ms Int64, reason String, \
                 deployment_id String, node String, deleted UInt8, version UInt64"
                    .to_string(),
                "gpu_uuid, from_ms",
                "gpu_uuid",
            ),
            (
                GROUPS,
                format!(
                    "bucket_ms Int64, deployment_id String, owner String, model String, \
                     first_window_start_ms Int64, last_window_start_ms Int64, samples UInt64, \
                     estimated_samples UInt64, {q}, gpu_set String, deleted UInt8, version UInt64",
                    q = ROLLUP_QUANTITIES.map(|c| format!("{c} {D}")).join(", ")
                ),
                "bucket_ms, deployment_id, owner, model",
                "deployment_id",
            ),
            (
                "gpu_sets",
                "gpu_set String, gpus Array(String), version UInt64".to_string(),
                "gpu_set",
                "gpu_set",
            ),
            (
                CLAIMS,
                format!(
                    "bucket_ms Int64, deployment_id String, tenant_id String, gpu_seconds {D}, tokens {D}, \
                     events Int64, deleted UInt8, version UInt64"
                ),
                "bucket_ms, deployment_id, tenant_id",
                "deployment_id",
            ),
            (
                META,
                "key String, value String, version UInt64".to_string(),
                "key",
                "key",
            ),
        ] {
            for ddl in self.create_table(table, &columns, order, shard_by) {
                self.exec(&ddl).await?;
            }
        }
        self.exec(&format!(
            "CREATE VIEW IF NOT EXISTS {db}.gpu_samples_hourly{on} AS SELECT deployment_id, owner, model, \
             intDiv(end_ms, 3600000) * 3600000 AS hour_ms, count() AS samples, uniqExact(gpu_uuid) AS gpus, \
             sum(toDecimal128(window_ms, 0) * toDecimal128(gpu_fraction, 6)) / 1000 AS gpu_seconds, \
             sum(toDecimal128(window_ms, 0) * toDecimal128(power_w, 6)) / 1000 AS energy_ws \
             FROM {db}.gpu_samples FINAL GROUP BY deployment_id, owner, model, hour_ms"
        ))
        .await?;
        if self.cluster.is_some() {
            // The migrations below are of single-server replicas older binaries made; a cluster's tables
            // were created by this one.
            return self.mark_if_empty(new_groups).await;
        }
        // Replicas of older binaries: tables whose quantities are text (before `Decimal128`), rollups without
        // their placement or share method, samples without their share method, usage events keyed by
        // `event_id` alone. Each such table was renamed aside above; its rows are copied into the table just
        // created, converted, then it is dropped.
        for (aside, table) in [
            (format!("{ROLLUPS}{TEXT_SUFFIX}"), ROLLUPS),
            (format!("{SAMPLES}{TEXT_SUFFIX}"), SAMPLES),
            (format!("{EVENTS_TABLE}{TEXT_SUFFIX}"), EVENTS_TABLE),
            ("usage_events".to_string(), EVENTS_TABLE),
        ] {
            if self.columns(&aside).await?.is_empty() {
                continue;
            }
            self.copy_converted(&aside, table).await?;
            self.exec(&format!("DROP TABLE {db}.{aside}")).await?;
        }
        self.mark_if_empty(new_groups).await
    }

    /// Marks the group tables complete ([`Self::mark_groups_complete`]) when `migrate` just created them
    /// (`new_groups`) on a replica with no rollup and no usage event: the outbox fills them from the first
    /// row on. A replica that holds rows already gets its group rows from `eai-gpu replica backfill`
    /// ([`super::backfill`]), which marks them then.
    async fn mark_if_empty(&self, new_groups: bool) -> Result<()> {
        if !new_groups {
            return Ok(());
        }
        let db = &self.database;
        let held = self
            .select_tsv(&format!(
                "SELECT (SELECT count() FROM {db}.{ROLLUPS}) + (SELECT count() FROM {db}.{EVENTS_TABLE})"
            ))
            .await?;
        if held.first().and_then(|r| r.first()).map(String::as_str) == Some("0") {
            self.mark_groups_complete().await?;
        }
        Ok(())
    }

    /// Whether `gpu_groups`, `gpu_sets` and `usage_claims` hold every row of the primary's (the marker
    /// [`GROUPS_COMPLETE`] in `replica_meta`): the reads use them only then.
    pub async fn groups_complete(&self) -> Result<bool> {
        let rows = self
            .select_tsv(&format!(
                "SELECT value FROM {}.{META} FINAL WHERE key = '{GROUPS_COMPLETE}'",
                self.database
            ))
            .await?;
        Ok(rows.iter().any(|r| r.first().is_some_and(|v| v == "1")))
    }

    /// Records that `gpu_groups`, `gpu_sets` and `usage_claims` hold every row of the primary's (a backfill
    /// that copied them all, or a replica that the outbox fills from its first row).
    pub async fn mark_groups_complete(&self) -> Result<()> {
        self.exec(&format!(
            "INSERT INTO {}.{META} (key, value, version) VALUES ('{GROUPS_COMPLETE}', '1', 1)",
            self.database
        ))
        .await
    }

    /// ` ON CLUSTER name` on a cluster (`EAI_CLICKHOUSE_CLUSTER`), else nothing.
    fn on_cluster(&self) -> String {
        self.cluster
            .as_deref()
            .map_or_else(String::new, |c| format!(" ON CLUSTER {c}"))
    }

    /// The statements that create a replica table (idempotent) with `columns`, identified by `order` (the
    /// `ReplacingMergeTree`'s sorting key, `version` its version column):
    /// - on one server, the table itself;
    /// - on a cluster, on every server, `<table>_local`, a `ReplicatedReplacingMergeTree` replicated among the
    ///   replicas of its shard through ZooKeeper (path `/clickhouse/tables/{shard}/<db>/<table>`, replica
    ///   `{replica}`: each server's macros), and under the table's own name a `Distributed` table over them,
    ///   sharded by `cityHash64(shard_by)`. `shard_by` is the leading column(s) of the row's identity, so every
    ///   version of a row lands on the same shard and `FINAL` (per shard) keeps the last one. Reads and inserts
    ///   use the table's name and work unchanged.
    fn create_table(&self, table: &str, columns: &str, order: &str, shard_by: &str) -> Vec<String> {
        let db = &self.database;
        match self.cluster.as_deref() {
            None => vec![format!(
                "CREATE TABLE IF NOT EXISTS {db}.{table} ({columns}) \
                 ENGINE = ReplacingMergeTree(version) ORDER BY ({order})"
            )],
            Some(c) => vec![
                format!(
                    "CREATE TABLE IF NOT EXISTS {db}.{table}_local ON CLUSTER {c} ({columns}) \
                     ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{{shard}}/{db}/{table}', \
                     '{{replica}}', version) ORDER BY ({order})"
                ),
                format!(
                    "CREATE TABLE IF NOT EXISTS {db}.{table} ON CLUSTER {c} ({columns}) \
                     ENGINE = Distributed({c}, {db}, {table}_local, cityHash64({shard_by}))"
                ),
            ],
        }
    }

    /// The columns of a table of the replica's database, `(name, type)` in order (none: no such table).
    async fn columns(&self, table: &str) -> Result<Vec<(String, String)>> {
        let rows = self
            .select(&format!(
                "SELECT name, type FROM system.columns WHERE database = '{}' AND table = '{table}'",
                self.database
            ))
            .await?;
        rows.iter()
            .map(|r| Ok((text(r, "name")?.to_string(), text(r, "type")?.to_string())))
            .collect()
    }

    /// Renames `table` aside (to `{table}_text`) when its quantity `probe` is stored as text: the current
    /// table is then created anew and [`Self::copy_converted`] fills it. Not when the aside table exists
    /// already (a migration cut short: its rows are copied again, which `ReplacingMergeTree` makes harmless).
    async fn rename_text_layout(&self, table: &str, probe: &str) -> Result<()> {
        let db = &self.database;
        let aside = format!("{table}{TEXT_SUFFIX}");
        let text_layout = self
            .columns(table)
            .await?
            .iter()
            .any(|(n, t)| n == probe && t == "String");
        if text_layout && self.columns(&aside).await?.is_empty() {
            self.exec(&format!("RENAME TABLE {db}.{table} TO {db}.{aside}"))
                .await?;
        }
        Ok(())
    }

    /// Copies every row of `from` (a layout of older binaries) into `to` (the current one), versions kept:
    /// text quantities become `Decimal128` (exactly: a text ClickHouse cannot read as one fails the copy;
    /// '', an absent unit or cost, is 0), columns `from` lacks take what older binaries meant by their absence
    /// ('' for text, which reads as no placement and the `exclusive` share of a rollup, and 0 for numbers;
    /// a sample's share `exclusive`).
    async fn copy_converted(&self, from: &str, to: &str) -> Result<()> {
        let db = &self.database;
        let source: BTreeMap<String, String> = self.columns(from).await?.into_iter().collect();
        let target = self.columns(to).await?;
        let mut names = Vec::with_capacity(target.len());
        let mut exprs = Vec::with_capacity(target.len());
        for (name, ty) in &target {
            let expr = match source.get(name) {
                Some(src) if ty.starts_with("Decimal") && src == "String" => {
                    format!("toDecimal128(if({name} = '', '0', {name}), {DECIMAL_SCALE})")
                }
                Some(_) => name.clone(),
                None if to == SAMPLES && name == "share" => "'exclusive'".to_string(),
                None if ty == "String" => "''".to_string(),
                None => "0".to_string(),
            };
            names.push(name.as_str());
            exprs.push(format!("{expr} AS {name}"));
        }
        self.exec(&format!(
            "INSERT INTO {db}.{to} ({}) SELECT {} FROM {db}.{from}",
            names.join(", "),
            exprs.join(", ")
        ))
        .await
    }
}

/// The suffix of a table renamed aside by [`ClickHouse::migrate`] while its rows are converted.
const TEXT_SUFFIX: &str = "_text";
const ROLLUPS: &str = "gpu_rollups";

const SAMPLES: &str = "gpu_samples";

/// The type of every quantity (rollups, samples, usage events): `Decimal128` at [`DECIMAL_SCALE`] places,
/// which holds each exactly (rollups have 15 places, samples at most 10, units 6, prices 10).
const D: &str = "Decimal128(15)";

/// The columns of `gpu_rollups` (`placed` 0: a rollup of no placement, written before they were kept).
const ROLLUP_COLUMNS: &str = "bucket_ms Int64, gpu_uuid String, deployment_id String, owner String, model String, \
     placed UInt8, namespace String, pod String, node String, share String, \
     first_window_start_ms Int64, last_window_start_ms Int64, samples UInt64, estimated_samples UInt64, \
     gpu_seconds Decimal128(15), busy_gpu_seconds Decimal128(15), estimated_gpu_seconds Decimal128(15), \
     memory_gb_seconds Decimal128(15), energy_ws Decimal128(15), storage_gb_seconds Decimal128(15), deleted UInt8, \
     version UInt64";
/// The replica identity of a rollup row: its key, placement included.
const ROLLUP_ORDER: &str =
    "bucket_ms, gpu_uuid, deployment_id, owner, model, placed, namespace, pod, node, share";
