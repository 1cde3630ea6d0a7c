#!/usr/bin/env bash
# The executor's long runs (not in CTest):
#   scripts/exec-long.sh [EPOCHS]   Fashion-MNIST convergence: an MLP (784-256-256-10) trained
#                                   sequentially, with PipeDream-Flush and with PipeDream-2BW in
#                                   two stages, on the same samples; prints the test accuracies
#                                   (default 10 epochs; the CI test runs 3.2 with a narrower MLP)
#   scripts/exec-long.sh --bench    the 2-core speed benchmark: a balanced 2-stage 1F1B pipeline
#                                   against the bound 1/(slowest stage) that `pipetwin profile`
#                                   measures, and the executor's own overhead. Two bounds: the
#                                   layers profiled alone on an idle machine, and profiled with
#                                   the other core computing too (--concurrent 2), as the two
#                                   workers of the pipeline run
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${PIPETWIN_BUILD_DIR:-$root/build}
"$root/scripts/build.sh"
pipetwin="$build/bin/pipetwin"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [ "${1:-}" = "--bench" ]; then
  scenario="$root/tests/exec/bench-mlp-2stage-2bw.json"
  "$pipetwin" profile "$scenario" --repeats 30 --warmup 10 | tee "$work/alone.txt"
  "$pipetwin" profile "$scenario" --repeats 30 --warmup 10 --concurrent 2 | tee "$work/loaded.txt"
  alone=$(sed -n 's/^  bound: \([0-9.]*\) samples\/s.*/\1/p' "$work/alone.txt")
  loaded=$(sed -n 's/^  bound: \([0-9.]*\) samples\/s.*/\1/p' "$work/loaded.txt")
  "$pipetwin" run "$scenario" --warmup 2 | tee "$work/run.txt"
  rate=$(sed -n 's/^throughput *\([0-9.]*\) samples\/s.*/\1/p' "$work/run.txt")
  awk -v r="$rate" -v a="$alone" -v l="$loaded" 'BEGIN {
    printf "\nbenchmark: %.1f samples/s = %.1f%% of the bound %.1f (layers profiled with the other core busy)\n", r, 100 * r / l, l
    printf "           %.1f%% of the bound %.1f (layers profiled alone on an idle machine)\n", 100 * r / a, a }'
  exit 0
fi

epochs=${1:-10}
iterations=$(( epochs * 60000 / 128 ))
run() {  # NAME SCHEDULE STAGES-JSON
  cat >"$work/$1.json" <<JSON
{"name": "fashion-mnist $1",
 "workload": {"generator": "mlp", "layers": 3, "input": 784, "width": 256, "classes": 10, "batch": 32},
 "cluster": {"name": "this machine", "device": {"name": "CPU", "memory_bytes": 8e9},
             "levels": [{"name": "host", "count": 2, "bandwidth_gbps": 40, "latency_us": 20, "link": "loopback"}]},
 "plan": {"planner": "manual", "stages": $3},
 "schedule": "$2",
 "training": {"microbatch_size": 32, "microbatches": 4, "iterations": $iterations,
              "optimizer": "adam", "learning_rate": 0.0002}}
JSON
  "$pipetwin" run "$work/$1.json" --data fashion-mnist --evaluate | sed -n "s/^accuracy/$1 accuracy/p"
}
echo "Fashion-MNIST, $epochs epochs ($iterations iterations of 128 samples):"
run sequential flush '[{"first_layer": 0, "last_layer": 2, "devices": [0]}]'
run flush flush '[{"first_layer": 0, "last_layer": 0, "devices": [0]}, {"first_layer": 1, "last_layer": 2, "devices": [1]}]'
run 2bw 2bw '[{"first_layer": 0, "last_layer": 0, "devices": [0]}, {"first_layer": 1, "last_layer": 2, "devices": [1]}]'
