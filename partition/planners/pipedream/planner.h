// PipeDream's partitioner (Narayanan et al., SOSP'19, section 3.1): stage boundaries and a
// replication factor per stage, solved per topology level from the lowest (inside a server) to
// the highest (across servers), for the slowest stage's time per minibatch.
//
// Requires a workload whose layers are in topological order (ValidateAndSortWorkload) and
// options that pass ValidatePipeDreamOptions. Guarantees: the plan's stages cover every layer in
// order; each stage's devices are distinct ids of the cluster the levels describe (device d sits
// in server d / levels[0].machines); the same inputs always give the same plan (ties between
// layouts are broken in a fixed order, see pipedream_dp.h).
//
//   PipeDreamOptions o;
//   o.levels = {{16, 1.25e9}};
//   o.cost_model = PipeDreamCostModel::kCompat;
//   o.activation_compression_ratio = 1;
//   PipeDreamResult r = PlanPipeDream(ImportPipeDreamProfile("vgg16/graph.txt"), o);
//   r.time_per_stage_s;              // 0.0547949: the optimizer's "Time per stage in pipeline"
//   r.plan.stages[0].replicas;       // 13 (the input stage, data parallel)
#pragma once

#include <vector>

#include "partition/planners/pipedream/antichain.h"
#include "partition/planners/pipedream/dp.h"
#include "partition/planners/pipedream/options.h"
#include "partition/model/plan.h"
#include "partition/model/workload.h"

namespace pipetwin {

struct PipeDreamResult {
  // stages, devices, per-stage compute / communication / memory, the prediction, and in
  // `details`: cost_model, noam, states, time_per_stage_s, single_stage_time_s,
  // data_parallel_time_s, levels, and layer_order when the layers had to be reordered.
  Plan plan;
  double time_per_stage_s = 0;       // the slowest stage: seconds per minibatch
  double single_stage_time_s = 0;    // the whole model on one machine
  // Data parallelism over every level: t = C; per level t = (t + sync / within) / M in the
  // code's model, t = max(t, sync) / M in the paper's (sync = 4 (M-1) P / (B M)).
  double data_parallel_time_s = 0;
  // No plan is faster: the whole model's compute over every machine. With the prefix search
  // (AntichainLinearization::exact() false) time_per_stage_s / lower_bound_s - 1 bounds how far
  // the plan can be from the optimum.
  double lower_bound_s = 0;
  // Per level, highest first, the stages of every range the level above handed down, in
  // order, as the optimizer prints them ("(start, end) ... replication factor").
  std::vector<std::vector<PipeDreamSpan>> levels;
  int state_count = 0;
  int noam = 1;  // ceil(workers / replicas of the input stage), SOSP'19 section 3.2
  // The workload indices in the order the plan's first_layer / last_layer count. The identity
  // unless a branchy graph's stages are not contiguous in the workload's own order; then the
  // layers are sorted by (stage, index), a topological order (see AssignLayersToStages).
  std::vector<int> layer_order;
  bool reordered = false;
};

// The most work the partitioner takes on, refused in one line before anything is allocated
// (naming the states, the levels and the way under it): 1e11 steps of the dynamic program
// (EstimatePipeDreamWork; minutes on one core) and 4 GiB for its tables or for linearising,
// which keeps per state its ancestors and bit sets of its ancestors and down-set (about
// 2.5 n^2 bytes for n layers on a chain, checked with n = the layer count before it runs).
constexpr double kMaxPipeDreamSteps = 1e11;
constexpr double kMaxPipeDreamBytes = 4.0 * (1 << 30);

// Plans `workload` with the levels and cost model of `options`. Throws InputError for bad
// options, and when no configuration fits: for the memory rule, naming the stage of the closest
// configuration (the one needing the least memory per device), the bytes it needs per device and
// the bytes the device has.
PipeDreamResult PlanPipeDream(const Workload& workload, const PipeDreamOptions& options);

// The same on states already built (for benchmarks and tests that reuse them).
PipeDreamResult PlanPipeDream(const Workload& workload, const AntichainLinearization& states,
                              const PipeDreamOptions& options);

}  // namespace pipetwin
