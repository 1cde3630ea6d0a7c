// An independent statement of PipeDream's stage costs for the planner's tests, written from
// shared/PIPEDREAM_PLANNER.md (the public optimizer) and SOSP'19 section 3.1 (the paper), with
// no code shared with partition/pipedream_dp.cc. It prices one stage of a layout; the tests use
// it to enumerate every layout by brute force and to re-price the layouts the planner returns
// (LayoutPricer).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "partition/planners/pipedream/antichain.h"
#include "partition/planners/pipedream/dp.h"
#include "partition/planners/pipedream/options.h"

namespace pipetwin::testing {

constexpr double kInfeasible = std::numeric_limits<double>::infinity();

// A stage of a layout at one level: states first..last, `replicas` machines, `index` its place in
// the range being split (0 = first), `machines_through` the machines of it and those before it.
struct RefStage {
  int first, last, replicas, index, machines_through;
};

// The time one stage adds to its level's maximum, or kInfeasible when the memory rule rejects it
// or its inner time is infeasible. `inner_s` is the stage's compute time as this level sees it:
// the profile's at level 0, the level below's best for the range above it.
inline double RefStageTime(const AntichainLinearization& s, const PipeDreamOptions& o, int level,
                           const RefStage& st, double inner_s) {
  const bool compat = o.cost_model == PipeDreamCostModel::kCompat;
  const int machines = o.levels[level].machines;
  const double bandwidth = o.levels[level].bandwidth_bytes_per_s;
  const double params = s.RangeParameters(st.first, st.last);
  const double acts = s.RangeActivation(st.first, st.last);
  const int r = st.replicas;
  if (o.use_memory_constraint) {
    // Code: ceil((M - machines through this stage) / r) minibatches stashed; paper model: + 1.
    double factor = std::ceil(double(machines - st.machines_through) / r) + (compat ? 0 : 1);
    if (factor * (acts + params) > o.memory_bytes_per_device) return kInfeasible;
  }
  if (inner_s == kInfeasible) return kInfeasible;
  double sync = 4.0 * (r - 1) * params / (bandwidth * r);
  if (!compat) {
    double t = std::max(inner_s, sync) / r;
    if (st.index > 0) {  // the paper's 2 C_k for the cut in front of the stage
      double cut = 2 * s.State(st.first - 1).output_activation_bytes / bandwidth;
      t = std::max(t, cut / o.activation_compression_ratio.value_or(1.0));
    }
    return t;
  }
  const int within = level == 0 ? 1 : o.levels[level - 1].machines;
  if (st.index == 0) return (inner_s + sync / within) / r;  // `within` on the first stage only
  double t = (inner_s + sync) / r;
  if (o.activation_compression_ratio) {  // cuts cost only with a ratio, split over r
    const double R = *o.activation_compression_ratio;
    t = std::max(t, 2 * s.State(st.first - 1).output_activation_bytes / (bandwidth * r) / R);
    if (st.last < s.StateCount() - 1)
      t = std::max(t, 2 * s.State(st.last).output_activation_bytes / (bandwidth * r) / R);
  }
  return t;
}

// Re-prices a returned layout level by level (PipeDreamResult::levels, highest first).
// With the memory rule on, a stage it rejects prices at kInfeasible.
class LayoutPricer {
 public:
  LayoutPricer(const AntichainLinearization& s, const PipeDreamOptions& o,
               const std::vector<std::vector<PipeDreamSpan>>& highest_first)
      : s_(s), o_(o), levels_(highest_first.rbegin(), highest_first.rend()),
        next_(levels_.size(), 0) {}

  // The time of the whole layout: its slowest stage at the highest level.
  double PriceWholeModel() {
    return Price(static_cast<int>(levels_.size()) - 1, 0, s_.StateCount() - 1);
  }
  // The time of states first..last at `level`, consuming that level's spans in order.
  double Price(int level, int first, int last) {
    double worst = 0;
    int used = 0, index = 0, expect = first;
    while (expect <= last) {
      const PipeDreamSpan& span = levels_[level].at(next_[level]++);
      EXPECT_EQ(span.first_state, expect) << "level " << level;
      const double inner = level == 0 ? s_.RangeCompute(span.first_state, span.last_state)
                                      : Price(level - 1, span.first_state, span.last_state);
      used += span.replicas;
      const RefStage st{span.first_state, span.last_state, span.replicas, index++,
                        o_.use_fewer_machines ? span.machines_through : used};
      worst = std::max(worst, RefStageTime(s_, o_, level, st, inner));
      expect = span.last_state + 1;
    }
    EXPECT_LE(used, o_.levels[level].machines);
    return worst;
  }

 private:
  const AntichainLinearization& s_;
  const PipeDreamOptions& o_;
  std::vector<std::vector<PipeDreamSpan>> levels_;
  std::vector<size_t> next_;
};

}  // namespace pipetwin::testing
