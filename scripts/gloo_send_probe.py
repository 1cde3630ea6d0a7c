#!/usr/bin/env python3
"""Does c10d Gloo's send() call return at once while the receiver computes?

Two processes, one core each (as `pipetwin run` pins two workers on two cores), one thread each.
Per trial, rank 1 posts its receive of 128 KB (an MLP activation of the validation matrix), then
multiplies matrices for 5 ms; rank 0 waits 1 ms, sends, and times the isend() call alone and the
send until complete. `--both`: rank 1 also sends 128 KB back meanwhile, as a 1F1B stage sends a
gradient. Prints the medians and the 90th percentile.

  .venv/bin/python scripts/gloo_send_probe.py [--both] [--trials 60] [--port 29533]
"""
import argparse
import os
import sys
import time


def worker(rank, args):
    import torch
    import torch.distributed as dist

    os.sched_setaffinity(0, {rank % os.cpu_count()})
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{args.port}", rank=rank,
                            world_size=2)
    a, b = torch.rand(256, 1024), torch.rand(1024, 1024)
    elements = 32 * 1024  # 128 KB of fp32
    calls, completes = [], []
    for i in range(args.trials):
        dist.barrier()
        if rank == 1:
            received = dist.irecv(torch.empty(elements), src=0, tag=i)
            start = time.perf_counter()
            while time.perf_counter() - start < 0.005:
                torch.mm(a, b)
            sent = dist.isend(torch.ones(elements), dst=0, tag=100000 + i) if args.both else None
            received.wait()
            if sent:
                sent.wait()
        else:
            time.sleep(0.001)
            back = dist.irecv(torch.empty(elements), src=1, tag=100000 + i) if args.both else None
            start = time.perf_counter()
            sent = dist.isend(torch.ones(elements), dst=1, tag=i)
            returned = time.perf_counter()
            while time.perf_counter() - returned < 0.002:  # the next forward
                torch.mm(a, b)
            sent.wait()
            calls.append((returned - start) * 1e6)
            completes.append((time.perf_counter() - start) * 1e6)
            if back:
                back.wait()
    if rank == 0:
        calls.sort()
        completes.sort()
        n = len(calls)
        print(f"{'both directions' if args.both else 'one direction'}: isend() returned in "
              f"{calls[n // 2]:.0f} us (median), {calls[int(0.9 * (n - 1))]:.0f} us (90th "
              f"percentile), {calls[-1]:.0f} us at most; complete after {completes[n // 2]:.0f} "
              f"us (median)")
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--both", action="store_true", help="rank 1 sends back meanwhile")
    parser.add_argument("--trials", type=int, default=60)
    parser.add_argument("--port", type=int, default=29533)
    args = parser.parse_args()
    if args.trials < 2:
        sys.exit("gloo_send_probe.py: --trials must be at least 2")
    child = os.fork()
    if child == 0:
        worker(1, args)
        os._exit(0)
    worker(0, args)
    _, status = os.waitpid(child, 0)
    sys.exit(0 if status == 0 else 1)


if __name__ == "__main__":
    main()
