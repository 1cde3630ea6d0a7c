#!/usr/bin/env python3
"""Where a real run's CPU cores stood idle, from the kernel's scheduler events.

Reads `perf script -F pid,tid,time,cpu,event,trace` of a `perf sched record` of `pipetwin run`
(scripts/sched-idle.sh does both) and prints, over the run's steady part, the share of core time
the CPUs were idle, split by what the workers' main threads were doing at that moment:
  - one of them was runnable but queued on a busy CPU (the idle CPU did not pull it);
  - one of them was waking up on an idle CPU (the wake-up had not landed yet);
  - none of them could run (all were blocked: waiting for a message, a lock or a peer).
It also counts the preemptions of a main thread while another CPU was idle, by whom (another
worker's main thread, a worker's other thread, another task), and how long the preempted thread
then waited for a CPU. A worker's main thread is the thread whose id is its process id; the launcher (the process perf
started) is left out. A runnable thread is one woken (sched_waking) or preempted (switched out in
state R) and not yet switched in; one that waited over 50 ms is taken as a missed event.
"""
import argparse
import collections
import re
import sys

LINE = re.compile(r"\s*(\d+)/(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+sched:(\w+):\s+(.*)")
FIELD = re.compile(r"(\w+)=(\S+)")
STALE_S = 0.05


def read_events(stream):
    events = []
    for line in stream:
        m = LINE.match(line)
        if m:
            events.append((float(m.group(4)), int(m.group(3)), int(m.group(1)), int(m.group(2)),
                           m.group(5), dict(FIELD.findall(m.group(6)))))
    events.sort(key=lambda e: e[0])
    return events


def main_threads(events):
    """Worker main threads (tid == pid, comm pipetwin*), the launcher left out."""
    launcher = None
    mains = set()
    for _, _, pid, tid, name, f in events:
        if name != "sched_stat_runtime" or not f.get("comm", "").startswith("pipetwin"):
            continue
        if int(f.get("pid", -1)) != tid:  # accounted in another task's context
            continue
        if launcher is None:
            launcher = pid
        if pid == tid and pid != launcher:
            mains.add(tid)
    return mains


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip", type=float, default=1.5,
                        help="seconds left out after the first worker starts (start-up)")
    parser.add_argument("--tail", type=float, default=0.3,
                        help="seconds left out before the last worker ends (shutdown)")
    args = parser.parse_args()
    events = read_events(sys.stdin)
    mains = main_threads(events)
    if not events or not mains:
        print("sched_idle: no pipetwin worker threads in the input (expected `perf script` of a "
              "`perf sched record` of `pipetwin run`)", file=sys.stderr)
        return 2
    cpus = sorted({e[1] for e in events})
    seen = [e[0] for e in events if e[3] in mains or int(e[5].get("next_pid", -1)) in mains]
    lo, hi = seen[0] + args.skip, seen[-1] - args.tail
    if hi <= lo:
        print("sched_idle: the run is shorter than --skip + --tail", file=sys.stderr)
        return 2

    process_of = {}  # thread -> process, from the samples taken in the thread's own context
    for _, _, pid, tid, name, f in events:
        if name == "sched_stat_runtime" and int(f.get("pid", -1)) == tid:
            process_of[tid] = pid
    cpu_s = collections.Counter()      # the workers' threads' time on a CPU in the window

    # Preemptions of a main thread while another CPU stood idle: by whom, and how long the
    # preempted thread then waited for a CPU.
    preempted = {}                     # tid -> (when, by whom)
    preemptions = collections.defaultdict(list)

    running = {c: None for c in cpus}  # tid on each CPU (0: idle), None until known
    runnable = {}                      # tid -> (since, CPU it is queued on)
    total = 0.0
    idle = collections.Counter()
    last = None
    for t, cpu, _, _, name, f in events:
        start, end = (max(last, lo), min(t, hi)) if last is not None else (t, t)
        if end > start:
            dt = end - start
            total += dt
            for c in cpus:
                if running[c] in mains:
                    cpu_s["main"] += dt
                elif process_of.get(running[c]) in mains:
                    cpu_s["other"] += dt
                if running[c] != 0:
                    continue
                live = [(since, on) for tid, (since, on) in runnable.items()
                        if tid in mains and start - since < STALE_S]
                queued = [since for since, on in live if running.get(on) != 0]
                if not live:
                    idle["no worker's main thread could run"] += dt
                elif not queued:
                    idle["a main thread was waking up on an idle CPU"] += dt
                else:  # split where the longest waiter passes 0.2 ms
                    passes = min(queued) + 2e-4
                    idle["a main thread was queued on a busy CPU, waiting < 0.2 ms"] += \
                        max(0.0, min(end, passes) - start)
                    idle["a main thread was queued on a busy CPU, waiting >= 0.2 ms"] += \
                        max(0.0, end - max(start, passes))
        last = t
        if name == "sched_waking":
            tid = int(f["pid"])
            if tid not in running.values():
                runnable.setdefault(tid, (t, int(f.get("target_cpu", cpu))))
        elif name == "sched_migrate_task":
            tid = int(f["pid"])
            if tid in runnable:
                runnable[tid] = (runnable[tid][0], int(f["dest_cpu"]))
        elif name == "sched_switch":
            prev, nxt = int(f["prev_pid"]), int(f["next_pid"])
            if prev and f["prev_state"].startswith("R"):
                runnable[prev] = (t, cpu)
                if prev in mains and lo <= t <= hi and any(
                        running[c] == 0 for c in cpus if c != cpu):
                    by = ("another worker's main thread" if nxt in mains else
                          "a worker's other thread" if process_of.get(nxt) in mains else
                          "another task")
                    preempted[prev] = (t, by)
            else:
                runnable.pop(prev, None)
            runnable.pop(nxt, None)
            if nxt in preempted:
                when, by = preempted.pop(nxt)
                preemptions[by].append(t - when)
            running[cpu] = nxt

    core_s = total * len(cpus)
    print("%d worker main threads on %d CPUs; steady part %.2f s (--skip %.1f, --tail %.1f)" %
          (len(mains), len(cpus), total, args.skip, args.tail))
    print("the workers' main threads ran %.1f%% of core time, their other threads (c10d Gloo's)"
          " %.1f%%, anything else %.1f%%" %
          (100 * cpu_s["main"] / core_s, 100 * cpu_s["other"] / core_s,
           100 - 100 * (cpu_s["main"] + cpu_s["other"] + sum(idle.values())) / core_s))
    print("idle: %.1f%% of core time" % (100 * sum(idle.values()) / core_s))
    for what, seconds in sorted(idle.items(), key=lambda kv: -kv[1]):
        if seconds > 0:
            print("  %5.1f%%  %s" % (100 * seconds / core_s, what))
    for by, waits in sorted(preemptions.items(), key=lambda kv: -sum(kv[1])):
        waits.sort()
        print("%d preemptions of a main thread by %s while another CPU was idle: it waited"
              " %.2f ms at the median for a CPU, %.2f s in all" %
              (len(waits), by, 1e3 * waits[len(waits) // 2], sum(waits)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
