#!/usr/bin/env bash
# The history import's rate, end to end (BENCHMARKS.md "Import from Prometheus"): a month of DCGM series for a
# fleet written as OpenMetrics (`eai-gpu bench prom-history`), made TSDB blocks by Debian's promtool, served by
# a real prometheus; `eai-gpu import` into a fresh `serve` (SQLite), timed; then, in the same run, the control
# plane's own ingest rate (`eai-gpu bench ingest`, HTTP batches of 10,000 two at a time, as the import's two
# senders send them) on another fresh store: the reference.
#
#   scripts/bench-import.sh                  # 100 GPUs, 30 days, 60 s windows (4.3 M samples)
#   GPUS=100 DAYS=2 scripts/bench-import.sh  # a smoke run
set -euo pipefail
cd "$(dirname "$0")/.."
GPUS=${GPUS:-100}
DAYS=${DAYS:-30}
WINDOW=${WINDOW:-60}
work=$(mktemp -d /tmp/eai-bench-import.XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
command -v promtool >/dev/null || { echo "promtool is missing: apt-get install prometheus" >&2; exit 1; }
cargo build --release -q -p eai-gpu --features bench
bin=target/release/eai-gpu
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
end=$(date -u -d '3 days ago' +%Y-%m-%dT%H:00:00Z)
from=$(date -u -d "$end - $DAYS days" +%Y-%m-%dT%H:00:00Z)

t=$(date +%s.%N)
"$bin" bench prom-history --gpus "$GPUS" --deployments 10 --window-seconds "$WINDOW" --days "$DAYS" --end "$end" \
  --out "$work/history.om"
echo "history_write_seconds=$(echo "$(date +%s.%N) - $t" | bc)"
t=$(date +%s.%N)
promtool tsdb create-blocks-from openmetrics -q --max-block-duration=744h "$work/history.om" "$work/tsdb"
echo "promtool_seconds=$(echo "$(date +%s.%N) - $t" | bc)"
rm "$work/history.om"
printf 'global:\n  scrape_interval: 15s\n' > "$work/prometheus.yml"
pport=$(free_port)
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/tsdb" --storage.tsdb.retention.time=10y \
  --web.listen-address="127.0.0.1:$pport" --log.level=warn 2> "$work/prometheus.log" &
pids+=($!)
for _ in $(seq 1 300); do curl -fsS "http://127.0.0.1:$pport/-/ready" >/dev/null 2>&1 && break; sleep 0.2; done

key=eai_live_benchimportadminkey0000000000000
serve() { # name -> sets url
  local port; port=$(free_port); mkdir -p "$work/$1"
  EAI_BOOTSTRAP_ADMIN_KEY=$key RUST_LOG=warn "$bin" serve --listen "127.0.0.1:$port" --data-dir "$work/$1" \
    > "$work/$1/serve.log" 2>&1 &
  pids+=($!)
  url="http://127.0.0.1:$port"
  for _ in $(seq 1 200); do curl -fsS "$url/healthz" >/dev/null 2>&1 && return 0; sleep 0.1; done
  cat "$work/$1/serve.log"; exit 1
}
serve imported
sampler_key=$(curl -fsS -H "Authorization: Bearer $key" -H 'Content-Type: application/json' \
  -d '{"role":"sampler","name":"import"}' "$url/v1/auth/api-keys" | python3 -c 'import json,sys; print(json.load(sys.stdin)["key"])')
# CPU seconds (user + system) of a process so far.
cpu() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%.1f", ($14 + $15) / hz }' "/proc/$1/stat"; }
prom_pid=${pids[0]}
serve_pid=${pids[-1]}
prom0=$(cpu "$prom_pid"); serve0=$(cpu "$serve_pid")
( EAI_API_KEY=$sampler_key "$bin" import --prometheus-url "http://127.0.0.1:$pport" --from "$from" --to "$end" \
  --interval "${WINDOW}s" --control-plane "$url" --checkpoint "$work/checkpoint.json"; times > "$work/times.txt" ) \
  2> "$work/import.txt"
cat "$work/import.txt"
# Where the CPU went: the import itself (its children's times), Prometheus, the control plane.
import_cpu=$(tail -n 1 "$work/times.txt" | awk '{ split($1, u, /m|s/); split($2, y, /m|s/); printf "%.1f", u[1]*60 + u[2] + y[1]*60 + y[2] }')
echo "cpu_seconds_import=$import_cpu"
echo "cpu_seconds_prometheus=$(echo "$(cpu "$prom_pid") - $prom0" | bc)"
echo "cpu_seconds_serve=$(echo "$(cpu "$serve_pid") - $serve0" | bc)"
rate=$(sed -n 's/.*(\([0-9]*\) samples\/s).*/\1/p' "$work/import.txt" | tail -n 1)
samples=$(sed -n 's/^\([0-9]*\) samples: .*/\1/p' "$work/import.txt")
echo "import_samples=$samples"
echo "import_samples_per_second=$rate"

serve reference
ref=$(EAI_API_KEY=$key "$bin" bench --url "$url" ingest --gpus "$GPUS" --samples "$samples" --batch 10000 \
  --concurrency 2 | sed -n 's/^ingest_samples_per_second=//p')
echo "reference_ingest_samples_per_second=$ref (bench ingest, batches of 10,000 two at a time, as the import's two senders send)"
echo "import_ratio_to_ingest=$(echo "scale=2; $rate / $ref" | bc)"
