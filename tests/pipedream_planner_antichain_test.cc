// PipeDream's linearisation of layer DAGs into antichain states (partition/antichain.h), on
// small graphs whose states can be listed by hand.
#include <gtest/gtest.h>

#include "partition/planners/pipedream/antichain.h"
#include "partition/util/error.h"

namespace pipetwin {
namespace {

// Layers named by letter; `edges` as "ab" = a feeds b. Activation of layer i: (i + 1) * 100.
Workload Graph(const std::string& names, const std::vector<std::string>& edges,
               const std::vector<std::string>& descriptions = {}) {
  Workload w;
  w.name = "graph";
  for (size_t i = 0; i < names.size(); ++i) {
    Layer l;
    l.id = std::string(1, names[i]);
    l.description = i < descriptions.size() ? descriptions[i] : "layer";
    l.forward_ms = 1;
    l.backward_ms = 2;
    l.activation_bytes = (i + 1) * 100.0;
    l.parameter_bytes = 10;
    w.layers.push_back(l);
  }
  for (const std::string& e : edges)
    w.layers[names.find(e[1])].inputs.push_back(static_cast<int>(names.find(e[0])));
  ValidateAndSortWorkload(w, "graph");
  return w;
}

std::string Names(const Workload& w, const std::vector<int>& layers) {
  std::string out;
  for (int v : layers) out += w.layers[v].id;
  return out;
}

TEST(PipeDreamPlannerAntichain, ChainHasOneStatePerLayer) {
  const Workload w = Graph("abcd", {"ab", "bc", "cd"});
  const AntichainLinearization s = LinearizeLikePipeDream(w);
  ASSERT_EQ(s.StateCount(), 4);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(s.State(i).antichain, std::vector<int>{i});
    EXPECT_DOUBLE_EQ(s.State(i).compute_s, 0.003 * (i + 1));
    for (int j = 0; j < 4; ++j) EXPECT_EQ(s.IsAncestor(j, i), j < i);
  }
  EXPECT_DOUBLE_EQ(s.RangeCompute(1, 2), 0.006);
  EXPECT_DOUBLE_EQ(s.RangeParameters(0, 3), 40);
}

// VGG-16's diamond: a feeds b and c, b feeds c. State {b} must carry a's output across a cut.
TEST(PipeDreamPlannerAntichain, DiamondAugmentsTheSkippedOutput) {
  const Workload w = Graph("abc", {"ab", "ac", "bc"});
  const AntichainLinearization s = LinearizeLikePipeDream(w);
  ASSERT_EQ(s.StateCount(), 3);
  EXPECT_EQ(Names(w, s.State(1).antichain), "b");
  EXPECT_EQ(Names(w, s.State(1).augmented), "ab");
  EXPECT_DOUBLE_EQ(s.State(1).output_activation_bytes, 100 + 200);
  EXPECT_TRUE(s.IsAncestor(0, 2) && s.IsAncestor(1, 2));
}

// Two parallel branches: {a} and {b} are incomparable states; {a, b} follows both.
TEST(PipeDreamPlannerAntichain, ParallelBranchesGiveIncomparableStates) {
  const Workload w = Graph("sabc", {"sa", "sb", "ac", "bc"});
  const AntichainLinearization s = LinearizeLikePipeDream(w);
  std::vector<std::string> states;
  for (int i = 0; i < s.StateCount(); ++i) states.push_back(Names(w, s.State(i).antichain));
  // Breadth first from {s}; depth-first topological order, successors in ascending index.
  EXPECT_EQ(states, (std::vector<std::string>{"s", "b", "a", "ab", "c"}));
  EXPECT_FALSE(s.IsAncestor(1, 2));
  EXPECT_FALSE(s.IsAncestor(2, 1));
  EXPECT_EQ(s.Ancestors(4), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(s.DownSet(3).Count(), 3);  // s, a, b
}

// Inputs and unused tuple outputs are left out as the optimizer does, then placed so that every
// stage stays a contiguous range in a topological order.
TEST(PipeDreamPlannerAntichain, InputsAndGetitemSinksAreRemovedAndPlaced) {
  const Workload w = Graph("iabgc", {"ia", "ab", "bg", "bc"},
                           {"Input", "conv", "lstm", "__getitem__(1)", "linear"});
  const AntichainLinearization s = LinearizeLikePipeDream(w);
  ASSERT_EQ(s.StateCount(), 3);  // a, b, c
  EXPECT_EQ(s.Role(0), PipeDreamLayerRole::kInputSource);
  EXPECT_EQ(s.Role(3), PipeDreamLayerRole::kGetitemSink);
  EXPECT_DOUBLE_EQ(s.State(2).compute_s, 0.009);  // the input's time is not counted
  const std::vector<int> stage = AssignLayersToStages(s, w, {1, 2});  // {a, b} | {c}
  EXPECT_EQ(stage, (std::vector<int>{0, 0, 0, 0, 1}));
  EXPECT_EQ(StageContiguousOrder(stage), (std::vector<int>{0, 1, 2, 3, 4}));
}

TEST(PipeDreamPlannerAntichain, NothingLeftIsAnInputError) {
  const Workload w = Graph("i", {}, {"Input"});
  EXPECT_THROW(LinearizeLikePipeDream(w), InputError);
}

}  // namespace
}  // namespace pipetwin
