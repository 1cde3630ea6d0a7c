// PipeDream's planner at scale: a 96-block GPT chain (embedding + 96 blocks + head) on 1,024
// GPUs (128 servers of 8). How fast is a benchmark (pipetwin_planner_bench, gpt96_1024gpus_*);
// here, that the plan uses every GPU and covers every layer. The numbers are GPT-3-like (h = 12288,
// sequence 2048, micro-batch 1, fp16, V100-class throughput) and only set the problem's shape.
#include <gtest/gtest.h>

#include "workloads/analytic/analytic.h"
#include "partition/planners/pipedream/planner.h"
#include "partition/model/cluster.h"
#include "workloads/networks/network.h"

namespace pipetwin {
namespace {

Workload Gpt3() {
  TransformerConfig c;
  c.layers = 96; c.hidden = 12288; c.heads = 96; c.sequence = 2048; c.vocabulary = 50257;
  return GenerateTransformer(c, ClusterPreset("cluster-b", 1).device);
}

TEST(PipeDreamPlannerScale, Gpt96BlocksOn1024GpusUsesEveryGpu) {
  const Workload w = Gpt3();
  ASSERT_EQ(w.LayerCount(), 98);
  for (PipeDreamCostModel model : {PipeDreamCostModel::kPaper, PipeDreamCostModel::kCompat}) {
    PipeDreamOptions o;
    o.cost_model = model;
    o.levels = {{8, 300e9}, {128, 25e9}};
    o.activation_compression_ratio = 1;
    const PipeDreamResult r = PlanPipeDream(w, o);
    EXPECT_EQ(r.plan.WorkerCount(), 1024);
    EXPECT_EQ(r.plan.stages.back().last_layer, 97);
  }
}

}  // namespace
}  // namespace pipetwin
