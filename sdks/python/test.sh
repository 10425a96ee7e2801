#!/usr/bin/env bash
# The Python SDK's checks, end to end, from anywhere:
#   1. a virtualenv in sdks/python/.venv (created once, reused), the SDK installed editable with [test]
#   2. the generated models (src/enterprise_ai/_models.py) up to date with contracts/v1/openapi.json
#      (regenerate: python3 sdks/python/codegen/generate.py); ruff, mypy --strict (package, tests, codegen)
#   3. pytest against a real `eai-gpu serve` (binary: $EAI_GPU_BIN, else <repo>/target/debug/eai-gpu,
#      else eai-gpu on PATH -- missing, the tests FAIL)
#   4. sdist + wheel (python -m build), then `pip install <wheel>` into a throwaway virtualenv, imported
#   5. the README's Install (`pip install ./sdks/python`) run as written from the root of a clean copy of the
#      clone (the files git tracks or would add), into a throwaway virtualenv; imported, and the README's
#      Quick start and the seed's snippet pasted into that Python against a real server
# Exits non-zero on any failure; prints how long it took.
#
# Environment: PYTHON (default python3, >= 3.9), EAI_GPU_BIN, PYTEST_ARGS (extra pytest arguments).
set -euo pipefail

START=$(date +%s)
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PYTHON="${PYTHON:-python3}"
VENV="$HERE/.venv"
SCRATCH="$(mktemp -d "${TMPDIR:-/tmp}/enterprise-ai-sdk.XXXXXX")"

elapsed() { echo "$(( $(date +%s) - START ))s"; }
finish() {
  rc=$?
  rm -rf "$SCRATCH"
  if [ "$rc" -eq 0 ]; then
    echo "test.sh: OK in $(elapsed)"
  else
    echo "test.sh: FAILED (exit $rc) after $(elapsed)" >&2
  fi
  exit "$rc"
}
trap finish EXIT
step() { echo; echo "== $* [$(elapsed)]"; }

cd "$HERE"

step "virtualenv $VENV"
if [ ! -x "$VENV/bin/python" ]; then
  "$PYTHON" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip
"$VENV/bin/python" -m pip install -q --disable-pip-version-check -e ".[test]"
"$VENV/bin/python" --version

step "generated models up to date with the contract"
"$VENV/bin/python" codegen/generate.py --check

step "ruff"
"$VENV/bin/ruff" check src tests codegen
"$VENV/bin/ruff" format --check src tests codegen

step "mypy --strict"
"$VENV/bin/mypy" --strict src/enterprise_ai
"$VENV/bin/mypy" --strict src/enterprise_ai tests
"$VENV/bin/mypy" --strict codegen/generate.py

step "pytest (real eai-gpu server)"
# shellcheck disable=SC2086
"$VENV/bin/python" -m pytest -q ${PYTEST_ARGS:-}

step "build sdist + wheel"
rm -rf "$HERE/dist"
"$VENV/bin/python" -m build --sdist --wheel --outdir "$HERE/dist" "$HERE" >"$SCRATCH/build.log" 2>&1 \
  || { cat "$SCRATCH/build.log"; exit 1; }
ls -l "$HERE"/dist
WHEEL="$(ls "$HERE"/dist/enterprise_ai-*.whl)"
"$VENV/bin/python" - "$WHEEL" <<'PY'
import sys, zipfile
names = zipfile.ZipFile(sys.argv[1]).namelist()
for required in ("enterprise_ai/__init__.py", "enterprise_ai/py.typed", "enterprise_ai/usage.py"):
    assert required in names, f"{required} missing from the wheel: {names}"
assert not any(n.startswith("tests/") for n in names), "tests shipped in the wheel"
print("wheel contents OK:", len(names), "files")
PY

import_check() {  # $1: a virtualenv where the SDK was installed
  (cd "$SCRATCH" && "$1/bin/python" - <<'PY'
import importlib.metadata as md
import pathlib
import enterprise_ai
from enterprise_ai import AsyncEnterpriseAI, EnterpriseAI, ValidationError
from enterprise_ai.usage import Emitter

assert enterprise_ai.__version__ == md.version("enterprise-ai") == "0.1.0", enterprise_ai.__version__
assert (pathlib.Path(enterprise_ai.__file__).parent / "py.typed").is_file()
requires = md.requires("enterprise-ai") or []
runtime = [r for r in requires if "extra ==" not in r]
assert len(runtime) == 1 and runtime[0].startswith("httpx"), runtime
client = EnterpriseAI(base_url="http://127.0.0.1:9", api_key="eai_live_installcheck")
assert "installcheck" not in repr(client)
client.close()
print("import OK:", enterprise_ai.__file__)
PY
  )
}

step "pip install <wheel> into a throwaway virtualenv"
"$PYTHON" -m venv "$SCRATCH/venv-wheel"
"$SCRATCH/venv-wheel/bin/python" -m pip install -q --disable-pip-version-check "$WHEEL"
import_check "$SCRATCH/venv-wheel"

step "README's Install, run as written from the root of a clean clone, into a throwaway virtualenv"
# A clean clone holds the files git tracks or would add (not .venv/, dist/, caches): copy those of sdks/python.
CLONE="$SCRATCH/clone"
mkdir -p "$CLONE"
if ROOT="$(git -C "$HERE" rev-parse --show-toplevel 2>/dev/null)"; then
  (cd "$ROOT" && git ls-files -z --cached --others --exclude-standard -- sdks/python \
     | while IFS= read -r -d '' f; do if [ -f "$f" ]; then printf '%s\0' "$f"; fi; done \
     | tar --null -T - -cf -) | tar -C "$CLONE" -xf -
else  # an unpacked sdist: no git, copy the folder without what a build leaves
  mkdir -p "$CLONE/sdks"
  cp -R "$HERE" "$CLONE/sdks/python"
  rm -rf "$CLONE/sdks/python/.venv" "$CLONE/sdks/python/dist"
fi
if [ -e "$CLONE/sdks/python/.venv" ] || [ ! -f "$CLONE/sdks/python/pyproject.toml" ]; then
  echo "the clean copy of sdks/python is not one" >&2; exit 1
fi
# The commands of the README's first code block (under "## Install"), as written.
INSTALL="$(awk '/^## Install/{s=1} s && /^```/{if (b) exit; b=1; next} b' "$HERE/README.md")"
echo "README's Install: $INSTALL"
case "$INSTALL" in *"pip install"*) ;; *) echo "no pip install under ## Install in README.md" >&2; exit 1 ;; esac
"$PYTHON" -m venv "$SCRATCH/venv-readme"
(cd "$CLONE" && PATH="$SCRATCH/venv-readme/bin:$PATH" VIRTUAL_ENV="$SCRATCH/venv-readme" \
   bash -euo pipefail -c "$INSTALL" >"$SCRATCH/install.log" 2>&1) || { cat "$SCRATCH/install.log"; exit 1; }
import_check "$SCRATCH/venv-readme"

step "the README's Quick start and the seed's snippet, pasted into the Python of that virtualenv (real server)"
EAI_SNIPPET_PYTHON="$SCRATCH/venv-readme/bin/python" "$VENV/bin/python" -m pytest -q -p no:cacheprovider \
  tests/test_readme.py tests/test_seed.py
