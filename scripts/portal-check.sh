#!/usr/bin/env bash
# The portal's own checks, no browser needed: its ES modules type-checked (tsc --noEmit --checkJs, JSDoc types,
# crates/api/assets/portal/tsconfig.json), then the unit tests of crates/api/portal-tests/ (node --test, no
# dependency: format.js's exact money and rounding, the policy form's checks).
#   scripts/portal-check.sh
# Needs Node >= 20 with npm. TypeScript (pinned) is installed once into target/portal-check/; a later run uses it
# as it is there (no network), and an install prefers npm's cache.
set -euo pipefail
cd "$(dirname "$0")/.."

TS_VERSION=5.9.3
tools=target/portal-check
tsc="$tools/node_modules/typescript/bin/tsc"

installed=$(node -p "try { require('./$tools/node_modules/typescript/package.json').version } catch { '' }")
if [ "$installed" != "$TS_VERSION" ]; then
  echo "== installing typescript@$TS_VERSION into $tools"
  mkdir -p "$tools"
  [ -f "$tools/package.json" ] || echo '{ "private": true, "name": "portal-check" }' > "$tools/package.json"
  npm install --prefix "$tools" --no-save --no-audit --no-fund --prefer-offline "typescript@$TS_VERSION" >/dev/null
fi

echo "== portal: tsc --noEmit --checkJs ($("$tsc" --version))"
node "$tsc" -p crates/api/assets/portal/tsconfig.json
echo "ok: the portal's modules type-check"

echo "== portal: node --test crates/api/portal-tests/"
node --test crates/api/portal-tests/
