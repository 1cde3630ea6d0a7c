#!/usr/bin/env bash
# A sweep as a real Slurm job array: a one-node Slurm cluster (Debian's slurm-wlm: slurmctld and
# slurmd on this machine, on ports of their own, with munge) runs scripts/sweep-slurm.sh's array
# of 3 tasks and its merge job; the merged table must equal one unsharded `pipetwin sweep`.
# Skipped (77), saying why, where Slurm or munge is not installed or the test is not root
# (slurmd starts jobs as their users).
#   slurm_sweep_test.sh BUILD_DIR
set -euo pipefail
source_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export PIPETWIN_BUILD_DIR=$1
for tool in slurmctld slurmd sbatch squeue sinfo scontrol munged munge; do
  command -v "$tool" >/dev/null || PATH=$PATH:/usr/sbin
  command -v "$tool" >/dev/null || { echo "skipped: no $tool (scripts/install-deps.sh installs slurm-wlm and munge)"; exit 77; }
done
[[ $(id -u) -eq 0 ]] || { echo "skipped: slurmd needs root"; exit 77; }

dir=$(mktemp -d)
chmod 755 "$dir"
export SLURM_CONF=$dir/slurm.conf
started_munge=0
cleanup() {
  scontrol shutdown >/dev/null 2>&1 || true
  ((started_munge)) && pkill -x munged 2>/dev/null
  for pid in "$dir"/*.pid; do [[ -f $pid ]] && kill "$(cat "$pid")" 2>/dev/null || true; done
  sleep 1
  rm -rf "$dir"
}
trap cleanup EXIT
if ! munge -n >/dev/null 2>&1; then
  mkdir -p /run/munge && chown munge:munge /run/munge 2>/dev/null || true
  munged --force 2>/dev/null || { echo "skipped: munged does not start"; exit 77; }
  started_munge=1
fi
node=$(hostname -s)
port=$((20000 + RANDOM % 20000))
memory=$(awk '/MemTotal/ { print int($2 / 1024 / 2) }' /proc/meminfo)
mkdir -p "$dir/state" "$dir/spool"
cat > "$SLURM_CONF" <<CONF
ClusterName=pipetwin-test
SlurmctldHost=$node
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
ReturnToService=2
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmdSpoolDir=$dir/spool
StateSaveLocation=$dir/state
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
NodeName=$node CPUs=$(nproc) RealMemory=$memory State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
slurmctld -f "$SLURM_CONF" -i
slurmd -f "$SLURM_CONF"
for _ in $(seq 60); do
  [[ $(sinfo -h -o %t 2>/dev/null) == idle ]] && break
  sleep 0.5
done
[[ $(sinfo -h -o %t 2>/dev/null) == idle ]] ||
  { echo "the one-node cluster did not come up:"; tail -5 "$dir/slurmctld.log" "$dir/slurmd.log"; exit 1; }

scenario=$source_dir/scenarios/sim-gpt3-1024.json
vary=(--vary schedule=gpipe,flush --vary training.microbatches=32,64 --vary cluster.servers=128,256)
"$PIPETWIN_BUILD_DIR/bin/pipetwin" sweep "$scenario" "${vary[@]}" --quiet > "$dir/whole.csv"
start=$(date +%s.%N)
"$source_dir/scripts/sweep-slurm.sh" --tasks 3 --out "$dir/out" -- "$scenario" "${vary[@]}" --jobs 1
for _ in $(seq 240); do
  [[ -f $dir/out/sweep.csv ]] && break
  [[ -n $(squeue -h 2>/dev/null) ]] || { sleep 0.5; [[ -f $dir/out/sweep.csv ]] && break; echo "the jobs ended without a merged table:"; cat "$dir"/out/slurm-*.log; exit 1; }
  sleep 0.5
done
[[ -f $dir/out/sweep.csv ]] || { echo "no merged table after 120 s"; squeue; exit 1; }
seconds=$(awk "BEGIN { print $(date +%s.%N) - $start }")
diff "$dir/whole.csv" "$dir/out/sweep.csv" || { echo "the job array's table differs from the sweep's"; exit 1; }
cat "$dir"/out/slurm-*.log
echo "ok: $(($(wc -l < "$dir/out/sweep.csv") - 1)) points over a 3-task Slurm job array and its merge job in $seconds s, equal to one sweep"
