// What a schedule is built from: its kind, depth, replicas and micro-batches; and the op times a
// replay of it runs with.
#pragma once

#include <vector>

#include "partition/schedule/op.h"

namespace pipetwin {

// Time of each op in a replay. Compute ops scale by 1/chunks under interleaving (F and B are a
// worker's time per micro-batch over all its chunks).
struct OpCosts {
  double forward = 1;
  double backward = 2;
  double backward_input = -1;   // < 0: backward / 2
  double backward_weight = -1;  // < 0: backward / 2
  double recompute = -1;        // < 0: forward
  double all_reduce = 0;
  double update = 0;
  double transfer = 0;          // per Send/Recv pair

  double Of(const Op& op, int chunks) const;
};

// The buckets a replicated stage's gradients are all-reduced in, unless a scenario says otherwise
// (training.allreduce_buckets): one, after the backward, as the executor runs it and as the
// planners' cost model charges it (cost/pipeline_cost_model.h: the all-reduce is not
// overlapped). More buckets overlap the all-reduce with the backward that precedes it (PyTorch
// DDP), which the simulator models and the executor does not.
constexpr int kDefaultAllReduceBuckets = 1;

struct ScheduleSpec {
  ScheduleKind kind = ScheduleKind::kFlush;
  int stages = 1;
  // Micro-batches per batch (gpipe, flush, interleaved, zb-h1, zb-h2, 2bw's m); minibatches to run
  // (pipedream).
  int microbatches = 1;
  // Per position; empty = one each (dualpipe: two each, one mirror pair). Under dualpipe
  // `stages` counts mirror pairs, PP/2 for PP ranks, and a position's replicas come in pairs.
  std::vector<int> replicas;
  int chunks = 1;             // interleaved only
  int batches = 0;            // 2bw only: batches to run (0: 4)
  bool vertical_sync = false; // pipedream only
  // Pipedream only. false: no weight stashing; each backward runs on the worker's latest weights,
  // its forward rerun on them from the kept stage input first (a Recompute op, as recompute
  // lowers it): the gradient of the latest weights at activations that differ from the ones sent
  // on, the inconsistency weight stashing exists to prevent (PipeDream SOSP'19 sections 3.3 and
  // 5.5). No version is kept beside the current one, so no update copies the weights.
  bool weight_stashing = true;
  bool recompute = false;
  int allreduce_buckets = kDefaultAllReduceBuckets;  // of every AllReduce op (>= 1)
  int layer_count = 0;        // when known (> 0): stages * chunks must not exceed it
  int worker_count = 0;       // when known (> 0): the replicas must add up to it
  // Under recompute: recompute in the backward, once the gradient has arrived (Megatron-LM,
  // torch.utils.checkpoint), or early, while the gradient is on its way.
  RecomputeTiming recompute_timing = RecomputeTiming::kInBackward;
  // Whether a worker waits for its sends to be delivered before its next compute op (op.h).
  SendMode send_mode = SendMode::kEager;
};

// The micro-batches per round of the looped 1F1B family (interleaved, interleaved-zb, zb-h1) on
// `microbatches` per replica over `stages` positions: m / max(1, floor(m / p)), which is p when p
// divides m (torch ScheduleInterleaved1F1B's number_of_rounds and microbatches_per_round).
int MicrobatchesPerRound(int stages, int microbatches);

// NOAM (PipeDream SOSP'19 section 3.2): ceil(workers / replicas of the input stage).
int OptimalActiveMinibatches(const std::vector<int>& replicas);
// Micro-batches a worker of position `stage` has in flight in 1F1B: ceil(workers at positions
// >= stage / replicas of stage). Without replication: P - stage.
int InFlightTarget(const std::vector<int>& replicas, int stage);

}  // namespace pipetwin
