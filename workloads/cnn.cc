#include "workloads/cnn.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "partition/util/error.h"

namespace pipetwin {

namespace {

// Both networks halve the image five times (VGG: five 2x2 pools; ResNet: the strided conv1, the
// strided pool1 and three strided stages), so a smaller image leaves no pixel to classify.
constexpr int kMinimumImageSize = 32;

// An activation tensor of one sample: channels x height x width.
struct Shape {
  int channels = 0;
  int height = 0;
  int width = 0;
  double Elements() const { return static_cast<double>(channels) * height * width; }
};

// How a convolution is followed: VGG's own bias, or ResNet's batch norm (no bias).
enum class ConvNorm { kBias, kBatchNorm };

// Appends layers one at a time, keeping each one's output shape for the layers it feeds.
// Times come from the device's roofline on the layer's FLOPs and the bytes it moves; backward
// does twice the forward FLOPs (gradients with respect to input and weights) and, as an estimate,
// moves twice the bytes. Layers are appended in a topological order.
class NetworkBuilder {
 public:
  static constexpr int kImage = -1;  // the `input` of the first layer

  NetworkBuilder(const CnnConfig& config, const DeviceModel& device)
      : config_(config), device_(device) {}
  NetworkBuilder(const NetworkBuilder&) = delete;
  NetworkBuilder& operator=(const NetworkBuilder&) = delete;

  // Convolution k x k, stride, zero padding; ReLU folded in when `relu`.
  //   parameters  k^2 C_in C_out + C_out (bias) or + 2 C_out (batch-norm scale and shift)
  //   FLOPs       2 k^2 C_in C_out H_out W_out per sample
  //   bytes       weights, input and output once; batch norm (not fused in training) reads the
  //               convolution's output and writes the normalised one; ReLU is in place
  int Convolution(const std::string& id, int input, int out_channels, int kernel, int stride,
                  int padding, ConvNorm norm, bool relu) {
    const Shape in = ShapeOf(input);
    Shape out{out_channels, (in.height + 2 * padding - kernel) / stride + 1,
              (in.width + 2 * padding - kernel) / stride + 1};
    const double weights = static_cast<double>(kernel) * kernel * in.channels * out_channels;
    const bool batch_norm = norm == ConvNorm::kBatchNorm;
    Layer layer;
    layer.id = id;
    layer.description = "Conv2d(" + std::to_string(in.channels) + ", " +
                        std::to_string(out_channels) + ", kernel_size=" + std::to_string(kernel) +
                        ", stride=" + std::to_string(stride) + ", padding=" +
                        std::to_string(padding) + ")" + (batch_norm ? " + BatchNorm2d" : "") +
                        (relu ? " + ReLU" : "");
    layer.parameters = weights + (batch_norm ? 2 : 1) * out_channels;
    layer.inputs = Inputs({input});
    const double flops = 2 * weights * out.height * out.width * batch();
    const double elements_moved = layer.parameters + (in.Elements() + out.Elements()) * batch() +
                                  (batch_norm ? 2 * out.Elements() * batch() : 0);
    return Append(std::move(layer), out, flops, elements_moved);
  }

  // Max pooling k x k: one comparison per window element per output.
  int MaxPool(const std::string& id, int input, int kernel, int stride, int padding) {
    const Shape in = ShapeOf(input);
    Shape out{in.channels, (in.height + 2 * padding - kernel) / stride + 1,
              (in.width + 2 * padding - kernel) / stride + 1};
    Layer layer;
    layer.id = id;
    layer.description = "MaxPool2d(kernel_size=" + std::to_string(kernel) + ", stride=" +
                        std::to_string(stride) + ", padding=" + std::to_string(padding) + ")";
    layer.inputs = Inputs({input});
    const double flops = static_cast<double>(kernel) * kernel * out.Elements() * batch();
    return Append(std::move(layer), out, flops, (in.Elements() + out.Elements()) * batch());
  }

  // Global average pooling to C x 1 x 1: one add per input element.
  int GlobalAveragePool(const std::string& id, int input) {
    const Shape in = ShapeOf(input);
    Layer layer;
    layer.id = id;
    layer.description = "AdaptiveAvgPool2d(1)";
    layer.inputs = Inputs({input});
    return Append(std::move(layer), Shape{in.channels, 1, 1}, in.Elements() * batch(),
                  (in.Elements() + in.channels) * batch());
  }

  // Fully connected on the flattened input, with bias; `extra` names folded ReLU/dropout.
  //   parameters  in out + out;  FLOPs 2 in out per sample
  int FullyConnected(const std::string& id, int input, int out_features,
                     const std::string& extra) {
    const double in_features = ShapeOf(input).Elements();
    Layer layer;
    layer.id = id;
    layer.description = "Linear(" + std::to_string(static_cast<long long>(in_features)) + ", " +
                        std::to_string(out_features) + ")" + extra;
    layer.parameters = in_features * out_features + out_features;
    layer.inputs = Inputs({input});
    const double flops = 2 * in_features * out_features * batch();
    const double elements_moved = layer.parameters + (in_features + out_features) * batch();
    return Append(std::move(layer), Shape{out_features, 1, 1}, flops, elements_moved);
  }

  // Residual add of two same-shaped tensors, ReLU folded in: one FLOP per element; reads both,
  // writes one.
  int ResidualAdd(const std::string& id, int a, int b) {
    const Shape out = ShapeOf(a);
    Layer layer;
    layer.id = id;
    layer.description = "residual add + ReLU";
    layer.inputs = Inputs({a, b});
    return Append(std::move(layer), out, out.Elements() * batch(), 3 * out.Elements() * batch());
  }

  Workload Finish(const std::string& name) {
    workload_.name = name;
    workload_.reference.batch_size = config_.batch;
    workload_.reference.device = device_.name;
    workload_.reference.source = "analytic";
    workload_.parameter_dtype_bytes = config_.dtype_bytes;
    return std::move(workload_);
  }

 private:
  double batch() const { return config_.batch; }

  Shape ShapeOf(int layer) const {
    return layer == kImage ? Shape{3, config_.image_size, config_.image_size} : shapes_[layer];
  }

  static std::vector<int> Inputs(std::vector<int> layers) {
    layers.erase(std::remove(layers.begin(), layers.end(), kImage), layers.end());
    return layers;
  }

  int Append(Layer layer, const Shape& out, double forward_flops, double elements_moved) {
    const double dtype = config_.dtype_bytes;
    layer.parameter_bytes = layer.parameters * dtype;
    layer.activation_bytes = out.Elements() * batch() * dtype;
    layer.forward_flops = forward_flops;
    layer.forward_ms = device_.TimeMs(forward_flops, elements_moved * dtype);
    layer.backward_ms = device_.TimeMs(2 * forward_flops, 2 * elements_moved * dtype);
    workload_.layers.push_back(std::move(layer));
    shapes_.push_back(out);
    return static_cast<int>(shapes_.size()) - 1;
  }

  const CnnConfig& config_;
  const DeviceModel& device_;
  Workload workload_;
  std::vector<Shape> shapes_;
};

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

// "vgg16-224", or "vgg16-224-w0.5" for another width.
std::string NetworkName(const std::string& network, const CnnConfig& config) {
  std::string name = network + "-" + std::to_string(config.image_size);
  if (config.width != 1.0) name += "-w" + ShortNumber(config.width);
  return name;
}

// One ResNet bottleneck block (He et al. 2016, section 3.3 and figure 5 right): 1x1 reduce to
// `width` channels, 3x3 (carrying the stride), 1x1 expand to 4 x width; the shortcut is the
// identity, or a strided 1x1 projection with batch norm where the shape changes (option B).
// Returns the index of the add.
int Bottleneck(NetworkBuilder& net, const std::string& name, int input, int in_channels,
               int width, int stride) {
  const int out_channels = 4 * width;
  const int a = net.Convolution(name + "_branch2a", input, width, 1, 1, 0, ConvNorm::kBatchNorm,
                                true);
  const int b = net.Convolution(name + "_branch2b", a, width, 3, stride, 1, ConvNorm::kBatchNorm,
                                true);
  const int c = net.Convolution(name + "_branch2c", b, out_channels, 1, 1, 0,
                                ConvNorm::kBatchNorm, false);
  int shortcut = input;
  if (stride != 1 || in_channels != out_channels)
    shortcut = net.Convolution(name + "_branch1", input, out_channels, 1, stride, 0,
                               ConvNorm::kBatchNorm, false);
  return net.ResidualAdd(name, c, shortcut);
}

}  // namespace

// Configuration D of Simonyan and Zisserman (ICLR 2015, table 1): stacks of 3x3 convolutions
// (padding 1) of 64, 128, 256, 512, 512 channels (2, 2, 3, 3, 3 layers), each stack closed by a
// 2x2 max-pool of stride 2, then FC-4096, FC-4096, FC-classes.
Workload GenerateVgg16(const CnnConfig& config, const DeviceModel& device) {
  Validate(config, "vgg16");
  struct Stack {
    int channels;
    int convolutions;
  };
  const Stack stacks[] = {{64, 2}, {128, 2}, {256, 3}, {512, 3}, {512, 3}};
  NetworkBuilder net(config, device);
  int last = NetworkBuilder::kImage;
  for (int s = 0; s < 5; ++s) {
    const std::string stack = std::to_string(s + 1);
    for (int k = 0; k < stacks[s].convolutions; ++k)
      last = net.Convolution("conv" + stack + "_" + std::to_string(k + 1), last,
                             Channels(config, stacks[s].channels), 3, 1, 1, ConvNorm::kBias,
                             true);
    last = net.MaxPool("pool" + stack, last, 2, 2, 0);
  }
  const int hidden = Channels(config, 4096);
  last = net.FullyConnected("fc6", last, hidden, " + ReLU + Dropout");
  last = net.FullyConnected("fc7", last, hidden, " + ReLU + Dropout");
  net.FullyConnected("fc8", last, config.classes, "");
  return net.Finish(NetworkName("vgg16", config));
}

// He et al. (CVPR 2016, table 1, the 50-layer column): conv1 7x7/2 with 64 channels, 3x3/2
// max-pool, stages conv2_x .. conv5_x of [3, 4, 6, 3] bottlenecks of width 64, 128, 256, 512
// (stride 2 in the first block of conv3_x .. conv5_x), global average pool, FC-classes.
Workload GenerateResnet50(const CnnConfig& config, const DeviceModel& device) {
  Validate(config, "resnet50");
  const int blocks[] = {3, 4, 6, 3};
  const int widths[] = {64, 128, 256, 512};
  NetworkBuilder net(config, device);
  const int stem_channels = Channels(config, 64);
  int last = net.Convolution("conv1", NetworkBuilder::kImage, stem_channels, 7, 2, 3,
                             ConvNorm::kBatchNorm, true);
  last = net.MaxPool("pool1", last, 3, 2, 1);
  int channels = stem_channels;
  for (int stage = 0; stage < 4; ++stage) {
    const int width = Channels(config, widths[stage]);
    for (int k = 0; k < blocks[stage]; ++k) {
      const std::string name =
          "res" + std::to_string(stage + 2) + static_cast<char>('a' + k);
      const int stride = (k == 0 && stage > 0) ? 2 : 1;
      last = Bottleneck(net, name, last, channels, width, stride);
      channels = 4 * width;
    }
  }
  last = net.GlobalAveragePool("pool5", last);
  net.FullyConnected("fc", last, config.classes, "");
  return net.Finish(NetworkName("resnet50", config));
}

}  // namespace pipetwin
