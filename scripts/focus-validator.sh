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
#   scripts/focus-validator.sh conform CSV VERSION [RULE...]
#                                                     a FOCUS export (CSV) of VERSION 1.2 or 1.3 checked as far as
#                                                     can be here: 1.2 by the official 1.2 model; 1.3 by
#                                                     scripts/focus13.py (its additions, from the 1.3 text: no
#                                                     1.3 model ships with the validator) and by the official
#                                                     1.2 model on the file without 1.3's new columns. Prints the
#                                                     report and `failing: RULE...`; exits 0 when the failing rules
#                                                     are exactly RULE... (none given: none) and at least
#                                                     EAI_FOCUS_MIN_PASS (136) passed.
#
# Why a rule may be expected to fail: the 1.2.0.1 model checks InvoiceId-C-004-C ("null when not invoiced") and
# InvoiceId-C-005-C ("not null when invoiced") without their conditions, over the whole column, so no file passes
# both: rows without a statement fail only C-005, rows all invoiced only C-004 (a mix fails C-003 too).
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
    mkdir -p "$HOME_DIR"
    # Tests set it up side by side: one installs, the others wait for it and find it ready.
    exec 9>"$HOME_DIR/.setup.lock"
    flock 9
    if [ -f "$VENV/.ready-$VERSION" ]; then
        echo "$VENV"
        return
    fi
    rm -rf "$VENV"
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

conform() {
    local file="$1" version="$2" target out summary passes failing expected tmp=""
    shift 2
    case "$version" in
    1.2) target="$file" ;;
    1.3)
        "$PY" "$ROOT/scripts/focus13.py" check "$file" || return 1
        tmp="$(mktemp "${TMPDIR:-/tmp}/focus-1.3-as-1.2.XXXXXX.csv")"
        "$PY" "$ROOT/scripts/focus13.py" strip "$file" "$tmp"
        target="$tmp"
        ;;
    *) echo "focus-validator: no way to check FOCUS $version here (1.2 or 1.3)" >&2; return 2 ;;
    esac
    out="$(run "$target" 1.2 2>&1)" || true
    [ -n "$tmp" ] && rm -f "$tmp"
    printf '%s\n' "$out"
    summary="$(printf '%s\n' "$out" | grep -E '^Total: [0-9]+ \| Pass: [0-9]+ \| Fail: [0-9]+' | tail -1)"
    if [ -z "$summary" ]; then
        echo "focus-validator: no summary line in its report on $file" >&2
        return 1
    fi
    passes="$(printf '%s' "$summary" | sed -E 's/.*Pass: ([0-9]+).*/\1/')"
    failing="$(printf '%s\n' "$out" | sed -nE 's/^❌ ([A-Za-z0-9_.-]+):.*/\1/p' | sort -u | tr '\n' ' ' | sed 's/ $//')"
    expected="$(printf '%s\n' "$@" | sed '/^$/d' | sort -u | tr '\n' ' ' | sed 's/ $//')"
    echo "failing: ${failing}"
    if [ "$failing" != "$expected" ]; then
        echo "focus-validator: FOCUS $version, $(basename "$file"): failing rules [${failing}], expected [${expected}]" >&2
        return 1
    fi
    if [ "$passes" -lt "${EAI_FOCUS_MIN_PASS:-136}" ]; then
        echo "focus-validator: FOCUS $version, $(basename "$file"): $passes rules passed, fewer than ${EAI_FOCUS_MIN_PASS:-136}" >&2
        return 1
    fi
}

case "${1:-}" in
setup) setup ;;
run)
    [ $# -eq 3 ] || { echo "usage: $0 run FILE VERSION" >&2; exit 2; }
    run "$2" "$3"
    ;;
conform)
    [ $# -ge 3 ] || { echo "usage: $0 conform CSV VERSION [RULE...]" >&2; exit 2; }
    conform "${@:2}"
    ;;
*) echo "usage: $0 setup|run FILE VERSION|conform CSV VERSION [RULE...]" >&2; exit 2 ;;
esac
