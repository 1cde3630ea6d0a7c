#!/usr/bin/env python3
"""torch.distributed.pipelining's own schedules and CSV loader, without processes or GPUs.

Run with the project's Python (.venv/bin/python, scripts/setup-torch.sh), which has torch:

  torch_schedules.py order CLASS STAGES_PER_RANK RANKS MICROBATCHES
      the compute actions torch's schedule CLASS runs, one row per rank, one action per cell,
      idle steps left out (OVERLAP_F_B pairs as torch writes them: "(0F3;1B2)OVERLAP_F_B").
      For the single-stage classes (Schedule1F1B, ScheduleGPipe) this is the order their own
      step loop (_step_microbatches) calls the stage in, recorded on a stand-in stage: their
      pipeline_order, which only describes the loop, can differ from it (torch 2.11's
      Schedule1F1B pipeline_order starts the last rank at micro-batch 1 and ends it at m, a
      micro-batch that does not exist). The multi-stage classes run their pipeline_order.
  torch_schedules.py lowered CLASS STAGES_PER_RANK RANKS MICROBATCHES
      the same schedule as torch lowers it (pipeline_order_with_comms: SEND/RECV, REDUCE_GRAD);
      multi-stage classes only
  torch_schedules.py load FILE FORMAT OUT
      loads FILE with torch's own _PipelineScheduleRuntime._load_csv (FORMAT compute_only or
      compute_comms), which validates it, and writes torch's lowered form of it to OUT
      (_dump_csv, compute_comms)

CLASS is a torch class name (Schedule1F1B, ScheduleGPipe, ScheduleInterleaved1F1B,
ScheduleLoopedBFS, ScheduleInterleavedZeroBubble, ScheduleZBVZeroBubble, ScheduleDualPipeV).
Exit 0 on success, 3 when torch refuses the configuration (its message on stderr), 77 when
torch cannot be imported.

The stages handed to torch are stand-ins that carry what a schedule's constructor reads (the
stage index, the stage count, the rank and the group size): building an order needs no model
and no process group.
"""
import csv
import io
import sys

try:
    import torch  # noqa: F401
    from torch.distributed.pipelining import schedules
except Exception as e:  # torch absent or broken: the caller skips
    print(f"torch is not importable here: {e}", file=sys.stderr)
    sys.exit(77)


class StandInStage:
    """What a schedule's constructor reads of a _PipelineStageBase."""

    def __init__(self, stage_index, num_stages, rank, group_size):
        self.stage_index = stage_index
        self.num_stages = num_stages
        self.group_rank = rank
        self.group_size = group_size
        self.submod = None  # read by the torch.compile check of the zero-bubble classes
        self.stage_index_to_group_rank = {}
        self.is_first = stage_index == 0
        self.is_last = stage_index == num_stages - 1


class RecordingStage(StandInStage):
    """A stand-in that a single-stage schedule's step loop can drive: no communication (every
    send and receive list is empty), and each forward and backward call recorded in order."""

    def __init__(self, stage_index, num_stages, rank, group_size):
        super().__init__(stage_index, num_stages, rank, group_size)
        self.is_last = False  # no loss to compute: the loop asks for none
        self.calls = []
        self.has_backward = True

    def _get_init_p2p_neighbors_ops(self):
        return []

    def _prepare_forward_infra(self, *args, **kwargs):
        return ()

    def _prepare_backward_infra(self, *args, **kwargs):
        pass

    def clear_runtime_states(self):
        pass

    def get_fwd_recv_ops(self, *args, **kwargs):
        return []

    get_fwd_send_ops = get_bwd_recv_ops = get_bwd_send_ops = get_fwd_recv_ops

    def forward_one_chunk(self, mb, *args, **kwargs):
        self.calls.append(f"{self.stage_index}F{mb}")
        return None

    def backward_one_chunk(self, mb, *args, **kwargs):
        self.calls.append(f"{self.stage_index}B{mb}")

    def perform_reduce_grad(self, *args, **kwargs):
        pass


def executed_single_stage_order(cls_name, ranks, microbatches):
    """The order a single-stage class's own step loop runs, rank by rank."""
    cls = getattr(schedules, cls_name)
    rows = []
    for rank in range(ranks):
        stage = RecordingStage(rank, ranks, rank, ranks)
        schedule = cls(stage, microbatches, loss_fn=lambda output, target: output)
        schedule._step_microbatches()
        rows.append(stage.calls)
    return rows


def is_single_stage(cls_name):
    return issubclass(getattr(schedules, cls_name), schedules.PipelineScheduleSingle)


def stage_indices(cls_name, per_rank, ranks, rank):
    if cls_name in ("ScheduleZBVZeroBubble", "ScheduleDualPipeV"):
        return [rank, 2 * ranks - 1 - rank]  # the V (torch generate_stage_to_rank_mapping "v")
    return [c * ranks + rank for c in range(per_rank)]


def build(cls_name, per_rank, ranks, microbatches):
    cls = getattr(schedules, cls_name)
    num_stages = per_rank * ranks
    stages = [StandInStage(i, num_stages, 0, ranks)
              for i in stage_indices(cls_name, per_rank, ranks, 0)]
    if issubclass(cls, schedules.PipelineScheduleSingle):
        return cls(stages[0], microbatches)
    return cls(stages, microbatches)


def write_rows(rows, out):
    writer = csv.writer(out, lineterminator="\n")
    for row in rows:
        writer.writerow(row)


def compute_rows(schedule):
    order = schedule.pipeline_order
    rows = []
    for rank in sorted(order):
        cells = []
        for action in order[rank]:
            if action is None:
                continue
            if action.computation_type == schedules.REDUCE_GRAD:
                continue  # the single-stage classes append it to their order
            cells.append(str(action))
        rows.append(cells)
    return rows


def load_and_dump(path, form, out):
    """Loads the CSV at `path` with torch's _PipelineScheduleRuntime._load_csv (`form`:
    compute_only or compute_comms; torch validates it) and writes torch's lowered form of it
    to `out` (_dump_csv, compute_comms). Raises what torch raises."""
    with open(path, newline="") as f:
        rows = [[c for c in row if c.strip()] for row in csv.reader(f)]
    stages, microbatches, per_rank = 0, 0, 0
    for row in rows:
        held = set()
        for cell in row:
            action = schedules._Action.from_str(cell)
            for a in action.sub_actions or (action,):
                if a.stage_index >= 0:
                    held.add(a.stage_index)
                    stages = max(stages, a.stage_index + 1)
                if a.microbatch_index is not None:
                    microbatches = max(microbatches, a.microbatch_index + 1)
        per_rank = max(per_rank, len(held))
    rank0 = [StandInStage(i, stages, 0, len(rows)) for i in range(per_rank)]
    runtime = schedules._PipelineScheduleRuntime(rank0, microbatches)
    runtime._load_csv(path, format=form)
    runtime._dump_csv(out, format="compute_comms")


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    command = argv[1]
    try:
        if command in ("order", "lowered"):
            cls_name = argv[2]
            per_rank, ranks, microbatches = (int(a) for a in argv[3:6])
            schedule = build(cls_name, per_rank, ranks, microbatches)
            if command == "order":
                rows = (executed_single_stage_order(cls_name, ranks, microbatches)
                        if is_single_stage(cls_name) else compute_rows(schedule))
                write_rows(rows, sys.stdout)
            else:
                order = schedule.pipeline_order_with_comms
                write_rows([[str(a) for a in order[r]] for r in sorted(order)], sys.stdout)
            return 0
        if command == "load":
            load_and_dump(argv[2], argv[3], argv[4])
            return 0
    except (ValueError, AssertionError, RuntimeError, KeyError) as e:
        print(f"torch refuses it: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}",
              file=sys.stderr)
        return 3
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
