// A Megatron-LM run's memory, two ways: the simulator walking the op lists' stash and release
// ops (a block's stash holds its input: Workload::stash_holds_input) against from-megatron's
// closed form (workloads/megatron/megatron_memory.h), which its search sizes configurations by.
#include <gtest/gtest.h>

#include "partition/model/cluster.h"
#include "tests/sim/sim_test_support.h"
#include "tests/test_support.h"
#include "workloads/megatron/megatron_memory.h"
#include "workloads/scenario/scenario.h"

namespace pipetwin {
namespace {

// GPT-3 175B, TP 2 x PP 16 x DP 2, interleaved with one layer a chunk, selective recomputation
// and sequence parallelism: stage 0's activations and model state as the search counts them,
// within 1% (the closed form leaves out the embedding's and the output layer's few bytes).
TEST(SimMegatronMemory, TheListsKeepWhatTheSearchCounts) {
  const auto r = testing::RunPipetwin(
      "from-megatron --nodes 8 --iterations 1 -- --num-layers 96 --hidden-size 12288 "
      "--num-attention-heads 96 --seq-length 2048 --vocab-size 50257 --global-batch-size 64 "
      "--micro-batch-size 1 --tensor-model-parallel-size 2 --pipeline-model-parallel-size 16 "
      "--num-layers-per-virtual-pipeline-stage 1 --sequence-parallel --recompute-activations "
      "--use-distributed-optimizer --bf16");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Scenario s = ScenarioFromJson(nlohmann::json::parse(r.out), "out.json", ".");
  sim::SimOptions options;
  options.record_memory_timeline = false;
  const Report report = simtest::Simulate(s, options);
  MegatronParallel p;
  p.tensor = 2;
  p.sequence_parallel = true;
  p.recompute = Recompute::kSelective;
  p.data_parallel = 2;
  p.distributed_optimizer = true;
  const MegatronMemory closed = FirstStageMemory(GptModel(96, 12288, 96, 2048, 50257), p, 16, 6,
                                                 32, ScheduleKind::kInterleaved);
  const MemoryCategories& peak = report.devices[0].at_peak;
  EXPECT_NEAR(peak.activations, closed.activations, 0.01 * closed.activations);
  EXPECT_NEAR(peak.weights + peak.gradients + peak.optimizer,
              closed.weights + closed.gradients + closed.optimizer,
              0.01 * (closed.weights + closed.gradients + closed.optimizer));
}

}  // namespace
}  // namespace pipetwin
