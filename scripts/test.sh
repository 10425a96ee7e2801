#!/usr/bin/env bash
# The test command: sets up what the tests need on a fresh Debian machine, then runs every test.
#   scripts/test.sh            # everything
#   scripts/test.sh -p eai-engine   # extra arguments go to `cargo test`
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '\n== %s\n' "$*"; }

# What the run started is stopped at exit, however it ends (each entry is a command; last started, first run).
on_exit=()
run_on_exit() { local i; for (( i=${#on_exit[@]}-1; i>=0; i-- )); do eval "${on_exit[i]}" || true; done; }
trap run_on_exit EXIT
trap 'exit 130' INT TERM

# Snapshot tests (insta) compare with the committed snapshots and never write: a missing or different snapshot
# fails (review one with `cargo insta review`, or INSTA_UPDATE=always cargo test ... then git diff).
export INSTA_UPDATE=no

# Debian packages the suites need, installed only when missing.
need_pkgs=()
command -v python3 >/dev/null || need_pkgs+=(python3 python3-venv python3-pip)
command -v curl >/dev/null || need_pkgs+=(curl)
# The Python SDK's suite makes virtualenvs.
python3 -c 'import ensurepip, venv' 2>/dev/null || need_pkgs+=(python3-venv)
# The SDKs' suites: Node >= 20 with npm (TypeScript), Go (>= 1.21), Java 17 with Maven. The machine image has
# them; on a bare Debian the distribution's packages are taken.
command -v npm >/dev/null || need_pkgs+=(nodejs npm)
command -v go >/dev/null || need_pkgs+=(golang-go)
command -v mvn >/dev/null || need_pkgs+=(maven)
command -v javac >/dev/null || need_pkgs+=(openjdk-17-jdk-headless)
# The bare-metal units (deploy/systemd) are checked with systemd-analyze.
command -v systemd-analyze >/dev/null || need_pkgs+=(systemd)
# The sampler's tests start a real Prometheus (Debian's package; the tests fail loudly without it).
[ -x /usr/bin/prometheus ] || need_pkgs+=(prometheus)
# The network fault test (crates/cli/tests/cli.rs) drops packets at random with nftables in a network namespace.
command -v nft >/dev/null || need_pkgs+=(nftables)
# The portal's browser tests (crates/api/tests/http/portal.rs) drive headless Chromium through chromedriver.
[ -x /usr/bin/chromium ] || need_pkgs+=(chromium)
[ -x /usr/bin/chromedriver ] || need_pkgs+=(chromium-driver)
# The ClickHouse replica's tests start a real ClickHouse server as a plain process (fail loudly without it).
[ -x /usr/sbin/clickhouse-server ] || need_pkgs+=(clickhouse-server)
# The PostgreSQL failover test (crates/cli/tests/cli/failover.rs) runs a Patroni cluster with one etcd through
# scripts/pg-ha.sh, on free ports of 127.0.0.1 (a service the packages may start on their default ports is not
# used). It fails loudly without them.
command -v patroni >/dev/null || need_pkgs+=(patroni)
command -v etcd >/dev/null || need_pkgs+=(etcd-server)
command -v etcdctl >/dev/null || need_pkgs+=(etcd-client)
if [ ${#need_pkgs[@]} -gt 0 ]; then
  log "installing ${need_pkgs[*]}"
  if [ "$(id -u)" -ne 0 ]; then echo "need root to apt-get install ${need_pkgs[*]}" >&2; exit 1; fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_pkgs[@]}"
fi

log "architecture: the engine stays pure (no async runtime, database or HTTP in its dependency tree)"
forbidden=$(cargo tree -p eai-engine -e normal --prefix none --format '{p}' | awk '{print $1}' \
  | grep -E '^(tokio|sqlx|hyper|reqwest|rusqlite|postgres|tokio-postgres|axum|serde_json)$' | sort -u || true)
if [ -n "$forbidden" ]; then
  echo "eai-engine must not depend on: $forbidden" >&2
  exit 1
fi
echo "ok: eai-engine depends on none of tokio, sqlx, hyper, reqwest, rusqlite, postgres, axum, serde_json"

log "architecture: the shipped binary carries no test support and no load generator"
# The stores' scratch servers and the test CA are eai-store's feature test-support; `eai-gpu bench` is eai-gpu's
# feature bench (scripts/bench.sh builds with it; crates/cli/tests/cli.rs checks the subcommand is absent
# without it). Neither may be on in `cargo build -p eai-gpu`.
store_features=$(cargo tree -p eai-gpu -e normal,features -i eai-store --prefix none --format '{p}' \
  | grep -o 'eai-store feature "[a-z-]*"' | sort -u)
if grep -q test-support <<<"$store_features"; then
  echo "the shipped binary (cargo build -p eai-gpu) must not enable eai-store's test-support: a normal dependency" >&2
  echo "turns it on (only [dev-dependencies] may): $(tr '\n' ' ' <<<"$store_features")" >&2
  exit 1
fi
default_features=$(cargo metadata --no-deps --format-version 1 \
  | python3 -c 'import json,sys; m=json.load(sys.stdin); print(*[p for p in m["packages"] if p["name"]=="eai-gpu"][0]["features"].get("default", []))')
if grep -qw bench <<<"$default_features"; then
  echo "eai-gpu's default features must not include bench (the load generator): $default_features" >&2
  exit 1
fi
echo "ok: cargo build -p eai-gpu has neither eai-store/test-support nor the bench feature"

log "tidy: the tree checks itself (scripts/tidy.sh)"
scripts/tidy.sh

log "PostgreSQL: a throwaway cluster of this run's own (scripts/pg-scratch.sh), unless EAI_TEST_POSTGRES_URL names one"
# The PostgreSQL tests fail (never skip) without a server. With EAI_TEST_POSTGRES_URL set, that server is used as
# it is (its user must be able to create databases and roles). Otherwise this run makes its own cluster with
# initdb in a temporary folder (trust authentication, a free port of 127.0.0.1) and removes it at exit. The
# machine's own PostgreSQL, absent, stopped, or running with password-only logins, is never read or touched.
if [ -z "${EAI_TEST_POSTGRES_URL:-}" ]; then
  # shellcheck source=scripts/pg-scratch.sh
  source scripts/pg-scratch.sh
  on_exit+=(pg_scratch_stop)
  pg_scratch_start
fi
psql_bin=$(command -v psql || ls /usr/lib/postgresql/*/bin/psql 2>/dev/null | sort -V | tail -n 1 || true)
if [ -n "$psql_bin" ]; then
  "$psql_bin" -w -Atq "$EAI_TEST_POSTGRES_URL" -c 'SELECT 1' >/dev/null \
    || { echo "PostgreSQL at $EAI_TEST_POSTGRES_URL does not answer" >&2; exit 1; }
fi
echo "ok: the PostgreSQL tests use $EAI_TEST_POSTGRES_URL"

log "ZooKeeper: the ClickHouse cluster tests' coordination server (scripts/zookeeper.sh, jars from Maven Central)"
# ClickHouse 18.16 (Debian 12) has no ClickHouse Keeper: the cluster tests (crates/api/tests/http/clickhouse_cluster.rs)
# run Apache ZooKeeper with the machine's Java (javac, hence java, is installed above). The jars (about 3 MB) are
# downloaded once into target/zookeeper/, each checked against Maven Central's SHA-1 and a pinned SHA-256; a run
# with them present downloads nothing. Without them the cluster tests fail (never skip).
if [ -z "${EAI_TEST_ZOOKEEPER_CLASSPATH:-}" ]; then
  scripts/zookeeper.sh fetch
  EAI_TEST_ZOOKEEPER_CLASSPATH=$(scripts/zookeeper.sh classpath)
  export EAI_TEST_ZOOKEEPER_CLASSPATH
fi
echo "ok: ZooKeeper's classpath is $EAI_TEST_ZOOKEEPER_CLASSPATH"

log "focus-validator: the FinOps Foundation's FOCUS validator 2.2.1 in a venv under target/ (SPEC §10)"
# The FOCUS conformance tests (crates/cli/tests/cli/focus_conformance.rs, crates/api/tests/http/focus.rs) run it
# on the demo's month and the test fleet's exports; they set it up themselves too, and fail (never skip) when it
# cannot be. Set up here once so its time shows apart (about 20 s the first time, nothing after).
started=$(date +%s)
scripts/focus-validator.sh setup >/dev/null
echo "focus-validator: ready in $(( $(date +%s) - started )) s"

log "cargo test"
cargo test --workspace "$@"

log "cargo test --all-features: the crates whose code changes with a feature (sampler: nvml; eai-gpu: bench, nvml)"
# The other crates' features (eai-store/test-support, eai-telemetry/export) are already on in the run above.
started=$(date +%s)
cargo test -p eai-sampler -p eai-gpu --all-features "$@"
echo "cargo test --all-features: $(( $(date +%s) - started )) s"
# Back to the shipped binary's features: schemathesis and the SDK suites run target/debug/eai-gpu.
cargo build -p eai-gpu

log "fuzzing: the committed corpus and every regression replayed (stable), then each target 60 s (nightly)"
started=$(date +%s)
cargo test --manifest-path fuzz/Cargo.toml --lib -q
if cargo +nightly --version >/dev/null 2>&1; then
  # Each run is recorded in fuzz/RUNS.tsv and grows the corpus in this checkout (not committed by CI).
  scripts/fuzz.sh "${EAI_FUZZ_SECONDS:-60}"
else
  echo "no nightly toolchain here: the corpus replay above is the fuzzing of this run (rustup toolchain install nightly)"
fi
echo "fuzzing: $(( $(date +%s) - started )) s"

log "contracts: JSON Schemas, examples and the OpenAPI document"
python3 scripts/contracts/check.py

log "portal: tsc --noEmit --checkJs on every module, then node --test of format.js and the policy form"
scripts/portal-check.sh

log "schemathesis: a running server against its own OpenAPI document"
bin="${CARGO_TARGET_DIR:-target}/debug/eai-gpu"
[ -x "$bin" ] || cargo build -p eai-gpu
tmp=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
key="eai_live_$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')"
# Rate limits off: schemathesis sends thousands of requests a second (the limits have their own tests).
EAI_BOOTSTRAP_ADMIN_KEY="$key" EAI_RATE_LIMIT_PER_KEY=0 EAI_RATE_LIMIT_PER_ADDRESS=0 RUST_LOG=warn \
  "$bin" serve --listen "127.0.0.1:$port" --data-dir "$tmp/data" > "$tmp/server.log" 2>&1 &
server=$!
on_exit+=("kill $server 2>/dev/null; rm -rf '$tmp'")
for _ in $(seq 1 100); do
  curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break
  sleep 0.1
done
curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null || { echo "the server did not start:"; cat "$tmp/server.log"; exit 1; }
# Revoking or rotating keys last: the run may revoke or rotate its own key, after which every call is a 401.
scripts/contracts/schemathesis.sh "http://127.0.0.1:$port" "$key" \
  --exclude-operation-id revokeApiKey --exclude-operation-id rotateApiKey
scripts/contracts/schemathesis.sh "http://127.0.0.1:$port" "$key" \
  --include-operation-id revokeApiKey --include-operation-id rotateApiKey
kill $server; wait $server 2>/dev/null || true
if grep -E "panicked|ERROR" "$tmp/server.log"; then
  echo "the server logged errors during the schemathesis run" >&2
  exit 1
fi
echo "schemathesis: no 5xx, every response conforms"

log "SDKs: each suite against a real eai-gpu serve (this build's binary)"
target_dir="${CARGO_TARGET_DIR:-target}"
case "$target_dir" in /*) ;; *) target_dir="$PWD/$target_dir" ;; esac
export EAI_GPU_BIN="$target_dir/debug/eai-gpu"
cargo build -p eai-gpu   # a no-op after the full cargo test; never a stale binary
log "systemd units (deploy/systemd): systemd-analyze verify, silent, and a hardening exposure of at most 2.5"
units=$(mktemp -d)
for u in deploy/systemd/*.service; do
  sed "s|/usr/local/bin/eai-gpu|$EAI_GPU_BIN|" "$u" > "$units/$(basename "$u")"
done
# verify exits 0 on an unknown key (a typo silently dropping a hardening line): any output fails too.
out=$(systemd-analyze verify "$units"/*.service 2>&1) || { echo "$out" >&2; exit 1; }
[ -z "$out" ] || { echo "systemd-analyze verify: $out" >&2; exit 1; }
for u in "$units"/*.service; do
  # The threshold is in tenths: an overall exposure of at most 2.5 (of 10).
  systemd-analyze security --offline=yes --threshold=25 "$u" | tail -n 1
done
rm -rf "$units"

log "Helm chart (deploy/helm/enterprise-ai): lint, render every ci/ values file, validate every object, must-fail values"
scripts/helm-check.sh
log "observability: every dashboard query and alert expression against a real Prometheus"
EAI_OBSERVE_SKIP_BUILD=1 scripts/observe-check.sh

# sdks/seed holds the seed's SDK snippets (byte for byte, sdks/seed/README.md): no suite of its own, each SDK's
# suite below runs its language's snippet exactly as written and checks it against that copy.
for sdk in sdks/python sdks/typescript sdks/go sdks/java; do
  started=$(date +%s)
  log "$sdk/test.sh"
  "$sdk/test.sh"
  echo "$sdk: passed in $(( $(date +%s) - started )) s"
done
