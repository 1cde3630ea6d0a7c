#!/usr/bin/env bash
# scripts/sweep-slurm.sh --local: three array tasks' shards of a 4-point sweep merge into the
# table one `pipetwin sweep` writes (`pipetwin sweep --merge`), in point order; a non-empty
# --out and a --shard among the sweep's arguments are refused with exit 2.
#   sweep_slurm_test.sh BUILD_DIR
set -euo pipefail
source_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export PIPETWIN_BUILD_DIR=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
scenario=$source_dir/scenarios/sim-gpt3-64.json
vary=(--vary training.microbatches=8,16 --vary schedule=gpipe,flush)
"$PIPETWIN_BUILD_DIR/bin/pipetwin" sweep "$scenario" "${vary[@]}" --quiet > "$dir/whole.csv"
"$source_dir/scripts/sweep-slurm.sh" --tasks 3 --out "$dir/out" --local -- "$scenario" "${vary[@]}"
diff "$dir/whole.csv" "$dir/out/sweep.csv" || { echo "merged shards differ"; exit 1; }
cut -d, -f1 "$dir/out/shard-1.csv" | tr '\n' ' ' | grep -qx 'point 1 ' ||
  { echo "shard 1 of 3 should hold point 1 alone:"; cat "$dir/out/shard-1.csv"; exit 1; }
[[ $(ls "$dir/out"/shard-*.csv | wc -l) -eq 3 ]]
rc=0; "$source_dir/scripts/sweep-slurm.sh" --tasks 2 --out "$dir/out" --local -- "$scenario" \
  "${vary[@]}" 2>/dev/null || rc=$?
[[ $rc -eq 2 ]] || { echo "a non-empty --out: exit $rc, expected 2"; exit 1; }
rc=0; "$source_dir/scripts/sweep-slurm.sh" --tasks 2 --out "$dir/other" --local -- "$scenario" \
  "${vary[@]}" --shard 0/2 2>/dev/null || rc=$?
[[ $rc -eq 2 ]] || { echo "--shard among the sweep's arguments: exit $rc, expected 2"; exit 1; }
echo "ok: 3 shards merged into the whole sweep's 4 rows"
