//! The ClickHouse replica on a real cluster (`eai_store::clickhouse::scratch::ScratchCluster`: Apache
//! ZooKeeper and two shards of two `clickhouse-server` replicas, started by each test; a missing server or
//! ZooKeeper fails the test, it never skips), with `EAI_CLICKHOUSE_CLUSTER` set: the tables are replicated
//! local tables behind `Distributed` ones. Replication converges (each replica's local tables hold the
//! primary's rows, FINAL), the allocation from the cluster equals the primary's to the cent, a backfill into
//! the cluster then equals too, and a replica killed during ingest (or the server the product's URL names)
//! loses nothing and doubles nothing.

use eai_app::allocation::{compute, compute_from, Source};
use eai_engine::allocate::AllocationConfig;
use eai_store::clickhouse::scratch::{ScratchCluster, CLUSTER, REPLICAS, SHARDS};
use eai_store::clickhouse::ClickHouse;
use eai_store::Scope;
use rust_decimal::Decimal;

use super::clickhouse::{
    allocation_equals_the_primary, backfilled_and_the_outbox_wins, metric, period, replicated_at,
    scalar, wait_for_metrics, Replicated,
};
use super::*;
#[allow(unused_imports)]
use super::{Backend, BACKEND};

/// One cluster at a time (five servers and a JVM each; the tests of the binary run in parallel).
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

async fn cluster() -> ScratchCluster {
    ScratchCluster::start()
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

/// What one server's local table holds, FINAL: the number of rows, a checksum of their contents, and an exact
/// sum of one quantity (as text).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Held {
    rows: u64,
    checksum: String,
    sum: Decimal,
}

/// Each replica table: its name, the columns of its checksum, the quantity summed, and which rows count.
const TABLES: [(&str, &str, &str, &str); 4] = [
    (
        "gpu_samples",
        "gpu_uuid, toString(end_ms), toString(power_w), toString(gpu_fraction), toString(version)",
        "toDecimal128(toString(power_w), 6)",
        "1",
    ),
    (
        "gpu_rollups",
        "gpu_uuid, toString(bucket_ms), deployment_id, owner, toString(samples), toString(gpu_seconds)",
        "toDecimal128(toString(gpu_seconds), 9)",
        "deleted = 0",
    ),
    (
        "gpu_gaps",
        "gpu_uuid, toString(from_ms), toString(to_ms), reason",
        "toDecimal128(to_ms - from_ms, 0)",
        "deleted = 0",
    ),
    (
        "usage_events_by_tenant",
        "event_id, tenant_id, deployment_id, toString(tokens_in), toString(cost_amount)",
        "toDecimal128(length(event_id), 0)",
        "1",
    ),
];

fn int(v: &Value) -> u64 {
    v.as_str()
        .and_then(|s| s.parse().ok())
        .or_else(|| v.as_u64())
        .unwrap_or_else(|| panic!("not a count: {v}"))
}

fn decimal(v: &Value) -> Decimal {
    let s = v.as_str().map_or_else(|| v.to_string(), str::to_string);
    s.parse()
        .unwrap_or_else(|e| panic!("not a decimal: {s}: {e}"))
}

/// What each replica table holds on one server (its `_local` table, FINAL), or why it cannot be read.
async fn held(server: &ClickHouse) -> Result<Vec<Held>, String> {
    let db = server.database();
    let mut out = Vec::new();
    for (table, columns, quantity, counted) in TABLES {
        let rows = server
            .select(&format!(
                "SELECT count() AS n, toString(sum(cityHash64({columns}))) AS h, toString(sum({quantity})) AS s \
                 FROM {db}.{table}_local FINAL WHERE {counted}"
            ))
            .await
            .map_err(|e| e.to_string())?;
        let r = rows.first().ok_or("no row")?;
        out.push(Held {
            rows: int(&r["n"]),
            checksum: r["h"].as_str().unwrap_or_default().to_string(),
            sum: decimal(&r["s"]),
        });
    }
    Ok(out)
}

/// Waits (two minutes at most) until both replicas of every shard hold the same rows; returns what each shard
/// holds.
async fn converged(cluster: &ScratchCluster) -> Vec<Vec<Held>> {
    let servers: Vec<ClickHouse> = cluster
        .servers()
        .iter()
        .map(|s| ClickHouse::from_url(&s.url("eai")).expect("url"))
        .collect();
    let mut last = String::new();
    for _ in 0..240 {
        let mut shards = Vec::new();
        for shard in 0..SHARDS {
            let mut replicas = Vec::new();
            for replica in 0..REPLICAS {
                replicas.push(held(&servers[shard * REPLICAS + replica]).await);
            }
            match &replicas[..] {
                [Ok(a), Ok(b)] if a == b => shards.push(a.clone()),
                other => last = format!("shard {}: {other:?}", shard + 1),
            }
        }
        if shards.len() == SHARDS {
            return shards;
        }
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
    panic!("the replicas did not converge in two minutes: {last}");
}

/// The shards together hold the primary's rows (what `store.replica_rows` gives for the replica), each once.
async fn shards_hold_the_primary(r: &Replicated, shards: &[Vec<Held>]) {
    let (from, to) = r
        .store
        .replica_extent()
        .await
        .expect("extent")
        .expect("rows");
    let primary = r.store.replica_rows(from, to).await.expect("rows");
    let events = r
        .store
        .usage_events(Scope::Platform, Timestamp(0), Timestamp(i64::MAX / 2))
        .await
        .expect("events");
    let total = |i: usize| -> (u64, Decimal) {
        shards.iter().fold((0, Decimal::ZERO), |(n, s), shard| {
            (n + shard[i].rows, s + shard[i].sum)
        })
    };
    let power: Decimal = primary.samples.iter().map(|s| s.power_w.get()).sum();
    assert_eq!(total(0), (primary.samples.len() as u64, power), "samples");
    let gpu_seconds: Decimal = primary.rollups.iter().map(|r| r.q.gpu_seconds).sum();
    assert_eq!(
        total(1),
        (primary.rollups.len() as u64, gpu_seconds),
        "rollups"
    );
    assert_eq!(total(2).0, primary.gaps.len() as u64, "gaps");
    assert_eq!(total(3).0, events.len() as u64, "usage events");
}

/// The allocation from the cluster read through another server (replica 2 of shard 2) equals the primary's.
async fn another_server_allocates_the_same(r: &Replicated, cluster: &ScratchCluster) {
    let other = ClickHouse::from_url(&cluster.servers()[SHARDS * REPLICAS - 1].url("eai"))
        .and_then(|c| c.with_cluster(Some(CLUSTER)))
        .expect("url");
    let config = AllocationConfig::default();
    let primary = compute(r.store.as_ref(), period(), config)
        .await
        .expect("primary");
    let replica = compute_from(
        &Source::ClickHouse(other),
        r.store.as_ref(),
        period(),
        config,
    )
    .await
    .expect("replica");
    assert_eq!(primary, replica);
}

async fn replication_converges_and_the_allocation_from_the_cluster_equals_the_primary() {
    let _one = ONE_AT_A_TIME.lock().await;
    let cluster = cluster().await;
    let r = replicated_at(&cluster.url("eai"), Some(CLUSTER)).await;
    // The tables: replicated local tables on every server, Distributed ones under the tables' names.
    let engines = r
        .ch
        .select(
            "SELECT name, engine FROM system.tables WHERE database = 'eai' AND name LIKE 'gpu_samples%' \
             ORDER BY name",
        )
        .await
        .expect("tables");
    assert_eq!(
        engines
            .iter()
            .map(|t| format!(
                "{} {}",
                t["name"].as_str().unwrap_or_default(),
                t["engine"].as_str().unwrap_or_default()
            ))
            .collect::<Vec<_>>(),
        [
            "gpu_samples Distributed",
            "gpu_samples_hourly View",
            "gpu_samples_local ReplicatedReplacingMergeTree"
        ]
    );
    allocation_equals_the_primary(&r).await;
    let shards = converged(&cluster).await;
    shards_hold_the_primary(&r, &shards).await;
    another_server_allocates_the_same(&r, &cluster).await;
    // The view reads the Distributed table: every sample, from any server.
    let samples: u64 = shards.iter().map(|s| s[0].rows).sum();
    assert_eq!(
        scalar(
            &r.ch,
            "SELECT toString(sum(samples)) AS n FROM eai.gpu_samples_hourly"
        )
        .await,
        samples.to_string()
    );
}

async fn a_backfill_into_the_cluster_equals_the_primary() {
    let _one = ONE_AT_A_TIME.lock().await;
    let cluster = cluster().await;
    let r = replicated_at(&cluster.url("eai"), Some(CLUSTER)).await;
    backfilled_and_the_outbox_wins(&r).await;
    let shards = converged(&cluster).await;
    shards_hold_the_primary(&r, &shards).await;
    another_server_allocates_the_same(&r, &cluster).await;
}

on_both_backends!(
    replication_converges_and_the_allocation_from_the_cluster_equals_the_primary,
    a_backfill_into_the_cluster_equals_the_primary,
);

#[tokio::test]
async fn a_replica_killed_during_ingest_loses_nothing_and_doubles_nothing() {
    let _one = ONE_AT_A_TIME.lock().await;
    let mut cluster = cluster().await;
    let url = cluster.url("eai");
    let app = spawn_app_with(|c| {
        c.clickhouse_url = Some(url.clone().into());
        c.clickhouse_cluster = Some(CLUSTER.into());
    })
    .await;
    let ch = ClickHouse::from_url(&url)
        .and_then(|c| c.with_cluster(Some(CLUSTER)))
        .expect("url");
    let gpus: Vec<String> = (1..=6).map(|i| format!("GPU-CLUSTER-{i}")).collect();
    let hour = recent_hour();
    let mut ingested = 0;
    let mut ingest = |at: Timestamp, power: u32| {
        let batches: Vec<_> = gpus
            .iter()
            .map(|g| hour_of_samples(g, "vllm-a", at, power))
            .collect();
        ingested += 240 * gpus.len() as u64;
        (batches, ingested)
    };
    let delivered = |n: u64| {
        move |m: &str| {
            metric(m, "eai_replica_delivered_rows_total") >= n
                && metric(m, "eai_replica_outbox_pending") == 0
        }
    };

    let (batches, n) = ingest(Timestamp(hour.0 - 2 * HOUR_MS), 400);
    for b in batches {
        app.ingest(b).await;
    }
    wait_for_metrics(&app, "the first hour replicated", delivered(n)).await;

    // Replica 1 of shard 2 (the one inserts go to first) dies; ingest goes on, into replica 2.
    cluster.kill(1, 0);
    let (batches, n) = ingest(Timestamp(hour.0 - HOUR_MS), 410);
    for b in batches {
        app.ingest(b).await;
    }
    wait_for_metrics(
        &app,
        "the second hour replicated with a replica down",
        delivered(n),
    )
    .await;
    cluster
        .restart(1, 0)
        .await
        .unwrap_or_else(|e| panic!("{e}"));

    // The server the product's URL names dies: the outbox keeps the rows and delivers them after its restart.
    cluster.kill(0, 0);
    let (batches, n) = ingest(hour, 420);
    for b in batches {
        app.ingest(b).await;
    }
    wait_for_metrics(&app, "failures while the URL's server is down", |m| {
        metric(m, "eai_replica_failures_total") > 0 && metric(m, "eai_replica_outbox_pending") > 0
    })
    .await;
    cluster
        .restart(0, 0)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    wait_for_metrics(&app, "the outbox drained after the restart", delivered(n)).await;

    // Every replica caught up: both replicas of each shard hold the same rows, each sample once.
    let shards = converged(&cluster).await;
    assert!(
        shards.iter().all(|s| s[0].rows > 0),
        "both shards hold samples: {shards:?}"
    );
    let samples: u64 = shards.iter().map(|s| s[0].rows).sum();
    let power: Decimal = shards.iter().map(|s| s[0].sum).sum();
    assert_eq!(samples, n, "nothing lost or doubled on the replicas");
    assert_eq!(power, Decimal::from(240 * 6 * (400 + 410 + 420)));
    assert_eq!(
        scalar(&ch, "SELECT count() AS n FROM eai.gpu_samples FINAL").await,
        n.to_string(),
        "the Distributed table reads each sample once"
    );
    assert_eq!(
        scalar(
            &ch,
            "SELECT uniqExact(gpu_uuid, end_ms) AS n FROM eai.gpu_samples FINAL"
        )
        .await,
        n.to_string()
    );
    let store = app.second_store().await;
    let (from, to) = (Timestamp(hour.0 - 2 * HOUR_MS), Timestamp(hour.0 + HOUR_MS));
    let mut primary = store
        .allocation_usage(from, to, &[])
        .await
        .expect("primary")
        .rollups;
    eai_store::rollups::sort_for_read(&mut primary);
    let grouped = ch.group_rollups(from, to).await.expect("replica groups");
    assert_eq!(grouped, primary, "the cluster's groups are the primary's");
    app.stop().await;
}
