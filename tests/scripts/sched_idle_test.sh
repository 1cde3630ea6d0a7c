#!/usr/bin/env bash
# scripts/sched_idle.py on a hand-made `perf script` trace whose idle periods are known: two CPUs
# from 1.0 s to 4.0 s (6 core-seconds), a launcher (pid 100), two workers (main threads 101 and
# 102) and a Gloo thread (103, in worker 101's process).
#   cpu1: 102 blocks at 2.0; idle to 2.2 with only the Gloo thread waking (not a main thread);
#         103 runs 2.2-2.3; idle 2.3-2.96 with nothing runnable (0.86 s "could not run" in all);
#         102 is woken at 2.96 onto cpu0, which is busy, and preempts 101 there at 2.97: cpu1
#         idle 2.96-3.0 while a main thread waits on cpu0 (0.4 ms "waiting < 0.2 ms", 39.6 ms
#         ">= 0.2 ms"); cpu1 takes 101 at 3.0 (one preemption by a main thread, 30 ms waited).
#   101 blocks on cpu1 at 3.5 (0.1 s "could not run"), is woken onto cpu1 itself at 3.6 and
#         runs at 3.7 (0.1 s "waking up on an idle CPU").
# Expected: main threads on a CPU 4.8 of 6 core-seconds (80.0%), the Gloo thread 0.1 (1.7%);
# idle 1.1 (18.3%): 16.0% could not run, 0.7% queued, 1.7% waking.
set -euo pipefail
source_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=$(python3 "$source_dir/scripts/sched_idle.py" --skip 0 --tail 0 <<'TRACE'
   100/100   [000]     0.500000: sched:sched_stat_runtime: comm=pipetwin-exec pid=100 runtime=1000 [ns]
     0/0     [000]     1.000000: sched:sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=pipetwin-exec next_pid=101 next_prio=120
     0/0     [001]     1.000000: sched:sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=pipetwin-exec next_pid=102 next_prio=120
   101/101   [000]     1.500000: sched:sched_stat_runtime: comm=pipetwin-exec pid=101 runtime=500000000 [ns]
   102/102   [001]     1.500000: sched:sched_stat_runtime: comm=pipetwin-exec pid=102 runtime=500000000 [ns]
   102/102   [001]     2.000000: sched:sched_switch: prev_comm=pipetwin-exec prev_pid=102 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
   101/101   [000]     2.100000: sched:sched_waking: comm=pipetwin-exec pid=103 prio=120 target_cpu=001
     0/0     [001]     2.200000: sched:sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=pipetwin-exec next_pid=103 next_prio=120
   101/103   [001]     2.250000: sched:sched_stat_runtime: comm=pipetwin-exec pid=103 runtime=50000000 [ns]
   101/103   [001]     2.300000: sched:sched_switch: prev_comm=pipetwin-exec prev_pid=103 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
   101/101   [000]     2.960000: sched:sched_waking: comm=pipetwin-exec pid=102 prio=120 target_cpu=000
   101/101   [000]     2.970000: sched:sched_switch: prev_comm=pipetwin-exec prev_pid=101 prev_prio=120 prev_state=R ==> next_comm=pipetwin-exec next_pid=102 next_prio=120
     0/0     [001]     3.000000: sched:sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=pipetwin-exec next_pid=101 next_prio=120
   101/101   [001]     3.500000: sched:sched_switch: prev_comm=pipetwin-exec prev_pid=101 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
   102/102   [000]     3.600000: sched:sched_waking: comm=pipetwin-exec pid=101 prio=120 target_cpu=001
     0/0     [001]     3.700000: sched:sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=pipetwin-exec next_pid=101 next_prio=120
   101/101   [001]     4.000000: sched:sched_stat_runtime: comm=pipetwin-exec pid=101 runtime=300000000 [ns]
TRACE
)
echo "$out"
expect() {
  grep -qF -- "$1" <<<"$out" || { echo "FAIL: expected the line: $1" >&2; exit 1; }
}
expect "2 worker main threads on 2 CPUs; steady part 3.00 s"
expect "main threads ran 80.0% of core time, their other threads (c10d Gloo's) 1.7%, anything else 0.0%"
expect "idle: 18.3% of core time"
expect "16.0%  no worker's main thread could run"
expect "0.7%  a main thread was queued on a busy CPU, waiting >= 0.2 ms"
expect "0.0%  a main thread was queued on a busy CPU, waiting < 0.2 ms"
expect "1.7%  a main thread was waking up on an idle CPU"
expect "1 preemptions of a main thread by another worker's main thread while another CPU was idle: it waited 30.00 ms at the median for a CPU, 0.03 s in all"
# Nothing to analyse: one line on stderr, exit 2.
if python3 "$source_dir/scripts/sched_idle.py" </dev/null 2>"${TMPDIR:-/tmp}/sched_idle_err.$$"; then
  echo "FAIL: an empty trace was accepted" >&2; exit 1
fi
[[ $(wc -l <"${TMPDIR:-/tmp}/sched_idle_err.$$") -eq 1 ]] || { echo "FAIL: not one line" >&2; exit 1; }
rm -f "${TMPDIR:-/tmp}/sched_idle_err.$$"
