#!/usr/bin/env bash
# Property-based conformance test of a running eai-gpu server against its own OpenAPI document.
#
#   scripts/contracts/schemathesis.sh BASE_URL API_KEY [extra `st run` options...]
#   e.g. scripts/contracts/schemathesis.sh http://127.0.0.1:8080 eai_live_xxx
#
# Loads BASE_URL/openapi.json, sends generated requests to every operation with `Authorization: Bearer API_KEY`
# (use a platform_admin key against a throw-away database: it creates policies, keys and samples), and fails
# (exit code != 0) when a response is a 5xx, has a status the document does not list, or does not match the
# documented schema, headers (X-Request-Id) or content type.
#
# Installs schemathesis (pinned, v4 CLI) into target/schemathesis-venv on first use, or with `pip --user` when
# no venv can be made. Knobs (environment):
#   ST_CHECKS        checks to run (default below; `all` adds positive/negative_data_acceptance, auth checks...)
#   ST_MAX_EXAMPLES  generated cases per operation (default 30)
#   ST_MODE          positive | negative | all (default all)
#   ST_PHASES        examples,coverage,fuzzing,stateful (default: all four)
#   ST_SEED          random seed (default 1; set ST_SEED= to pick a random one)
#   ST_VERSION       schemathesis version (default 4.32.5)
#   ST_REPORT_DIR    JUnit report directory (default target/schemathesis-report)
set -euo pipefail

if [[ $# -lt 2 || "$1" == "-h" || "$1" == "--help" ]]; then
  sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
BASE_URL="${1%/}"
API_KEY="$2"
shift 2

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
ST_VERSION="${ST_VERSION:-4.32.5}"
VENV="$ROOT/target/schemathesis-venv"
CHECKS="${ST_CHECKS:-not_a_server_error,status_code_conformance,response_schema_conformance,response_headers_conformance,content_type_conformance}"
MAX_EXAMPLES="${ST_MAX_EXAMPLES:-30}"
MODE="${ST_MODE:-all}"
PHASES="${ST_PHASES:-examples,coverage,fuzzing,stateful}"
SEED="${ST_SEED-1}"
REPORT_DIR="${ST_REPORT_DIR:-$ROOT/target/schemathesis-report}"

st_ok() { "$1" --version 2>/dev/null | grep -q "version ${ST_VERSION}\$"; }

ST=""
if st_ok "$VENV/bin/st"; then
  ST="$VENV/bin/st"
else
  echo "schemathesis.sh: installing schemathesis==${ST_VERSION} into ${VENV}" >&2
  if python3 -m venv "$VENV" >/dev/null 2>&1 \
     && "$VENV/bin/pip" install --quiet --disable-pip-version-check "schemathesis==${ST_VERSION}" \
     && st_ok "$VENV/bin/st"; then
    ST="$VENV/bin/st"
  else
    echo "schemathesis.sh: no venv; trying pip install --user" >&2
    PIP_ROOT_USER_ACTION=ignore python3 -m pip install --quiet --disable-pip-version-check --user "schemathesis==${ST_VERSION}"
    USER_ST="$(python3 -m site --user-base)/bin/st"
    if st_ok "$USER_ST"; then
      ST="$USER_ST"
    else
      echo "schemathesis.sh: could not install schemathesis==${ST_VERSION}" >&2
      exit 3
    fi
  fi
fi

mkdir -p "$REPORT_DIR"
args=(
  run "${BASE_URL}/openapi.json"
  --url "${BASE_URL}"
  --header "Authorization: Bearer ${API_KEY}"
  --checks "${CHECKS}"
  --max-examples "${MAX_EXAMPLES}"
  --mode "${MODE}"
  --phases "${PHASES}"
  --wait-for-schema 30
  --request-timeout 30
  --report junit
  --report-dir "${REPORT_DIR}"
  --no-color
)
if [[ -n "${SEED}" ]]; then
  args+=(--seed "${SEED}")
fi

echo "+ st ${args[*]/Bearer ${API_KEY}/Bearer ***} $*" >&2
exec "$ST" "${args[@]}" "$@"
