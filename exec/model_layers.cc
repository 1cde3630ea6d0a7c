// The layers of the executor's models, one class per kind of workload layer, each a pure
// function of its inputs and parameters (see model.h). Sizes follow the analytic generators in
// workloads/ so that layer i here is workload layer i; where the executor differs it says so:
//   - GPT's output projection is untied from the token embedding (a pipeline would otherwise
//     all-reduce the shared matrix between the first and the last stage, as Megatron-LM does);
//   - BERT's head is the masked-LM head alone (untied decoder with its bias); the pooler and the
//     next-sentence classifier, which the loss would not use, are left out;
//   - no dropout (runs must be reproducible bit for bit); ResNet's batch norm normalises with
//     each micro-batch's statistics and keeps no running averages.
#include <cmath>

#include "exec/model.h"

namespace pipetwin::exec {

namespace {

using Tensors = std::vector<torch::Tensor>;

// U(-bound, bound): PyTorch's default for Linear and Conv2d is bound = 1/sqrt(fan_in).
torch::Tensor Uniform(at::Generator& g, at::IntArrayRef shape, double bound) {
  return (torch::rand(shape, g) * 2 - 1) * bound;
}

// N(0, std^2): GPT-2's initialisation of every weight matrix (std 0.02).
torch::Tensor Normal(at::Generator& g, at::IntArrayRef shape, double std) {
  return torch::randn(shape, g) * std;
}

void Add(Model& model, std::string id, std::unique_ptr<LayerFunction> layer,
         std::vector<int> inputs, std::vector<int64_t> sample_shape) {
  model.layer_ids.push_back(std::move(id));
  model.layers.push_back(std::move(layer));
  model.layer_inputs.push_back(std::move(inputs));
  model.output_sample_shape.push_back(std::move(sample_shape));
}

int Last(const Model& model) { return model.LayerCount() - 1; }

// Fully connected on the flattened input, y = x W^T + b, ReLU after when `relu`.
class Linear : public LayerFunction {
 public:
  Linear(int64_t in, int64_t out, bool relu) : in_(in), out_(out), relu_(relu) {}
  Tensors InitialParameters(at::Generator& g) const override {
    const double bound = 1 / std::sqrt(static_cast<double>(in_));
    return {Uniform(g, {out_, in_}, bound), Uniform(g, {out_}, bound)};
  }
  torch::Tensor Forward(const Tensors& x, at::TensorList p) const override {
    auto y = torch::linear(x[0].dim() > 2 ? x[0].flatten(1) : x[0], p[0], p[1]);
    return relu_ ? torch::relu(y) : y;
  }
  int ParameterTensorCount() const override { return 2; }

 private:
  int64_t in_, out_;
  bool relu_;
};

// --- transformers (GPT decoder, BERT encoder) ---

torch::Tensor LayerNorm(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b) {
  return torch::layer_norm(x, {x.size(-1)}, w, b, 1e-5);
}

// Token + position embeddings; BERT adds the token-type embedding (all type 0 here) and a norm.
class Embedding : public LayerFunction {
 public:
  Embedding(const TransformerConfig& c) : c_(c), bert_(c.kind == "bert") {}
  Tensors InitialParameters(at::Generator& g) const override {
    const int64_t h = c_.hidden;
    Tensors p = {Normal(g, {c_.vocabulary, h}, 0.02), Normal(g, {c_.sequence, h}, 0.02)};
    if (bert_) {
      p.push_back(Normal(g, {2, h}, 0.02));
      p.push_back(torch::ones({h}));
      p.push_back(torch::zeros({h}));
    }
    return p;
  }
  torch::Tensor Forward(const Tensors& x, at::TensorList p) const override {
    auto y = torch::embedding(p[0], x[0]) + p[1].unsqueeze(0);
    if (!bert_) return y;
    return LayerNorm(y + p[2][0], p[3], p[4]);
  }
  int ParameterTensorCount() const override { return bert_ ? 5 : 2; }

 private:
  TransformerConfig c_;
  bool bert_;
};

// One block: multi-head self-attention (causal for GPT) and a 4h MLP with GELU; pre-LN (GPT-2)
// or post-LN (BERT). 12h^2 + 13h parameters, as workloads/transformer.cc counts them.
class Block : public LayerFunction {
 public:
  Block(const TransformerConfig& c) : c_(c), gpt_(c.kind == "gpt") {}
  Tensors InitialParameters(at::Generator& g) const override {
    const int64_t h = c_.hidden;
    return {torch::ones({h}),         torch::zeros({h}),                   // ln1
            Normal(g, {3 * h, h}, 0.02), torch::zeros({3 * h}),            // QKV
            Normal(g, {h, h}, 0.02),  torch::zeros({h}),                   // output projection
            torch::ones({h}),         torch::zeros({h}),                   // ln2
            Normal(g, {4 * h, h}, 0.02), torch::zeros({4 * h}),            // MLP in
            Normal(g, {h, 4 * h}, 0.02), torch::zeros({h})};               // MLP out
  }
  torch::Tensor Forward(const Tensors& x, at::TensorList p) const override {
    const torch::Tensor& in = x[0];
    if (gpt_) {
      auto y = in + Attention(LayerNorm(in, p[0], p[1]), p);
      return y + Mlp(LayerNorm(y, p[6], p[7]), p);
    }
    auto y = LayerNorm(in + Attention(in, p), p[0], p[1]);
    return LayerNorm(y + Mlp(y, p), p[6], p[7]);
  }
  int ParameterTensorCount() const override { return 12; }

 private:
  // softmax(Q K^T / sqrt(d)) V per head (Vaswani et al. 2017, section 3.2.1).
  torch::Tensor Attention(const torch::Tensor& x, at::TensorList p) const {
    const int64_t b = x.size(0), s = x.size(1), h = c_.hidden, a = c_.heads, d = h / a;
    auto qkv = torch::linear(x, p[2], p[3]).chunk(3, -1);
    auto heads = [&](const torch::Tensor& t) { return t.reshape({b, s, a, d}).transpose(1, 2); };
    auto q = heads(qkv[0]), k = heads(qkv[1]), v = heads(qkv[2]);
    auto scores = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(d));
    if (gpt_) {
      auto future = torch::ones({s, s}, torch::kBool).triu(1);
      scores = scores.masked_fill(future, -std::numeric_limits<float>::infinity());
    }
    auto context = torch::matmul(torch::softmax(scores, -1), v);
    return torch::linear(context.transpose(1, 2).reshape({b, s, h}), p[4], p[5]);
  }
  torch::Tensor Mlp(const torch::Tensor& x, at::TensorList p) const {
    return torch::linear(torch::gelu(torch::linear(x, p[8], p[9])), p[10], p[11]);
  }

  TransformerConfig c_;
  bool gpt_;
};

// GPT: final layer norm and the (untied) projection onto the vocabulary. BERT: the masked-LM
// transform (dense, GELU, layer norm) and the (untied) decoder with its bias.
class Head : public LayerFunction {
 public:
  Head(const TransformerConfig& c) : c_(c), gpt_(c.kind == "gpt") {}
  Tensors InitialParameters(at::Generator& g) const override {
    const int64_t h = c_.hidden, v = c_.vocabulary;
    if (gpt_) return {torch::ones({h}), torch::zeros({h}), Normal(g, {v, h}, 0.02)};
    return {Normal(g, {h, h}, 0.02), torch::zeros({h}), torch::ones({h}), torch::zeros({h}),
            Normal(g, {v, h}, 0.02), torch::zeros({v})};
  }
  torch::Tensor Forward(const Tensors& x, at::TensorList p) const override {
    if (gpt_) return torch::linear(LayerNorm(x[0], p[0], p[1]), p[2]);
    auto t = LayerNorm(torch::gelu(torch::linear(x[0], p[0], p[1])), p[2], p[3]);
    return torch::linear(t, p[4], p[5]);
  }
  int ParameterTensorCount() const override { return gpt_ ? 3 : 6; }

 private:
  TransformerConfig c_;
  bool gpt_;
};

// --- convolutional networks ---

// k x k convolution, then the bias (VGG) or a batch norm (ResNet), then ReLU when `relu`.
class Convolution : public LayerFunction {
 public:
  Convolution(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t padding,
              bool batch_norm, bool relu)
      : in_(in), out_(out), kernel_(kernel), stride_(stride), padding_(padding),
        batch_norm_(batch_norm), relu_(relu) {}
  Tensors InitialParameters(at::Generator& g) const override {
    const double bound = 1 / std::sqrt(static_cast<double>(in_ * kernel_ * kernel_));
    Tensors p = {Uniform(g, {out_, in_, kernel_, kernel_}, bound)};
    if (batch_norm_) {
      p.push_back(torch::ones({out_}));
      p.push_back(torch::zeros({out_}));
    } else {
      p.push_back(Uniform(g, {out_}, bound));
    }
    return p;
  }
  torch::Tensor Forward(const Tensors& x, at::TensorList p) const override {
    auto y = torch::conv2d(x[0], p[0], batch_norm_ ? torch::Tensor() : p[1], stride_, padding_);
    if (batch_norm_)
      y = torch::batch_norm(y, p[1], p[2], {}, {}, /*training=*/true, 0.1, 1e-5, false);
    return relu_ ? torch::relu(y) : y;
  }
  int ParameterTensorCount() const override { return batch_norm_ ? 3 : 2; }

 private:
  int64_t in_, out_, kernel_, stride_, padding_;
  bool batch_norm_, relu_;
};

class MaxPool : public LayerFunction {
 public:
  MaxPool(int64_t kernel, int64_t stride, int64_t padding)
      : kernel_(kernel), stride_(stride), padding_(padding) {}
  Tensors InitialParameters(at::Generator&) const override { return {}; }
  torch::Tensor Forward(const Tensors& x, at::TensorList) const override {
    return torch::max_pool2d(x[0], kernel_, stride_, padding_);
  }
  int ParameterTensorCount() const override { return 0; }

 private:
  int64_t kernel_, stride_, padding_;
};

class GlobalAveragePool : public LayerFunction {
 public:
  Tensors InitialParameters(at::Generator&) const override { return {}; }
  torch::Tensor Forward(const Tensors& x, at::TensorList) const override {
    return torch::adaptive_avg_pool2d(x[0], {1, 1});
  }
  int ParameterTensorCount() const override { return 0; }
};

class ResidualAdd : public LayerFunction {
 public:
  Tensors InitialParameters(at::Generator&) const override { return {}; }
  torch::Tensor Forward(const Tensors& x, at::TensorList) const override {
    return torch::relu(x[0] + x[1]);
  }
  int ParameterTensorCount() const override { return 0; }
};

// The published channel count scaled by the width multiplier (as workloads/cnn.cc rounds it).
int64_t Channels(const CnnConfig& c, int published) {
  return std::max<int64_t>(1, std::lround(published * c.width));
}

int64_t ConvOut(int64_t size, int64_t kernel, int64_t stride, int64_t padding) {
  return (size + 2 * padding - kernel) / stride + 1;
}

// Appends a convolution reading layer `input` (-1: the image) and returns its index.
int AddConvolution(Model& m, const std::string& id, int input, int64_t out, int64_t kernel,
                   int64_t stride, int64_t padding, bool batch_norm, bool relu) {
  const auto& in = input < 0 ? m.input.sample_shape : m.output_sample_shape[input];
  Add(m, id, std::make_unique<Convolution>(in[0], out, kernel, stride, padding, batch_norm, relu),
      {input}, {out, ConvOut(in[1], kernel, stride, padding), ConvOut(in[2], kernel, stride, padding)});
  return Last(m);
}

int AddMaxPool(Model& m, const std::string& id, int input, int64_t kernel, int64_t stride,
               int64_t padding) {
  const auto in = m.output_sample_shape[input];
  Add(m, id, std::make_unique<MaxPool>(kernel, stride, padding), {input},
      {in[0], ConvOut(in[1], kernel, stride, padding), ConvOut(in[2], kernel, stride, padding)});
  return Last(m);
}

int AddLinear(Model& m, const std::string& id, int input, int64_t out, bool relu) {
  int64_t in = 1;
  for (int64_t d : input < 0 ? m.input.sample_shape : m.output_sample_shape[input]) in *= d;
  Add(m, id, std::make_unique<Linear>(in, out, relu), {input}, {out});
  return Last(m);
}

void ImageInput(const CnnConfig& c, Model& m) {
  m.input.sample_shape = {3, c.image_size, c.image_size};
  m.input.classes = c.classes;
}

// He et al. 2016, figure 5 right; the stride on the 3x3 convolution, as workloads/cnn.cc.
int AddBottleneck(Model& m, const std::string& name, int input, int64_t in_channels,
                  int64_t width, int64_t stride) {
  const int64_t out = 4 * width;
  const int a = AddConvolution(m, name + "_branch2a", input, width, 1, 1, 0, true, true);
  const int b = AddConvolution(m, name + "_branch2b", a, width, 3, stride, 1, true, true);
  const int c = AddConvolution(m, name + "_branch2c", b, out, 1, 1, 0, true, false);
  int shortcut = input;
  if (stride != 1 || in_channels != out)
    shortcut = AddConvolution(m, name + "_branch1", input, out, 1, stride, 0, true, false);
  Add(m, name, std::make_unique<ResidualAdd>(), {c, shortcut}, m.output_sample_shape[c]);
  return Last(m);
}

}  // namespace

void AddMlpLayers(const MlpConfig& c, Model& m) {
  m.name = "mlp-" + std::to_string(c.layers) + "x" + std::to_string(c.width);
  m.input.sample_shape = {c.input};
  m.input.classes = c.classes;
  for (int i = 0; i < c.layers; ++i) {
    const bool last = i + 1 == c.layers;
    AddLinear(m, "fc" + std::to_string(i), i - 1, last ? c.classes : c.width, !last);
  }
}

void AddTransformerLayers(const TransformerConfig& c, Model& m) {
  m.name = c.kind + "-" + std::to_string(c.layers) + "x" + std::to_string(c.hidden);
  m.input.tokens = true;
  m.input.sample_shape = {c.sequence};
  m.input.token_range = c.vocabulary;
  m.input.classes = c.vocabulary;
  m.input.labels_per_token = true;
  const std::vector<int64_t> hidden = {c.sequence, c.hidden};
  Add(m, "embedding", std::make_unique<Embedding>(c), {-1}, hidden);
  for (int i = 0; i < c.layers; ++i)
    Add(m, "block" + std::to_string(i), std::make_unique<Block>(c), {Last(m)}, hidden);
  Add(m, "head", std::make_unique<Head>(c), {Last(m)}, {c.sequence, c.vocabulary});
}

// Simonyan and Zisserman 2015, configuration D (as workloads/cnn.cc).
void AddVgg16Layers(const CnnConfig& c, Model& m) {
  m.name = "vgg16-" + std::to_string(c.image_size);
  ImageInput(c, m);
  const int stacks[5][2] = {{64, 2}, {128, 2}, {256, 3}, {512, 3}, {512, 3}};
  int last = -1;
  for (int s = 0; s < 5; ++s) {
    const std::string stack = std::to_string(s + 1);
    for (int k = 0; k < stacks[s][1]; ++k)
      last = AddConvolution(m, "conv" + stack + "_" + std::to_string(k + 1), last,
                            Channels(c, stacks[s][0]), 3, 1, 1, false, true);
    last = AddMaxPool(m, "pool" + stack, last, 2, 2, 0);
  }
  last = AddLinear(m, "fc6", last, Channels(c, 4096), true);
  last = AddLinear(m, "fc7", last, Channels(c, 4096), true);
  AddLinear(m, "fc8", last, c.classes, false);
}

// He et al. 2016, table 1, 50 layers (as workloads/cnn.cc).
void AddResnet50Layers(const CnnConfig& c, Model& m) {
  m.name = "resnet50-" + std::to_string(c.image_size);
  ImageInput(c, m);
  const int blocks[] = {3, 4, 6, 3};
  const int widths[] = {64, 128, 256, 512};
  int64_t channels = Channels(c, 64);
  int last = AddConvolution(m, "conv1", -1, channels, 7, 2, 3, true, true);
  last = AddMaxPool(m, "pool1", last, 3, 2, 1);
  for (int stage = 0; stage < 4; ++stage) {
    const int64_t width = Channels(c, widths[stage]);
    for (int k = 0; k < blocks[stage]; ++k) {
      const std::string name = "res" + std::to_string(stage + 2) + static_cast<char>('a' + k);
      last = AddBottleneck(m, name, last, channels, width, (k == 0 && stage > 0) ? 2 : 1);
      channels = 4 * width;
    }
  }
  Add(m, "pool5", std::make_unique<GlobalAveragePool>(), {last}, {channels, 1, 1});
  AddLinear(m, "fc", Last(m), c.classes, false);
}

}  // namespace pipetwin::exec
