#!/usr/bin/env bash
# The performance suite: builds release binaries, starts throwaway servers on SQLite and PostgreSQL, drives
# them with `eai-gpu bench`, measures references in the same run, and prints one table.
#
#   scripts/bench.sh            # the whole suite (the mixed load runs 10 minutes)
#   QUICK=1 scripts/bench.sh    # smaller figures and a 60 s mixed load, for a smoke run
#   BACKENDS=sqlite scripts/bench.sh
#   PG_MIXED_SECONDS=120 BIG_BACKENDS=sqlite scripts/bench.sh   # what BENCHMARKS.md used
set -euo pipefail
cd "$(dirname "$0")/.."

QUICK=${QUICK:-0}
BACKENDS=${BACKENDS:-"sqlite postgres"}
PG_URL=${EAI_TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/postgres}
if [ "$QUICK" = 1 ]; then INGEST=400000; MIXED_S=60; BIG=2000; else INGEST=2000000; MIXED_S=600; BIG=5000; fi
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
cleanup() { [ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
key="eai_live_$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')"

# start BACKEND NAME [keep]: a server on a fresh database (on NAME's database as it is, with keep); sets $url and
# $server. $CACHE_ROWS, when set, is the server's EAI_READ_CACHE_ROWS.
start() {
  local backend=$1 name=$2 keep=${3:-} port db
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
  EAI_READ_CACHE_ROWS=${CACHE_ROWS:-500000} \
  EAI_BOOTSTRAP_ADMIN_KEY=$key EAI_RAW_RETENTION_DAYS=0 EAI_MAX_CLOCK_SKEW_SECONDS=259200 RUST_LOG=warn \
    "$bin" serve --listen "127.0.0.1:$port" --data-dir "$work/$name" --database-url "$db" > "$work/$name/server.log" 2>&1 &
  server=$!
  url="http://127.0.0.1:$port"
  for _ in $(seq 1 200); do curl -fsS "$url/healthz" >/dev/null 2>&1 && return 0; sleep 0.1; done
  cat "$work/$name/server.log"; exit 1
}
stop() { kill "$server"; wait "$server" 2>/dev/null || true; server=""; }
record() { sed "s/^/$1./" >> "$results"; }
bench() { EAI_API_KEY=$key "$bin" bench --url "$url" "$@"; }

echo "== engine (in process)"
cargo bench -q -p eai-engine --bench allocate 2>/dev/null | tee "$work/engine.txt"

for backend in $BACKENDS; do
  echo "== $backend: ingest over HTTP"
  start "$backend" "ingest_$backend"
  bench ingest --samples "$INGEST" --batch 5000 --concurrency 4 --csv "$work/rows.csv" | record "$backend"
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

  echo "== $backend: allocation latency, 1,000 GPUs / 50 deployments / 20 tenants"
  start "$backend" "alloc_$backend"
  bench load --gpus 1000 --days 30 --window-seconds 3600 | record "$backend.g1000"
  for d in 1 7 30; do bench allocation --days "$d" --runs 20 | record "$backend.g1000.d$d"; done
  # The reference, side by side: the same database served without the read cache (every request decodes
  # every hour), then with it again for the mixed load.
  stop
  CACHE_ROWS=0 start "$backend" "alloc_$backend" keep
  for d in 1 30; do bench allocation --days "$d" --runs 10 | record "$backend.g1000.nocache.d$d"; done
  stop
  start "$backend" "alloc_$backend" keep
  secs=$MIXED_S; [ "$backend" = postgres ] && secs=$PG_MIXED_S
  echo "== $backend: mixed load (${secs}s at 6,700 samples/s, allocation every second)"
  bench mixed --gpus 1000 --rate 6700 --seconds "$secs" --server-pid "$server" \
    --end "$(date -u -d '+2 days' +%Y-%m-%dT%H:00:00Z)" | record "$backend"
  stop

  case " $BIG_BACKENDS " in *" $backend "*) ;; *) continue ;; esac
  echo "== $backend: allocation latency, $BIG GPUs"
  start "$backend" "big_$backend"
  bench load --gpus "$BIG" --days 30 --window-seconds 3600 | record "$backend.g$BIG"
  bench allocation --days 30 --runs 3 | record "$backend.g$BIG.d30"
  stop
done

echo "== late samples past the raw retention: bytes kept per pruned sample, out-of-order ingest rates (in process)"
pg_arg=""; case " $BACKENDS " in *" postgres "*) pg_arg=$PG_URL ;; esac
if [ "$QUICK" = 1 ]; then pruned_fleet="20 6"; else pruned_fleet="50 24"; fi
# shellcheck disable=SC2086
cargo run --release -q -p eai-store --example pruned -- $pruned_fleet $pg_arg | tee "$work/pruned.txt"

echo
echo "== results"
cat "$results"
python3 scripts/bench_table.py "$results" "$work/engine.txt"
# A figure of refused requests is no figure: fail loudly.
if grep -E '_errors=[1-9]' "$results"; then
  echo "bench.sh: requests failed during the run (above): its latencies do not measure the work" >&2
  exit 1
fi
