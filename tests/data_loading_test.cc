// The one data-loading rule (partition/cost/data_loading.h) as the cost model and the PipeDream
// planner apply it, against values worked out by hand.
#include "partition/cost/data_loading.h"

#include <gtest/gtest.h>

#include "partition/cost/pipeline_cost_model.h"
#include "partition/planners/pipedream/planner.h"
#include "tests/test_support.h"

namespace pipetwin {
namespace {

// Two layers of forward 1 ms and backward 2 ms per sample; loading takes 10 ms per sample.
Workload Loaded(double load_ms_per_sample) {
  Workload w;
  w.layers = {testing::ChainLayer(0, 1, 2, 1e6, 1e6), testing::ChainLayer(1, 1, 2, 1e6, 1e6)};
  w.data_loading_ms = load_ms_per_sample;
  return w;
}

Cluster TwoDevices() {
  Cluster c;
  c.levels = {{"server", 2, 80, 0, "nvlink", {}}};
  return c;
}

TEST(DataLoadingRule, LoadScalesWithSamplesAndMeetsComputeByMode) {
  Workload w = Loaded(10);
  w.reference.batch_size = 4;  // 10 ms per 4 samples
  EXPECT_DOUBLE_EQ(LoadMs(w, 8), 20);
  EXPECT_DOUBLE_EQ(InputStageMs(3, 20, DataLoading::kSerial), 23);
  EXPECT_DOUBLE_EQ(InputStageMs(3, 20, DataLoading::kOverlapped), 20);
  EXPECT_DOUBLE_EQ(InputStageMs(30, 20, DataLoading::kOverlapped), 30);
  EXPECT_EQ(ParseDataLoading("serial"), DataLoading::kSerial);
  EXPECT_FALSE(ParseDataLoading("eager"));
}

// Only a range from layer 0 is an input stage: micro-batch 2 loads in 20 ms, computes in 6 ms
// per layer.
TEST(DataLoadingRule, TheCostModelChargesTheInputStageOnly) {
  for (auto [mode, input_stage] : {std::pair{DataLoading::kOverlapped, 20.0},
                                   std::pair{DataLoading::kSerial, 26.0}}) {
    CostSettings settings;
    settings.data_loading = mode;
    const PipelineCostModel model(Loaded(10), TwoDevices(), settings);
    EXPECT_DOUBLE_EQ(model.ComputeMs(0, 0, 2, false), input_stage) << DataLoadingName(mode);
    EXPECT_DOUBLE_EQ(model.ComputeMs(1, 1, 2, false), 6);
    EXPECT_DOUBLE_EQ(model.ComputeMs(0, 1, 2, false),
                     InputStageMs(12, 20, mode));  // data parallelism: one stage, all layers
  }
}

// PipeDream's paper model charges the input stage's load; the compat model (the public
// optimizer, which drops Input nodes) does not. One machine: the stage is the whole model,
// 3 + 3 ms per sample of compute, 10 ms of loading.
TEST(DataLoadingRule, ThePipeDreamPaperModelChargesItTheCompatModelDoesNot) {
  PipeDreamOptions o;
  o.levels = {{1, 1e10}};
  o.data_loading_s = 10e-3;
  o.cost_model = PipeDreamCostModel::kPaper;
  EXPECT_NEAR(PlanPipeDream(Loaded(10), o).time_per_stage_s, 10e-3, 1e-12);
  o.data_loading_serial = true;
  EXPECT_NEAR(PlanPipeDream(Loaded(10), o).time_per_stage_s, 16e-3, 1e-12);
  o.cost_model = PipeDreamCostModel::kCompat;
  EXPECT_NEAR(PlanPipeDream(Loaded(10), o).time_per_stage_s, 6e-3, 1e-12);
}

}  // namespace
}  // namespace pipetwin
