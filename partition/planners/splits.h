// Contiguous splits of a chain of layers into stages: equal layer counts, or equal time.
#pragma once

#include <vector>

#include "partition/cost/pipeline_cost_model.h"

namespace pipetwin {

// A contiguous range of layers.
struct StageRange {
  int first_layer = 0;
  int last_layer = 0;
};

// Equal layer counts; the first L mod d stages take one layer more (DeepSpeed's
// partition_uniform, what Megatron-LM users do with equal blocks per stage).
std::vector<StageRange> UniformSplit(int layers, int depth);
// Contiguous split minimising the largest stage compute time (forward + backward, + forward with
// recomputation) for micro-batch b: "equal time per stage".
std::vector<StageRange> BalancedSplit(const PipelineCostModel& model, int depth, int b,
                                      bool recompute);

}  // namespace pipetwin
