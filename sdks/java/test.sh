#!/usr/bin/env bash
# The Java SDK's full check, runnable from anywhere: compiles (javadoc lint on the public API as errors), then
# runs the JUnit 5 suite against a real `eai-gpu serve` (started and stopped by the tests), then packages the jar.
#   sdks/java/test.sh                 # any extra arguments go to Maven, e.g. -Dtest=RetryTest
# The server binary: EAI_GPU_BIN, else <repo>/target/debug/eai-gpu, else eai-gpu on PATH; without one the suite
# fails (it is never skipped). Needs Java 17+, Maven 3.8+ and Python 3 (the check that the model records are
# current with contracts/v1/openapi.json, and scripts/sdk/fault_proxy.py the behaviour cases run through).
set -euo pipefail

started=$(date +%s)
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"

summary() {
  local rc=$?
  local elapsed=$(( $(date +%s) - started ))
  local reports="$here/target/surefire-reports"
  if compgen -G "$reports/TEST-*.xml" >/dev/null; then
    # tests="N" errors="N" skipped="N" failures="N" on each suite's root element
    awk 'FNR == 1 { seen = 0 }
         /<testsuite / && !seen {
           seen = 1
           for (i = 1; i <= NF; i++) {
             if ($i ~ /^tests=/)    { gsub(/[^0-9]/, "", $i); t += $i }
             if ($i ~ /^failures=/) { gsub(/[^0-9]/, "", $i); f += $i }
             if ($i ~ /^errors=/)   { gsub(/[^0-9]/, "", $i); e += $i }
             if ($i ~ /^skipped=/)  { gsub(/[^0-9]/, "", $i); s += $i }
             if ($i ~ /^time=/)     { gsub(/[^0-9.]/, "", $i); tm += $i }
           }
           n++
         }
         END { printf "tests: %d in %d classes, failures: %d, errors: %d, skipped: %d (%.1f s in tests)\n", t, n, f, e, s, tm }' \
      "$reports"/TEST-*.xml
  fi
  if [ "$rc" -eq 0 ]; then
    echo "sdks/java/test.sh: PASSED in ${elapsed}s"
  else
    echo "sdks/java/test.sh: FAILED (exit $rc) after ${elapsed}s" >&2
  fi
  exit "$rc"
}
trap summary EXIT

if [ -z "${EAI_GPU_BIN:-}" ]; then
  if [ -x "$repo/target/debug/eai-gpu" ]; then
    EAI_GPU_BIN="$repo/target/debug/eai-gpu"
  elif command -v eai-gpu >/dev/null 2>&1; then
    EAI_GPU_BIN="$(command -v eai-gpu)"
  else
    echo "no eai-gpu binary: set EAI_GPU_BIN, build $repo/target/debug/eai-gpu, or put eai-gpu on PATH" >&2
    exit 1
  fi
fi
export EAI_GPU_BIN
echo "== java: $(java -version 2>&1 | head -1); maven: $(mvn -v 2>/dev/null | head -1 | sed 's/\x1b\[[0-9;]*m//g')"
echo "== server: $EAI_GPU_BIN"

cd "$here"
command -v python3 >/dev/null 2>&1 || { echo "python3 is needed (the models check, scripts/sdk/fault_proxy.py)" >&2; exit 1; }
# the model records are generated from the contract: stale ones fail here (regenerate with the command printed)
python3 codegen/generate_models.py --check
rm -rf target/surefire-reports
mvn -q -B -Dstyle.color=never verify -DEAI_GPU_BIN="$EAI_GPU_BIN" "$@"
test -f target/eai-sdk-0.1.0.jar
