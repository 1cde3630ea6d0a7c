// The dynamic program every split of the planners runs: a contiguous partition minimising the
// most expensive stage.
#pragma once

#include <cstdint>
#include <string>
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
//
// Work is bounded (hostile input: a planner never runs for hours): a table of more than
// kMaxPartitionCells cells (depth x layers) is refused before it is allocated, and the steps
// (candidate first layers tried) over all of one partitioner's solves are capped at
// `step_budget`; both throw InputError saying which split was asked.
constexpr int64_t kMaxPartitionCells = int64_t{1} << 26;  // 0.8 GB of table
constexpr int64_t kDefaultPartitionSteps = int64_t{10'000'000'000};  // minutes at most

class MinMaxPartitioner {
 public:
  explicit MinMaxPartitioner(int64_t step_budget = kDefaultPartitionSteps)
      : step_budget_(step_budget) {}
  template <class Cost, class Lower>
  double Solve(int layers, int depth, const Cost& cost, const Lower& lower, double limit,
               std::vector<StageRange>* ranges);
  int64_t Steps() const { return steps_; }

 private:
  [[noreturn]] static void Refuse(const std::string& why);
  int64_t step_budget_;
  int64_t steps_ = 0;
  std::vector<double> best_;  // best_[s * layers + j]: stages 0..s over layers 0..j
  std::vector<int> start_;    // first layer of stage s in that optimum
};

template <class Cost, class Lower>
double MinMaxPartitioner::Solve(int layers, int depth, const Cost& cost, const Lower& lower,
                                double limit, std::vector<StageRange>* ranges) {
  if (depth < 1 || depth > layers) return kInfinity;
  if (int64_t{depth} * layers > kMaxPartitionCells)
    Refuse("splitting " + std::to_string(layers) + " layers into " + std::to_string(depth) +
           " stages needs a table of " + std::to_string(int64_t{depth} * layers) +
           " cells, more than pipetwin's limit of " + std::to_string(kMaxPartitionCells));
  best_.assign(static_cast<size_t>(depth) * layers, kInfinity);
  start_.assign(static_cast<size_t>(depth) * layers, -1);
  for (int s = 0; s < depth; ++s) {
    // Stage s ends at j >= s; later stages need a layer each; the last stage ends the model.
    for (int j = (s == depth - 1 ? layers - 1 : s); j <= layers - depth + s; ++j) {
      double& best = best_[s * layers + j];
      for (int i = (s == 0 ? 0 : j); i >= s; --i) {
        if (++steps_ > step_budget_)
          Refuse("the planner's splits of " + std::to_string(layers) + " layers (now into " +
                 std::to_string(depth) + " stages) took more than pipetwin's limit of " +
                 std::to_string(step_budget_) + " steps");
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
