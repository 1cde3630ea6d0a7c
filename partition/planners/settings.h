// What a planner is told: the cost model's settings (cost/pipeline_cost_model.h) and its own.
#pragma once

#include <string>
#include <vector>

#include "partition/cost/pipeline_cost_model.h"

namespace pipetwin {

// What a planner is told besides the workload and the cluster: the cost model's settings and
// those of the 2BW search and of the baselines.
struct PlannerSettings : CostSettings {
  // PipeDream-2BW search.
  int max_global_batch_size = 1024;     // w * b * m at most this
  std::vector<int> microbatch_candidates = {1, 2, 4, 8, 16, 32, 64};
  bool search_recompute = true;         // false: recomputation off only
  int ranked_count = 10;                // rows of the ranked table

  // Baselines: a configuration chosen by hand.
  int depth = 0;                        // gpipe/flush/uniform/balanced; 0: smallest that fits
  int microbatch_size = 1;
  int microbatches = 8;                 // m per weight update, unless global_batch_size is set
  // Samples per update over the cluster (0: none). The baselines then take m = the fewest
  // micro-batches per pipeline that reach it: ceil(global / (width x micro-batch)).
  int global_batch_size = 0;
  bool recompute = false;
  ScheduleKind split_schedule = ScheduleKind::kFlush;  // of uniform/balanced: kFlush or kGPipe
  bool allow_over_capacity = false;     // baselines: return (fits: false) instead of throwing
};

}  // namespace pipetwin
