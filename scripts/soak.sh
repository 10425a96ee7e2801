#!/usr/bin/env bash
# The soak: `eai-gpu serve` on its embedded store (default settings: the hourly allocation batch and the pruner
# run) under two hours of a compressed month, then a table, a plot and a verdict.
#   scripts/soak.sh                      # 7,200 s; figures in soak-results/ (minutes.tsv, soak.png, summary.txt)
#   SOAK_SECONDS=300 scripts/soak.sh     # a smoke run
#   scripts/soak.sh --report DIR         # the summary and the plot again, from DIR/minutes.tsv
# The load (`eai-gpu bench soak`, crates/cli/src/bench/soak.rs): 10,000 GPUs in 500 deployments and 100
# tenants, 30-minute windows posted at 2,000 samples/s (a month of the fleet in two hours; three times the
# real-time rate of 10,000 GPUs sampled every 15 s), hourly usage events of the shared deployments, the
# allocation of the last fleet day every second and of the last fleet week every five seconds, a tenant key
# created, used and revoked every ten seconds, the policy superseded every five minutes. Every minute: the
# server's resident memory and open file descriptors, the store's size, and each request kind's p50 / p99.
# Flat means: after the warm-up (SOAK_WARMUP_MINUTES, 60: the server's read cache, EAI_READ_CACHE_ROWS = 500,000
# rows, fills in about 50 minutes at 1,700 rows a fleet hour and 6 fleet hours a minute), the second half's mean
# is within 10 % of the first half's, for memory, file descriptors and each p50.
set -euo pipefail
cd "$(dirname "$0")/.."

secs=${SOAK_SECONDS:-7200}
rate=${SOAK_RATE:-2000}
gpus=${SOAK_GPUS:-10000}
window=${SOAK_WINDOW_SECONDS:-1800}
warmup=${SOAK_WARMUP_MINUTES:-60}
out=${SOAK_OUT:-soak-results}
report_only=""
if [ "${1:-}" = "--report" ]; then
  report_only=1
  out=${2:?--report DIR}
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)

command -v gnuplot >/dev/null || {
  [ "$(id -u)" -eq 0 ] || { echo "soak.sh: gnuplot is missing (apt-get install gnuplot-nox)" >&2; exit 1; }
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gnuplot-nox
}

run_soak() {
  cargo build --release -q -p eai-gpu --features bench
  bin="${CARGO_TARGET_DIR:-target}/release/eai-gpu"
  work=$(mktemp -d)
  server=""
  cleanup() { [ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$work"; }
  trap cleanup EXIT

  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  key="eai_live_$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')"
  EAI_BOOTSTRAP_ADMIN_KEY="$key" RUST_LOG=warn "$bin" serve --listen "127.0.0.1:$port" --data-dir "$work/data" \
    > "$out/server.log" 2>&1 &
  server=$!
  url="http://127.0.0.1:$port"
  for _ in $(seq 1 200); do curl -fsS "$url/healthz" >/dev/null 2>&1 && break; sleep 0.1; done

  echo "== soak: ${secs} s at ${rate} samples/s, ${gpus} GPUs, ${window} s windows (server pid $server)"
  started=$(date +%s)
  set +e
  "$bin" bench --url "$url" --key "$key" soak --gpus "$gpus" --deployments 500 --tenants 100 \
    --window-seconds "$window" --rate "$rate" --seconds "$secs" --server-pid "$server" \
    --db-path "$work/data" --out "$out/minutes.tsv" | tee "$out/load.txt"
  rc=${PIPESTATUS[0]}
  set -e
  echo "soak: $(( $(date +%s) - started )) s, load generator rc $rc"
  kill "$server"; wait "$server" 2>/dev/null || true; server=""

}

report() {
{
  echo "server log: $(grep -c ' ERROR ' "$out/server.log" || true) ERROR, $(grep -c ' WARN ' "$out/server.log" || true) WARN lines"
  cat "$out/load.txt"
  # Flatness after the warm-up: the second half's mean against the first half's.
  awk -F'\t' -v w="$warmup" '
    NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
    # minutes after the warm-up in which the load ran (the last line, after it stopped, has no samples)
    $1 > w && $col["samples_per_s"] > 0 { n++; for (k in col) v[n, k] = $col[k] }
    END {
      split("rss_mib fds ingest_p50_ms day_p50_ms week_p50_ms ingest_p99_ms day_p99_ms week_p99_ms db_mib", ks, " ")
      h = int(n / 2)
      printf "after %d warm-up minutes, %d minutes: first half mean -> second half mean\n", w, n
      for (j = 1; j in ks; j++) {
        k = ks[j]; a = 0; b = 0
        for (i = 1; i <= h; i++) a += v[i, k]
        for (i = h + 1; i <= n; i++) b += v[i, k]
        a /= (h ? h : 1); b /= (n - h ? n - h : 1)
        d = a ? (b - a) / a * 100 : 0
        verdict = (k ~ /p99|db_mib/) ? "(recorded)" : ((d <= 10 && d >= -10) ? "flat" : "NOT FLAT")
        printf "  %-14s %10.1f -> %10.1f  %+6.1f %%  %s\n", k, a, b, d, verdict
      }
    }' "$out/minutes.tsv"
} | tee "$out/summary.txt"

gnuplot <<GP
set terminal pngcairo size 1400,1000 font ",11"
set output "$out/soak.png"
set datafile separator "\t"
set key autotitle columnhead left top
set multiplot layout 2,2 title "eai-gpu soak: ${gpus} GPUs, ${rate} samples/s, ${secs} s (a compressed month); warm-up ${warmup} min"
set xlabel "minute"
set grid
set arrow 1 from $warmup, graph 0 to $warmup, graph 1 nohead dt 2
set title "server memory and file descriptors"
set ylabel "MiB"; set y2label "open fds"; set ytics nomirror; set y2tics
set yrange [0:*]; set y2range [0:*]
plot "$out/minutes.tsv" using 1:13 with lines lw 2 title "RSS MiB", "" using 1:14 axes x1y2 with lines title "fds"
unset y2tics; unset y2label; set ytics mirror
set title "ingest latency (per minute)"
set ylabel "ms"
plot "" using 1:5 with lines lw 2 title "p50", "" using 1:6 with lines title "p99"
set title "allocation latency (per minute)"
plot "" using 1:7 with lines lw 2 title "last fleet day p50", "" using 1:8 with lines title "day p99", \
     "" using 1:9 with lines lw 2 title "last fleet week p50", "" using 1:10 with lines title "week p99"
set title "store size and ingest rate"
set ylabel "MiB"; set y2label "samples/s"; set ytics nomirror; set y2tics
set y2range [0:*]
plot "" using 1:15 with lines lw 2 title "store MiB", "" using 1:4 axes x1y2 with lines title "samples/s"
unset multiplot
GP
echo "plot: $out/soak.png"
}

rc=0
[ -n "$report_only" ] || run_soak
report
exit "$rc"
