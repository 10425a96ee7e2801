//! A scratch ClickHouse cluster for a developer (what `scripts/ch-cluster.sh start` runs): ZooKeeper and two
//! shards of two replicas on 127.0.0.1, the same config as the tests' ([`ScratchCluster`]), until SIGTERM or
//! Ctrl-C, which kill every process and remove the data folder.
//!
//! Prints the servers' URLs and the lines to export: `EAI_CLICKHOUSE_URL` (replica 1 of shard 1, database
//! `eai`) and `EAI_CLICKHOUSE_CLUSTER`.
//!
//! Run: `cargo run -p eai-store --example ch_cluster` (needs `scripts/zookeeper.sh fetch` and clickhouse-server).

use eai_store::clickhouse::scratch::{ScratchCluster, REPLICAS};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    // A signal while the cluster starts stops it too (what was started is killed as the start is dropped).
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let cluster = tokio::select! {
        c = ScratchCluster::start() => c.map_err(|e| anyhow::anyhow!(e))?,
        _ = tokio::signal::ctrl_c() => return Ok(()),
        _ = term.recv() => return Ok(()),
    };
    println!("zookeeper 127.0.0.1:{}", cluster.zookeeper_port());
    for (i, s) in cluster.servers().iter().enumerate() {
        println!(
            "shard {} replica {}: {}",
            i / REPLICAS + 1,
            i % REPLICAS + 1,
            s.url("eai")
        );
    }
    println!("export EAI_CLICKHOUSE_URL={}", cluster.url("eai"));
    println!("export EAI_CLICKHOUSE_CLUSTER={}", cluster.name());
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    drop(cluster);
    Ok(())
}
