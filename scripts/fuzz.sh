#!/usr/bin/env bash
# Runs every libFuzzer target of tests/fuzz/ (built by scripts/sanitize.sh) for SECONDS each
# (default 60), from the seed corpora in tests/fuzz/corpus/ (and the repo's scenarios and
# PipeDream fixtures), growing a corpus of its own in build-sanitize/fuzz-corpus/. A finding is
# a crash, a sanitizer report, an exception other than a located InputError, more than 1 GB of
# memory or 10 s on one input; libFuzzer writes the input to build-sanitize/fuzz-findings/ and
# this script exits 1 naming it: add it to tests/fuzz/regressions/ (the suite replays them).
#   scripts/fuzz.sh [SECONDS] [TARGET...]      e.g. scripts/fuzz.sh 1800 scenario plan
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${PIPETWIN_SANITIZE_DIR:-$root/build-sanitize}
seconds=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(scenario workload cluster plan graph schedule_csv)
"$root/scripts/sanitize.sh" --build-only >/dev/null
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1
findings=0
for t in "${targets[@]}"; do
  corpus="$build/fuzz-corpus/$t"
  out="$build/fuzz-findings/$t"
  mkdir -p "$corpus" "$out"
  seeds=("$root/tests/fuzz/corpus/$t")
  [ "$t" = scenario ] && seeds+=("$root/scenarios")
  [ -d "$root/tests/fuzz/regressions/$t" ] && seeds+=("$root/tests/fuzz/regressions/$t")
  log="$build/fuzz-$t.log"
  # Run from an empty folder: a scenario may name workload files relative to itself.
  if (cd "$out" && "$build/tests/fuzz/fuzz_$t" -max_total_time="$seconds" -rss_limit_mb=1024 \
        -timeout=10 -max_len=65536 -artifact_prefix="$out/" -print_final_stats=1 \
        "$corpus" "${seeds[@]}" >"$log" 2>&1); then
    echo "fuzz.sh: $t: $(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "$log" |
      grep -o '[0-9]*$') runs in ${seconds} s, nothing found"
  else
    findings=$((findings + 1))
    echo "fuzz.sh: $t: FOUND $(ls -t "$out" | head -1) ($log):"
    grep -m3 -E "ERROR|SUMMARY|InputError that names|terminate|runtime error" "$log" | sed 's/^/  /'
  fi
done
exit $(( findings > 0 ))
