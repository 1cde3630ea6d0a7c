// The shared cost model (planner_common.h) worked by hand, and the baselines: data parallelism,
// GPipe and PipeDream-Flush formulas, the uniform split, the balanced split against an
// exhaustive one, the depth choice and the over-capacity error.
#include "partition/planners/baselines.h"

#include <algorithm>
#include <random>

#include <gtest/gtest.h>

#include "partition/util/error.h"
#include "tests/test_support.h"
#include "partition/cost/communication.h"
#include "partition/cost/memory.h"
#include "partition/planners/settings.h"
#include "partition/planners/splits.h"

namespace pipetwin {
namespace {

// Two layers: forward 1 ms, backward 2 ms per sample, 1e6 fp32 parameters, 1e6-byte outputs.
Workload TwoLayers() {
  Workload w;
  w.layers = {testing::ChainLayer(0, 1, 2, 1e6, 1e6), testing::ChainLayer(1, 1, 2, 1e6, 1e6)};
  return w;
}

// Two devices at 80 Gbps (1e10 B/s), no latency.
Cluster TwoDevices() {
  Cluster c;
  c.levels = {{"server", 2, 80, 0, "nvlink", {}}};
  return c;
}

// Two servers of four: 100 Gbps (12.5e9 B/s, 1 us) inside, 10 Gbps (1.25e9 B/s, 5 us) between.
Cluster TwoServers() {
  Cluster c;
  c.levels = {{"server", 4, 100, 1, "nvlink", {}}, {"cluster", 2, 10, 5, "ethernet", {}}};
  return c;
}

Workload RandomChain(unsigned seed, int layers) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> ms(0.2, 5), size(1e5, 4e6);
  Workload w;
  for (int i = 0; i < layers; ++i)
    w.layers.push_back(testing::ChainLayer(i, ms(rng), 2 * ms(rng), size(rng), size(rng)));
  return w;
}

TEST(BaselineCostModelTest, AllReduceIsHierarchicalAcrossLevels) {
  const PipelineCostModel model(TwoLayers(), TwoServers(), {});
  const double bytes = 1e8;
  // All 8: a ring of 4 in each server (2 x 3/4 x 1e8 / 12.5e9 s = 12 ms, 6 steps of 1 us), then
  // a ring of 2 servers on each quarter shard; the 4 shards of a server share its one NIC, so
  // it carries 2 x 1/2 x 4 x 2.5e7 bytes at 1.25e9 B/s = 80 ms (2 steps of 5 + 1 us: a message
  // across servers pays both levels' latency).
  EXPECT_NEAR(model.AllReduceCost({0, 1, 2, 3, 4, 5, 6, 7}).Ms(bytes), 12 + 0.006 + 80 + 0.012,
              1e-9);
  // One replica per server: a single ring over the slow level (2 x 1/2 x 1e8 / 1.25e9 s = 80 ms).
  EXPECT_NEAR(model.AllReduceCost({1, 5}).Ms(bytes), 80 + 0.012, 1e-9);
  // Inside one server only.
  EXPECT_NEAR(model.AllReduceCost({0, 1, 2, 3}).Ms(bytes), 12 + 0.006, 1e-9);
  EXPECT_EQ(model.AllReduceCost({2}).Ms(bytes), 0);
}

TEST(BaselineCostModelTest, PlacementPutsDepthInsideServersAndWidthAcross) {
  const PipelineCostModel model(TwoLayers(), TwoServers(), {});
  EXPECT_NEAR(model.TransferCost(0, 1).Ms(1.25e7), 0.001 + 1, 1e-12);   // 1.25e7 / 12.5e9 s
  EXPECT_NEAR(model.TransferCost(3, 4).Ms(1.25e7), 0.006 + 10, 1e-12);  // 1.25e7 / 1.25e9 s
  const PipelinePlacement p = model.Place(3, 2);  // replicas {0,1,2} and {3,4,5}
  EXPECT_EQ(p.devices, (std::vector<std::vector<int>>{{0, 3}, {1, 4}, {2, 5}}));
  // Boundary 0|1 crosses servers in replica 1 (device 3 -> 4): the slow link sets its cost.
  EXPECT_NEAR(p.send_next[0].Ms(1.25e7), 10.006, 1e-12);
  EXPECT_NEAR(p.send_next[1].Ms(1.25e7), 1.001, 1e-12);
  EXPECT_THROW(model.Place(3, 3), InputError);  // 9 workers on 8 devices
}

// Every stage all-reduces after its batch: stages 0 and 1 of two replicas a server apart (devices
// {0, 4} and {1, 5}) both cross each server's one NIC at once, so each ring gets half of it:
// 2 x 1/2 x 1e8 bytes at 1.25e9 / 2 B/s = 160 ms each (80 ms alone), as the simulator's shared
// links give (sim/platform.h). A group inside one server shares no uplink.
TEST(BaselineCostModelTest, AllReducesRunningAtOnceShareTheServersUplink) {
  const PipelineCostModel model(TwoLayers(), TwoServers(), {});
  const double bytes = 1e8;
  const std::vector<LinearCost> both = ConcurrentRingAllReduceCosts(TwoServers(), {{0, 4}, {1, 5}});
  ASSERT_EQ(both.size(), 2u);
  EXPECT_NEAR(both[0].Ms(bytes), 160 + 0.012, 1e-9);
  EXPECT_NEAR(both[1].Ms(bytes), 160 + 0.012, 1e-9);
  EXPECT_NEAR(ConcurrentRingAllReduceCosts(TwoServers(), {{0, 4}})[0].Ms(bytes), 80 + 0.012, 1e-9);
  const std::vector<LinearCost> apart =
      ConcurrentRingAllReduceCosts(TwoServers(), {{0, 4}, {1, 2}});  // {1, 2}: one server
  EXPECT_NEAR(apart[0].Ms(bytes), 80 + 0.012, 1e-9);
  // The placement of depth 2, width 2 is exactly those groups.
  const PipelinePlacement p = model.Place(2, 2);
  EXPECT_EQ(p.devices, (std::vector<std::vector<int>>{{0, 2}, {1, 3}}));
  const PipelinePlacement wide = model.Place(4, 2);  // {0,4} {1,5} {2,6} {3,7}: four rings
  EXPECT_NEAR(wide.allreduce[0].Ms(bytes), 4 * 80 + 0.012, 1e-9);
}

TEST(BaselineCostModelTest, DagBoundariesCarryEveryCrossingOutput) {
  // 0 -> 1 -> 2 -> 3 and 0 -> 2: layer 0's output crosses the cuts after 0 and after 1.
  Workload w;
  for (int i = 0; i < 4; ++i) w.layers.push_back(testing::ChainLayer(i, 1, 1, 1e3 * (i + 1), 0));
  w.layers[2].inputs = {1, 0};
  const PipelineCostModel model(w, TwoServers(), {});
  EXPECT_EQ(model.BoundaryBytes(0, 1), 1e3);
  EXPECT_EQ(model.BoundaryBytes(1, 1), 2e3 + 1e3);
  EXPECT_EQ(model.BoundaryBytes(2, 3), 3 * 3e3);
  EXPECT_EQ(model.BoundaryBytes(3, 1), 0);
  EXPECT_EQ(model.BoundaryBytes(-1, 1), 0);
}

TEST(BaselineCostModelTest, TimesScaleWithBatchAndSpeed) {
  Workload w = TwoLayers();
  w.reference.batch_size = 4;  // the times are for 4 samples
  Cluster c = TwoDevices();
  c.device.relative_speed = 2;
  const PipelineCostModel model(w, c, {});
  EXPECT_DOUBLE_EQ(model.ComputeMs(0, 1, 8, false), 2 * 3 * 8 / 4.0 / 2);
  EXPECT_DOUBLE_EQ(model.ComputeMs(0, 1, 8, true), 2 * 4 * 8 / 4.0 / 2);
  EXPECT_DOUBLE_EQ(model.BoundaryBytes(0, 8), 2e6);
}

TEST(BaselineCostModelTest, WorkerMemoryFollowsThe2bwAppendix) {
  WorkerMemoryInputs in;
  in.parameters = 1e6;
  in.parameter_dtype_bytes = 2;
  in.gradient_dtype_bytes = 2;
  in.optimizer_bytes_per_parameter = 8;
  in.weight_versions = 2;
  in.stash_bytes_per_microbatch = 5e6;
  in.input_bytes_per_microbatch = 1e5;
  in.stashed_microbatches = 4;
  MemoryCategories m = WorkerMemory(in);
  EXPECT_EQ(m.weights, 4e6);
  EXPECT_EQ(m.gradients, 2e6);
  EXPECT_EQ(m.optimizer, 8e6);
  EXPECT_EQ(m.activations, 4 * (1e5 + 5e6));
  EXPECT_EQ(m.recompute, 0);
  in.recompute = true;
  // With recomputation n stage inputs stay stashed, and one micro-batch's full stash is rebuilt.
  EXPECT_EQ(WorkerMemory(in).activations, 4 * 1e5);
  EXPECT_EQ(WorkerMemory(in).recompute, 5e6);
  EXPECT_EQ(StashedMicrobatches(ScheduleKind::kGPipe, 1, 4, 16), 16);
  EXPECT_EQ(StashedMicrobatches(ScheduleKind::kFlush, 1, 4, 16), 3);
  EXPECT_EQ(StashedMicrobatches(ScheduleKind::kTwoBW, 0, 4, 2), 2);
  EXPECT_EQ(WeightVersions(ScheduleKind::kTwoBW, 3, 4, 8), 2);
  EXPECT_EQ(WeightVersions(ScheduleKind::kPipeDream, 1, 4, 8), 3);
  EXPECT_EQ(WeightVersions(ScheduleKind::kFlush, 0, 4, 8), 1);
}

// b = 1, m = 4 on both devices: 4 x 6 ms of compute, then 2 x 1/2 x 8e6 B / 1e10 B/s = 0.8 ms.
TEST(BaselineTest, DataParallelHandWorked) {
  PlannerSettings s;
  s.microbatches = 4;
  const Plan p = PlanBaseline(BaselineKind::kDataParallel, TwoLayers(), TwoDevices(), s);
  EXPECT_EQ(p.planner, "data-parallel");
  EXPECT_EQ(ScheduleKindName(p.schedule), "flush");
  ASSERT_EQ(p.StageCount(), 1);
  EXPECT_EQ(p.stages[0].devices, (std::vector<int>{0, 1}));
  EXPECT_NEAR(p.details["time_per_update_ms"].get<double>(), 24.8, 1e-9);
  EXPECT_NEAR(p.predicted_samples_per_s, 2 * 4 * 1e3 / 24.8, 1e-9);
  EXPECT_NEAR(p.details["breakdown"]["allreduce_ms"].get<double>(), 0.8, 1e-12);
  // One weight version (8e6), gradients 8e6, Adam 16e6, one micro-batch's stash 2e6.
  EXPECT_EQ(p.memory_bytes_per_device, (std::vector<double>{34e6, 34e6}));
}

// Depth 2, w = 1, b = 1, m = 4: each stage 3 ms compute, one hop 1e6 B / 1e10 B/s = 0.1 ms;
// GPipe (m - 1) x 3 + (3 + 3) + 2 x 0.1 = 15.2 ms; 1F1B-flush paces its m - 1 at 1F1B's loop
// between the two stages, (3 + 3 + 2 x 0.1) / 2 = 3.1 ms, so 3 x 3.1 + 6 + 0.2 = 15.5 ms. Per stage 16e6 bytes of weights, gradients and Adam;
// each stashed micro-batch keeps the stage input (0 at stage 0, 1e6 at stage 1) and 1e6 of
// stash. GPipe stashes all 4 micro-batches; 1F1B 2 at stage 0 and 1 at stage 1.
TEST(BaselineTest, GPipeAndFlushHandWorked) {
  PlannerSettings s;
  s.depth = 2;
  s.microbatches = 4;
  const Plan gpipe = PlanBaseline(BaselineKind::kGPipe, TwoLayers(), TwoDevices(), s);
  EXPECT_EQ(ScheduleKindName(gpipe.schedule), "gpipe");
  // GPipe by hand: stage 0's forwards end at 1, 2, 3, 4 ms; stage 1's (0.1 ms later each) at
  // 2.1 .. 5.1, its backwards at 7.1 .. 13.1; stage 0's backwards, each 0.1 ms after its
  // gradient left, end at 9.2, 11.2, 13.2, 15.2. The formula: 3 x 3 + (3 + 3) + 2 x 0.1.
  EXPECT_NEAR(gpipe.details["time_per_update_ms"].get<double>(), 15.2, 1e-9);
  EXPECT_NEAR(gpipe.details["breakdown"]["bubble_ms"].get<double>(), 3, 1e-9);
  EXPECT_NEAR(gpipe.details["breakdown"]["communication_ms"].get<double>(), 0.2, 1e-9);
  EXPECT_NEAR(gpipe.predicted_samples_per_s, 4e3 / 15.2, 1e-9);
  EXPECT_EQ(gpipe.memory_bytes_per_device, (std::vector<double>{20e6, 24e6}));
  const Plan flush = PlanBaseline(BaselineKind::kFlush, TwoLayers(), TwoDevices(), s);
  EXPECT_EQ(ScheduleKindName(flush.schedule), "flush");
  // 1F1B's own list schedule takes 15.4 ms here: its warm-up and cool-down are not at the pace.
  EXPECT_NEAR(flush.predicted_samples_per_s, 4e3 / 15.5, 1e-9);
  EXPECT_EQ(flush.memory_bytes_per_device, (std::vector<double>{18e6, 18e6}));
  // Recomputation: a third ms per stage; GPipe keeps 4 stage inputs and one full stash.
  s.recompute = true;
  const Plan again = PlanBaseline(BaselineKind::kGPipe, TwoLayers(), TwoDevices(), s);
  EXPECT_NEAR(again.details["time_per_update_ms"].get<double>(), 3 * 4 + 8 + 0.2, 1e-9);
  EXPECT_EQ(again.memory_bytes_per_device, (std::vector<double>{17e6, 16e6 + 4e6 + 1e6}));
}

// With a global batch the baselines take the fewest micro-batches per pipeline that reach it:
// 2 pipelines (width 2 on 4 devices at depth 2) of micro-batch 4 need ceil(100 / 8) = 13.
TEST(BaselineTest, GlobalBatchSetsTheMicrobatchCount) {
  PlannerSettings s;
  s.depth = 2;
  s.microbatch_size = 4;
  s.global_batch_size = 100;
  Cluster four = TwoDevices();
  four.levels[0].count = 4;
  for (BaselineKind kind : {BaselineKind::kGPipe, BaselineKind::kFlush}) {
    const Plan p = PlanBaseline(kind, TwoLayers(), four, s);
    EXPECT_EQ(p.microbatches_per_update, 13) << BaselineName(kind);
    EXPECT_EQ(p.details["global_batch_size"].get<int>(), 104) << BaselineName(kind);
  }
  const Plan dp = PlanBaseline(BaselineKind::kDataParallel, TwoLayers(), four, s);
  EXPECT_EQ(dp.microbatches_per_update, 7);  // 4 replicas x 4 samples: ceil(100 / 16)
}

TEST(BaselineTest, UniformSplitGivesTheFirstStagesTheRemainder) {
  const auto split = UniformSplit(10, 4);
  ASSERT_EQ(split.size(), 4u);
  EXPECT_EQ(split[0].last_layer, 2);
  EXPECT_EQ(split[1].last_layer, 5);
  EXPECT_EQ(split[2].last_layer, 7);
  EXPECT_EQ(split[3].last_layer, 9);
  PlannerSettings s;
  s.depth = 4;
  const Plan p = PlanBaseline(BaselineKind::kUniform, RandomChain(3, 10), TwoServers(), s);
  EXPECT_EQ(p.planner, "uniform");
  EXPECT_EQ(p.stages[3].first_layer, 8);
  EXPECT_EQ(p.stages[0].replicas, 2);
}

// The balanced split reaches the smallest largest-stage compute of every contiguous split.
TEST(BaselineTest, BalancedSplitIsOptimalAgainstExhaustiveSearch) {
  for (unsigned seed = 1; seed <= 10; ++seed) {
    const Workload w = RandomChain(seed, 9);
    const PipelineCostModel model(w, TwoServers(), {});
    for (int d = 1; d <= 8; ++d) {
      double best = kInfinity;
      for (int cuts = 0; cuts < (1 << 8); ++cuts) {
        if (__builtin_popcount(cuts) != d - 1) continue;
        double slowest = 0;
        for (int first = 0; first < 9;) {
          int last = first;
          while (last < 8 && !(cuts & (1 << last))) ++last;
          slowest = std::max(slowest, model.ComputeMs(first, last, 2, seed % 2 == 0));
          first = last + 1;
        }
        best = std::min(best, slowest);
      }
      double got = 0;
      for (const StageRange& r : BalancedSplit(model, d, 2, seed % 2 == 0))
        got = std::max(got, model.ComputeMs(r.first_layer, r.last_layer, 2, seed % 2 == 0));
      EXPECT_NEAR(got, best, 1e-12 * best) << "seed " << seed << " depth " << d;
    }
  }
}

TEST(BaselineTest, DepthZeroTakesTheSmallestDepthThatFits) {
  const Workload w = RandomChain(4, 8);
  const PipelineCostModel model(w, TwoServers(), {});
  std::vector<double> fullest(9, 0);  // by depth
  for (int d = 1; d <= 8; ++d)
    fullest[d] = PredictFlushedPipeline(model, ScheduleKind::kFlush, BalancedSplit(model, d, 1, false), 8 / d,
                                        1, 8, false)
                     .memory_bytes;
  PlannerSettings s;
  s.memory_bytes_per_device = fullest[4];
  int expected = 1;
  while (fullest[expected] > s.memory_bytes_per_device) ++expected;
  ASSERT_GT(expected, 1);
  const Plan p = PlanBaseline(BaselineKind::kFlush, w, TwoServers(), s);
  EXPECT_EQ(p.StageCount(), expected);
  EXPECT_EQ(p.stages[0].replicas, 8 / expected);
  EXPECT_NO_THROW(ValidatePlan(p, w, 8, "plan.json"));
  EXPECT_EQ(PlanFromJson(PlanToJson(p), "plan.json").WorkerCount(), expected * (8 / expected));
  EXPECT_TRUE(p.details["fits"].get<bool>());
}

TEST(BaselineTest, OverCapacityNamesTheStageOrIsFlagged) {
  PlannerSettings s;
  s.memory_bytes_per_device = 1e6;
  s.depth = 2;
  try {
    PlanBaseline(BaselineKind::kGPipe, TwoLayers(), TwoDevices(), s);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "gpipe baseline: depth 2 does not fit the device; the smallest shortfall is stage "
              "1 of 2 (layers 1..1, micro-batch 1, recomputation off), which needs 30.52 MiB "
              "(32,000,000 bytes) but the device has 976.6 KiB (1,000,000 bytes)");
  }
  s.allow_over_capacity = true;
  const Plan p = PlanBaseline(BaselineKind::kGPipe, TwoLayers(), TwoDevices(), s);
  EXPECT_FALSE(p.details["fits"].get<bool>());
}

TEST(BaselineTest, BadNamesAndSettingsAreOneLine) {
  EXPECT_EQ(BaselineKindFromName("balanced"), BaselineKind::kBalanced);
  try {
    BaselineKindFromName("pipedream");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "unknown baseline planner \"pipedream\" (expected one of data-parallel, gpipe, "
              "flush, uniform, balanced)");
  }
  PlannerSettings s;
  s.depth = 3;  // two layers
  EXPECT_THROW(PlanBaseline(BaselineKind::kFlush, TwoLayers(), TwoDevices(), s), InputError);
  s.depth = 1;
  s.microbatches = 0;
  EXPECT_THROW(PlanBaseline(BaselineKind::kFlush, TwoLayers(), TwoDevices(), s), InputError);
}

}  // namespace
}  // namespace pipetwin
