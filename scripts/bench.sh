#!/usr/bin/env bash
# The performance suite: builds release binaries, starts throwaway servers on SQLite and PostgreSQL, drives
# them with `eai-gpu bench`, measures references in the same run, and prints one table.
#
#   scripts/bench.sh            # the whole suite (the mixed load runs 10 minutes)
#   QUICK=1 scripts/bench.sh    # smaller figures and a 60 s mixed load, for a smoke run
#   BACKENDS=sqlite scripts/bench.sh
#   PG_MIXED_SECONDS=120 BIG_BACKENDS=sqlite scripts/bench.sh   # what BENCHMARKS.md used
#   ONLY=big BIG_BACKENDS=sqlite scripts/bench.sh   # one part: engine, ingest, alloc, mixed, big, chmonth, chcluster, late, sampler, gateway, replay
#   ONLY=replay scripts/bench.sh    # samples between stored neighbours: a spool replayed newest first into a hole, shuffled windows, beside in order (~3 min)
#   ONLY=chmonth scripts/bench.sh   # a month of the big fleet from a single ClickHouse, filled directly (~3 min)
#   ONLY=gateway scripts/bench.sh   # reserve + commit from one gateway key, 64 callers, on $BACKENDS (~1 min)
#   ONLY=chcluster scripts/bench.sh # the same month from a ClickHouse cluster (ZooKeeper, 2 shards x 2 replicas; ~5 min)
#
# The big fleet (10,000 GPUs, 500 deployments, 100 tenants, a month of hourly windows) is loaded on each of
# $BIG_BACKENDS, allocated over 1, 7 and 30 days, then copied into a throwaway ClickHouse with
# `eai-gpu replica backfill` (its rate) and allocated from there (EAI_ALLOCATION_SOURCE=clickhouse).
# A month of it is also measured with the settled splits kept (the default) and without (EAI_SPLIT_CACHE_BUCKETS=0,
# the reference), alternated (kept, not kept, kept), each after a restart: the first request is the cold one.
# Loading it over HTTP takes ~16 min per store; a store loaded already is served instead (a copy of it) with
#   BIG_SQLITE=/path/eai-gpu.db  (SQLite file)   BIG_PG_TEMPLATE=dbname  (a database on $EAI_TEST_POSTGRES_URL's
#   server, copied with CREATE DATABASE … TEMPLATE)   BIG_END=2026-12-05T23:00:00Z  (the end of its month)
set -euo pipefail
cd "$(dirname "$0")/.."

QUICK=${QUICK:-0}
BACKENDS=${BACKENDS:-"sqlite postgres"}
PG_URL=${EAI_TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/postgres}
if [ "$QUICK" = 1 ]; then INGEST=400000; MIXED_S=60; BIG=2000; else INGEST=2000000; MIXED_S=600; BIG=10000; fi
ONLY=${ONLY:-}
part() { [ -z "$ONLY" ] || [[ " $ONLY " == *" $1 "* ]]; }
MIXED_S=${MIXED_SECONDS:-$MIXED_S}
# PostgreSQL loads history at a few thousand samples/s: its mixed run and the big fleet are opt-in.
PG_MIXED_S=${PG_MIXED_SECONDS:-$MIXED_S}
BIG_BACKENDS=${BIG_BACKENDS:-"sqlite postgres"}

# The load generator is the cargo feature `bench` (not in the shipped binary).
cargo build --release -q -p eai-gpu --features bench
bin="${CARGO_TARGET_DIR:-target}/release/eai-gpu"
work=$(mktemp -d)
results="$work/results"
: > "$results"
server=""
ch_pid=""
cleanup() {
  [ -n "$server" ] && kill "$server" 2>/dev/null
  [ -n "$ch_pid" ] && kill "$ch_pid" 2>/dev/null && wait "$ch_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
key="eai_live_$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')"

# start BACKEND NAME [keep]: a server on a fresh database (on NAME's database as it is, with keep); sets $url,
# $db and $server. $CACHE_ROWS, when set, is the server's EAI_READ_CACHE_ROWS; $SPLIT_BUCKETS its
# EAI_SPLIT_CACHE_BUCKETS; $CH_URL its EAI_CLICKHOUSE_URL,
# $ALLOC_SOURCE its EAI_ALLOCATION_SOURCE, $RATE_LIMIT its EAI_RATE_LIMIT_PER_KEY.
start() {
  local backend=$1 name=$2 keep=${3:-} port
  port=$(free_port)
  mkdir -p "$work/$name"
  case $backend in
    sqlite) db="sqlite://$work/$name/eai-gpu.db" ;;
    postgres)
      db="${PG_URL%/*}/eai_bench_$name"
      [ -n "$keep" ] || psql -q "$PG_URL" -c "DROP DATABASE IF EXISTS eai_bench_$name" -c "CREATE DATABASE eai_bench_$name" ;;
  esac
  # The mixed load posts the windows of the next two days (fresh hours on every run): the server must take
  # samples that far ahead of its clock (EAI_MAX_CLOCK_SKEW_SECONDS, 300 by default, refuses them).
  env EAI_READ_CACHE_ROWS="${CACHE_ROWS:-500000}" ${CH_URL:+EAI_CLICKHOUSE_URL=$CH_URL} \
    ${SPLIT_BUCKETS:+EAI_SPLIT_CACHE_BUCKETS=$SPLIT_BUCKETS} \
    ${ALLOC_SOURCE:+EAI_ALLOCATION_SOURCE=$ALLOC_SOURCE} ${RATE_LIMIT:+EAI_RATE_LIMIT_PER_KEY=$RATE_LIMIT} \
    EAI_BOOTSTRAP_ADMIN_KEY="$key" EAI_RAW_RETENTION_DAYS=0 EAI_MAX_CLOCK_SKEW_SECONDS=259200 RUST_LOG=warn \
    "$bin" serve --listen "127.0.0.1:$port" --data-dir "$work/$name" --database-url "$db" > "$work/$name/server.log" 2>&1 &
  server=$!
  url="http://127.0.0.1:$port"
  for _ in $(seq 1 200); do curl -fsS "$url/healthz" >/dev/null 2>&1 && return 0; sleep 0.1; done
  cat "$work/$name/server.log"; exit 1
}
stop() { kill "$server"; wait "$server" 2>/dev/null || true; server=""; }

# A throwaway ClickHouse server (the tests' settings, a larger memory limit): sets $ch_url and $ch_pid.
start_clickhouse() {
  local dir="$work/clickhouse" http tcp
  mkdir -p "$dir"/data "$dir"/tmp "$dir"/user_files "$dir"/format_schemas
  http=$(free_port); tcp=$(free_port)
  cat > "$dir/config.xml" <<XML
<?xml version="1.0"?>
<yandex>
    <logger><level>warning</level><log>$dir/server.log</log><errorlog>$dir/error.log</errorlog><console>0</console></logger>
    <http_port>$http</http_port><tcp_port>$tcp</tcp_port><listen_host>127.0.0.1</listen_host>
    <path>$dir/data/</path><tmp_path>$dir/tmp/</tmp_path><user_files_path>$dir/user_files/</user_files_path>
    <format_schema_path>$dir/format_schemas/</format_schema_path><users_config>$dir/users.xml</users_config>
    <default_profile>default</default_profile><default_database>default</default_database>
    <mark_cache_size>268435456</mark_cache_size>
</yandex>
XML
  cat > "$dir/users.xml" <<XML
<?xml version="1.0"?>
<yandex>
    <profiles><default><max_memory_usage>8000000000</max_memory_usage></default></profiles>
    <users><default><password></password><networks><ip>127.0.0.1</ip></networks><profile>default</profile><quota>default</quota></default></users>
    <quotas><default><interval><duration>3600</duration><queries>0</queries><errors>0</errors><result_rows>0</result_rows><read_rows>0</read_rows><execution_time>0</execution_time></interval></default></quotas>
</yandex>
XML
  "${EAI_TEST_CLICKHOUSE_SERVER:-/usr/sbin/clickhouse-server}" --config-file="$dir/config.xml" > "$dir/stdout.log" 2>&1 &
  ch_pid=$!
  ch_url="http://127.0.0.1:$http/eai"
  for _ in $(seq 1 300); do curl -fsS "http://127.0.0.1:$http/ping" >/dev/null 2>&1 && return 0; sleep 0.1; done
  cat "$dir/stdout.log" "$dir/error.log" 2>/dev/null; exit 1
}
record() { sed "s/^/$1./" >> "$results"; }
# splits BACKEND NAME PREFIX DAYS RUNS [bench allocation flags]: the store of NAME served three times, each
# after a restart (the first request cold): settled splits kept, not kept (the reference), kept again; records
# PREFIX.split_kept1 / split_off / split_kept2, and the server's resident memory once the period is kept.
splits() {
  local backend=$1 name=$2 prefix=$3 days=$4 runs=$5 mode
  shift 5
  for mode in kept1 off kept2; do
    if [ "$mode" = off ]; then SPLIT_BUCKETS=0 start "$backend" "$name" keep; else start "$backend" "$name" keep; fi
    bench allocation --days "$days" --runs "$runs" "$@" | record "$prefix.split_$mode"
    echo "server_rss_mib=$(( $(awk '/^VmRSS/ {print $2}' "/proc/$server/status") / 1024 ))" | record "$prefix.split_$mode"
    stop
  done
}
bench() { EAI_API_KEY=$key "$bin" bench --url "$url" "$@"; }

if part engine; then
  echo "== engine (in process)"
  cargo bench -q -p eai-engine --bench allocate 2>/dev/null | tee "$work/engine.txt"
fi

for backend in $BACKENDS; do
  if part ingest; then
    echo "== $backend: ingest over HTTP"
    start "$backend" "ingest_$backend"
    bench ingest --samples "$INGEST" --batch 5000 --concurrency 4 --csv "$work/rows.csv" | record "$backend"
    stop
    # The same batches again into a fresh store, each with an Idempotency-Key as the SDKs send them: what
    # keeping (and sealing) the keys' answers costs, beside the run above.
    echo "== $backend: ingest over HTTP, an Idempotency-Key per batch"
    start "$backend" "ingest_keys_$backend"
    bench ingest --samples "$INGEST" --batch 5000 --concurrency 4 --idempotency-keys | record "$backend.keys"
    stop
    if [ "$backend" = sqlite ]; then
      f="$work/ingest_sqlite/eai-gpu.db"
      python3 scripts/bench_sqlite_reference.py "$f" "$work/rows.csv" | record sqlite
    else
      psql -q "$PG_URL" -v ON_ERROR_STOP=1 -c "DROP TABLE IF EXISTS eai_bench_copy" \
        -c "CREATE TABLE eai_bench_copy (gpu_uuid text, end_ms bigint, deployment_id text, utilization numeric, memory_used_gb numeric, power_w numeric, PRIMARY KEY (gpu_uuid, end_ms))"
      t0=$(date +%s.%N)
      psql -q "$PG_URL" -c "\\copy eai_bench_copy FROM '$work/rows.csv' WITH (FORMAT csv)"
      t1=$(date +%s.%N)
      rows=$(wc -l < "$work/rows.csv")
      python3 -c "print('reference_copy_rows_per_second=%.0f' % ($rows/($t1-$t0)))" | record postgres
      psql -q "$PG_URL" -c "DROP TABLE eai_bench_copy"
    fi
  fi

  if part alloc || part mixed; then
    echo "== $backend: allocation latency, 1,000 GPUs / 50 deployments / 20 tenants"
    start "$backend" "alloc_$backend"
    # Four streams of whole deployments (`--concurrency 4`); the suite's loads print their rate.
    bench load --gpus 1000 --days 30 --window-seconds 3600 --concurrency 4 | record "$backend.g1000"
    if part alloc; then
      for d in 1 7 30; do bench allocation --days "$d" --runs 20 | record "$backend.g1000.d$d"; done
      # SPEC §13's reads beside the allocation of the same month, and one round of the anomaly job on the store.
      bench advice --days 30 --runs 10 | record "$backend.g1000.advice"
      t0=$(date +%s.%N)
      "$bin" anomalies --check --data-dir "$work/alloc_$backend" --database-url "$db" --period "$(date -u +%Y-%m)" >/dev/null
      t1=$(date +%s.%N)
      python3 -c "print('anomaly_round_seconds=%.2f' % ($t1-$t0))" | record "$backend.g1000.advice"
      # The reference, side by side: the same database served without the read cache (every request decodes
      # every hour), then with it again for the mixed load.
      stop
      CACHE_ROWS=0 start "$backend" "alloc_$backend" keep
      for d in 1 30; do bench allocation --days "$d" --runs 10 | record "$backend.g1000.nocache.d$d"; done
      stop
      # The month with the settled splits kept and not (the reference), alternated, each cold then warm.
      splits "$backend" "alloc_$backend" "$backend.g1000.d30" 30 20
      start "$backend" "alloc_$backend" keep
    fi
    if part mixed; then
      secs=$MIXED_S; [ "$backend" = postgres ] && secs=$PG_MIXED_S
      echo "== $backend: mixed load (${secs}s at 6,700 samples/s, allocation every second)"
      bench mixed --gpus 1000 --rate 6700 --seconds "$secs" --server-pid "$server" \
        --end "$(date -u -d '+2 days' +%Y-%m-%dT%H:00:00Z)" | record "$backend"
    fi
    stop
  fi

  if part gateway; then
    # The server's default limits: a usage_reporter key has a rate of its own (EAI_RATE_LIMIT_PER_KEY_BY_ROLE,
    # 5,000 requests/s), so the run measures the store's path under the limits a gateway gets.
    if [ "$QUICK" = 1 ]; then gw_pairs=50; else gw_pairs=${GATEWAY_PAIRS:-200}; fi
    echo "== $backend: gateway path, reserve + commit from one usage_reporter key, 64 callers x $gw_pairs pairs"
    start "$backend" "gateway_$backend"
    timeout 300 "$bin" bench --url "$url" --key "$key" gateway --callers 64 --pairs "$gw_pairs" | tee "$work/gateway_$backend.txt" \
      | record "$backend.gateway"
    echo "== $backend: gateway path, the same 64 callers spread over 8 tenants (a key and a budget each)"
    timeout 300 "$bin" bench --url "$url" --key "$key" gateway --callers 64 --pairs "$gw_pairs" --tenants 8 \
      | tee "$work/gateway8_$backend.txt" | record "$backend.gateway8"
    stop
  fi

  if part replay; then
    # Issue 42, part 2: 2,000 GPUs, two holes of 30 minutes of 15 s windows left out of in-order history; one
    # replayed newest first (a sampler's spool after an outage), one in shuffled windows, 5-window batches, 4
    # streams, each beside the same number of samples appended in order (before and after them, same run).
    if [ "$QUICK" = 1 ]; then rp_gpus=500; rp_hole=40; else rp_gpus=2000; rp_hole=120; fi
    echo "== $backend: samples between stored neighbours, $rp_gpus GPUs, holes of $rp_hole windows, beside in order"
    start "$backend" "replay_$backend"
    bench replay --gpus "$rp_gpus" --hole-windows "$rp_hole" --batch-windows 5 --concurrency 4 | tee "$work/replay_$backend.txt" \
      | record "$backend.replay"
    stop
  fi

  case " $BIG_BACKENDS " in *" $backend "*) ;; *) continue ;; esac
  part big || continue
  big_deps=$((BIG / 20)); big_tenants=$((BIG / 100))
  echo "== $backend: $BIG GPUs / $big_deps deployments / $big_tenants tenants, a month of hourly windows"
  end_flags=(${BIG_END:+--end "$BIG_END"})
  fixture=""
  [ "$backend" = sqlite ] && fixture=${BIG_SQLITE:-}
  [ "$backend" = postgres ] && fixture=${BIG_PG_TEMPLATE:-}
  if [ -n "$fixture" ]; then
    # A store loaded already, copied: the bench's key is added to it.
    mkdir -p "$work/big_$backend"
    if [ "$backend" = sqlite ]; then
      cp "$fixture" "$work/big_$backend/eai-gpu.db"; db="sqlite://$work/big_$backend/eai-gpu.db"
    else
      db="${PG_URL%/*}/eai_bench_big_$backend"
      psql -q "$PG_URL" -c "DROP DATABASE IF EXISTS eai_bench_big_$backend" \
        -c "CREATE DATABASE eai_bench_big_$backend TEMPLATE $fixture"
    fi
    key=$("$bin" keys create --role platform_admin --data-dir "$work/big_$backend" --database-url "$db" | grep -o 'eai_live_[0-9a-z_]*' | head -1)
  else
    start "$backend" "big_$backend"
    bench load --gpus "$BIG" --deployments "$big_deps" --tenants "$big_tenants" --days 30 --window-seconds 3600 \
      --concurrency 4 | record "$backend.g$BIG"
    stop
  fi
  # A month, 1,500,000 read-cache rows (it fits), settled splits kept and not: cold and warm.
  CACHE_ROWS=$((BIG * 150)) splits "$backend" "big_$backend" "$backend.g$BIG.d30" 30 10 "${end_flags[@]}"
  [ -n "$fixture" ] && [ -n "${BIG_ONLY_SPLITS:-}" ] && continue
  start "$backend" "big_$backend" keep
  for d in 1 7 30; do bench allocation --days "$d" --runs 5 "${end_flags[@]}" | record "$backend.g$BIG.d$d"; done
  stop
  # The same month with the read cache sized to it (a month is ~120 group and claim rows per GPU), and the
  # server's resident memory once the month is cached.
  CACHE_ROWS=$((BIG * 150)) start "$backend" "big_$backend" keep
  bench allocation --days 30 --runs 5 | record "$backend.g$BIG.sized.d30"
  echo "server_rss_mib=$(( $(awk '/^VmRSS/ {print $2}' "/proc/$server/status") / 1024 ))" | record "$backend.g$BIG.sized.d30"
  stop
  echo "== $backend: the same store copied into ClickHouse (replica backfill), allocated from there"
  [ -n "$ch_pid" ] || start_clickhouse
  ch_db="eai_$backend"
  CH_URL="${ch_url%/*}/$ch_db" ALLOC_SOURCE=clickhouse start "$backend" "big_$backend" keep
  "$bin" replica backfill --data-dir "$work/big_$backend" --database-url "$db" \
    --clickhouse-url "${ch_url%/*}/$ch_db" | tee "$work/backfill.txt"
  sed -nE 's/^copied ([0-9]+) rows in ([0-9.]+) s \(([0-9]+) rows\/s\).*/backfill_rows=\1\nbackfill_seconds=\2\nbackfill_rows_per_second=\3/p' \
    "$work/backfill.txt" | record "$backend.g$BIG"
  for d in 1 7 30; do bench allocation --days "$d" --runs 3 | record "$backend.g$BIG.clickhouse.d$d"; done
  stop
done

if part chmonth; then
  # The ClickHouse path alone, without loading the fleet over HTTP first (14 min + a 3.5 min backfill): the
  # example fills a ClickHouse with the big fleet's month itself (INSERT … SELECT from system.numbers), checks
  # that ClickHouse's sums and the allocation from them equal the engine's on the same rows built in Rust, and
  # times the allocation's reads and the engine (p50 of 3), beside the text-column layout of older binaries.
  echo "== a month of $BIG GPUs from a single ClickHouse (Decimal128 columns), beside the text layout"
  [ -n "$ch_pid" ] || start_clickhouse
  EAI_BENCH_CLICKHOUSE_URL="${ch_url%/*}" cargo run --release -q -p eai-store --example clickhouse_month -- \
    "$BIG" 30 3 | tee "$work/chmonth.txt"
  grep -E '^[a-z_0-9]+=' "$work/chmonth.txt" | record "clickhouse.g$BIG"
fi

if part chcluster; then
  # The same month on a ClickHouse cluster: ZooKeeper and 2 shards x 2 replicas on this machine (the tests'
  # scratch cluster, `scripts/ch-cluster.sh`), the replica's tables created on it as `serve` creates them
  # (EAI_CLICKHOUSE_CLUSTER: replicated tables behind Distributed ones), filled through them, checked exact, timed.
  echo "== a month of $BIG GPUs from a ClickHouse cluster (2 shards x 2 replicas, ZooKeeper), beside the text layout"
  scripts/zookeeper.sh fetch
  cargo build --release -q -p eai-store --example ch_cluster
  EAI_TEST_ZOOKEEPER_CLASSPATH=$(scripts/zookeeper.sh classpath) \
    "${CARGO_TARGET_DIR:-target}/release/examples/ch_cluster" > "$work/ch_cluster.log" 2>&1 &
  cluster_pid=$!
  for _ in $(seq 1 120); do grep -q '^export EAI_CLICKHOUSE_CLUSTER' "$work/ch_cluster.log" && break; sleep 1; done
  cluster_url=$(sed -n 's/^export EAI_CLICKHOUSE_URL=//p' "$work/ch_cluster.log")
  [ -n "$cluster_url" ] || { cat "$work/ch_cluster.log"; kill "$cluster_pid"; exit 1; }
  EAI_BENCH_CLICKHOUSE_URL="${cluster_url%/*}" EAI_BENCH_CLICKHOUSE_CLUSTER=eai_cluster \
    cargo run --release -q -p eai-store --example clickhouse_month -- "$BIG" 30 3 | tee "$work/chcluster.txt" \
    || { kill "$cluster_pid"; exit 1; }
  kill "$cluster_pid"; wait "$cluster_pid" 2>/dev/null || true
  grep -E '^[a-z_0-9]+=' "$work/chcluster.txt" | record "clickhouse_cluster.g$BIG"
fi

if part late; then
  echo "== late samples past the raw retention: bytes kept per pruned sample, out-of-order ingest rates (in process)"
  pg_arg=""; case " $BACKENDS " in *" postgres "*) pg_arg=$PG_URL ;; esac
  if [ "$QUICK" = 1 ]; then pruned_fleet="20 6"; else pruned_fleet="50 24"; fi
  # shellcheck disable=SC2086
  cargo run --release -q -p eai-store --example pruned -- $pruned_fleet $pg_arg | tee "$work/pruned.txt"
fi

if part sampler; then
  echo "== the sampler (in process): a tick of 8 GPUs and of 56 MIG slices, the spool, memory after a day of ticks"
  cargo bench -q -p eai-sampler --bench tick 2>/dev/null | tee "$work/sampler.txt"
fi

echo
echo "== results"
cat "$results"
[ -f "$work/engine.txt" ] || : > "$work/engine.txt"
python3 scripts/bench_table.py "$results" "$work/engine.txt"
# A figure of refused requests is no figure: fail loudly.
if grep -E '_errors=[1-9]' "$results"; then
  echo "bench.sh: requests failed during the run (above): its latencies do not measure the work" >&2
  exit 1
fi
