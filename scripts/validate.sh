#!/usr/bin/env bash
# The validation matrix: predicted (simulator) against measured (executor) on this machine.
#
#   scripts/validate.sh [--out DIR] [--no-netns | --netns-only] [--runs N] [--repeat K]
#
# Calibrates the machine once (pipetwin calibrate), then for each scenario of scenarios/validation/
# (copied into DIR/scenarios/) runs `pipetwin compare` on it (the workload profiled here with
# the other cores busy, simulated on the calibrated cluster, run for real); the namespace
# configurations run their workers across two network namespaces on a tbf-shaped link
# (scripts/netns.sh) and predict with the calibrated machine plus that link, at the round trip and
# TCP throughput `netns.sh probe` measures on it. Each comparison is kept in
# DIR/NAME.compare.json (and its files in DIR/runs/NAME/); the table goes to DIR/validation.md and
# DIR/validation.csv. Nothing is fitted to these results: the prediction uses only the profile
# and the calibration. Each configuration runs N times (--runs, default 3) and the run of median
# throughput is compared (a shared machine's speed drifts from run to run). Needs root for the
# namespace rows (else they are left out with a message; --no-netns leaves them out anyway;
# --netns-only runs only them). --repeat K runs the whole matrix K times from scratch (each in
# DIR/rep-k: its own calibration, profiles, predictions and runs) and writes DIR/validation.md
# with each row's prediction and measurement spread over the K repetitions (`pipetwin compare
# --table` on DIR). docs/validation.md has the latest matrices and how long they took.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${PIPETWIN_BUILD_DIR:-$root/build}
out=validation
netns=1
local_rows=1
runs=3
repeat=1
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=${2:?--out needs a folder}; shift 2 ;;
    --no-netns) netns=0; shift ;;
    --netns-only) local_rows=0; shift ;;
    --runs) runs=${2:?--runs needs a number}; shift 2 ;;
    --repeat) repeat=${2:?--repeat needs a number}; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "validate.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
if [ "$local_rows" = 0 ] && { [ "$netns" = 0 ] || [ "$(id -u)" != 0 ]; }; then
  echo "validate.sh: --netns-only needs the namespace rows: root, and no --no-netns" >&2
  exit 2
fi
case "$repeat" in ''|*[!0-9]*|0) echo "validate.sh: --repeat must be a whole number >= 1, got '$repeat'" >&2; exit 2 ;; esac
"$root/scripts/build.sh"
pipetwin="$build/bin/pipetwin"
mkdir -p "$out"
top=$(cd "$out" && pwd)
for f in "$top"/*.compare.json "$top"/rep-*/*.compare.json; do
  [ -e "$f" ] && { echo "validate.sh: $top already holds results ($f); give a new --out" >&2; exit 2; }
done
machine="$(hostname), $(nproc) cores ($(sed -n 's/^model name.*: //p' /proc/cpuinfo | head -1)), $(date -u +%Y-%m-%d)"
# The command as given, for the table's footer (every option that changes which rows ran).
command="scripts/validate.sh --out $(basename "$top")$([ "$netns" = 0 ] && echo " --no-netns")$([ "$local_rows" = 0 ] && echo " --netns-only")$([ "$runs" != 3 ] && echo " --runs $runs")$([ "$repeat" -gt 1 ] && echo " --repeat $repeat")"

matrix() {  # DIR: one matrix from scratch
out=$1
mkdir -p "$out/scenarios" "$out/runs"

echo "calibrating this machine"
"$pipetwin" calibrate --output "$out/cluster.json" --force | sed 's/^/  /'

compare() {  # NAME [compare options]
  local name=$1; shift
  echo "$name"
  "$pipetwin" compare "$out/scenarios/$name.json" --calibration "$out/cluster.json" --json \
    --runs "$runs" --keep "$out/runs/$name" "$@" >"$out/runs/$name.json.tmp"
  mv "$out/runs/$name.json.tmp" "$out/$name.compare.json"
}

# Local configurations (scenarios/validation/, one file each): 2 to 4 stages, every schedule, a
# replicated stage, data parallelism; an MLP of four equal 1024 x 1024 layers (micro-batch 32) or
# a GPT decoder of 6 blocks, hidden 128, 4 heads, 64 tokens (micro-batch 8). A copy of each goes
# into DIR/scenarios/ beside its results.
cp "$root"/scenarios/validation/*.json "$out/scenarios/"
if [ "$local_rows" = 1 ]; then
  for s in "$out"/scenarios/[01]*.json; do compare "$(basename "$s" .json)"; done
fi

# Two hosts on a shaped link: the workers in two network namespaces (scripts/netns.sh), the
# prediction on the calibrated machine split in two servers of one core each, joined by the
# link `netns.sh probe` measures: half its TCP round trip, and its bulk TCP throughput, which is
# what the payload gets of the tbf rate after TCP/IP's headers.
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

"$pipetwin" compare --table "$out" --machine "$machine" --command "$command"
}

if [ "$repeat" = 1 ]; then
  matrix "$top"
else
  for k in $(seq "$repeat"); do
    echo "repetition $k of $repeat"
    matrix "$top/rep-$k" 2>&1 | tee "$top/rep-$k.log"
  done
  "$pipetwin" compare --table "$top" --machine "$machine" --command "$command"
fi
