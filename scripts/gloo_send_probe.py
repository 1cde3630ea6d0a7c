#!/usr/bin/env python3
"""Does c10d Gloo's send() call return at once while the receiver computes?

Two processes, one core each (as `pipetwin run` pins two workers on two cores), one thread each.
Per trial, rank 1 posts its receive of 128 KB (an MLP activation of the validation matrix), then
multiplies matrices for 5 ms; rank 0 waits 1 ms, sends, and times the isend() call alone and the
send until complete. `--both`: rank 1 also sends 128 KB back meanwhile, as a 1F1B stage sends a
gradient. Prints the medians and the 90th percentile.

`--steady`: no barriers, as the executor runs a pipeline whose two workers send to each other
(DualPipe's two ranks): each rank, per step, multiplies matrices for about `--compute-ms`, posts
its 128 KB isend, waits for the peer's message and posts the receive 4 steps ahead (the
executor's look-ahead); it times each isend() and irecv() call. Prints mean, median, 99th
percentile and how many calls took over 0.5 ms, per rank.

`--arrival`: how long a 128 KB message takes from its isend() to its arrival at a receiver
already waiting for it, when the sender goes on to compute (as a stage sends its output and
starts its next forward or backward) against when it waits idle. Trials alternate the two; the
receiver timestamps the arrival on the same monotonic clock and the message carries the send's.
`--compute-before`: the sender computes while the receiver waits, as a stage computes the op
whose output it then sends, instead of sleeping. c10d Gloo's TCP transport sends by rendezvous
(gloo/transport/tcp/pair.cc, Pair::send): the caller writes the payload at once only when its
process's event-loop thread has already taken the receiver's "ready to receive" notification,
else it leaves the payload to that thread, which shares the pinned core with the computing
thread. `--yield-first` calls sched_yield() before each send, which lets that thread run first.

`--ring`: both ranks, per hop, compute `--gemms` GEMMs of 256^3, send each other 128 KB and wait
for the other's, as the calibration's rings do; prints each rank's time per hop, its GEMMs'
thread CPU time, how long its other threads (c10d Gloo's) ran, and how long its computing thread
waited for its CPU, per hop. `--batch-helpers` puts every thread but the computing one under
SCHED_BATCH first (docs/executor.md). `--pipeline`: the same two ranks as two 1F1B stages in
their steady state instead, both computing at once: rank 0 a forward (a third of the GEMMs), the
activation's send, the gradient's receive, a backward; rank 1 the activation's receive, all the
GEMMs, the gradient's send; per step.

`--context`: does a stage compute as a profile times it? The validation matrix's two MLP stages
(2 x Linear(1024) and ReLU each, micro-batch 32), both ranks computing at once, in blocks of 16
micro-batches of three kinds, alternated for `--trials` blocks: each backward right after its own
forward (no messages); 1F1B's steady state (rank 0's backward after the next micro-batch's
forward), no messages, each rank on its own input and gradient; and 1F1B exchanging the
activations and gradients over Gloo. Prints each rank's mean forward and backward time in each,
the first two blocks of each left out, the second against the first and the third against the
second.

`--late`: the other order, as a pipeline's receiver mostly runs it: the send is posted first and
the receiver computes `--late-ms` before it posts its receive (a stage finishing its op). Times
from the receive's posting to the message's arrival, with the sender computing meanwhile
(`--compute-ms` beyond the receiver's late start) against waiting idle; trials alternate the two.
Set against `--arrival` at a short `--wait-ms` (the receive posted first), it shows what a
receive posted after its send adds.

  .venv/bin/python scripts/gloo_send_probe.py [--both] [--trials 60] [--port 29533]
  .venv/bin/python scripts/gloo_send_probe.py --steady [--trials 600] [--compute-ms 2.5] [--no-pin]
  .venv/bin/python scripts/gloo_send_probe.py --arrival [--trials 200] [--compute-ms 2.5] [--wait-ms 1]
                                             [--compute-before] [--yield-first]
  .venv/bin/python scripts/gloo_send_probe.py --late [--trials 200] [--compute-ms 2.5] [--late-ms 1]
  .venv/bin/python scripts/gloo_send_probe.py --ring [--trials 300] [--gemms 3] [--batch-helpers]
                                             [--pipeline]
  .venv/bin/python scripts/gloo_send_probe.py --context [--trials 90]
"""
import argparse
import os
import sys
import time

import thread_account


def join(rank, args, pin=True):
    """Rank `rank` of the two, on its own core unless `pin` is off, with one compute thread."""
    import torch
    import torch.distributed as dist

    if pin:
        os.sched_setaffinity(0, {rank % os.cpu_count()})
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{args.port}", rank=rank,
                            world_size=2)


def compute_for(ms, a, b):
    """Multiplies a by b for `ms` milliseconds, as a stage computes."""
    import torch

    start = time.perf_counter()
    while time.perf_counter() - start < ms * 1e-3:
        torch.mm(a, b)


def report(took, when):
    """Rank 1's arrival times (us) with the sender idle and computing, `when` saying when."""
    import statistics

    for busy in (False, True):
        us = sorted(took[busy])
        print(f"sender {'computing' if busy else 'idle':9s} {when}: arrival after mean "
              f"{statistics.mean(us):.0f} us, median {us[len(us) // 2]:.0f}, 90th percentile "
              f"{us[int(0.9 * (len(us) - 1))]:.0f} ({len(us)} messages)", flush=True)


def worker(rank, args):
    import torch
    import torch.distributed as dist

    join(rank, args)
    a, b = torch.rand(256, 1024), torch.rand(1024, 1024)
    elements = 32 * 1024  # 128 KB of fp32
    calls, completes = [], []
    for i in range(args.trials):
        dist.barrier()
        if rank == 1:
            received = dist.irecv(torch.empty(elements), src=0, tag=i)
            compute_for(5, a, b)
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
            compute_for(2, a, b)  # the next forward
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


def steady(rank, args):
    import statistics
    import torch
    import torch.distributed as dist

    join(rank, args, pin=not args.no_pin)
    a, b = torch.rand(64, 1024), torch.rand(1024, 1024)
    elements, peer, ahead = 32 * 1024, 1 - rank, 4
    posts, calls, received, sent = [], [], {}, []

    def post(step):
        start = time.perf_counter()
        received[step] = dist.irecv(torch.empty(elements), src=peer, tag=step)
        posts.append(time.perf_counter() - start)

    for step in range(min(ahead, args.trials)):
        post(step)
    dist.barrier()
    began = time.perf_counter()
    for step in range(args.trials):
        compute_for(args.compute_ms, a, b)
        start = time.perf_counter()
        sent.append(dist.isend(torch.ones(elements), dst=peer, tag=step))
        calls.append(time.perf_counter() - start)
        received.pop(step).wait()
        if step + ahead < args.trials:
            post(step + ahead)
        if len(sent) > 16:
            sent.pop(0).wait()
    for work in sent:
        work.wait()
    per_step = (time.perf_counter() - began) / args.trials

    def figures(seconds):
        us = sorted(s * 1e6 for s in seconds)
        return (f"mean {statistics.mean(us):.0f} us, median {us[len(us) // 2]:.0f}, 99th "
                f"percentile {us[int(0.99 * (len(us) - 1))]:.0f}, {sum(u > 500 for u in us)} of "
                f"{len(us)} over 0.5 ms")

    print(f"rank {rank}: isend() {figures(calls)}; irecv() {figures(posts)}; "
          f"{per_step * 1e3:.2f} ms a step", flush=True)
    dist.destroy_process_group()


def arrival(rank, args):
    import torch
    import torch.distributed as dist

    join(rank, args)
    a, b = torch.rand(64, 1024), torch.rand(1024, 1024)
    elements = 16 * 1024  # 128 KB of fp64: element 0 carries the send's time
    took = {True: [], False: []}  # sender computing after the send: microseconds to arrival
    for i in range(args.trials):
        busy = i % 2 == 0
        dist.barrier()
        if rank == 1:
            message = torch.empty(elements, dtype=torch.float64)
            dist.irecv(message, src=0, tag=i).wait()
            took[busy].append((time.perf_counter() - message[0].item()) * 1e6)
        else:
            if args.compute_before:  # the receiver is waiting by now, its notification sent
                compute_for(args.wait_ms, a, b)
            else:
                time.sleep(args.wait_ms * 1e-3)
            message = torch.ones(elements, dtype=torch.float64)
            if args.yield_first:
                os.sched_yield()
            message[0] = time.perf_counter()
            sent = dist.isend(message, dst=1, tag=i)
            if busy:
                compute_for(args.compute_ms, a, b)
            sent.wait()
    if rank == 1:
        report(took, "after its send")
    dist.destroy_process_group()


def late(rank, args):
    import torch
    import torch.distributed as dist

    join(rank, args)
    a, b = torch.rand(64, 1024), torch.rand(1024, 1024)
    elements = 32 * 1024  # 128 KB of fp32
    took = {True: [], False: []}  # sender computing when the receive is posted
    for i in range(args.trials):
        busy = i % 2 == 0
        dist.barrier()
        if rank == 1:
            compute_for(args.late_ms, a, b)
            message = torch.empty(elements)
            posted = time.perf_counter()
            dist.irecv(message, src=0, tag=i).wait()
            took[busy].append((time.perf_counter() - posted) * 1e6)
        else:
            sent = dist.isend(torch.ones(elements), dst=1, tag=i)
            if busy:
                compute_for(args.late_ms + args.compute_ms, a, b)
            else:
                time.sleep((args.late_ms + args.compute_ms) * 1e-3)
            sent.wait()
    if rank == 1:
        report(took, f"when the receive is posted {args.late_ms:g} ms after the send")
    dist.destroy_process_group()


def ring(rank, args):
    import threading
    import torch
    import torch.distributed as dist

    join(rank, args)
    me = threading.get_native_id()  # the computing thread
    if args.batch_helpers:
        # Every other thread (c10d Gloo's, started by now) under SCHED_BATCH: a woken batch
        # thread never preempts the computing thread.
        for tid in map(int, os.listdir("/proc/self/task")):
            if tid != me:
                os.sched_setscheduler(tid, os.SCHED_BATCH, os.sched_param(0))
    dist.barrier()

    a, b, c = torch.rand(256, 256), torch.rand(256, 256), torch.empty(256, 256)
    token, incoming = torch.ones(32 * 1024), torch.empty(32 * 1024)  # 128 KB of fp32
    gemm_s = 0.0

    def gemms(k):
        nonlocal gemm_s
        cpu_from = time.thread_time()
        for _ in range(k):
            torch.mm(a, b, out=c)
        gemm_s += time.thread_time() - cpu_from

    forward = max(1, args.gemms // 3)  # --pipeline: a stage's forward, its backward the rest
    warmup, sent = 10, []
    if args.pipeline and rank == 0:
        gemms(forward)
        sent.append(dist.isend(token, dst=1, tag=0))
    for hop in range(warmup + args.trials):
        if hop == warmup:
            start, gemm_s, account_from = time.perf_counter(), 0.0, thread_account.read(me)
        if not args.pipeline:
            gemms(args.gemms)
            sent.append(dist.isend(token, dst=1 - rank, tag=hop))
            dist.recv(incoming, src=1 - rank, tag=hop)
        elif rank == 0:  # forward of the next micro-batch, then the backward of this one
            gemms(forward)
            sent.append(dist.isend(token, dst=1, tag=hop + 1))
            dist.recv(incoming, src=1, tag=(1 << 20) + hop)
            gemms(args.gemms - forward)
        else:  # the last stage: forward and backward of each micro-batch as it arrives
            dist.recv(incoming, src=0, tag=hop)
            gemms(args.gemms)
            sent.append(dist.isend(token, dst=0, tag=(1 << 20) + hop))
    hops = args.trials
    took = (time.perf_counter() - start) / hops
    account = thread_account.since(thread_account.read(me), account_from)
    if account is None:
        sys.exit("gloo_send_probe: --ring needs the kernel's schedstat "
                 "(/proc/self/task/*/schedstat)")
    times = [account[k] / hops for k in ("waited_for_cpu_s", "preemptions",
                                          "helper_threads_cpu_s")]
    if args.pipeline and rank == 1:
        dist.recv(incoming, src=0, tag=warmup + args.trials)
    for work in sent:
        work.wait()
    # One write per line: the two ranks share standard output.
    sys.stdout.write(f"rank {rank}{' (helpers SCHED_BATCH)' if args.batch_helpers else ''}: a "
                     f"{'step' if args.pipeline else 'hop'} took {took * 1e6:.0f} us, its GEMMs "
                     f"{gemm_s / hops * 1e6:.0f} us of thread CPU, the other threads ran "
                     f"{times[2] * 1e6:.0f} us; the computing thread waited {times[0] * 1e6:.0f} "
                     f"us for its CPU, preempted {times[1]:.2f} times\n")
    sys.stdout.flush()
    dist.destroy_process_group()


def context(rank, args):
    """--context: does a stage compute slower in 1F1B's order than each backward right after its
    forward, and slower beside its messages than alone?"""
    import statistics
    import torch
    import torch.distributed as dist

    join(rank, args)
    b, h, m = 32, 1024, 16  # the validation matrix's MLP stage: 2 x (Linear(1024), ReLU)
    torch.manual_seed(rank)
    stage = torch.nn.Sequential(torch.nn.Linear(h, h), torch.nn.ReLU(), torch.nn.Linear(h, h),
                                torch.nn.ReLU())
    x, gradient = torch.randn(b, h), torch.full((b, h), 1e-3)
    modes = ("adjacent", "alone", "pipeline")
    took = {mode: {"forward": [], "backward": []} for mode in modes}

    def timed(mode, op, fn):
        start = time.perf_counter()
        out = fn()
        took[mode][op].append(time.perf_counter() - start)
        return out

    def forward(given):
        given = given.detach().requires_grad_(rank == 1)
        return given, stage(given)

    def backward(pair, grad):
        pair[1].backward(grad)
        return pair[0].grad

    for block in range(args.trials):
        mode = modes[block % 3]
        piped = mode == "pipeline"
        dist.barrier()
        sent = []
        if mode == "adjacent":  # a profile's order: each backward right after its forward
            for k in range(m):
                pair = timed(mode, "forward", lambda: forward(x))
                timed(mode, "backward", lambda: backward(pair, gradient))
        elif rank == 0:  # 1F1B: the next micro-batch's forward, then the oldest one's backward
            held = []
            for k in range(m + 1):
                if k < m:
                    held.append(timed(mode, "forward", lambda: forward(x)))
                    if piped:
                        sent.append(dist.isend(held[-1][1].detach(), dst=1))
                if k:
                    incoming = torch.empty(b, h)
                    if piped:
                        dist.recv(incoming, src=1)
                    timed(mode, "backward",
                          lambda: backward(held.pop(0), incoming if piped else gradient))
        else:  # the last stage: each micro-batch's forward and backward as it arrives
            for k in range(m):
                incoming = torch.empty(b, h)
                if piped:
                    dist.recv(incoming, src=0)
                pair = timed(mode, "forward", lambda: forward(incoming if piped else x))
                back = timed(mode, "backward", lambda: backward(pair, gradient))
                if piped:
                    sent.append(dist.isend(back.detach(), dst=0))
        for work in sent:
            work.wait()
        stage.zero_grad()
    lines = []
    for op in ("forward", "backward"):
        adjacent, alone, piped = (statistics.mean(took[mode][op][2 * m:]) * 1e6 for mode in modes)
        lines.append(f"rank {rank} {op}: each backward after its forward {adjacent:.0f} us; in "
                     f"1F1B's order {alone:.0f} us ({100 * (alone / adjacent - 1):+.1f}%); with "
                     f"its messages {piped:.0f} us ({100 * (piped / alone - 1):+.1f}%)\n")
    sys.stdout.write("".join(lines))  # one write: the two ranks share standard output
    sys.stdout.flush()
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--both", action="store_true", help="rank 1 sends back meanwhile")
    parser.add_argument("--trials", type=int, default=60)
    parser.add_argument("--port", type=int, default=29533)
    parser.add_argument("--steady", action="store_true",
                        help="both ranks compute and send to each other, no barriers")
    parser.add_argument("--arrival", action="store_true",
                        help="time to arrival with the sender computing or idle after its send")
    parser.add_argument("--compute-before", action="store_true",
                        help="--arrival: the sender computes while the receiver waits, as a "
                             "stage does before it sends, instead of sleeping")
    parser.add_argument("--yield-first", action="store_true",
                        help="--arrival: sched_yield() before each send")
    parser.add_argument("--late", action="store_true",
                        help="time to arrival of a message whose receive is posted after it")
    parser.add_argument("--compute-ms", type=float, default=2.5,
                        help="--steady: the compute between two sends; --arrival: after the "
                             "send; --late: beyond the receiver's late start")
    parser.add_argument("--late-ms", type=float, default=1.0,
                        help="--late: how long after the send the receive is posted")
    parser.add_argument("--wait-ms", type=float, default=1.0,
                        help="--arrival: how long the receiver waits before each message is sent")
    parser.add_argument("--no-pin", action="store_true",
                        help="--steady: both processes free on every core")
    parser.add_argument("--ring", action="store_true",
                        help="both ranks compute --gemms GEMMs, send 128 KB to each other and "
                             "wait for the other's, over and over")
    parser.add_argument("--pipeline", action="store_true",
                        help="--ring: as two 1F1B stages instead (rank 0 a forward, its send, the "
                             "gradient's receive, a backward; rank 1 a receive, --gemms GEMMs, a "
                             "send), both computing at once")
    parser.add_argument("--gemms", type=int, default=3,
                        help="--ring: 256^3 GEMMs per hop")
    parser.add_argument("--batch-helpers", action="store_true",
                        help="--ring: every thread but the computing one under SCHED_BATCH")
    parser.add_argument("--context", action="store_true",
                        help="two MLP stages, blocks of 16 micro-batches, each backward after "
                             "its forward, in 1F1B's order, and with their messages, alternated "
                             "(--trials blocks)")
    args = parser.parse_args()
    if args.trials < 2:
        sys.exit("gloo_send_probe.py: --trials must be at least 2")
    run = (steady if args.steady else arrival if args.arrival else late if args.late
           else ring if args.ring else context if args.context else worker)
    child = os.fork()
    if child == 0:
        run(1, args)
        os._exit(0)
    run(0, args)
    _, status = os.waitpid(child, 0)
    sys.exit(0 if status == 0 else 1)


if __name__ == "__main__":
    main()
