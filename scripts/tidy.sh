#!/usr/bin/env bash
# The tree checks itself (as rust-analyzer's tidy tests): cheap checks of the repository's own consistency,
# run by scripts/test.sh before the suites. Each one fails with a message that says what to fix.
#   scripts/tidy.sh            # every check
#   scripts/tidy.sh codemap    # some of them, by name
set -euo pipefail
cd "$(dirname "$0")/.."

# cargo-machete, pinned; installed (from crates.io, built here) once per machine into ~/.cargo/bin.
MACHETE_VERSION=0.9.2

checks=("$@")
[ ${#checks[@]} -gt 0 ] || checks=(codemap circles no-shared machete doc)

for check in "${checks[@]}"; do
  started=$(date +%s)
  printf '\n== tidy: %s\n' "$check"
  case "$check" in
    codemap)
      # docs/ARCHITECTURE.md's code map names every module of every crate.
      python3 scripts/tidy/codemap.py ;;
    circles)
      # No import circle between the files of a crate, but those listed in scripts/tidy/circles-allowed.txt
      # (a list that only shrinks).
      python3 scripts/tidy/circles.py ;;
    no-shared)
      # The tests' fixtures live in the repository: nothing reads the steering folder beside the checkout.
      scripts/tidy/no-shared.sh ;;
    machete)
      # No unused dependency in any Cargo.toml.
      if [ "$(cargo-machete --version 2>/dev/null || true)" != "$MACHETE_VERSION" ]; then
        cargo install cargo-machete --version "$MACHETE_VERSION" --locked --quiet
      fi
      cargo-machete --with-metadata || {
        echo "cargo-machete: remove the unused dependencies above from their Cargo.toml (or, for one used" >&2
        echo "only through a macro or a feature, list it under [package.metadata.cargo-machete] ignored = [...])" >&2
        exit 1
      } ;;
    doc)
      # The API docs build without a warning (broken intra-doc links, bad code blocks, private links).
      # Twice: the features' code (nvml, test support, bench) has docs too, and so has what they leave out.
      for features in "" --all-features; do
        RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps $features --quiet || {
          echo "cargo doc --workspace --no-deps $features: fix the warnings above (RUSTDOCFLAGS=-D warnings)" >&2
          exit 1
        }
      done
      echo "ok: cargo doc --workspace --no-deps, with and without --all-features, no warning" ;;
    *) echo "scripts/tidy.sh: unknown check $check (codemap circles no-shared machete doc)" >&2; exit 2 ;;
  esac
  echo "tidy $check: $(( $(date +%s) - started )) s"
done
