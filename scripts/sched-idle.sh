#!/usr/bin/env bash
# Where a real run's CPU cores stood idle: records the kernel's scheduler events during
# `pipetwin run SCENARIO` (perf sched record) and prints the share of core time the CPUs were idle
# in the run's steady part, split by what the workers' main threads were doing then (queued on
# a busy CPU; waking up on an idle one; all blocked), and the preemptions of a main thread while
# another CPU was idle. See scripts/sched_idle.py.
#
#   scripts/sched-idle.sh SCENARIO [pipetwin run options] [-- sched_idle.py options]
#
# Needs perf (Debian: linux-perf) and the right to record scheduler tracepoints (root, or
# kernel.perf_event_paranoid <= -1); refuses with exit 2 otherwise. The recording is made in a
# temporary folder and removed; nothing else is written.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${PIPETWIN_BUILD_DIR:-$root/build}

if [[ $# -lt 1 || $1 == -h || $1 == --help ]]; then
  sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'
  [[ $# -lt 1 ]] && exit 2 || exit 0
fi
if ! command -v perf >/dev/null; then
  echo "sched-idle.sh: perf is not installed (Debian: apt-get install linux-perf)" >&2
  exit 2
fi
if [[ ! -x $build/bin/pipetwin ]]; then
  echo "sched-idle.sh: $build/bin/pipetwin is missing: build first (scripts/build.sh)" >&2
  exit 2
fi
run_args=()
analysis_args=()
while [[ $# -gt 0 ]]; do
  if [[ $1 == -- ]]; then
    shift
    analysis_args=("$@")
    break
  fi
  run_args+=("$1")
  shift
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if ! perf sched record -o "$work/perf.data" -- true >"$work/probe.log" 2>&1; then
  echo "sched-idle.sh: perf cannot record scheduler events here (run as root, or set" \
    "kernel.perf_event_paranoid to -1): $(grep -m1 -iE 'error|permission|denied' "$work/probe.log" || tail -n1 "$work/probe.log")" >&2
  exit 2
fi
perf sched record -o "$work/perf.data" -- "$build/bin/pipetwin" run "${run_args[@]}" --json \
  >"$work/report.json" 2>"$work/run.log" || {
  echo "sched-idle.sh: pipetwin run failed: $(grep -v '^\[ perf' "$work/run.log" | tail -n1)" >&2
  exit 1
}
python3 -c 'import json, sys; r = json.load(open(sys.argv[1]))
print("%s: %.1f samples/s measured" % (r["scenario"], r["samples_per_s"]))' "$work/report.json"
perf script -i "$work/perf.data" -F pid,tid,time,cpu,event,trace 2>/dev/null |
  python3 "$root/scripts/sched_idle.py" "${analysis_args[@]}"
