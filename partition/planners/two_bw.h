// PipeDream-2BW's planner (Narayanan, Phanishayee, Shi, Chen, Zaharia, "Memory-Efficient
// Pipeline-Parallel DNN Training", ICML 2021, section 4 and appendix A).
//
// Space (section 4.2, appendix A.2): width w and depth d with w * d <= workers (equi-replicated
// parallel pipelines, section 3.3), a per-worker micro-batch b from the candidates, recomputation
// off or on, and m micro-batches per update: as many as the global batch allows
// (w * b * m <= max_global_batch_size) and at least d (2BW makes a new weight version every
// m >= d micro-batches, section 3.1). For each (w, d, b, recompute) the stages are the
// contiguous split that minimises the slowest stage's time, its transfers and ring alone, under
// the memory capacity, found exactly by dynamic programming (the paper splits equal blocks evenly; on a uniform chain that
// is this split). A larger m only hides the all-reduce better at no memory cost, so the largest
// m is taken.
//
// Throughput (appendix A.1.1): one micro-batch per replica every
//   t = max( max_s compute_s(b) + transfer_s(b), A / m )
// where transfer_s = 2 |A(b)| / bandwidth per neighbouring stage, recomputation adds a forward
// pass to compute_s, and the all-reduces of every stage's gradients among its w replicas
// overlap the next m micro-batches together: A is the longer of the slowest stage's ring alone
// and the busiest link's work, the bytes all rings put on it over its bandwidth (a server's NIC
// carries every stage's ring; max-min fair sharing is work-conserving, so all of them end no
// earlier). The paper gives each all-reduce its links to itself (A = max_s allreduce_s).
// samples/s = w * b / t (steady state: 2BW never flushes).
// Memory per worker (appendix A.1.2, plus gradients and optimizer state): 2 |W_s| weights,
// |W_s| gradients, optimizer bytes x parameters, and for the n = d - s micro-batches in flight
// at stage s (d at the first stage, the paper's worst case): n stage inputs plus n full stashes,
// or with recomputation n stage inputs plus one full stash. Over the capacity: rejected.
//
//   Plan p = Plan2BW(workload, ClusterPreset("p3.16xlarge", 8), PlannerSettings{});
//   p.details["ranked"][0];   // {"data_parallel": 5, "pipeline_depth": 12, ...} the best
#pragma once

#include <vector>

#include "partition/model/cluster.h"
#include "partition/model/plan.h"
#include "partition/cost/pipeline_cost_model.h"
#include "partition/planners/settings.h"
#include "partition/planners/splits.h"
#include "partition/model/workload.h"

namespace pipetwin {

// One configuration of the 2BW space with its best split.
struct TwoBWConfiguration {
  int width = 1;
  int depth = 1;
  int microbatch_size = 1;
  int microbatches = 1;  // per update, per pipeline
  bool recompute = false;
  double time_per_microbatch_ms = 0;  // t above
  double samples_per_s = 0;
  double memory_bytes = 0;            // the fullest worker
  std::vector<StageRange> stages;
};

struct TwoBWSearch {
  std::vector<TwoBWConfiguration> ranked;  // best first: samples/s, then less memory, then
                                           // smaller d, w, b, recomputation off
  int configurations = 0;  // (w, d, b, recompute) that satisfy the batch rule
  int solved = 0;          // of those, how many needed a split (the rest were bounded away)
};

// The time per micro-batch a 2BW stage sets on its own: max(compute + transfer, allreduce / m),
// allreduce its ring alone.
double TwoBWStageMs(const StageTimes& times, int microbatches);

// The time per micro-batch configuration c (its stages set) is charged on `placement`: 1F1B's
// pace (cost/pipeline_pace.h), with every stage's all-reduce at once, the transfers' share of
// the links they cross with the rings while those run after each update, and 2BW's weight rule
// (two_bw.cc, UpdateMsPerMicrobatch). The search picks each candidate's split by the slowest
// stage alone (TwoBWStageMs, a min-max over stages) and ranks it by this.
double TwoBWMsPerMicrobatch(const PipelineCostModel& model, const PipelinePlacement& placement,
                            const TwoBWConfiguration& c);

// Searches the space above. Throws InputError when settings are out of range, and when no
// configuration fits, naming the smallest shortfall: the stage, the bytes it needs and the
// device's capacity.
TwoBWSearch Search2BW(const PipelineCostModel& model, const PlannerSettings& settings);

// The best configuration as a Plan (planner "2bw", schedule "2bw"), with `details` holding w, d,
// b, m, recompute, the cost breakdown per update, per-stage times and memory, and `ranked`, the
// top settings.ranked_count configurations. Throws InputError as Search2BW and
// PipelineCostModel do. This is the function to time: validation, search and plan together.
Plan Plan2BW(const Workload& workload, const Cluster& cluster, const PlannerSettings& settings);

}  // namespace pipetwin
