// The Megatron-LM transformer model (workloads/megatron) against published parameter counts,
// the closed forms of its papers, and hand computations.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "partition/cost/communication.h"
#include "partition/cost/stage_costs.h"
#include "partition/model/cluster.h"
#include "partition/util/error.h"
#include "workloads/megatron/layer_work.h"
#include "workloads/megatron/megatron_workload.h"
#include "workloads/megatron/model.h"
#include "workloads/megatron/search.h"

namespace pipetwin {
namespace {

double Total(const MegatronModel& m) { return CountParameters(m, m.vocabulary).total; }

// Published counts: Hugging Face's model cards and configs (exact), GPT-3's paper (rounded).
TEST(MegatronModel, ParameterCountsMatchPublishedSizes) {
  EXPECT_EQ(Total(LlamaModel(32, 4096, 11008, 32, 32, 4096, 32000)), 6738415616.0);   // Llama-2 7B
  EXPECT_EQ(Total(LlamaModel(80, 8192, 28672, 64, 8, 4096, 32000)), 68976648192.0);   // Llama-2 70B
  EXPECT_EQ(Total(LlamaModel(32, 4096, 14336, 32, 8, 8192, 128256)), 8030261248.0);   // Llama-3 8B
  EXPECT_EQ(Total(LlamaModel(80, 8192, 28672, 64, 8, 8192, 128256)), 70553706496.0);  // Llama-3 70B
  EXPECT_EQ(Total(LlamaModel(126, 16384, 53248, 128, 8, 8192, 128256)), 405853388800.0);  // 405B
  // GPT-3 175B (Brown et al. 2020, table 2.1: 175.0B): 12 l h^2 + 13 l h + V h + s h + 2h.
  EXPECT_NEAR(Total(GptModel(96, 12288, 96, 2048, 50257)) / 175.0e9, 1.0, 0.005);
  EXPECT_EQ(CountParameters(GptModel(96, 12288, 96, 2048, 50257), 50257).block,
            12.0 * 12288 * 12288 + 13.0 * 12288);
}

TEST(MegatronModel, VocabularyIsPaddedAsMegatronPadsIt) {
  EXPECT_EQ(PaddedVocabulary(50257, 1), 50304);  // GPT-2's padded vocabulary in Megatron-LM
  EXPECT_EQ(PaddedVocabulary(50257, 8), 51200);  // Korthikanti et al. 2022: "vocabulary 51,200"
  EXPECT_EQ(PaddedVocabulary(51200, 8), 51200);
}

TEST(MegatronModel, PerRankParametersSplitTheMatricesAndReplicateTheNorms) {
  const MegatronModel gpt = GptModel(2, 1024, 16, 128, 1000);
  const double h = 1024, t = 4;
  // QKV 3h^2 + 3h and MLP-in 4h^2 + 4h split; projection h^2 and MLP-out 4h^2 split, their
  // biases h + h and the norms 4h replicated.
  EXPECT_DOUBLE_EQ(BlockParametersPerRank(gpt, 4), (12 * h * h + 7 * h) / t + 2 * h + 4 * h);
  EXPECT_DOUBLE_EQ(BlockParametersPerRank(gpt, 1), CountParameters(gpt, 1000).block);
}

TEST(MegatronModel, InconsistentSettingsAreNamed) {
  MegatronParallel p;
  p.tensor = 7;
  try {
    ValidateMegatron(GptModel(96, 12288, 96, 2048, 50257), p);
    FAIL() << "accepted 96 heads over 7 ranks";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "heads (96) must be divisible by tensor_parallel (7)");
  }
  p.tensor = 16;
  EXPECT_THROW(ValidateMegatron(LlamaModel(32, 4096, 14336, 32, 8, 8192, 128256), p), InputError);
}

// Narayanan et al. SC'21, section 5.1, for GPT-3 175B, B = 64, V = 51,200 (by hand).
TEST(MegatronModel, NarayananFlopFormula) {
  const MegatronModel gpt3 = GptModel(96, 12288, 96, 2048, 50257);
  EXPECT_NEAR(NarayananModelFlops(gpt3, 64, 51200) / 1.4109153109947186e17, 1, 1e-12);
  EXPECT_NEAR(NarayananHardwareFlopsFullRecompute(gpt3, 64, 51200) / 1.879571147217961e17, 1, 1e-12);
}

double GemmFlops(const std::vector<Kernel>& kernels) {
  double f = 0;
  for (const Kernel& k : kernels)
    if (k.kind == KernelKind::kGemm) f += k.flops;
  return f;
}

// The op lists' GEMMs, forward and backward, add up to the paper's model FLOPs: its formula
// counts exactly these matrix products (3 x the forward).
TEST(MegatronWork, GemmFlopsAddUpToNarayanansFormula) {
  const MegatronModel gpt3 = GptModel(96, 12288, 96, 2048, 50257);
  for (int t : {1, 8}) {
    MegatronParallel p;
    p.tensor = t;
    const LayerWork block = BlockWork(gpt3, p), output = OutputWork(gpt3, p);
    const double per_microbatch =
        t * (96 * (GemmFlops(block.forward) + GemmFlops(block.backward)) +
             GemmFlops(output.forward) + GemmFlops(output.backward));
    EXPECT_NEAR(per_microbatch * 64 / NarayananModelFlops(gpt3, 64, RunVocabulary(gpt3, t)), 1,
                1e-9) << "t " << t;
  }
}

// The model FLOPs a report's tflops_per_gpu divides by are the ones Megatron-Core r0.8.0 logs
// its TFLOP/s with (megatron/training/training.py, num_floating_point_operations, written here
// from it): 12 B s l h^2 ((1 + g/a + s/h) a d / h + f/h x (3/2 if SwiGLU) + V / 2 l h), so that a
// prediction compares with a published per-GPU rate directly (scripts/validate-published.sh's
// H100 rows: GPT, untied). Llama-2 70B and Llama-3 8B check the grouped-query and SwiGLU terms
// and the padded vocabulary.
TEST(MegatronWork, ModelFlopsAreMegatronCoresCount) {
  struct Case {
    MegatronModel m;
    int vocabulary;
  };
  MegatronModel gpt32b = GptModel(48, 7168, 56, 4096, 131072);
  gpt32b.untied = true;
  for (const Case& c : {Case{gpt32b, 131072}, Case{GptModel(96, 12288, 96, 2048, 51200), 51200},
                        Case{LlamaModel(80, 8192, 28672, 64, 8, 4096, 32000), 32000},
                        Case{LlamaModel(32, 4096, 14336, 32, 8, 8192, 128256), 128256}}) {
    const MegatronModel& m = c.m;
    const double s = m.sequence, l = m.layers, h = m.hidden, a = m.heads, g = m.QueryGroups(),
                 d = m.HeadDim(), f = m.FfnHidden();
    for (int t : {1, 8}) {
      // padded_vocab_size: a multiple of --make-vocab-size-divisible-by (128) times t.
      const double v = std::ceil(c.vocabulary / (128.0 * t)) * 128 * t;
      const double megatron = 12 * s * l * h * h *
                              ((1 + g / a + s / h) * a * d / h + f / h * (m.swiglu ? 1.5 : 1.0) +
                               v / (2 * l * h));
      MegatronParallel p;
      p.tensor = t;
      p.flash_attention = t == 8;  // counted in full either way: the formula has no causal half
      const Workload w = MegatronWorkload(m, p, ClusterPreset("dgx-h100", 1));
      EXPECT_NEAR(w.model_flops_per_sample / megatron, 1, 1e-9) << m.layers << " layers, t " << t;
    }
  }
}

// Korthikanti et al. 2022, Table 2: activation bytes per layer, 16-bit, with dropout.
TEST(MegatronWork, StashIsKorthikantisTable2) {
  const MegatronModel gpt3 = GptModel(96, 12288, 96, 2048, 50257);
  const double s = 2048, b = 1, h = 12288, a = 96, t = 8, sbh = s * b * h;
  MegatronParallel p;
  p.tensor = 8;
  EXPECT_NEAR(BlockWork(gpt3, p).stash_bytes, sbh * (10 + 24 / t + 5 * a * s / (h * t)), 1);
  p.sequence_parallel = true;
  EXPECT_NEAR(BlockWork(gpt3, p).stash_bytes, sbh / t * (34 + 5 * a * s / h), 1);
  p.recompute = Recompute::kSelective;
  EXPECT_NEAR(BlockWork(gpt3, p).stash_bytes, sbh * 34 / t, 1);
  p.sequence_parallel = false;
  EXPECT_NEAR(BlockWork(gpt3, p).stash_bytes, sbh * (10 + 24 / t), 1);
  p.tensor = 1;
  p.recompute = Recompute::kNone;
  EXPECT_NEAR(BlockWork(gpt3, p).stash_bytes, sbh * (34 + 5 * a * s / h), 1);  // section 4.1
}

// Shoeybi et al. 2019: 2 all-reduces of b s h forward and 2 backward per block; Korthikanti et
// al. 2022: sequence parallelism replaces each by an all-gather and a reduce-scatter.
TEST(MegatronWork, TensorParallelCollectivesPerBlock) {
  const MegatronModel gpt = GptModel(4, 4096, 32, 2048, 51200);
  MegatronParallel p;
  p.tensor = 8;
  p.microbatch = 2;
  const double bytes = 2.0 * 2048 * 2 * 4096;
  LayerWork w = BlockWork(gpt, p);
  ASSERT_EQ(w.forward_collectives.size(), 2u);
  ASSERT_EQ(w.backward_collectives.size(), 2u);
  for (const auto* list : {&w.forward_collectives, &w.backward_collectives})
    for (const Collective& c : *list) {
      EXPECT_EQ(c.kind, CollectiveKind::kAllReduce);
      EXPECT_DOUBLE_EQ(c.bytes, bytes);
    }
  p.sequence_parallel = true;
  w = BlockWork(gpt, p);
  int gathers = 0, scatters = 0;
  for (const Collective& c : w.forward_collectives) {
    gathers += c.kind == CollectiveKind::kAllGather;
    scatters += c.kind == CollectiveKind::kReduceScatter;
  }
  EXPECT_EQ(gathers, 2);
  EXPECT_EQ(scatters, 2);
}

// Ring collectives over 8 GPUs at nccl-tests' 200 GB/s bus bandwidth, 1 us per step, by hand.
TEST(MegatronWork, TensorParallelCollectiveCost) {
  const Cluster dgx = ClusterPreset("dgx-a100", 1);
  const LinearCost ar = TensorParallelCollectiveCost(dgx, 8, CollectiveKind::kAllReduce);
  EXPECT_NEAR(ar.Ms(100e6), 14 * 1e-3 + 100e6 * 2 * 7 / 8 / 200e9 * 1e3, 1e-9);
  const LinearCost ag = TensorParallelCollectiveCost(dgx, 8, CollectiveKind::kAllGather);
  EXPECT_NEAR(ag.Ms(100e6), 7 * 1e-3 + 100e6 * 7 / 8 / 200e9 * 1e3, 1e-9);
  EXPECT_EQ(TensorParallelCollectiveCost(dgx, 1, CollectiveKind::kAllReduce).Ms(1e9), 0);
}

// The DGX H100 preset charges its tensor-parallel collectives by XLA's measured H100 table
// (cluster.cc, HopperCollectives): a measured size at its time, one between two sizes on the
// line between them. Checked against a figure from outside that table: on H100 servers, "NCCL
// can get an effective NVLink bandwidth of 370GB/s, which you can observe as BusBw when running
// non-allreduce operations" (S. Jeaugey, NCCL's maintainer, NVIDIA/nccl-tests issue #212, 2024);
// the table's largest all-gather and reduce-scatter over 8 GPUs are within 15% of it. A100
// servers keep the ring at their bus bandwidth.
TEST(MegatronWork, HopperCollectivesAreMeasured) {
  const Cluster h100 = ClusterPreset("dgx-h100", 1);
  EXPECT_NEAR(TensorParallelCollectiveMs(h100, 8, CollectiveKind::kAllGather, 64 << 20), 0.2136,
              1e-12);
  EXPECT_NEAR(TensorParallelCollectiveMs(h100, 4, CollectiveKind::kReduceScatter, 96 << 20),
              (0.2244 + 0.4044) / 2, 1e-12);
  for (const CollectiveKind kind : {CollectiveKind::kAllGather, CollectiveKind::kReduceScatter}) {
    const double bytes = 2.0 * (1 << 30);
    const double busbw = bytes * 7 / 8 / (1e-3 * TensorParallelCollectiveMs(h100, 8, kind, bytes));
    EXPECT_NEAR(busbw, 370e9, 0.15 * 370e9);
  }
  // Small messages pay a fixed cost that a ring at the bus bandwidth misses.
  EXPECT_GT(TensorParallelCollectiveMs(h100, 8, CollectiveKind::kAllReduce, 1 << 20),
            2 * TensorParallelCollectiveCost(h100, 8, CollectiveKind::kAllReduce).Ms(1 << 20));
  EXPECT_EQ(ClusterPreset("dgx-h200", 1).levels[0].collective_tables.size(), 9u);
  const Cluster a100 = ClusterPreset("dgx-a100", 1);
  EXPECT_TRUE(a100.levels[0].collective_tables.empty());
  EXPECT_DOUBLE_EQ(TensorParallelCollectiveMs(a100, 8, CollectiveKind::kAllGather, 64 << 20),
                   TensorParallelCollectiveCost(a100, 8, CollectiveKind::kAllGather).Ms(64 << 20));
  EXPECT_EQ(TensorParallelCollectiveMs(h100, 1, CollectiveKind::kAllReduce, 1e9), 0);
}

// Tile and wave quantisation: 6912 x 16384 (the A100's best mamf-finder shape) fills 32 waves of
// 108 tiles of 128 x 256 exactly; 2048 x 4608 fills 288 of 324 tile slots.
TEST(MegatronDevice, GemmEfficiencyLosesTilesAndWaves) {
  const DeviceSpec a100 = DevicePreset("A100-80GB");
  EXPECT_DOUBLE_EQ(GemmEfficiency(Gemm("best", 6912, 16384, 2048, 1, 2), a100), 0.859);
  EXPECT_DOUBLE_EQ(GemmEfficiency(Gemm("qkv", 2048, 4608, 12288, 1, 2), a100), 0.859 * 288 / 324);
  // 100 x 100 uses 10,000 of a 128 x 256 tile's 32,768 cells, one tile of 108 SMs.
  EXPECT_DOUBLE_EQ(GemmEfficiency(Gemm("tiny", 100, 100, 64, 1, 2), a100),
                   0.859 * 10000 / 32768 / 108);
  const Kernel big = Gemm("big", 8192, 8192, 8192, 1, 2);
  EXPECT_NEAR(KernelMs(big, a100), 1e3 * big.flops / (312e12 * 0.859 * 64 * 32 / (19 * 108)), 1e-9);
}

// Measured GEMMs (a cluster file's device.gemm_table) replace the best-shape share: a measured
// shape runs at its rate; another takes the nearest measured shape's share of peak, scaled by
// the two shapes' tile and wave quantization. By hand on an A100 (312 TFLOP/s, 108 SMs):
// 2048 x 4608 x 12288 measured at 234 TFLOP/s (a share of 0.75); 2048 x 4096 x 12288 is
// nearest to it and fills 16 x 16 = 256 tiles (3 waves, 256/324) where it filled 288 (3 waves,
// 288/324): 0.75 x 256 / 288.
TEST(MegatronDevice, MeasuredGemmsReplaceTheBestShapeShare) {
  nlohmann::json doc = ClusterToJson(ClusterPreset("dgx-a100", 1));
  doc["device"]["gemm_table"] = {{{"m", 2048}, {"n", 4608}, {"k", 12288}, {"tflops", 234}},
                                 {{"m", 64}, {"n", 64}, {"k", 64}, {"batch", 8}, {"tflops", 1}}};
  const Cluster c = ClusterFromJson(doc, "measured.json");
  ASSERT_EQ(c.device.gemm_table.size(), 2u);
  EXPECT_DOUBLE_EQ(GemmEfficiency(Gemm("measured", 2048, 4608, 12288, 1, 2), c.device), 0.75);
  EXPECT_DOUBLE_EQ(GemmEfficiency(Gemm("near", 2048, 4096, 12288, 1, 2), c.device),
                   0.75 * 256 / 288);
  // It survives a round trip; a bad entry is named by its JSON path.
  EXPECT_EQ(ClusterFromJson(ClusterToJson(c), "again.json").device.gemm_table.size(), 2u);
  doc["device"]["gemm_table"][1]["tflops"] = 0;
  try {
    ClusterFromJson(doc, "bad.json");
    ADD_FAILURE() << "a GEMM at 0 TFLOP/s was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.json: device.gemm_table[1].tflops"),
              std::string::npos) << e.what();
  }
}

// The Hopper presets' GEMMs (XLA's sm_90 table, cluster.cc) against a GEMM measured apart
// from it: on an H100 DGX, torch.nn.Linear's forward over 8192 tokens of width 2048 in bf16
// (8192 x 2048 x 2048) took 100.06 us of GPU time (NVIDIA/TransformerEngine issue #2053, August
// 2025). The table's nearest shape, 4096 x 2048 x 2048 at 727.5 TFLOP/s, quantises as it does:
// 94.5 us (-5.6%). The best-shape share alone, 0.801 x 512 / 528, said 89.5 us (-10.6%).
TEST(MegatronDevice, HopperGemmsMeetALinearMeasuredApart) {
  for (const char* name : {"H100-SXM-80GB", "H200"}) {
    const DeviceSpec hopper = DevicePreset(name);
    ASSERT_EQ(hopper.gemm_table.size(), 64u) << name;
    const Kernel linear = Linear("linear", 8192, 2048, 2048, 2);
    EXPECT_NEAR(KernelMs(linear, hopper) * 1e3, 100.06, 0.1 * 100.06) << name;
    EXPECT_NEAR(KernelMs(linear, hopper) * 1e3, 1e6 * linear.flops / 727.5e12, 1e-6) << name;
    // XLA's shapes run at their own rates; depth alone moves one by 29%.
    EXPECT_NEAR(GemmEfficiency(Gemm("deep", 4096, 4096, 4096, 1, 2), hopper) * 989, 780.2, 1e-9);
    EXPECT_NEAR(GemmEfficiency(Gemm("shallow", 4096, 4096, 512, 1, 2), hopper) * 989, 551.8, 1e-9);
  }
  // A cluster file may drop the table: the best-shape share is back.
  nlohmann::json doc = ClusterToJson(ClusterPreset("dgx-h100", 1));
  doc["device"]["gemm_table"] = nlohmann::json::array();
  const DeviceSpec dropped = ClusterFromJson(doc, "dropped.json").device;
  EXPECT_TRUE(dropped.gemm_table.empty());
  EXPECT_NEAR(GemmEfficiency(Gemm("linear", 8192, 2048, 2048, 1, 2), dropped), 0.801 * 512 / 528,
              1e-12);
}

// Qi et al. (ICLR 2024), Table 1, per transformer layer, matrix products only (GPT, 4h MLP):
// F = sbh(24h + 4s), B = sbh(24h + 8s), W = sbh(24h). The block's backward kernels, split by
// Kernel::weight_gradient into the zero-bubble passes I (the paper's B) and W, give them; the
// attention core's two products (scores, context) have no weight, so both their gradients are I's.
TEST(MegatronWork, ZeroBubbleSplitIsQiTable1) {
  const double s = 1024, b = 3, h = 2304, sbh = s * b * h;
  const MegatronModel gpt = GptModel(4, 2304, 24, 1024, 51200);
  for (int t : {1, 4}) {
    MegatronParallel p;
    p.tensor = t;
    p.microbatch = 3;
    const LayerWork w = BlockWork(gpt, p);
    double input = 0, weight = 0;
    for (const Kernel& k : w.backward)
      if (k.kind == KernelKind::kGemm) (k.weight_gradient ? weight : input) += k.flops;
    EXPECT_NEAR(t * GemmFlops(w.forward) / (sbh * (24 * h + 4 * s)), 1, 1e-12) << "t " << t;
    EXPECT_NEAR(t * input / (sbh * (24 * h + 8 * s)), 1, 1e-12) << "t " << t;
    EXPECT_NEAR(t * weight / (sbh * 24 * h), 1, 1e-12) << "t " << t;
  }
  // The embedding's input is token ids: its whole backward is its tables' gradients but the
  // dropout's.
  MegatronParallel p;
  for (const Kernel& k : EmbeddingWork(gpt, p).backward)
    EXPECT_EQ(k.weight_gradient, k.name != "embedding dropout grad") << k.name;
}

// Qi et al. (ICLR 2024), Table 1: once B (pipetwin's I) has run, W needs M_W = 32 s b h of a
// GPT layer (16 bits, no tensor parallelism), against the M_B = s b (34 h + 5 a s) the backward
// started from. With t ranks, by hand from the four linear layers' kept inputs and output
// gradients: D N (4 + 12 / t); with sequence parallelism the two gathered inputs are kept as
// their shards: D N (2 + 14 / t).
TEST(MegatronWork, ZeroBubbleWeightStashIsQiTable1) {
  const double s = 1024, b = 3, h = 2304, a = 24, sbh = s * b * h;
  const MegatronModel gpt = GptModel(4, 2304, 24, 1024, 51200);
  MegatronParallel p;
  p.microbatch = 3;
  LayerWork w = BlockWork(gpt, p);
  EXPECT_NEAR(w.weight_stash_bytes / (32 * sbh), 1, 1e-12);
  EXPECT_NEAR(w.stash_bytes / (s * b * (34 * h + 5 * a * s)), 1, 1e-12);
  p.tensor = 8;
  EXPECT_NEAR(BlockWork(gpt, p).weight_stash_bytes / (2 * sbh * (4 + 12.0 / 8)), 1, 1e-12);
  p.sequence_parallel = true;
  EXPECT_NEAR(BlockWork(gpt, p).weight_stash_bytes / (2 * sbh * (2 + 14.0 / 8)), 1, 1e-12);
}

// The zero-bubble runtime's Megatron layers (sail-sg/zero-bubble-pipeline-parallelism,
// tensor_parallel/layers.py) run the input gradient's all-reduce, or reduce-scatter, in the I
// pass and synchronously; the W pass re-gathers a sequence-parallel input before its GEMM, also
// synchronously. So: without sequence parallelism every backward collective is I's; with it the
// two re-gathers are W's; none runs beside a kernel.
TEST(MegatronWork, ZeroBubbleCollectivesFollowTheirGradient) {
  const MegatronModel gpt = GptModel(4, 4096, 32, 2048, 51200);
  const Cluster dgx = ClusterPreset("dgx-a100", 1);
  const double tensor_bytes = 2.0 * 2048 * 2 * 4096;  // D s b h
  MegatronParallel p;
  p.tensor = 8;
  p.microbatch = 2;
  PassMs ms = LayerPassMs(BlockWork(gpt, p), dgx, 8);
  EXPECT_GT(ms.backward_overlapped, 0);  // fused, the all-reduces run beside the wgrad GEMMs
  EXPECT_DOUBLE_EQ(ms.weight_bytes, 0);
  EXPECT_DOUBLE_EQ(ms.weight_exposed, 0);
  EXPECT_DOUBLE_EQ(ms.input_bytes, ms.backward_bytes);
  const double all_reduce = TensorParallelCollectiveCost(dgx, 8, CollectiveKind::kAllReduce).Ms(tensor_bytes);
  EXPECT_NEAR(ms.input_exposed, 2 * all_reduce, 1e-12);
  // Apart, the passes lose the overlap they had together.
  EXPECT_GT(ms.input + ms.weight, ms.backward);

  p.sequence_parallel = true;
  ms = LayerPassMs(BlockWork(gpt, p), dgx, 8);
  const double gather = TensorParallelCollectiveCost(dgx, 8, CollectiveKind::kAllGather).Ms(tensor_bytes);
  EXPECT_NEAR(ms.weight_exposed, 2 * gather, 1e-12);
  EXPECT_DOUBLE_EQ(ms.weight_bytes, 2 * RingBytesPerRank(8, CollectiveKind::kAllGather, tensor_bytes));
  EXPECT_NEAR(ms.input_bytes + ms.weight_bytes, ms.backward_bytes, 1e-6);
  EXPECT_GT(ms.input + ms.weight, ms.backward);

  // With no tensor parallelism nothing is lost: the passes add up to the backward.
  p.tensor = 1;
  p.sequence_parallel = false;
  const Cluster one = ClusterPreset("dgx-a100", 1);
  ms = LayerPassMs(BlockWork(gpt, p), one, 1);
  EXPECT_NEAR(ms.input + ms.weight, ms.backward, 1e-12 * ms.backward);
  EXPECT_GT(ms.input, ms.weight);
}

// Qi et al. (ICLR 2024), Table 9 (appendix D): T_F, T_B and T_W profiled by the zero-bubble
// runtime on A100 SXM 80GB, one middle stage of Table 3's models (first and last stages hold one
// layer fewer, so a middle one holds (layers + 2) / p), no tensor parallelism. The runtime's
// launch script of the paper's time (sail-sg/zero-bubble-pipeline-parallelism at ed85b11c,
// examples/pretrain_llama_7b.sh, a GPT model despite its name) trains in fp16 without flash
// attention, with Megatron's default dropout. pipetwin's A100-80GB block, nothing fitted, is held
// to the project's per-row target (10%) on the two backward passes; its forward is 13-28% faster
// than the table's, a gap docs/validation.md records and does not explain (the test prints all
// three).
TEST(MegatronWork, ZeroBubblePassesAgainstQiTable9) {
  struct Row {
    const char* model;
    int layers, heads, hidden, stages, microbatch;
    double f, b, w;  // ms, Table 9, the row with the fewest micro-batches
  } rows[] = {{"1.5B", 22, 24, 2304, 8, 6, 18.522, 18.086, 9.337},
              {"6.2B", 30, 32, 4096, 8, 3, 29.718, 29.444, 19.927},
              {"14.6B", 46, 40, 5120, 16, 1, 11.347, 11.248, 8.132},
              {"28.3B", 62, 48, 6144, 32, 1, 10.419, 10.207, 7.715}};
  const Cluster dgx = ClusterPreset("dgx-a100", 1);
  for (const Row& r : rows) {
    const MegatronModel gpt = GptModel(r.layers, r.hidden, r.heads, 1024, 51200);
    MegatronParallel p;
    p.microbatch = r.microbatch;
    p.precision = "fp16";
    const PassMs ms = LayerPassMs(BlockWork(gpt, p), dgx, 1);
    const double per_stage = (r.layers + 2) / r.stages;
    const double f = per_stage * ms.forward, i = per_stage * ms.input, w = per_stage * ms.weight;
    std::printf("[ table 9 ] %-5s F %6.2f ms (%6.3f, %+5.1f%%)  I %6.2f ms (%6.3f, %+5.1f%%)  "
                "W %6.2f ms (%6.3f, %+5.1f%%)\n",
                r.model, f, r.f, 100 * (f / r.f - 1), i, r.b, 100 * (i / r.b - 1), w, r.w,
                100 * (w / r.w - 1));
    EXPECT_NEAR(per_stage * ms.input / r.b, 1, 0.10) << r.model << " I";
    EXPECT_NEAR(per_stage * ms.weight / r.w, 1, 0.10) << r.model << " W";
  }
}

// Megatron's --tp-comm-overlap: the forward's all-gathers and reduce-scatters cost what they take
// beyond the GEMM beside them (qkv and MLP-in after a gather, projection and MLP-out before a
// scatter), and so do the backward's all-gathers of the projection's and MLP-out's output
// gradients beside their input-gradient GEMMs (Transformer Engine's proj_dgrad and fc2_dgrad
// exchanges), by hand from the same kernel and collective costs.
TEST(MegatronWork, TensorParallelOverlapHidesTheForwardsCollectivesBehindTheirGemms) {
  const MegatronModel gpt3 = GptModel(96, 12288, 96, 2048, 50257);
  const Cluster dgx = ClusterPreset("dgx-a100", 1);
  MegatronParallel p;
  p.tensor = 8;
  p.sequence_parallel = true;
  const LayerWork plain = BlockWork(gpt3, p);
  p.tp_comm_overlap = true;
  const LayerWork overlapped = BlockWork(gpt3, p);
  // Beside its GEMM a collective costs what it outlasts the GEMM, or, when the GEMM is longer,
  // the GEMM's slowdown from NCCL's 24 channels on 24 of the A100's 108 SMs: the rest is hidden.
  double hidden = 0;
  for (const Collective& c : overlapped.forward_collectives) {
    ASSERT_FALSE(c.beside.empty()) << c.name;
    const double comm = TensorParallelCollectiveCost(dgx, 8, c.kind).Ms(c.bytes);
    for (const Kernel& k : overlapped.forward)
      if (k.name == c.beside)
        hidden += comm - std::max(comm - KernelMs(k, dgx.device), comm * 24.0 / 108.0);
  }
  EXPECT_GT(hidden, 0);
  EXPECT_NEAR(LayerPassMs(plain, dgx, 8).forward - LayerPassMs(overlapped, dgx, 8).forward, hidden,
              1e-9);
  double hidden_backward = 0;
  int moved = 0;
  for (size_t i = 0; i < plain.backward_collectives.size(); ++i) {
    const Collective& before = plain.backward_collectives[i];
    const Collective& c = overlapped.backward_collectives[i];
    if (before.beside == c.beside) continue;
    ++moved;
    EXPECT_TRUE(before.beside.empty()) << c.name;
    EXPECT_EQ(c.kind, CollectiveKind::kAllGather) << c.name;
    const std::string gemm = c.name.rfind("attention", 0) == 0 ? "projection" : "mlp out";
    EXPECT_EQ(c.beside, gemm + " input grad");
    const double comm = TensorParallelCollectiveCost(dgx, 8, c.kind).Ms(c.bytes);
    for (const Kernel& k : overlapped.backward)
      if (k.name == c.beside)
        hidden_backward += comm - std::max(comm - KernelMs(k, dgx.device), comm * 24.0 / 108.0);
  }
  EXPECT_EQ(moved, 2);
  EXPECT_NEAR(LayerPassMs(plain, dgx, 8).backward - LayerPassMs(overlapped, dgx, 8).backward,
              hidden_backward, 1e-9);
  p.sequence_parallel = false;
  EXPECT_THROW(ValidateMegatron(gpt3, p), InputError);
}

// A collective beside a kernel, by hand: with 24 of 108 SMs taken, a 3 ms GEMM beside a 1 ms
// collective runs 2/9 ms longer (the collective's time at the 24/108 it takes); a 0.5 ms GEMM
// beside it ends inside it and the pair lasts the collective's 1 ms (0.5 beyond the GEMM);
// without channels only what the collective outlasts the GEMM counts.
TEST(MegatronDevice, ACollectiveTakesItsChannelsSmsFromTheGemmBesideIt) {
  EXPECT_NEAR(CollectiveBesideKernelMs(1.0, 3.0, 24, 108), 24.0 / 108.0, 1e-12);
  EXPECT_NEAR(CollectiveBesideKernelMs(1.0, 0.5, 24, 108), 0.5, 1e-12);
  EXPECT_NEAR(CollectiveBesideKernelMs(1.0, 3.0, 0, 108), 0.0, 1e-12);
  EXPECT_NEAR(CollectiveBesideKernelMs(1.0, 0.7, 0, 0), 0.3, 1e-12);
  // The DGX A100 preset holds NCCL's 24 ring channels among its 8 GPUs; a cluster file can say.
  EXPECT_EQ(ClusterPreset("dgx-a100", 1).levels[0].collective_channels, 24);
  nlohmann::json doc = ClusterToJson(ClusterPreset("dgx-a100", 2));
  doc["levels"][0]["collective_channels"] = 16;
  EXPECT_EQ(ClusterFromJson(doc, "c.json").levels[0].collective_channels, 16);
}

// Megatron-LM's optimizer step over fp32 main weights, in bytes per parameter (its kernels'
// reads and writes): scale 8, norm 4, Adam 28, copy to bf16 6, zero 4 = 50; fp32 44; with the
// distributed optimizer over d = 4 the norm, Adam and copy on a quarter: 38 / 4 + 12. fp16 adds
// the loss scale's unscaling of the fp32 gradient (8). A 16-bit gradient buffer
// (--grad-reduce-in-bf16; fp16 without --accumulate-allreduce-grads-in-fp32) is scaled in 4 and
// zeroed in 2, and each gradient copied to fp32 (read 2, write 4) before the norm: bf16
// 4 + 6 + 4 + 28 + 6 + 2 = 50, over d = 4: (6 + 4 + 28 + 6) / 4 + 4 + 2.
TEST(MegatronDevice, OptimizerStepBytesAreMegatronsKernels) {
  auto parallel = [](const std::string& precision, bool distributed, int d,
                     const std::string& gradients) {
    MegatronParallel p;
    p.precision = precision;
    p.distributed_optimizer = distributed;
    p.data_parallel = d;
    p.gradient_precision = gradients;
    return p;
  };
  EXPECT_DOUBLE_EQ(OptimizerStepBytes(parallel("bf16", false, 1, "fp32")), 50);
  EXPECT_DOUBLE_EQ(OptimizerStepBytes(parallel("fp32", false, 8, "fp32")), 44);
  EXPECT_DOUBLE_EQ(OptimizerStepBytes(parallel("bf16", true, 4, "fp32")), 38.0 / 4 + 12);
  EXPECT_DOUBLE_EQ(OptimizerStepBytes(parallel("bf16", true, 1, "fp32")), 50);
  EXPECT_DOUBLE_EQ(OptimizerStepBytes(parallel("fp16", false, 1, "fp32")), 58);
  EXPECT_DOUBLE_EQ(OptimizerStepBytes(parallel("bf16", false, 1, "bf16")), 50);
  EXPECT_DOUBLE_EQ(OptimizerStepBytes(parallel("bf16", true, 4, "bf16")), 44.0 / 4 + 6);
  EXPECT_DOUBLE_EQ(OptimizerStepBytes(parallel("fp16", true, 4, "fp16")), 52.0 / 4 + 6);
  EXPECT_DOUBLE_EQ(OptimizerShardBytes(parallel("bf16", false, 1, "fp32")), 38);
  EXPECT_DOUBLE_EQ(OptimizerShardBytes(parallel("fp32", false, 1, "fp32")), 32);
}

// A scenario's workload does not know its data parallelism (the plan's replicas do): its step
// is a whole rank's, with the part the distributed optimizer shards said apart, so that the
// simulator's charge on d replicas (UpdateMs) is the step the search charges a candidate with
// d replicas: bytes per parameter 38 / d + 12, by hand above.
TEST(MegatronDevice, ScenarioStepShardsAsTheSearchCharges) {
  const MegatronModel m = GptModel(4, 1024, 16, 512, 51200);
  const Cluster cluster = ClusterPreset("dgx-a100", 1);
  MegatronParallel whole;
  whole.tensor = 2;
  MegatronParallel candidate = whole;
  candidate.data_parallel = 4;
  candidate.distributed_optimizer = true;
  const Workload w = MegatronWorkload(m, whole, cluster);
  const Workload c = MegatronWorkload(m, candidate, cluster);
  ASSERT_EQ(w.layers.size(), c.layers.size());
  const double bytes_per_s = 2039e9 * 0.88;  // the A100-80GB preset's HBM at its share
  for (size_t i = 0; i < w.layers.size(); ++i) {
    const double parameters = w.layers[i].parameters;
    EXPECT_NEAR(*w.layers[i].update_ms, 1e3 * parameters * 50 / bytes_per_s, 1e-9);
    EXPECT_NEAR(*w.layers[i].update_sharded_ms, 1e3 * parameters * 38 / bytes_per_s, 1e-9);
    EXPECT_NEAR(*c.layers[i].update_ms, 1e3 * parameters * (38.0 / 4 + 12) / bytes_per_s, 1e-9);
    EXPECT_EQ(*c.layers[i].update_sharded_ms, 0);  // already a shard's step
    StageCost stage;
    stage.update_ms = *w.layers[i].update_ms;
    stage.update_sharded_ms = *w.layers[i].update_sharded_ms;
    EXPECT_NEAR(UpdateMs(stage, 4), *c.layers[i].update_ms, 1e-9);
    EXPECT_NEAR(UpdateMs(stage, 1), *w.layers[i].update_ms, 1e-12);
  }
}

// The backward's element-wise traffic, by hand for a GPT block (D = 2 bytes, N' = s b h): each
// norm reads x and dy and writes dx (3 D N'); the softmax reads y and dy and writes dx (6 bytes
// a score); the dropouts read dy and the mask and write dx (5); the linear layers' biases are
// summed from their output gradients; a Llama block (no biases) has no such reduction.
TEST(MegatronWork, BackwardElementwiseTrafficIsTheKernelsReadsAndWrites) {
  const MegatronModel m = GptModel(2, 1024, 16, 512, 51200);
  MegatronParallel p;
  const LayerWork w = BlockWork(m, p);
  auto bytes = [&](const std::string& name) {
    for (const Kernel& k : w.backward)
      if (k.name == name) return k.bytes;
    ADD_FAILURE() << "no backward kernel " << name;
    return 0.0;
  };
  const double N = 512.0 * 1024, scores = 16.0 * 512 * 512;
  EXPECT_DOUBLE_EQ(bytes("input norm grad"), 3 * 2 * N);
  EXPECT_DOUBLE_EQ(bytes("scale-mask-softmax grad"), 6 * scores);
  EXPECT_DOUBLE_EQ(bytes("attention dropout grad"), 5 * scores);
  EXPECT_DOUBLE_EQ(bytes("qkv bias grad"), 2 * 3 * N);
  EXPECT_DOUBLE_EQ(bytes("mlp in bias grad"), 2 * 4 * N);
  EXPECT_DOUBLE_EQ(bytes("projection bias grad"), 2 * N);
  EXPECT_DOUBLE_EQ(bytes("bias-gelu grad"), 2 * (2 * 4 + 4) * N);
  for (const Kernel& k : BlockWork(LlamaModel(2, 1024, 2816, 16, 4, 512, 32000), p).backward)
    EXPECT_EQ(k.name.find("bias grad"), std::string::npos) << k.name;
}

// One layer of the 22B model (48 x 6144, 64 heads, sequence 2048, micro-batch 4, TP 8) on a DGX
// A100, against its measured forward and backward in Korthikanti et al. 2022, Table 4 (ms):
// baseline 7.7 / 11.9, sequence parallelism 7.2 / 11.8, full recomputation 7.7 / 19.5 (the
// backward reruns the forward), selective 7.7 / 13.2, selective + SP 7.2 / 13.1. The layer
// model is held within 10% of each: an independent measurement of the per-layer costs that the
// published iteration times (scripts/validate-published.sh) add up.
TEST(MegatronDevice, A22BLayerIsWithinTenPercentOfKorthikantisTable4) {
  const MegatronModel m = GptModel(48, 6144, 64, 2048, 51200);
  const Cluster dgx = ClusterPreset("dgx-a100", 1);
  struct Row {
    const char* name;
    bool sp;
    Recompute recompute;
    double forward_ms, backward_ms;
  };
  for (const Row& row : {Row{"baseline", false, Recompute::kNone, 7.7, 11.9},
                         Row{"sequence parallel", true, Recompute::kNone, 7.2, 11.8},
                         Row{"full recompute", false, Recompute::kFull, 7.7, 19.5},
                         Row{"selective", false, Recompute::kSelective, 7.7, 13.2},
                         Row{"selective + SP", true, Recompute::kSelective, 7.2, 13.1}}) {
    MegatronParallel p;
    p.tensor = 8;
    p.microbatch = 4;
    p.sequence_parallel = row.sp;
    p.recompute = row.recompute;
    const PassMs ms = LayerPassMs(BlockWork(m, p), dgx, 8);
    const double backward =
        ms.backward + (row.recompute == Recompute::kFull ? ms.forward : 0.0);
    std::printf("[ table 4 ] %-17s forward %.2f ms (%.2f, %+.1f%%), backward %.2f ms (%.2f, %+.1f%%)\n",
                row.name, ms.forward, row.forward_ms, 100 * (ms.forward / row.forward_ms - 1),
                backward, row.backward_ms, 100 * (backward / row.backward_ms - 1));
    EXPECT_NEAR(ms.forward, row.forward_ms, 0.10 * row.forward_ms) << row.name;
    EXPECT_NEAR(backward, row.backward_ms, 0.10 * row.backward_ms) << row.name;
  }
}

TEST(MegatronCluster, TensorParallelViewPlacesGroupsInsideServers) {
  const Cluster dgx = ClusterPreset("dgx-a100", 4);
  const Cluster view = TensorParallelView(dgx, 8, "s.json");
  EXPECT_EQ(view.DeviceCount(), 4);
  EXPECT_DOUBLE_EQ(view.levels[1].bandwidth_gbps, 200);  // one rank's NIC
  EXPECT_DOUBLE_EQ(view.device.memory_bytes, dgx.device.memory_bytes);
  EXPECT_EQ(TensorParallelView(dgx, 2, "s.json").DeviceCount(), 16);
  try {
    TensorParallelView(dgx, 16, "s.json");
    FAIL() << "a group of 16 on servers of 8";
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), "s.json");
    EXPECT_NE(std::string(e.what()).find("cluster.levels[0].count"), std::string::npos);
  }
}

TEST(MegatronWorkload, LayersAreOneRanksShare) {
  MegatronParallel p;
  p.tensor = 8;
  const MegatronModel gpt3 = GptModel(96, 12288, 96, 2048, 50257);
  const Workload w = MegatronWorkload(gpt3, p, ClusterPreset("dgx-a100", 1));
  ASSERT_EQ(w.LayerCount(), 98);
  EXPECT_EQ(w.tensor_parallel, 8);
  EXPECT_DOUBLE_EQ(w.layers[1].parameters, BlockParametersPerRank(gpt3, 8));
  // What a stage sends: Megatron-LM's get_tensor_shapes (megatron/core/pipeline_parallel/
  // schedules.py): (s, b, h) in bf16 from every rank, (s / t, b, h) under sequence parallelism;
  // its code before 2023 sent 1 / t of the tensor and gathered it after the receive.
  EXPECT_DOUBLE_EQ(w.layers[0].activation_bytes, 2.0 * 2048 * 12288);
  EXPECT_DOUBLE_EQ(w.layers[1].activation_bytes, 2.0 * 2048 * 12288);
  for (const bool sequence_parallel : {true, false}) {
    MegatronParallel scattered = p;
    scattered.sequence_parallel = sequence_parallel;
    scattered.scatter_gather_pipeline = !sequence_parallel;
    const Workload s = MegatronWorkload(gpt3, scattered, ClusterPreset("dgx-a100", 1));
    EXPECT_DOUBLE_EQ(s.layers[0].activation_bytes, 2.0 * 2048 * 12288 / 8);
    EXPECT_DOUBLE_EQ(s.layers[1].activation_bytes, 2.0 * 2048 * 12288 / 8);
  }
  // The backward does twice the forward's GEMM work plus its collectives: more than the forward.
  EXPECT_GT(w.layers[1].backward_ms, 1.5 * w.layers[1].forward_ms);
  p.recompute = Recompute::kSelective;
  const Workload selective = MegatronWorkload(gpt3, p, ClusterPreset("dgx-a100", 1));
  EXPECT_GT(selective.layers[1].backward_ms, w.layers[1].backward_ms);  // the core rerun
  EXPECT_LT(*selective.layers[1].stash_bytes, *w.layers[1].stash_bytes);
}

}  // namespace
}  // namespace pipetwin

namespace pipetwin {
namespace {

// The search for the newcomer's question (GPT-3 175B on 1,024 A100, global batch 1,536).
TEST(MegatronSearch, FindsWhatAMegatronUserWouldRunAndOnlyWhatFits) {
  const MegatronModel gpt3 = GptModel(96, 12288, 96, 2048, 50257);
  const Cluster server = ClusterPreset("dgx-a100", 1);
  const MegatronSearch found = SearchMegatron(gpt3, "bf16", false, server, 1024, 1536);
  ASSERT_FALSE(found.fitting.empty());
  EXPECT_EQ(found.over_memory + static_cast<int>(found.fitting.size()), found.considered);
  EXPECT_GT(found.over_memory, 0);  // data parallelism alone, for one, cannot hold 175B
  for (size_t i = 0; i < found.fitting.size(); ++i) {
    const MegatronCandidate& c = found.fitting[i];
    EXPECT_LE(c.memory.Total(), server.device.memory_bytes);
    EXPECT_EQ(c.parallel.tensor * c.pipeline * c.parallel.data_parallel, 1024);
    EXPECT_EQ(c.parallel.microbatch * c.microbatches * c.parallel.data_parallel, 1536);
    if (c.chunks > 1) EXPECT_EQ(c.microbatches % c.pipeline, 0);
    // The bf16 weights and fp32 gradients alone, 6 bytes of 175e9 parameters over t p GPUs,
    // need t p >= 13 to fit 80 GiB: 16 among the divisors.
    EXPECT_GE(c.parallel.tensor * c.pipeline, 16);
    if (i > 0) EXPECT_LE(found.fitting[i - 1].iteration_s, c.iteration_s);
  }
  // Tensor and pipeline parallelism both (Narayanan et al. SC'21 section 3.3: neither alone
  // scales to this size), which the search is not told.
  EXPECT_GT(found.fitting[0].parallel.tensor, 1);
  EXPECT_GT(found.fitting[0].pipeline, 1);
  // A device of 4 GiB holds none of them (at most 256-way model parallelism: 0.68e9 parameters
  // per GPU, 9 bytes each with the optimizer sharded 4 ways).
  Cluster small = server;
  small.device.memory_bytes = 4.0 * (1 << 30);
  EXPECT_TRUE(SearchMegatron(gpt3, "bf16", false, small, 1024, 1536).fitting.empty());
  EXPECT_THROW(SearchMegatron(gpt3, "bf16", false, server, 1020, 1536), InputError);
  // Gradients reduced in bf16 (--grad-reduce-in-bf16): every candidate's buffer in 2 bytes.
  const MegatronSearch bf16 = SearchMegatron(gpt3, "bf16", false, server, 1024, 1536, "bf16");
  ASSERT_FALSE(bf16.fitting.empty());
  for (const MegatronCandidate& c : bf16.fitting) {
    EXPECT_EQ(c.parallel.gradient_precision, "bf16");
    EXPECT_NEAR(c.memory.gradients, c.memory.weights, 1e-6 * c.memory.weights);  // 2 bytes each
  }
}

// Interleaving shortens the bubble from (p - 1) to (p - 1) / v micro-batch times (SC'21
// section 2.2.2): with everything else equal, T(v = 1) - T(v = 2) = (p - 1) / 2 x (F + B), and
// T = (m + (p - 1) / v) (F + B) + U gives the same U from both.
TEST(MegatronSearch, InterleavingShortensTheBubbleAsTheClosedFormSays) {
  const MegatronModel gpt = GptModel(32, 4096, 32, 2048, 51200);
  const MegatronSearch found = SearchMegatron(gpt, "bf16", false, ClusterPreset("dgx-a100", 1),
                                              64, 64);
  const MegatronCandidate* v1 = nullptr;
  const MegatronCandidate* v2 = nullptr;
  for (const MegatronCandidate& c : found.fitting)
    if (c.parallel.tensor == 8 && c.pipeline == 8 && c.parallel.microbatch == 1 &&
        c.parallel.recompute == Recompute::kSelective) {
      if (c.chunks == 1) v1 = &c;
      if (c.chunks == 2) v2 = &c;
    }
  ASSERT_TRUE(v1 && v2);
  const double m = v1->microbatches, p = 8;
  const double stage = (v1->iteration_s - v2->iteration_s) / ((p - 1) / 2);
  EXPECT_GT(stage, 0);
  EXPECT_NEAR(v1->iteration_s - (m + p - 1) * stage, v2->iteration_s - (m + (p - 1) / 2) * stage,
              1e-9);
}

// PipeDream-2BW's planner at every tensor-parallel size (search.h): GPT-3 175B on 64 A100s
// does not fit a GPU's share of the weights without tensor parallelism but at depths that
// idle most of the pipeline, so splitting layers over t GPUs pays: the best plan has t > 1 and
// beats the best at t = 1 by more than a fifth. Every plan fits the memory and its workers
// (tensor-parallel groups) fit the cluster's view.
TEST(MegatronSearch, TheTwoBWPlannerChoosesTheTensorParallelSizeToo) {
  const MegatronModel gpt3 = GptModel(96, 12288, 96, 2048, 50257);
  const std::vector<TwoBWCandidate> found =
      Search2BWMegatron(gpt3, "bf16", false, ClusterPreset("dgx-a100", 1), 64, 512);
  ASSERT_FALSE(found.empty());
  double best_untensored = 0;
  for (size_t i = 0; i < found.size(); ++i) {
    const TwoBWCandidate& c = found[i];
    if (i > 0)
      EXPECT_LE(c.plan.predicted_samples_per_s, found[i - 1].plan.predicted_samples_per_s);
    EXPECT_EQ(64 % c.parallel.tensor, 0);
    EXPECT_LE(c.plan.WorkerCount(), 64 / c.parallel.tensor);
    for (double bytes : c.plan.memory_bytes_per_device) EXPECT_LE(bytes, 80.0 * (1 << 30));
    EXPECT_EQ(c.parallel.sequence_parallel, c.parallel.tensor > 1);
    if (c.parallel.tensor == 1)
      best_untensored = std::max(best_untensored, c.plan.predicted_samples_per_s);
  }
  EXPECT_GT(found.front().parallel.tensor, 1);
  EXPECT_GT(found.front().plan.predicted_samples_per_s, 1.2 * best_untensored);
  EXPECT_THROW(Search2BWMegatron(gpt3, "bf16", false, ClusterPreset("dgx-a100", 1), 8, 8),
               InputError);  // 175B on one server: no 2BW plan fits
}

}  // namespace
}  // namespace pipetwin
