#!/usr/bin/env bash
# The test command: sets up what the tests need on a fresh Debian machine, then runs every test.
#   scripts/test.sh            # everything
#   scripts/test.sh -p eai-engine   # extra arguments go to `cargo test`
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '\n== %s\n' "$*"; }

# Debian packages the suites need, installed only when missing.
need_pkgs=()
command -v python3 >/dev/null || need_pkgs+=(python3 python3-venv python3-pip)
command -v curl >/dev/null || need_pkgs+=(curl)
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

log "cargo test"
cargo test --workspace "$@"

log "contracts: JSON Schemas, examples and the OpenAPI document"
python3 scripts/contracts/check.py

log "schemathesis: a running server against its own OpenAPI document"
bin=target/debug/eai-gpu
[ -x "$bin" ] || cargo build -p eai-gpu
tmp=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
key="eai_live_$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')"
EAI_BOOTSTRAP_ADMIN_KEY="$key" RUST_LOG=warn "$bin" serve --listen "127.0.0.1:$port" --data-dir "$tmp/data" \
  > "$tmp/server.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true; rm -rf "$tmp"' EXIT
for _ in $(seq 1 100); do
  curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break
  sleep 0.1
done
curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null || { echo "the server did not start:"; cat "$tmp/server.log"; exit 1; }
scripts/contracts/schemathesis.sh "http://127.0.0.1:$port" "$key"
kill $server; wait $server 2>/dev/null || true
if grep -E "panicked|ERROR" "$tmp/server.log"; then
  echo "the server logged errors during the schemathesis run" >&2
  exit 1
fi
echo "schemathesis: no 5xx, every response conforms"
