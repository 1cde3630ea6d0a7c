// The report's summaries both back ends share (partition/report/summarize.h), on hand-made runs.
#include <gtest/gtest.h>

#include "partition/report/summarize.h"

namespace pipetwin {
namespace {

TEST(ReportSummaries, TheSteadyStateLeavesTheWarmUpAndAnAsynchronousDrainOut) {
  const std::vector<double> ends = {10, 14, 18, 21};  // iteration 4 drains faster
  SteadyState s = SteadyStateWindow(ends, 1, /*asynchronous=*/false);
  EXPECT_DOUBLE_EQ(s.iteration_s, (21 - 10) / 3.0);
  EXPECT_EQ(s.measurement, "steady state over iterations 2..4 (1 warm-up)");
  s = SteadyStateWindow(ends, 1, /*asynchronous=*/true);
  EXPECT_DOUBLE_EQ(s.iteration_s, (18 - 10) / 2.0);
  EXPECT_EQ(s.measurement, "steady state over iterations 2..3 (1 warm-up), the last (drain) left out");
  s = SteadyStateWindow(ends, 0, true);
  EXPECT_DOUBLE_EQ(s.iteration_s, 18 / 3.0);
  EXPECT_EQ(s.measurement, "whole run, 3 iterations, the last (drain) left out");
  // A warm-up of every iteration keeps the last; one iteration is measured whole.
  EXPECT_DOUBLE_EQ(SteadyStateWindow(ends, 9, false).iteration_s, 21 - 18);
  EXPECT_DOUBLE_EQ(SteadyStateWindow({5}, 1, true).iteration_s, 5);
  EXPECT_EQ(SteadyStateWindow({5}, 1, true).measurement, "whole run, 1 iteration");
  // Two iterations of an asynchronous schedule after the warm-up: the drain is left out.
  EXPECT_EQ(SteadyStateWindow({1, 2, 3}, 1, true).measurement,
            "steady state over iteration 2 (1 warm-up), the last (drain) left out");
  // The iterations counted, 0-based: those the measurement names.
  s = SteadyStateWindow(ends, 1, false);
  EXPECT_EQ(s.first_iteration, 1);
  EXPECT_EQ(s.last_iteration, 3);
  s = SteadyStateWindow(ends, 1, true);
  EXPECT_EQ(s.first_iteration, 1);
  EXPECT_EQ(s.last_iteration, 2);
  EXPECT_EQ(s.Iterations(), 2);
  EXPECT_EQ(SteadyStateWindow({5}, 1, true).Iterations(), 1);
}

// Each worker's compute by op kind over those iterations, per iteration (FinishReport): a first
// iteration of 5 s of forwards left out, the drain of an asynchronous schedule too.
TEST(ReportSummaries, SteadyComputeByOpKindIsPerCountedIteration) {
  Report r;
  r.makespan_s = 10;
  WorkerReport w;
  w.busy_by_iteration = {{{"forward", 5}}, {{"forward", 1}, {"update", 0.5}},
                         {{"forward", 2}, {"update", 0.5}}, {{"forward", 9}}};
  r.workers = {w};
  FinishReport(SteadyStateWindow({10, 14, 18, 21}, 1, false), r);
  EXPECT_DOUBLE_EQ(r.workers[0].steady_busy_by_op_s.at("forward"), (1 + 2 + 9) / 3.0);
  EXPECT_DOUBLE_EQ(r.workers[0].steady_busy_by_op_s.at("update"), 1.0 / 3);
  FinishReport(SteadyStateWindow({10, 14, 18, 21}, 1, true), r);
  EXPECT_DOUBLE_EQ(r.workers[0].steady_busy_by_op_s.at("forward"), 1.5);
  EXPECT_DOUBLE_EQ(r.workers[0].steady_busy_by_op_s.at("update"), 0.5);
}

TEST(ReportSummaries, StalenessAndMemoryPeaks) {
  StageSummary stage;
  SummarizeStaleness({0, 1, 1, 2}, stage);
  EXPECT_EQ(stage.staleness_min, 0);
  EXPECT_EQ(stage.staleness_mean, 1);
  EXPECT_EQ(stage.staleness_max, 2);
  MemoryPeaks peaks;
  MemoryCategories a, b;
  a.weights = 10, a.activations = 5;
  b.weights = 12, b.optimizer = 1;
  peaks.Add(0, a);
  peaks.Add(1, b);
  const DeviceReport d = peaks.Report(3, 2, 14, {});
  EXPECT_EQ(d.peak_memory_bytes, 15);  // a: 10 + 5
  EXPECT_EQ(d.peak_time_s, 0);
  EXPECT_EQ(d.category_peaks.weights, 12);  // each category's own maximum
  EXPECT_EQ(d.category_peaks.activations, 5);
  EXPECT_TRUE(d.over_capacity);
}

TEST(ReportSummaries, FinishReportDerivesIdleBubblesAndRates) {
  Report r;
  r.samples_per_iteration = 64;
  r.makespan_s = 10;
  WorkerReport w;
  w.busy_s = 6;
  w.exposed_communication_s = 1;
  r.workers = {w, w};
  r.workers[1].busy_s = 8;
  DeviceReport d;
  d.peak_memory_bytes = 5;
  r.devices = {d};
  FinishReport({2, "two seconds"}, r);
  EXPECT_EQ(r.workers[0].idle_s, 4);
  EXPECT_DOUBLE_EQ(r.workers[1].bubble_fraction, 0.2);
  EXPECT_DOUBLE_EQ(r.bubble_fraction, (4 + 2) / 20.0);
  EXPECT_EQ(r.samples_per_s, 32);
  EXPECT_EQ(r.peak_memory_bytes, 5);
  EXPECT_EQ(r.measurement, "two seconds");
}

}  // namespace
}  // namespace pipetwin
