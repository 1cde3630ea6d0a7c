// 1F1B's pace (partition/cost/pipeline_pace.h), which the 2BW planner and the 1F1B-flush baseline
// charge, against the independent list-scheduling replay (tests/oracle/list_schedule.h): run the
// core's 2BW op lists (1F1B without a flush) for 48 and for 96 batches; past its transient the
// replay's makespan grows by the pace for every micro-batch in between (the steady state can
// repeat over several micro-batches, so shorter runs land between two of its phases). Random
// unequal stages as in the oracle's own test: 2 to 8 stages, forwards and backwards from 1 to
// 10 ms, transfers from 0 to 2 ms (a channel then never carries more than its one message per
// micro-batch's worth, the one bound the replay's free links do not have).
#include <gtest/gtest.h>

#include <cstdio>
#include <random>

#include "partition/cost/pipeline_pace.h"
#include "partition/schedule/build.h"
#include "tests/oracle/list_schedule.h"

namespace pipetwin {
namespace {

double Makespan(int p, int m, int batches, const oracle::ListScheduleCase& costs) {
  ScheduleSpec spec;
  spec.kind = ScheduleKind::kTwoBW;
  spec.stages = p;
  spec.microbatches = m;
  spec.batches = batches;
  return oracle::ListScheduleMakespan(BuildSchedule(spec), costs);
}

TEST(SimPipelinePace, EqualsTheListScheduleReplaysGrowth) {
  std::mt19937 rng(20261201u);
  auto uniform = [&](double lo, double hi) { return std::uniform_real_distribution<>(lo, hi)(rng); };
  double worst = 0;
  for (int i = 0; i < 200; ++i) {
    const int p = std::uniform_int_distribution<>(2, 8)(rng);
    const int m = std::uniform_int_distribution<>(p, 4 * p)(rng);
    oracle::ListScheduleCase costs;
    std::vector<double> compute, transfer;
    for (int s = 0; s < p; ++s) {
      costs.forward.push_back(uniform(1, 10) * 1e-3);
      costs.backward.push_back(uniform(1, 10) * 1e-3);
      costs.transfer.push_back(uniform(0, 2) * 1e-3);
      compute.push_back(costs.forward.back() + costs.backward.back());
      if (s + 1 < p) transfer.push_back(costs.transfer.back());
    }
    const double growth = (Makespan(p, m, 96, costs) - Makespan(p, m, 48, costs)) / (48.0 * m);
    const double pace = OneFOneBPaceMs(compute, transfer, transfer);
    const double error = std::abs(pace / growth - 1);
    worst = std::max(worst, error);
    EXPECT_LT(error, 1e-9) << "case " << i << ": p " << p << " m " << m << ": pace " << pace
                           << " s, the replay grows " << growth << " s per micro-batch";
  }
  std::printf("200 random pipelines, worst relative difference %.2e\n", worst);
}

// By hand: two stages of 3 ms with transfers of 0.1 ms each way loop every two micro-batches,
// (3 + 3 + 0.1 + 0.1) / 2 = 3.1 ms; three stages of 1 ms with transfers of 1 ms: the whole
// pipeline's loop, (3 + 4) / 3 = 7/3 ms, beats two neighbours' (2 + 2) / 2 = 2 ms; a 5 ms
// activation between stages of 1 ms is a channel's one message per micro-batch.
TEST(SimPipelinePace, HandWorked) {
  EXPECT_DOUBLE_EQ(OneFOneBPaceMs({3, 3}, {0.1}, {0.1}), 3.1);
  EXPECT_DOUBLE_EQ(OneFOneBPaceMs({1, 1, 1}, {1, 1}, {1, 1}), 7.0 / 3);
  EXPECT_DOUBLE_EQ(OneFOneBPaceMs({1, 1}, {5}, {0}), 5);
  EXPECT_DOUBLE_EQ(OneFOneBPaceMs({4}, {}, {}), 4);
}

}  // namespace
}  // namespace pipetwin
