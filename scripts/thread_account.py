"""A computing thread's account of its CPU over a stretch of a run, read from the kernel, for the
Python probes and torch's side of the benchmark: what `pipetwin run` reports per worker from
partition/util/machine.h's ReadThreadAccount (docs/executor.md, step 7), the same figures under
the same names, so that a torch rank and a pipetwin worker compare field by field.

  reading = read(tid)        # tid: the computing thread's native id (threading.get_native_id())
  ...
  figures = since(read(tid), reading)

/proc/self/task/TID/schedstat gives a thread's time running and time runnable but not running
(waiting for a CPU); its status, the involuntary context switches (preemptions). The other
threads' running time is what c10d Gloo's threads (and any other helper) took; a thread that
ended between two readings takes its time with it, so each figure is at least 0. read() is None
where the kernel keeps no schedstat (CONFIG_SCHEDSTATS off, or not Linux).
"""
import os


def read(tid):
    """{waited_for_cpu_s, preemptions, helper_threads_cpu_s} of this process now, `tid` its
    computing thread; None without schedstat."""
    waited, preempted, others, found = 0.0, 0, 0.0, False
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return None
    for name in tids:
        try:
            with open(f"/proc/self/task/{name}/schedstat") as f:
                running_ns, waiting_ns = map(int, f.read().split()[:2])
        except (OSError, ValueError):
            continue  # the thread ended meanwhile
        if int(name) != tid:
            others += running_ns * 1e-9
            continue
        found, waited = True, waiting_ns * 1e-9
        try:
            with open(f"/proc/self/task/{name}/status") as f:
                for line in f:
                    if line.startswith("nonvoluntary_ctxt_switches:"):
                        preempted = int(line.split()[1])
        except OSError:
            return None
    if not found:
        return None
    return {"waited_for_cpu_s": waited, "preemptions": preempted, "helper_threads_cpu_s": others}


def since(later, earlier):
    """What happened between two readings (None if either is)."""
    if later is None or earlier is None:
        return None
    return {key: max(0, later[key] - earlier[key]) for key in later}
