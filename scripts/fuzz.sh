#!/usr/bin/env bash
# Coverage-guided fuzzing (cargo-fuzz, libFuzzer) of the API's sample, usage-event and policy parsers, the
# sampler's Prometheus exposition and DCGM parsers, and the engine on arbitrary valid fleets (fuzz/src/lib.rs says
# what each target checks).
#   scripts/fuzz.sh                 # every target 60 s
#   scripts/fuzz.sh 1800 engine dcgm
# Each run grows fuzz/corpus/<target>/ and appends its time and executions to fuzz/RUNS.tsv (commit both: the
# table is the fuzzing's record; `scripts/fuzz.sh --minimize` shrinks the corpus before a commit). A crash is
# copied to fuzz/regressions/<target>/ (the stable replay runs it from then on) and the script fails.
# Needs the nightly toolchain; cargo-fuzz is installed when missing.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"

targets_all=(samples usage_events policies exposition dcgm engine)

if ! cargo +nightly --version >/dev/null 2>&1; then
  echo "fuzz.sh: no nightly toolchain (rustup toolchain install nightly)" >&2
  exit 2
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "== installing cargo-fuzz"
  cargo install --locked cargo-fuzz
fi

if [ "${1:-}" = "--minimize" ]; then
  shift
  for t in "${@:-${targets_all[@]}}"; do
    before=$(ls "corpus/$t" | wc -l)
    cargo +nightly fuzz cmin "$t" "corpus/$t" >/dev/null 2>&1
    echo "$t: corpus $before -> $(ls "corpus/$t" | wc -l) inputs"
  done
  exit 0
fi

seconds=${1:-60}
shift || true
targets=("${@:-${targets_all[@]}}")

started=$(date +%s)
cargo +nightly fuzz build 2>&1 | tail -1
echo "fuzz build: $(( $(date +%s) - started )) s"

[ -f RUNS.tsv ] || printf 'started_utc\ttarget\tseconds\texecutions\tcorpus\tcrashes\tcommit\n' > RUNS.tsv
commit=$(git describe --always --dirty 2>/dev/null || echo unknown)
failed=()
for t in "${targets[@]}"; do
  mkdir -p "corpus/$t" "artifacts/$t" "regressions/$t"
  log="artifacts/$t/last-run.log"
  at=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  t0=$(date +%s)
  # -timeout: an input slower than 10 s is a finding too; -rss_limit_mb: and one that takes 2 GiB. -max_len: a
  # request body or a scrape of a few KiB reaches every branch; longer inputs only slow the search.
  case $t in exposition|dcgm) max_len=32768 ;; engine) max_len=4096 ;; *) max_len=8192 ;; esac
  set +e
  cargo +nightly fuzz run "$t" "corpus/$t" -- -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -max_len="$max_len" -print_final_stats=1 >"$log" 2>&1
  rc=$?
  set -e
  took=$(( $(date +%s) - t0 ))
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1 || true)
  crashes=0
  for c in "artifacts/$t"/crash-* "artifacts/$t"/timeout-* "artifacts/$t"/oom-* "artifacts/$t"/leak-*; do
    [ -e "$c" ] || continue
    cp "$c" "regressions/$t/"
    rm "$c"
    crashes=$((crashes + 1))
  done
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$at" "$t" "$took" "${execs:-0}" "$(ls "corpus/$t" | wc -l)" "$crashes" \
    "$commit" >> RUNS.tsv
  echo "$t: ${took} s, ${execs:-?} executions, corpus $(ls "corpus/$t" | wc -l), crashes $crashes (rc $rc)"
  if [ "$rc" -ne 0 ] || [ "$crashes" -gt 0 ]; then
    grep -m 20 -E 'panicked|ERROR|SUMMARY|Test unit written' "$log" >&2 || tail -20 "$log" >&2
    failed+=("$t")
  fi
done

# Total time fuzzed per target, over every run recorded.
awk -F'\t' 'NR > 1 { s[$2] += $3; n[$2] += $4 } END { for (t in s) printf "  %-13s %6.1f h in total, %d executions\n", t, s[t] / 3600, n[t] }' RUNS.tsv | sort
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz.sh: ${failed[*]} found a crash; its input is in fuzz/regressions/ (replayed by the stable test)" >&2
  exit 1
fi
