// Analytic GPT/BERT workloads: parameter counts of published models, the per-block FLOP and
// activation formulas on a small config worked by hand, roofline times, config validation.
#include "workloads/analytic/analytic.h"
#include "workloads/networks/network.h"

#include <cmath>
#include <string>

#include <gtest/gtest.h>

#include "partition/util/error.h"

namespace pipetwin {
namespace {

TransformerConfig Gpt(int layers, int hidden, int heads, int sequence, int vocabulary) {
  TransformerConfig c;
  c.kind = "gpt";
  c.layers = layers;
  c.hidden = hidden;
  c.heads = heads;
  c.sequence = sequence;
  c.vocabulary = vocabulary;
  return c;
}

// h = 64, a = 4, s = 32, b = 2, V = 100: small enough to check by hand.
TransformerConfig SmallGpt() {
  TransformerConfig c = Gpt(2, 64, 4, 32, 100);
  c.microbatch = 2;
  return c;
}

// Per block 12 * 1600^2 + 13 * 1600 = 30,740,800; x 48 = 1,475,558,400; token embedding
// 50,257 * 1600 = 80,411,200; positions 1024 * 1600 = 1,638,400; final norm 3,200.
// Sum 1,557,611,200 (GPT-2 XL, "1,558M" in Radford et al. 2019, table 2).
TEST(TransformerTest, Gpt2XlParameterCountIsExact) {
  Workload w = GenerateTransformer(Gpt(48, 1600, 25, 1024, 50257), DeviceSpec{});
  EXPECT_EQ(w.TotalParameters(), 1557611200.0);
  EXPECT_EQ(w.name, "gpt-48x1600");
  ASSERT_EQ(w.LayerCount(), 50);
  EXPECT_EQ(w.layers.front().id, "embedding");
  EXPECT_EQ(w.layers[1].id, "block0");
  EXPECT_EQ(w.layers.back().id, "head");
  EXPECT_EQ(w.layers.back().parameters, 3200);  // the output projection is tied
  EXPECT_TRUE(w.IsChain());
}

// Per block 12 * 12288^2 + 13 * 12288 = 1,812,099,072; x 96 = 173,961,510,912; embeddings
// (50,257 + 2048) * 12288 = 642,723,840; final norm 24,576. Sum 174,604,259,328: "175B" (Brown
// et al. 2020, table 2.1) within 1%.
TEST(TransformerTest, Gpt3ParameterCountWithinOnePercent) {
  Workload w = GenerateTransformer(Gpt(96, 12288, 96, 2048, 50257), DeviceSpec{});
  EXPECT_EQ(w.TotalParameters(), 174604259328.0);
  EXPECT_NEAR(w.TotalParameters(), 175e9, 0.01 * 175e9);
}

// PipeDream-2BW (Narayanan et al., ICML 2021) GPT models, 32 blocks, V = 51,200, s = 512.
// "2.2B": per block 12 * 2304^2 + 13 * 2304 = 63,730,944; x 32 = 2,039,390,208; embeddings
//   (51,200 + 512) * 2304 = 119,144,448; norm 4,608. Sum 2,158,539,264.
// "3.8B": per block 12 * 3072^2 + 13 * 3072 = 113,286,144; x 32 = 3,625,156,608; embeddings
//   (51,200 + 512) * 3072 = 158,859,264; norm 6,144. Sum 3,784,022,016.
TEST(TransformerTest, PipeDream2bwModelsRoundToTheirNames) {
  const double p22 =
      GenerateTransformer(Gpt(32, 2304, 32, 512, 51200), DeviceSpec{}).TotalParameters();
  const double p38 =
      GenerateTransformer(Gpt(32, 3072, 32, 512, 51200), DeviceSpec{}).TotalParameters();
  EXPECT_EQ(p22, 2158539264.0);
  EXPECT_EQ(p38, 3784022016.0);
  EXPECT_EQ(std::round(p22 / 1e8), 22);
  EXPECT_EQ(std::round(p38 / 1e8), 38);
}

// BERT-Large, counted as BertForPreTraining:
//   embedding: tokens 30,522 * 1024 = 31,254,528; positions 512 * 1024 = 524,288;
//     token types 2 * 1024 = 2,048; layer norm 2,048                         -> 31,782,912
//   24 blocks x (12 * 1024^2 + 13 * 1024 = 12,596,224)                       -> 302,309,376
//   head: pooler 1024^2 + 1024 = 1,049,600; next-sentence 2 * 1024 + 2 = 2,050;
//     masked-LM transform 1,049,600 + norm 2,048; decoder bias 30,522 (weight tied)
//                                                                             -> 2,133,820
//   total 336,226,108 (the encoder with the pooler alone is 335,141,888, Devlin et al.'s "340M")
TEST(TransformerTest, BertLargeParameterCountIsExact) {
  TransformerConfig c = Gpt(24, 1024, 16, 512, 30522);
  c.kind = "bert";
  Workload w = GenerateTransformer(c, DeviceSpec{});
  EXPECT_EQ(w.layers.front().parameters, 31782912.0);
  EXPECT_EQ(w.layers.back().parameters, 2133820.0);
  EXPECT_EQ(w.TotalParameters(), 336226108.0);
  EXPECT_EQ(w.name, "bert-24x1024");
}

// 24 b s h^2 + 4 b s^2 h = 24 * 2 * 32 * 4096 + 4 * 2 * 1024 * 64 = 6,291,456 + 524,288.
TEST(TransformerTest, BlockForwardFlopsMatchTheHandCount) {
  const TransformerConfig c = SmallGpt();
  EXPECT_EQ(TransformerBlockForwardFlops(c), 6815744.0);
  Workload w = GenerateTransformer(c, DeviceSpec{});
  ASSERT_TRUE(w.layers[1].forward_flops.has_value());
  EXPECT_EQ(*w.layers[1].forward_flops, 6815744.0);
  EXPECT_EQ(w.layers[1].parameters, 12 * 64 * 64 + 13 * 64);
  // GPT head: final norm 8 s b h = 32,768 and logits 2 s b h V = 819,200.
  EXPECT_EQ(*w.layers.back().forward_flops, 32768.0 + 819200.0);
}

// s b h (34 + 5 a s / h) = 4096 * (34 + 10) = 180,224 bytes at 16-bit. At fp32 the tensors
// double and the masks do not: 4 * (16 * 4096 + 2 * 8192) + (2 * 4096 + 8192) = 344,064.
TEST(TransformerTest, BlockStashFollowsKorthikanti) {
  TransformerConfig c = SmallGpt();
  EXPECT_EQ(TransformerBlockStashBytes(c), 180224.0);
  c.dtype_bytes = 4;
  EXPECT_EQ(TransformerBlockStashBytes(c), 344064.0);
}

TEST(TransformerTest, LayersCarryBytesAndReference) {
  const TransformerConfig c = SmallGpt();
  DeviceSpec device;
  device.name = "A100";
  Workload w = GenerateTransformer(c, device);
  EXPECT_EQ(w.reference.batch_size, 2);
  EXPECT_EQ(w.reference.device, "A100");
  EXPECT_EQ(w.reference.source, "analytic");
  EXPECT_EQ(w.parameter_dtype_bytes, 2);
  const double sbh_bytes = 32 * 2 * 64 * 2;
  EXPECT_EQ(w.layers[0].activation_bytes, sbh_bytes);
  EXPECT_EQ(w.layers[0].parameters, 100 * 64 + 32 * 64);
  EXPECT_EQ(w.layers[1].activation_bytes, sbh_bytes);
  EXPECT_EQ(w.layers.back().activation_bytes, 32 * 2 * 100 * 2);  // logits s b V
  for (const Layer& l : w.layers) {
    EXPECT_EQ(l.parameter_bytes, 2 * l.parameters) << l.id;
    EXPECT_GT(l.forward_ms, 0) << l.id;
    // Twice the FLOPs and twice the bytes: the roofline time doubles, whichever bound holds.
    EXPECT_DOUBLE_EQ(l.backward_ms, 2 * l.forward_ms) << l.id;
  }
  EXPECT_NO_THROW(ValidateAndSortWorkload(w, "generated"));
}

TEST(TransformerTest, ComputeBoundTimesHalveWithTwicePeak) {
  const TransformerConfig c = Gpt(4, 1600, 25, 1024, 50257);
  DeviceSpec slow;
  DeviceSpec fast = slow;
  fast.peak_flops = 2 * slow.peak_flops;
  const Workload a = GenerateTransformer(c, slow);
  const Workload b = GenerateTransformer(c, fast);
  // A GPT-2 XL block: 69.6 GFLOPs over ~250 MB, compute-bound on both devices.
  const double flops = TransformerBlockForwardFlops(c);
  const double bytes = TransformerBlockParameters(c) * 2 + TransformerBlockStashBytes(c);
  ASSERT_GT(flops / (fast.peak_flops * fast.flops_efficiency),
            bytes / fast.memory_bandwidth_bytes_per_s);
  EXPECT_DOUBLE_EQ(b.layers[1].forward_ms, a.layers[1].forward_ms / 2);
  EXPECT_DOUBLE_EQ(b.layers[1].backward_ms, a.layers[1].backward_ms / 2);
  EXPECT_NEAR(a.layers[1].forward_ms, 1e3 * flops / 62.5e12, 1e-9);
}

std::string ErrorOf(const TransformerConfig& c) {
  try {
    GenerateTransformer(c, DeviceSpec{});
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

TEST(TransformerTest, BadConfigsThrowInputError) {
  TransformerConfig c = Gpt(24, 1000, 16, 1024, 50257);
  EXPECT_EQ(ErrorOf(c), "transformer: hidden (1000) must be divisible by heads (16)");
  c = SmallGpt();
  c.layers = 0;
  EXPECT_EQ(ErrorOf(c), "transformer: layers must be >= 1, got 0");
  c = SmallGpt();
  c.microbatch = -3;
  EXPECT_EQ(ErrorOf(c), "transformer: microbatch must be >= 1, got -3");
  c = SmallGpt();
  c.heads = 0;
  EXPECT_EQ(ErrorOf(c), "transformer: heads must be >= 1, got 0");
  c = SmallGpt();
  c.kind = "t5";
  EXPECT_EQ(ErrorOf(c), "transformer: kind must be \"gpt\" or \"bert\", got \"t5\"");
  c = SmallGpt();
  c.dtype_bytes = 0;
  EXPECT_EQ(ErrorOf(c), "transformer: dtype_bytes must be > 0, got 0");
  c.dtype_bytes = std::nan("");
  EXPECT_THROW(GenerateTransformer(c, DeviceSpec{}), InputError);
}

}  // namespace
}  // namespace pipetwin

namespace pipetwin {
namespace {

// Planners and the simulator read each block's stash from the workload itself.
TEST(TransformerTest, BlocksCarryTheirStashBytes) {
  TransformerConfig c;
  c.layers = 2; c.hidden = 64; c.heads = 4; c.sequence = 32; c.vocabulary = 100; c.microbatch = 2;
  Workload w = GenerateTransformer(c, DeviceSpec{});
  EXPECT_DOUBLE_EQ(w.StashBytes(1), TransformerBlockStashBytes(c));
  EXPECT_DOUBLE_EQ(w.StashBytes(1), 180224);  // sbh(34 + 5as/h) at 16 bits, worked above
  EXPECT_DOUBLE_EQ(w.StashBytes(0), w.layers[0].activation_bytes);  // no stash given
  Workload again = WorkloadFromJson(WorkloadToJson(w), "again.json");
  EXPECT_DOUBLE_EQ(again.StashBytes(1), 180224);
}

}  // namespace
}  // namespace pipetwin
