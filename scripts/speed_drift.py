#!/usr/bin/env python3
"""How steady this machine's speed is: one thread multiplying a 32 x 1024 by a 1024 x 1024 fp32
matrix (torch.mm, an MLP layer's forward at micro-batch 32) in a loop, its GFLOP/s in each window
of --window seconds for --seconds, then the mean, range, coefficient of variation and the steal
time /proc/stat counted meanwhile. A virtual machine can slow down without losing its vCPU (no
steal time) when other guests share the host core's caches or memory bandwidth; a profile taken
in one stretch and a run measured in another then see two machines (docs/validation.md).

    .venv/bin/python scripts/speed_drift.py [--seconds 60] [--window 1]
"""
import argparse
import statistics
import time

import torch


def steal_ticks():
    with open("/proc/stat") as f:
        fields = f.readline().split()
    return int(fields[8]) if len(fields) > 8 else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--window", type=float, default=1)
    args = parser.parse_args()
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
