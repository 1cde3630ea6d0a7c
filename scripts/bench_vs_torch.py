#!/usr/bin/env python3
"""The torch side of scripts/bench-vs-torch.sh: one pipetwin scenario trained by
torch.distributed.pipelining (PipelineStage and its schedule classes) on CPUs with Gloo.

  torchrun --nproc-per-node P scripts/bench_vs_torch.py SCENARIO [--iterations N] [--warmup W]
                                                        [--report FILE] [--pin]
                                                        [--profile FILE --like WORKLOAD
                                                         [--profile-during]]
                                                        [--timeline FILE] [--replay FILE]

It builds the model pipetwin's executor builds for the scenario's generator (exec/model/
modules.cc: the MLP's Linear + ReLU layers; GPT's embedding, pre-LN blocks with causal attention
and a GELU MLP of 4h, untied head; cross-entropy loss), cut at the plan's stages, with the
scenario's schedule (gpipe: ScheduleGPipe, flush: Schedule1F1B, interleaved: ScheduleInterleaved1F1B
with training.chunks stages per rank), micro-batch size and count, and optimizer (SGD, or Adam),
on synthetic data. Rank 0 prints one JSON line: samples per second over the iterations after the
warm-up, timed as a whole between two barriers (pipetwin's report likewise counts its steady
state after one warm-up iteration). --report FILE: rank 0 also writes the run as a pipetwin
measured report (the fields `pipetwin run --json` has that this run knows: throughput, the
iteration's time, the scenario's shape, and each timed step's seconds on rank 0 in
details.step_s), which `pipetwin compare SCENARIO --measured FILE` compares with a prediction.
--profile FILE --like WORKLOAD: before the run, every rank times its own stages' layers under
torch's runtime (StageProfiler) and the runtime's own cost per action on the same schedule with
stand-in stages that compute next to nothing (probe_runtime); rank 0 writes them as a pipetwin workload file, its other
fields from WORKLOAD (pipetwin's profile of the same model), for `pipetwin compare --profile FILE`
to predict the run from torch's own compute and runtime. --profile-during: the layers are timed
one round (an iteration of each of the rank's stages) before each timed step instead of all
before the run, so that the profile and the run sample the machine over the same seconds; each
step then runs from one barrier to the next and the throughput counts the steps alone.
The JSON line's per_rank says where each rank's steady state went (ActionTimes): the runtime's
own milliseconds per action beyond the compute inside it; per iteration the compute (the loss
also apart), the point-to-point waits, the optimizer and the rest of the step; and, where the
kernel keeps schedstat, the rank's thread account over the timed steps as `pipetwin run` reports
it per worker (scripts/thread_account.py: waited_for_cpu_s and _fraction, preemptions,
helper_threads_cpu_s, the last c10d Gloo's threads' CPU); with --profile, also what the profile
said of the same (profiled_compute_ms_per_iteration, profiled_runtime_ms_per_action). --timeline FILE:
rank 0 also writes those timed calls one by one, every rank's, on one clock (write_timeline).
--replay FILE (with --profile): rank 0 also writes the profile again with the run's own times
(replay_samples), so that a prediction from it measures the simulator apart from the profile.
--pin: each rank on one core, as `pipetwin run` pins its workers.
"""
import argparse
import copy
import json
import math
import os
import statistics
import sys
import threading
import time

import thread_account
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.pipelining import (PipelineStage, Schedule1F1B, ScheduleGPipe,
                                          ScheduleInterleaved1F1B)


def fail(message):
    """Bad input: one line on stderr and exit status 2, as pipetwin's own commands do."""
    print(message, file=sys.stderr)
    sys.exit(2)


class Linear(nn.Module):
    def __init__(self, n_in, n_out, relu):
        super().__init__()
        self.fc = nn.Linear(n_in, n_out)
        self.relu = relu

    def forward(self, x):
        y = self.fc(x.flatten(1) if x.dim() > 2 else x)
        return F.relu(y) if self.relu else y


class Embedding(nn.Module):
    def __init__(self, vocabulary, sequence, hidden):
        super().__init__()
        self.token = nn.Parameter(torch.randn(vocabulary, hidden) * 0.02)
        self.position = nn.Parameter(torch.randn(sequence, hidden) * 0.02)

    def forward(self, tokens):
        return F.embedding(tokens, self.token) + self.position.unsqueeze(0)


class Block(nn.Module):
    """Pre-LN GPT-2 block: causal multi-head attention and a GELU MLP of 4h (12h^2 + 13h)."""

    def __init__(self, hidden, heads):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(hidden), nn.LayerNorm(hidden)
        self.qkv, self.proj = nn.Linear(hidden, 3 * hidden), nn.Linear(hidden, hidden)
        self.fc1, self.fc2 = nn.Linear(hidden, 4 * hidden), nn.Linear(4 * hidden, hidden)

    def attention(self, x):
        b, s, h = x.shape
        d = h // self.heads
        q, k, v = (t.reshape(b, s, self.heads, d).transpose(1, 2)
                   for t in self.qkv(x).chunk(3, -1))
        scores = q @ k.transpose(-2, -1) / math.sqrt(d)
        future = torch.ones(s, s, dtype=torch.bool).triu(1)
        scores = scores.masked_fill(future, float("-inf"))
        return self.proj((scores.softmax(-1) @ v).transpose(1, 2).reshape(b, s, h))

    def forward(self, x):
        y = x + self.attention(self.ln1(x))
        return y + self.fc2(F.gelu(self.fc1(self.ln2(y))))


class Head(nn.Module):
    def __init__(self, hidden, vocabulary):
        super().__init__()
        self.ln = nn.LayerNorm(hidden)
        self.out = nn.Linear(hidden, vocabulary, bias=False)

    def forward(self, x):
        return self.out(self.ln(x))


def layers_of(workload):
    g = workload["generator"]
    if g == "mlp":
        n, width = workload["layers"], workload["width"]
        return [Linear(workload["input"] if i == 0 else width,
                       workload["classes"] if i == n - 1 else width, i < n - 1)
                for i in range(n)]
    if g == "gpt":
        h, s, v = workload["hidden"], workload["sequence"], workload["vocabulary"]
        return ([Embedding(v, s, h)] + [Block(h, workload["heads"])
                                        for _ in range(workload["layers"])] + [Head(h, v)])
    fail(f"bench_vs_torch: generator {g} is not built here (mlp, gpt)")


def batch_of(workload, size, generator):
    if workload["generator"] == "mlp":
        x = torch.randn(size, workload["input"], generator=generator)
        y = torch.randint(workload["classes"], (size,), generator=generator)
    else:
        s, v = workload["sequence"], workload["vocabulary"]
        x = torch.randint(v, (size, s), generator=generator)
        y = torch.randint(v, (size, s), generator=generator)
    return x, y


def loss_fn(output, target):
    return F.cross_entropy(output.reshape(-1, output.size(-1)), target.reshape(-1))


class ActionTimes:
    """Where a rank's steady state goes under torch's runtime, to tell the runtime's own cost from
    the compute: each action (a stage's forward or backward of one micro-batch: forward_one_chunk,
    backward_one_chunk) against the compute inside it (the stage module's forward, autograd's
    backward); the loss, which the schedule computes between actions; the waits in the
    schedule's point-to-point exchanges (schedules._wait_batch_p2p); the optimizer's step and
    zero_grad. Wrapped around torch's own functions; a few microseconds per call, counted while
    `on`."""

    def __init__(self):
        self.on = False
        self.reset()

    def reset(self):
        self.actions = 0
        self.action_s = self.compute_s = self.loss_s = self.wait_s = self.optimizer_s = 0.0
        # (field, function, start, end) of every timed call while `on`, for --timeline: the
        # sums above, call by call, on the clock all ranks share (time.perf_counter:
        # CLOCK_MONOTONIC on Linux).
        self.events = []

    def timed(self, function, field, action=False):
        def wrapper(*args, **kwargs):
            if not self.on:
                return function(*args, **kwargs)
            start = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                end = time.perf_counter()
                setattr(self, field, getattr(self, field) + end - start)
                self.actions += action
                self.events.append((field, function.__name__, start, end))
        return wrapper

    def install(self):
        """torch's own module-level functions, once per process."""
        import torch.distributed.pipelining.schedules as schedules
        torch.autograd.backward = self.timed(torch.autograd.backward, "compute_s")
        schedules._wait_batch_p2p = self.timed(schedules._wait_batch_p2p, "wait_s")

    def install_stages(self, stages, loss):
        """The stages' actions and modules; returns the loss function timed, for the schedule."""
        for s in stages:
            s.forward_one_chunk = self.timed(s.forward_one_chunk, "action_s", action=True)
            s.backward_one_chunk = self.timed(s.backward_one_chunk, "action_s", action=True)
            s.submod.forward = self.timed(s.submod.forward, "compute_s")
        return self.timed(loss, "loss_s")

    def install_optimizer(self, optimizer):
        optimizer.step = self.timed(optimizer.step, "optimizer_s")
        optimizer.zero_grad = self.timed(optimizer.zero_grad, "optimizer_s")

    def summary(self, iterations, elapsed_s):
        accounted = self.action_s + self.loss_s + self.wait_s + self.optimizer_s
        forward_s = sum(b - a for field, name, a, b in self.events
                        if field == "compute_s" and name == "forward")
        return {"actions_per_iteration": self.actions / iterations,
                # The stages' module forwards alone (the rest of compute_ms is autograd's
                # backwards; the loss is apart): for --replay.
                "forward_ms_per_iteration": 1e3 * forward_s / iterations,
                "runtime_ms_per_action": 1e3 * (self.action_s - self.compute_s)
                / max(1, self.actions),
                "compute_ms_per_iteration": 1e3 * (self.compute_s + self.loss_s) / iterations,
                "loss_ms_per_iteration": 1e3 * self.loss_s / iterations,
                "p2p_wait_ms_per_iteration": 1e3 * self.wait_s / iterations,
                "optimizer_ms_per_iteration": 1e3 * self.optimizer_s / iterations,
                # The rest of the step: the schedule's bookkeeping between actions, posting the
                # exchanges, splitting the batch, scaling the gradients.
                "other_ms_per_iteration": 1e3 * (elapsed_s - accounted) / iterations,
                # All a rank did that is neither compute (the loss included) nor a wait nor the
                # optimizer, per action: the runtime's own cost.
                "runtime_ms_per_action_all": 1e3 * (elapsed_s - self.compute_s - self.loss_s
                                                    - self.wait_s - self.optimizer_s)
                / max(1, self.actions)}


def schedule_of(name, stages, m, loss):
    if name == "gpipe":
        return ScheduleGPipe(stages[0], m, loss_fn=loss)
    if name == "flush":
        return Schedule1F1B(stages[0], m, loss_fn=loss)
    if name == "interleaved":
        return ScheduleInterleaved1F1B(stages, m, loss_fn=loss)
    fail(f"bench_vs_torch: schedule {name} is not benchmarked here")


def run_order(schedule, rank, mine, m):
    """The forwards and backwards the schedule runs on this rank, in its order: [(stage index,
    "F" or "B")], from torch's own pipeline_order (the bubbles' None and REDUCE_GRAD left out).
    The micro-batch numbers are not taken from it (a stage's backwards run in its forwards'
    order, and torch 2.11's Schedule1F1B numbers its last rank's from 1 to m where its step loop
    runs 0 to m - 1: scripts/torch_schedules.py); each stage of the rank must come out with m of
    each."""
    from torch.distributed.pipelining.schedules import _ComputationType as C

    kinds = {C.FORWARD: "F", C.FULL_BACKWARD: "B"}
    order = [(a.stage_index, kinds[a.computation_type])
             for a in (schedule.pipeline_order or {}).get(rank, [])
             if a is not None and a.computation_type in kinds]
    for index in mine:
        for kind in "FB":
            if order.count((index, kind)) != m:
                fail(f"bench_vs_torch: the schedule's order for rank {rank} has "
                     f"{order.count((index, kind))} {kind} of stage {index}, expected {m}")
    return order


class StandIn(nn.Module):
    """A stage that computes next to nothing but takes and gives the tensors of the stage it stands
    in for: its output of the real stage's shape (one weight times ones), tied to its input so
    that the backward gives the input a gradient."""

    def __init__(self, shape):
        super().__init__()
        self.shape = shape
        self.w = nn.Parameter(torch.ones(()))

    def forward(self, x):
        return self.w * torch.ones(x.shape[:1] + self.shape) + 0 * x.float().mean()


def probe_runtime(times, schedule_name, stages, mine, layers, workload, m, b, iterations):
    """torch's runtime's own cost per action, on this rank: the scenario's schedule, stages,
    micro-batches and messages, each stage a StandIn, so that what a rank does besides compute
    and waiting is the runtime's: posting the exchanges (of the real sizes), the actions'
    bookkeeping, splitting the batch, merging the outputs. Returns the milliseconds per action,
    the median over the timed iterations (ActionTimes' runtime_ms_per_action_all)."""
    n_stages = len(stages)
    x, y = batch_of(workload, m * b, torch.Generator().manual_seed(4))
    probe_stages = []
    for index in mine:
        h = x[:b]
        with torch.no_grad():
            for layer in layers[:stages[index]["last_layer"] + 1]:
                h = layer(h)
        probe_stages.append(PipelineStage(StandIn(tuple(h.shape[1:])), index, n_stages,
                                          torch.device("cpu")))
    loss = times.install_stages(probe_stages, lambda output, target: output.mean())
    schedule = schedule_of(schedule_name, probe_stages, m, loss)
    holds_first, holds_last = 0 in mine, n_stages - 1 in mine
    per_action = []
    for it in range(iterations + 2):  # two warm-up iterations left out
        times.reset()
        times.on = it >= 2
        began = time.perf_counter()
        schedule.step(*((x,) if holds_first else ()), target=y if holds_last else None)
        elapsed = time.perf_counter() - began
        if times.on:
            per_action.append(times.summary(1, elapsed)["runtime_ms_per_action_all"])
    times.on = False
    times.reset()
    return statistics.median(per_action)


# t(0.975, df): the 95% interval's half-width in standard errors, the rule pipetwin's profiles
# give their spreads by (partition/util/spread.h, StudentT975, which a Python script cannot
# call); between the tabled degrees of freedom the next lower one's, a little wider.
T975 = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26,
        10: 2.23, 12: 2.18, 15: 2.13, 20: 2.09, 25: 2.06, 30: 2.04}


def half_width(samples):
    """The half-width of the 95% interval of the samples' mean (0 for fewer than two)."""
    n = len(samples)
    if n < 2:
        return 0.0
    t = T975[max(k for k in T975 if k <= n - 1)]
    return t * statistics.stdev(samples) / math.sqrt(n)


class StageProfiler:
    """Each layer's times on this rank under torch's runtime, as pipetwin profile measures its
    own (exec/measure/profiler.cc): per micro-batch each layer's forward (the last stage's last
    layer ending in the loss) and backward, the gradients accumulated in the parameters' .grad as
    the schedule leaves them, the forwards and backwards in the order the schedule runs them on
    this rank (`order`, from the schedule's own pipeline_order: run_order), so that what the
    caches hold when a backward starts is what they hold in the run (a backward right after its
    own forward finds its activations hot; in 1F1B's steady state a first stage's backward
    follows the next micro-batch's forward, and runs slower); per iteration the stage's update as
    torch's step makes it: the gradients scaled by 1 / m (PipelineStage.scale_grads), the
    optimizer's step and zero_grad. The ranks profile at once, each its own stages, as they
    compute at once in the run. A layer's backward runs from the gradient of its output (a
    tensor hook) to that of its input; the stage's first layer's ends with autograd's call, its
    weight gradients included. The update is shared among a stage's layers by their parameter
    counts (the step is one pass over each parameter and its state). round() is one iteration of
    each of the rank's stages; `samples` is {stage index: [[forward ms], [backward ms], [update
    ms]] per layer, one sample per recorded round}."""

    def __init__(self, stages, layers, workload, m, b, optimizer_of, loss, generator, order):
        self.m, self.loss, self.order = m, loss, order
        self.stages, self.samples = [], {}
        for index, stage in stages:
            first, last = stage["first_layer"], stage["last_layer"]
            mine = layers[first:last + 1]
            x, y = batch_of(workload, b, generator)
            with torch.no_grad():
                for layer in layers[:first]:
                    x = layer(x)
            if first > 0:
                x = x.detach().requires_grad_(x.is_floating_point())
            parameters = [p for layer in mine for p in layer.parameters()]
            counts = [sum(p.numel() for p in layer.parameters()) for layer in mine]
            self.stages.append({
                "index": index, "layers": mine, "x": x, "y": y,
                "is_last": last == len(layers) - 1, "parameters": parameters,
                "optimizer": optimizer_of(parameters),
                "share": [c / max(1, sum(counts)) for c in counts], "grad_out": None})
            self.samples[index] = [[[], [], []] for _ in mine]

    def round(self, record=True):
        """One iteration: every forward and backward of the rank's stages in the schedule's
        order, then each stage's update."""
        times = {st["index"]: ([0.0] * len(st["layers"]), [0.0] * len(st["layers"]))
                 for st in self.stages}
        by_index = {st["index"]: st for st in self.stages}
        held = {index: [] for index in by_index}  # each stage's micro-batches in flight
        for index, kind in self.order:
            st = by_index[index]
            if kind == "F":
                held[index].append(self._forward(st, times[index][0]))
            else:  # a stage's backwards run in its forwards' order
                self._backward(st, held[index].pop(0), times[index][1])
        for st in self.stages:
            self._update(st, *times[st["index"]], record)

    def _forward(self, st, forward):
        mine, x, y, is_last = st["layers"], st["x"], st["y"], st["is_last"]
        n = len(mine)
        outputs, marks = [], [time.perf_counter()]
        h = x
        for i, layer in enumerate(mine):
            h = layer(h)
            if is_last and i == n - 1:
                h = self.loss(h, y)
            outputs.append(h)
            marks.append(time.perf_counter())
        for i in range(n):
            forward[i] += 1e3 * (marks[i + 1] - marks[i])
        return outputs

    def _backward(self, st, outputs, backward):
        n = len(st["layers"])
        if st["grad_out"] is None and not st["is_last"]:
            st["grad_out"] = torch.randn_like(outputs[-1])
        seen = [None] * n
        for i in range(n - 1):
            outputs[i].register_hook(lambda g, i=i: seen.__setitem__(i, time.perf_counter()))
        begin = time.perf_counter()
        torch.autograd.backward(outputs[-1], st["grad_out"])
        end = time.perf_counter()
        for i in range(n):
            after = seen[i - 1] if i > 0 else end
            before = seen[i] if i < n - 1 else begin
            backward[i] += 1e3 * (after - before)

    def _update(self, st, forward, backward, record):
        m = self.m
        begin = time.perf_counter()
        with torch.no_grad():
            for p in st["parameters"]:
                if p.grad is not None:
                    p.grad.div_(m)
        st["optimizer"].step()
        st["optimizer"].zero_grad(set_to_none=True)
        update = 1e3 * (time.perf_counter() - begin)
        if record:
            for i, times in enumerate(self.samples[st["index"]]):
                times[0].append(forward[i] / m)
                times[1].append(backward[i] / m)
                times[2].append(update * st["share"][i])


def write_profile(path, workload, samples, stages, runtime, runtime_ms):
    """The layers' times in pipetwin's workload format, every other field (names, bytes, the
    layers' inputs) from `workload`, pipetwin's own profile of the same model (--like)
    (partition/model/workload.cc), so that the simulator predicts torch's run from torch's
    compute. runtime_ms: {stage index: torch's runtime's own ms per action of the rank that holds
    it} (probe_runtime), added to each forward and backward of the stage, shared among its
    layers."""
    layers = workload["layers"]
    for index, stage in enumerate(stages):
        times = samples[index]
        runtime_share = runtime_ms[index] / len(times)
        for offset, (forward, backward, update) in enumerate(times):
            layer = layers[stage["first_layer"] + offset]
            layer["forward_ms"] = statistics.mean(forward) + runtime_share
            layer["forward_ms_spread"] = half_width(forward)
            layer["backward_ms"] = statistics.mean(backward) + runtime_share
            layer["backward_ms_spread"] = half_width(backward)
            if "update_ms" in layer:
                layer["update_ms"] = statistics.mean(update)
                layer["update_ms_spread"] = half_width(update)
            layer["description"] = (f"measured under {runtime}, with its own "
                                    f"{runtime_ms[index]:.3f} ms per action")
    workload["name"] = workload.get("name", "workload") + " (torch's runtime)"
    workload.setdefault("reference", {})["device"] = f"{os.uname().nodename} CPU under {runtime}"
    workload.pop("stability", None)
    with open(path, "w") as f:
        json.dump(workload, f, indent=1)


def replay_samples(samples, per_rank, world, m):
    """--replay: StageProfiler's samples with each rank's times replaced by what the run's own
    timers measured on it (ActionTimes.summary): its forwards (the loss included), its backwards
    and its optimizer per iteration, shared among its layers as the profile shares them; and, per
    stage, its rank's runtime per action as the run saw it (runtime_ms_per_action_all: all the
    rank did besides compute, waits and the optimizer, over its actions) in place of the probe's.
    A prediction from these holds only what the simulator adds to the run's own times: the
    schedule's dependencies, the waits and the messages. Stage i is on rank i mod world."""
    replayed, runtime = {}, {}
    for rank in range(world):
        indices = [i for i in samples if i % world == rank]
        run = per_rank[rank]
        mean = statistics.mean
        profiled_f = m * sum(mean(f) for i in indices for f, _, _ in samples[i])
        profiled_b = m * sum(mean(g) for i in indices for _, g, _ in samples[i])
        profiled_u = sum(mean(u) for i in indices for _, _, u in samples[i])
        run_f = run["forward_ms_per_iteration"] + run["loss_ms_per_iteration"]
        run_b = run["compute_ms_per_iteration"] - run_f
        ff, fb = run_f / max(profiled_f, 1e-9), run_b / max(profiled_b, 1e-9)
        fu = run["optimizer_ms_per_iteration"] / max(profiled_u, 1e-9)
        for i in indices:
            replayed[i] = [[[mean(f) * ff], [mean(g) * fb], [mean(u) * fu]]
                           for f, g, u in samples[i]]
            runtime[i] = run["runtime_ms_per_action_all"]
    return replayed, runtime


def write_timeline(path, schedule_name, m, timelines, origin):
    """--timeline: per rank its steady state's step times and every call ActionTimes timed,
    [field, function, start s, end s] from `origin` (the earliest rank's start), so that one
    rank's compute can be set against what the other did meanwhile. The fields nest as they
    run: compute_s (a stage's module forward, autograd's backward) inside action_s."""
    with open(path, "w") as f:
        json.dump({"schedule": schedule_name, "microbatches": m,
                   "ranks": [{"start_s": start - origin, "step_s": steps,
                              "events": [[field, name, a - origin, b - origin]
                                         for field, name, a, b in events]}
                             for start, steps, events in timelines]}, f)


def write_report(path, scenario, schedule_name, depth, world, m, b, iterations, warmup,
                 elapsed, step_s):
    """The run as a measured report in pipetwin's format (partition/report/report.h); what torch's
    runtime does not measure here (memory, bubbles, messages) is left out, not made up."""
    steady = iterations - warmup
    report = {
        "source": "executor", "scenario": scenario.get("name", ""),
        "schedule": schedule_name, "planner": scenario["plan"].get("planner", "manual"),
        "network_model": "datacenter", "pipeline_depth": depth, "worker_count": world,
        "microbatch_size": b, "microbatches_per_iteration": m, "iterations": iterations,
        "samples_per_iteration": m * b, "samples_per_s": m * b * steady / elapsed,
        "iteration_s": elapsed / steady,
        "measurement": f"torch.distributed.pipelining {torch.__version__}: steady state over "
                       f"iterations {warmup + 1}..{iterations} ({warmup} warm-up), between two "
                       "barriers",
        "workers": [], "devices": [], "stages": [], "communication": [],
        "details": {"runtime": f"torch.distributed.pipelining {torch.__version__}",
                    "step_s": step_s},
    }
    with open(path, "w") as f:
        json.dump(report, f, indent=1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("scenario")
    parser.add_argument("--iterations", type=int, default=0)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--report")
    parser.add_argument("--profile",
                        help="before the run, time each layer under torch's runtime on every "
                             "rank and write them as a pipetwin workload file (needs --like)")
    parser.add_argument("--like",
                        help="pipetwin's profile of the same model (pipetwin profile --output): "
                             "the fields --profile does not measure come from it")
    parser.add_argument("--timeline",
                        help="write every rank's timed calls in the steady state (actions, the "
                             "compute inside them, the loss, the exchanges' waits, the "
                             "optimizer) to this JSON file, in seconds from its start")
    parser.add_argument("--replay",
                        help="after the run, write the --profile workload again with the run's "
                             "own times in place of the profiled ones (needs --profile)")
    parser.add_argument("--profile-during", action="store_true",
                        help="with --profile: profile one round of the layers before each timed "
                             "step instead of all of them before the run, each step then timed "
                             "from one barrier to the next (the steps alone are counted)")
    parser.add_argument("--pin", action="store_true",
                        help="pin each rank to one core (LOCAL_RANK mod cores), as pipetwin run "
                             "pins its workers")
    args = parser.parse_args()
    if bool(args.profile) != bool(args.like):
        fail("bench_vs_torch: --profile and --like go together")
    if args.profile_during and not args.profile:
        fail("bench_vs_torch: --profile-during needs --profile")
    if args.replay and not args.profile:
        fail("bench_vs_torch: --replay needs --profile (the times it replaces)")
    if args.like:
        try:
            with open(args.like) as f:
                like = json.load(f)
            if not isinstance(like["layers"], list):
                raise TypeError("not a list")
        except (OSError, ValueError, KeyError, TypeError) as e:
            fail(f"bench_vs_torch: --like {args.like}: expected a pipetwin workload file with a "
                 f"list at $.layers ({type(e).__name__}: {e})")
    with open(args.scenario) as f:
        scenario = json.load(f)
    workload, plan, training = scenario["workload"], scenario["plan"], scenario["training"]
    schedule_name = scenario.get("schedule", plan.get("schedule", "flush"))
    iterations = args.iterations or training.get("iterations", 10)
    m, b = training["microbatches"], training["microbatch_size"]

    if args.pin:
        cores = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cores[int(os.environ.get("LOCAL_RANK", "0")) % len(cores)]})
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // world))  # as pipetwin run does
    torch.manual_seed(1)  # the same weights on every rank before each keeps its stages
    layers = layers_of(workload)
    stages = plan["stages"]
    if args.like and len(like["layers"]) != len(layers):
        fail(f"bench_vs_torch: --like {args.like}: {len(like['layers'])} layers at $.layers, the "
             f"model of {args.scenario} has {len(layers)}")
    chunks = max(2, training.get("chunks", 2)) if schedule_name == "interleaved" else 1
    if len(stages) != world * chunks:
        fail(f"bench_vs_torch: {len(stages)} stages for {world} ranks x {chunks}")
    mine = [rank + c * world for c in range(chunks)]
    pipeline_stages = []
    for index in mine:
        first, last = stages[index]["first_layer"], stages[index]["last_layer"]
        module = nn.Sequential(*layers[first:last + 1])
        pipeline_stages.append(PipelineStage(module, index, len(stages), torch.device("cpu")))
    times = ActionTimes()
    times.install()
    schedule = schedule_of(schedule_name, pipeline_stages, m,
                           times.install_stages(pipeline_stages, loss_fn))
    parameters = [p for s in pipeline_stages for p in s.submod.parameters()]
    lr = training.get("learning_rate", 0.001)
    # pipetwin's optimizers (exec/runtime/weights.h): momentum 0.9, Adam's betas and eps torch's.
    name = training.get("optimizer", "sgd")

    def optimizer_of(ps):
        return (torch.optim.Adam(ps, lr=lr) if name == "adam"
                else torch.optim.SGD(ps, lr=lr, momentum=0.9 if name == "momentum" else 0))

    optimizer = optimizer_of(parameters)
    times.install_optimizer(optimizer)
    holds_first = 0 in mine
    holds_last = len(stages) - 1 in mine
    generator = torch.Generator().manual_seed(2)
    if args.profile:
        profiler = StageProfiler([(i, stages[i]) for i in mine], layers, workload, m, b,
                                 optimizer_of, loss_fn, torch.Generator().manual_seed(3),
                                 run_order(schedule, rank, mine, m))
        for it in range(2 if args.profile_during else iterations + 2):
            profiler.round(record=it >= 2)  # two warm-up rounds left out
        runtime_ms = probe_runtime(times, schedule_name, stages, mine, layers, workload, m, b,
                                   iterations)
    batches = [batch_of(workload, m * b, generator) for _ in range(2)]

    def step(it):
        x, y = batches[it % 2]
        optimizer.zero_grad(set_to_none=True)
        schedule.step(*((x,) if holds_first else ()), target=y if holds_last else None)
        optimizer.step()

    warmup = min(args.warmup, iterations - 1)
    for it in range(warmup):
        step(it)
    dist.barrier()  # the steady state, from one barrier to the next, as a whole
    times.on = True
    me = threading.get_native_id()  # the computing thread (one intra-op thread, this one)
    start = time.perf_counter()
    step_s = []
    accounts = []  # (from, to) readings of the thread account around what is timed
    if not args.profile_during:
        accounts.append(thread_account.read(me))
        for it in range(warmup, iterations):
            began = time.perf_counter()
            step(it)
            step_s.append(time.perf_counter() - began)
        accounts.append(thread_account.read(me))
        dist.barrier()
        elapsed = accounted_s = time.perf_counter() - start
    else:
        # One profiling round of every stage of the rank before each step, so that the profile
        # samples the machine's speed over the same seconds as the run (it moves within seconds
        # on a time-shared guest: docs/validation.md, "The simulator's prediction of torch's
        # run"). Each step then runs from one barrier to the next, all ranks starting it
        # together; the throughput counts those steps alone, and each rank's account
        # (ActionTimes.summary) its step up to its own end, without the barrier's wait.
        accounted_s = 0.0
        times.on = False  # on during the steps alone
        for it in range(warmup, iterations):
            profiler.round()
            dist.barrier()
            times.on = True
            accounts.append(thread_account.read(me))
            began = time.perf_counter()
            step(it)
            accounted_s += time.perf_counter() - began
            accounts.append(thread_account.read(me))
            times.on = False
            dist.barrier()
            step_s.append(time.perf_counter() - began)
        elapsed = sum(step_s)
    times.on = False
    steady = iterations - warmup
    summary = times.summary(steady, accounted_s)
    # The computing thread's wait for its CPU, its preemptions and the CPU of c10d Gloo's
    # threads over the timed steps, under the names of pipetwin's report (details.workers[]);
    # absent where the kernel keeps no schedstat.
    spans = [thread_account.since(to, of) for of, to in zip(accounts[::2], accounts[1::2])]
    if spans and None not in spans:
        account = {key: sum(span[key] for span in spans) for key in spans[0]}
        account["waited_for_cpu_fraction"] = account["waited_for_cpu_s"] / accounted_s
        summary.update(account)
    per_rank = [None] * world
    dist.all_gather_object(per_rank, summary)
    if args.profile:  # written after the run, which --profile-during profiles along
        gathered = [None] * world
        dist.all_gather_object(gathered, (profiler.samples, {i: runtime_ms for i in mine}))
        if rank == 0:
            merged = {k: v for part, _ in gathered for k, v in part.items()}
            runtime_of = {k: v for _, part in gathered for k, v in part.items()}
            runtime = (f"torch.distributed.pipelining {torch.__version__}, "
                       + ("each rank pinned to a core" if args.pin else "ranks unpinned")
                       + (", profiled between the run's steps" if args.profile_during
                          else ", profiled before the run"))
            write_profile(args.profile, copy.deepcopy(like), merged, stages, runtime,
                          runtime_of)
            # Beside each rank's run, what its profile said of the same (the JSON line's
            # per_rank): its compute per iteration (the loss in it, as the run counts it) and
            # the runtime probe's ms per action, so that a prediction's error can be followed to
            # the compute that moved between the profile and the run, or the runtime.
            mean = statistics.mean
            for r, run in enumerate(per_rank):
                run["profiled_compute_ms_per_iteration"] = m * sum(
                    mean(f) + mean(g) for i in merged if i % world == r
                    for f, g, _ in merged[i])
                run["profiled_runtime_ms_per_action"] = runtime_of[r]
    if args.replay and rank == 0:
        replayed, runtime_all = replay_samples(merged, per_rank, world, m)
        write_profile(args.replay, copy.deepcopy(like), replayed, stages,
                      f"torch.distributed.pipelining {torch.__version__}: this run's own timers "
                      "(--replay), not a profile", runtime_all)
    if args.timeline:
        timelines = [None] * world
        dist.all_gather_object(timelines, (start, step_s, times.events))
        if rank == 0:
            origin = min(t[0] for t in timelines)
            write_timeline(args.timeline, schedule_name, m, timelines, origin)
    if rank == 0:
        print(json.dumps({"samples_per_s": m * b * steady / elapsed,
                          "iteration_s": elapsed / steady, "iterations": steady,
                          "ranks": world, "schedule": schedule_name, "pinned": args.pin,
                          "per_rank": per_rank}))
        if args.report:  # pipetwin's depth: the pipeline's positions, one per rank
            write_report(args.report, scenario, schedule_name, world, world, m, b,
                         iterations, warmup, elapsed, step_s)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
