#!/usr/bin/env bash
# Checks and tests the Go SDK against a real eai-gpu server.
#
#   sdks/go/test.sh                # models up to date, gofmt, go vet, go test ./... -count=1
#   EAI_GPU_BIN=/path/to/eai-gpu sdks/go/test.sh
#
# The server binary comes from $EAI_GPU_BIN, else <repo>/target/debug/eai-gpu, else `eai-gpu` on PATH; the
# tests fail (they never skip) when none exists. Extra arguments go to `go test` (e.g. -run TestSeed -v).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cd "$here"

if [[ -z "${EAI_GPU_BIN:-}" ]]; then
  if [[ -x "$repo/target/debug/eai-gpu" ]]; then
    export EAI_GPU_BIN="$repo/target/debug/eai-gpu"
  elif command -v eai-gpu >/dev/null 2>&1; then
    EAI_GPU_BIN="$(command -v eai-gpu)"
    export EAI_GPU_BIN
  else
    echo "test.sh: no eai-gpu server binary: set EAI_GPU_BIN, build $repo/target/debug/eai-gpu, or put eai-gpu on PATH" >&2
    exit 1
  fi
fi
echo "test.sh: go $(go env GOVERSION), server $EAI_GPU_BIN"

# Offline and reproducible: the module has no dependencies (its model generator is in the module too).
# The tests need python3 (scripts/sdk/fault_proxy.py, the SDKs' one fault proxy).
export GOFLAGS="${GOFLAGS:--mod=mod}" GOPROXY="${GOPROXY:-off}" GOWORK=off GOSUMDB=off

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
secs() { local ms=$(( $(now_ms) - $1 )); printf '%d.%03d s' $(( ms / 1000 )) $(( ms % 1000 )); }

start=$(now_ms)
step() {
  local name="$1"; shift
  local t0; t0=$(now_ms)
  echo "== $name"
  if ! "$@"; then
    echo "== $name: FAILED after $(secs "$t0")" >&2
    echo "test.sh: FAILED after $(secs "$start")" >&2
    exit 1
  fi
  echo "== $name: ok ($(secs "$t0"))"
}

check_gofmt() {
  local unformatted
  unformatted="$(gofmt -l .)"
  if [[ -n "$unformatted" ]]; then
    echo "gofmt: these files need formatting:" >&2
    echo "$unformatted" >&2
    return 1
  fi
}

# models.gen.go is generated from the contract (`go generate ./...` here rewrites it): fail when it is stale.
step "models.gen.go up to date with contracts/v1/openapi.json" \
  go run ./internal/cmd/genmodels -check -contract "$repo/contracts/v1/openapi.json" -out models.gen.go
step "gofmt -l" check_gofmt
step "go vet ./..." go vet ./...
step "go test ./... -count=1" go test ./... -count=1 "$@"
echo "test.sh: all passed in $(secs "$start")"
