// `pipetwin from-megatron`: Megatron-LM's launch arguments in, a scenario out (good and bad
// argument sets).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "test_support.h"
#include "workloads/scenario/scenario.h"

namespace pipetwin {
namespace {

using testing::RunPipetwin;

const char* kGpt3 =
    "--num-layers 96 --hidden-size 12288 --num-attention-heads 96 --seq-length 2048 "
    "--max-position-embeddings 2048 --vocab-size 51200 --micro-batch-size 1 "
    "--global-batch-size 64 --tensor-model-parallel-size 8 --pipeline-model-parallel-size 8 "
    "--bf16 ";

TEST(FromMegatron, WritesAScenarioThePlannersAndSimulatorTake) {
  const auto r = RunPipetwin(std::string("from-megatron --nodes 8 -- ") + kGpt3 +
                             "--num-layers-per-virtual-pipeline-stage 4 --sequence-parallel "
                             "--recompute-activations --lr 1e-4");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Scenario s = ScenarioFromJson(nlohmann::json::parse(r.out), "out.json", ".");
  EXPECT_EQ(s.workload.tensor_parallel, 8);
  EXPECT_EQ(s.workload.LayerCount(), 98);            // embedding, 96 blocks, output
  EXPECT_EQ(s.cluster.DeviceCount(), 8);              // 64 GPUs in groups of 8
  ASSERT_TRUE(s.plan);
  EXPECT_EQ(s.plan->StageCount(), 24);                // 8 stages x 3 chunks
  EXPECT_EQ(s.plan->stages[0].last_layer, 4);         // the embedding and 4 blocks
  EXPECT_EQ(s.training.chunks, 3);
  EXPECT_EQ(s.training.send_mode, SendMode::kEager);  // --overlap-p2p-communication's default
  EXPECT_EQ(s.training.microbatches, 64);
  EXPECT_FALSE(s.training.recompute);                 // selective: in the layers' times
  EXPECT_EQ(s.source["workload"]["recompute"], "selective");
  EXPECT_TRUE(s.source["workload"]["sequence_parallel"].get<bool>());
  EXPECT_NE(r.err.find("64 GPUs = TP 8 x PP 8 x DP 1"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("of 80.0 GiB, fits"), std::string::npos) << r.err;
  // An argument it does not model is named, never dropped silently.
  EXPECT_NE(r.err.find("warning: --lr 1e-4 is not modelled and is ignored"), std::string::npos)
      << r.err;
}

TEST(FromMegatron, FullRecomputationIsTheSchedulesAndDataParallelismFollowsTheNodes) {
  const auto r = RunPipetwin(std::string("from-megatron --nodes 16 -- ") + kGpt3 +
                             "--recompute-granularity full --use-distributed-optimizer");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Scenario s = ScenarioFromJson(nlohmann::json::parse(r.out), "out.json", ".");
  EXPECT_TRUE(s.training.recompute);
  EXPECT_EQ(s.plan->stages[0].replicas, 2);        // 128 GPUs / (8 x 8)
  EXPECT_EQ(s.training.microbatches, 32);          // 64 / (1 x 2)
  EXPECT_DOUBLE_EQ(s.training.optimizer_bytes_per_parameter, 6);  // 12 / d (ZeRO-1)
  EXPECT_EQ(s.schedule, ScheduleKind::kFlush);
  EXPECT_EQ(s.training.send_mode, SendMode::kBlocking);  // 1F1B waits on its exchanges
  EXPECT_FALSE(s.source["workload"].contains("scatter_gather_pipeline"));  // today's Megatron-LM
  EXPECT_FALSE(s.source["workload"].contains("recompute_method"));  // uniform 1: every block
  // --recompute-method block counts its layers in each chunk: 12 blocks a stage here.
  const auto block = RunPipetwin(std::string("from-megatron --nodes 16 -- ") + kGpt3 +
                                 "--recompute-granularity full --recompute-method block "
                                 "--recompute-num-layers 5");
  ASSERT_EQ(block.exit_code, 0) << block.err;
  const nlohmann::json w = nlohmann::json::parse(block.out)["workload"];
  EXPECT_EQ(w["recompute_method"], "block");
  EXPECT_EQ(w["recompute_num_layers"], 5);
  EXPECT_EQ(w["blocks_per_chunk"], 12);
  EXPECT_TRUE(s.training.distributed_optimizer);         // its traffic too: RS, then AG
  EXPECT_FALSE(s.training.overlap_param_gather);
}

// --overlap-param-gather: the distributed optimizer's weights gathered under the next forward;
// Megatron-LM refuses it without --use-distributed-optimizer, and so does from-megatron.
TEST(FromMegatron, OverlappedParamGatherNeedsTheDistributedOptimizer) {
  const std::string base = std::string("from-megatron --nodes 16 -- ") + kGpt3;
  const auto r = RunPipetwin(base + "--use-distributed-optimizer --overlap-param-gather");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("not modelled"), std::string::npos) << r.err;
  const Scenario s = ScenarioFromJson(nlohmann::json::parse(r.out), "out.json", ".");
  EXPECT_TRUE(s.training.distributed_optimizer);
  EXPECT_TRUE(s.training.overlap_param_gather);
  const auto bad = RunPipetwin(base + "--overlap-param-gather");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--overlap-param-gather needs --use-distributed-optimizer"),
            std::string::npos) << bad.err;
}

// Megatron-LM overlaps pipeline messages only in its interleaved schedule, and only with
// --overlap-p2p-communication (on unless --no-overlap-p2p-communication): elsewhere every
// forward and backward waits for its sends (schedule/op.h, SendMode::kBlocking).
TEST(FromMegatron, PipelineSendsBlockUnlessTheInterleavedScheduleOverlapsThem) {
  const std::string interleaved = std::string("from-megatron --nodes 8 -- ") + kGpt3 +
                                  "--num-layers-per-virtual-pipeline-stage 4 ";
  for (const auto& [extra, blocking] :
       std::vector<std::pair<std::string, bool>>{{"", false},
                                                 {"--no-overlap-p2p-communication", true},
                                                 {"--overlap-p2p-communication", false}}) {
    const auto r = RunPipetwin(interleaved + extra);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err.find("not modelled"), std::string::npos) << r.err;
    const Scenario s = ScenarioFromJson(nlohmann::json::parse(r.out), "out.json", ".");
    EXPECT_EQ(s.training.send_mode, blocking ? SendMode::kBlocking : SendMode::kEager) << extra;
  }
}

// Megatron's rank orders: tp-dp-pp (its default) puts a stage's replicas side by side,
// --use-tp-pp-dp-mapping a replica's stages.
TEST(FromMegatron, PlacementFollowsMegatronsRankOrder) {
  const std::string args = std::string("--nodes 16 -- ") + kGpt3;
  const auto dp_inner = RunPipetwin("from-megatron " + args);
  const auto pp_inner = RunPipetwin("from-megatron " + args + "--use-tp-pp-dp-mapping");
  ASSERT_EQ(dp_inner.exit_code, 0) << dp_inner.err;
  ASSERT_EQ(pp_inner.exit_code, 0) << pp_inner.err;
  const auto a = nlohmann::json::parse(dp_inner.out)["plan"]["stages"];
  const auto b = nlohmann::json::parse(pp_inner.out)["plan"]["stages"];
  EXPECT_EQ(a[1]["devices"], nlohmann::json({2, 3}));   // 8 stages x 2 replicas
  EXPECT_EQ(b[1]["devices"], nlohmann::json({1, 9}));
  EXPECT_EQ(pp_inner.err.find("not modelled"), std::string::npos) << pp_inner.err;
}

TEST(FromMegatron, LlamaArgumentsGiveLlama) {
  const auto r = RunPipetwin(
      "from-megatron --cluster dgx-h100 --nodes 8 -- --num-layers 80 --hidden-size 8192 "
      "--ffn-hidden-size 28672 --num-attention-heads 64 --group-query-attention "
      "--num-query-groups 8 --seq-length 8192 --max-position-embeddings 8192 "
      "--padded-vocab-size 128256 --swiglu --normalization RMSNorm --position-embedding-type "
      "rope --disable-bias-linear --untie-embeddings-and-output-weights --attention-dropout 0 "
      "--hidden-dropout 0 --micro-batch-size 1 --global-batch-size 64 "
      "--tensor-model-parallel-size 8 --pipeline-model-parallel-size 8 --bf16 --use-flash-attn");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("70.55 billion parameters"), std::string::npos) << r.err;  // Llama-3 70B
  const Scenario s = ScenarioFromJson(nlohmann::json::parse(r.out), "out.json", ".");
  EXPECT_EQ(s.source["workload"]["architecture"], "llama");
  EXPECT_EQ(s.source["workload"]["query_groups"], 8);
}

// --swiglu changes the MLP only (Megatron-LM's defaults stay: LayerNorm, learned positions,
// biases, tied embeddings, dropout), and its width defaults as Megatron-LM's validate_args
// sets it: int(4 h x 2/3 / 64) x 64, 10,880 at h = 4096.
TEST(FromMegatron, SwigluAloneChangesTheMlpOnly) {
  const auto r = RunPipetwin(
      "from-megatron --nodes 1 -- --num-layers 32 --hidden-size 4096 --num-attention-heads 32 "
      "--seq-length 2048 --max-position-embeddings 2048 --vocab-size 32000 --micro-batch-size 1 "
      "--global-batch-size 8 --tensor-model-parallel-size 8 --bf16 --swiglu");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json w = nlohmann::json::parse(r.out)["workload"];
  EXPECT_EQ(w["ffn_hidden"], 10880);
  EXPECT_TRUE(w["swiglu"].get<bool>());
  EXPECT_EQ(w["normalization"], "layernorm");
  EXPECT_EQ(w["position_embedding"], "learned");
  EXPECT_TRUE(w["bias"].get<bool>());
  EXPECT_TRUE(w["dropout"].get<bool>());
  EXPECT_FALSE(w["untie_embeddings"].get<bool>());
}

// Without --global-batch-size Megatron-LM takes one micro-batch per data-parallel rank a step
// (validate_args), and says so.
TEST(FromMegatron, NoGlobalBatchIsOneMicroBatchPerDataParallelRank) {
  const auto r = RunPipetwin(
      "from-megatron --nodes 2 -- --num-layers 32 --hidden-size 4096 --num-attention-heads 32 "
      "--seq-length 2048 --vocab-size 32000 --micro-batch-size 2 "
      "--tensor-model-parallel-size 8 --bf16");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Scenario s = ScenarioFromJson(nlohmann::json::parse(r.out), "out.json", ".");
  EXPECT_EQ(s.training.microbatches, 1);
  EXPECT_EQ(s.plan->stages[0].replicas, 2);
  EXPECT_NE(r.err.find("--global-batch-size not given: 4 (--micro-batch-size x data-parallel "
                       "size)"),
            std::string::npos)
      << r.err;
}

// The gradient buffer's precision as Megatron-LM's validate_args sets it: fp32 under --bf16
// unless --grad-reduce-in-bf16 (which wins over --accumulate-allreduce-grads-in-fp32), fp16
// under --fp16 unless --accumulate-allreduce-grads-in-fp32. In 2 bytes a gradient halves the
// buffer's memory, and the distributed optimizer's traffic, (gradient + weight) / 2 a
// parameter, falls from 3 bytes to 2. A hand-written workload that pairs 16-bit gradients with
// other weights is one line and exit 2.
TEST(FromMegatron, GradientsReduceInTheirOwnPrecision) {
  const std::string base =
      "from-megatron --cluster dgx-h100 --nodes 2 -- --num-layers 4 --hidden-size 1024 "
      "--num-attention-heads 16 --seq-length 2048 --max-position-embeddings 2048 "
      "--vocab-size 51200 --micro-batch-size 1 --global-batch-size 16 "
      "--tensor-model-parallel-size 2 --use-distributed-optimizer ";
  struct Row {
    std::string flags, gradients, warning;
  };
  for (const Row& row :
       {Row{"--bf16", "fp32", ""}, Row{"--bf16 --grad-reduce-in-bf16", "bf16", ""},
        Row{"--bf16 --grad-reduce-in-bf16 --accumulate-allreduce-grads-in-fp32", "bf16",
            "--grad-reduce-in-bf16 overrides --accumulate-allreduce-grads-in-fp32"},
        Row{"--fp16", "fp16", ""}, Row{"--fp16 --accumulate-allreduce-grads-in-fp32", "fp32", ""},
        Row{"--fp16 --grad-reduce-in-bf16", "fp16", "--grad-reduce-in-bf16 does nothing without"},
        Row{"", "fp32", ""}}) {
    const auto r = RunPipetwin(base + row.flags);
    ASSERT_EQ(r.exit_code, 0) << row.flags << ": " << r.err;
    const Scenario s = ScenarioFromJson(nlohmann::json::parse(r.out), "out.json", ".");
    EXPECT_EQ(s.source["workload"].value("gradient_precision", "fp32"), row.gradients) << row.flags;
    EXPECT_EQ(s.workload.gradient_dtype_bytes, row.gradients == "fp32" ? 4 : 2) << row.flags;
    if (!row.warning.empty())
      EXPECT_NE(r.err.find("warning: " + row.warning), std::string::npos) << r.err;
    else
      EXPECT_EQ(r.err.find("warning"), std::string::npos) << r.err;
  }
  // The memory line: 2 GPUs' worth of gradients per rank, 4 bytes against 2.
  auto gradients_gib = [](const std::string& err) {
    const auto at = err.find("gradients ");
    return at == std::string::npos ? -1.0 : std::stod(err.substr(at + 10));
  };
  const double fp32 = gradients_gib(RunPipetwin(base + "--bf16").err);
  const double bf16 = gradients_gib(RunPipetwin(base + "--bf16 --grad-reduce-in-bf16").err);
  ASSERT_GT(fp32, 0);
  EXPECT_NEAR(bf16, fp32 / 2, 0.051);

  const std::string dir = testing::TemporaryDirectory();
  nlohmann::json bad = nlohmann::json::parse(RunPipetwin(base + "--bf16").out);
  bad["workload"]["gradient_precision"] = "fp16";
  testing::WriteFile(dir + "/bad.json", bad.dump());
  const auto refused = RunPipetwin("simulate " + dir + "/bad.json");
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_EQ(refused.err, dir + "/bad.json: workload: gradient_precision must be fp32 or the "
                               "precision (bf16), got \"fp16\"\n");
}

// Megatron-LM reads its launch line with argparse: a flag given again overrides the earlier
// value, and --recompute-activations sets selective recomputation over any granularity
// (megatron/training/arguments.py, validate_args). The launch line means here what it means
// there, and what was overridden is named.
TEST(FromMegatron, ArgumentsOverrideEachOtherAsInMegatron) {
  const auto r = RunPipetwin(std::string("from-megatron --nodes 8 --scatter-gather-pipeline -- ") +
                             kGpt3 + "--recompute-granularity full --recompute-activations "
                             "--pipeline-model-parallel-size 4 --micro-batch-size 1 "
                             "--num-virtual-stages-per-pipeline-rank 2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Scenario s = ScenarioFromJson(nlohmann::json::parse(r.out), "out.json", ".");
  EXPECT_EQ(s.source["workload"]["recompute"], "selective");
  EXPECT_FALSE(s.training.recompute);
  EXPECT_TRUE(s.source["workload"]["scatter_gather_pipeline"].get<bool>());  // pipetwin's option
  EXPECT_DOUBLE_EQ(s.workload.layers[1].activation_bytes, 2.0 * 2048 * 12288 / 8);
  EXPECT_EQ(s.plan->StageCount(), 8);  // PP 4 (the later value) x 2 chunks
  EXPECT_EQ(s.training.chunks, 2);
  EXPECT_NE(r.err.find("64 GPUs = TP 8 x PP 4 x DP 2"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("warning: --pipeline-model-parallel-size 8 is overridden by a later "
                       "--pipeline-model-parallel-size 4"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("warning: --recompute-activations makes --recompute-granularity full "
                       "selective"),
            std::string::npos)
      << r.err;
  // Megatron-LM turns sequence parallelism off at TP 1, with a warning.
  const auto one = RunPipetwin(
      "from-megatron -- --num-layers 4 --hidden-size 1024 --num-attention-heads 16 "
      "--seq-length 1024 --vocab-size 51200 --micro-batch-size 1 --sequence-parallel");
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_FALSE(nlohmann::json::parse(one.out)["workload"]["sequence_parallel"].get<bool>());
  EXPECT_NE(one.err.find("warning: --sequence-parallel is off with --tensor-model-parallel-size 1"),
            std::string::npos)
      << one.err;
  // The same value again overrides nothing and is not warned about.
  EXPECT_EQ(r.err.find("--micro-batch-size 1 is overridden"), std::string::npos) << r.err;
}

TEST(FromMegatron, InconsistentArgumentsAreOneLineAndExit2) {
  struct Case {
    std::string args, expected;
  } cases[] = {
      {"--nodes 8 -- --num-layers 96 --hidden-size 12288 --num-attention-heads 96 "
       "--seq-length 2048 --vocab-size 51200 --micro-batch-size 1 --global-batch-size 64 "
       "--tensor-model-parallel-size 5",
       "--num-attention-heads (96) must be divisible by --tensor-model-parallel-size (5)"},
      {"--nodes 3 -- " + std::string(kGpt3), "24 GPUs (3 nodes of 8) are not divisible by"},
      {"--nodes 8 -- " + std::string(kGpt3) + "--recompute-granularity full --recompute-method x",
       "--recompute-method: expected uniform or block, got x"},
      // A refused line gets its one line: no warning about what it would have ignored.
      {"--nodes 3 -- " + std::string(kGpt3) + "--lr 1e-4 --bf16 --micro-batch-size 2",
       "24 GPUs (3 nodes of 8) are not divisible by"},
      {"-- --num-layers 4 --hidden-size 1024 --num-attention-heads 16 --seq-length 1024 "
       "--vocab-size 51200 --micro-batch-size 1 --sequence-parallel --tp-comm-overlap",
       "--tp-comm-overlap needs --tensor-model-parallel-size > 1"},
      {"-- --hidden-size 12288 --num-attention-heads 96 --seq-length 2048 --vocab-size 51200 "
       "--micro-batch-size 1 --global-batch-size 64",
       "--num-layers is required"},
      {"-- " + std::string(kGpt3) + "--fp16", "--bf16 and --fp16 exclude each other"},
      {"--nodes 8 -- " + std::string(kGpt3) +
           "--num-layers-per-virtual-pipeline-stage 4 --num-virtual-stages-per-pipeline-rank 3",
       "--num-layers-per-virtual-pipeline-stage and --num-virtual-stages-per-pipeline-rank "
       "exclude each other"},
      {"--nodes 8 -- " + std::string(kGpt3) + "--num-virtual-stages-per-pipeline-rank 5",
       "--num-virtual-stages-per-pipeline-rank (5) must divide the layers per pipeline stage (12)"},
      {"--nodes 16 -- --num-layers 96 --hidden-size 12288 --num-attention-heads 96 "
       "--seq-length 2048 --vocab-size 51200 --micro-batch-size 1 --global-batch-size 63 "
       "--tensor-model-parallel-size 8 --pipeline-model-parallel-size 8",
       "--global-batch-size (63) must be divisible by"},
      {"--cluster dgx-a100 -- --num-layers 32 --hidden-size 4096 --num-attention-heads 32 "
       "--seq-length 2048 --vocab-size 51200 --micro-batch-size 1 --global-batch-size 8 "
       "--tensor-model-parallel-size 16",
       "must divide the 8 GPUs of a dgx-a100 server"},
  };
  for (const Case& c : cases) {
    const auto r = RunPipetwin("from-megatron " + c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args;
    EXPECT_NE(r.err.find(c.expected), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_TRUE(r.out.empty());
  }
}

}  // namespace
}  // namespace pipetwin

namespace pipetwin {
namespace {

TEST(FromMegatron, SearchRanksWhatFitsAndWritesTheBest) {
  const auto r = testing::RunPipetwin(
      "from-megatron --search --simulate 0 --top 5 --nodes 128 -- --num-layers 96 "
      "--hidden-size 12288 --num-attention-heads 96 --seq-length 2048 "
      "--max-position-embeddings 2048 --vocab-size 50257 --global-batch-size 1536 --bf16");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("rank  TP  PP   DP"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("writing rank 1 (the fastest estimate)"), std::string::npos) << r.err;
  const Scenario s = ScenarioFromJson(nlohmann::json::parse(r.out), "out.json", ".");
  EXPECT_GT(s.workload.tensor_parallel, 1);
  // Layout flags are the search's to choose.
  const auto refused = testing::RunPipetwin(
      "from-megatron --search --nodes 128 -- --num-layers 96 --hidden-size 12288 "
      "--num-attention-heads 96 --seq-length 2048 --vocab-size 50257 --global-batch-size 1536 "
      "--tensor-model-parallel-size 8");
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("--search chooses --tensor-model-parallel-size"), std::string::npos)
      << refused.err;
}

// `--search --planner 2bw`: PipeDream-2BW's plans ranked, the best written as a scenario of the
// 2bw schedule at its tensor-parallel size, which the planners and the simulator take.
TEST(FromMegatron, SearchWithTheTwoBWPlannerWritesItsBestPlan) {
  const auto r = RunPipetwin(
      "from-megatron --search --planner 2bw --simulate 0 --nodes 8 -- --num-layers 96 "
      "--hidden-size 12288 --num-attention-heads 96 --seq-length 2048 --vocab-size 50257 "
      "--global-batch-size 512 --bf16");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("rank  TP  PP   DP  micro    m  recompute  samples/s"), std::string::npos)
      << r.err;
  const Scenario s = ScenarioFromJson(nlohmann::json::parse(r.out), "out.json", ".");
  EXPECT_EQ(s.schedule, ScheduleKind::kTwoBW);
  ASSERT_TRUE(s.plan);
  EXPECT_EQ(s.plan->planner, "2bw");
  EXPECT_GT(s.workload.tensor_parallel, 1);
  EXPECT_LE(s.plan->WorkerCount(), s.cluster.DeviceCount());
  EXPECT_TRUE(s.notes.empty()) << s.notes[0];  // its training settings are the plan's own
  const auto bad = RunPipetwin(
      "from-megatron --search --planner gpipe --nodes 8 -- --num-layers 96 --hidden-size 12288 "
      "--num-attention-heads 96 --seq-length 2048 --vocab-size 50257 --global-batch-size 512");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--planner: expected megatron or 2bw, got gpipe"), std::string::npos)
      << bad.err;
}

}  // namespace
}  // namespace pipetwin
