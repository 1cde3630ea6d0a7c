// Exactness of PipeDream's dynamic program: on small random chains (up to 10 layers, 8 workers,
// 2 levels) its optimum equals a brute-force enumeration of every partition and replication,
// priced by the independent cost statement in pipedream_planner_reference.h, for both cost
// models and every switch; and the layout it returns costs what it says. On random DAGs the plan
// is well formed, loads back, and costs what it says.
#include <gtest/gtest.h>

#include <functional>
#include <iostream>
#include <map>
#include <random>
#include <tuple>

#include "partition/util/error.h"
#include "partition/planners/pipedream/dp.h"
#include "partition/planners/pipedream/planner.h"
#include "tests/pipedream_planner_reference.h"

namespace pipetwin {
namespace {

using testing::kInfeasible;
using testing::LayoutPricer;
using testing::RefStage;
using testing::RefStageTime;

Workload RandomChain(std::mt19937& rng, int layers) {
  std::uniform_real_distribution<double> ms(0.1, 20), bytes(1e3, 2e8), unit(0, 1);
  Workload w;
  w.name = "random-chain";
  for (int i = 0; i < layers; ++i) {
    Layer l;
    l.id = "l" + std::to_string(i);
    l.forward_ms = ms(rng);
    l.backward_ms = 2 * ms(rng);
    l.activation_bytes = bytes(rng);
    l.parameter_bytes = unit(rng) < 0.3 ? 0 : bytes(rng);
    if (i > 0) l.inputs = {i - 1};
    w.layers.push_back(l);
  }
  return w;
}

// Every layout of states first..last on one level, by enumeration, with the level below's
// brute-force optimum as each stage's inner time.
class BruteForce {
 public:
  BruteForce(const AntichainLinearization& s, const PipeDreamOptions& o) : s_(s), o_(o) {}

  double Best(int level, int first, int last) {
    auto key = std::make_tuple(level, first, last);
    auto it = memo_.find(key);
    if (it != memo_.end()) return it->second;
    const int machines = o_.levels[level].machines;
    // Totals allowed: all M; with use_fewer_machines at most M, except that the code never
    // gives a one-state range fewer machines (its split loop starts at j = i + 1).
    const bool compat = o_.cost_model == PipeDreamCostModel::kCompat;
    const bool fewer = o_.use_fewer_machines && (!compat || last > first);
    double best = kInfeasible;
    std::function<void(int, int, int, double)> extend = [&](int start, int used, int index,
                                                            double so_far) {
      if (start > last) {
        if (used == machines || (fewer && used <= machines)) best = std::min(best, so_far);
        return;
      }
      for (int end = start; end <= last; ++end) {
        const int max_r = o_.straight_pipeline ? 1 : machines - used;
        for (int r = 1; r <= max_r; ++r) {
          const double inner = level == 0 ? s_.RangeCompute(start, end) : Best(level - 1, start, end);
          const double t = RefStageTime(s_, o_, level, {start, end, r, index, used + r}, inner);
          if (t == kInfeasible) continue;
          extend(end + 1, used + r, index + 1, std::max(so_far, t));
        }
      }
    };
    extend(first, 0, 0, 0.0);
    return memo_[key] = best;
  }

 private:
  const AntichainLinearization& s_;
  const PipeDreamOptions& o_;
  std::map<std::tuple<int, int, int>, double> memo_;
};

PipeDreamOptions RandomOptions(std::mt19937& rng, PipeDreamCostModel model) {
  std::uniform_int_distribution<int> level_count(1, 2), coin(0, 1);
  std::uniform_real_distribution<double> log_bandwidth(8, 11);
  PipeDreamOptions o;
  o.cost_model = model;
  if (level_count(rng) == 1) {
    o.levels = {{std::uniform_int_distribution<int>(1, 8)(rng), 0}};
  } else {
    const int inner = std::uniform_int_distribution<int>(1, 4)(rng);
    o.levels = {{inner, 0}, {std::uniform_int_distribution<int>(1, 8 / inner)(rng), 0}};
  }
  for (PipeDreamLevel& l : o.levels) l.bandwidth_bytes_per_s = std::pow(10.0, log_bandwidth(rng));
  if (coin(rng)) o.activation_compression_ratio = coin(rng) ? 1.0 : 3.0;
  return o;
}

enum class Switch { kNone, kStraight, kFewer, kMemory, kStraightFewer };

void CheckAgainstBruteForce(PipeDreamCostModel model, Switch which, int trials, unsigned seed) {
  std::mt19937 rng(seed);
  int feasible = 0;
  for (int trial = 0; trial < trials; ++trial) {
    Workload w = RandomChain(rng, std::uniform_int_distribution<int>(1, 10)(rng));
    PipeDreamOptions o = RandomOptions(rng, model);
    o.straight_pipeline = which == Switch::kStraight || which == Switch::kStraightFewer;
    o.use_fewer_machines = which == Switch::kFewer || which == Switch::kStraightFewer;
    o.use_memory_constraint = which == Switch::kMemory;
    if (o.use_memory_constraint)  // around the size of one layer's stash
      o.memory_bytes_per_device = std::uniform_real_distribution<double>(2e8, 2e9)(rng);
    const AntichainLinearization states = LinearizeLikePipeDream(w);
    ASSERT_EQ(states.StateCount(), w.LayerCount());
    const int top = static_cast<int>(o.levels.size()) - 1;
    const double expected = BruteForce(states, o).Best(top, 0, w.LayerCount() - 1);
    SCOPED_TRACE("trial " + std::to_string(trial) + ": " + std::to_string(w.LayerCount()) +
                 " layers, top level " + std::to_string(o.levels[top].machines) + " machines");
    if (expected == kInfeasible) {
      EXPECT_THROW(PlanPipeDream(w, states, o), InputError);
      continue;
    }
    ++feasible;
    const PipeDreamResult r = PlanPipeDream(w, states, o);
    EXPECT_NEAR(r.time_per_stage_s, expected, 1e-9 * expected);
    LayoutPricer pricer(states, o, r.levels);
    EXPECT_NEAR(pricer.Price(top, 0, w.LayerCount() - 1), r.time_per_stage_s,
                1e-9 * r.time_per_stage_s);
    EXPECT_EQ(r.plan.stages.front().first_layer, 0);
    EXPECT_EQ(r.plan.stages.back().last_layer, w.LayerCount() - 1);
  }
  EXPECT_GT(feasible, trials / 4) << "too few feasible trials to mean much";
}

TEST(PipeDreamPlannerBruteForce, PaperModel) {
  CheckAgainstBruteForce(PipeDreamCostModel::kPaper, Switch::kNone, 300, 1);
}
TEST(PipeDreamPlannerBruteForce, CompatModel) {
  CheckAgainstBruteForce(PipeDreamCostModel::kCompat, Switch::kNone, 300, 2);
}
TEST(PipeDreamPlannerBruteForce, PaperStraight) {
  CheckAgainstBruteForce(PipeDreamCostModel::kPaper, Switch::kStraight, 200, 3);
}
TEST(PipeDreamPlannerBruteForce, CompatStraight) {
  CheckAgainstBruteForce(PipeDreamCostModel::kCompat, Switch::kStraight, 200, 4);
}
TEST(PipeDreamPlannerBruteForce, PaperFewerMachines) {
  CheckAgainstBruteForce(PipeDreamCostModel::kPaper, Switch::kFewer, 200, 5);
}
TEST(PipeDreamPlannerBruteForce, CompatFewerMachines) {
  CheckAgainstBruteForce(PipeDreamCostModel::kCompat, Switch::kFewer, 200, 6);
}
TEST(PipeDreamPlannerBruteForce, PaperStraightFewerMachines) {
  CheckAgainstBruteForce(PipeDreamCostModel::kPaper, Switch::kStraightFewer, 200, 7);
}
TEST(PipeDreamPlannerBruteForce, CompatStraightFewerMachines) {
  CheckAgainstBruteForce(PipeDreamCostModel::kCompat, Switch::kStraightFewer, 200, 8);
}
TEST(PipeDreamPlannerBruteForce, PaperMemoryConstraint) {
  CheckAgainstBruteForce(PipeDreamCostModel::kPaper, Switch::kMemory, 200, 9);
}
TEST(PipeDreamPlannerBruteForce, CompatMemoryConstraint) {
  CheckAgainstBruteForce(PipeDreamCostModel::kCompat, Switch::kMemory, 200, 10);
}

// Among equal layouts the first in a fixed order wins, so a plan never changes between runs.
TEST(PipeDreamPlannerBruteForce, TiesAreBrokenDeterministically) {
  Workload w;
  for (int i = 0; i < 8; ++i) {
    Layer l;
    l.id = "l" + std::to_string(i);
    l.forward_ms = 10;
    l.activation_bytes = 1e6;
    if (i > 0) l.inputs = {i - 1};
    w.layers.push_back(l);
  }
  PipeDreamOptions o;
  o.cost_model = PipeDreamCostModel::kCompat;
  o.levels = {{4, 1e9}};
  const nlohmann::json first = PlanToJson(PlanPipeDream(w, o).plan);
  for (int run = 0; run < 5; ++run) EXPECT_EQ(PlanToJson(PlanPipeDream(w, o).plan), first);
}

// Random layer DAGs (skip connections, branches, joins, an Input and a __getitem__ sink): every
// plan is well formed and costs, re-priced, what the planner says.
Workload RandomDag(std::mt19937& rng, int layers) {
  std::uniform_real_distribution<double> ms(0.1, 20), bytes(1e3, 2e8), unit(0, 1);
  Workload w;
  w.name = "random-dag";
  for (int i = 0; i < layers; ++i) {
    Layer l;
    l.id = "l" + std::to_string(i);
    l.description = i == 0 ? "Input" : "layer";
    l.forward_ms = i == 0 ? 5 : ms(rng);
    l.backward_ms = i == 0 ? 0 : 2 * ms(rng);
    l.activation_bytes = bytes(rng);
    l.parameter_bytes = unit(rng) < 0.3 ? 0 : bytes(rng);
    // Branches: each layer reads one of the three before it (layer 1 reads the input), and
    // sometimes one more earlier layer (a join).
    if (i == 1) l.inputs = {0};
    if (i > 1) l.inputs = {std::uniform_int_distribution<int>(std::max(1, i - 3), i - 1)(rng)};
    if (i > 2 && unit(rng) < 0.3) {
      const int extra = std::uniform_int_distribution<int>(1, i - 1)(rng);
      if (extra != l.inputs[0]) l.inputs.push_back(extra);
    }
    w.layers.push_back(l);
  }
  Layer sink;
  sink.id = "getitem";
  sink.description = "__getitem__(1)";
  sink.inputs = {layers / 2};
  w.layers.push_back(sink);
  ValidateAndSortWorkload(w, "random-dag");
  return w;
}

TEST(PipeDreamPlannerRandomDags, PlansAreWellFormedAndCostWhatTheySay) {
  std::mt19937 rng(11);
  int reordered = 0, multi_level = 0, with_empty_stages = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const Workload w = RandomDag(rng, std::uniform_int_distribution<int>(2, 14)(rng));
    const AntichainLinearization states = LinearizeLikePipeDream(w);
    for (PipeDreamCostModel model : {PipeDreamCostModel::kCompat, PipeDreamCostModel::kPaper}) {
      PipeDreamOptions o = RandomOptions(rng, model);
      o.use_fewer_machines = trial % 2 == 0;
      SCOPED_TRACE("trial " + std::to_string(trial));
      const PipeDreamResult r = PlanPipeDream(w, states, o);
      reordered += r.reordered;
      // Only the code's model can leave a stage without layers (pipedream_planner.cc).
      with_empty_stages += r.plan.details.contains("empty_stages");
      if (model == PipeDreamCostModel::kPaper) {
        EXPECT_FALSE(r.plan.details.contains("empty_stages"));
      }
      multi_level += o.levels.size() > 1 && r.plan.StageCount() > 1;
      LayoutPricer pricer(states, o, r.levels);
      EXPECT_NEAR(pricer.PriceWholeModel(), r.time_per_stage_s, 1e-9 * r.time_per_stage_s);
      const Plan& p = r.plan;
      // The plan loads back (non-negative costs, contiguous stages, one device per replica).
      EXPECT_NO_THROW(PlanFromJson(PlanToJson(p), "plan.json"));
      EXPECT_EQ(p.stages.front().first_layer, 0);
      EXPECT_EQ(p.stages.back().last_layer, w.LayerCount() - 1);
      std::vector<int> stage_of(w.LayerCount());
      for (int q = 0; q < p.StageCount(); ++q) {
        if (q > 0) {
          EXPECT_EQ(p.stages[q].first_layer, p.stages[q - 1].last_layer + 1);
        }
        for (int pos = p.stages[q].first_layer; pos <= p.stages[q].last_layer; ++pos)
          stage_of[r.layer_order[pos]] = q;
      }
      for (int v = 0; v < w.LayerCount(); ++v)
        for (int in : w.layers[v].inputs) EXPECT_LE(stage_of[in], stage_of[v]);
    }
  }
  EXPECT_GT(reordered, 10);  // the cases that need a layer_order are exercised
  EXPECT_GT(multi_level, 50);
  std::cout << reordered << " of 600 plans reordered, " << multi_level << " split on 2 levels, "
            << with_empty_stages << " (compat) with a stage left empty\n";
}

}  // namespace
}  // namespace pipetwin
