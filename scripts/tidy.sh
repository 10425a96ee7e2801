#!/usr/bin/env bash
# The tree checks itself (as rust-analyzer's tidy tests): cheap checks of the repository's own consistency,
# run by scripts/test.sh before the suites. Each one fails with a message that says what to fix.
#   scripts/tidy.sh            # every check
#   scripts/tidy.sh codemap    # some of them, by name
set -euo pipefail
cd "$(dirname "$0")/.."

checks=("$@")
[ ${#checks[@]} -gt 0 ] || checks=(codemap no-shared)

for check in "${checks[@]}"; do
  started=$(date +%s)
  printf '\n== tidy: %s\n' "$check"
  case "$check" in
    codemap)
      # docs/ARCHITECTURE.md's code map names every module of every crate.
      python3 scripts/tidy/codemap.py ;;
    no-shared)
      # The tests' fixtures live in the repository: nothing reads the steering folder beside the checkout.
      scripts/tidy/no-shared.sh ;;
    *) echo "scripts/tidy.sh: unknown check $check (codemap no-shared)" >&2; exit 2 ;;
  esac
  echo "tidy $check: $(( $(date +%s) - started )) s"
done
