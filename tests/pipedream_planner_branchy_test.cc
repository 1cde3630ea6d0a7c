// PipeDream's planner on every published profile in the shared directory, branchy ones included
// (Inception-v3, NASNet-A mobile: more antichains than the exact search enumerates,
// antichain.h's kMaxExactStates). Their plans come from the prefix states; what could go wrong:
// a plan that is not a valid layout, a time that is not what its layout costs, or one below the
// stated lower bound. Where the exact search fits, the prefix search runs beside it: identical
// on chains; on DAGs neither search contains the other (antichain.h), both obey the lower
// bound, and the distance between them is shown.
// Speed and memory are measured by pipetwin_planner_bench, not here.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "partition/planners/pipedream/planner.h"
#include "tests/pipedream_planner_reference.h"
#include "tests/test_support.h"
#include "workloads/import/pipedream_profile.h"

namespace pipetwin {
namespace {

// Every profile directory present (PipeDream published more of the same kind; each must plan).
std::vector<std::string> PublishedProfiles() {
  std::vector<std::string> names;
  const std::optional<std::string> vgg = testing::SharedProfile("vgg16");
  if (!vgg) return names;
  const auto root = std::filesystem::path(*vgg).parent_path().parent_path();
  for (const auto& entry : std::filesystem::directory_iterator(root))
    if (std::ifstream(entry.path() / "graph.txt")) names.push_back(entry.path().filename());
  std::sort(names.begin(), names.end());
  return names;
}

// The optimizer's examples (16 machines; 4 servers of 4); 8 x 2 is in the benchmark.
const std::vector<std::vector<PipeDreamLevel>> kTopologies = {{{16, 1.25e9}},
                                                              {{4, 1.25e10}, {4, 1.25e9}}};

PipeDreamOptions Options(PipeDreamCostModel model, const std::vector<PipeDreamLevel>& levels) {
  PipeDreamOptions o;
  o.cost_model = model;
  o.levels = levels;
  o.activation_compression_ratio = 1;
  return o;
}

void ExpectValidPlan(const Workload& w, const PipeDreamResult& r) {
  const Plan& p = r.plan;
  ASSERT_FALSE(p.stages.empty());
  EXPECT_EQ(p.stages.front().first_layer, 0);
  EXPECT_EQ(p.stages.back().last_layer, w.LayerCount() - 1);
  int devices = 0;
  for (size_t q = 0; q < p.stages.size(); ++q) {
    if (q > 0) EXPECT_EQ(p.stages[q].first_layer, p.stages[q - 1].last_layer + 1);
    devices += p.stages[q].replicas;
  }
  EXPECT_LE(devices, 16);
  // Every input before its consumer in the plan's order.
  std::vector<int> position(w.LayerCount(), -1);
  for (int i = 0; i < w.LayerCount(); ++i) position[r.layer_order[i]] = i;
  for (int v = 0; v < w.LayerCount(); ++v)
    for (int in : w.layers[v].inputs) EXPECT_LT(position[in], position[v]);
}

TEST(PipeDreamPlannerBranchy, EveryPublishedProfilePlansWithBothCostModels) {
  const std::vector<std::string> names = PublishedProfiles();
  if (names.empty()) GTEST_SKIP() << "shared profiles absent";
  int approximate = 0;
  for (const std::string& name : names) {
    const Workload w = ImportPipeDreamProfile(*testing::SharedProfile(name));
    const AntichainLinearization states = LinearizeLikePipeDream(w);
    approximate += !states.exact();
    for (const auto& levels : kTopologies) {
      for (PipeDreamCostModel model : {PipeDreamCostModel::kPaper, PipeDreamCostModel::kCompat}) {
        SCOPED_TRACE(name + " " + PipeDreamPlannerName(model) + ", " +
                     std::to_string(levels.size()) + " levels");
        const PipeDreamOptions o = Options(model, levels);
        const PipeDreamResult r = PlanPipeDream(w, states, o);
        testing::LayoutPricer pricer(states, o, r.levels);
        EXPECT_NEAR(pricer.PriceWholeModel(), r.time_per_stage_s, 1e-9 * r.time_per_stage_s);
        EXPECT_GE(r.time_per_stage_s, r.lower_bound_s * (1 - 1e-12));
        EXPECT_LE(r.time_per_stage_s, r.single_stage_time_s * (1 + 1e-12));
        EXPECT_EQ(r.plan.details["search"].get<std::string>().rfind("exact", 0) == 0,
                  states.exact());
        ExpectValidPlan(w, r);
      }
    }
  }
  std::printf("%zu profiles, %d planned from prefix states\n", names.size(), approximate);
}

TEST(PipeDreamPlannerBranchy, PrefixSearchAgainstTheExactOneWhereItFits) {
  const std::vector<std::string> names = PublishedProfiles();
  if (names.empty()) GTEST_SKIP() << "shared profiles absent";
  for (const std::string& name : names) {
    const Workload w = ImportPipeDreamProfile(*testing::SharedProfile(name));
    const AntichainLinearization exact = LinearizeLikePipeDream(w);
    if (!exact.exact()) continue;
    const AntichainLinearization prefixes = LinearizeLikePipeDream(w, 0);
    ASSERT_FALSE(prefixes.exact());
    for (const auto& levels : kTopologies) {
      const PipeDreamOptions o = Options(PipeDreamCostModel::kPaper, levels);
      const PipeDreamResult a = PlanPipeDream(w, exact, o);
      const PipeDreamResult b = PlanPipeDream(w, prefixes, o);
      SCOPED_TRACE(name + ", " + std::to_string(levels.size()) + " levels");
      // The same lower bound holds for both, and on a chain the states are the same.
      EXPECT_GE(a.time_per_stage_s, a.lower_bound_s * (1 - 1e-12));
      EXPECT_GE(b.time_per_stage_s, b.lower_bound_s * (1 - 1e-12));
      EXPECT_DOUBLE_EQ(a.lower_bound_s, b.lower_bound_s);
      if (w.IsChain()) EXPECT_NEAR(a.time_per_stage_s, b.time_per_stage_s, 1e-12);
      ExpectValidPlan(w, b);
      std::printf("%-14s %zu levels: exact %.6f s (%d states), prefixes %.6f s (%+.2f%%), "
                  "bound %.6f s\n",
                  name.c_str(), levels.size(), a.time_per_stage_s, exact.StateCount(),
                  b.time_per_stage_s, 100 * (b.time_per_stage_s / a.time_per_stage_s - 1),
                  a.lower_bound_s);
    }
  }
}

}  // namespace
}  // namespace pipetwin
