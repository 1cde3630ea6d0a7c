// Memory: the simulator tracks each device's bytes op by op; its peaks must be what the lists keep
// (AnalyzeSchedule's versions and in-flight micro-batches, which the report's stages are) times
// the bytes of cost/memory.h's WorkerMemory; a plan over capacity is simulated and flagged.
#include <gtest/gtest.h>

#include "partition/cost/pipeline_cost_model.h"
#include "sim/setup.h"
#include "tests/sim/sim_test_support.h"
#include "tests/test_support.h"
#include "partition/cost/memory.h"
#include "partition/schedule/replay.h"

namespace pipetwin {
namespace {

using simtest::EqualLayers;
using simtest::EvenPlan;
using simtest::MakeScenario;
using simtest::TwoLevelCluster;

constexpr double kStash = 1e6, kWeights = 4e6;  // per layer: activation bytes, fp32 weights

Scenario FourStages(const std::string& kind, bool recompute) {
  Scenario s = MakeScenario(EqualLayers(8, 1, 2, kStash, kWeights),
                            TwoLevelCluster(4, 1, 800, 1, 0, 0), EvenPlan(4, 2, 1), kind, 8, 2);
  s.training.recompute = recompute;
  if (kind == "interleaved") s.plan = EvenPlan(8, 1, 1), s.training.chunks = 2;
  return s;
}

TEST(SimMemoryStaleness, PeaksAreWhatTheListsKeep) {
  for (const char* kind : {"gpipe", "flush", "pipedream", "2bw", "zb-h1", "zb-h2", "interleaved"}) {
    for (bool recompute : {false, true}) {
      SCOPED_TRACE(std::string(kind) + (recompute ? " with recomputation" : ""));
      const Scenario s = FourStages(kind, recompute);
      const sim::SimulationSetup setup = sim::PrepareSimulation(s, *s.plan, {});
      const std::vector<StageSummary> core = AnalyzeSchedule(setup.schedule);
      const Report r = simtest::Simulate(s);
      ASSERT_EQ(r.stages.size(), core.size());
      if (std::string(kind) == "interleaved") continue;  // two model stages per worker
      for (const DeviceReport& d : r.devices) {
        const int stage = r.workers[d.worker].stage;
        const double input = stage == 0 ? 0 : kStash;  // the previous stage's output
        const double stash = 2 * kStash;
        const int n = core[stage].max_in_flight_activations;
        EXPECT_DOUBLE_EQ(d.category_peaks.weights, core[stage].max_weight_versions * 2 * kWeights);
        EXPECT_DOUBLE_EQ(d.category_peaks.activations, n * (input + (recompute ? 0 : stash)));
        // ZB-H1 and ZB-H2 keep a rebuilt stash until the delayed weight-gradient pass has used it.
        if (std::string(kind) != "zb-h1" && std::string(kind) != "zb-h2") {
          EXPECT_DOUBLE_EQ(d.category_peaks.recompute, recompute ? stash : 0);
        }
        EXPECT_DOUBLE_EQ(d.category_peaks.optimizer, 2 * kWeights / 4 * 8);
        EXPECT_DOUBLE_EQ(d.category_peaks.gradients, 2 * kWeights);
      }
    }
  }
}

// PipeDream SOSP'19 section 3.3: with weight stashing stage s of a d-stage 1F1B pipeline keeps a
// version for each of its d - s minibatches in flight; without it (training.weight_stashing false)
// one version, and each backward rebuilds its forward from the kept stage input, so the stage
// holds inputs only, plus one rebuilt stash at a time.
TEST(SimMemoryStaleness, WithoutWeightStashingAStageKeepsOneVersionAndItsInputs) {
  const int d = 4;
  for (bool stashing : {true, false}) {
    SCOPED_TRACE(stashing ? "with weight stashing" : "without weight stashing");
    Scenario s = FourStages("pipedream", false);
    s.training.weight_stashing = stashing;
    const Report r = simtest::Simulate(s);
    for (const DeviceReport& dev : r.devices) {
      const int stage = r.workers[dev.worker].stage;
      const int versions = stashing ? d - stage : 1;
      EXPECT_DOUBLE_EQ(dev.category_peaks.weights, versions * 2 * kWeights) << "stage " << stage;
      const double input = stage == 0 ? 0 : kStash;
      const double kept = stashing ? input + 2 * kStash : input;
      EXPECT_DOUBLE_EQ(dev.category_peaks.activations, (d - stage) * kept) << "stage " << stage;
      EXPECT_DOUBLE_EQ(dev.category_peaks.recompute, stashing ? 0 : 2 * kStash);
    }
  }
}

// Qi et al. (ICLR 2024), section 2.1 and Table 2: ZB-H1's worker i (1-based) holds at most
// (p - i + 1) M_B + (i - 1) M_W of activations, ZB-H2's (2p - 2i + 1) M_B + (2i - 2) M_W, where
// M_W is what W still needs after B (Layer::weight_stash_bytes). Without it the whole stash stays
// until W: p - i + 1 and 2p - 2i + 1 full stashes plus the W-pending ones.
TEST(SimMemoryStaleness, ZeroBubbleActivationPeaksAreQiTable2) {
  const int p = 4, m = 8;
  const double mb = 100e6, mw = 30e6;  // M_B and M_W per micro-batch (one layer per stage)
  Workload w = simtest::EqualLayers(p, 1, 2, 0, 4e6);  // no stage input kept: M_B is the stash
  for (Layer& l : w.layers) {
    l.stash_bytes = mb;
    l.weight_stash_bytes = mw;
    l.backward_input_ms = 1;
    l.backward_weight_ms = 1;
  }
  for (const char* kind : {"zb-h1", "zb-h2"}) {
    const bool h2 = std::string(kind) == "zb-h2";
    const Report r = simtest::Simulate(simtest::MakeScenario(
        w, simtest::TwoLevelCluster(p, 1, 800, 0, 0, 0), simtest::EvenPlan(p, 1, 1), kind, m, 2));
    for (const DeviceReport& d : r.devices) {
      const int i = r.workers[d.worker].stage + 1;
      const double expected =
          h2 ? (2 * p - 2 * i + 1) * mb + (2 * i - 2) * mw : (p - i + 1) * mb + (i - 1) * mw;
      EXPECT_NEAR(d.category_peaks.activations, expected, 1) << kind << ", worker " << i;
    }
  }
}

// One weight version: the peak is planner_common's WorkerMemory with the in-flight count the
// schedule reaches.
TEST(SimMemoryStaleness, PeakIsWorkerMemoryForSynchronousSchedules) {
  for (const char* kind : {"gpipe", "flush"}) {
    for (bool recompute : {false, true}) {
      SCOPED_TRACE(std::string(kind) + (recompute ? " with recomputation" : ""));
      const Scenario s = FourStages(kind, recompute);
      const sim::SimulationSetup setup = sim::PrepareSimulation(s, *s.plan, {});
      const std::vector<StageSummary> core = AnalyzeSchedule(setup.schedule);
      const Report r = simtest::Simulate(s);
      for (const DeviceReport& d : r.devices) {
        const int stage = r.workers[d.worker].stage;
        WorkerMemoryInputs in;
        in.parameters = 2 * kWeights / 4;
        in.optimizer_bytes_per_parameter = 8;
        in.stash_bytes_per_microbatch = 2 * kStash;
        in.input_bytes_per_microbatch = stage == 0 ? 0 : kStash;
        in.stashed_microbatches = core[stage].max_in_flight_activations;
        in.recompute = recompute;
        EXPECT_DOUBLE_EQ(d.peak_memory_bytes, WorkerMemory(in).Total()) << "stage " << stage;
        EXPECT_FALSE(d.timeline.empty());
      }
    }
  }
}

TEST(SimMemoryStaleness, OverCapacityIsSimulatedAndFlagged) {
  Scenario s = FourStages("flush", false);
  s.cluster.device.memory_bytes = 20e6;  // stage 0 needs 8 + 8 + 16 MB of state alone
  s.source["cluster"] = ClusterToJson(s.cluster);
  const Report r = simtest::Simulate(s);
  EXPECT_TRUE(r.over_capacity);
  EXPECT_GT(r.samples_per_s, 0);
  ASSERT_FALSE(r.warnings.empty());
  EXPECT_NE(r.warnings[0].find("exceed their memory"), std::string::npos) << r.warnings[0];
  for (const DeviceReport& d : r.devices) EXPECT_TRUE(d.over_capacity);

  const std::string file = simtest::WriteScenario(s);
  auto run = testing::RunPipetwin("simulate " + file);
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.err.find("warning: 4 of 4 devices exceed their memory"), std::string::npos)
      << run.err;
  run = testing::RunPipetwin("simulate " + file + " --strict");
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
  EXPECT_NE(run.err.find("(--strict)"), std::string::npos) << run.err;
}

}  // namespace
}  // namespace pipetwin
