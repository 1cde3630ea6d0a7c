// VGG-16's and ResNet-50's descriptions (network.h).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "partition/util/error.h"
#include "workloads/networks/network.h"

namespace pipetwin {

namespace {

// Both networks halve the image five times (VGG: five 2x2 pools; ResNet: the strided conv1, the
// strided pool1 and three strided stages), so a smaller image leaves no pixel to classify.
constexpr int kMinimumImageSize = 32;

// "0.5" for 0.5, "2" for 2.0: no trailing zeros in names and messages.
std::string ShortNumber(double x) {
  std::string out = std::to_string(x);
  if (out.find('.') == std::string::npos) return out;
  out.erase(out.find_last_not_of('0') + 1);
  if (out.back() == '.') out.pop_back();
  return out;
}

void Validate(const CnnConfig& config, const std::string& network) {
  auto require_positive = [&](const char* field, int value) {
    if (value < 1)
      throw InputError(network + ": " + field + " must be >= 1, got " + std::to_string(value));
  };
  require_positive("image_size", config.image_size);
  require_positive("batch", config.batch);
  require_positive("classes", config.classes);
  if (config.image_size < kMinimumImageSize)
    throw InputError(network + ": image_size (" + std::to_string(config.image_size) +
                     ") must be >= 32: the network halves it five times");
  if (!std::isfinite(config.width) || config.width <= 0)
    throw InputError(network + ": width must be > 0, got " + ShortNumber(config.width));
  if (!std::isfinite(config.dtype_bytes) || config.dtype_bytes <= 0)
    throw InputError(network + ": dtype_bytes must be > 0, got " +
                     ShortNumber(config.dtype_bytes));
}

// The published channel count scaled by the width multiplier, rounded, at least 1.
int Channels(const CnnConfig& config, int published) {
  return std::max(1, static_cast<int>(std::lround(published * config.width)));
}

int64_t Out(int64_t size, int kernel, int stride, int padding) {
  return (size + 2 * padding - kernel) / stride + 1;
}

// Appends layers one at a time, each reading earlier layers' outputs (kImage: the image).
class CnnBuilder {
 public:
  static constexpr int kImage = -1;

  CnnBuilder(const CnnConfig& config, const std::string& generator) {
    n_.generator = generator;
    n_.name = generator + "-" + std::to_string(config.image_size);
    if (config.width != 1.0) n_.name += "-w" + ShortNumber(config.width);
    n_.input.sample_shape = {3, config.image_size, config.image_size};
    n_.input.classes = config.classes;
    n_.batch = config.batch;
    n_.dtype_bytes = config.dtype_bytes;
  }

  int Convolution(const std::string& id, int input, int out_channels, int kernel, int stride,
                  int padding, bool batch_norm, bool relu) {
    const std::vector<int64_t>& in = n_.ShapeOf(input);
    NetworkLayer l = Base(id, LayerKind::kConvolution, {input});
    l.in = in[0];
    l.out = out_channels;
    l.kernel = kernel;
    l.stride = stride;
    l.padding = padding;
    l.batch_norm = batch_norm;
    l.relu = relu;
    l.output_shape = {out_channels, Out(in[1], kernel, stride, padding),
                      Out(in[2], kernel, stride, padding)};
    l.description = "Conv2d(" + std::to_string(in[0]) + ", " + std::to_string(out_channels) +
                    ", kernel_size=" + std::to_string(kernel) + ", stride=" +
                    std::to_string(stride) + ", padding=" + std::to_string(padding) + ")" +
                    (batch_norm ? " + BatchNorm2d" : "") + (relu ? " + ReLU" : "");
    return Append(std::move(l));
  }

  int MaxPool(const std::string& id, int input, int kernel, int stride, int padding) {
    const std::vector<int64_t>& in = n_.ShapeOf(input);
    NetworkLayer l = Base(id, LayerKind::kMaxPool, {input});
    l.kernel = kernel;
    l.stride = stride;
    l.padding = padding;
    l.output_shape = {in[0], Out(in[1], kernel, stride, padding),
                      Out(in[2], kernel, stride, padding)};
    l.description = "MaxPool2d(kernel_size=" + std::to_string(kernel) + ", stride=" +
                    std::to_string(stride) + ", padding=" + std::to_string(padding) + ")";
    return Append(std::move(l));
  }

  int GlobalAveragePool(const std::string& id, int input) {
    NetworkLayer l = Base(id, LayerKind::kGlobalAveragePool, {input});
    l.output_shape = {n_.ShapeOf(input)[0], 1, 1};
    l.description = "AdaptiveAvgPool2d(1)";
    return Append(std::move(l));
  }

  // Fully connected on the flattened input, with bias; `extra` names folded ReLU/dropout.
  int FullyConnected(const std::string& id, int input, int out_features, bool relu,
                     const std::string& extra) {
    NetworkLayer l = Base(id, LayerKind::kLinear, {input});
    l.in = Elements(n_.ShapeOf(input));
    l.out = out_features;
    l.relu = relu;
    l.output_shape = {out_features};
    l.description = "Linear(" + std::to_string(l.in) + ", " + std::to_string(out_features) +
                    ")" + extra;
    return Append(std::move(l));
  }

  // Residual add of two same-shaped tensors, ReLU folded in.
  int ResidualAdd(const std::string& id, int a, int b) {
    NetworkLayer l = Base(id, LayerKind::kResidualAdd, {a, b});
    l.output_shape = n_.ShapeOf(a);
    l.description = "residual add + ReLU";
    return Append(std::move(l));
  }

  Network Finish() { return std::move(n_); }

 private:
  static NetworkLayer Base(const std::string& id, LayerKind kind, std::vector<int> inputs) {
    NetworkLayer l;
    l.id = id;
    l.kind = kind;
    l.inputs = std::move(inputs);
    return l;
  }
  int Append(NetworkLayer layer) {
    n_.layers.push_back(std::move(layer));
    return n_.LayerCount() - 1;
  }

  Network n_;
};

// One ResNet bottleneck block (He et al. 2016, section 3.3 and figure 5 right): 1x1 reduce to
// `width` channels, 3x3 (carrying the stride), 1x1 expand to 4 x width; the shortcut is the
// identity, or a strided 1x1 projection with batch norm where the shape changes (option B).
// Returns the index of the add.
int Bottleneck(CnnBuilder& net, const std::string& name, int input, int in_channels, int width,
               int stride) {
  const int out_channels = 4 * width;
  const int a = net.Convolution(name + "_branch2a", input, width, 1, 1, 0, true, true);
  const int b = net.Convolution(name + "_branch2b", a, width, 3, stride, 1, true, true);
  const int c = net.Convolution(name + "_branch2c", b, out_channels, 1, 1, 0, true, false);
  int shortcut = input;
  if (stride != 1 || in_channels != out_channels)
    shortcut = net.Convolution(name + "_branch1", input, out_channels, 1, stride, 0, true, false);
  return net.ResidualAdd(name, c, shortcut);
}

}  // namespace

// Configuration D of Simonyan and Zisserman (ICLR 2015, table 1): stacks of 3x3 convolutions
// (padding 1) of 64, 128, 256, 512, 512 channels (2, 2, 3, 3, 3 layers), each stack closed by a
// 2x2 max-pool of stride 2, then FC-4096, FC-4096, FC-classes.
Network DescribeVgg16(const CnnConfig& config) {
  Validate(config, "vgg16");
  const int stacks[5][2] = {{64, 2}, {128, 2}, {256, 3}, {512, 3}, {512, 3}};
  CnnBuilder net(config, "vgg16");
  int last = CnnBuilder::kImage;
  for (int s = 0; s < 5; ++s) {
    const std::string stack = std::to_string(s + 1);
    for (int k = 0; k < stacks[s][1]; ++k)
      last = net.Convolution("conv" + stack + "_" + std::to_string(k + 1), last,
                             Channels(config, stacks[s][0]), 3, 1, 1, false, true);
    last = net.MaxPool("pool" + stack, last, 2, 2, 0);
  }
  const int hidden = Channels(config, 4096);
  last = net.FullyConnected("fc6", last, hidden, true, " + ReLU + Dropout");
  last = net.FullyConnected("fc7", last, hidden, true, " + ReLU + Dropout");
  net.FullyConnected("fc8", last, config.classes, false, "");
  return net.Finish();
}

// He et al. (CVPR 2016, table 1, the 50-layer column): conv1 7x7/2 with 64 channels, 3x3/2
// max-pool, stages conv2_x .. conv5_x of [3, 4, 6, 3] bottlenecks of width 64, 128, 256, 512
// (stride 2 in the first block of conv3_x .. conv5_x), global average pool, FC-classes.
Network DescribeResnet50(const CnnConfig& config) {
  Validate(config, "resnet50");
  const int blocks[] = {3, 4, 6, 3};
  const int widths[] = {64, 128, 256, 512};
  CnnBuilder net(config, "resnet50");
  const int stem_channels = Channels(config, 64);
  int last = net.Convolution("conv1", CnnBuilder::kImage, stem_channels, 7, 2, 3, true, true);
  last = net.MaxPool("pool1", last, 3, 2, 1);
  int channels = stem_channels;
  for (int stage = 0; stage < 4; ++stage) {
    const int width = Channels(config, widths[stage]);
    for (int k = 0; k < blocks[stage]; ++k) {
      const std::string name = "res" + std::to_string(stage + 2) + static_cast<char>('a' + k);
      last = Bottleneck(net, name, last, channels, width, (k == 0 && stage > 0) ? 2 : 1);
      channels = 4 * width;
    }
  }
  last = net.GlobalAveragePool("pool5", last);
  net.FullyConnected("fc", last, config.classes, false, "");
  return net.Finish();
}

}  // namespace pipetwin
