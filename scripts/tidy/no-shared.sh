#!/usr/bin/env bash
# Everything the tests read lives in the repository: no code, test, script or SDK reaches outside it for
# fixtures (the steering folder beside a checkout is not there on a fresh clone).
set -euo pipefail
cd "$(dirname "$0")/../.."
pattern='(\.\./)+shared(/|\b)|/work/shared'
hits=$(git ls-files -z --cached --others --exclude-standard -- crates sdks scripts examples fixtures contracts deploy .ci \
  | grep -zv '^scripts/tidy/no-shared.sh$' \
  | xargs -0 grep -nE "$pattern" -- 2>/dev/null || true)
if [ -n "$hits" ]; then
  echo "these lines read outside the repository (shared/ is not part of a clone); move what they need into" >&2
  echo "fixtures/ and read it from there:" >&2
  echo "$hits" >&2
  exit 1
fi
echo "ok: nothing reads outside the repository (no ../shared)"
