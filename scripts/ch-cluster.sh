#!/usr/bin/env bash
# A ClickHouse cluster on this machine for a developer: Apache ZooKeeper and two shards of two clickhouse-server
# replicas on 127.0.0.1 (free ports, data in a temporary folder), the same config as the tests' (it runs the
# example `ch_cluster` of eai-store, which starts eai_store::clickhouse::scratch::ScratchCluster).
#
#   scripts/ch-cluster.sh start    # prints the servers' URLs and the EAI_CLICKHOUSE_URL / EAI_CLICKHOUSE_CLUSTER to export
#   scripts/ch-cluster.sh status
#   scripts/ch-cluster.sh stop     # kills every server and ZooKeeper, removes the data
#
# Needs clickhouse-server (Debian's package, or EAI_TEST_CLICKHOUSE_SERVER) and Java 17; ZooKeeper's jars are
# fetched by scripts/zookeeper.sh.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
STATE="$TARGET/ch-cluster"
PID="$STATE/pid"
LOG="$STATE/log"

running() { [[ -f "$PID" ]] && kill -0 "$(cat "$PID")" 2>/dev/null; }

start() {
  if running; then
    echo "already running (pid $(cat "$PID")):"
    cat "$LOG"
    return
  fi
  mkdir -p "$STATE"
  "$ROOT/scripts/zookeeper.sh" fetch
  (cd "$ROOT" && cargo build -q -p eai-store --example ch_cluster)
  nohup "$TARGET/debug/examples/ch_cluster" >"$LOG" 2>&1 </dev/null &
  echo $! >"$PID"
  for _ in $(seq 1 600); do
    if grep -q '^export EAI_CLICKHOUSE_CLUSTER=' "$LOG"; then
      cat "$LOG"
      return
    fi
    if ! running; then
      echo "the cluster did not start:" >&2
      cat "$LOG" >&2
      rm -f "$PID"
      exit 1
    fi
    sleep 0.5
  done
  echo "the cluster did not start in 5 minutes; see $LOG" >&2
  exit 1
}

stop() {
  if ! running; then
    echo "not running"
    rm -f "$PID"
    return
  fi
  local pid
  pid="$(cat "$PID")"
  # SIGTERM: the example drops the cluster (kills the servers and ZooKeeper, removes their folder).
  kill -TERM "$pid"
  for _ in $(seq 1 100); do
    kill -0 "$pid" 2>/dev/null || { rm -f "$PID"; echo "stopped"; return; }
    sleep 0.2
  done
  echo "pid $pid did not stop in 20 s" >&2
  exit 1
}

status() {
  if running; then
    echo "running (pid $(cat "$PID")):"
    cat "$LOG"
  else
    echo "not running"
  fi
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
