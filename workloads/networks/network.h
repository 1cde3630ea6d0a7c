// One description of each network pipetwin knows (MLP, GPT/BERT, VGG-16, ResNet-50), read by
// both its analytic model (workloads/analytic/analytic.h: FLOPs, bytes, roofline times) and the
// executor's LibTorch modules (exec/model/modules.h). Layer i of the description is layer i of
// the workload and of the executor's model, so a plan's layer ranges mean the same layers to
// the simulator and to the executor.
//
//   Network vgg = DescribeVgg16(CnnConfig{});    // networks/cnn.h
//   vgg.layers[0].kind;                          // LayerKind::kConvolution
//   vgg.layers[0].output_shape;                  // {64, 224, 224}: one sample's output
//   Workload w = AnalyticWorkload(vgg, DeviceSpec{});
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "workloads/networks/configs.h"

namespace pipetwin {

enum class LayerKind {
  kLinear,             // y = x W^T + b on the flattened input; ReLU after when `relu`
  kConvolution,        // k x k, stride, zero padding; bias, or batch norm; ReLU when `relu`
  kMaxPool,            // k x k, stride, padding
  kGlobalAveragePool,  // to C x 1 x 1
  kResidualAdd,        // relu(inputs[0] + inputs[1])
  kEmbedding,          // token + position (GPT); + token type and a layer norm (BERT)
  kTransformerBlock,   // self-attention + MLP (GPT pre-LN, causal; BERT post-LN)
  kTransformerHead,    // GPT: final norm + projection; BERT: the pre-training heads
};

struct NetworkLayer {
  std::string id;                     // "fc0", "conv1_1", "res2a_branch2a", "block3"
  std::string description;            // "Conv2d(3, 64, kernel_size=3, stride=1, padding=1)"
  LayerKind kind = LayerKind::kLinear;
  std::vector<int> inputs;            // the layers it reads, in order; -1: the network's input
  std::vector<int64_t> output_shape;  // one sample's output
  int64_t in = 0, out = 0;            // features (linear) or channels (convolution)
  int kernel = 0, stride = 1, padding = 0;  // convolution, max-pool
  bool relu = false;                  // linear, convolution
  bool batch_norm = false;            // convolution: batch norm (scale, shift) instead of a bias
};

// What the first layer reads and the loss scores.
struct NetworkInput {
  bool tokens = false;                // int64 token ids (transformers), else float features
  std::vector<int64_t> sample_shape;  // one sample: {784}, {3, 224, 224}, {sequence}
  int64_t token_range = 0;            // tokens: the vocabulary
  int64_t classes = 0;                // label range (transformers: the vocabulary)
  bool labels_per_token = false;      // transformers: one label per position
};

struct Network {
  std::string generator;         // "mlp", "gpt", "bert", "vgg16", "resnet50"
  std::string name;              // "mlp-4x1024", "gpt-24x2048", "vgg16-224", "resnet50-224-w0.5"
  NetworkInput input;
  int batch = 1;                 // samples the analytic times are for (the reference batch)
  double dtype_bytes = 4;        // bytes per parameter and activation element
  TransformerConfig transformer;  // gpt, bert: the sizes of the embedding, blocks and head
  std::vector<NetworkLayer> layers;  // in a topological order

  int LayerCount() const { return static_cast<int>(layers.size()); }
  // The output shape of layer `layer` (-1: the network's input), one sample.
  const std::vector<int64_t>& ShapeOf(int layer) const;
};

// Elements of a shape.
int64_t Elements(const std::vector<int64_t>& shape);

// The descriptions. Each throws InputError naming the field when a setting is out of range (an
// integer below 1, dtype_bytes or width not > 0, an image below 32 pixels, hidden not divisible
// by heads, a transformer kind other than "gpt" or "bert").
//
// MLP: layer i maps `input` (i = 0) or `width` features to `width` (the last: `classes`);
// "fc0" .. "fcN-1"; name "mlp-LxW".
Network DescribeMlp(const MlpConfig& config);
// GPT and BERT: a chain embedding -> block0 .. blockN-1 -> head; name "gpt-LxH". GPT's head is
// the final layer norm and the output projection tied to the token embedding; BERT's the full
// pre-training heads (pooler, next-sentence classifier, masked-LM head with the decoder tied).
Network DescribeTransformer(const TransformerConfig& config);
void ValidateTransformerConfig(const TransformerConfig& config);
// VGG-16 (Simonyan and Zisserman, ICLR 2015, configuration D): a chain of 21 layers, conv1_1 ..
// conv5_3, pool1 .. pool5, fc6, fc7, fc8; each ReLU (and the dropout after fc6 and fc7) folded
// into the layer before it. The fully connected layers read the flattened 512 x (S/32)^2 map
// (no adaptive pooling). Name "vgg16-S" ("vgg16-S-wX" at another width).
Network DescribeVgg16(const CnnConfig& config);
// ResNet-50 (He et al., CVPR 2016, table 1): bottleneck blocks [3, 4, 6, 3], down-sampling on
// the 3x3 convolution of a stage's first block (torchvision's "v1.5"); a DAG in Caffe's layer
// names: conv1, pool1, per block (res2a) res2a_branch2a -> 2b -> 2c, the projection shortcut
// res2a_branch1 (first block of a stage), the add res2a; then pool5 and fc. Each batch norm
// and ReLU is folded into the layer before it.
Network DescribeResnet50(const CnnConfig& config);

}  // namespace pipetwin
