#!/usr/bin/env bash
# The FinOps Foundation's FOCUS validator, `focus-validator` 2.2.1 from PyPI, in a pinned venv under target/
# (SPEC §10). It declares Python >= 3.12; on Python 3.11 it installs with --ignore-requires-python and runs once
# its one 3.12-only f-string is rewritten as concatenation. It needs numpy >= 2 for its pyarrow, runs with
# --block-download (no network), and reads `focus_validator/rules/currency_codes.csv` from its working folder
# (the copy it ships is used).
#
#   scripts/focus-validator.sh setup                  install (idempotent), print the venv's path
#   scripts/focus-validator.sh run FILE VERSION       validate FILE against the bundled model VERSION
#                                                     (1.2 = the model 1.2.0.1); prints the validator's report
#                                                     and exits non-zero unless every rule passed
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
HOME_DIR="${EAI_FOCUS_VALIDATOR_DIR:-$ROOT/target/focus-validator}"
VENV="$HOME_DIR/venv"
VERSION=2.2.1
PY="${PYTHON:-python3}"

setup() {
    if [ -f "$VENV/.ready-$VERSION" ]; then
        echo "$VENV"
        return
    fi
    rm -rf "$VENV"
    mkdir -p "$HOME_DIR"
    "$PY" -m venv "$VENV"
    "$VENV/bin/pip" install -q --upgrade pip >&2
    # Its dependencies as its pyproject pins them, numpy >= 2 (the pyarrow wheels of today need it).
    "$VENV/bin/pip" install -q "numpy>=2" "pandas>=2,<3" tabulate pyarrow "pydantic>=2.12,<3" \
        "pyyaml>=6.0.3,<7" requests "pandera>=0.26.1,<0.27" "multimethod>=2.0,<2.1" "sqlglot>=27.28.1,<28" \
        "jsonschema>=4.25.1,<5" "pytz>=2025.2" "pandasql>=0.7.3,<0.8" "polars>=1.34.0,<2" "ddt>=1.7.1,<2" \
        "duckdb>=1.4.1,<2" "graphviz>=0.21,<0.22" >&2
    "$VENV/bin/pip" install -q --no-deps --ignore-requires-python "focus-validator==$VERSION" >&2
    local site
    site="$("$VENV/bin/python" -c 'import focus_validator, os; print(os.path.dirname(focus_validator.__file__))')"
    # The one f-string Python 3.11 cannot parse (a backslash inside an f-string expression).
    "$VENV/bin/python" - "$site/config_objects/focus_to_duckdb_converter.py" <<'PY' >&2
import sys
path = sys.argv[1]
text = open(path, encoding="utf-8").read()
old = """", ".join(f"'{k.replace('\\"', '\\"\\"')}'" for k in ignore_keys)"""
new = """", ".join("'" + k.replace('"', '""') + "'" for k in ignore_keys)"""
if old in text:
    text = text.replace(old, new)
    open(path, "w", encoding="utf-8").write(text)
elif new not in text:
    sys.exit(f"focus-validator: the line to rewrite for Python 3.11 is not in {path}")
PY
    "$VENV/bin/python" -c 'import focus_validator.main' >&2
    mkdir -p "$HOME_DIR/work/focus_validator/rules"
    cp "$site/rules/currency_codes.csv" "$HOME_DIR/work/focus_validator/rules/currency_codes.csv"
    touch "$VENV/.ready-$VERSION"
    echo "$VENV"
}

# Validate FILE (CSV or Parquet, by its extension) against the bundled model VERSION (`1.2`), or against the
# model file named by EAI_FOCUS_RULE_SET (`--rule-set-path`). The validator exits 0 even when rules fail, so its
# summary line (`Total: N | Pass: N | Fail: N | Skipped: N`) is read: no failure, and at least one pass.
run() {
    local file="$1" version="$2" venv out summary fails passes
    venv="$(setup)"
    file="$(cd "$(dirname "$file")" && pwd)/$(basename "$file")"
    local extra=()
    if [ -n "${EAI_FOCUS_RULE_SET:-}" ]; then
        extra=(--rule-set-path "$EAI_FOCUS_RULE_SET")
    fi
    out="$(cd "$HOME_DIR/work" && "$venv/bin/python" -m focus_validator.main --data-file "$file" \
        --validate-version "$version" --block-download --output-type console "${extra[@]}" 2>&1)" || {
        printf '%s\n' "$out"
        echo "focus-validator: it failed to run on $file" >&2
        return 1
    }
    printf '%s\n' "$out"
    summary="$(printf '%s\n' "$out" | grep -E '^Total: [0-9]+ \| Pass: [0-9]+ \| Fail: [0-9]+' | tail -1)"
    if [ -z "$summary" ]; then
        echo "focus-validator: no summary line in its report on $file" >&2
        return 1
    fi
    passes="$(printf '%s' "$summary" | sed -E 's/.*Pass: ([0-9]+).*/\1/')"
    fails="$(printf '%s' "$summary" | sed -E 's/.*Fail: ([0-9]+).*/\1/')"
    echo "focus-validator $VERSION, FOCUS $version, $(basename "$file"): $summary"
    [ "$fails" = 0 ] && [ "$passes" -gt 0 ]
}

case "${1:-}" in
setup) setup ;;
run)
    [ $# -eq 3 ] || { echo "usage: $0 run FILE VERSION" >&2; exit 2; }
    run "$2" "$3"
    ;;
*) echo "usage: $0 setup|run FILE VERSION" >&2; exit 2 ;;
esac
