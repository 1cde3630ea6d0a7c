// Analytic VGG-16 and ResNet-50 workloads: published parameter and FLOP counts, the effect of
// image size and width, ResNet's residual DAG, roofline times, config validation.
#include "workloads/analytic/analytic.h"
#include "workloads/networks/network.h"

#include <cmath>
#include <map>
#include <string>

#include <gtest/gtest.h>

#include "partition/util/error.h"

namespace pipetwin {
namespace {

double TotalForwardFlops(const Workload& w) {
  double sum = 0;
  for (const Layer& l : w.layers) sum += l.forward_flops.value_or(0);
  return sum;
}

double ConvParameters(const Workload& w) {
  double sum = 0;
  for (const Layer& l : w.layers)
    if (l.description.rfind("Conv2d", 0) == 0) sum += l.parameters;
  return sum;
}

const Layer& Find(const Workload& w, const std::string& id) {
  for (const Layer& l : w.layers)
    if (l.id == id) return l;
  ADD_FAILURE() << "no layer " << id;
  return w.layers.front();
}

CnnConfig WithImage(int image_size) {
  CnnConfig c;
  c.image_size = image_size;
  return c;
}

TEST(VggTest, ParameterCountIs138357544) {
  Workload w = GenerateVgg16(CnnConfig{}, DeviceSpec{});
  EXPECT_EQ(w.TotalParameters(), 138357544.0);
  EXPECT_EQ(w.LayerCount(), 21);  // 13 conv + 5 pool + 3 fc
  EXPECT_TRUE(w.IsChain());
  EXPECT_EQ(w.name, "vgg16-224");
  // fc6 reads the 7 x 7 x 512 map: 25,088 * 4096 + 4096.
  EXPECT_EQ(Find(w, "fc6").parameters, 102764544.0);
  EXPECT_EQ(Find(w, "conv1_1").parameters, 3 * 64 * 9 + 64);
}

// 15.47 GMACs of convolution and FC at 224 (30.94 GFLOPs), plus the pools' comparisons.
TEST(VggTest, ForwardFlopsNear31Gflops) {
  Workload w = GenerateVgg16(CnnConfig{}, DeviceSpec{});
  EXPECT_NEAR(TotalForwardFlops(w), 30.9e9, 0.02 * 30.9e9);
  // conv1_2: 2 * 9 * 64 * 64 * 224 * 224 per sample.
  EXPECT_EQ(*Find(w, "conv1_2").forward_flops, 2.0 * 9 * 64 * 64 * 224 * 224);
}

// At 32 x 32 the last map is 1 x 1 x 512: fc6 shrinks to 512 * 4096 + 4096 and the total by
// (25,088 - 512) * 4096 = 100,663,296 to 37,694,248; the convolutions keep 14,714,688.
TEST(VggTest, ImageSizeChangesOnlyFc6) {
  Workload big = GenerateVgg16(CnnConfig{}, DeviceSpec{});
  Workload small = GenerateVgg16(WithImage(32), DeviceSpec{});
  EXPECT_EQ(ConvParameters(big), 14714688.0);
  EXPECT_EQ(ConvParameters(small), 14714688.0);
  EXPECT_EQ(Find(small, "fc6").parameters, 512.0 * 4096 + 4096);
  EXPECT_EQ(small.TotalParameters(), 37694248.0);
  EXPECT_EQ(big.TotalParameters() - small.TotalParameters(), 100663296.0);
  EXPECT_EQ(small.name, "vgg16-32");
}

// Width 0.5: channels 32, 64, 128, 256, 256, hidden FC 2048, 1000 classes.
//   conv weights 864 + 9,216 + 18,432 + 36,864 + 73,728 + 2 * 147,456 + 294,912
//     + 5 * 589,824 = 3,678,048; biases 2 * 32 + 2 * 64 + 3 * 128 + 6 * 256 = 2,112
//   fc6 7 * 7 * 256 * 2048 + 2048 = 25,692,160; fc7 2048^2 + 2048 = 4,196,352;
//   fc8 2048 * 1000 + 1000 = 2,049,000.  Total 35,617,672.
TEST(VggTest, HalfWidthParameterCount) {
  CnnConfig c;
  c.width = 0.5;
  Workload w = GenerateVgg16(c, DeviceSpec{});
  EXPECT_EQ(ConvParameters(w), 3680160.0);
  EXPECT_EQ(w.TotalParameters(), 35617672.0);
  EXPECT_EQ(w.name, "vgg16-224-w0.5");
}

// torchvision's resnet50: 25,557,032 (conv weights 23,454,912, batch-norm scale and shift
// 53,120, fc 2048 * 1000 + 1000 = 2,049,000).
TEST(ResnetTest, ParameterCountIs25557032) {
  Workload w = GenerateResnet50(CnnConfig{}, DeviceSpec{});
  EXPECT_EQ(w.TotalParameters(), 25557032.0);
  EXPECT_EQ(Find(w, "conv1").parameters, 7 * 7 * 3 * 64 + 2 * 64);
  EXPECT_EQ(Find(w, "fc").parameters, 2049000.0);
  // Global average pooling: the count does not depend on the image size.
  EXPECT_EQ(GenerateResnet50(WithImage(112), DeviceSpec{}).TotalParameters(), 25557032.0);
  EXPECT_EQ(GenerateResnet50(WithImage(32), DeviceSpec{}).TotalParameters(), 25557032.0);
}

// 4.09 GMACs of convolution and FC at 224 (8.18 GFLOPs), plus pools and adds.
TEST(ResnetTest, ForwardFlopsNear8Gflops) {
  Workload w = GenerateResnet50(CnnConfig{}, DeviceSpec{});
  EXPECT_NEAR(TotalForwardFlops(w), 8.2e9, 0.05 * 8.2e9);
}

// Width 0.5 halves every channel count: the 3-channel conv1's weights halve (4,704), every other
// convolution's quarter (23,445,504 / 4 = 5,861,376), batch norms halve (26,560), fc
// 1024 * 1000 + 1000 = 1,025,000. Total 6,917,640.
TEST(ResnetTest, HalfWidthParameterCount) {
  CnnConfig c;
  c.width = 0.5;
  EXPECT_EQ(GenerateResnet50(c, DeviceSpec{}).TotalParameters(), 6917640.0);
}

TEST(ResnetTest, ResidualBlocksFormADag) {
  Workload w = GenerateResnet50(CnnConfig{}, DeviceSpec{});
  EXPECT_FALSE(w.IsChain());
  // conv1, pool1, 16 blocks x (3 convs + add), 4 projections, pool5, fc.
  EXPECT_EQ(w.LayerCount(), 72);
  std::map<std::string, int> index;
  for (int i = 0; i < w.LayerCount(); ++i) index[w.layers[i].id] = i;
  // res2a: the projection and the conv path both read pool1; the add joins them.
  EXPECT_EQ(w.layers[index["res2a_branch2a"]].inputs, std::vector<int>{index["pool1"]});
  EXPECT_EQ(w.layers[index["res2a_branch1"]].inputs, std::vector<int>{index["pool1"]});
  EXPECT_EQ(w.layers[index["res2a"]].inputs,
            (std::vector<int>{index["res2a_branch2c"], index["res2a_branch1"]}));
  // res2b: identity shortcut straight from res2a's add, which feeds two layers.
  EXPECT_EQ(index.count("res2b_branch1"), 0u);
  EXPECT_EQ(w.layers[index["res2b"]].inputs,
            (std::vector<int>{index["res2b_branch2c"], index["res2a"]}));
  EXPECT_EQ(w.Successors()[index["res2a"]].size(), 2u);
  // Spatial sizes: 56 x 56 x 256 after conv2_x, 7 x 7 x 2048 after conv5_x (batch 1, fp32).
  EXPECT_EQ(w.layers[index["res2c"]].activation_bytes, 256.0 * 56 * 56 * 4);
  EXPECT_EQ(w.layers[index["res5c"]].activation_bytes, 2048.0 * 7 * 7 * 4);
  Workload sorted = w;
  ASSERT_NO_THROW(ValidateAndSortWorkload(sorted, "generated"));
  for (int i = 0; i < w.LayerCount(); ++i) EXPECT_EQ(sorted.layers[i].id, w.layers[i].id);
}

TEST(CnnTest, LayersCarryBatchDtypeAndReference) {
  CnnConfig c;
  c.batch = 8;
  c.dtype_bytes = 2;
  DeviceSpec device;
  device.name = "A100";
  Workload w = GenerateVgg16(c, device);
  EXPECT_EQ(w.reference.batch_size, 8);
  EXPECT_EQ(w.reference.device, "A100");
  EXPECT_EQ(w.reference.source, "analytic");
  EXPECT_EQ(w.parameter_dtype_bytes, 2);
  EXPECT_EQ(Find(w, "conv1_1").activation_bytes, 64.0 * 224 * 224 * 8 * 2);
  EXPECT_EQ(Find(w, "pool5").activation_bytes, 512.0 * 7 * 7 * 8 * 2);
  EXPECT_EQ(Find(w, "fc8").activation_bytes, 1000.0 * 8 * 2);
  EXPECT_EQ(*Find(w, "fc8").forward_flops, 2.0 * 4096 * 1000 * 8);
  for (const Layer& l : w.layers) {
    EXPECT_EQ(l.parameter_bytes, 2 * l.parameters) << l.id;
    EXPECT_GT(l.forward_ms, 0) << l.id;
    EXPECT_DOUBLE_EQ(l.backward_ms, 2 * l.forward_ms) << l.id;
  }
}

TEST(CnnTest, ComputeBoundTimesHalveWithTwicePeak) {
  CnnConfig c;
  c.batch = 32;
  DeviceSpec slow;
  DeviceSpec fast = slow;
  fast.peak_flops = 2 * slow.peak_flops;
  const Layer a = Find(GenerateVgg16(c, slow), "conv3_2");
  const Layer b = Find(GenerateVgg16(c, fast), "conv3_2");
  // 2 * 9 * 256^2 * 56^2 * 32 = 118 GFLOPs over ~0.1 GB: compute-bound on both.
  EXPECT_NEAR(a.forward_ms, 1e3 * *a.forward_flops / 62.5e12, 1e-9);
  EXPECT_DOUBLE_EQ(b.forward_ms, a.forward_ms / 2);
  EXPECT_DOUBLE_EQ(b.backward_ms, a.backward_ms / 2);
}

std::string ErrorOf(const CnnConfig& c, bool resnet) {
  try {
    resnet ? GenerateResnet50(c, DeviceSpec{}) : GenerateVgg16(c, DeviceSpec{});
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

TEST(CnnTest, BadConfigsThrowInputError) {
  EXPECT_EQ(ErrorOf(WithImage(31), false),
            "vgg16: image_size (31) must be >= 32: the network halves it five times");
  EXPECT_EQ(ErrorOf(WithImage(16), true),
            "resnet50: image_size (16) must be >= 32: the network halves it five times");
  EXPECT_EQ(ErrorOf(WithImage(0), true), "resnet50: image_size must be >= 1, got 0");
  CnnConfig c;
  c.batch = 0;
  EXPECT_EQ(ErrorOf(c, false), "vgg16: batch must be >= 1, got 0");
  c = CnnConfig{};
  c.classes = -1;
  EXPECT_EQ(ErrorOf(c, true), "resnet50: classes must be >= 1, got -1");
  c = CnnConfig{};
  c.width = 0;
  EXPECT_EQ(ErrorOf(c, true), "resnet50: width must be > 0, got 0");
  c.width = std::nan("");
  EXPECT_THROW(GenerateVgg16(c, DeviceSpec{}), InputError);
  c = CnnConfig{};
  c.dtype_bytes = -4;
  EXPECT_EQ(ErrorOf(c, false), "vgg16: dtype_bytes must be > 0, got -4");
}

}  // namespace
}  // namespace pipetwin
