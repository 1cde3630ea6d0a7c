#!/usr/bin/env bash
# A `pipetwin sweep` spread over the machines of a Slurm cluster as a job array: task I of N
# simulates the points whose index is I modulo N (`pipetwin sweep --shard slurm`) into
# DIR/shard-I.csv, and a last job, once every task has ended well, merges the shards
# (`pipetwin sweep --merge`) into DIR/sweep.csv: the table one `pipetwin sweep` writes.
#
#   scripts/sweep-slurm.sh --tasks N --out DIR [--sbatch "OPTIONS"] [--local] \
#       -- SCENARIO --vary PATH=V1,V2,... [--vary ...] [--jobs J]
#
#   --tasks N     array tasks (machines' shares); each runs `--jobs` points at a time (default:
#                 one per core of its machine)
#   --out DIR     a new or empty folder, on a file system every node sees; it gets the job
#                 scripts (sweep.sbatch, merge.sbatch), the shards, sweep.csv and Slurm's logs
#   --sbatch      options for both sbatch calls (partition, time limit, account), e.g.
#                 "--partition=cpu --time=01:00:00"
#   --local       no Slurm: run the N tasks one after another here, with the variables a job
#                 array sets, then merge (to try a sweep's sharding before submitting it)
# Prints the array's and the merge's job ids (sbatch --parsable). The build must exist at the
# same path on the nodes (scripts/build.sh); PIPETWIN_BUILD_DIR chooses another.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${PIPETWIN_BUILD_DIR:-$root/build}
tasks=""
out=""
sbatch_options=""
local_run=0
die() { echo "sweep-slurm.sh: $1" >&2; exit 2; }
while (($#)); do
  case $1 in
    --tasks) tasks=${2:-}; shift 2 ;;
    --out) out=${2:-}; shift 2 ;;
    --sbatch) sbatch_options=${2:-}; shift 2 ;;
    --local) local_run=1; shift ;;
    --) shift; break ;;
    -h|--help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument $1 (see --help; the sweep's own arguments follow --)" ;;
  esac
done
[[ $tasks =~ ^[1-9][0-9]*$ ]] || die "--tasks expects a whole number of at least 1, got \"$tasks\""
[[ -n $out ]] || die "--out DIR is required"
(($#)) || die "the sweep's arguments (SCENARIO --vary ...) follow --"
for a in "$@"; do
  case $a in
    --shard|--shard=*|--csv|--csv=*|--json) die "$a is the script's to set (each task writes its shard)" ;;
  esac
done
if [[ -e $out && -n $(ls -A "$out" 2>/dev/null) ]]; then
  die "$out is not empty: give --out a new folder (nothing is overwritten)"
fi
pipetwin=$build/bin/pipetwin
[[ -x $pipetwin ]] || die "$pipetwin is not built (scripts/build.sh)"
pipetwin=$(cd "$(dirname "$pipetwin")" && pwd)/pipetwin  # the jobs run elsewhere
mkdir -p "$out"
out=$(cd "$out" && pwd)
# The sweep's arguments, quoted for the job scripts; a relative scenario path is resolved here.
args=()
for a in "$@"; do
  if [[ ${#args[@]} -eq 0 && -f $a ]]; then a=$(cd "$(dirname "$a")" && pwd)/$(basename "$a"); fi
  args+=("$(printf '%q' "$a")")
done

cat > "$out/sweep.sbatch" <<EOF
#!/usr/bin/env bash
#SBATCH --job-name=pipetwin-sweep
#SBATCH --array=0-$((tasks - 1))
#SBATCH --output=$out/slurm-%A_%a.log
set -euo pipefail
start=\$(date +%s.%N)
"$pipetwin" sweep ${args[*]} --shard slurm --csv "$out/shard-\$SLURM_ARRAY_TASK_ID.csv"
echo "task \$SLURM_ARRAY_TASK_ID on \$(hostname): \$(awk "BEGIN { print \$(date +%s.%N) - \$start }") s"
EOF
cat > "$out/merge.sbatch" <<EOF
#!/usr/bin/env bash
#SBATCH --job-name=pipetwin-sweep-merge
#SBATCH --output=$out/slurm-merge-%j.log
set -euo pipefail
cd "$out"
shards=()
for ((i = 0; i < $tasks; ++i)); do shards+=("shard-\$i.csv"); done
"$pipetwin" sweep --merge "\${shards[@]}" --csv sweep.csv
echo "merged \$((\$(wc -l < sweep.csv) - 1)) points from $tasks shards into $out/sweep.csv"
EOF
chmod +x "$out/sweep.sbatch" "$out/merge.sbatch"

if ((local_run)); then
  for ((i = 0; i < tasks; ++i)); do
    SLURM_ARRAY_TASK_ID=$i SLURM_ARRAY_TASK_MIN=0 SLURM_ARRAY_TASK_COUNT=$tasks \
      bash "$out/sweep.sbatch" > "$out/slurm-local_$i.log"
  done
  bash "$out/merge.sbatch"
  exit 0
fi
command -v sbatch >/dev/null || die "sbatch not found: run on a Slurm login node, or --local"
# shellcheck disable=SC2086  # the options are words for sbatch
array=$(sbatch --parsable $sbatch_options "$out/sweep.sbatch")
# shellcheck disable=SC2086
merge=$(sbatch --parsable $sbatch_options --dependency=afterok:"${array%%;*}" "$out/merge.sbatch")
echo "sweep-slurm.sh: array job ${array%%;*} ($tasks tasks), merge job ${merge%%;*}; the rows will be in $out/sweep.csv"
