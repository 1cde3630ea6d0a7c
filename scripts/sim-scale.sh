#!/usr/bin/env bash
# How the simulator's cost grows with the cluster: GPT-3 175B, one iteration of 64 micro-batches
# per pipeline, on 1,024, 4,096 and 16,384 A100s (DGX servers of 8), as 16 stages, 64 stages and
# Megatron-LM's TP 8 x PP 16; per run the wall time, peak RSS, SimGrid activities and the
# replicas simulated, and the growth exponent of the wall time between GPU counts (beside
# n log n's). scripts/sim_scale.py says how.
#
#   scripts/sim-scale.sh [--out DIR] [--gpus 1024,4096,16384] [--configs pp16,pp64,tp8-pp16]
#                        [--full] [--full-max N]
#
#   --full      also simulate every replica event by event (--no-symmetry), up to --full-max
#               GPUs (default 4096; 16,384 that way takes minutes and several GB)
# Writes DIR/sim-scale.md (the table, also printed), DIR/sim-scale.json and the scenarios with
# their outputs; DIR (default sim-scale) must be new or empty. Nothing else is written.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${PIPETWIN_BUILD_DIR:-$root/build}
out=sim-scale
pass=()
die() { echo "sim-scale.sh: $1" >&2; exit 2; }
while (($#)); do
  case $1 in
    --out) out=${2:?--out needs a folder}; shift 2 ;;
    --gpus|--configs|--full-max|--timeout) [[ $# -ge 2 ]] || die "$1 needs a value"
      pass+=("$1" "$2"); shift 2 ;;
    --full) pass+=(--full); shift ;;
    -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument $1 (see --help)" ;;
  esac
done
if [[ -e $out && -n $(ls -A "$out" 2>/dev/null) ]]; then
  die "$out is not empty: give --out a new folder (nothing is overwritten)"
fi
"$root/scripts/build.sh" >/dev/null
mkdir -p "$out"
echo "sim-scale.sh: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(date -u '+%Y-%m-%d %H:%M UTC')" >&2
python3 "$root/scripts/sim_scale.py" --pipetwin "$build/bin/pipetwin" --out "$out" ${pass[@]+"${pass[@]}"}
