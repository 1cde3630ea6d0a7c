#!/usr/bin/env python3
"""How steady this machine's speed is: one thread multiplying a 32 x 1024 by a 1024 x 1024 fp32
matrix (torch.mm, an MLP layer's forward at micro-batch 32) in a loop, its GFLOP/s in each window
of --window seconds for --seconds, then the mean, range, coefficient of variation and the steal
time /proc/stat counted meanwhile. A virtual machine can slow down without losing its vCPU (no
steal time) when other guests share the host core's caches or memory bandwidth; a profile taken
in one stretch and a run measured in another then see two machines (docs/validation.md).

    .venv/bin/python scripts/speed_drift.py [--seconds 60] [--window 1]

`--after-idle`: how much slower a core computes right after it idled, as a pipeline's worker
computes after waiting for a message. One process on one core (`--cpu`) runs a fixed amount of
work (an MLP layer's forward and two backward GEMMs at micro-batch 32, `--layers` times) after
sleeping W ms, for each W of `--idle-ms` in turn and W = 0 among them, `--trials` times; prints
each W's median time and its excess over W = 0. A core that halts while idle wakes slower (the
host's power and cache state, outside the guest's view), which a profile timing layers back to
back never sees.

    .venv/bin/python scripts/speed_drift.py --after-idle [--idle-ms 0.2,1,3,10] [--layers 1]
                                            [--trials 300] [--cpu 0]
"""
import argparse
import statistics
import sys
import time

import torch


def steal_ticks():
    with open("/proc/stat") as f:
        fields = f.readline().split()
    return int(fields[8]) if len(fields) > 8 else 0


def after_idle(args):
    import os

    try:
        idle_ms = sorted({0.0} | {float(w) for w in args.idle_ms.split(",")})
    except ValueError:
        sys.exit("speed_drift.py: --idle-ms: expected numbers separated by commas, got "
                 f"{args.idle_ms!r}")
    if idle_ms[0] < 0 or idle_ms[-1] > 1000 or args.layers < 1 or args.trials < 3:
        sys.exit("speed_drift.py: expected 0 <= --idle-ms <= 1000, --layers >= 1, --trials >= 3")
    os.sched_setaffinity(0, {args.cpu})
    torch.set_num_threads(1)
    a, w, g = torch.randn(32, 1024), torch.randn(1024, 1024), torch.randn(32, 1024)

    def work():
        for _ in range(args.layers):
            torch.mm(a, w)
            torch.mm(g.t(), a)
            torch.mm(g, w.t())

    for _ in range(100):
        work()
    took = {wait: [] for wait in idle_ms}
    for _ in range(args.trials):
        for wait in idle_ms:  # interleaved, so that a drift of the machine reaches every W alike
            if wait:
                time.sleep(wait * 1e-3)
            start = time.perf_counter()
            work()
            took[wait].append((time.perf_counter() - start) * 1e3)
    base = statistics.median(took[0.0])
    for wait in idle_ms:
        median = statistics.median(took[wait])
        print(f"after {wait:g} ms idle: the work took {median:.3f} ms (median of {args.trials}), "
              f"{median - base:+.3f} ms ({100 * (median / base - 1):+.1f}%) over no idle")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--window", type=float, default=1)
    parser.add_argument("--after-idle", action="store_true",
                        help="time a fixed work after the core idled --idle-ms")
    parser.add_argument("--idle-ms", default="0.2,1,3,10",
                        help="--after-idle: the idle times, in ms, separated by commas")
    parser.add_argument("--layers", type=int, default=1,
                        help="--after-idle: the work, in MLP layers (about 2.5 ms each)")
    parser.add_argument("--trials", type=int, default=300,
                        help="--after-idle: how many times each idle time is tried")
    parser.add_argument("--cpu", type=int, default=0, help="--after-idle: the core to run on")
    args = parser.parse_args()
    if args.after_idle:
        after_idle(args)
        return
    if not (0 < args.window <= args.seconds <= 3600):
        parser.error("expected 0 < --window <= --seconds <= 3600")
    torch.set_num_threads(1)
    a, w = torch.randn(32, 1024), torch.randn(1024, 1024)
    flop = 2 * 32 * 1024 * 1024
    rates = []
    steal_from = steal_ticks()
    start = time.perf_counter()
    while time.perf_counter() - start < args.seconds:
        n, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < args.window:
            torch.mm(a, w)
            n += 1
        rates.append(n * flop / (time.perf_counter() - t0) / 1e9)
    mean = statistics.mean(rates)
    print(" ".join(f"{r:.0f}" for r in rates))
    print(f"GFLOP/s per {args.window:g}-s window: mean {mean:.1f}, lowest {min(rates):.1f}, "
          f"highest {max(rates):.1f}, coefficient of variation "
          f"{100 * statistics.pstdev(rates) / mean:.1f}%; steal ticks meanwhile: "
          f"{steal_ticks() - steal_from}")


if __name__ == "__main__":
    main()
