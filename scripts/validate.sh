#!/usr/bin/env bash
# The validation matrix: predicted (simulator) against measured (executor) on this machine.
#
#   scripts/validate.sh [--out DIR] [--no-netns | --netns-only] [--runs N]
#
# Calibrates the machine once (pipetwin calibrate), then for each configuration below writes its
# scenario into DIR/scenarios/ and runs `pipetwin compare` on it (the workload profiled here with
# the other cores busy, simulated on the calibrated cluster, run for real); the namespace
# configurations run their workers across two network namespaces on a tbf-shaped link
# (scripts/netns.sh) and predict with the calibrated machine plus that link, at the round trip and
# TCP throughput `netns.sh probe` measures on it. Each comparison is kept in
# DIR/NAME.compare.json (and its files in DIR/runs/NAME/); the table goes to DIR/validation.md and
# DIR/validation.csv. Nothing is fitted to these results: the prediction
# uses only the profile and the calibration. Each configuration runs N times (--runs, default 3)
# and the run of median throughput is compared (the machine's speed drifts 5-7% from run to run).
# Needs root for the namespace rows (else they are left out with a message; --no-netns leaves
# them out anyway; --netns-only runs only them). About 5.5 minutes here.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${PIPETWIN_BUILD_DIR:-$root/build}
out=validation
netns=1
local_rows=1
runs=3
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=${2:?--out needs a folder}; shift 2 ;;
    --no-netns) netns=0; shift ;;
    --netns-only) local_rows=0; shift ;;
    --runs) runs=${2:?--runs needs a number}; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "validate.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
if [ "$local_rows" = 0 ] && { [ "$netns" = 0 ] || [ "$(id -u)" != 0 ]; }; then
  echo "validate.sh: --netns-only needs the namespace rows: root, and no --no-netns" >&2
  exit 2
fi
"$root/scripts/build.sh"
pipetwin="$build/bin/pipetwin"
mkdir -p "$out/scenarios" "$out/runs"
out=$(cd "$out" && pwd)
for f in "$out"/*.compare.json; do
  [ -e "$f" ] && { echo "validate.sh: $out already holds results ($f); give a new --out" >&2; exit 2; }
done

echo "calibrating this machine"
"$pipetwin" calibrate --output "$out/cluster.json" --force | sed 's/^/  /'

# Models. MLP: four equal 1024 x 1024 layers (micro-batch 32); GPT: a decoder of 6 blocks,
# hidden 128, 4 heads, 64 tokens (8 layers with embedding and head; micro-batch 8).
mlp='{"generator": "mlp", "layers": 4, "input": 1024, "width": 1024, "classes": 1024, "batch": 32}'
gpt='{"generator": "gpt", "layers": 6, "hidden": 128, "heads": 4, "sequence": 64, "vocabulary": 1024, "microbatch": 8, "dtype_bytes": 4}'

stage() {  # FIRST LAST DEVICES...
  local first=$1 last=$2; shift 2
  local devices; devices=$(IFS=,; echo "$*")
  echo "{\"first_layer\": $first, \"last_layer\": $last, \"replicas\": $#, \"devices\": [$devices]}"
}

# scenario NAME MODEL SCHEDULE MICROBATCH M ITERATIONS OPTIMIZER DEVICES STAGE...
scenario() {
  local name=$1 model=$2 schedule=$3 mb=$4 m=$5 iterations=$6 optimizer=$7 devices=$8
  shift 8
  local stages; stages=$(IFS=,; echo "$*")
  local workload; [ "$model" = mlp ] && workload=$mlp || workload=$gpt
  cat >"$out/scenarios/$name.json" <<JSON
{"name": "validation $name",
 "workload": $workload,
 "cluster": {"name": "this machine", "device": {"name": "CPU", "memory_bytes": 8e9},
             "levels": [{"name": "host", "count": $devices, "bandwidth_gbps": 40, "latency_us": 20, "link": "loopback"}]},
 "plan": {"planner": "manual", "schedule": "$schedule", "microbatch_size": $mb, "microbatches_per_update": $m,
          "stages": [$stages]},
 "schedule": "$schedule",
 "training": {"microbatch_size": $mb, "microbatches": $m, "iterations": $iterations,
              "optimizer": "$optimizer", "learning_rate": 0.001}}
JSON
}

compare() {  # NAME [compare options]
  local name=$1; shift
  echo "$name"
  "$pipetwin" compare "$out/scenarios/$name.json" --calibration "$out/cluster.json" --json \
    --runs "$runs" --keep "$out/runs/$name" "$@" >"$out/runs/$name.json.tmp"
  mv "$out/runs/$name.json.tmp" "$out/$name.compare.json"
}

# Local configurations: 2 to 4 stages, every schedule, a replicated stage, data parallelism.
scenario 01-mlp-2s-gpipe     mlp gpipe     32 8 20 sgd      2 "$(stage 0 1 0)" "$(stage 2 3 1)"
scenario 02-mlp-2s-flush     mlp flush     32 8 20 adam     2 "$(stage 0 1 0)" "$(stage 2 3 1)"
scenario 03-mlp-2s-pipedream mlp pipedream 32 2 40 momentum 2 "$(stage 0 1 0)" "$(stage 2 3 1)"
scenario 04-mlp-2s-2bw       mlp 2bw       32 8 20 sgd      2 "$(stage 0 1 0)" "$(stage 2 3 1)"
scenario 05-mlp-3s-flush     mlp flush     32 8 20 adam     3 "$(stage 0 1 0)" "$(stage 2 2 1)" "$(stage 3 3 2)"
scenario 06-mlp-4s-gpipe     mlp gpipe     32 8 20 sgd      4 "$(stage 0 0 0)" "$(stage 1 1 1)" "$(stage 2 2 2)" "$(stage 3 3 3)"
scenario 07-mlp-replicated   mlp flush     32 8 20 sgd      3 "$(stage 0 1 0 1)" "$(stage 2 3 2)"
scenario 08-mlp-data-parallel mlp flush    32 8 20 sgd      2 "$(stage 0 3 0 1)"
scenario 09-gpt-2s-flush     gpt flush     8  8 20 adam     2 "$(stage 0 3 0)" "$(stage 4 7 1)"
scenario 10-gpt-2s-pipedream gpt pipedream 8  2 40 sgd      2 "$(stage 0 3 0)" "$(stage 4 7 1)"
scenario 11-gpt-4s-2bw       gpt 2bw       8  8 20 adam     4 "$(stage 0 1 0)" "$(stage 2 3 1)" "$(stage 4 5 2)" "$(stage 6 7 3)"
scenario 12-gpt-3s-gpipe     gpt gpipe     8  8 20 sgd      3 "$(stage 0 2 0)" "$(stage 3 5 1)" "$(stage 6 7 2)"
if [ "$local_rows" = 1 ]; then
  for s in "$out"/scenarios/[01]*.json; do compare "$(basename "$s" .json)"; done
fi

# Two hosts on a shaped link: the workers in two network namespaces (scripts/netns.sh), the
# prediction on the calibrated machine split in two servers of one core each, joined by the
# link `netns.sh probe` measures: half its TCP round trip, and its bulk TCP throughput, which is
# what the payload gets of the tbf rate after TCP/IP's headers (951 of 1000 Mbit/s here).
if [ "$netns" = 1 ] && [ "$(id -u)" != 0 ]; then
  echo "validate.sh: not root: the namespace configurations are left out" >&2
  netns=0
fi
if [ "$netns" = 1 ]; then
  ns="$root/scripts/netns.sh"
  export PIPETWIN_NETNS_ID=${PIPETWIN_NETNS_ID:-31}
  trap '"$ns" down >/dev/null 2>&1 || true' EXIT
  for rate in 1000 100; do
    "$ns" up 2 --rate "${rate}mbit" >/dev/null
    probe=$("$ns" probe --json)
    rtt_us=$(sed -n 's/.*"rtt_us": *\([0-9.e+-]*\).*/\1/p' <<<"$probe")
    bits=$(sed -n 's/.*"throughput_bits_per_s": *\([0-9.e+-]*\).*/\1/p' <<<"$probe")
    latency_us=$(awk -v r="${rtt_us:-100}" 'BEGIN { print r / 2 }')
    link_gbps=$(awk -v b="${bits:-0}" -v r="$rate" 'BEGIN { print (b > 0 ? b : r * 1e6) / 1e9 }')
    for base in 02-mlp-2s-flush 08-mlp-data-parallel; do
      name="ns-${rate}mbit-${base#0?-}"
      cp "$out/scenarios/$base.json" "$out/scenarios/$name.json"
      echo "$name (2 namespaces, tbf ${rate} Mbit/s: TCP ${link_gbps} Gbit/s, ${latency_us:-?} us one way)"
      measured=()
      for k in $(seq "$runs"); do
        "$ns" run "$out/scenarios/$name.json" --json >"$out/runs/$name.measured-$k.json"
        measured+=(--measured "$out/runs/$name.measured-$k.json")
      done
      "$pipetwin" compare "$out/scenarios/$name.json" --calibration "$out/cluster.json" \
        --hosts 2 --link-gbps "$link_gbps" \
        --link-latency-us "${latency_us:-50}" "${measured[@]}" \
        --json --keep "$out/runs/$name" >"$out/runs/$name.json.tmp"
      mv "$out/runs/$name.json.tmp" "$out/$name.compare.json"
    done
    "$ns" down >/dev/null
  done
fi

"$pipetwin" compare --table "$out" \
  --machine "$(hostname), $(nproc) cores ($(sed -n 's/^model name.*: //p' /proc/cpuinfo | head -1)), $(date -u +%Y-%m-%d)" \
  --command "scripts/validate.sh --out $(basename "$out")"
