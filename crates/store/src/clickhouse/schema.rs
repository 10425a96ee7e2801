//! The replica's DDL: the tables and the view that [`ClickHouse::migrate`] creates, and the migrations of
//! replicas that older binaries created (rollups without their placement or share method, usage events keyed by
//! `event_id` alone). Only SQL that ClickHouse 18.16 accepts too (see the module above).

use super::reads::int;
use super::{ClickHouse, Result, EVENTS_TABLE};

impl ClickHouse {
    /// Creates the database and tables if missing (idempotent).
    pub async fn migrate(&self) -> Result<()> {
        let db = &self.database;
        let on = self.on_cluster();
        self.exec(&format!("CREATE DATABASE IF NOT EXISTS {db}{on}"))
            .await?;
        for (table, columns, order, shard_by) in [
            (
                EVENTS_TABLE,
                "event_id String, tenant_id String, usage_type String, \
                 source String, occurred_at DateTime('UTC'), occurred_at_ms Int64, deployment_id String, \
                 model_provider String, model_name String, units String, tokens_in String, tokens_out String, \
                 gpu_seconds String, gpu_memory_gb_seconds String, energy_wh String, cost_amount String, \
                 cost_currency String, allocation_policy_id String, project String, agent_id String, run_id String, \
                 version UInt64",
                "tenant_id, event_id",
                "tenant_id",
            ),
            (
                "gpu_samples",
                "gpu_uuid String, end_ms Int64, end_at DateTime('UTC'), \
                 node String, model String, namespace String, pod String, deployment_id String, owner String, \
                 window_ms Int64, utilization String, memory_used_gb String, power_w String, storage_gb String, \
                 gpu_fraction String, share String DEFAULT 'exclusive', version UInt64",
                "gpu_uuid, end_ms",
                "gpu_uuid",
            ),
            ("gpu_rollups", ROLLUP_COLUMNS, ROLLUP_ORDER, "gpu_uuid"),
            (
                "gpu_gaps",
                "gpu_uuid String, from_ms Int64, to_ms Int64, reason String, \
                 deployment_id String, node String, deleted UInt8, version UInt64",
                "gpu_uuid, from_ms",
                "gpu_uuid",
            ),
        ] {
            for ddl in self.create_table(table, columns, order, shard_by) {
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
            return Ok(());
        }
        // Rollups without their placement (older binaries): the rows move to the table keyed by it too, as rows
        // of no placement.
        let placed = self
            .select(&format!(
                "SELECT count() AS n FROM system.columns WHERE database = '{db}' AND table = 'gpu_rollups' \
                 AND name = 'placed'"
            ))
            .await?;
        if placed
            .first()
            .is_some_and(|r| int(r, "n").unwrap_or(0) == 0)
        {
            for ddl in self.create_table("gpu_rollups_v2", ROLLUP_COLUMNS, ROLLUP_ORDER, "gpu_uuid")
            {
                self.exec(&ddl).await?;
            }
            self.exec(&format!(
                "INSERT INTO {db}.gpu_rollups_v2 SELECT bucket_ms, gpu_uuid, deployment_id, owner, model, \
                 0 AS placed, '' AS namespace, '' AS pod, '' AS node, '' AS share, first_window_start_ms, \
                 last_window_start_ms, \
                 samples, estimated_samples, gpu_seconds, busy_gpu_seconds, estimated_gpu_seconds, \
                 memory_gb_seconds, energy_ws, storage_gb_seconds, deleted, version FROM {db}.gpu_rollups"
            ))
            .await?;
            self.exec(&format!("DROP TABLE {db}.gpu_rollups")).await?;
            self.exec(&format!(
                "RENAME TABLE {db}.gpu_rollups_v2 TO {db}.gpu_rollups"
            ))
            .await?;
        }
        // Rollups and samples without their share method (older binaries): the rows written before are
        // `exclusive`, and the method joins the rollups' identity (a column added with the sorting key, which
        // may have no default expression: the rows before read '', taken as `exclusive`).
        for (table, alter) in [
            (
                "gpu_rollups",
                format!(
                    "ALTER TABLE {db}.gpu_rollups ADD COLUMN share String AFTER node, \
                     MODIFY ORDER BY ({ROLLUP_ORDER})"
                ),
            ),
            (
                "gpu_samples",
                format!(
                    "ALTER TABLE {db}.gpu_samples ADD COLUMN share String DEFAULT 'exclusive' AFTER gpu_fraction"
                ),
            ),
        ] {
            let has = self
                .select(&format!(
                    "SELECT count() AS n FROM system.columns WHERE database = '{db}' AND table = '{table}' \
                     AND name = 'share'"
                ))
                .await?;
            if has.first().is_some_and(|r| int(r, "n").unwrap_or(0) == 0) {
                self.exec(&alter).await?;
            }
        }
        // A replica keyed by event_id alone (older binaries): its rows move to the table keyed by tenant too.
        let old = self
            .select(&format!(
                "SELECT count() AS n FROM system.tables WHERE database = '{db}' AND name = 'usage_events'"
            ))
            .await?;
        if old.first().is_some_and(|r| int(r, "n").unwrap_or(0) > 0) {
            self.exec(&format!(
                "INSERT INTO {db}.{EVENTS_TABLE} SELECT * FROM {db}.usage_events"
            ))
            .await?;
            self.exec(&format!("DROP TABLE {db}.usage_events")).await?;
        }
        Ok(())
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
}

/// The columns of `gpu_rollups` (`placed` 0: a rollup of no placement, written before they were kept).
const ROLLUP_COLUMNS: &str = "bucket_ms Int64, gpu_uuid String, deployment_id String, owner String, model String, \
     placed UInt8, namespace String, pod String, node String, share String, \
     first_window_start_ms Int64, last_window_start_ms Int64, samples UInt64, estimated_samples UInt64, gpu_seconds String, \
     busy_gpu_seconds String, estimated_gpu_seconds String, memory_gb_seconds String, energy_ws String, \
     storage_gb_seconds String, deleted UInt8, version UInt64";
/// The replica identity of a rollup row: its key, placement included.
const ROLLUP_ORDER: &str =
    "bucket_ms, gpu_uuid, deployment_id, owner, model, placed, namespace, pod, node, share";
