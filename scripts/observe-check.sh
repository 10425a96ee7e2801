#!/usr/bin/env bash
# The observability check (issue 15, "done when"): every Grafana panel query and every alert expression of
# deploy/grafana/ answers with data from a real Prometheus scraping a real control plane, a real sampler and
# DCGM exporter fixtures.
#
#   scripts/observe-check.sh                      # builds target/debug/eai-gpu (CARGO_TARGET_DIR honoured)
#   EAI_OBSERVE_SKIP_BUILD=1 scripts/observe-check.sh   # uses the binary already built
#   EAI_OBSERVE_KEEP=1 scripts/observe-check.sh   # keeps the temp dir (logs, data, Prometheus TSDB)
#
# Stages (each timed): build; promtool check rules; dashboards' shape; a fixture DCGM exporter (the H100 and
# T4 captures of fixtures/, over HTTP); `eai-gpu serve` on SQLite (metrics refreshed every second, tenant cost
# on, a ClickHouse URL nothing answers); the feed through the HTTP API (scripts/observe/feed.py: a silent node,
# an unpriced idle deployment with a gap, two tenants sharing a priced one); a real `eai-gpu sampler` on the
# H100 capture; Prometheus (/usr/bin/prometheus, its own temp TSDB, 1 s scrapes, the alert rules loaded); the
# audit chain tampered with and the control plane restarted; then scripts/observe/queries.py runs every query.
# Needs python3 and Debian's prometheus package (apt-get install -y prometheus). Bounded: under 2 minutes
# after the build.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"

T_START=$(date +%s.%N)
T_STAGE=$T_START
stage() {
  local now
  now=$(date +%s.%N)
  if [ -n "${STAGE_NAME:-}" ]; then
    awk -v n="$STAGE_NAME" -v a="$T_STAGE" -v b="$now" 'BEGIN { printf "   %-60s %6.1f s\n", n, b - a }'
  fi
  STAGE_NAME="$1"
  T_STAGE=$now
  printf '\n== %s\n' "$1"
}

for tool in python3 curl awk; do
  command -v "$tool" >/dev/null || { echo "observe-check needs $tool" >&2; exit 1; }
done
PROMETHEUS=${PROMETHEUS:-/usr/bin/prometheus}
PROMTOOL=${PROMTOOL:-/usr/bin/promtool}
if [ ! -x "$PROMETHEUS" ] || [ ! -x "$PROMTOOL" ]; then
  echo "observe-check needs Prometheus and promtool: apt-get install -y prometheus" >&2
  exit 1
fi

TARGET_DIR=${CARGO_TARGET_DIR:-target}
case "$TARGET_DIR" in /*) ;; *) TARGET_DIR="$ROOT/$TARGET_DIR" ;; esac
BIN="$TARGET_DIR/debug/eai-gpu"

TMP=$(mktemp -d "${TMPDIR:-/tmp}/eai-observe.XXXXXX")
PIDS=()
cleanup() {
  local rc=$?
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  if [ "$rc" -ne 0 ]; then
    for log in "$TMP"/*.log; do
      [ -f "$log" ] || continue
      printf '\n--- last lines of %s\n' "$log"
      tail -n 25 "$log"
    done
  fi
  if [ "${EAI_OBSERVE_KEEP:-0}" = 1 ] || [ "$rc" -ne 0 ]; then
    echo "kept $TMP"
  else
    rm -rf "$TMP"
  fi
  exit "$rc"
}
trap cleanup EXIT

# Free local ports: control plane, sampler metrics, fixture exporter, Prometheus, and one nothing listens on.
read -r CP_PORT SAMPLER_PORT FIXTURE_PORT PROM_PORT DEAD_PORT < <(python3 - <<'EOF'
import socket
socks = [socket.socket() for _ in range(5)]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))
for s in socks:
    s.close()
EOF
)
CP="http://127.0.0.1:$CP_PORT"
PROM="http://127.0.0.1:$PROM_PORT"
ADMIN_KEY="eai_live_observe_check_$(python3 -c 'import secrets; print(secrets.token_hex(16))')"

wait_http() { # url seconds
  local deadline=$((SECONDS + $2))
  until curl -fsS -o /dev/null "$1" 2>/dev/null; do
    if [ "$SECONDS" -ge "$deadline" ]; then echo "no answer from $1 after $2 s" >&2; return 1; fi
    sleep 0.2
  done
}

stage "build $BIN"
if [ "${EAI_OBSERVE_SKIP_BUILD:-0}" = 1 ]; then
  [ -x "$BIN" ] || { echo "EAI_OBSERVE_SKIP_BUILD=1 but $BIN is missing" >&2; exit 1; }
  echo "using the binary already built"
else
  cargo build -q -p eai-gpu
fi
T_AFTER_BUILD=$(date +%s.%N)

stage "promtool check rules deploy/grafana/alerts.yaml"
"$PROMTOOL" check rules deploy/grafana/alerts.yaml

stage "dashboards are well formed"
python3 scripts/observe/queries.py lint deploy/grafana/dashboards

stage "fixture DCGM exporters on :$FIXTURE_PORT"
mkdir -p "$TMP/exporter/h100" "$TMP/exporter/t4"
cp fixtures/dcgm_h100x8_k8s_gpu_operator_sampled.prom "$TMP/exporter/h100/metrics"
cp fixtures/dcgm_t4_docker_datadog.prom "$TMP/exporter/t4/metrics"
python3 -m http.server "$FIXTURE_PORT" --bind 127.0.0.1 --directory "$TMP/exporter" >"$TMP/exporter.log" 2>&1 &
PIDS+=($!)
wait_http "http://127.0.0.1:$FIXTURE_PORT/h100/metrics" 10

start_serve() {
  EAI_LISTEN="127.0.0.1:$CP_PORT" \
  EAI_DATA_DIR="$TMP/data" \
  EAI_BOOTSTRAP_ADMIN_KEY="$ADMIN_KEY" \
  EAI_METRICS_REFRESH_SECONDS=1 \
  EAI_METRICS_TENANT_COST=true \
  EAI_CLICKHOUSE_URL="http://127.0.0.1:$DEAD_PORT/eai" \
  RUST_LOG=info \
    "$BIN" serve >>"$TMP/serve.log" 2>&1 &
  SERVE_PID=$!
  PIDS+=("$SERVE_PID")
  wait_http "$CP/healthz" 30
}

stage "eai-gpu serve on SQLite at $CP"
start_serve

stage "feed the control plane through its HTTP API"
python3 scripts/observe/feed.py feed "$CP" "$ADMIN_KEY" "$TMP/sampler-key"

stage "eai-gpu sampler on the H100 capture (node gpu-node-1)"
EAI_API_KEY="$(cat "$TMP/sampler-key")" "$BIN" sampler \
  --dcgm-url "http://127.0.0.1:$FIXTURE_PORT/h100/metrics" --control-plane "$CP" --interval 1s \
  --spool-dir "$TMP/spool" --metrics-listen "127.0.0.1:$SAMPLER_PORT" >"$TMP/sampler.log" 2>&1 &
PIDS+=($!)
wait_http "http://127.0.0.1:$SAMPLER_PORT/metrics" 20
deadline=$((SECONDS + 20))
until curl -fsS "http://127.0.0.1:$SAMPLER_PORT/metrics" | grep -Eq '^eai_sampler_samples_sent_total [1-9]'; do
  if [ "$SECONDS" -ge "$deadline" ]; then echo "the sampler delivered nothing in 20 s" >&2; exit 1; fi
  sleep 0.2
done
# The tenants use the live deployment in the current hour (tenant costs in any month to date).
python3 scripts/observe/feed.py live-usage "$CP" "$ADMIN_KEY" vllm-agg-0-vllmdecodeworker

stage "Prometheus on $PROM (1 s scrapes, the alert rules loaded)"
cat >"$TMP/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files:
  - $ROOT/deploy/grafana/alerts.yaml
scrape_configs:
  - job_name: eai-gpu
    static_configs: [{targets: ["127.0.0.1:$CP_PORT"]}]
  - job_name: eai-gpu-sampler
    static_configs: [{targets: ["127.0.0.1:$SAMPLER_PORT"]}]
  # The exporter's Kubernetes labels (pod, namespace) kept, as the GPU Operator's ServiceMonitor keeps them.
  - job_name: dcgm-exporter
    honor_labels: true
    metrics_path: /h100/metrics
    static_configs: [{targets: ["127.0.0.1:$FIXTURE_PORT"]}]
  - job_name: dcgm-exporter-t4
    honor_labels: true
    metrics_path: /t4/metrics
    static_configs: [{targets: ["127.0.0.1:$FIXTURE_PORT"]}]
EOF
"$PROMTOOL" check config "$TMP/prometheus.yml" >/dev/null
"$PROMETHEUS" --config.file="$TMP/prometheus.yml" --storage.tsdb.path="$TMP/prometheus" \
  --web.listen-address="127.0.0.1:$PROM_PORT" --storage.tsdb.retention.time=1d >"$TMP/prometheus.log" 2>&1 &
PIDS+=($!)
wait_http "$PROM/-/ready" 30
python3 scripts/observe/queries.py wait "$PROM" 30 \
  'up{job="eai-gpu"} == 1' 'up{job="eai-gpu-sampler"} == 1' 'up{job="dcgm-exporter"} == 1' \
  'up{job="dcgm-exporter-t4"} == 1' 'eai_deployment_idle_ratio_last_hour' 'eai_tenant_cost_month_to_date'

stage "tamper with the audit chain, restart the control plane"
kill "$SERVE_PID"
wait "$SERVE_PID" 2>/dev/null || true
python3 scripts/observe/feed.py tamper "$TMP/data/eai-gpu.db"
start_serve
# A failed sign-in on the restarted process (its counters start again at zero).
curl -sS -o /dev/null -H "Authorization: Bearer eai_live_$(printf 'x%.0s' {1..40})" "$CP/v1/finops/allocation-policies"

stage "wait for the data every query reads"
python3 scripts/observe/queries.py wait "$PROM" 45 \
  'min(eai_audit_chain_verified) == 0' \
  'eai_sampler_last_success_timestamp_seconds > 0' \
  'count_over_time(eai_gpu_samples_ingested_total[1m]) >= 5' \
  'count_over_time(eai_replica_failures_total[1m]) >= 5' \
  'increase(eai_replica_failures_total[1m]) > 0' \
  'count_over_time(DCGM_FI_DEV_GPU_UTIL[1m]) >= 5'

stage "every dashboard query and alert expression through Prometheus"
python3 scripts/observe/queries.py check "$PROM" deploy/grafana/dashboards 30

stage "done"
T_END=$(date +%s.%N)
awk -v s="$T_START" -v b="$T_AFTER_BUILD" -v e="$T_END" \
  'BEGIN { printf "\nobserve-check passed: %.1f s in all, %.1f s after the build\n", e - s, e - b }'
