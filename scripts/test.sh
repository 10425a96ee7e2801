#!/usr/bin/env bash
# The test command: sets up what the tests need on a fresh Debian machine, then runs every test.
#   scripts/test.sh            # everything
#   scripts/test.sh -p eai-engine   # extra arguments go to `cargo test`
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '\n== %s\n' "$*"; }

# Debian packages the suites need, installed only when missing.
need_pkgs=()
command -v python3 >/dev/null || need_pkgs+=(python3)
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
