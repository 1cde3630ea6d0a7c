// The dynamic program every split of the planners runs: a contiguous partition minimising the
// most expensive stage.
#pragma once

#include <vector>

#include "partition/cost/pipeline_cost_model.h"
#include "partition/planners/splits.h"

namespace pipetwin {

// Contiguous partition of `layers` layers into `depth` stages that minimises max_s cost(s, i, j)
// (stage s holds layers i..j) by dynamic programming over prefixes, O(depth L^2). `cost` returns
// kInfinity for an inadmissible stage; stages costing more than `limit` are inadmissible too.
// `lower(i, j)` must bound cost(s, i, j) from below for every s and must not decrease as i
// decreases: the scan over i stops once it reaches the best value so far. Among equal optima the
// first found wins (the last stage as short as possible, then the one before, ...). Returns the
// optimum (kInfinity when nothing is admissible) and fills `ranges` when it is finite.
class MinMaxPartitioner {
 public:
  template <class Cost, class Lower>
  double Solve(int layers, int depth, const Cost& cost, const Lower& lower, double limit,
               std::vector<StageRange>* ranges);

 private:
  std::vector<double> best_;  // best_[s * layers + j]: stages 0..s over layers 0..j
  std::vector<int> start_;    // first layer of stage s in that optimum
};

template <class Cost, class Lower>
double MinMaxPartitioner::Solve(int layers, int depth, const Cost& cost, const Lower& lower,
                                double limit, std::vector<StageRange>* ranges) {
  if (depth < 1 || depth > layers) return kInfinity;
  best_.assign(static_cast<size_t>(depth) * layers, kInfinity);
  start_.assign(static_cast<size_t>(depth) * layers, -1);
  for (int s = 0; s < depth; ++s) {
    // Stage s ends at j >= s; later stages need a layer each; the last stage ends the model.
    for (int j = (s == depth - 1 ? layers - 1 : s); j <= layers - depth + s; ++j) {
      double& best = best_[s * layers + j];
      for (int i = (s == 0 ? 0 : j); i >= s; --i) {
        const double bound = lower(i, j);
        if (bound >= best || bound > limit) break;
        const double before = s == 0 ? 0 : best_[(s - 1) * layers + i - 1];
        if (before >= best) continue;
        double c = cost(s, i, j);
        if (c > limit) c = kInfinity;
        const double value = before > c ? before : c;
        if (value < best) {
          best = value;
          start_[s * layers + j] = i;
        }
      }
    }
  }
  const double result = best_[(depth - 1) * layers + layers - 1];
  if (result == kInfinity || ranges == nullptr) return result;
  ranges->assign(depth, StageRange{});
  for (int s = depth - 1, j = layers - 1; s >= 0; --s) {
    const int i = start_[s * layers + j];
    (*ranges)[s] = {i, j};
    j = i - 1;
  }
  return result;
}

}  // namespace pipetwin
