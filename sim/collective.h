// Gradient buckets: how a stage's all-reduce is cut into the pieces its backward launches. The
// ring each piece runs is the core's (partition/cost/communication.h: PlanAllReduce), the one
// the planners' cost model charges.
#pragma once

#include <vector>

#include "partition/cost/communication.h"

namespace pipetwin::sim {

// A gradient bucket (PyTorch DDP): launched once the backward has produced its gradients.
struct GradientBucket {
  double backward_fraction = 0;  // of the backward that produces it
  double bytes = 0;
  int model_stage = -1;  // whose gradients (a worker may hold several: multi-chunk schedules)
};

// Up to `max_buckets` buckets of about equal bytes over a stage's layers, in the order the
// backward produces their gradients (last layer first: the order of `layer_gradient_bytes` and
// `layer_backward_times`). Fractions add up to 1 and bytes to the stage's gradient bytes.
std::vector<GradientBucket> GradientBuckets(const std::vector<double>& layer_gradient_bytes,
                                            const std::vector<double>& layer_backward_times,
                                            int max_buckets);

}  // namespace pipetwin::sim
