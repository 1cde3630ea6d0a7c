// PipeDream's planner on the six shared PipeDream profiles. The public optimizer cannot run in
// the test suite, so these check what could go wrong: the compat time per stage is what its own
// layout costs when re-priced independently (pipedream_planner_reference.h), it never exceeds the
// single-stage and data-parallel baselines, the switches do what they say, and branchy graphs
// (GNMT, ResNet) give the same plan every run with stages that are contiguous layer ranges.
#include <gtest/gtest.h>

#include <set>

#include "partition/util/error.h"
#include "partition/planners/pipedream/planner.h"
#include "tests/pipedream_planner_reference.h"
#include "tests/test_support.h"
#include "workloads/import/pipedream_profile.h"

namespace pipetwin {
namespace {

using testing::kInfeasible;
using testing::LayoutPricer;

const char* const kProfiles[] = {"alexnet", "gnmt", "resnet18", "resnet50", "squeezenet1_0",
                                 "vgg16"};

#define LOAD_PROFILE_OR_SKIP(var, name)                                               \
  std::optional<std::string> var##_path = testing::SharedProfile(name);               \
  if (!var##_path) {                                                                  \
    GTEST_SKIP() << "shared profile " << name << " absent";                           \
  }                                                                                   \
  const Workload var = ImportPipeDreamProfile(*var##_path)

PipeDreamOptions Compat(std::vector<PipeDreamLevel> levels, std::optional<double> ratio = 1.0) {
  PipeDreamOptions o;
  o.cost_model = PipeDreamCostModel::kCompat;
  o.levels = std::move(levels);
  o.activation_compression_ratio = ratio;
  return o;
}

// The plan covers every layer once, in a topological order, on distinct devices.
void ExpectWellFormed(const Workload& w, const PipeDreamResult& r, int devices_used) {
  const Plan& p = r.plan;
  ASSERT_FALSE(p.stages.empty());
  EXPECT_EQ(p.stages.front().first_layer, 0);
  EXPECT_EQ(p.stages.back().last_layer, w.LayerCount() - 1);
  std::set<int> devices;
  for (size_t q = 0; q < p.stages.size(); ++q) {
    if (q > 0) {
      EXPECT_EQ(p.stages[q].first_layer, p.stages[q - 1].last_layer + 1);
    }
    EXPECT_EQ(static_cast<int>(p.stages[q].devices.size()), p.stages[q].replicas);
    for (int d : p.stages[q].devices) EXPECT_TRUE(devices.insert(d).second) << "device " << d;
  }
  if (devices_used > 0) {
    EXPECT_EQ(static_cast<int>(devices.size()), devices_used);
  }
  // layer_order is a permutation in which every input comes first.
  std::vector<int> position(w.LayerCount(), -1);
  for (int p_index = 0; p_index < w.LayerCount(); ++p_index) position[r.layer_order[p_index]] = p_index;
  for (int v = 0; v < w.LayerCount(); ++v) {
    ASSERT_GE(position[v], 0);
    for (int in : w.layers[v].inputs) EXPECT_LT(position[in], position[v]);
  }
}

const std::vector<std::vector<PipeDreamLevel>> kTopologies = {
    {{16, 1.25e9}}, {{4, 1.25e10}, {4, 1.25e9}}, {{8, 1.25e10}, {2, 1.25e9}}};

TEST(PipeDreamPlannerProfiles, CompatTimeIsWhatItsLayoutCosts) {
  for (const char* name : kProfiles) {
    LOAD_PROFILE_OR_SKIP(w, name);
    const AntichainLinearization states = LinearizeLikePipeDream(w);
    for (const auto& levels : kTopologies) {
      for (std::optional<double> ratio : {std::optional<double>(1.0), std::optional<double>()}) {
        SCOPED_TRACE(std::string(name) + ", " + std::to_string(levels.size()) + " levels" +
                     (ratio ? ", ratio 1" : ", no ratio"));
        const PipeDreamOptions o = Compat(levels, ratio);
        const PipeDreamResult r = PlanPipeDream(w, states, o);
        LayoutPricer pricer(states, o, r.levels);
        EXPECT_NEAR(pricer.PriceWholeModel(), r.time_per_stage_s, 1e-9 * r.time_per_stage_s);
        EXPECT_LE(r.time_per_stage_s, r.single_stage_time_s);
        EXPECT_LE(r.time_per_stage_s, r.data_parallel_time_s * (1 + 1e-12));
        ExpectWellFormed(w, r, 16);
      }
    }
  }
}

TEST(PipeDreamPlannerProfiles, PaperTimeIsWhatItsLayoutCosts) {
  for (const char* name : kProfiles) {
    LOAD_PROFILE_OR_SKIP(w, name);
    const AntichainLinearization states = LinearizeLikePipeDream(w);
    for (const auto& levels : kTopologies) {
      SCOPED_TRACE(std::string(name) + ", " + std::to_string(levels.size()) + " levels");
      PipeDreamOptions o;
      o.levels = levels;
      const PipeDreamResult r = PlanPipeDream(w, states, o);
      LayoutPricer pricer(states, o, r.levels);
      EXPECT_NEAR(pricer.PriceWholeModel(), r.time_per_stage_s, 1e-9 * r.time_per_stage_s);
      EXPECT_LE(r.time_per_stage_s, r.data_parallel_time_s * (1 + 1e-12));
      ExpectWellFormed(w, r, 16);
    }
  }
}

// VGG-16 on 16 machines at 1.25e9 B/s, ratio 1 (the optimizer's README example). The optimizer's
// outputs, also obtained by running its algorithm on this profile: time per stage
// 0.0547948908307692, single stage 0.672535, data parallel 0.1458015955. The bottleneck, by hand:
// the input stage holds states 0..23 (node2..node25, C = 0.62212 s, P = 30,541,056 bytes) on 13
// replicas: (0.62212 + 4 * 12 * P / (1.25e9 * 13)) / 13 = 0.0547948908.
TEST(PipeDreamPlannerProfiles, Vgg16MatchesTheOptimizer) {
  LOAD_PROFILE_OR_SKIP(w, "vgg16");
  const AntichainLinearization states = LinearizeLikePipeDream(w);
  ASSERT_EQ(states.StateCount(), 40);  // 41 layers less the Input
  const PipeDreamResult r = PlanPipeDream(w, states, Compat({{16, 1.25e9}}));
  EXPECT_NEAR(r.time_per_stage_s, 0.0547948908307692, 1e-9 * 0.0547948908307692);
  EXPECT_NEAR(r.single_stage_time_s, 0.672535, 1e-9 * 0.672535);
  EXPECT_NEAR(r.data_parallel_time_s, 0.1458015955, 1e-9 * 0.1458015955);
  const double c = states.RangeCompute(0, 23), p = states.RangeParameters(0, 23);
  EXPECT_NEAR(c, 0.62212, 1e-12);
  EXPECT_DOUBLE_EQ(p, 30541056.0);
  EXPECT_NEAR((c + 4 * 12 * p / (1.25e9 * 13)) / 13, r.time_per_stage_s, 1e-12);
  ASSERT_EQ(r.levels.size(), 1u);
  EXPECT_EQ(r.levels[0][0].first_state, 0);
  EXPECT_EQ(r.levels[0][0].last_state, 23);
  EXPECT_EQ(r.levels[0][0].replicas, 13);
  EXPECT_EQ(r.noam, 2);  // ceil(16 / 13)
}

TEST(PipeDreamPlannerProfiles, StraightPipelinesHaveOneReplicaPerStage) {
  for (const char* name : {"vgg16", "gnmt", "resnet50"}) {
    LOAD_PROFILE_OR_SKIP(w, name);
    for (PipeDreamCostModel model : {PipeDreamCostModel::kCompat, PipeDreamCostModel::kPaper}) {
      PipeDreamOptions o = Compat({{4, 1.25e10}, {4, 1.25e9}});
      o.cost_model = model;
      o.straight_pipeline = true;
      const PipeDreamResult r = PlanPipeDream(w, o);
      EXPECT_EQ(r.plan.StageCount(), 16) << name;
      for (const StagePlan& s : r.plan.stages) EXPECT_EQ(s.replicas, 1) << name;
      ExpectWellFormed(w, r, 16);
    }
  }
}

TEST(PipeDreamPlannerProfiles, MemoryConstraintExcludesPlans) {
  LOAD_PROFILE_OR_SKIP(w, "vgg16");
  const AntichainLinearization states = LinearizeLikePipeDream(w);
  PipeDreamOptions free = Compat({{16, 1.25e9}});
  PipeDreamOptions tight = free;
  tight.use_memory_constraint = true;
  tight.memory_bytes_per_device = 8e9;
  const PipeDreamResult unconstrained = PlanPipeDream(w, states, free);
  const PipeDreamResult constrained = PlanPipeDream(w, states, tight);
  // The unconstrained layout breaks the rule at 8 GB; the constrained one keeps it and is slower.
  EXPECT_EQ(LayoutPricer(states, tight, unconstrained.levels).PriceWholeModel(), kInfeasible);
  LayoutPricer pricer(states, tight, constrained.levels);
  EXPECT_NEAR(pricer.PriceWholeModel(), constrained.time_per_stage_s,
              1e-9 * constrained.time_per_stage_s);
  EXPECT_GT(constrained.time_per_stage_s, unconstrained.time_per_stage_s);
}

TEST(PipeDreamPlannerProfiles, FewerMachinesIsNeverWorse) {
  for (const char* name : kProfiles) {
    LOAD_PROFILE_OR_SKIP(w, name);
    const AntichainLinearization states = LinearizeLikePipeDream(w);
    for (const auto& levels : kTopologies)
      for (PipeDreamCostModel model : {PipeDreamCostModel::kCompat, PipeDreamCostModel::kPaper}) {
        PipeDreamOptions all = Compat(levels);
        all.cost_model = model;
        PipeDreamOptions fewer = all;
        fewer.use_fewer_machines = true;
        const PipeDreamResult r = PlanPipeDream(w, states, fewer);
        EXPECT_LE(r.time_per_stage_s, PlanPipeDream(w, states, all).time_per_stage_s) << name;
        ExpectWellFormed(w, r, 0);
      }
  }
}

// GNMT is branchy (an encoder and a decoder joined by attention, several inputs): the states and
// the plan are a pure function of the workload, and the plan names the order its layer ranges
// count in when the workload's own order splits a stage.
TEST(PipeDreamPlannerProfiles, GnmtIsDeterministic) {
  LOAD_PROFILE_OR_SKIP(w, "gnmt");
  const AntichainLinearization states = LinearizeLikePipeDream(w);
  EXPECT_EQ(states.StateCount(), 99);
  EXPECT_EQ(w.layers[states.State(0).antichain.at(0)].id, "node4");  // first non-Input source
  EXPECT_EQ(w.layers[states.State(98).antichain.at(0)].id, "node48");  // the classifier
  for (const auto& levels : kTopologies) {
    const PipeDreamOptions o = Compat(levels);
    const PipeDreamResult first = PlanPipeDream(w, o);
    for (int run = 0; run < 3; ++run)
      EXPECT_EQ(PlanToJson(PlanPipeDream(w, o).plan), PlanToJson(first.plan));
    ExpectWellFormed(w, first, 16);
    EXPECT_EQ(first.reordered, !first.plan.layer_order.empty());
  }
}

TEST(PipeDreamPlannerProfiles, StagesOnDevicesFollowTheTopology) {
  LOAD_PROFILE_OR_SKIP(w, "vgg16");
  const PipeDreamResult r = PlanPipeDream(w, Compat({{4, 1.25e10}, {4, 1.25e9}}));
  // Every stage replicated across servers holds the same slots of each server it uses.
  for (const StagePlan& s : r.plan.stages) {
    std::set<int> slots;
    for (int d : s.devices) slots.insert(d % 4);
    EXPECT_EQ(s.devices.size() % slots.size(), 0u);
  }
  EXPECT_EQ(r.plan.memory_bytes_per_device.size(), 16u);
}

}  // namespace
}  // namespace pipetwin
