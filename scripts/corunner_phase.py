#!/usr/bin/env python3
"""Whether what the other core computes changes a stage's forward and backward on this core.

A pipeline's workers run their stages' backwards at once in GPipe's second half, where the
profile's load processes (`pipetwin profile --concurrent N`) run whole passes, forwards and
backwards in turn; backwards move more bytes per FLOP (the weights read, the gradient sums read
and written), so they might slow each other more on cores that share caches and memory bandwidth.
One process on core 0 runs an MLP stage (--layers layers of --width x --width, micro-batch
--batch, fp32, one thread, the gradients summed) forward then backward over and over, timing
each by its thread's CPU time; a second process on core 1 switches every --block seconds between
four modes through a shared flag: whole passes ("all"), backwards only ("bwd", four over one
graph), forwards only ("fwd", no graph) and idle. The modes alternate quickly so that the host's
own drift (minutes) falls evenly on all four; prints each mode's median forward and backward.

    .venv/bin/python scripts/corunner_phase.py [--seconds 60] [--block 0.25]
"""
import argparse
import multiprocessing as mp
import os
import statistics
import time

import torch

MODES = ["all", "bwd", "fwd", "idle"]


def stage(args):
    ws = [torch.randn(args.width, args.width, requires_grad=True) for _ in range(args.layers)]
    sums = [torch.zeros(args.width, args.width) for _ in range(args.layers)]
    return ws, sums, torch.randn(args.batch, args.width)


def forward(ws, x):
    h = x.detach().requires_grad_(True)
    y = h
    for w in ws:
        y = torch.relu(y @ w.t())
    return h, y


def step(ws, sums, x):
    """One forward and its backward; their thread CPU seconds."""
    t0 = time.thread_time()
    h, y = forward(ws, x)
    t1 = time.thread_time()
    grads = torch.autograd.grad([y], [h] + ws, [torch.ones_like(y)])
    for s, g in zip(sums, grads[1:]):
        s.add_(g)
    return t1 - t0, time.thread_time() - t1


def corunner(args, mode, stop):
    os.sched_setaffinity(0, {1})
    torch.set_num_threads(1)
    ws, sums, x = stage(args)
    while not stop.value:
        m = MODES[mode.value]
        if m == "idle":
            time.sleep(0.002)
        elif m == "bwd":
            h, y = forward(ws, x)
            for _ in range(4):
                grads = torch.autograd.grad([y], [h] + ws, [torch.ones_like(y)], retain_graph=True)
                for s, g in zip(sums, grads[1:]):
                    s.add_(g)
        elif m == "fwd":
            with torch.no_grad():
                for _ in range(4):
                    forward(ws, x)
        else:
            step(ws, sums, x)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seconds", type=float, default=60)
    p.add_argument("--block", type=float, default=0.25)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--width", type=int, default=1024)
    p.add_argument("--batch", type=int, default=32)
    args = p.parse_args()
    if len(os.sched_getaffinity(0)) < 2:
        raise SystemExit("corunner_phase.py: needs two cores (CPUs 0 and 1)")
    torch.set_num_threads(1)
    os.sched_setaffinity(0, {0})
    mode, stop = mp.Value("i", 0), mp.Value("i", 0)
    other = mp.Process(target=corunner, args=(args, mode, stop))
    other.start()
    ws, sums, x = stage(args)
    for _ in range(20):
        step(ws, sums, x)
    times = {m: ([], []) for m in MODES}
    start, k = time.time(), 0
    while time.time() - start < args.seconds:
        m = MODES[k % len(MODES)]
        mode.value = k % len(MODES)
        k += 1
        time.sleep(0.03)  # the co-runner finishes what it was doing
        block = time.time()
        while time.time() - block < args.block - 0.03:
            f, b = step(ws, sums, x)
            times[m][0].append(f)
            times[m][1].append(b)
    stop.value = 1
    other.join()
    for m in MODES:
        f, b = times[m]
        print(f"{m:5s} {len(f):5d} steps: forward median {statistics.median(f) * 1e3:.3f} ms, "
              f"backward median {statistics.median(b) * 1e3:.3f} ms")


if __name__ == "__main__":
    main()
