// Baseline plans in the units of the 2BW planner (same cost model, planner_common.h): what users
// of plain data parallelism, GPipe, PipeDream-Flush, DeepSpeed and Megatron-LM set up by hand.
//
//   data-parallel  one stage of every layer on all workers; gradient accumulation over m
//                  micro-batches, then a ring all-reduce, hierarchical across levels
//   gpipe          balanced split at depth d, GPipe schedule (Huang et al., NeurIPS 2019)
//   flush          balanced split at depth d, 1F1B with a flush (PipeDream-Flush: Narayanan et
//                  al., ICML 2021, section 3.2; SC'21, section 2.2.1)
//   uniform        equal layer counts per stage (DeepSpeed's "uniform", Megatron's equal blocks),
//                  schedule settings.split_schedule
//   balanced       equal time per stage, schedule settings.split_schedule ("flush": the same
//                  plan as `flush`, under its own name)
// Pipelines take w = floor(workers / d) replicas placed as PipelineCostModel::Place says; b, m
// and recomputation come from the settings. depth 0 takes the smallest depth that fits.
//
// Time per update (synchronous, flushed at every update; the all-reduce is not overlapped):
//   (m + d - 1) * max_s (compute_s + transfer_s) + max_s allreduce_s
// with compute, transfer and memory from the shared cost model (2BW appendix A.1: transfer is
// 2 |A| / bandwidth per neighbour; GPipe stashes m micro-batches, 1F1B min(d - s, m)).
// GPipe section 2.3 gives the bubble fraction (d - 1) / (m + d - 1); Megatron-LM (SC'21, section
// 2.2.1) the same for PipeDream-Flush. samples/s = w * b * m / time per update.
//
//   PlannerSettings s;  s.depth = 4;  s.microbatches = 16;
//   Plan p = PlanBaseline(BaselineKind::kGPipe, workload, cluster, s);
#pragma once

#include <string>
#include <vector>

#include "partition/model/cluster.h"
#include "partition/model/plan.h"
#include "partition/cost/pipeline_cost_model.h"
#include "partition/planners/settings.h"
#include "partition/planners/splits.h"
#include "partition/model/workload.h"

namespace pipetwin {

enum class BaselineKind { kDataParallel, kGPipe, kFlush, kUniform, kBalanced };

// "data-parallel", "gpipe", "flush", "uniform", "balanced".
std::string BaselineName(BaselineKind kind);
// Throws InputError listing the names when `name` is none of them.
BaselineKind BaselineKindFromName(const std::string& name);

// A flushed pipeline's prediction.
struct PipelinePrediction {
  ScheduleKind schedule = ScheduleKind::kFlush;  // kGPipe or kFlush
  int width = 1;
  int depth = 1;
  int microbatch_size = 1;
  int microbatches = 1;
  bool recompute = false;
  std::vector<StageEstimate> stages;
  int bottleneck_stage = 0;      // the largest compute, or one-way transfer after it
  double time_per_update_ms = 0;
  double samples_per_s = 0;
  // Per update; they sum to time_per_update_ms.
  double compute_ms = 0;         // m x the bottleneck's compute
  // Transfers not hidden: every boundary's hop forward and back once (the fill and the drain),
  // and m - 1 times the margin by which a transfer outpaces the bottleneck's compute.
  double communication_ms = 0;
  double bubble_ms = 0;          // the other stages' compute, once (the fill and the drain)
  // The all-reduces past the flush: each stage's starts at its last backward (the last stage's
  // first); rings leaving their servers share the uplinks (a work-conserving link's busy period).
  double allreduce_ms = 0;
  double memory_bytes = 0;       // the fullest worker
};

// Predicts a pipeline with the given split (d = splits.size()) and w replicas. `schedule` is
// GPipe (every micro-batch stashed) or Flush (1F1B: min(d - s, m) stashed at stage s).
PipelinePrediction PredictFlushedPipeline(const PipelineCostModel& model, ScheduleKind schedule,
                                          const std::vector<StageRange>& splits, int width,
                                          int microbatch_size, int microbatches, bool recompute);

// The baseline as a Plan (planner = BaselineName(kind)) with `details` holding w, d, b, m,
// recompute, the breakdown, per-stage times and memory and "fits". Throws InputError on bad
// input, and when the plan does not fit the device (unless settings.allow_over_capacity), naming
// the stage, the bytes it needs and the capacity.
Plan PlanBaseline(BaselineKind kind, const Workload& workload, const Cluster& cluster,
                  const PlannerSettings& settings);

}  // namespace pipetwin
