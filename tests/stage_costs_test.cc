// The one stage-cost rule (partition/cost/stage_costs.h), against sums worked out by hand.
#include <gtest/gtest.h>

#include "partition/cost/stage_costs.h"
#include "partition/model/plan.h"
#include "partition/model/workload.h"

namespace pipetwin {
namespace {

// a -> b -> d and a -> c -> d: a diamond whose branches b and c run in either order.
Workload Diamond() {
  Workload w;
  w.reference.batch_size = 2;
  w.parameter_dtype_bytes = 4;
  const double forward[] = {1, 2, 4, 8}, activation[] = {100, 10, 20, 1};
  const char* ids[] = {"a", "b", "c", "d"};
  for (int i = 0; i < 4; ++i) {
    Layer l;
    l.id = ids[i];
    l.forward_ms = forward[i];
    l.backward_ms = 2 * forward[i];
    l.activation_bytes = activation[i];
    l.parameter_bytes = 40 * (i + 1);  // no `parameters`: bytes / dtype
    w.layers.push_back(l);
  }
  w.layers[1].inputs = {0};
  w.layers[2].inputs = {0};
  w.layers[3].inputs = {1, 2};
  return w;
}

TEST(StageCosts, LayersAreCountedInThePlansOrder) {
  const Workload w = Diamond();
  Plan plan;
  plan.layer_order = {0, 2, 1, 3};  // a, c, b, d
  plan.stages = {{0, 1, 1, {}}, {2, 3, 1, {}}};   // {a, c} and {b, d}
  // Micro-batches of 4 samples (twice the reference batch) on a device twice as fast: x1.
  const std::vector<StageCost> c = PlanStageCosts(w, plan, 4, 2, /*optimizer bytes=*/8);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_DOUBLE_EQ(c[0].forward_ms, 1 + 4);
  EXPECT_DOUBLE_EQ(c[1].forward_ms, 2 + 8);
  EXPECT_DOUBLE_EQ(c[1].backward_ms, 4 + 16);
  EXPECT_DOUBLE_EQ(c[0].parameters, (40 + 120) / 4.0);
  EXPECT_DOUBLE_EQ(c[0].optimizer_bytes, 40 * 8);
  // After {a, c}: a's output (b still reads it) and c's (d reads it), for 4 samples of a
  // reference batch of 2.
  EXPECT_DOUBLE_EQ(c[0].output_bytes, (100 + 20) * 2);
  EXPECT_DOUBLE_EQ(c[1].input_bytes, (100 + 20) * 2);
  EXPECT_DOUBLE_EQ(c[1].output_bytes, 0);
  // The backward's order, last layer first: d, then b.
  EXPECT_EQ(c[1].layer_backward_ms, (std::vector<double>{16, 4}));
  // In the topological order a, b, c, d the same split holds other layers.
  plan.layer_order.clear();
  EXPECT_DOUBLE_EQ(PlanStageCosts(w, plan, 4, 2, 8)[0].forward_ms, 1 + 2);
}

// The passes over a layer's parameters (its optimizer step with its copy of the weights, the
// backward's addition of its gradient into the sums) read and write the parameters' bytes
// whatever the samples: micro-batches of 8 (four times the reference batch of 2) on a device
// twice as fast cost half of them, while the rest of the backward costs twice as much.
TEST(StageCosts, PassesOverTheParametersDoNotScaleWithTheSamples) {
  Workload w = Diamond();
  for (Layer& l : w.layers) {
    l.update_ms = 3;
    l.update_copy_ms = 1;
    l.gradient_add_ms = 0.5;
  }
  Plan plan;
  plan.stages = {{0, 1, 1, {}}, {2, 3, 1, {}}};  // {a, b} and {c, d}
  const std::vector<StageCost> c = PlanStageCosts(w, plan, 8, 2, 8);
  EXPECT_DOUBLE_EQ(c[1].update_ms, (3 + 3) / 2.0);
  EXPECT_DOUBLE_EQ(c[1].update_copy_ms, (1 + 1) / 2.0);
  EXPECT_DOUBLE_EQ(c[1].update_sharded_ms, c[1].update_ms);
  EXPECT_DOUBLE_EQ(c[1].gradient_add_ms, (0.5 + 0.5) / 2.0);
  // c's and d's backwards, 8 and 16 ms, of which 0.5 each adds: (7.5 + 15.5) x 2 + 2 x 0.25.
  EXPECT_DOUBLE_EQ(c[1].backward_ms, (7.5 + 15.5) * 2 + 0.5);
  EXPECT_EQ(c[1].layer_backward_ms, (std::vector<double>{15.5 * 2 + 0.25, 7.5 * 2 + 0.25}));
  // Stage 1 splits its backward in halves (BackwardInputShare): the addition is the W pass's.
  EXPECT_DOUBLE_EQ(c[1].backward_input_ms, (4 + 8) * 2);
  EXPECT_DOUBLE_EQ(c[1].backward_weight_ms, (3.5 + 7.5) * 2 + 0.5);
}

TEST(StageCosts, CutsCountEveryOutputStillNeededLater) {
  const Workload w = Diamond();
  // a, b | c, d: a's output (c reads it) and b's (d reads it) cross the cut after b.
  const std::vector<double> cut = CutBytesPerSample(w, {});
  EXPECT_DOUBLE_EQ(cut[0], 100 / 2.0);  // after a: a alone
  EXPECT_DOUBLE_EQ(cut[1], (100 + 10) / 2.0);
  EXPECT_DOUBLE_EQ(cut[2], (10 + 20) / 2.0);
  EXPECT_DOUBLE_EQ(cut[3], 0);
  EXPECT_DOUBLE_EQ(TimeScale(w, 8, 4), 1);
}

}  // namespace
}  // namespace pipetwin
