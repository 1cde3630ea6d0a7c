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

// The scenario from-megatron wrote, simulated without a memory timeline.
Report SimulateScenario(const std::string& json) {
  const Scenario s = ScenarioFromJson(nlohmann::json::parse(json), "out.json", ".");
  sim::SimOptions options;
  options.record_memory_timeline = false;
  return simtest::Simulate(s, options);
}

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
  const Report report = SimulateScenario(r.out);
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

// Full recomputation as Megatron-LM runs it (--recompute-method uniform --recompute-num-layers
// 1): each block keeps its input and reruns alone before its backward; the embedding and the
// output layer are never rerun. The oracle is Korthikanti et al. 2022's own accounting, written
// here from the paper: a kept block input is 2 s b h bytes (16-bit, replicated over the tensor
// group without sequence parallelism, section 5), and the one block rebuilt at a time holds
// s b h (10 + 24 / t + 5 a s / (h t)) (section 4.2.2, Table 2, tensor parallelism alone). A
// middle stage of a 1F1B pipeline (no embedding, no output layer) holds p - s micro-batches.
TEST(SimMegatronMemory, FullRecomputationKeepsEachBlocksInputAndRebuildsOneBlock) {
  const double s = 2048, b = 1, h = 12288, a = 96, t = 8, pp = 8, layers = 96, stage = 3;
  const auto r = testing::RunPipetwin(
      "from-megatron --nodes 8 --iterations 1 -- --num-layers 96 --hidden-size 12288 "
      "--num-attention-heads 96 --seq-length 2048 --vocab-size 51200 --global-batch-size 16 "
      "--micro-batch-size 1 --tensor-model-parallel-size 8 --pipeline-model-parallel-size 8 "
      "--recompute-granularity full --recompute-method uniform --recompute-num-layers 1 --bf16");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Report report = SimulateScenario(r.out);
  const MemoryCategories& peak = report.devices[static_cast<int>(stage)].at_peak;
  const double kept = (pp - stage) * (layers / pp) * 2 * s * b * h;
  const double rebuilt = s * b * h * (10 + 24 / t + 5 * a * s / (h * t));
  EXPECT_NEAR(peak.activations, kept, 1e-6 * kept);
  EXPECT_NEAR(peak.recompute, rebuilt, 1e-6 * rebuilt);
  // Under the whole-stage rule (PipeDream-2BW's) the stage would keep one input per micro-batch
  // and rebuild all 12 blocks at once: 12 times the rebuilt bytes.
  EXPECT_LT(peak.activations + peak.recompute, kept + 2 * rebuilt);
}

// --recompute-method block --recompute-num-layers 4 (megatron/core/recompute.py): Megatron-LM checkpoints and reruns only the
// first 4 blocks of each chunk (transformer_block.py, _checkpointed_forward), and the other 8 of
// a 12-block stage keep their activations. Same oracle as above: 4 kept inputs of 2 s b h and 8
// whole stashes of s b h (10 + 24 / t + 5 a s / (h t)) per micro-batch, one block rebuilt at a
// time; and the recompute op reruns 4 blocks, not 12.
TEST(SimMegatronMemory, BlockRecomputationKeepsTheRestOfEachChunk) {
  const double s = 2048, b = 1, h = 12288, a = 96, t = 8, pp = 8, stage = 3;
  const std::string line =
      "from-megatron --nodes 8 --iterations 1 -- --num-layers 96 --hidden-size 12288 "
      "--num-attention-heads 96 --seq-length 2048 --vocab-size 51200 --global-batch-size 16 "
      "--micro-batch-size 1 --tensor-model-parallel-size 8 --pipeline-model-parallel-size 8 "
      "--recompute-granularity full --bf16 --recompute-method ";
  const auto block = testing::RunPipetwin(line + "block --recompute-num-layers 4");
  const auto uniform = testing::RunPipetwin(line + "uniform --recompute-num-layers 1");
  ASSERT_EQ(block.exit_code, 0) << block.err;
  ASSERT_EQ(uniform.exit_code, 0) << uniform.err;
  const Report report = SimulateScenario(block.out);
  const MemoryCategories& peak = report.devices[static_cast<int>(stage)].at_peak;
  const double layer = s * b * h * (10 + 24 / t + 5 * a * s / (h * t));
  const double kept = (pp - stage) * (4 * 2 * s * b * h + 8 * layer);
  EXPECT_NEAR(peak.activations, kept, 1e-6 * kept);
  EXPECT_NEAR(peak.recompute, layer, 1e-6 * layer);
  // Less is rerun: the iteration is shorter than with every block recomputed.
  EXPECT_LT(report.iteration_s, SimulateScenario(uniform.out).iteration_s);
  // --recompute-method uniform --recompute-num-layers 5: segments of 5, 5 and 2 blocks, each
  // keeping its first block's input, rerun together: 5 blocks rebuilt at once.
  const auto five = testing::RunPipetwin(line + "uniform --recompute-num-layers 5");
  ASSERT_EQ(five.exit_code, 0) << five.err;
  const Report five_report = SimulateScenario(five.out);
  const MemoryCategories& segments = five_report.devices[static_cast<int>(stage)].at_peak;
  EXPECT_NEAR(segments.activations, (pp - stage) * 3 * 2 * s * b * h, 1e-6 * kept);
  EXPECT_NEAR(segments.recompute, 5 * layer, 1e-6 * layer);
}

}  // namespace
}  // namespace pipetwin
